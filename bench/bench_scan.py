"""What the line scan costs an import: every line-based file is scanned for lines DuckDB's reader
would lose (too long, NUL bytes, odd line ends) in the thread that hashes it (ingest/scan.py).

Times, alternated in the same run on the benchmark search log (default 1M events, JSONL, plain
and gzip): the scan alone against the sha256 alone it replaced, and ``ingest searchlog`` into a
fresh store with the scan against the same import with the hash only. Prints medians and ratios;
asserts nothing about time.
Run: ``.venv/bin/python bench/bench_scan.py [--events N] [--repeat R]``
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import statistics
import sys
import time
from pathlib import Path

from goldmine.ingest import api, batch, scan
from goldmine.store import open_store
from goldmine.text import sha256_file

OUT = Path(__file__).resolve().parent / "out"
sys.path.insert(0, str(OUT.parent.parent / "tests"))

from helpers import generate_searchlog as generate  # noqa: E402


def _hash_only(path: Path, compression: str, lines: bool) -> str:
    return sha256_file(path)


def _ingest(path: Path, store: Path, scanning: bool) -> float:
    for p in store.parent.glob(store.name + "*"):
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    batch.scan_file = scan.scan_file if scanning else _hash_only
    start = time.perf_counter()
    with open_store(store) as con:
        result = api.searchlog(con, [path])
    took = time.perf_counter() - start
    assert result.total["rejected"] == 0
    return took


def _timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    plain = generate(OUT, args.events, ("jsonl",))["jsonl"]
    packed = plain.with_suffix(".jsonl.gz")
    if not packed.exists():
        with plain.open("rb") as src, gzip.open(packed, "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst, 1 << 22)
    print(f"{args.events:,} events: {plain.stat().st_size / 1e6:,.0f} MB JSONL, "
          f"{packed.stat().st_size / 1e6:,.0f} MB gzip; medians of {args.repeat}")  # fmt: skip
    for path, compression in ((plain, "none"), (packed, "gzip")):
        times: dict[str, list[float]] = {k: [] for k in ("hash", "scan", "ingest0", "ingest1")}
        for _ in range(args.repeat):
            times["hash"].append(_timed(sha256_file, path))
            times["scan"].append(_timed(scan.scan_file, path, compression, True))
            times["ingest0"].append(_ingest(path, OUT / "scan.duckdb", scanning=False))
            times["ingest1"].append(_ingest(path, OUT / "scan.duckdb", scanning=True))
        med = {k: statistics.median(v) for k, v in times.items()}
        scan_x, ingest_x = med["scan"] / med["hash"], med["ingest1"] / med["ingest0"]
        print(f"{path.name}: sha256 {med['hash']:.2f} s, scan (sha256 + lines) {med['scan']:.2f} s "
              f"({scan_x:.2f}x); ingest hash only {med['ingest0']:.2f} s, with the scan "
              f"{med['ingest1']:.2f} s ({ingest_x:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
