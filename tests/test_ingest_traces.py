"""Ingest RAG traces: each retrieval becomes a search event, in every format's real shape.

The fixtures follow each format's published shape: Phoenix's span JSON (``span_json_encoder``:
name, context, span_kind, parent_id, start_time, …, attributes nested or as dotted keys) and its
span annotations (span_id, name, annotator_kind, result); OTLP/JSON export requests
(resourceSpans → scopeSpans → spans, attributes as key/value lists with typed values) carrying
OpenInference or OpenTelemetry GenAI attributes (``gen_ai.operation.name`` = retrieval,
``gen_ai.retrieval.query.text``, ``gen_ai.retrieval.documents``); Langfuse traces with full
observations and scores (camelCase, as ``GET /api/public/traces/{id}`` returns them); LangSmith
runs (run_type, inputs, outputs.documents of page_content + metadata, parent_run_id, trace_id,
feedback_stats) and feedback records; OpenAI chat logs (messages with tool_calls and tool
results). Real DuckDB files, the CLI in a subprocess; every expected number is counted by hand.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from goldmine.errors import EXIT_EMPTY, InputError
from goldmine.ingest import api
from goldmine.store import open_store

COUNT_KEYS = ("rows_in", "stored", "rejected", "already_present")


def write_jsonl(path: Path, rows: list[dict | str]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def counts(summary: dict) -> tuple[int, ...]:
    return tuple(summary[k] for k in COUNT_KEYS)


def traces_json(cli, *args: str, code: int = 0) -> dict:
    result = cli("ingest", "traces", *args, "--json")
    assert result.returncode == code, result.stderr
    return json.loads(result.stdout)


def query(db_path: Path, sql: str, params: list | None = None) -> list[tuple]:
    with open_store(db_path) as con:
        return con.execute(sql, params or []).fetchall()


def rejects(cli, db_path: Path) -> list[tuple[int, str]]:
    out = cli("rejects", "--db", str(db_path), "--json")
    return [(r["line"], r["reason"]) for r in json.loads(out.stdout)]


# ---------------------------------------------------------------- OpenInference (Phoenix JSON)


def phoenix_span(trace, span, kind, parent=None, start="2026-11-20T10:00:00+00:00", **attrs):
    """A span as Phoenix's span_json_encoder writes it."""
    return {
        "name": kind.lower(),
        "context": {"trace_id": trace, "span_id": span},
        "span_kind": kind,
        "parent_id": parent,
        "start_time": start,
        "end_time": start,
        "status_code": attrs.pop("status_code", "OK"),
        "status_message": attrs.pop("status_message", ""),
        "attributes": {"openinference.span.kind": kind, **attrs},
        "events": [],
        "conversation": None,
    }


def oi_docs(*docs: dict) -> dict:
    """Documents as dotted OpenInference keys, metadata a JSON string (as OTel carries it)."""
    out = {}
    for i, doc in enumerate(docs):
        for field, value in doc.items():
            value = json.dumps(value) if field == "metadata" else value
            out[f"retrieval.documents.{i}.document.{field}"] = value
    return out


