"""Real sample files (tests/fixtures/traces, sources in its SOURCE.md): the OTLP/JSON example of
the OpenTelemetry specification and the span examples of the OpenInference specification. They
hold no retrieval, so they make no rows: what they show is that goldmine reads the published
shapes as they are (an int64 time given as a JSON number, upper-case hex ids, a time with an
offset, attributes nested as lists) without a reject, and counts their spans."""

from __future__ import annotations

from pathlib import Path

from test_ingest_traces import counts, query, traces_json

SAMPLES = Path(__file__).parent / "fixtures" / "traces"


def test_the_otlp_specification_example_reads_as_one_span(db_path, cli):
    out = traces_json(cli, str(SAMPLES / "otlp_trace_example.json"), "--db", str(db_path))
    f = out["files"][0]
    # one server span, not a retrieval: no row, nothing rejected
    assert (f["format"], f["spans"], f["retrievals"]) == ("otel", 1, 0)
    assert counts(out["total"]) == (0, 0, 0, 0)


def test_the_openinference_specification_spans_read_as_a_trace(db_path, cli):
    path = SAMPLES / "openinference_spec_spans.jsonl"
    out = traces_json(cli, str(path), "--db", str(db_path))
    f = out["files"][0]
    # the query (CHAIN) span and its LLM span: two spans, no retrieval
    assert (f["format"], f["spans"], f["retrievals"]) == ("openinference", 2, 0)
    assert counts(out["total"]) == (0, 0, 0, 0)
    assert query(db_path, "SELECT count(*) FROM rejects") == [(0,)]
