"""OTLP/JSON lines streamed straight from the file: the odd cases, the same rows as the
record-by-record reader gives, and an import under a memory cap smaller than the file.

A JSONL file of OTLP export requests is parsed once, in parallel, into one row per span with only
the attributes goldmine reads (no tall table of every attribute, no copy of the file's lines); a
second, ordered read gives line numbers only when a row is rejected or an event id repeats. Every
expected number below is counted by hand from the fixture.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest
from test_ingest_traces import (
    T0,
    counts,
    kv,
    otlp_request,
    otlp_rows,
    otlp_span,
    query,
    rejects,
    traces_json,
    write_jsonl,
)

from goldmine.ingest import api
from goldmine.store import open_store

from helpers import traces_under_limit

SEC = 10**9


def doc_attrs(i: int, **fields) -> list[dict]:
    out = []
    for field, value in fields.items():
        value = json.dumps(value) if field == "metadata" else value
        out.append(kv(f"retrieval.documents.{i}.document.{field}", value))
    return out


def odd_requests() -> dict[str, dict]:
    """Export requests, one a line, each with a case the reader must get right."""
    a, b, c = "a1" * 16, "b2" * 16, "c3" * 16
    root = otlp_span(
        a,
        "a000000000000001",
        None,
        T0,
        [kv("openinference.span.kind", "CHAIN"), kv("session.id", "sess-a"), kv("user.id", "u-a")],
    )
    outer = otlp_span(
        a,
        "a000000000000002",
        "a000000000000001",
        T0 + SEC,
        [
            kv("openinference.span.kind", "RETRIEVER"),
            kv("input.value", json.dumps({"query": "refund window", "top_k": 3})),
            *doc_attrs(
                0,
                id="refund-1",
                score=0.9,
                content="Refunds in 30 days.",
                metadata={"chunk_id": "c-1"},
            ),
            *doc_attrs(
                1, id="refund-2", score=0.5, content="Refund to card.", metadata={"chunk_id": "c-2"}
            ),
            *doc_attrs(2, id="returns-7", score=0.1, metadata={"chunk_id": "c-7"}),
        ],
    )
    # A retriever inside the outer one (a fusion retriever's leg): not a row.
    nested = otlp_span(
        a,
        "a000000000000003",
        "a000000000000002",
        T0 + SEC,
        [
            kv("openinference.span.kind", "RETRIEVER"),
            kv("input.value", "refund window"),
            *doc_attrs(0, id="leg-1"),
        ],
    )
    llm = otlp_span(
        a,
        "a000000000000004",
        "a000000000000001",
        T0 + 2 * SEC,
        [
            kv("openinference.span.kind", "LLM"),
            kv("output.value", "I don't know the refund window."),
        ],
    )
    failed = otlp_span(
        b,
        "b000000000000001",
        None,
        T0 + 10 * SEC,
        [kv("openinference.span.kind", "RETRIEVER"), kv("input.value", "cancel my order")],
        status={"code": 2, "message": "vector store timed out"},
    )
    # The retry, whose documents carry content and no id: their content hash stands in.
    retry = otlp_span(
        b,
        "b000000000000002",
        None,
        T0 + 11 * SEC,
        [
            kv("openinference.span.kind", "RETRIEVER"),
            kv("input.value", "cancel my order"),
            *doc_attrs(0, content="Orders can be cancelled within an hour.", score=0.7),
            *doc_attrs(1, id="orders-3", score=0.6),
        ],
    )
    no_query = otlp_span(
        c,
        "c000000000000001",
        None,
        T0 + 20 * SEC,
        [kv("openinference.span.kind", "RETRIEVER"), *doc_attrs(0, id="x-1")],
    )
    no_docs = otlp_span(
        c,
        "c000000000000002",
        None,
        T0 + 21 * SEC,
        [
            kv("gen_ai.operation.name", "retrieval"),
            kv("gen_ai.retrieval.query.text", "opening hours on bank holidays"),
            kv("gen_ai.conversation.id", "conv-c"),
        ],
    )
    return {
        "a": otlp_request(root, outer, nested, llm),
        "b": otlp_request(failed, retry),
        "c": otlp_request(no_query, no_docs),
    }  # fmt: skip


def odd_lines() -> list[dict | str]:
    """Nine lines: a, blank, b, malformed, c, a again (same text), a list, an object that is no
    export request, and a span-less request (no rows)."""
    r = odd_requests()
    return [r["a"], "", r["b"], "{broken", r["c"], r["a"], "[1, 2]",
            {"resourceSpans": "not a list"}, {"resourceSpans": []}]  # fmt: skip


def test_otlp_odd_cases_counted_and_rejected_with_their_lines(tmp_path, db_path, cli):
    path = write_jsonl(tmp_path / "export.jsonl", odd_lines())
    out = traces_json(cli, str(path), "--db", str(db_path))
    # Rows: a's outer retriever (twice: lines 1 and 6), b's failed and retry, the malformed
    # line, c's two retrievers, the list, the wrong object. Stored: outer, retry, c's no_docs.
    assert counts(out["total"]) == (9, 3, 5, 1)
    f = out["files"][0]
    assert f["format"] == "otel"
    assert (f["retrievals"], f["nested_retrievals"], f["documents_without_id"]) == (8, 2, 1)
    assert rejects(cli, db_path) == [
        (3, "retrieval failed: vector store timed out"),
        (4, "malformed JSON"),
        (5, "missing query (span c000000000000001)"),
        (7, "not a JSON object"),
        (8, "not an OTLP/JSON export request"),
    ]
    raw = query(db_path, "SELECT raw FROM rejects WHERE line = 3")[0][0]
    assert json.loads(raw)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"] == (
        "b000000000000001"
    )
    rows = query(
        db_path,
        "SELECT e.query, e.session_id, e.user_id, e.result_ids, e.num_results, e.ts::VARCHAR, "
        "t.answer, t.dont_know, t.scores, t.ids_from_content FROM search_events e "
        "JOIN trace_retrievals t USING (event_id) ORDER BY e.ts",
    )
    content_id = "sha256:" + hashlib.sha256(b"Orders can be cancelled within an hour.").hexdigest()
    assert rows == [
        ("refund window", "sess-a", "u-a", ["refund-1", "refund-2", "returns-7"], 3,
         "2026-11-18 11:06:41", "I don't know the refund window.", True, [0.9, 0.5, 0.1], 0),
        ("cancel my order", None, None, [content_id[:23], "orders-3"], 2,
         "2026-11-18 11:06:51", None, False, [0.7, 0.6], 1),
        ("opening hours on bank holidays", "conv-c", None, [], 0,
         "2026-11-18 11:07:01", None, False, [], 0),
    ]  # fmt: skip
    ids = query(db_path, "SELECT event_id FROM search_events ORDER BY event_id")
    assert ids[0] == (f"otel:{'a1' * 16}:a000000000000002",)


def test_otlp_doc_id_from_the_metadata_json(tmp_path, db_path, cli):
    path = write_jsonl(tmp_path / "export.jsonl", [odd_requests()["a"]])
    traces_json(cli, str(path), "--db", str(db_path), "--doc-id", "metadata.chunk_id")
    assert query(db_path, "SELECT result_ids FROM search_events") == [(["c-1", "c-2", "c-7"],)]


def test_otlp_lines_read_the_same_as_the_record_by_record_path(tmp_path, db_path, cli):
    """The same requests as a JSON document (read record by record, the general reshape) and
    as JSONL (streamed): the same events, side rows and reasons."""
    lines = [x for x in odd_lines() if x != ""] + otlp_rows()
    streamed = write_jsonl(tmp_path / "export.jsonl", lines)
    document = tmp_path / "export.json"
    document.write_text(json.dumps([x if isinstance(x, dict) else json.loads(x)
                                    for x in lines if x not in ("{broken",)]))  # fmt: skip
    other = db_path.with_name("document.duckdb")
    a = traces_json(cli, str(streamed), "--db", str(db_path), "--no-redact")
    b = traces_json(cli, str(document), "--db", str(other), "--no-redact")
    assert a["total"]["stored"] == b["total"]["stored"] == 6
    assert a["total"]["rejected"] == b["total"]["rejected"] + 1  # the malformed line
    sql = (
        "SELECT e.* EXCLUDE (batch_id), t.* EXCLUDE (batch_id, event_id) FROM search_events e "
        "JOIN trace_retrievals t USING (event_id) ORDER BY event_id"
    )
    assert query(db_path, sql) == query(other, sql)
    reasons = "SELECT reason FROM rejects WHERE reason <> 'malformed JSON' ORDER BY reason"
    assert query(db_path, reasons) == query(other, reasons)


def test_otlp_invalid_utf8_line_falls_back_and_is_rejected(tmp_path, db_path, cli):
    path = write_jsonl(tmp_path / "export.jsonl", [odd_requests()["a"]])
    with path.open("ab") as f:
        f.write(b'{"resourceSpans": "\xff\xfe"}\n')
    out = traces_json(cli, str(path), "--db", str(db_path))
    assert counts(out["total"]) == (2, 1, 1, 0)
    assert rejects(cli, db_path)[-1] == (2, "invalid UTF-8")


def test_otlp_reimport_of_an_overlapping_export_adds_only_new_retrievals(tmp_path, db_path):
    r = odd_requests()
    first = write_jsonl(tmp_path / "week1.jsonl", [r["a"], r["b"]])
    second = write_jsonl(tmp_path / "week2.jsonl", [r["b"], r["c"], r["a"]])
    with open_store(db_path) as con:
        one = api.traces(con, [first]).total
        two = api.traces(con, [second]).total
        stored = con.execute("SELECT count(*) FROM trace_retrievals").fetchall()[0][0]
    assert (one["stored"], one["rejected"]) == (2, 1)
    assert counts(two) == (5, 1, 2, 2)
    assert stored == 3


def _spans_file(path: Path, spans: int) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from bench_traces import generate

    generate(path, spans)
    return path


@pytest.mark.slow
def test_an_export_larger_than_the_memory_limit_imports(tmp_path, db_path):
    """A 40,000-span export (176 MB, one malformed line in the middle) under
    GOLDMINE_MEMORY_LIMIT=160MB on one thread: DuckDB spills, every row is accounted for and the
    rejected line keeps its number. (A thread parses 2,048 lines at a time: about 100 MB of
    working memory for these 4 KB export requests.)"""
    path = _spans_file(tmp_path / "big.jsonl", 40_000)
    lines = path.read_text().splitlines()
    lines[20_000] = '{"resourceSpans": [{"scopeSpans": '
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size > 160 * 2**20
    total, rejected, _ = traces_under_limit(path, db_path, "160MB")
    assert total == {"rows_in": 40_000, "stored": 39_999, "rejected": 1, "already_present": 0}
    assert rejected == [[20_001, "malformed JSON"]]