def openinference_rows() -> list[dict | str]:
    """Seven rows: five retrievals kept as rows, two rejected ones and a malformed line.

    t1: chain → retriever (3 documents) → LLM; a thumbs-down annotation on the retriever.
    t2: a retriever whose documents have content but no id, a nested retriever under it
        (not a row), an LLM answer that does not know.
    t3: a retriever that found nothing (a zero-result search).
    t4: a failed retriever span (ERROR) and its successful retry.
    t5: a retriever span without a query.
    """
    return [
        phoenix_span(
            "t1", "s1", "CHAIN",
            **{"session.id": "sess-1", "user.id": "u-1", "input.value": "how long do refunds take"},
        ),
        phoenix_span(
            "t1", "s2", "RETRIEVER", parent="s1", start="2026-11-20T10:00:01+00:00",
            **{"input.value": "how long do refunds take"},
            **oi_docs(
                {"id": "refund-1", "content": "Refunds take five days.", "score": 0.91,
                 "metadata": {"chunk_id": "c-17"}},
                {"id": "refund-2", "content": "Refund to card.", "score": 0.55},
                {"id": "shipping-4", "content": "Shipping is free.", "score": 0.12},
            ),
        ),
        phoenix_span(
            "t1", "s3", "LLM", parent="s1", start="2026-11-20T10:00:02+00:00",
            **{"output.value": "Refunds take five days."},
        ),
        "{this line is not JSON",
        # Nested attributes, as a Phoenix export of unflattened attributes has them.
        {
            **phoenix_span("t2", "s4", "RETRIEVER", start="2026-11-20T11:00:00+00:00"),
            "attributes": {
                "openinference": {"span": {"kind": "RETRIEVER"}},
                "input": {"value": "warranty on refurbished phones"},
                "session": {"id": "sess-2"},
                "retrieval": {"documents": [
                    {"document": {"content": "Refurbished phones carry a one-year warranty."}},
                    {"document": {"content": "Warranty claims need a receipt.", "score": 0.4}},
                ]},
            },
        },
        phoenix_span(
            "t2", "s5", "RETRIEVER", parent="s4", start="2026-11-20T11:00:00+00:00",
            **{"input.value": "warranty on refurbished phones"},
            **oi_docs({"id": "inner-1"}),
        ),
        phoenix_span(
            "t2", "s6", "LLM", start="2026-11-20T11:00:01+00:00",
            **{"output.value": "I'm not sure, I could not find that in the documents."},
        ),
        phoenix_span(
            "t3", "s7", "RETRIEVER", start="2026-11-20T12:00:00+00:00",
            **{"input.value": "opening hours on bank holidays", "session.id": "sess-3"},
        ),
        phoenix_span(
            "t4", "s8", "RETRIEVER", start="2026-11-20T13:00:00+00:00",
            status_code="ERROR", status_message="vector store timed out",
            **{"input.value": "cancel my order"},
        ),
        phoenix_span(
            "t4", "s9", "RETRIEVER", start="2026-11-20T13:00:02+00:00",
            **{"input.value": "cancel my order"}, **oi_docs({"id": "orders-2", "score": 0.8}),
        ),
        phoenix_span("t5", "s10", "RETRIEVER", start="2026-11-20T14:00:00+00:00"),
        # A span annotation (Phoenix >= 9): end-user feedback on the retriever span of t1.
        {
            "span_id": "s2", "name": "user_feedback", "annotator_kind": "HUMAN",
            "result": {"label": "thumbs_down", "score": 0, "explanation": "wrong policy"},
            "metadata": {}, "identifier": "",
        },
    ]  # fmt: skip


def test_openinference_spans_become_search_events(tmp_path, db_path, cli):
    path = write_jsonl(tmp_path / "phoenix_spans.jsonl", openinference_rows())
    out = traces_json(cli, str(path), "--db", str(db_path), "--no-redact")
    # rows: retrievers s2, s4, s7, s9 stored; s8 (failed) and s10 (no query) rejected; line 4
    # malformed. s5 is nested under s4 and not a row; chain and LLM spans are not retrievals.
    assert counts(out["total"]) == (7, 4, 3, 0)
    file = out["files"][0]
    assert file["format"] == "openinference"
    assert file["nested_retrievals"] == 1
    assert file["documents_without_id"] == 2
    assert rejects(cli, db_path) == [
        (4, "malformed JSON"),
        (9, "retrieval failed: vector store timed out"),
        (11, "missing query (span s10)"),
    ]
    rows = query(
        db_path,
        "SELECT event_id, source, ts::VARCHAR, session_id, user_id, query, result_ids, "
        "num_results, feedback FROM search_events ORDER BY ts",
    )
    content = "sha256:"
    assert rows[0] == (
        "openinference:t1:s2", "traces", "2026-11-20 10:00:01", "sess-1", "u-1",
        "how long do refunds take", ["refund-1", "refund-2", "shipping-4"], 3, "down",
    )  # fmt: skip
    assert rows[1][0] == "openinference:t2:s4" and rows[1][3] == "sess-2"
    assert [r.startswith(content) for r in rows[1][6]] == [True, True]
    assert rows[2][5:8] == ("opening hours on bank holidays", [], 0)
    assert rows[3][0] == "openinference:t4:s9" and rows[3][6] == ["orders-2"]
    side = query(
        db_path,
        "SELECT event_id, answer, dont_know, scores, ids_from_content FROM trace_retrievals "
        "ORDER BY event_id",
    )
    assert side[0] == (
        "openinference:t1:s2",
        "Refunds take five days.",
        False,
        [0.91, 0.55, 0.12],
        0,
    )
    assert side[1][0] == "openinference:t2:s4" and side[1][2] is True and side[1][4] == 2
    # The content hash of a document without id is the corpus' text_hash of the same text.
    hashes = query(db_path, "SELECT content_hashes FROM trace_retrievals WHERE span_id = 's4'")
    import hashlib

    text = "Refurbished phones carry a one-year warranty."
    assert hashes[0][0][0] == hashlib.sha256(text.encode()).hexdigest()
    assert rows[1][6][0] == content + hashlib.sha256(text.encode()).hexdigest()[:16]


