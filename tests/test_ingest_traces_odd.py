"""The odd cases of a trace, in the formats whose fixtures in test_ingest_traces.py do not have
them: a retrieval without documents, a retriever nested in another, a retry after a failure,
documents and spans without ids. Real DuckDB files, the CLI in a subprocess; every expected
number is counted by hand."""

from __future__ import annotations

from test_ingest_traces import (
    counts,
    langfuse_obs,
    langfuse_trace,
    langsmith_run,
    phoenix_span,
    query,
    rejects,
    traces_json,
    write_jsonl,
)


def test_langfuse_odd_cases(tmp_path, db_path, cli):
    t = "lf-odd"
    obs = [
        # failed, then its retry, whose second document has content and no id
        langfuse_obs("o1", t, "RETRIEVER", "retrieve", "2026-11-21T09:00:00.000Z",
                     inp={"query": "lost parcel"}, level="ERROR", status="timeout"),
        langfuse_obs("o2", t, "RETRIEVER", "retrieve", "2026-11-21T09:00:01.000Z",
                     inp={"query": "lost parcel"},
                     out=[{"metadata": {"chunk_id": "parcel-3"}, "page_content": "Claims."},
                          {"page_content": "Parcels lost in transit are refunded."}]),
        # a leg of the retry's retrieval: nested, not a row
        langfuse_obs("o3", t, "RETRIEVER", "bm25-leg", "2026-11-21T09:00:01.000Z",
                     inp={"query": "lost parcel"}, out=[{"id": "leg-1"}], parent="o2"),
        # a retrieval that found nothing: no output at all
        langfuse_obs("o4", t, "RETRIEVER", "retrieve", "2026-11-21T09:05:00.000Z",
                     inp={"query": "pet insurance"}),
    ]  # fmt: skip
    path = write_jsonl(tmp_path / "langfuse.jsonl", [langfuse_trace(t, "s-9", "u-9", obs, [])])
    out = traces_json(cli, str(path), "--db", str(db_path), "--no-redact")
    assert counts(out["total"]) == (3, 2, 1, 0)
    f = out["files"][0]
    assert (f["retrievals"], f["nested_retrievals"], f["documents_without_id"]) == (4, 1, 1)
    assert rejects(cli, db_path) == [(1, "retrieval failed: timeout")]
    rows = query(db_path, "SELECT event_id, query, result_ids, num_results, session_id "
                          "FROM search_events ORDER BY ts")  # fmt: skip
    assert [r[0] for r in rows] == ["langfuse:lf-odd:o2", "langfuse:lf-odd:o4"]
    assert rows[0][2][0] == "parcel-3" and rows[0][2][1].startswith("sha256:")
    assert rows[1][1:] == ("pet insurance", [], 0, "s-9")


def test_langsmith_nested_retriever_and_a_run_without_id(tmp_path, db_path, cli):
    docs = {"documents": [{"page_content": "x", "metadata": {"id": "kb-2"}}]}
    rows = [
        langsmith_run("r1", "r1", "retriever", "EnsembleRetriever", "2026-11-22T08:00:00.000000",
                      inputs={"query": "vpn setup"}, outputs=docs),
        langsmith_run("r2", "r1", "retriever", "BM25Retriever", "2026-11-22T08:00:00.100000",
                      parent="r1", inputs={"query": "vpn setup"}, outputs=docs),
        {**langsmith_run(None, "r9", "retriever", "VectorStoreRetriever",
                         "2026-11-22T09:00:00.000000", inputs={"query": "sso"}, outputs=docs)},
    ]  # fmt: skip
    path = write_jsonl(tmp_path / "runs.jsonl", rows)
    out = traces_json(cli, str(path), "--db", str(db_path))
    assert counts(out["total"]) == (2, 1, 1, 0)
    assert out["files"][0]["nested_retrievals"] == 1
    assert rejects(cli, db_path) == [(3, "missing span id")]
    assert query(db_path, "SELECT event_id, result_ids FROM search_events") == [
        ("langsmith:r1:r1", ["kb-2"])
    ]


def test_openinference_span_without_span_id_is_rejected(tmp_path, db_path, cli):
    span = phoenix_span("t1", "s1", "RETRIEVER", **{"input.value": "reset 2fa"})
    span["context"] = {"trace_id": "t1"}
    path = write_jsonl(tmp_path / "spans.jsonl", [span])
    out = traces_json(cli, str(path), "--db", str(db_path), "--allow-empty")
    assert counts(out["total"]) == (1, 0, 1, 0)
    assert rejects(cli, db_path) == [(1, "missing span id")]


def test_a_langfuse_trace_with_its_fields_under_trace(tmp_path, db_path, cli):
    """The shape Langfuse's repository keeps exported traces in (its seeder's framework traces):
    the trace's fields under ``trace``, its observations beside them."""
    t = "12ea412956f99347b0503c1144acd0ec"
    record = langfuse_trace(t, "session_abc", "user_123", [], [])
    scores = [{"id": "sc-1", "traceId": t, "observationId": None, "name": "user-feedback",
               "value": 0, "stringValue": None, "dataType": "NUMERIC"}]  # fmt: skip
    obs = [
        langfuse_obs("3344aabdd4e66110", t, "SPAN", "llama-index-trace",
                     "2025-06-05T15:45:52.971Z"),
        langfuse_obs("5a1f00aa00000001", t, "RETRIEVER", "BaseRetriever.retrieve",
                     "2025-06-05T15:45:53.100Z", inp={"query_str": "What is Langfuse?"},
                     out={"nodes": [{"id": "node-7", "score": 0.81}, {"id": "node-2"}]},
                     parent="3344aabdd4e66110"),
        langfuse_obs("7ca8b22f6628d0c7", t, "GENERATION", "OpenAI.complete",
                     "2025-06-05T15:45:53.500Z", out="Langfuse is a tool for LLM observability.",
                     parent="3344aabdd4e66110"),
    ]  # fmt: skip
    del record["observations"]
    wrapped = {"trace": {**record, "scores": scores}, "observations": obs}
    path = write_jsonl(tmp_path / "langfuse.jsonl", [wrapped])
    out = traces_json(cli, str(path), "--db", str(db_path), "--no-redact")
    assert out["files"][0]["format"] == "langfuse"
    assert counts(out["total"]) == (1, 1, 0, 0)
    rows = query(db_path, "SELECT e.event_id, e.session_id, e.user_id, e.query, e.result_ids, "
                          "e.feedback, t.answer FROM search_events e "
                          "JOIN trace_retrievals t USING (event_id)")  # fmt: skip
    assert rows == [(f"langfuse:{t}:5a1f00aa00000001", "session_abc", "user_123",
                     "What is Langfuse?", ["node-7", "node-2"], "down",
                     "Langfuse is a tool for LLM observability.")]  # fmt: skip
