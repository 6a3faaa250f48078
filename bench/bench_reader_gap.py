"""Benchmark: how long a reader waits, or is refused, while ``triage run`` works on the store.

    .venv/bin/python bench/bench_reader_gap.py              # 3,000 banking77 queries, 1 round
    .venv/bin/python bench/bench_reader_gap.py --n 5000 --repeats 3
    .venv/bin/python bench/bench_reader_gap.py --command draft   # gold draft --retriever hybrid
    .venv/bin/python bench/bench_reader_gap.py --command ingest --events 1000000  # and --hold

Each round builds a fresh store with the CLI — for ``triage`` (the default), ``--n`` banking77
queries (seeded sample) as a search log; for ``draft``, Cranfield's 1,400 abstracts as the corpus
and its 225 queries as gold candidates; for ``ingest``, the first half of the benchmark search log
(``--events``, tests/helpers.generate_searchlog) — then starts the command (``goldmine triage
run``, ``goldmine gold draft --retriever hybrid``, or ``goldmine ingest searchlog`` of the whole
log, whose first half is then already stored; ``--hold`` runs it holding the store while it
stages, as before imports let go of it) and polls ``goldmine status --json`` every ``--every``
seconds until it ends, each poll in its own process as a user's would be. For every poll it
records when it started, when it ended and its exit code (3 = the store was busy).

It prints, per round and as medians over rounds:

- the longest time one successful ``status`` took (start-up, lock waits and the read);
- the longest refused stretch: from the start of the first poll refused to the end of the next
  poll that succeeded (or the run's end) — the time a reader could not read at all;
- the longest gap between two successful reads' ends, next to the plain poll period.

Timings drift on a shared machine; compare figures measured in one sitting.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHARED = Path(os.environ.get("GOLDMINE_SHARED", ROOT.parent / "shared"))
BANKING = SHARED / "datasets" / "banking77" / "train.csv"
CRANFIELD = SHARED / "datasets" / "cranfield"
COMMANDS = {
    "triage": ["triage", "run"],
    "draft": ["gold", "draft", "--retriever", "hybrid"],
    "ingest": ["ingest", "searchlog"],
}
PY = sys.executable
# The import as it was before it let go of the store while staging.
HOLD = (
    "import sys; import goldmine.ingest.batch as b; b.can_release = lambda con: False; "
    "from goldmine.cli import main; sys.argv[0] = 'goldmine'; main()"
)


def goldmine(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "goldmine", *args], capture_output=True, text=True)


def build_store(folder: Path, n: int) -> Path:
    """A store holding n banking77 queries as search events (one import through the CLI)."""
    import polars as pl

    rows = pl.read_csv(BANKING).sample(n=n, shuffle=True, seed=0)
    log = folder / "searches.jsonl"
    rows.select(
        pl.format("e{}", pl.int_range(pl.len())).alias("event_id"),
        pl.lit("2026-11-02T09:00:00").alias("ts"),
        pl.col("text").alias("query"),
        pl.lit(3).alias("num_results"),
    ).write_ndjson(log)
    db = folder / "store.duckdb"
    out = goldmine("ingest", "searchlog", str(log), "--db", str(db))
    if out.returncode:
        raise SystemExit(f"import failed: {out.stderr}")
    return db


def build_draft_store(folder: Path) -> Path:
    """A store holding Cranfield's abstracts as the corpus and its queries as candidates."""
    sys.path.insert(0, str(ROOT / "tests"))
    from realdata import cranfield_chunks, cranfield_queries, write_corpus_jsonl

    corpus = write_corpus_jsonl(cranfield_chunks(CRANFIELD), folder / "corpus.jsonl")
    db = folder / "store.duckdb"
    for args in (
        ["ingest", "corpus", str(corpus)],
        ["gold", "add-query", *cranfield_queries(CRANFIELD).values(), "--by", "bench"],
    ):
        out = goldmine(*args, "--db", str(db))
        if out.returncode:
            raise SystemExit(f"{args[:2]} failed: {out.stderr}")
    return db