def test_doc_id_option_picks_the_id_from_metadata(tmp_path, db_path, cli):
    path = write_jsonl(tmp_path / "phoenix_spans.jsonl", openinference_rows()[:3])
    traces_json(cli, str(path), "--db", str(db_path), "--doc-id", "metadata.chunk_id")
    # Only the first document has a chunk_id; the others fall back to their content hash.
    ids = query(db_path, "SELECT result_ids FROM search_events")[0][0]
    assert ids[0] == "c-17" and all(i.startswith("sha256:") for i in ids[1:])


# ---------------------------------------------------------------- OTLP/JSON


def kv(key: str, value) -> dict:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}  # int64 as a string in OTLP/JSON
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": value}}


def otlp_span(trace, span, parent, start_ns, attrs, status=None, name="span"):
    out = {
        "traceId": trace,
        "spanId": span,
        "parentSpanId": parent or "",
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(start_ns),
        "endTimeUnixNano": str(start_ns + 1_000_000),
        "attributes": attrs,
        "status": status or {},
    }
    return out


def otlp_request(*spans) -> dict:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [kv("service.name", "rag-app")]},
                "scopeSpans": [
                    {"scope": {"name": "openinference.instrumentation.llama_index"},
                     "spans": list(spans)}
                ],
            }
        ]
    }  # fmt: skip


T0 = 1_795_000_000_000_000_000  # 2026-11-18 11:06:40 UTC, in nanoseconds


def otlp_rows() -> list[dict | str]:
    """Line 1: OpenInference over OTLP (chain, retriever, LLM). Line 2: GenAI conventions,
    documents as a JSON string, the answer in gen_ai.output.messages. Line 3: GenAI, documents
    as an arrayValue of kvlistValues. Line 4: valid JSON, not an object."""
    ids = "5b8efff798038103d269b633813fc60c"
    oi = otlp_request(
        otlp_span(
            ids,
            "eee19b7ec3c1b174",
            None,
            T0,
            [
                kv("openinference.span.kind", "CHAIN"),
                kv("session.id", "conv-9"),
                kv("user.id", "alice"),
            ],
        ),
        otlp_span(
            ids,
            "eee19b7ec3c1b175",
            "eee19b7ec3c1b174",
            T0 + 10**9,
            [
                kv("openinference.span.kind", "RETRIEVER"),
                kv("input.value", "api rate limits"),
                kv("retrieval.documents.0.document.id", "limits-1"),
                kv("retrieval.documents.0.document.score", 0.83),
                kv("retrieval.documents.0.document.content", "The API allows 100 requests."),
                kv("retrieval.documents.1.document.id", "limits-2"),
                kv("retrieval.documents.1.document.score", 0.41),
            ],
        ),
        otlp_span(
            ids,
            "eee19b7ec3c1b176",
            "eee19b7ec3c1b174",
            T0 + 2 * 10**9,
            [
                kv("openinference.span.kind", "LLM"),
                kv("llm.output_messages.0.message.role", "assistant"),
                kv("llm.output_messages.0.message.content", "100 requests a minute."),
            ],
        ),
    )
    genai_docs = json.dumps([{"id": "doc_123", "score": 0.95}, {"id": "doc_456", "score": 0.87}])
    output = json.dumps(
        [
            {
                "role": "assistant",
                "parts": [{"type": "text", "content": "Use SSO."}],
                "finish_reason": "stop",
            }
        ]
    )
    genai = otlp_request(
        otlp_span(
            "aa" * 16,
            "bb" * 8,
            None,
            T0 + 60 * 10**9,
            [
                kv("gen_ai.operation.name", "retrieval"),
                kv("gen_ai.data_source.id", "kb"),
                kv("gen_ai.retrieval.query.text", "login with sso"),
                kv("gen_ai.retrieval.documents", genai_docs),
                kv("gen_ai.conversation.id", "conv-10"),
            ],
            name="retrieval kb",
        ),
        otlp_span(
            "aa" * 16,
            "cc" * 8,
            None,
            T0 + 61 * 10**9,
            [kv("gen_ai.operation.name", "chat"), kv("gen_ai.output.messages", output)],
            name="chat gpt-4o",
        ),
    )
    structured = {
        "key": "gen_ai.retrieval.documents",
        "value": {
            "arrayValue": {
                "values": [
                    {"kvlistValue": {"values": [kv("id", "doc_9"), kv("score", 0.7)]}},
                    {"kvlistValue": {"values": [kv("id", "doc_3"), kv("score", 0.2)]}},
                ]
            }
        },
    }
    genai2 = otlp_request(
        otlp_span(
            "dd" * 16,
            "ee" * 8,
            None,
            T0 + 120 * 10**9,
            [
                kv("gen_ai.operation.name", "retrieval"),
                kv("gen_ai.retrieval.query.text", "export my data"),
                structured,
                kv("gen_ai.conversation.id", "conv-10"),
            ],
            name="retrieval kb",
        ),
    )
    return [oi, genai, genai2, "[1, 2]"]  # fmt: skip


