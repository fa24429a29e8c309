-- Load the whole duckrank macro library into a DuckDB shell, from the repository root:
--     .read sql/duckrank.sql
-- (Python and `duckrank sql` read the numbered files directly, in name order.)
-- Installing replaces schema duckrank whole, so that no macro of an older library stays behind:
-- the schema is the library's; keep your own objects in another one.
DROP SCHEMA IF EXISTS duckrank CASCADE;
.read sql/00_schema.sql
.read sql/10_checks.sql
.read sql/15_inputs.sql
.read sql/20_ranked.sql
.read sql/30_set_metrics.sql
.read sql/31_rank_metrics.sql
.read sql/32_gain_metrics.sql
.read sql/33_cwl_metrics.sql
.read sql/34_diversity_metrics.sql
.read sql/40_auc.sql
.read sql/41_rating_metrics.sql
.read sql/42_beyond_accuracy.sql
.read sql/45_sampled.sql
.read sql/50_compare.sql
.read sql/55_option_checks.sql
.read sql/60_measures.sql
.read sql/70_fusion.sql
.read sql/75_fusion_methods.sql