def build_ingest_store(folder: Path, events: int) -> tuple[Path, Path]:
    """A store holding the first half of the benchmark search log; returns it and the log."""
    import duckdb

    sys.path.insert(0, str(ROOT / "tests"))
    from helpers import generate_searchlog

    log = generate_searchlog(HERE / "out", events, ("jsonl",))["jsonl"]
    half = folder / "half.jsonl"
    con = duckdb.connect()
    con.execute(
        "COPY (SELECT * FROM read_json(?) LIMIT ?) TO '" + str(half).replace("'", "''") + "'",
        [str(log), events // 2],
    )
    con.close()
    db = folder / "store.duckdb"
    out = goldmine("ingest", "searchlog", str(half), "--db", str(db))
    if out.returncode:
        raise SystemExit(f"import failed: {out.stderr}")
    return db, log


def poll_during(
    db: Path, every: float, command: list[str], hold: bool = False
) -> tuple[float, list[tuple[float, float, int]], str]:
    """Run the command, polling status; returns its seconds, the polls, its stderr."""
    start = time.perf_counter()
    launcher = [PY, "-c", HOLD] if hold else [PY, "-m", "goldmine"]
    run = subprocess.Popen(
        [*launcher, *command, "--db", str(db)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    polls = []
    while run.poll() is None:
        t0 = time.perf_counter()
        rc = goldmine("status", "--json", "--db", str(db)).returncode
        t1 = time.perf_counter()
        polls.append((t0 - start, t1 - start, rc))
        time.sleep(max(0.0, every - (t1 - t0)))
    seconds = time.perf_counter() - start
    err = run.stderr.read() if run.stderr else ""
    if run.returncode:
        raise SystemExit(f"{' '.join(command)} failed: {err}")
    return seconds, polls, err


def figures(seconds: float, polls: list[tuple[float, float, int]]) -> dict:
    ok = [p for p in polls if p[2] == 0]
    refused, stretch_start = [], None
    for t0, t1, rc in polls:
        if rc != 0 and stretch_start is None:
            stretch_start = t0
        elif rc == 0 and stretch_start is not None:
            refused.append(t1 - stretch_start)
            stretch_start = None
    if stretch_start is not None:
        refused.append(seconds - stretch_start)
    ends = [0.0] + [p[1] for p in ok] + [seconds]
    gaps = [b - a for a, b in zip(ends, ends[1:], strict=False)]
    return {
        "command_s": round(seconds, 2),
        "polls": len(polls),
        "refused": sum(1 for p in polls if p[2] != 0),
        "other_errors": sum(1 for p in polls if p[2] not in (0, 3)),
        "longest_ok_poll_s": round(max((p[1] - p[0] for p in ok), default=0.0), 2),
        "longest_refused_s": round(max(refused, default=0.0), 2),
        "longest_gap_between_reads_s": round(max(gaps), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3000, help="banking77 queries in the store")
    parser.add_argument("--every", type=float, default=0.2, help="seconds between polls")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--command", choices=sorted(COMMANDS), default="triage")
    parser.add_argument("--events", type=int, default=1_000_000, help="search events (ingest)")
    parser.add_argument(
        "--hold", action="store_true", help="ingest holding the store while staging (before)"
    )
    args = parser.parse_args()
    data = {"triage": BANKING, "draft": CRANFIELD, "ingest": HERE}[args.command]
    if not data.exists():
        raise SystemExit(f"{data} is absent")
    rounds = []
    for i in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            command = COMMANDS[args.command]
            if args.command == "triage":
                db = build_store(Path(tmp), args.n)
            elif args.command == "draft":
                db = build_draft_store(Path(tmp))
            else:
                db, log = build_ingest_store(Path(tmp), args.events)
                command = [*command, str(log)]
            seconds, polls, _ = poll_during(db, args.every, command, args.hold)
            rounds.append(figures(seconds, polls))
        print(f"round {i + 1}: {json.dumps(rounds[-1])}")
    keys = [k for k in rounds[0] if k != "polls"]
    medians = {k: round(statistics.median(r[k] for r in rounds), 2) for k in keys}
    what = {"triage": f"{args.n} queries", "draft": "Cranfield"}.get(
        args.command,
        f"{args.events:,} events, half already stored" + (", --hold" if args.hold else ""),
    )
    print(f"{args.command}, median of {len(rounds)} ({what}, poll every {args.every} s): {medians}")


if __name__ == "__main__":
    main()