def test_otlp_json_with_openinference_and_genai_attributes(tmp_path, db_path, cli):
    path = write_jsonl(tmp_path / "export.jsonl", otlp_rows())
    out = traces_json(cli, str(path), "--db", str(db_path))
    assert counts(out["total"]) == (4, 3, 1, 0)
    assert out["files"][0]["format"] == "otel"
    assert rejects(cli, db_path) == [(4, "not a JSON object")]
    rows = query(
        db_path,
        "SELECT ts::VARCHAR, session_id, user_id, query, result_ids FROM search_events ORDER BY ts",
    )
    assert rows == [
        ("2026-11-18 11:06:41", "conv-9", "alice", "api rate limits", ["limits-1", "limits-2"]),
        ("2026-11-18 11:07:40", "conv-10", None, "login with sso", ["doc_123", "doc_456"]),
        ("2026-11-18 11:08:40", "conv-10", None, "export my data", ["doc_9", "doc_3"]),
    ]
    answers = query(db_path, "SELECT answer, scores FROM trace_retrievals ORDER BY event_id")
    assert sorted(answers, key=str) == sorted(
        [("100 requests a minute.", [0.83, 0.41]), ("Use SSO.", [0.95, 0.87]),
         (None, [0.7, 0.2])], key=str)  # fmt: skip


def test_an_otlp_json_document_is_read_whole(tmp_path, db_path, cli):
    path = tmp_path / "export.json"
    path.write_text(json.dumps(otlp_rows()[1], indent=2))
    out = traces_json(cli, str(path), "--db", str(db_path))
    assert counts(out["total"]) == (1, 1, 0, 0)


# ---------------------------------------------------------------- Langfuse


def langfuse_trace(tid, session, user, observations, scores, ts="2026-11-21T09:00:00.000Z"):
    return {
        "id": tid, "timestamp": ts, "name": "rag-query", "input": None, "output": None,
        "sessionId": session, "userId": user, "release": None, "version": None,
        "metadata": {}, "tags": [], "public": False, "environment": "default",
        "htmlPath": f"/project/p1/traces/{tid}", "latency": 1.2, "totalCost": 0.0,
        "observations": observations, "scores": scores,
    }  # fmt: skip


def langfuse_obs(
    oid, tid, otype, name, start, inp=None, out=None, parent=None, level="DEFAULT", status=None
):
    return {
        "id": oid, "traceId": tid, "type": otype, "name": name, "startTime": start,
        "endTime": start, "parentObservationId": parent, "input": inp, "output": out,
        "level": level, "statusMessage": status, "metadata": {}, "model": None,
    }  # fmt: skip


def langfuse_score(sid, tid, value, data_type="NUMERIC", obs=None, string_value=None):
    return {
        "id": sid, "traceId": tid, "observationId": obs, "name": "user-feedback",
        "value": value, "stringValue": string_value, "dataType": data_type, "source": "API",
        "comment": None, "timestamp": "2026-11-21T09:05:00.000Z",
    }  # fmt: skip


