"""Whether the Spark engine's tests can run here: one rule for every Spark test.

On a developer's machine without pyspark or Java they skip, saying what is missing. In CI
(DUCKRANK_CI=1, set by .ci/run, which installs both) a missing piece FAILS the test instead: a
green CI must mean the Spark parity suite ran.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil

import pytest


def missing() -> str | None:
    """What the Spark engine lacks on this machine, or None."""
    if importlib.util.find_spec("pyspark") is None or importlib.util.find_spec("sqlglot") is None:
        return "pyspark and sqlglot are not installed (pip install -e '.[spark]')"
    java_home = os.environ.get("JAVA_HOME")
    if not (java_home and os.path.exists(os.path.join(java_home, "bin", "java"))) and shutil.which("java") is None:
        return "Java is not installed (apt-get install openjdk-17-jre-headless)"
    return None


def require(what: str = "the Spark engine") -> None:
    """Skip (or in CI, fail) unless `what` can run."""
    reason = missing()
    if reason is None:
        return
    if os.environ.get("DUCKRANK_CI") == "1":
        pytest.fail(f"{what} must run in CI, but {reason}")
    pytest.skip(f"{what}: {reason}")


# The settings session() changes from Spark's defaults to interpret expressions; compiled() restores them.
INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


def session():
    """A local SparkSession sized for tests: 2 cores, few shuffle partitions, no UI. Started by
    test_spark.py's fixture alone: a second JVM in another test process costs tens of seconds.

    Its expressions are interpreted, not compiled: the parity statements are long and their data
    small, so compiling the generated Java was a third of each job (Spark's side of 3 parity jobs:
    48.5 -> 33.7 s). Spark holds interpreted and generated code to the same results, and
    test_spark.test_cli_engine_spark runs every trec_eval measure compiled (`compiled`), as a
    user's session runs them."""
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("duckrank-tests")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.default.parallelism", "2")
             .config("spark.driver.memory", "2g").getOrCreate())
    for name, value in INTERPRETED.items():
        spark.conf.set(name, value)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@contextlib.contextmanager
def compiled(spark):
    """Within: the session compiles whole stages and expressions, as Spark does by default."""
    for name in INTERPRETED:
        spark.conf.unset(name)
    try:
        yield
    finally:
        for name, value in INTERPRETED.items():
            spark.conf.set(name, value)
