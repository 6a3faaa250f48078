"""A trace export given as one JSON document: an array of records is read element by element
by DuckDB's JSON reader (streamed, never one value), each element numbered by its position;
the rows are those its JSONL twin gives. Every expected number is counted by hand."""

from __future__ import annotations

import json

from test_ingest_traces import (
    counts,
    langfuse_rows,
    langsmith_rows,
    query,
    rejects,
    traces_json,
    write_jsonl,
)


def test_a_json_array_export_reads_like_its_lines(tmp_path, db_path, cli):
    doc = tmp_path / "langfuse.json"
    doc.write_text("\ufeff\n  " + json.dumps(langfuse_rows(), indent=2), encoding="utf-8")
    out = traces_json(cli, str(doc), "--db", str(db_path))
    assert out["files"][0]["format"] == "langfuse"
    # a and b stored; c's retriever failed (the third element)
    assert counts(out["total"]) == (3, 2, 1, 0)
    assert rejects(cli, db_path) == [(3, "retrieval failed: index unavailable")]
    lines = db_path.with_name("lines.duckdb")
    traces_json(cli, str(write_jsonl(tmp_path / "langfuse.jsonl", langfuse_rows())), "--db",
                str(lines))  # fmt: skip
    sql = "SELECT * EXCLUDE (batch_id) FROM search_events ORDER BY event_id"
    assert query(db_path, sql) == query(lines, sql)
    assert query(db_path, sql)[0][0] == "langfuse:lf-a:o1"


def test_elements_that_are_not_objects_are_rejected_by_their_position(tmp_path, db_path, cli):
    doc = tmp_path / "runs.json"
    doc.write_text(json.dumps([*langsmith_rows()[:2], 7, None, ["r9"], langsmith_rows()[6]]))
    out = traces_json(cli, str(doc), "--db", str(db_path), "--format", "langsmith")
    # the retriever run r2 stored; elements 3 (a number), 4 (null) and 5 (a list) rejected
    assert counts(out["total"]) == (4, 1, 3, 0)
    assert rejects(cli, db_path) == [
        (3, "not a JSON object"),
        (4, "not a JSON object"),
        (5, "not a JSON object"),
    ]
    assert query(db_path, "SELECT query, result_ids FROM search_events") == [
        ("do plans renew", ["plan-1", "plan-4"])
    ]
