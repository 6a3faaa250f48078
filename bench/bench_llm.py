"""Model grades through the client: 1,000 candidates at concurrency 8 against a scripted
chat-completions server on 127.0.0.1 that answers each request after 50 ms, then the same run
again, served from the store's cache.

The ideal wall time is 1000 x 50 ms / 8 = 6.25 s; the target is within 1.3x of it (8.1 s), and
the second run under 1 s. Builds (in bench/out/) a store of 1,000 chunks and 100 gold items with
10 drafted candidates each, then runs ``goldmine gold draft --judge llm`` in a subprocess (start-up
included) twice, and the judge function in this process once more; ``--runs`` times on a fresh
store, printing each run and the medians. The first run is split by the server's clock into the
time before its first request, the requests, and the time after the last answer, so what the
command adds to the requests shows. Asserts nothing about time.

Run: ``.venv/bin/python bench/bench_llm.py [--pairs 1000] [--concurrency 8] [--latency 0.05]
[--runs 5]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import duckdb

OUT = Path(__file__).resolve().parent / "out"
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fake_llm import Reply, serve  # noqa: E402


def build(db: Path, n_pairs: int) -> None:
    n_items = max(n_pairs // 10, 1)
    db.unlink(missing_ok=True)
    from goldmine.store import open_store

    with open_store(db):  # creates the store with every migration
        pass
    con = duckdb.connect(str(db))
    con.execute(
        "INSERT INTO corpus_snapshots VALUES (1, 1, now()::TIMESTAMP, 'bench', ?, NULL)",
        [n_pairs],
    )
    con.execute(
        """INSERT INTO chunks SELECT 1, printf('c%06d', i), printf('d%04d', i // 10),
                  printf('Article %d', i),
                  NULL, printf('Passage %d explains setting %d for billing and access.', i,
                               i % 31) AS text,
                  sha256(printf('Passage %d explains setting %d for billing and access.', i,
                                i % 31)), NULL
           FROM range(?) t(i)""",
        [n_pairs],
    )
    con.execute(
        """INSERT INTO gold_items (query_id, position, query, norm_query, status, tags, origin,
               sources, source_ids, notes, created_at, updated_at)
           SELECT printf('q_%06d', i), i, printf('how do i change setting %d', i),
                  printf('how do i change setting %d', i), 'drafted', [], 'bench', ['bench'],
                  [], [], now()::TIMESTAMP, now()::TIMESTAMP
           FROM range(?) t(i)""",
        [n_items],
    )
    con.execute(
        """INSERT INTO gold_labels (query_id, chunk_id, kind, rank, score, source, text_hash,
               snapshot_id, who, ts)
           SELECT printf('q_%06d', i), c.chunk_id, 'draft', r + 1, 10.0 - r, 'bm25', c.text_hash,
                  1, 'retriever:bm25', now()::TIMESTAMP
           FROM range(?) t(i), range(10) s(r)
           JOIN chunks c ON c.chunk_id = printf('c%06d', i * 10 + r)""",
        [n_items],
    )
    con.close()


def judge_cli(db: Path, base_url: str, concurrency: int) -> tuple[float, dict]:
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "goldmine", "--db", str(db), "gold", "draft", "--judge", "llm",
         "--base-url", base_url, "--model", "bench", "--concurrency", str(concurrency),
         "--json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return time.perf_counter() - start, json.loads(out.stdout)["judge"]


def one_run(db: Path, args: argparse.Namespace) -> dict:
    """A fresh store graded once (CLI), again from the cache (CLI), and once more in process;
    the first run split by the server's clock: before its first request, the requests (first
    arrival to last answer), after the last answer."""
    build(db, args.pairs)
    answer = json.dumps({"grade": 1, "reason": "related"})
    arrivals: list[float] = []

    def respond(body: dict, n: int) -> Reply:
        arrivals.append(time.perf_counter())
        return Reply(answer, delay=args.latency)

    with serve(respond) as server:
        start = time.perf_counter()
        first, result = judge_cli(db, server.base_url, args.concurrency)
        last_answer = max(arrivals) + args.latency
        second, again = judge_cli(db, server.base_url, args.concurrency)
        from goldmine.goldset.judge import judge
        from goldmine.llm import Settings
        from goldmine.store import Store

        s = Settings(server.base_url, "bench", concurrency=args.concurrency)
        t = time.perf_counter()
        inproc = judge(Store(db, write=True), s)
        third = time.perf_counter() - t
        n_requests = len(server.requests)
    return {
        "first": first,
        "before": min(arrivals[: args.pairs]) - start,
        "requests": last_answer - min(arrivals[: args.pairs]),
        "after": start + first - last_answer,
        "graded": result["graded"],
        "failed": result["failed"],
        "second": second,
        "second_requests": again["usage"]["requests"],
        "current": again["current"],
        "third": third,
        "third_current": inproc.current,
        "server_requests": n_requests,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--runs", type=int, default=5, help="fresh stores graded; medians shown")
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    ideal = args.pairs * args.latency / args.concurrency
    runs = []
    for _ in range(args.runs):
        runs.append(one_run(OUT / "llm.duckdb", args))
        r = runs[-1]
        print(
            f"  run {len(runs)}: {r['first']:.2f} s ({r['first'] / ideal:.2f}x): "
            f"{r['before']:.2f} s before the first request, requests {r['requests']:.2f} s, "
            f"{r['after']:.2f} s after the last answer; again {r['second']:.2f} s",
            flush=True,
        )
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    load = os.getloadavg()[0]
    print(
        f"{args.pairs:,} grades at concurrency {args.concurrency}, {args.latency * 1000:.0f} ms "
        f"a request: ideal {ideal:.2f} s; medians of {len(runs)} runs (load average {load:.1f})"
    )
    print(
        f"  first run (CLI, start-up included): {med['first']:.2f} s = "
        f"{med['first'] / ideal:.2f}x ideal (target 1.3x); requests {med['requests']:.2f} s = "
        f"{med['requests'] / ideal:.2f}x; {med['before']:.2f} s before the first request, "
        f"{med['after']:.2f} s after the last answer; graded {runs[-1]['graded']}, "
        f"{runs[-1]['failed']} failed"
    )
    print(
        f"  second run (CLI, from the store): {med['second']:.2f} s; "
        f"{runs[-1]['second_requests']} requests, {runs[-1]['current']} current"
    )
    last = runs[-1]
    third = med["third"] * 1000
    print(f"  third run (in process): {third:.0f} ms, {last['third_current']} current")
    print(f"  server saw {runs[-1]['server_requests']} requests a run")


if __name__ == "__main__":
    main()
