"""Trace ingest speed: ``goldmine ingest traces`` against DuckDB's own load of the same file.

Generates a seeded OTLP/JSON export in bench/out/ (one ExportTraceServiceRequest a line, each a
trace of three spans: a CHAIN root with session and user, an OpenInference RETRIEVER with 10
documents — id, score, 80 characters of content — and an LLM answer; default 100,000 retriever
spans). Then, each in a fresh process and a fresh on-disk DuckDB file, times:

- bare load: ``CREATE TABLE t AS SELECT * FROM read_json(file)``
- goldmine ingest traces of the same file (redaction on, as by default; and --no-redact)
- re-import of the same file (known by its hash)

``--format langfuse`` (or langsmith, openai, openinference) generates that format's export
instead (``--spans`` retrievals of 10 documents, each with its trace's other records: an answer, a
session, some feedback) and also times the record-by-record reader the format took before it
streamed (``records``: the whole file as text, then JSON functions over it), for its peak RSS.

Prints medians over ``--repeat`` runs (and each run), same-run ratios, the CPU time each run
took (user + system: on a machine shared with other work, the ratio of CPU times moves less than
that of wall times) and each run's peak RSS (VmHWM); asserts nothing. ``--limit 1GB`` runs every
child under that DuckDB memory limit (``GOLDMINE_MEMORY_LIMIT`` for goldmine, ``memory_limit`` for
the bare load), as a small machine would.
Run: ``.venv/bin/python bench/bench_traces.py [--spans N] [--repeat R] [--limit 1GB]
[--format otel|langfuse|langsmith|openai|openinference]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"
SEED = 11
ANSWERS = {True: "I don't know.", False: "See the policy."}
WORDS = ["refund", "invoice", "policy", "order", "card", "address", "vacation", "parcel",
         "label", "return", "days"]  # fmt: skip


def _kv(key: str, value) -> dict:
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": value}}


def generate(path: Path, spans: int) -> None:
    rng = random.Random(SEED)
    with path.open("w") as out:
        for i in range(spans):
            trace, root = f"{i:032x}", f"{i:015x}0"
            query = " ".join(rng.choice(WORDS) for _ in range(4))
            docs = []
            for r in range(10):
                doc = f"doc-{rng.randrange(40000)}"
                content = " ".join(rng.choice(WORDS) for _ in range(12))[:80]
                docs += [
                    _kv(f"retrieval.documents.{r}.document.id", doc),
                    _kv(f"retrieval.documents.{r}.document.score", round(1 - r / 10, 2)),
                    _kv(f"retrieval.documents.{r}.document.content", content),
                ]
            t0 = 1_795_000_000_000_000_000 + i * 1_000_000_000

            def span(sid, parent, start, attrs, trace=trace):
                return {"traceId": trace, "spanId": sid, "parentSpanId": parent, "name": "span",
                        "kind": 1, "startTimeUnixNano": str(start),
                        "endTimeUnixNano": str(start + 1000), "attributes": attrs,
                        "status": {}}  # fmt: skip

            request = {"resourceSpans": [{
                "resource": {"attributes": [_kv("service.name", "rag")]},
                "scopeSpans": [{"scope": {"name": "bench"}, "spans": [
                    span(root, "", t0, [_kv("openinference.span.kind", "CHAIN"),
                                        _kv("session.id", f"s{i // 4}"),
                                        _kv("user.id", f"u{i % 5000}")]),
                    span(f"{i:015x}1", root, t0 + 1, [
                        _kv("openinference.span.kind", "RETRIEVER"),
                        _kv("input.value", query), *docs]),
                    span(f"{i:015x}2", root, t0 + 2, [
                        _kv("openinference.span.kind", "LLM"),
                        _kv("output.value", ANSWERS[i % 20 == 0])]),
                ]}]}]}  # fmt: skip
            out.write(json.dumps(request, separators=(",", ":")) + "\n")


def _docs(rng: random.Random) -> list[tuple[str, float, str]]:
    """Ten documents: id, score, 80 characters of content."""
    out = []
    for r in range(10):
        content = " ".join(rng.choice(WORDS) for _ in range(12))[:80]
        out.append((f"doc-{rng.randrange(40000)}", round(1 - r / 10, 2), content))
    return out


def _langfuse(i: int, rng: random.Random) -> list[dict]:
    tid, ts = f"lf-{i}", f"2026-11-21T09:{i // 60 % 60:02d}:{i % 60:02d}.000Z"
    docs = [{"page_content": c, "metadata": {"chunk_id": d, "score": s}} for d, s, c in _docs(rng)]
    obs = [
        {
            "id": f"{tid}-r",
            "traceId": tid,
            "type": "RETRIEVER",
            "name": "retrieve",
            "startTime": ts,
            "endTime": ts,
            "parentObservationId": None,
            "input": {"query": " ".join(rng.choice(WORDS) for _ in range(4))},
            "output": docs,
            "level": "DEFAULT",
            "statusMessage": None,
            "metadata": {},
            "model": None,
        },
        {
            "id": f"{tid}-g",
            "traceId": tid,
            "type": "GENERATION",
            "name": "answer",
            "startTime": ts,
            "endTime": ts,
            "parentObservationId": None,
            "input": None,
            "output": {"role": "assistant", "content": ANSWERS[i % 20 == 0]},
            "level": "DEFAULT",
            "statusMessage": None,
            "metadata": {},
            "model": "gpt",
        },
    ]
    scores = (
        [
            {
                "id": f"sc-{i}",
                "traceId": tid,
                "observationId": None,
                "name": "user-feedback",
                "value": i % 3 / 2,
                "stringValue": None,
                "dataType": "NUMERIC",
                "source": "API",
                "comment": None,
                "timestamp": ts,
            }
        ]
        if i % 10 == 0
        else []
    )
    return [
        {
            "id": tid,
            "timestamp": ts,
            "name": "rag-query",
            "input": None,
            "output": None,
            "sessionId": f"s{i // 4}",
            "userId": f"u{i % 5000}",
            "metadata": {},
            "tags": [],
            "observations": obs,
            "scores": scores,
        }
    ]


def _langsmith(i: int, rng: random.Random) -> list[dict]:
    root, ts = f"r{i}", f"2026-11-22T08:{i // 60 % 60:02d}:{i % 60:02d}.000000"

    def run(rid, run_type, parent, inputs, outputs, metadata=None):
        return {
            "id": rid,
            "name": run_type,
            "run_type": run_type,
            "start_time": ts,
            "end_time": ts,
            "inputs": inputs,
            "outputs": outputs,
            "error": None,
            "extra": {"metadata": metadata or {}},
            "trace_id": root,
            "parent_run_id": parent,
            "tags": [],
            "feedback_stats": None,
            "status": "success",
        }

    query = " ".join(rng.choice(WORDS) for _ in range(4))
    docs = [
        {"page_content": c, "metadata": {"id": d, "score": s}, "type": "Document"}
        for d, s, c in _docs(rng)
    ]
    return [
        run(
            root,
            "chain",
            None,
            {"question": query},
            {"output": ANSWERS[i % 20 == 0]},
            {"thread_id": f"s{i // 4}", "user_id": f"u{i % 5000}"},
        ),
        run(f"{root}-r", "retriever", root, {"query": query}, {"documents": docs}),
        run(f"{root}-l", "llm", root, {}, {"generations": [[{"text": ANSWERS[i % 20 == 0]}]]}),
    ]


def _openai(i: int, rng: random.Random) -> list[dict]:
    query = " ".join(rng.choice(WORDS) for _ in range(4))
    docs = [{"id": d, "score": s, "content": c} for d, s, c in _docs(rng)]
    call = {
        "id": f"call_{i}",
        "type": "function",
        "function": {"name": "search_docs", "arguments": json.dumps({"query": query})},
    }
    return [{"id": f"conv-{i}", "user": f"u{i % 5000}",
             "created_at": f"2026-11-23T15:{i // 60 % 60:02d}:{i % 60:02d}Z", "messages": [
        {"role": "system", "content": "Answer from the knowledge base."},
        {"role": "user", "content": query},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"call_{i}", "content": json.dumps(docs)},
        {"role": "assistant", "content": ANSWERS[i % 20 == 0]}]}]  # fmt: skip


def _openinference(i: int, rng: random.Random) -> list[dict]:
    trace, ts = f"t{i}", f"2026-11-20T10:{i // 60 % 60:02d}:{i % 60:02d}+00:00"

    def span(sid, kind, parent, attrs):
        return {
            "name": kind.lower(),
            "context": {"trace_id": trace, "span_id": sid},
            "span_kind": kind,
            "parent_id": parent,
            "start_time": ts,
            "end_time": ts,
            "status_code": "OK",
            "status_message": "",
            "attributes": {"openinference.span.kind": kind, **attrs},
            "events": [],
        }

    docs = {}
    for r, (d, s, c) in enumerate(_docs(rng)):
        docs[f"retrieval.documents.{r}.document.id"] = d
        docs[f"retrieval.documents.{r}.document.score"] = s
        docs[f"retrieval.documents.{r}.document.content"] = c
    query = " ".join(rng.choice(WORDS) for _ in range(4))
    return [
        span(f"{trace}-c", "CHAIN", None, {"session.id": f"s{i // 4}", "user.id": f"u{i % 5000}"}),
        span(f"{trace}-r", "RETRIEVER", f"{trace}-c", {"input.value": query, **docs}),
        span(f"{trace}-l", "LLM", f"{trace}-c", {"output.value": ANSWERS[i % 20 == 0]}),
    ]


RECORDS = {"langfuse": _langfuse, "langsmith": _langsmith, "openai": _openai,
           "openinference": _openinference}  # fmt: skip


def generate_records(path: Path, fmt: str, retrievals: int) -> None:
    """A seeded export in one of the record-by-record formats: ``retrievals`` retrievals of 10
    documents each, with their traces' other records (an answer, a session, some feedback)."""
    rng = random.Random(SEED)
    with path.open("w") as out:
        for i in range(retrievals):
            for record in RECORDS[fmt](i, rng):
                out.write(json.dumps(record, separators=(",", ":")) + "\n")


