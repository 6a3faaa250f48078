"""The two engines of ``goldmine ingest searchlog`` on one machine: DuckDB against Spark local mode.

Both do the same per-event work on the benchmark log (bench_ingest.py's seeded generator: sessions,
clicks, feedback) and end with the same per-query-day summary in the store:

- duckdb: ``ingest searchlog`` (every event stored), then the roll-up triage runs (normalize,
  session signals, query-days: goldmine.signals);
- spark: ``ingest searchlog --engine spark`` (Spark reads the log, runs the same rules, writes the
  summary as Parquet; the store imports it as one batch). The JVM's start is timed apart.

Prints medians over ``--repeat`` runs, the ratio Spark/DuckDB, and the summary's size against the
raw log's; checks (untimed) that the two summaries are the same row for row, every column.
Spark is expected to be slower on one machine: it is for logs that live on a cluster.
Run: ``.venv/bin/python bench/bench_spark.py [--events N] [--repeat R] [--master local[2]]``
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from bench_ingest import OUT  # noqa: E402

from goldmine import signals  # noqa: E402
from goldmine.ingest import api  # noqa: E402
from goldmine.ingest import spark as engine  # noqa: E402
from goldmine.store import open_store, transaction  # noqa: E402
from goldmine.triage.events import (  # noqa: E402
    build_query_days,
    mark_session_signals,
    normalize_events,
)

from helpers import generate_searchlog  # noqa: E402


def _fresh(db: Path) -> Path:
    for p in (db, Path(str(db) + ".wal")):
        p.unlink(missing_ok=True)
    return db


def summary_rows(db: Path, table: str) -> list[tuple]:
    """Every summary row, all columns, sorted (the table is this script's own name)."""
    columns = ", ".join(signals.SUMMARY_COLUMNS)
    with open_store(db) as con:
        return con.execute(f"SELECT {columns} FROM {table} ORDER BY ALL").fetchall()


def duckdb_engine(db: Path, log: Path) -> tuple[float, int]:
    start = time.perf_counter()
    with open_store(_fresh(db)) as con:
        api.searchlog(con, [log])
        with transaction(con):
            normalize_events(con)
            mark_session_signals(con)
            build_query_days(con)
        rows = con.execute("SELECT count(*) FROM triage_query_days").fetchall()[0][0]
    return time.perf_counter() - start, rows


def spark_engine(db: Path, log: Path, options: engine.Options) -> tuple[float, int, int]:
    out = Path(options.summary_dir)
    shutil.rmtree(out, ignore_errors=True)
    with open_store(_fresh(db)):
        pass
    start = time.perf_counter()
    result = engine.searchlog(db, [str(log)], {}, options)
    seconds = time.perf_counter() - start
    size = sum(p.stat().st_size for p in out.glob("*.parquet"))
    return seconds, result.files[0].extra["summary_rows"], size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    log = generate_searchlog(OUT, args.events, ("jsonl",))["jsonl"]
    work = OUT / "spark_work"
    work.mkdir(parents=True, exist_ok=True)
    options = engine.Options(master=args.master, summary_dir=str(work / "summary"))
    start = time.perf_counter()
    engine.session(options.master, options.conf)
    jvm = time.perf_counter() - start
    times: dict[str, list[float]] = {"duckdb": [], "spark": []}
    for i in range(args.repeat):
        seconds, duck_rows = duckdb_engine(work / "duck.duckdb", log)
        times["duckdb"].append(seconds)
        seconds, spark_rows, summary_bytes = spark_engine(work / "spark.duckdb", log, options)
        times["spark"].append(seconds)
        print(f"run {i + 1}: duckdb {times['duckdb'][-1]:.1f} s, spark {seconds:.1f} s", flush=True)
    duck = summary_rows(work / "duck.duckdb", "triage_query_days")
    sparked = summary_rows(work / "spark.duckdb", "search_summaries")
    differ = sum(a != b for a, b in zip(duck, sparked, strict=False))
    differ += abs(len(duck) - len(sparked))
    med = {k: statistics.median(v) for k, v in times.items()}
    raw = log.stat().st_size
    print(f"\n{args.events:,} events, {raw / 1e6:,.0f} MB of JSONL; master {args.master}")
    print(f"Spark session start (once): {jvm:.1f} s")
    print(f"{'engine':<8} {'median s':>9} {'events/s':>10}")
    for name, value in med.items():
        print(f"{name:<8} {value:>9.1f} {args.events / value:>10,.0f}")
    print(f"ratio spark/duckdb: {med['spark'] / med['duckdb']:.2f}x")
    print(
        f"summary: {spark_rows:,} query-day rows (duckdb's roll-up: {duck_rows:,}), "
        f"{summary_bytes / 1e6:.1f} MB Parquet = {summary_bytes / raw:.2%} of the raw log"
    )
    same = "the same row for row" if not differ else f"DIFFERENT: {differ:,} rows differ"
    print(f"summaries (last run, all {len(signals.SUMMARY_COLUMNS)} columns): {same}")
    if differ:
        sys.exit(1)


if __name__ == "__main__":
    main()