def langfuse_rows() -> list[dict | str]:
    docs = [
        {
            "page_content": "Invoices are sent monthly.",
            "metadata": {"chunk_id": "inv-1", "source_id": "S1"},
        },
        {
            "page_content": "Change the billing email.",
            "metadata": {"chunk_id": "inv-8", "source_id": "S2"},
        },
    ]
    a = langfuse_trace(
        "lf-a",
        "chat-1",
        "user-7",
        [
            langfuse_obs(
                "o1",
                "lf-a",
                "RETRIEVER",
                "retrieve",
                "2026-11-21T09:00:01.000Z",
                inp={"query": "when are invoices sent"},
                out=docs,
            ),
            langfuse_obs(
                "o2",
                "lf-a",
                "GENERATION",
                "answer",
                "2026-11-21T09:00:02.000Z",
                out={"role": "assistant", "content": "Monthly."},
            ),
        ],
        [langfuse_score("sc1", "lf-a", 0, "NUMERIC")],
    )
    b = langfuse_trace(
        "lf-b",
        "chat-1",
        "user-7",
        [
            langfuse_obs(
                "o3",
                "lf-b",
                "SPAN",
                "vector-retriever",
                "2026-11-21T09:01:00.000Z",
                inp="and the billing email?",
                out={"documents": [{"id": "inv-8", "score": 0.9}]},
            ),
            langfuse_obs(
                "o4",
                "lf-b",
                "GENERATION",
                "answer",
                "2026-11-21T09:01:02.000Z",
                out="Change it under Settings.",
            ),
        ],
        [langfuse_score("sc2", "lf-b", 1, "BOOLEAN", string_value="True")],
    )
    c = langfuse_trace(
        "lf-c",
        "chat-2",
        None,
        [
            langfuse_obs(
                "o5",
                "lf-c",
                "RETRIEVER",
                "retrieve",
                "2026-11-21T10:00:00.000Z",
                inp={"query": "reset my 2fa"},
                level="ERROR",
                status="index unavailable",
            ),
        ],
        [],
    )
    return [a, b, c]  # fmt: skip


def test_langfuse_traces_with_observations_and_scores(tmp_path, db_path, cli):
    path = write_jsonl(tmp_path / "langfuse.jsonl", langfuse_rows())
    out = traces_json(cli, str(path), "--db", str(db_path))
    assert counts(out["total"]) == (3, 2, 1, 0)
    assert out["files"][0]["format"] == "langfuse"
    assert rejects(cli, db_path) == [(3, "retrieval failed: index unavailable")]
    rows = query(
        db_path,
        "SELECT event_id, session_id, user_id, query, result_ids, feedback FROM search_events "
        "ORDER BY ts",
    )
    assert rows == [
        ("langfuse:lf-a:o1", "chat-1", "user-7", "when are invoices sent", ["inv-1", "inv-8"],
         "down"),
        ("langfuse:lf-b:o3", "chat-1", "user-7", "and the billing email?", ["inv-8"], "up"),
    ]  # fmt: skip
    answers = query(db_path, "SELECT answer FROM trace_retrievals ORDER BY event_id")
    assert answers == [("Monthly.",), ("Change it under Settings.",)]


def test_langfuse_doc_id_from_another_metadata_field(tmp_path, db_path, cli):
    path = write_jsonl(tmp_path / "langfuse.jsonl", langfuse_rows()[:1])
    traces_json(cli, str(path), "--db", str(db_path), "--doc-id", "metadata.source_id")
    assert query(db_path, "SELECT result_ids FROM search_events") == [(["S1", "S2"],)]


# ---------------------------------------------------------------- LangSmith


def langsmith_run(
    rid,
    trace,
    run_type,
    name,
    start,
    parent=None,
    inputs=None,
    outputs=None,
    error=None,
    metadata=None,
    feedback_stats=None,
):
    return {
        "id": rid, "name": name, "run_type": run_type, "start_time": start, "end_time": start,
        "inputs": inputs or {}, "outputs": outputs, "error": error,
        "extra": {"metadata": metadata or {}, "runtime": {"sdk": "langsmith-py"}},
        "trace_id": trace, "parent_run_id": parent, "dotted_order": f"{start}{rid}",
        "session_id": "project-uuid", "tags": [], "feedback_stats": feedback_stats,
        "status": "error" if error else "success",
    }  # fmt: skip


