"""RAG traces into ``search_events``: every retrieval is a search as the application showed it.

Five formats, each read from its published shape and told apart by its fields:

- ``openinference``: Phoenix's span JSON (``context.span_id``, ``span_kind``, ``attributes`` nested
  or as dotted keys) and its span annotations (``span_id`` + ``result``);
- ``otel``: OTLP/JSON export requests (``resourceSpans`` → ``scopeSpans`` → ``spans``, attributes
  as key/value lists), with OpenInference attributes or the OpenTelemetry GenAI conventions
  (``gen_ai.operation.name`` = ``retrieval``, ``gen_ai.retrieval.query.text``,
  ``gen_ai.retrieval.documents``, ``gen_ai.conversation.id``);
- ``langfuse``: traces with their observations and scores (observations of type ``RETRIEVER``, or
  spans named so);
- ``langsmith``: runs (``run_type`` = ``retriever``, ``outputs.documents``) and feedback records;
- ``openai``: chat logs (``messages``), each tool call whose result lists chunk ids.

Every format is first brought to one table of spans (``gm_tspan``), one of their documents as
flattened fields (``gm_tdoc``) and one of feedback (``gm_tfb``); one stage then makes the events:
the query, the ranked document ids as shown results (the id taken from ``--doc-id``, else
``id``/``chunk_id``/``metadata.chunk_id``/``metadata.id``, else ``sha256:`` and the first 16 hex
digits of the content's hash), the session and user (from the span, else its trace), the time,
feedback (a thumbs-down label or a score under 0.5 on the retrieval or its trace is ``down``),
and beside it in ``trace_retrievals`` the LLM's answer (the first LLM span of the trace from the
retrieval on, else the trace's output), whether it does not know, the scores and content hashes.

A row is a retrieval (or a record that could not be read): spans of other kinds are not rows. A
retriever nested in another (its parent is a retriever) is not a row either; the outer one is what
the application used. A failed retrieval (an error status) is rejected with its message; a retry
that succeeds is its own row. All of it is DuckDB SQL over the batch.

One module a format (``openinference``, ``otlp``, ``langfuse``, ``langsmith``, ``openai``), each
decoding into the one span table of ``spans``, where the SQL they share is; ``events`` makes the
events from that table. This module tells the formats apart and hands a file to its format.
"""

from __future__ import annotations

import re
from typing import Any

import duckdb

from goldmine.errors import InputError
from goldmine.ingest.files import InputFile, check_json, run_sql
from goldmine.ingest.searchlog import COLUMNS
from goldmine.ingest.target import Target
from goldmine.ingest.traces import langfuse, langsmith, openai, openinference, otlp, spans
from goldmine.ingest.traces.events import (
    SIDE_COLUMNS,
    events_sql,
    number_lines,
    stage_sql,
    store,
    summary,
)
from goldmine.ingest.traces.otlp import OTLP_STRUCTURE
from goldmine.ingest.traces.spans import MACROS

__all__ = [
    "FORMATS",
    "MACROS",
    "OTLP_STRUCTURE",
    "SIDE_COLUMNS",
    "detect",
    "events_sql",
    "number_lines",
    "reshape",
    "stage_sql",
    "store",
    "stream",
    "summary",
    "target",
]

FORMATS = ("openinference", "otel", "langfuse", "langsmith", "openai")

_STREAMED = {
    "openinference": (openinference.LINE, [openinference.STREAM_ANNOTATIONS]),
    "langsmith": (langsmith.LINE, langsmith.STREAM),
    "langfuse": (langfuse.LINE, langfuse.STREAM),
    "openai": (openai.LINE, openai.STREAM),
}

_FORMAT_SQL = {
    "langfuse": langfuse.RECORDS,
    "langsmith": langsmith.RECORDS,
    "openai": openai.RECORDS,
}


def detect(keys: list[str]) -> list[str]:
    """The formats whose fields the records have (more than one: ambiguous)."""
    k = set(keys)
    found = []
    if ("context" in k and ("span_kind" in k or "attributes" in k)) or "context.span_id" in k:
        found.append("openinference")
    if "resourceSpans" in k:
        found.append("otel")
    if "observations" in k or {"traceId", "type", "startTime"} <= k:
        found.append("langfuse")
    if "run_type" in k or ({"run_id", "key"} <= k and not found):
        found.append("langsmith")  # runs, or a file of feedback records (Client.list_feedback)
    if "messages" in k:
        found.append("openai")
    if not found and {"span_id", "result"} <= k:  # a file of Phoenix span annotations only
        found.append("openinference")
    return found


def _refuse_langfuse_tables(k: set[str]) -> None:
    """Name Langfuse's exports that hold no observation as ``langfuse`` reads it: read as
    Langfuse, their records would be no row at all, the import storing nothing without a word."""
    if "observations" in k or "traceId" in k or "run_type" in k:
        return
    if {"trace_id", "type", "start_time"} <= k:
        raise InputError(
            "Langfuse's blob storage export (observations with trace_id, start_time, input "
            "and output as text) is not read; export the observations table from the UI as JSON"
        )
    if {"timestamp", "input", "output"} <= k and {"sessionId", "userId"} & k:
        raise InputError(
            "a Langfuse traces table export holds no observations, so no retrieval; export "
            "the observations table from the UI as JSON, or the traces with their "
            "observations (GET /api/public/traces/{id})"
        )


