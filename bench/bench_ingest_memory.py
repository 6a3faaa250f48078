"""Ingest memory: a search log larger than the store's memory limit allows to hold twice.

Generates a seeded JSONL log (default 4,000,000 events, about 1.3 GB) with the same generator as
``bench_ingest.py``, then imports it in a fresh process each, with DuckDB's memory limit set to
``--limit`` (``GOLDMINE_MEMORY_LIMIT``), and reports the process's peak resident memory and time.
Measured alongside: the same file loaded by DuckDB itself into a plain table under the same limit,
goldmine without a limit, and a copy with one malformed line (the record-by-record path). A
bounded import's peak stays near the limit plus the interpreter, whatever the file's size: DuckDB
spills the stage to ``<store>.tmp``.

Run: ``.venv/bin/python bench/bench_ingest_memory.py [--events N] [--limit 512MB]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ingest import OUT, generate  # noqa: E402

_CHILD = r"""
import json, sys, time
from pathlib import Path
kind, path, db = sys.argv[1], sys.argv[2], Path(sys.argv[3])
for p in (db, Path(str(db) + ".wal")):
    p.unlink(missing_ok=True)
start = time.perf_counter()
if kind == "bare":
    import duckdb
    config = {"memory_limit": sys.argv[4]} if len(sys.argv) > 4 else {}
    con = duckdb.connect(str(db), config=config)
    con.execute("CREATE TABLE t AS SELECT * FROM read_json(?)", [path])
    rows = con.execute("SELECT count(*) FROM t").fetchall()[0][0]
    con.close()
else:
    from goldmine.ingest import api
    from goldmine.store import open_store
    with open_store(db) as con:
        rows = api.searchlog(con, [path]).total["stored"]
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forking parent.
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0].split()[1]
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "rows": rows, "peak_mb": int(hwm) / 1024}))
"""


def measure(kind: str, path: Path, db: Path, limit: str | None) -> dict:
    env = dict(os.environ)
    env.pop("GOLDMINE_MEMORY_LIMIT", None)
    args = [sys.executable, "-c", _CHILD, kind, str(path), str(db)]
    if limit:
        env["GOLDMINE_MEMORY_LIMIT"] = limit
        args.append(limit)
    done = subprocess.run(args, capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        raise SystemExit(f"{kind} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def with_a_malformed_line(path: Path) -> Path:
    """A copy with one malformed line in the middle: the import takes the record-by-record path,
    which must be bounded too."""
    out = path.with_name(path.stem + "_malformed.jsonl")
    if out.exists():
        return out
    half = path.stat().st_size // 2
    tmp = out.with_suffix(".tmp")
    with path.open("rb") as src, tmp.open("wb") as dst:
        dst.write(src.read(half) + src.readline())
        dst.write(b'{"event_id": "broken", "query": \n')
        while block := src.read(1 << 24):
            dst.write(block)
    tmp.rename(out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=4_000_000)
    parser.add_argument("--limit", default="512MB", help="DuckDB memory limit for the bounded runs")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    path = generate(args.out, args.events, ("jsonl",))["jsonl"]
    db = args.out / "memory.duckdb"
    size_mb = path.stat().st_size / 2**20
    print(f"{args.events:,} events, {size_mb:,.0f} MB of JSONL, memory limit {args.limit}")
    runs = [
        (f"bare DuckDB load, limit {args.limit}", "bare", args.limit),
        (f"goldmine ingest, limit {args.limit}", "goldmine", args.limit),
        ("goldmine ingest, no limit", "goldmine", None),
    ]
    runs.append((f"goldmine, malformed line, limit {args.limit}", "goldmine", args.limit))
    for i, (label, kind, limit) in enumerate(runs):
        source = with_a_malformed_line(path) if i == len(runs) - 1 else path
        got = measure(kind, source, db, limit)
        print(
            f"  {label:<36} {got['seconds']:7.1f} s  peak {got['peak_mb']:7,.0f} MB  "
            f"({got['rows']:,} rows)",
            flush=True,
        )
    for p in (db, Path(str(db) + ".wal")):
        p.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