def langsmith_rows() -> list[dict | str]:
    docs = {
        "documents": [
            {
                "page_content": "Plans renew yearly.",
                "metadata": {"id": "plan-1"},
                "type": "Document",
            },
            {"page_content": "Cancel any time.", "metadata": {"id": "plan-4"}, "type": "Document"},
        ]
    }
    return [
        langsmith_run("r1", "r1", "chain", "RetrievalQA", "2026-11-22T08:00:00.000000",
                      inputs={"question": "do plans renew"}, outputs={"output": "Yearly."},
                      metadata={"thread_id": "th-1", "user_id": "bob"},
                      feedback_stats={"user_score": {"n": 1, "avg": 0.0, "values": {}}}),
        langsmith_run("r2", "r1", "retriever", "VectorStoreRetriever",
                      "2026-11-22T08:00:00.100000", parent="r1",
                      inputs={"query": "do plans renew"}, outputs=docs,
                      metadata={"thread_id": "th-1"}),
        langsmith_run("r3", "r1", "llm", "ChatOpenAI", "2026-11-22T08:00:00.500000", parent="r1",
                      outputs={"generations": [[{"text": "Yearly.", "type": "ChatGeneration"}]]}),
        langsmith_run("r4", "r4", "chain", "RetrievalQA", "2026-11-22T09:00:00.000000",
                      metadata={"thread_id": "th-1"}),
        langsmith_run("r5", "r4", "retriever", "VectorStoreRetriever",
                      "2026-11-22T09:00:01.000000", parent="r4",
                      inputs={"query": "refund for annual plan"},
                      outputs={"documents": []}),
        langsmith_run("r6", "r6", "retriever", "VectorStoreRetriever",
                      "2026-11-22T10:00:00.000000", inputs={"query": "pricing"},
                      error="ConnectionError('qdrant')"),
        # A feedback record, as client.list_feedback() gives it, on r4's root run.
        {"id": "fb-1", "run_id": "r4", "trace_id": "r4", "key": "thumbs", "score": 1,
         "value": None, "comment": None, "created_at": "2026-11-22T09:01:00.000000"},
    ]  # fmt: skip


def test_langsmith_runs_and_feedback(tmp_path, db_path, cli):
    path = write_jsonl(tmp_path / "runs.jsonl", langsmith_rows())
    out = traces_json(cli, str(path), "--db", str(db_path))
    assert counts(out["total"]) == (3, 2, 1, 0)
    assert out["files"][0]["format"] == "langsmith"
    assert rejects(cli, db_path) == [(6, "retrieval failed: ConnectionError('qdrant')")]
    rows = query(
        db_path,
        "SELECT event_id, session_id, user_id, query, result_ids, num_results, feedback "
        "FROM search_events ORDER BY ts",
    )
    assert rows == [
        ("langsmith:r1:r2", "th-1", "bob", "do plans renew", ["plan-1", "plan-4"], 2, "down"),
        ("langsmith:r4:r5", "th-1", None, "refund for annual plan", [], 0, "up"),
    ]
    assert query(db_path, "SELECT answer FROM trace_retrievals ORDER BY event_id") == [
        ("Yearly.",),
        (None,),
    ]


# ---------------------------------------------------------------- OpenAI chat logs