_CHILD = r"""
import json, os, sys, time
from pathlib import Path
kind, path, db = sys.argv[1], sys.argv[2], Path(sys.argv[3])
if kind == "bare":
    import duckdb
    limit = os.environ.get("GOLDMINE_MEMORY_LIMIT")
    con = duckdb.connect(str(db), config={"memory_limit": limit} if limit else {})
    start = time.perf_counter()
    con.execute("CREATE TABLE t AS SELECT * FROM read_json(?, format = 'newline_delimited')",
                [path])
    con.close()
    elapsed = time.perf_counter() - start
    stored = None
elif kind == "records":  # the record-by-record reader, the file's stream switched off
    import dataclasses
    from goldmine.ingest import batch, formats, traces
    from goldmine.ingest.redact import make_redactor
    from goldmine.store import open_store
    target = dataclasses.replace(traces.target(), stream=None, number=None)
    start = time.perf_counter()
    with open_store(db) as con:
        result = batch.run(con, target, formats.discover([path]),
                           make_redactor(True, None, handles=True), {})
    elapsed = time.perf_counter() - start
    stored = result.total
else:
    from goldmine.ingest import api
    from goldmine.store import open_store
    start = time.perf_counter()
    with open_store(db) as con:
        result = api.traces(con, [path], redact=(kind != "plain"))
    elapsed = time.perf_counter() - start
    stored = result.total
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forking parent.
rss = int([l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0].split()[1]) / 1024
cpu = sum(os.times()[:2])  # user + system of every thread: what other work on the machine spares
print(json.dumps({"seconds": elapsed, "cpu": cpu, "rss_mb": rss, "total": stored}))
"""


