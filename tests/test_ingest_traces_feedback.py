"""Feedback as the observability tools write it: a thumbs label in its many spellings, and
feedback exported apart from the spans it is about (Phoenix's span annotations, LangSmith's
feedback records), which comes to the retrievals already stored. Real DuckDB files, the CLI in
a subprocess."""

from __future__ import annotations

from test_ingest_traces import counts, phoenix_span, query, traces_json, write_jsonl


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