def openai_rows() -> list[dict | str]:
    def call(cid, name, args):
        return {"id": cid, "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)}}  # fmt: skip

    conv1 = {
        "id": "conv-1",
        "user": "carol",
        "created_at": "2026-11-23T15:00:00Z",
        "messages": [
            {"role": "system", "content": "Answer from the knowledge base."},
            {"role": "user", "content": "how do I reset my password"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call("call_a", "search_docs", {"query": "reset password"})],
            },
            {
                "role": "tool",
                "tool_call_id": "call_a",
                "content": json.dumps([{"id": "kb-1", "score": 0.9}, {"id": "kb-7"}]),
            },
            {"role": "assistant", "content": "Open Settings, then Security."},
            {"role": "user", "content": "and on mobile?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call("call_b", "search_docs", {"query": "reset password mobile"})],
            },
            {
                "role": "tool",
                "tool_call_id": "call_b",
                "content": json.dumps({"results": [{"id": "kb-3"}]}),
            },
            {"role": "assistant", "content": [{"type": "text", "text": "I don't know."}]},
        ],
    }
    conv2 = {
        "id": "conv-2",
        "created_at": "2026-11-23T16:00:00Z",
        "messages": [
            {"role": "user", "content": "weather in Oslo and the travel policy"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    call("call_w", "get_weather", {"city": "Oslo"}),
                    call("call_p", "search_docs", {"q": "travel policy"}),
                ],
            },
            {"role": "tool", "tool_call_id": "call_w", "content": '{"temp_c": 4}'},
            {"role": "tool", "tool_call_id": "call_p", "content": '["kb-9", "kb-2"]'},
            {"role": "assistant", "content": "4 degrees; the policy is in kb-9."},
        ],
    }
    return [conv1, "{\"id\": \"conv-3\", \"messages\": [", conv2]  # fmt: skip


def test_openai_chat_logs_tool_calls_that_retrieve(tmp_path, db_path, cli):
    path = write_jsonl(tmp_path / "chats.jsonl", openai_rows())
    out = traces_json(cli, str(path), "--db", str(db_path))
    # three retrieving tool calls (get_weather's result lists no ids) + one malformed line
    assert counts(out["total"]) == (4, 3, 1, 0)
    assert out["files"][0]["format"] == "openai"
    assert rejects(cli, db_path) == [(2, "malformed JSON")]
    rows = query(
        db_path,
        "SELECT event_id, session_id, user_id, query, result_ids FROM search_events "
        "ORDER BY ts, event_id",
    )
    assert rows == [
        ("openai:conv-1:0002:call_a", "conv-1", "carol", "reset password", ["kb-1", "kb-7"]),
        ("openai:conv-1:0006:call_b", "conv-1", "carol", "reset password mobile", ["kb-3"]),
        ("openai:conv-2:0001:call_p", "conv-2", None, "travel policy", ["kb-9", "kb-2"]),
    ]
    side = query(db_path, "SELECT answer, dont_know FROM trace_retrievals ORDER BY event_id")
    assert side == [
        ("Open Settings, then Security.", False),
        ("I don't know.", True),
        ("4 degrees; the policy is in kb-9.", False),
    ]


# ---------------------------------------------------------------- the guarantees


def test_reimport_adds_nothing_and_an_overlap_only_its_new_rows(tmp_path, db_path, cli):
    path = write_jsonl(tmp_path / "phoenix_spans.jsonl", openinference_rows())
    traces_json(cli, str(path), "--db", str(db_path))
    again = traces_json(cli, str(path), "--db", str(db_path))
    assert again["files"][0]["skipped"] and counts(again["total"]) == (7, 0, 3, 4)
    # The same spans in another file, with one trace more: only its retrieval is new.
    more = openinference_rows() + [
        phoenix_span("t6", "s11", "RETRIEVER", **{"input.value": "gift cards"},
                     **oi_docs({"id": "gift-1"}))
    ]  # fmt: skip
    bigger = write_jsonl(tmp_path / "phoenix_spans_2.jsonl", more)
    out = traces_json(cli, str(bigger), "--db", str(db_path))
    assert counts(out["total"]) == (8, 1, 3, 4)
    assert query(db_path, "SELECT count(*) FROM search_events") == [(5,)]
    assert query(db_path, "SELECT count(*) FROM trace_retrievals") == [(5,)]
    batches = query(db_path, "SELECT source, rows_in, stored FROM import_batches ORDER BY 1, 2")
    assert batches == [("traces", 7, 4), ("traces", 8, 1)]


def test_pii_is_redacted_by_default_and_kept_with_no_redact(tmp_path, db_path, cli):
    rows = [
        phoenix_span("t1", "s1", "RETRIEVER",
                     **{"input.value": "order for jane.doe@example.com", "user.id": "u1"},
                     **oi_docs({"id": "d1"})),
        phoenix_span("t1", "s2", "LLM", **{"output.value": "Call us at +44 20 7946 0958."}),
    ]  # fmt: skip
    path = write_jsonl(tmp_path / "spans.jsonl", rows)
    traces_json(cli, str(path), "--db", str(db_path))
    assert query(db_path, "SELECT query FROM search_events") == [("order for <EMAIL>",)]
    assert query(db_path, "SELECT answer FROM trace_retrievals") == [("Call us at <PHONE>.",)]
    other = db_path.with_name("plain.duckdb")
    traces_json(cli, str(path), "--db", str(other), "--no-redact")
    assert query(other, "SELECT query FROM search_events") == [("order for jane.doe@example.com",)]