def measure(kind: str, path: Path, db: Path, fresh: bool = True, limit: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "GOLDMINE_MEMORY_LIMIT"}
    if limit:
        env["GOLDMINE_MEMORY_LIMIT"] = limit
    if fresh:
        for p in (db, db.with_name(db.name + ".wal"), db.with_name(db.name + ".writer")):
            p.unlink(missing_ok=True)
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, kind, str(path), str(db)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if out.returncode:
        raise SystemExit(f"{kind} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--limit", default=None, help="DuckDB memory limit for every run")
    parser.add_argument("--format", default="otel", choices=["otel", *RECORDS])
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    otel = args.format == "otel"
    path = OUT / f"traces_{'otlp' if otel else args.format}_{args.spans}.jsonl"
    if not path.exists():
        start = time.perf_counter()
        if otel:
            generate(path, args.spans)
        else:
            generate_records(path, args.format, args.spans)
        print(f"generated {path.name} in {time.perf_counter() - start:.1f}s", file=sys.stderr)
    size = path.stat().st_size / 1e6
    cap = f", memory limit {args.limit}" if args.limit else ""
    shape = "retriever spans (3 spans a trace" if otel else f"{args.format} retrievals (a trace"
    print(f"{args.spans:,} {shape}, 10 documents each), {size:.0f} MB{cap}")
    db = OUT / "bench_traces.duckdb"
    kinds = ["bare", "plain", "redact"] + ([] if otel else ["records"])
    runs: dict[str, list[dict]] = {k: [] for k in [*kinds, "reimport"]}
    for _ in range(args.repeat):
        for kind in kinds:
            runs[kind].append(measure(kind, path, db, limit=args.limit))
        runs["reimport"].append(measure("redact", path, db, fresh=False, limit=args.limit))
    bare = statistics.median(r["seconds"] for r in runs["bare"])
    bare_cpu = statistics.median(r["cpu"] for r in runs["bare"])
    labels = {
        "bare": "bare read_json into a table",
        "redact": "ingest traces (redaction on)",
        "plain": "ingest traces --no-redact",
        "records": "record-by-record (before)",
        "reimport": "re-import (same file hash)",
    }
    for kind, label in labels.items():
        if kind not in runs:
            continue
        secs = statistics.median(r["seconds"] for r in runs[kind])
        cpu = statistics.median(r["cpu"] for r in runs[kind])
        rss = max(r["rss_mb"] for r in runs[kind])
        rate = args.spans / secs if secs else float("inf")
        each = ", ".join(f"{r['seconds']:.1f}" for r in runs[kind])
        print(
            f"{label:32s} median {secs:7.2f}s  {rate:10,.0f} spans/s  "
            f"x{secs / bare:5.2f} of bare  cpu {cpu:7.1f}s x{cpu / bare_cpu:5.2f}  "
            f"peak RSS {rss:6.0f} MB  (runs: {each})"
        )
    print("accounting:", runs["redact"][0]["total"])
    for p in (db, db.with_name(db.name + ".wal")):
        p.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
