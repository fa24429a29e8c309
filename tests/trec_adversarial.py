"""Adversarial TREC qrels and runs from a seed: the inputs on which a trec_eval clone goes wrong.

`generate(seed)` returns a Case: qrels and run rows kept as the very text fields written to the files,
so `write_text` produces exactly what trec_eval reads and `write_parquet` the same data, typed
(ids as VARCHAR, the score as the DOUBLE its text denotes, the grade as INTEGER).

What a case holds, each query drawing a few of these at random:
- ties at double precision: one score spelled several ways (0.1, 0.10, .1, 1e-1, 10e-2,
  0.10000000000000001), 0 and -0, two decimal strings that round to the same double (4.9e-324 and
  5e-324), next to scores one ulp apart (0.3 and 0.30000000000000004, 1 and 1.0000000000000002) and
  scores equal in float32 but not in double (1 and 1.00000001);
- odd spellings: 1e-3, +1.5, 5., 1E+300, 1e-300, denormals, 1.7976931348623157e308, negatives;
- numeric ids whose string order is not their numeric order (9, 10, 100, 007, 7), ids that are
  prefixes of one another, case variants, and non-ASCII ids (é, ß, Ω, 日本, 🦆) in UTF-8;
- queries only in the run, queries only in the qrels, queries whose qrels hold no relevant doc (or
  only -1 judgments), one-doc runs, runs of unjudged docs only, runs longer than -M 20;
- grades 0..4 and -1 (trec_eval: judged but "unjudged in pool"), judged docs never retrieved;
- the rank column out of order (random, reversed, constant) and the file's lines shuffled;
- now and then: fields separated by runs of tabs and spaces, a run_id per line (trec_eval reports the
  last line's), grades spelled +1, 001, -01.

Everything stays within what trec_eval 10 reads without error: one whitespace-free token per field,
6 fields a run line and 4 a qrels line, tab- or space-separated (a tab-separated run may pad the score
with spaces, as trec_eval's own test runs do), no duplicate doc in a query, no line starting with '#'
(a comment to trec_eval 10), and the first query in trec_eval's order is in both files with a grade
>= 0 (see generate). One thing is left to the caller: trec_eval 10 exits 4 ("result qid ...
not found in qrels") on a qrels query missing from the run unless -c is given, so `without_qrels_only()`
gives the case to score without -c.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from pathlib import Path

# Scores: groups of spellings that denote the same double (a tie), each group one value. Every
# spelling is a plain decimal that C's atof and DuckDB's CAST(... AS DOUBLE) read, correctly rounded.
SCORE_SPELLINGS: tuple[tuple[str, ...], ...] = (
    ("0", "-0", "0.0", "-0.0", "+0", "0e5", "0.", "000"),
    ("0.1", "0.10", ".1", "1e-1", "1E-1", "+0.1", "10e-2", "0.10000000000000001"),
    ("0.3", "0.30", ".3", "3e-1", "0.29999999999999999"),
    ("0.30000000000000004", "3.0000000000000004e-1"),
    ("1", "1.", "1.0", "+1", "1e0", "10e-1", "0.1e1", "01"),
    ("1.0000000000000002", "1.00000000000000022"),
    ("1.00000001", "1.000000010"),  # equal to 1 in float32, not in double
    ("5", "5.", "5.000", "+5", "5e0", "0.5E1"),
    ("1.5", "+1.5", "15e-1", "1.50", "+.15e1"),
    ("0.001", "1e-3", "1E-3", ".001", "+1e-03"),
    ("-1.5", "-1.50", "-15e-1"),
    ("-0.001", "-1e-3", "-.001"),
    ("1e300", "1E+300", "1e+300", "10e299"),
    ("1e-300", "1.0e-300", "0.1e-299"),
    ("-1e300", "-1E300"),
    ("4.9e-324", "5e-324", "4.9406564584124654e-324"),  # the least denormal
    ("2.2250738585072014e-308", "2.2250738585072014E-308"),  # the least normal double
    ("1.7976931348623157e308", "1.7976931348623157E+308"),  # the greatest finite double
    ("-1.7976931348623157e308",),
    ("2.138276", "2.1382760"),
    ("123456789.5", "1.234567895e8"),
)

# Doc and query ids: no whitespace, no leading '#'.
NUMERIC_IDS = ("1", "2", "7", "007", "9", "10", "11", "99", "100", "101", "1000", "20", "3", "30", "0")
TEXT_IDS = ("d1", "d10", "d2", "d20", "D1", "d", "doc-1", "doc_1", "doc.1", "a", "B", "b", "z",
            "FT941-1", "LA010189-0001", "x" * 40)
UNICODE_IDS = ("é", "e\u0301", "ß", "ss", "Ω", "日本", "日本語", "🦆", "ÿ", "ä1", "Z")
QUERY_IDS = ("1", "2", "10", "9", "100", "007", "7", "q1", "q10", "q2", "Q1", "é", "日本", "🦆", "301", "a-b")

GRADES = (-1, 0, 0, 0, 1, 1, 1, 2, 2, 3, 4)


@dataclass(frozen=True)
class Case:
    """One generated input: the text fields of every qrels and run line, in file order."""

    name: str
    qrels: tuple[tuple[str, str, str, str], ...]  # query, iteration, doc, grade
    run: tuple[tuple[str, str, str, str, str, str], ...]  # query, Q0, doc, rank, score, run_id
    qrels_sep: str = " "
    run_sep: str = "\t"
    score_pad: bool = False  # "\t  2.138276" as in trec_eval's own runs
    mixed_seps: int | None = None  # a seed: each field separator a random run of tabs and spaces

    @property
    def run_queries(self) -> set[str]:
        return {row[0] for row in self.run}

    @property
    def qrels_queries(self) -> set[str]:
        return {row[0] for row in self.qrels}

    def without_qrels_only(self) -> Case:
        """The case as trec_eval 10 reads it without -c: no qrels query that the run misses."""
        keep = self.run_queries
        return replace(self, qrels=tuple(row for row in self.qrels if row[0] in keep))

    def _join(self, fields: tuple[str, ...], sep: str, rng: random.Random | None) -> str:
        if rng is None:
            return sep.join(fields) + "\n"
        return "".join(field + rng.choice((" ", "\t", "  ", " \t", "\t\t")) for field in fields[:-1]) + fields[-1] + "\n"

    def qrels_text(self) -> str:
        rng = random.Random(self.mixed_seps) if self.mixed_seps is not None else None
        return "".join(self._join(row, self.qrels_sep, rng) for row in self.qrels)

    def run_text(self) -> str:
        rng = random.Random(self.mixed_seps) if self.mixed_seps is not None else None
        lines = []
        for query, q0, doc, rank, score, run_id in self.run:
            score_field = ("  " + score) if self.score_pad else score
            lines.append(self._join((query, q0, doc, rank, score_field, run_id), self.run_sep, rng))
        return "".join(lines)

    def write_text(self, directory: Path) -> tuple[Path, Path]:
        """qrels.txt and run.txt in `directory`, UTF-8; returns their paths."""
        qrels, run = directory / "qrels.txt", directory / "run.txt"
        qrels.write_bytes(self.qrels_text().encode())
        run.write_bytes(self.run_text().encode())
        return qrels, run

    def write_parquet(self, directory: Path) -> tuple[Path, Path]:
        """The same data as qrels.parquet (query_id, doc_id, relevance INTEGER) and run.parquet
        (query_id, doc_id, score DOUBLE, run_id), ids as VARCHAR; returns their paths.

        run_id is the run's name as trec_eval reads the text (its last line's run_id) on every row:
        in a Parquet run, duckrank scores each distinct run_id as a run of its own."""
        import duckdb

        qrels, run = directory / "qrels.parquet", directory / "run.parquet"
        con = duckdb.connect()
        try:
            con.execute("CREATE TABLE q (query_id VARCHAR, doc_id VARCHAR, relevance INTEGER)")
            con.executemany("INSERT INTO q VALUES (?, ?, ?)", [(q, d, int(g)) for q, _, d, g in self.qrels])
            con.execute("CREATE TABLE r (query_id VARCHAR, doc_id VARCHAR, score DOUBLE, run_id VARCHAR)")
            # the score's text, cast by DuckDB (Python's float() agrees: both round correctly)
            con.executemany("INSERT INTO r VALUES (?, ?, CAST(? AS DOUBLE), ?)",
                            [(q, d, s, self.run[-1][5]) for q, _, d, _, s, _ in self.run])
            con.execute(f"COPY q TO '{qrels}' (FORMAT parquet)")
            con.execute(f"COPY r TO '{run}' (FORMAT parquet)")
        finally:
            con.close()
        return qrels, run


def _ids(rng: random.Random, pool: list[str], count: int) -> list[str]:
    return rng.sample(pool, min(count, len(pool)))


def generate(seed: int, queries: int | None = None) -> Case:
    """A random adversarial case; the same seed always gives the same case."""
    rng = random.Random(seed)
    doc_pool = list(dict.fromkeys(
        [*NUMERIC_IDS, *TEXT_IDS, *UNICODE_IDS, *(f"{rng.choice('dDx')}{n}" for n in range(60))]))
    style = rng.choice(("numeric", "text", "unicode", "mixed"))
    if style == "numeric":
        # string order != numeric order: 10 < 100 < 11 < 9
        doc_pool = list(dict.fromkeys([*NUMERIC_IDS, *(str(n) for n in rng.sample(range(1, 5000), 60))]))
    elif style == "unicode":
        doc_pool = list(dict.fromkeys([*UNICODE_IDS, *(f"{c}{n}" for c in "éΩ日🦆" for n in range(15))]))

    n_queries = queries or rng.randint(4, 12)
    # In trec_eval's order (strcmp: UTF-8 bytes). The first query is a normal one, in both files with a
    # grade >= 0: trec_eval needs one query in both files (else exit 7), and fails ("Can't calculate
    # measure 'num_ret'") when the first query it scores has only -1 judgments (form_res_rels.c
    # allocates max_rel + 1 = 0 rel_levels, and te_chk_and_malloc returns NULL for 0).
    query_ids = sorted(rng.sample(QUERY_IDS, n_queries), key=str.encode)
    kinds = ["normal"] + [rng.choice((
        "normal", "normal", "normal", "long", "long", "one_doc", "no_relevant", "negative_only",
        "all_unjudged", "all_tied", "run_only", "qrels_only",
    )) for _ in query_ids[1:]]

    run_id = rng.choice(("STANDARD", "run-1", "r", "duckrank.test"))
    # now and then a run_id per line (trec_eval reports the last line's) and grades spelled +1, 01, -01
    several_run_ids = rng.random() < 0.15
    odd_grades = rng.random() < 0.25
    q0 = rng.choice(("Q0", "0", "Q0", "iter"))
    iteration = rng.choice(("0", "0", "Q0", "1"))
    qrels: list[tuple[str, str, str, str]] = []
    run: list[tuple[str, str, str, str, str, str]] = []
    for query, kind in zip(query_ids, kinds):
        if kind == "long":
            size = rng.randint(21, 45)
        elif kind == "one_doc":
            size = 1
        else:
            size = rng.randint(2, 20)
        retrieved = _ids(rng, doc_pool, size)
        others = [d for d in doc_pool if d not in set(retrieved)]
        judged_unretrieved = _ids(rng, others, rng.randint(0, 8))

        # qrels: a share of the retrieved docs judged, plus judged docs the run misses
        if kind == "all_unjudged":
            judged = judged_unretrieved or _ids(rng, others, 1)
        else:
            share = rng.random()
            judged = [d for d in retrieved if rng.random() < share] + judged_unretrieved
            if (kind == "one_doc" and rng.random() < 0.7) or query == query_ids[0]:
                judged = list(dict.fromkeys([retrieved[0], *judged]))
        if kind == "no_relevant":
            grades = {d: rng.choice((-1, 0, 0)) for d in judged}
        elif kind == "negative_only":
            grades = {d: -1 for d in judged or retrieved[:1]}
        else:
            grades = {d: rng.choice(GRADES) for d in judged}
            if query == query_ids[0]:
                grades[retrieved[0]] = rng.choice((0, 1, 2, 3, 4))
        if kind != "run_only":
            for doc, grade in grades.items():
                spelled = rng.choice((f"+{grade}" if grade >= 0 else str(grade), f"{grade:03d}")) if odd_grades else str(grade)
                qrels.append((query, iteration, doc, spelled))

        if kind == "qrels_only":
            continue
        # scores: a few distinct values, each spelled its own ways: ties everywhere
        if kind == "all_tied":
            groups = [rng.choice(SCORE_SPELLINGS)]
        else:
            groups = rng.sample(SCORE_SPELLINGS, rng.randint(1, min(len(SCORE_SPELLINGS), max(1, size // 2 + 1))))
        ranks = list(range(1, size + 1))
        rank_style = rng.choice(("sorted", "shuffled", "reversed", "constant"))
        if rank_style == "shuffled":
            rng.shuffle(ranks)
        elif rank_style == "reversed":
            ranks.reverse()
        elif rank_style == "constant":
            ranks = [0] * size
        for doc, rank in zip(retrieved, ranks):
            score = rng.choice(rng.choice(groups))
            run.append((query, q0, doc, str(rank), score, rng.choice(("a", "b", run_id)) if several_run_ids else run_id))

    rng.shuffle(qrels)
    if rng.random() < 0.5:
        rng.shuffle(run)
    run_sep = rng.choice(("\t", " "))
    return Case(
        name=f"seed{seed}",
        qrels=tuple(qrels),
        run=tuple(run),
        qrels_sep=rng.choice((" ", "\t")),
        run_sep=run_sep,
        score_pad=run_sep == "\t" and rng.random() < 0.3,
        mixed_seps=seed if rng.random() < 0.2 else None,
    )


# (hits, R, retrieved) with R + retrieved = 64: set_F = 2 hits / 64 is exactly halfway between two
# 4-decimal numbers (5 hits, R 6, 58 retrieved: 0.15625), and m_set_F.c's (x + 1) P R / (x P + R)
# rounds it to a double above or below, which decides the printed digit.
HALFWAY_SET_F = ((5, 6, 58), (7, 9, 55), (11, 12, 52), (15, 15, 49), (1, 20, 44), (3, 20, 44))


def halfway() -> Case:
    """Queries whose set_F is exactly halfway between two printed values (HALFWAY_SET_F), the relevant
    docs ranked first, and a qrels-only query last, which -c scores on trec_eval's stand-in ranking."""
    qrels: list[tuple[str, str, str, str]] = []
    run: list[tuple[str, str, str, str, str, str]] = []
    for number, (hits, relevant, retrieved) in enumerate(HALFWAY_SET_F):
        query = f"h{number}"
        qrels.extend((query, "0", f"rel{doc}", "1") for doc in range(relevant))
        docs = [f"rel{doc}" for doc in range(hits)] + [f"non{doc}" for doc in range(retrieved - hits)]
        run.extend((query, "Q0", doc, str(rank), str(len(docs) - rank), "halfway") for rank, doc in enumerate(docs, 1))
    qrels.extend(("z_qrels_only", "0", f"rel{doc}", grade) for doc, grade in enumerate(("1", "0", "2")))
    return Case(name="halfway", qrels=tuple(qrels), run=tuple(run))
