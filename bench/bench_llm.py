"""Model grades through the client: 1,000 candidates at concurrency 8 against a scripted
chat-completions server on 127.0.0.1 that answers each request after 50 ms, then the same run
again, served from the store's cache.

The ideal wall time is 1000 x 50 ms / 8 = 6.25 s; the target is within 1.3x of it (8.1 s), and
the second run under 1 s. Builds (in bench/out/) a store of 1,000 chunks and 100 gold items with
10 drafted candidates each, then runs ``goldmine gold draft --judge llm`` in a subprocess (start-up
included) twice, and the judge function in this process once more. Prints the figures; asserts
nothing about time.

Run: ``.venv/bin/python bench/bench_llm.py [--pairs 1000] [--concurrency 8] [--latency 0.05]``
"""

from __future__ import annotations

import argparse
import json
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    db = OUT / "llm.duckdb"
    build(db, args.pairs)
    answer = json.dumps({"grade": 1, "reason": "related"})
    ideal = args.pairs * args.latency / args.concurrency
    with serve(lambda body, n: Reply(answer, delay=args.latency)) as server:
        first, result = judge_cli(db, server.base_url, args.concurrency)
        second, again = judge_cli(db, server.base_url, args.concurrency)
        from goldmine.goldset.judge import judge
        from goldmine.llm import Settings

        s = Settings(server.base_url, "bench", concurrency=args.concurrency)
        start = time.perf_counter()
        inproc = judge(db, s)
        third = time.perf_counter() - start
        n_requests = len(server.requests)
    print(
        f"{args.pairs:,} grades at concurrency {args.concurrency}, {args.latency * 1000:.0f} ms "
        f"a request: ideal {ideal:.2f} s"
    )
    print(
        f"  first run (CLI, start-up included): {first:.2f} s = {first / ideal:.2f}x ideal; "
        f"graded {result['graded']}, {result['usage']['requests']} requests, "
        f"{result['failed']} failed; the requests took {result['usage']['seconds']:.2f} s"
    )
    print(
        f"  second run (CLI, from the store): {second:.2f} s; {again['usage']['requests']} "
        f"requests, {again['current']} current"
    )
    print(f"  third run (in process): {third * 1000:.0f} ms, {inproc.current} current")
    print(f"  server saw {n_requests} requests in all")


if __name__ == "__main__":
    main()