def test_formats_are_detected_per_file_in_a_mixed_folder(tmp_path, db_path, cli):
    folder = tmp_path / "exports"
    folder.mkdir()
    write_jsonl(folder / "a_phoenix.jsonl", openinference_rows())
    write_jsonl(folder / "b_otlp.jsonl", otlp_rows())
    write_jsonl(folder / "c_langfuse.jsonl", langfuse_rows())
    write_jsonl(folder / "d_runs.jsonl", langsmith_rows())
    write_jsonl(folder / "e_chats.jsonl", openai_rows())
    out = traces_json(cli, str(folder), "--db", str(db_path))
    formats = [f["format"] for f in out["files"]]
    assert formats == ["openinference", "otel", "langfuse", "langsmith", "openai"]
    assert counts(out["total"]) == (7 + 4 + 3 + 3 + 4, 4 + 3 + 2 + 2 + 3, 3 + 1 + 1 + 1 + 1, 0)


def test_a_file_mixing_formats_is_ambiguous_unless_format_is_given(tmp_path, db_path, cli):
    path = write_jsonl(tmp_path / "mixed.jsonl", langsmith_rows() + openai_rows()[:1])
    result = cli("ingest", "traces", str(path), "--db", str(db_path))
    assert result.returncode == 2
    assert "cannot tell the trace format" in result.stderr and "--format" in result.stderr
    out = traces_json(cli, str(path), "--db", str(db_path), "--format", "langsmith")
    assert counts(out["total"]) == (3, 2, 1, 0)


def test_unknown_format_name_is_refused(tmp_path, db_path):
    path = write_jsonl(tmp_path / "spans.jsonl", openinference_rows())
    with open_store(db_path) as con, pytest.raises(InputError, match="openinference"):
        api.traces(con, [path], trace_format="jaeger")


def test_every_row_rejected_exits_4_unless_allow_empty(tmp_path, db_path, cli):
    rows = [phoenix_span("t5", "s10", "RETRIEVER"), "{broken"]
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    result = cli("ingest", "traces", str(path), "--db", str(db_path), "--format", "openinference")
    assert result.returncode == EXIT_EMPTY
    assert "nothing stored: all 2 rows were rejected" in result.stderr
    other = db_path.with_name("other.duckdb")
    out = traces_json(cli, str(path), "--db", str(other), "--format", "openinference",
                      "--allow-empty")  # fmt: skip
    assert counts(out["total"]) == (2, 0, 2, 0)


def test_a_gzipped_export_reads_like_the_plain_one(tmp_path, db_path, cli):
    import gzip

    plain = write_jsonl(tmp_path / "export.jsonl", otlp_rows())
    packed = tmp_path / "export.jsonl.gz"
    with plain.open("rb") as src, gzip.open(packed, "wb") as dst:
        shutil.copyfileobj(src, dst)
    out = traces_json(cli, str(packed), "--db", str(db_path))
    assert counts(out["total"]) == (4, 3, 1, 0)


def test_triage_reads_trace_events_like_search_events(tmp_path, db_path):
    """What triage's normalize step reads from search_events: the thumbs-down and the zero
    results of traces arrive as its failure signals (feedback 'down', num_results 0)."""
    from goldmine.triage.events import NEGATIVE_FEEDBACK

    path = write_jsonl(tmp_path / "phoenix_spans.jsonl", openinference_rows())
    with open_store(db_path) as con:
        api.traces(con, [path])
        rows = con.execute(
            "SELECT query, feedback, num_results FROM search_events "
            "WHERE feedback IS NOT NULL OR num_results = 0 ORDER BY query"
        ).fetchall()
    assert rows == [
        ("how long do refunds take", "down", 3),
        ("opening hours on bank holidays", None, 0),
    ]
    assert "down" in NEGATIVE_FEEDBACK
