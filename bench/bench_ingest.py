"""Ingest speed: ``goldmine ingest searchlog`` against DuckDB's own load of the same file.

Generates a seeded search log (default 1,000,000 events, ~50k distinct queries, sessions, clicks,
1% of queries carrying an email or phone number) as JSONL and Parquet in bench/out/, plus a file
whose second half is new. Then, in the same run and the same kind of on-disk DuckDB file, times:

- bare load: ``CREATE TABLE t AS SELECT * FROM read_json/read_parquet(file)``
- goldmine ingest of the same file (fresh store), with and without --redact
- re-import of the same file (known by its hash)
- the overlapping file (half new) after the first import, against a bare load of the new half

Prints medians over ``--repeat`` runs and same-run ratios; asserts nothing about time.
Run: ``.venv/bin/python bench/bench_ingest.py [--events N] [--repeat R] [--only parquet,overlap]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

from goldmine.ingest import api
from goldmine.store import open_store

OUT = Path(__file__).resolve().parent / "out"
sys.path.insert(0, str(OUT.parent.parent / "tests"))

from helpers import generate_searchlog as generate  # noqa: E402


def _fresh(path: Path) -> Path:
    for p in (path, Path(str(path) + ".wal")):
        p.unlink(missing_ok=True)
    return path


def _settle() -> None:
    """Flush earlier writes (a removed store, a copied one) before a timing: the close's fsync
    would otherwise wait for them, and whichever case came second would pay."""
    os.sync()


def bare_load(db: Path, path: Path) -> float:
    reader = "read_parquet" if path.suffix == ".parquet" else "read_json"
    _fresh(db)
    _settle()
    start = time.perf_counter()
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE t AS SELECT * FROM {reader}(?)", [str(path)])
    con.close()
    return time.perf_counter() - start


def goldmine_ingest(db: Path, path: Path, redact: bool = False) -> float:
    _settle()
    start = time.perf_counter()
    with open_store(db) as con:
        api.searchlog(con, [path], redact=redact)
    return time.perf_counter() - start


def _overlap(work: Path, files: dict[str, Path], add: Callable[[str, float], None]) -> None:
    """Re-import and the overlapping file, each round on a copy of the same first import."""
    base, db = work / "base.duckdb", work / "overlap.duckdb"
    if not base.exists():
        goldmine_ingest(base, files["jsonl"])
    shutil.copyfile(base, _fresh(db))
    # Each timing opens and closes the store, as the command does (the close checkpoints).
    add("re-import (hash)", goldmine_ingest(db, files["jsonl"]))
    add("overlap, half new", goldmine_ingest(db, files["overlap"]))
    add("bare new half", bare_load(work / "bare.duckdb", files["new_half"]))


def run(n: int, repeat: int, out: Path, only: list[str]) -> dict[str, list[float]]:
    files = generate(out, n)
    work = out / "work"
    work.mkdir(exist_ok=True)
    times: dict[str, list[float]] = {}

    def add(name: str, seconds: float) -> None:
        times.setdefault(name, []).append(seconds)
        print(f"  {name:<24} {seconds:7.2f} s", flush=True)

    cases = {
        "jsonl": lambda: (
            add("bare jsonl", bare_load(work / "bare.duckdb", files["jsonl"])),
            add("goldmine jsonl", goldmine_ingest(_fresh(work / "gm.duckdb"), files["jsonl"])),
        ),
        "overlap": lambda: _overlap(work, files, add),
        "redact": lambda: add(
            "goldmine jsonl --redact",
            goldmine_ingest(_fresh(work / "gm.duckdb"), files["jsonl"], redact=True),
        ),
        "parquet": lambda: (
            add("bare parquet", bare_load(work / "bare.duckdb", files["parquet"])),
            add("goldmine parquet", goldmine_ingest(_fresh(work / "gm.duckdb"), files["parquet"])),
        ),
    }
    if "redact" in only and "jsonl" not in only:
        only = ["jsonl", *only]
    for r in range(repeat):
        print(f"run {r + 1}/{repeat}", flush=True)
        for name in only:
            cases[name]()
    shutil.rmtree(work, ignore_errors=True)
    return times


PAIRS = [
    ("goldmine / bare, JSONL", "goldmine jsonl", "bare jsonl", "<= 1.5"),
    ("goldmine --redact / bare, JSONL", "goldmine jsonl --redact", "bare jsonl", "<= 3"),
    ("goldmine / bare, Parquet", "goldmine parquet", "bare parquet", "<= 1.5"),
    ("overlap / bare new half", "overlap, half new", "bare new half", "<= 1.5"),
]


def report(times: dict[str, list[float]], n: int) -> None:
    """Medians, and each ratio as the median of the rounds' own ratios: a round's two timings
    are seconds apart, so a slow spell on a shared machine weighs on both."""
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\n{n:,} events, medians of {len(next(iter(times.values())))} runs")
    for name, value in med.items():
        print(f"  {name:<24} {value:7.2f} s")
    print("same-run ratios: median of the rounds' ratios [lowest-highest] (target)")
    for label, mine, bare, target in PAIRS:
        if mine in times and bare in times:
            per_round = [m / b for m, b in zip(times[mine], times[bare], strict=True)]
            low, high = min(per_round), max(per_round)
            print(
                f"  {label:<34} {statistics.median(per_round):5.2f}x "
                f"[{low:.2f}-{high:.2f}]  ({target})"
            )
    if "re-import (hash)" in med:
        print(f"  re-import of the same file         {med['re-import (hash)']:5.2f} s  (< 1 s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--only",
        default="jsonl,overlap,redact,parquet",
        help="comma-separated cases: jsonl, overlap, redact, parquet",
    )
    args = parser.parse_args()
    only = [c.strip() for c in args.only.split(",") if c.strip()]
    report(run(args.events, args.repeat, args.out, only), args.events)


if __name__ == "__main__":
    main()
