"""Review page response time: the next item and a grade, over HTTP, on a large store.

Builds (in bench/out/) a store with 100,000 corpus chunks (imported with ``goldmine ingest
corpus``) and 10,000 gold items with 10 drafted candidates each, starts the real
``goldmine gold review --web`` server, and drives it over HTTP from this process: ``GET /review``
(the next item, rendered) and ``POST /api/act`` (a grade, then the next item rendered). Each
request opens the store, does its work and closes it, as the page always does. Prints the
median and 95th percentile of each; the target is p95 under 100 ms. Asserts nothing about time.

Run: ``.venv/bin/python bench/bench_web.py [--chunks 100000] [--items 10000] [--requests 200]``
"""

from __future__ import annotations

import argparse
import http.cookiejar
import json
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import duckdb

OUT = Path(__file__).resolve().parent / "out"
ROOT = Path(__file__).resolve().parent.parent


def build(db: Path, n_chunks: int, n_items: int) -> None:
    corpus = OUT / f"web-corpus-{n_chunks}.jsonl"
    if not corpus.exists():
        con = duckdb.connect()
        con.execute(
            f"""COPY (SELECT printf('c%07d', i) AS id, printf('d%06d', i // 5) AS doc_id,
                       printf('Article %d about topic %d', i, i % 977) AS title,
                       printf('https://help.example.com/a/%d', i) AS url,
                       repeat(printf('Passage %d explains how to handle topic %d and account '
                                     || 'setting %d for billing and access. ', i, i % 977,
                                     i % 31), 4) AS text
                FROM range({int(n_chunks)}) t(i)) TO '{corpus}' (FORMAT json)"""
        )
        con.close()
    db.unlink(missing_ok=True)
    run = [sys.executable, "-m", "goldmine", "--db", str(db), "ingest", "corpus", str(corpus)]
    subprocess.run(run, check=True, capture_output=True)
    con = duckdb.connect(str(db))
    con.execute(
        """INSERT INTO gold_items (query_id, position, query, norm_query, status, tags, origin,
               sources, source_ids, notes, created_at, updated_at)
           SELECT printf('q_%09d', i), i, printf('how do i change setting %d for topic %d',
                  i % 31, i % 977), printf('how do i change setting %d for topic %d',
                  i % 31, i % 977) || ' #' || i, 'drafted', ['question'], 'bench', ['bench'],
                  [], [], now()::TIMESTAMP, now()::TIMESTAMP
           FROM range(?) t(i)""",
        [n_items],
    )
    con.execute(
        """INSERT INTO gold_labels (query_id, chunk_id, kind, rank, score, source, text_hash,
               snapshot_id, who, ts)
           SELECT printf('q_%09d', i), c.chunk_id, 'draft', r + 1, 10.0 - r, 'bm25', c.text_hash,
                  c.snapshot_id, 'retriever:bm25', now()::TIMESTAMP
           FROM range(?) t(i), range(10) s(r)
           JOIN chunks c ON c.chunk_id = printf('c%07d', (i * 7 + r * 9973) % ?)""",
        [n_items, n_chunks],
    )
    con.close()


class Client:
    def __init__(self, url: str):
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        self.base = url.split("/?")[0]
        self.opener.open(url).read()  # sets the token cookie

    def get(self, path: str) -> bytes:
        return self.opener.open(self.base + path, timeout=30).read()

    def post(self, path: str, body: dict) -> bytes:
        request = urllib.request.Request(
            self.base + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "X-Goldmine": "1"},
        )
        return self.opener.open(request, timeout=30).read()


def current(html: bytes) -> tuple[str, str, str]:
    text = html.decode()
    qid = text.split('data-query-id="')[1].split('"')[0]
    version = text.split('data-version="')[1].split('"')[0]
    chunk = text.split('class="cand undecided')[1].split('data-chunk="')[1].split('"')[0]
    return qid, version, chunk


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    db = OUT / "web.duckdb"
    started = time.perf_counter()
    build(db, args.chunks, args.items)
    print(f"store: {args.chunks:,} chunks, {args.items:,} items x 10 drafts "
          f"({time.perf_counter() - started:.1f} s to build)")  # fmt: skip
    server = subprocess.Popen(
        [sys.executable, "-m", "goldmine", "--db", str(db), "gold", "review", "--web",
         "--port", "0", "--no-open", "--by", "bench"],
        stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    try:
        url = server.stdout.readline().split()[-1]
        client = Client(url)
        for _ in range(5):  # warm up: templates, first connections
            client.get("/review")
        nexts, grades = [], []
        for _ in range(args.requests):
            t = time.perf_counter()
            html = client.get("/review")
            nexts.append(time.perf_counter() - t)
            qid, version, chunk = current(html)
            body = {"action": "grade", "query_id": qid, "version": version,
                    "chunk_id": chunk, "grade": 2}  # fmt: skip
            t = time.perf_counter()
            client.post("/api/act", body)
            grades.append(time.perf_counter() - t)
    finally:
        server.terminate()
        server.wait(timeout=10)
    for name, values in (("next item (GET /review)", nexts), ("grade (POST /api/act)", grades)):
        print(
            f"{name}: median {1000 * statistics.median(values):.1f} ms, "
            f"p95 {1000 * pct(values, 0.95):.1f} ms over {len(values)} requests "
            "(target p95 < 100 ms)"
        )


if __name__ == "__main__":
    main()
