"""Benchmark: ``goldmine eval run --http`` against a local endpoint that answers in 50 ms.

    .venv/bin/python bench/bench_http.py [--queries 1000] [--concurrency 16] [--repeats 3]

The endpoint (a thread-per-request server on 127.0.0.1, started here and stopped at the end)
sleeps 50 ms and returns ten ids. The whole ``goldmine eval run`` process is timed: start-up,
1,000 POSTs at ``--concurrency 16``, scoring. The floor is queries x 50 ms / concurrency.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

DELAY = 0.05


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        time.sleep(DELAY)
        n = int(body["query"].split()[-1])
        payload = json.dumps([f"d{(n + i) % 50}" for i in range(10)]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/search"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            gold = Path(tmp) / "gold.jsonl"
            gold.write_text(
                "".join(
                    json.dumps(
                        {"query_id": f"q{i}", "query": f"query {i}", "relevant": [f"d{i % 50}"]}
                    )
                    + "\n"
                    for i in range(args.queries)
                )
            )
            times = []
            for _ in range(args.repeats):
                started = time.perf_counter()
                out = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "goldmine",
                        "eval",
                        "run",
                        "--gold",
                        str(gold),
                        "--http",
                        url,
                        "--concurrency",
                        str(args.concurrency),
                        "-k",
                        "10",
                        "--no-store",
                        "--json",
                    ],
                    capture_output=True,
                    text=True,
                )
                times.append(time.perf_counter() - started)
                if out.returncode != 0:
                    raise SystemExit(out.stderr)
                data = json.loads(out.stdout)
                assert data["n_errors"] == 0 and data["metrics"]["recall@1"] == 1.0
    finally:
        server.shutdown()
        server.server_close()
    floor = args.queries * DELAY / args.concurrency
    median = statistics.median(times)
    print(
        f"{args.queries} queries, {DELAY * 1000:.0f} ms endpoint, concurrency {args.concurrency}: "
        f"median {median:.2f} s over {args.repeats} (floor {floor:.2f} s, {median / floor:.2f}x; "
        "target under 5 s)"
    )


if __name__ == "__main__":
    main()
