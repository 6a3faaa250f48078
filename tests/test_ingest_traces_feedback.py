"""Feedback as the observability tools write it: a thumbs label in its many spellings, and
feedback exported apart from the spans it is about (Phoenix's span annotations, LangSmith's
feedback records), which comes to the retrievals already stored. Real DuckDB files, the CLI in
a subprocess."""

from __future__ import annotations

from test_ingest_traces import (
    counts,
    langsmith_run,
    phoenix_span,
    query,
    traces_json,
    write_jsonl,
)


def _retrieval(n: int) -> dict:
    return phoenix_span(f"t{n}", f"s{n}", "RETRIEVER", **{
        "input.value": f"question {n}", "retrieval.documents.0.document.id": "kb-1"})  # fmt: skip


def _annotation(n: int, label: str) -> dict:
    """A Phoenix span annotation with a label and no score, as a thumbs widget records it."""
    return {"span_id": f"s{n}", "name": "user_feedback", "annotator_kind": "HUMAN",
            "result": {"label": label, "score": None}}  # fmt: skip


def test_thumbs_labels_in_every_spelling_are_feedback(tmp_path, db_path, cli):
    labels = ["0", "1", "thumbs-down", "Thumbs Up", "👍🏼", "👎️", "False", "true"]
    want = ["down", "up", "down", "up", "up", "down", "down", "up"]
    rows = [r for n, label in enumerate(labels) for r in (_retrieval(n), _annotation(n, label))]
    path = write_jsonl(tmp_path / "spans.jsonl", rows)
    out = traces_json(cli, str(path), "--db", str(db_path))
    assert counts(out["total"]) == (8, 8, 0, 0)
    got = query(db_path, "SELECT query, feedback FROM search_events ORDER BY query")
    assert got == [(f"question {n}", w) for n, w in enumerate(want)]


def test_phoenix_annotations_exported_apart_come_to_the_stored_retrievals(tmp_path, db_path, cli):
    spans = write_jsonl(tmp_path / "spans.jsonl", [_retrieval(1), _retrieval(2), _retrieval(3)])
    traces_json(cli, str(spans), "--db", str(db_path))
    # Phoenix exports span annotations apart: a thumbs-down on s1, a thumbs-up on s2, one on a
    # span the store does not hold.
    notes = [_annotation(1, "thumbs_down"), _annotation(2, "👍"), _annotation(9, "thumbs_down")]
    out = traces_json(cli, str(write_jsonl(tmp_path / "notes.jsonl", notes)), "--db", str(db_path))
    assert counts(out["total"]) == (0, 0, 0, 0)
    f = out["files"][0]
    assert (f["feedback_records"], f["retrievals_given_feedback"]) == (3, 2)
    got = query(db_path, "SELECT query, feedback FROM search_events ORDER BY query")
    assert got == [("question 1", "down"), ("question 2", "up"), ("question 3", None)]


def test_langsmith_feedback_records_apart_come_to_the_stored_runs(tmp_path, db_path, cli):
    docs = {"documents": [{"page_content": "x", "metadata": {"id": "kb-2"}}]}
    runs = [
        langsmith_run("r1", "r1", "chain", "RAG", "2026-11-22T08:00:00.000000",
                      inputs={"question": "vpn setup"}),
        langsmith_run("r2", "r1", "retriever", "Retriever", "2026-11-22T08:00:00.100000",
                      parent="r1", inputs={"query": "vpn setup"}, outputs=docs),
        langsmith_run("r4", "r3", "chain", "RAG", "2026-11-22T09:00:00.000000",
                      inputs={"question": "sso"}),
        langsmith_run("r5", "r3", "retriever", "Retriever", "2026-11-22T09:00:00.100000",
                      parent="r4", inputs={"query": "sso"}, outputs=docs),
    ]  # fmt: skip
    traces_json(cli, str(write_jsonl(tmp_path / "runs.jsonl", runs)), "--db", str(db_path))
    # Client.list_feedback(): a score of 0 on the root run of trace r1 (the trace), 1 on r5.
    feedback = [
        {"id": "f1", "run_id": "r1", "trace_id": "r1", "key": "user_score", "score": 0,
         "value": None, "comment": "wrong"},
        {"id": "f2", "run_id": "r5", "trace_id": "r3", "key": "user_score", "score": 1,
         "value": None, "comment": None},
    ]  # fmt: skip
    path = write_jsonl(tmp_path / "feedback.jsonl", feedback)
    out = traces_json(cli, str(path), "--db", str(db_path))
    f = out["files"][0]
    assert (f["format"], f["feedback_records"], f["retrievals_given_feedback"]) == (
        "langsmith",
        2,
        2,
    )
    got = query(db_path, "SELECT event_id, feedback FROM search_events ORDER BY event_id")
    assert got == [("langsmith:r1:r2", "down"), ("langsmith:r3:r5", "up")]


def test_spans_with_no_retrieval_among_them_say_so(tmp_path, db_path, cli):
    """A file of spans of kinds goldmine does not read as retrievals (MLflow's span types,
    OpenLLMetry's entities) imported its 2 spans as 0 rows, exit 0, and said nothing: the file's
    note now says that none was a retrieval and how one is told."""
    rows = [phoenix_span("t1", "s1", "CHAIN", **{"input.value": "question"}),
            phoenix_span("t1", "s2", "LLM", **{"output.value": "answer"})]  # fmt: skip
    path = write_jsonl(tmp_path / "spans.jsonl", rows)
    out = traces_json(cli, str(path), "--db", str(db_path), "--allow-empty")
    note = out["files"][0]["note"]
    assert "2 spans, none of them a retrieval" in note and "RETRIEVER" in note, note