def _choose(keys: list[str], forced: str | None) -> str | None:
    if forced in (None, "langfuse"):
        _refuse_langfuse_tables(set(keys))
    if forced:
        return forced
    found = detect(keys)
    if len(found) == 1:
        return found[0]
    if not keys:  # no record could be read: every row is a reject, in any format
        return None
    if found:
        raise InputError(
            f"cannot tell the trace format of this file: it has fields of {' and '.join(found)}; "
            "pass --format"
        )
    raise InputError(
        "no trace format recognised (looked for OpenInference spans, OTLP resourceSpans, "
        f"Langfuse observations, LangSmith run_type, OpenAI messages; found "
        f"{', '.join(keys[:12])}); pass --format"
    )


def _doc_field(path: str) -> str:
    """--doc-id as a document's flattened field: ``metadata.chunk_id``, ``id``, …"""
    field = re.sub(r"^(\$\.)?(document\.)?", "", path.strip())
    if not field or not re.fullmatch(r"[A-Za-z0-9_.\-]+", field):
        raise InputError(f"--doc-id wants a field path such as metadata.chunk_id, got {path!r}")
    return field


def reshape(con: duckdb.DuckDBPyConnection, keys: list[str], state: dict[str, Any]) -> None:
    """Bring the file's records, whatever the format, to gm_tspan, gm_tdoc and gm_tfb."""
    check_json(con)
    fmt = _choose(keys, state["forced"])
    state["format"] = fmt
    con.execute(spans.MACROS)
    con.execute(spans.SPAN_TABLE)
    con.execute(spans.ERRORS)
    if fmt in ("openinference", "otel"):
        if fmt == "openinference":
            con.execute(openinference.TALL)
            sid_from, records = "line", "gm_raw"
        else:
            con.execute(otlp.REQUESTS, {"structure": otlp.OTLP_STRUCTURE})
            con.execute(otlp.SPANS)
            con.execute(otlp.TALL)
            # A rejected span shows its export request's line (the reader's text, no rewrite).
            sid_from, records = (
                "sid",
                "(SELECT sid, line, raw FROM gm_otlp JOIN gm_raw USING (line))",
            )
        con.execute(spans.EXPAND)
        pivot = spans.SPAN_PIVOT.replace("gm_sid_from", sid_from)
        con.execute(pivot.replace("gm_records", records))
        con.execute(spans.SPAN_DOCS)
        if fmt == "openinference":
            con.execute(openinference.ANNOTATIONS)
    elif fmt is not None:
        con.execute(_FORMAT_SQL[fmt])
        con.execute(spans.DOCS_FROM_JSON)


def stream(
    con: duckdb.DuckDBPyConnection, item: InputFile, keys: list[str], state: dict[str, Any]
) -> bool:
    """Stage a JSON lines file straight from disk, in any format (OTLP and OpenInference spans
    through ``spans.spans_sql``, the others through ``_STREAMED``); False when the format is not
    known (no record could be read), which takes the record-by-record path."""
    if item.format != "jsonl":
        return False
    fmt = _choose(keys, state["forced"])
    if fmt is None:
        return False
    state["format"] = fmt
    con.execute(spans.MACROS)
    con.execute(spans.ATTR_MACROS)
    con.execute(spans.SPAN_TABLE)
    params = {"gm_path": str(item.path), "gm_compression": item.compression}
    if fmt == "otel":
        run_sql(con, spans.spans_sql(otlp.ATTRS, state.get("doc_field")),
                {**params, "structure": otlp.OTLP_STRUCTURE})  # fmt: skip
        return True
    structure, statements = _STREAMED[fmt]
    if fmt == "openinference":
        statements = [spans.spans_sql(openinference.ATTRS, state.get("doc_field")), *statements]
    con.execute(spans.items_macro(state.get("doc_field")))
    con.execute(openinference.FLAT_MACROS)
    run_sql(con, spans.LINES, {**params, "structure": structure})
    for sql in statements:
        con.execute(sql)
    con.execute("DROP TABLE gm_lines")
    return True


def target(trace_format: str | None = None, doc_id: str | None = None) -> Target:
    if trace_format is not None and trace_format not in FORMATS:
        raise InputError(f"unknown trace format {trace_format!r}; known: {', '.join(FORMATS)}")
    state: dict[str, Any] = {
        "forced": trace_format,
        "doc_field": _doc_field(doc_id) if doc_id else None,
    }
    return Target(
        source="traces",
        table="search_events",
        key=("event_id",),
        columns=COLUMNS,
        stage=lambda keys: stage_sql(state),
        redact=("query", "answer", "user_id"),
        pseudonymize=("session_id",),
        # A retrieved document's id may be a path holding a user's address.
        pseudonymize_lists=("result_ids",),
        streaming=False,
        reshape=lambda con, keys: reshape(con, keys, state),
        stream=lambda con, item, keys: stream(con, item, keys, state),
        number=number_lines,
        store=lambda con, t, batch_id: store(con, t, batch_id, state),
        summary=lambda con, batch_id: summary(con, state),
        marks_present=True,
        options={"format": trace_format, "doc_id": doc_id},
    )
