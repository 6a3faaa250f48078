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
"""

from __future__ import annotations

import json
import re
from typing import Any

import duckdb

from goldmine.errors import InputError
from goldmine.ingest.batch import Target, repeats, store_new_rows
from goldmine.ingest.feedback import DONT_KNOW, thumbs
from goldmine.ingest.files import (
    NOT_BLANK,
    OBJECT,
    RAW_LINE_OPTIONS,
    InputFile,
    check_json,
    run_sql,
)
from goldmine.ingest.searchlog import COLUMNS

FORMATS = ("openinference", "otel", "langfuse", "langsmith", "openai")

SIDE_COLUMNS = (
    "format",
    "trace_id",
    "span_id",
    "parent_id",
    "answer",
    "dont_know",
    "scores",
    "content_hashes",
    "ids_from_content",
)

MACROS = r"""
-- The first of these paths a JSON value has, as text.
CREATE OR REPLACE TEMP MACRO gm_first_of(j, paths) AS
    list_filter(json_extract_string(j, paths), lambda x: x IS NOT NULL)[1];
CREATE OR REPLACE TEMP MACRO gm_jkey(k) AS
    ltrim(replace(regexp_replace(regexp_replace(k, '^\$', ''), '\[([0-9]+)\]', '.\1', 'g'),
                  '"', ''), '.');
CREATE OR REPLACE TEMP MACRO gm_jtext(v, t) AS
    CASE WHEN t = 'VARCHAR' THEN json_extract_string(v, '$')
    WHEN t <> 'NULL' THEN v::VARCHAR END;
CREATE OR REPLACE TEMP MACRO gm_otlp_scalar(v) AS gm_first_of(v,
    ['$.stringValue', '$.intValue', '$.doubleValue', '$.boolValue']);
CREATE OR REPLACE TEMP MACRO gm_otlp_kvobj(vals) AS to_json(map_from_entries(list_transform(
    coalesce(from_json(vals, '[{"key":"VARCHAR","value":"JSON"}]'), []),
    lambda e: {'k': e.key, 'v': gm_otlp_scalar(e.value)})));
CREATE OR REPLACE TEMP MACRO gm_otlp_value(v) AS CASE
    WHEN json_extract(v, '$.arrayValue') IS NOT NULL THEN to_json(list_transform(
        coalesce(from_json(json_extract(v, '$.arrayValue.values'), '["JSON"]'), []),
        lambda e: CASE WHEN json_extract(e, '$.kvlistValue') IS NOT NULL
                       THEN gm_otlp_kvobj(json_extract(e, '$.kvlistValue.values'))
                       ELSE to_json(gm_otlp_scalar(e)) END))::VARCHAR
    WHEN json_extract(v, '$.kvlistValue') IS NOT NULL
        THEN gm_otlp_kvobj(json_extract(v, '$.kvlistValue.values'))::VARCHAR
    ELSE gm_otlp_scalar(v) END;
-- The text of a JSON value that is a string, or of the first of these fields an object has.
CREATE OR REPLACE TEMP MACRO gm_query_of(j) AS CASE json_type(j)
    WHEN 'VARCHAR' THEN json_extract_string(j, '$')
    WHEN 'OBJECT' THEN gm_first_of(j, ['$.query', '$.query_str', '$.question', '$.input', '$.q',
                                       '$.search_query', '$.text']) END;
CREATE OR REPLACE TEMP MACRO gm_answer_of(j) AS CASE json_type(j)
    WHEN 'VARCHAR' THEN json_extract_string(j, '$')
    WHEN 'OBJECT' THEN gm_first_of(j, ['$.content', '$.output', '$.answer', '$.result',
        '$.response', '$.text', '$.completion', '$.choices[0].message.content',
        '$.generations[0][0].text', '$.generations[0][0].message.kwargs.content',
        '$.message.content']) END;
-- The documents of a retrieval's output: a list, or the list an object holds.
CREATE OR REPLACE TEMP MACRO gm_docs_of(j) AS CASE json_type(j)
    WHEN 'ARRAY' THEN j
    WHEN 'OBJECT' THEN coalesce(
        CASE WHEN json_type(j, '$.documents') = 'ARRAY' THEN json_extract(j, '$.documents') END,
        CASE WHEN json_type(j, '$.results') = 'ARRAY' THEN json_extract(j, '$.results') END,
        CASE WHEN json_type(j, '$.chunks') = 'ARRAY' THEN json_extract(j, '$.chunks') END,
        CASE WHEN json_type(j, '$.hits') = 'ARRAY' THEN json_extract(j, '$.hits') END,
        CASE WHEN json_type(j, '$.nodes') = 'ARRAY' THEN json_extract(j, '$.nodes') END,
        CASE WHEN json_type(j, '$.output') = 'ARRAY' THEN json_extract(j, '$.output') END,
        CASE WHEN json_type(j, '$.data') = 'ARRAY' THEN json_extract(j, '$.data') END) END;
"""

# Span tables every format fills. ``kind``: RETRIEVER, LLM, TRACE (a trace record's own fields),
# or OTHER. ``answer`` is set where the format says it directly (OpenAI's next reply).
_SPAN_TABLE = """
CREATE OR REPLACE TEMP TABLE gm_tspan (
    sid BIGINT, line BIGINT, raw VARCHAR, err VARCHAR, trace_id VARCHAR, span_id VARCHAR,
    parent_id VARCHAR, kind VARCHAR, ts_text VARCHAR, ts TIMESTAMP, failed BOOLEAN,
    status_msg VARCHAR, session_id VARCHAR, user_id VARCHAR, query VARCHAR, output VARCHAR,
    answer VARCHAR, lh UBIGINT,
    items STRUCT(id VARCHAR, hash VARCHAR, score DOUBLE, from_content BOOLEAN)[]);
CREATE OR REPLACE TEMP TABLE gm_tdoc (sid BIGINT, i INTEGER, field VARCHAR, val VARCHAR);
CREATE OR REPLACE TEMP TABLE gm_tfb (trace_id VARCHAR, span_id VARCHAR, label VARCHAR,
                                     score DOUBLE);
CREATE OR REPLACE TEMP TABLE gm_tdocsrc (sid BIGINT, docs JSON);
"""

# Records the reader could not parse are rows of their own (rejected with the reader's reason).
_ERRORS = """
INSERT INTO gm_tspan (sid, line, raw, err)
SELECT -line, line, raw, err FROM gm_raw WHERE err IS NOT NULL
"""

# ---- OpenInference (Phoenix span JSON) and OTLP: spans as a tall table of dotted keys.

_PHOENIX_TALL = """
CREATE OR REPLACE TEMP TABLE gm_tattr AS
SELECT r.line AS sid, gm_jkey(t.fullkey) AS key, gm_jtext(t.value, t.type) AS val
FROM (SELECT line, raw::JSON AS j FROM gm_raw WHERE err IS NULL) r, json_tree(r.j) t
WHERE t.type NOT IN ('OBJECT', 'ARRAY', 'NULL')
"""

# One typed parse per line: the nesting and the span fields goldmine reads, attribute values
# by their OTLP/JSON kind (arrays and key/value lists kept as JSON, turned to JSON text below).
_OTLP_ANY = (
    '{"stringValue":"VARCHAR","intValue":"VARCHAR","doubleValue":"DOUBLE",'
    '"boolValue":"BOOLEAN","arrayValue":"JSON","kvlistValue":"JSON"}'
)
OTLP_STRUCTURE = (
    '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"VARCHAR","spanId":"VARCHAR",'
    '"parentSpanId":"VARCHAR","name":"VARCHAR","startTimeUnixNano":"VARCHAR",'
    '"status":{"code":"VARCHAR","message":"VARCHAR"},'
    f'"attributes":[{{"key":"VARCHAR","value":{_OTLP_ANY}}}]}}]}}]}}]}}'
)

_OTLP_LINES = """
CREATE OR REPLACE TEMP TABLE gm_otlp_lines AS
SELECT line, raw, try(json_transform(raw, $structure)) AS r FROM gm_raw WHERE err IS NULL
"""

_OTLP_SPANS = """
INSERT INTO gm_tspan (sid, line, raw, err)
SELECT -line, line, raw, 'not an OTLP/JSON export request' FROM gm_otlp_lines
WHERE r.resourceSpans IS NULL;
CREATE OR REPLACE TEMP TABLE gm_otlp AS
SELECT row_number() OVER () AS sid, line, span FROM (
    SELECT line, unnest(flatten(list_transform(r.resourceSpans,
               lambda rs: flatten(list_transform(rs.scopeSpans, lambda ss: ss.spans))))) AS span
    FROM gm_otlp_lines WHERE r.resourceSpans IS NOT NULL);
DROP TABLE gm_otlp_lines;
"""

_OTLP_TALL = """
CREATE OR REPLACE TEMP TABLE gm_tattr AS
SELECT sid, key, val FROM (
    SELECT sid, unnest([
        {'key': 'context.span_id', 'val': span.spanId},
        {'key': 'context.trace_id', 'val': span.traceId},
        {'key': 'parent_id', 'val': nullif(span.parentSpanId, '')},
        {'key': 'name', 'val': span.name},
        {'key': 'start_time_ns', 'val': span.startTimeUnixNano},
        {'key': 'status_code', 'val': span.status.code},
        {'key': 'status_message', 'val': span.status.message}], recursive := true)
    FROM gm_otlp)
WHERE val IS NOT NULL
UNION ALL
SELECT sid, 'attributes.' || a.key,
       coalesce(a.value.stringValue, a.value.intValue, a.value.doubleValue::VARCHAR,
                a.value.boolValue::VARCHAR,
                CASE WHEN a.value.arrayValue IS NOT NULL OR a.value.kvlistValue IS NOT NULL
                     THEN gm_otlp_value(to_json(a.value)) END)
FROM (SELECT sid, unnest(span.attributes) AS a FROM gm_otlp)
"""

# ---- OTLP/JSON lines streamed from the file: one parallel parse, one row per span with only
# the attributes read. A span's attributes become two lists (keys, values as text) once, and
# every attribute is then found by position in the keys (``list_position``); extracting the
# attribute structs one by one, or a tall table of them, costs several times the parse. No raw
# text is kept: a rejected row gets its line and text from an ordered second read
# (``number_lines``), by the hash of its line, only when rows are rejected.
_OTLP_VALUE = """
CREATE OR REPLACE TEMP MACRO gm_av(v) AS coalesce(v.stringValue, v.intValue,
    v.doubleValue::VARCHAR, v.boolValue::VARCHAR,
    CASE WHEN v.arrayValue IS NOT NULL OR v.kvlistValue IS NOT NULL
         THEN gm_otlp_value(to_json(v)) END);
CREATE OR REPLACE TEMP MACRO gm_at(k, v, name) AS v[list_position(k, name)];
CREATE OR REPLACE TEMP MACRO gm_json_at(k, v, name) AS CASE
    WHEN left(ltrim(gm_at(k, v, name)), 1) IN ('{', '[') THEN try(gm_at(k, v, name)::JSON) END;
"""


# The spans of an OTLP/JSON lines file (``$gm_path``): ``attrs`` has a row per span with its
# fields and its attributes as two lists, as ``_spans_sql`` reads them.
_OTLP_ATTRS = f"""
WITH lines AS (
    SELECT hash(raw) AS lh, raw, {OBJECT} AS gm_object,
           try(json_transform(raw, $structure)) AS r
    FROM read_csv($gm_path, {RAW_LINE_OPTIONS}) WHERE {NOT_BLANK}
),
spans AS (
    SELECT lh,
        CASE WHEN r.resourceSpans IS NULL OR NOT gm_object THEN CASE WHEN NOT json_valid(raw)
            THEN 'malformed JSON' WHEN json_type(raw) <> 'OBJECT' THEN 'not a JSON object'
            ELSE 'not an OTLP/JSON export request' END END AS err,
        -- An exporter writes one resource and one scope a request, as a rule: their spans are
        -- taken as they are, without the copies flatten makes (a fifth of the parse).
        unnest(CASE WHEN r.resourceSpans IS NULL OR NOT gm_object THEN [NULL]
                    WHEN len(r.resourceSpans) = 1 AND len(r.resourceSpans[1].scopeSpans) = 1
                        THEN r.resourceSpans[1].scopeSpans[1].spans
                    ELSE flatten(list_transform(r.resourceSpans, lambda rs: flatten(
                        list_transform(rs.scopeSpans, lambda ss: ss.spans)))) END) AS span
    FROM lines
),
attrs AS (
    SELECT lh, err, span.traceId AS trace_id, span.spanId AS span_id,
        nullif(span.parentSpanId, '') AS parent_id, NULL::VARCHAR AS ts_text,
        make_timestamp((try_cast(span.startTimeUnixNano AS HUGEINT) // 1000)::BIGINT) AS ts,
        span.status.code AS status_code, span.status.message AS status_msg,
        list_transform(span.attributes, lambda a: a.key) AS k,
        list_transform(span.attributes, lambda a: gm_av(a.value)) AS v
    FROM spans
),"""

# Phoenix's span JSON, parsed into ``gm_lines`` (``_LINES``): the attributes, nested objects or
# dotted keys, flattened into dotted keys (six levels: ``retrieval.documents.0.document.
# metadata.chunk_id``); the span's kind and conversation, where only the span has them, after
# the attributes (the first of a key is the one read). Span annotations are feedback, not spans.
_OI_SPAN = {
    "context": {"span_id": "VARCHAR", "trace_id": "VARCHAR"}, "span_id": "VARCHAR",
    "trace_id": "VARCHAR", "parent_id": "VARCHAR", "parent_span_id": "VARCHAR",
    "span_kind": "VARCHAR", "start_time": "VARCHAR", "start_time_ns": "VARCHAR",
    "status_code": "VARCHAR", "status_message": "VARCHAR",
    "conversation": {"conversation_id": "VARCHAR"}, "result": {"label": "VARCHAR",
                                                               "score": "VARCHAR"},
    "attributes": "JSON",
}  # fmt: skip
_OI_FLAT = r"""
CREATE OR REPLACE TEMP MACRO gm_kv_of(gm_k, gm_j) AS CASE
    WHEN gm_j IS NULL THEN []
    WHEN left(gm_j::VARCHAR, 1) = '{' THEN list_transform(
        map_entries(json_transform(gm_j, '"MAP(VARCHAR, JSON)"')),
        lambda me: {'k': CASE WHEN gm_k = '' THEN me.key ELSE gm_k || '.' || me.key END,
                    'v': me.value})
    WHEN left(gm_j::VARCHAR, 1) = '[' THEN list_transform(from_json(gm_j, '["JSON"]'),
        lambda ae, ai: {'k': gm_k || '.' || (ai - 1), 'v': ae})
    ELSE [{'k': gm_k, 'v': gm_j}] END;
CREATE OR REPLACE TEMP MACRO gm_flat1(kvs) AS
    flatten(list_transform(kvs, lambda fe: gm_kv_of(fe.k, fe.v)));
CREATE OR REPLACE TEMP MACRO gm_flat(j) AS list_filter(
    gm_flat1(gm_flat1(gm_flat1(gm_flat1(gm_flat1(gm_kv_of('', j)))))),
    lambda le: left(le.v::VARCHAR, 1) NOT IN ('{', '['));
"""
_OI_ATTRS = """
WITH flat AS (
    SELECT lh, err, r, list_concat(gm_flat(r.attributes), [
        {'k': 'openinference.span.kind', 'v': to_json(r.span_kind)},
        {'k': 'gen_ai.conversation.id', 'v': to_json(r.conversation.conversation_id)}]) AS kv
    FROM gm_lines WHERE err IS NOT NULL OR (r.result.label IS NULL AND r.result.score IS NULL)
),
attrs AS (
    SELECT lh, err, coalesce(r.context.trace_id, r.trace_id) AS trace_id,
        coalesce(r.context.span_id, r.span_id) AS span_id,
        nullif(coalesce(r.parent_id, r.parent_span_id), '') AS parent_id,
        r.start_time AS ts_text, coalesce(gm_ts(r.start_time),
            make_timestamp((try_cast(r.start_time_ns AS HUGEINT) // 1000)::BIGINT)) AS ts,
        r.status_code, r.status_message AS status_msg,
        list_transform(kv, lambda e: e.k) AS k,
        list_transform(kv, lambda e: json_extract_string(e.v, '$')) AS v
    FROM flat
),"""
_OI_ANNOTATIONS = """
INSERT INTO gm_tfb
SELECT NULL, coalesce(r.span_id, r.context.span_id), r.result.label,
       try_cast(r.result.score AS DOUBLE)
FROM gm_lines WHERE err IS NULL AND (r.result.label IS NOT NULL OR r.result.score IS NOT NULL)
"""


def _spans_sql(attrs: str, doc_field: str | None) -> str:
    """The span rows, into gm_tspan, of ``attrs`` (``_OTLP_ATTRS``, ``_OI_ATTRS``)."""
    fields = [doc_field] if doc_field else list(_ID_FIELDS)
    # A document's field by a dotted path (checked by _doc_field: letters, digits, _ . -): the
    # dotted attribute itself, else the path inside the JSON its first part holds
    # (``metadata`` → ``{"chunk_id": …}``).
    oi, gen = [], []
    for f in fields:
        head, _, rest = f.partition(".")
        oi.append(f"gm_at(k, v, p || '{f}')")
        if rest:
            path = "$." + ".".join(f'"{part}"' for part in rest.split("."))
            oi.append(f"json_extract_string(gm_json_at(k, v, p || '{head}'), '{path}')")
        gen.append("json_extract_string(d, '$." + ".".join(f'"{x}"' for x in f.split(".")) + "')")
    oi_id, gen_id = ", ".join(oi), ", ".join(gen)
    oi_content = ", ".join(f"gm_at(k, v, p || '{f}')" for f in _CONTENT_FIELDS)
    gen_content = ", ".join(f"'$.{f}'" for f in _CONTENT_FIELDS)
    at = "gm_at(k, v, '{}')".format
    return f"""
INSERT INTO gm_tspan BY NAME
{attrs}
typed AS (
    SELECT *, CASE
        WHEN upper({at("openinference.span.kind")}) = 'RETRIEVER'
            OR lower({at("gen_ai.operation.name")}) IN ('retrieval', 'retrieve') THEN 'RETRIEVER'
        WHEN upper({at("openinference.span.kind")}) = 'LLM'
            OR lower({at("gen_ai.operation.name")}) IN ('chat', 'text_completion',
                                                      'generate_content') THEN 'LLM'
        ELSE 'OTHER' END AS kind
    FROM attrs
),
-- The attributes read more than once, looked up once; a retriever's output and an LLM's input
-- are never read (each miss is a scan of every key of the span).
once AS (
    SELECT *,
        CASE WHEN kind = 'RETRIEVER' THEN {at("input.value")} END AS gm_in,
        CASE WHEN kind <> 'RETRIEVER' THEN {at("output.value")} END AS gm_out
    FROM typed
),
rows AS (
SELECT lh, err, trace_id, span_id, parent_id, CASE WHEN err IS NULL THEN kind END AS kind,
    ts_text, ts, upper(status_code) IN ('ERROR', 'STATUS_CODE_ERROR', '2') AS failed,
    status_msg,
    coalesce({at("session.id")}, {at("gen_ai.conversation.id")}) AS session_id,
    coalesce({at("user.id")}, {at("enduser.id")}) AS user_id,
    CASE WHEN kind = 'RETRIEVER' THEN coalesce({at("gen_ai.retrieval.query.text")},
        CASE WHEN left(ltrim(gm_in), 1) = '{{' THEN gm_first_of(try(gm_in::JSON),
            ['$.query', '$.query_str', '$.input', '$.question']) ELSE gm_in END)
    END AS query,
    CASE WHEN kind <> 'RETRIEVER' THEN coalesce({at("llm.output_messages.0.message.content")},
        json_extract_string(gm_json_at(k, v, 'gen_ai.output.messages'),
                            '$[0].parts[0].content'),
        {at("gen_ai.completion.0.content")},
        CASE WHEN left(ltrim(gm_out), 1) IN ('{{', '[') THEN gm_first_of(try(gm_out::JSON),
            ['$.answer', '$.output', '$.response', '$.content']) ELSE gm_out END)
    END AS output,
    CASE WHEN kind = 'RETRIEVER' THEN list_transform(range(coalesce(list_max(list_transform(
        list_filter(k, lambda x: starts_with(x, 'retrieval.documents.')),
        lambda x: try_cast(split_part(x, '.', 3) AS INTEGER))) + 1, 0)),
        lambda i: 'retrieval.documents.' || i || '.document.') END AS oi_docs,
    CASE WHEN kind = 'RETRIEVER' THEN try(from_json(
        gm_json_at(k, v, 'gen_ai.retrieval.documents'), '["JSON"]')) END AS gen_docs,
    k, v
FROM once
),
docs AS (
    SELECT * EXCLUDE (k, v, oi_docs, gen_docs), list_concat(
        list_transform(oi_docs, lambda p: {{'id': coalesce({oi_id}),
            'content': coalesce({oi_content}),
            'score': try_cast(gm_at(k, v, p || 'score') AS DOUBLE)}}),
        list_transform(gen_docs, lambda d: {{'id': coalesce({gen_id}),
            'content': gm_first_of(d, [{gen_content}]),
            'score': try_cast(json_extract_string(d, '$.score') AS DOUBLE)}})) AS found
    FROM rows
)
SELECT * EXCLUDE (found), list_transform(found, lambda d: {{
    'id': coalesce(d.id, 'sha256:' || left(d.hash, 16)), 'hash': d.hash, 'score': d.score,
    'from_content': d.id IS NULL AND d.hash IS NOT NULL}}) AS items
FROM (SELECT * EXCLUDE (found), list_transform(found, lambda d: {{
          'id': d.id, 'hash': sha256(d.content), 'score': d.score}}) AS found FROM docs)
"""


# Attribute values that are JSON text (documents, output messages, metadata, a JSON input) are
# flattened into further dotted keys, so every shape reads the same.
_EXPAND = r"""
INSERT INTO gm_tattr
SELECT a.sid, a.key || '.' || gm_jkey(t.fullkey), gm_jtext(t.value, t.type)
FROM (SELECT sid, key, val::JSON AS j FROM gm_tattr
      WHERE regexp_matches(key, '^attributes\.(gen_ai\.retrieval\.documents|gen_ai\.output\.'
                                 || 'messages|input\.value|output\.value)$|\.document\.metadata$')
        AND left(ltrim(val), 1) IN ('[', '{') AND json_valid(val)) a,
     json_tree(a.j) t
WHERE t.type NOT IN ('OBJECT', 'ARRAY', 'NULL') AND t.fullkey <> '$'
"""

_DOC_KEY = r"^attributes\.(?:gen_ai\.)?retrieval\.documents\.([0-9]+)\.(?:document\.)?(.+)$"


def _pick(*keys: str) -> str:
    """The value of the first of these keys a span has (this module's constants only)."""
    parts = [f"max(val) FILTER (WHERE key = '{k}')" for k in keys]
    return parts[0] if len(parts) == 1 else f"coalesce({', '.join(parts)})"


_IS_ANNOTATION = "bool_or(key IN ('result.label', 'result.score'))"

_SPAN_PIVOT = f"""
INSERT INTO gm_tspan (sid, line, raw, err, trace_id, span_id, parent_id, kind, ts_text, ts, failed,
                      status_msg, session_id, user_id, query, output, answer)
SELECT sid, line, raw, NULL, trace_id, span_id, parent_id,
    CASE WHEN kind_oi = 'RETRIEVER' OR op IN ('retrieval', 'retrieve') THEN 'RETRIEVER'
         WHEN kind_oi = 'LLM' OR op IN ('chat', 'text_completion', 'generate_content')
             THEN 'LLM' ELSE 'OTHER' END,
    ts_text, coalesce(gm_ts(ts_text), make_timestamp((try_cast(ts_ns AS HUGEINT) // 1000)::BIGINT)),
    upper(status) IN ('ERROR', 'STATUS_CODE_ERROR', '2'), status_msg, session_id, user_id,
    query, output, NULL
FROM (
    SELECT sid,
        {_pick("context.span_id", "span_id")} AS span_id,
        {_pick("context.trace_id", "trace_id")} AS trace_id,
        nullif({_pick("parent_id", "parent_span_id")}, '') AS parent_id,
        upper({_pick("attributes.openinference.span.kind", "span_kind")}) AS kind_oi,
        lower({_pick("attributes.gen_ai.operation.name")}) AS op,
        {_pick("start_time")} AS ts_text,
        {_pick("start_time_ns")} AS ts_ns,
        {_pick("status_code")} AS status,
        {_pick("status_message")} AS status_msg,
        {
    _pick(
        "attributes.session.id", "attributes.gen_ai.conversation.id", "conversation.conversation_id"
    )
} AS session_id,
        {_pick("attributes.user.id", "attributes.enduser.id")} AS user_id,
        coalesce({
    _pick(
        "attributes.gen_ai.retrieval.query.text",
        "attributes.input.value.query",
        "attributes.input.value.query_str",
        "attributes.input.value.input",
        "attributes.input.value.question",
    )
},
                 CASE WHEN left(ltrim({_pick("attributes.input.value")}), 1) <> '{{'
                      THEN {_pick("attributes.input.value")} END) AS query,
        coalesce({
    _pick(
        "attributes.llm.output_messages.0.message.content",
        "attributes.gen_ai.output.messages.0.parts.0.content",
        "attributes.gen_ai.completion.0.content",
        "attributes.output.value.answer",
        "attributes.output.value.output",
        "attributes.output.value.response",
        "attributes.output.value.content",
    )
},
                 CASE WHEN left(ltrim({_pick("attributes.output.value")}), 1) NOT IN ('{{', '[')
                      THEN {_pick("attributes.output.value")} END) AS output
    FROM gm_tattr WHERE NOT contains(key, 'retrieval.documents.')
    GROUP BY sid HAVING NOT {_IS_ANNOTATION}
) p
LEFT JOIN (SELECT gm_sid_from AS sid, line, raw FROM gm_records) r USING (sid)
"""

_SPAN_DOCS = f"""
INSERT INTO gm_tdoc
SELECT sid, m.i::INTEGER, m.field, val
FROM (SELECT sid, regexp_extract(key, '{_DOC_KEY}', ['i', 'field']) AS m, val FROM gm_tattr
      WHERE contains(key, 'retrieval.documents.'))
WHERE m.i <> ''
"""

_ANNOTATIONS = f"""
INSERT INTO gm_tfb
SELECT NULL, {_pick("span_id", "context.span_id")}, {_pick("result.label")},
       try_cast({_pick("result.score")} AS DOUBLE)
FROM gm_tattr GROUP BY sid HAVING {_IS_ANNOTATION}
"""

# ---- Langfuse: trace records with observations and scores, or observation records.

# A trace's own fields sit at the top of its record, or under ``trace`` beside the observations
# (``{"trace": {…}, "observations": […]}``, as Langfuse's repository keeps exported traces).
_LANGFUSE = """
CREATE OR REPLACE TEMP MACRO gm_lf_trace(rec, path) AS
    coalesce(json_extract_string(rec, '$.' || path), json_extract_string(rec, '$.trace.' || path));
-- Each observation keeps only the three fields of its trace it reads, not the trace's record.
CREATE OR REPLACE TEMP TABLE gm_lf AS
SELECT row_number() OVER () AS sid, * FROM (
    SELECT line, gm_lf_trace(raw, 'id') AS tid, gm_lf_trace(raw, 'sessionId') AS session,
           gm_lf_trace(raw, 'userId') AS uid, unnest(json_extract(raw, '$.observations[*]')) AS obs
    FROM gm_raw WHERE err IS NULL AND json_type(raw, '$.observations') = 'ARRAY'
    UNION ALL
    SELECT line, NULL, NULL, NULL, raw::JSON FROM gm_raw
    WHERE err IS NULL AND json_type(raw, '$.observations') IS DISTINCT FROM 'ARRAY'
      AND (raw ->> '$.traceId') IS NOT NULL AND (raw ->> '$.type') IS NOT NULL);
INSERT INTO gm_tspan (sid, line, raw, err, trace_id, span_id, parent_id, kind, ts_text, ts, failed,
                      status_msg, session_id, user_id, query, output, answer)
SELECT sid, line, obs::VARCHAR, NULL, coalesce(obs ->> '$.traceId', tid),
    (obs ->> '$.id'), (obs ->> '$.parentObservationId'),
    CASE WHEN upper(obs ->> '$.type') = 'RETRIEVER'
              OR (upper(obs ->> '$.type') IN ('SPAN', 'TOOL', 'CHAIN')
                  AND regexp_matches(lower(obs ->> '$.name'), 'retriev')) THEN 'RETRIEVER'
         WHEN upper(obs ->> '$.type') = 'GENERATION' THEN 'LLM' ELSE 'OTHER' END,
    (obs ->> '$.startTime'), gm_ts(obs ->> '$.startTime'), upper(obs ->> '$.level') = 'ERROR',
    (obs ->> '$.statusMessage'), session, uid,
    gm_query_of(obs -> '$.input'), gm_answer_of(obs -> '$.output'), NULL
FROM gm_lf;
INSERT INTO gm_tdocsrc
SELECT sid, gm_docs_of(obs -> '$.output') FROM gm_lf
WHERE upper(obs ->> '$.type') IN ('RETRIEVER', 'SPAN', 'TOOL', 'CHAIN');
-- The trace's own fields: session, user and output for the retrievals under it.
INSERT INTO gm_tspan (sid, line, trace_id, kind, session_id, user_id, output)
SELECT -line - 1000000000000, line, gm_lf_trace(raw, 'id'), 'TRACE',
       gm_lf_trace(raw, 'sessionId'), gm_lf_trace(raw, 'userId'),
       gm_answer_of(coalesce(raw -> '$.output', raw -> '$.trace.output'))
FROM gm_raw WHERE err IS NULL AND json_type(raw, '$.observations') = 'ARRAY';
INSERT INTO gm_tfb
SELECT coalesce(s ->> '$.traceId', tid), (s ->> '$.observationId'), (s ->> '$.stringValue'),
       try_cast(s ->> '$.value' AS DOUBLE)
FROM (SELECT gm_lf_trace(raw, 'id') AS tid,
             unnest(CASE WHEN json_type(raw, '$.scores') = 'ARRAY'
                         THEN json_extract(raw, '$.scores[*]')
                         ELSE json_extract(raw, '$.trace.scores[*]') END) AS s
      FROM gm_raw WHERE err IS NULL AND (json_type(raw, '$.scores') = 'ARRAY'
                                         OR json_type(raw, '$.trace.scores') = 'ARRAY'))
WHERE json_type(s) = 'OBJECT';
"""

# ---- LangSmith: runs, and feedback records (run_id + key).

_LANGSMITH = """
INSERT INTO gm_tspan (sid, line, raw, err, trace_id, span_id, parent_id, kind, ts_text, ts, failed,
                      status_msg, session_id, user_id, query, output, answer)
SELECT line, line, raw, NULL, coalesce(raw ->> '$.trace_id', (raw ->> '$.id')), (raw ->> '$.id'),
    (raw ->> '$.parent_run_id'),
    CASE lower(raw ->> '$.run_type') WHEN 'retriever' THEN 'RETRIEVER' WHEN 'llm' THEN 'LLM'
         ELSE 'OTHER' END,
    (raw ->> '$.start_time'), gm_ts(raw ->> '$.start_time'),
    coalesce(trim(raw ->> '$.error'), '') <> '', (raw ->> '$.error'),
    coalesce(raw ->> '$.extra.metadata.session_id', (raw ->> '$.extra.metadata.thread_id'),
             (raw ->> '$.extra.metadata.conversation_id')),
    (raw ->> '$.extra.metadata.user_id'),
    gm_query_of(raw -> '$.inputs'), gm_answer_of(raw -> '$.outputs'), NULL
FROM gm_raw WHERE err IS NULL AND (raw ->> '$.run_type') IS NOT NULL;
INSERT INTO gm_tdocsrc
SELECT line, gm_docs_of(raw -> '$.outputs') FROM gm_raw
WHERE err IS NULL AND lower(raw ->> '$.run_type') = 'retriever';
INSERT INTO gm_tfb
SELECT coalesce(raw ->> '$.trace_id', (raw ->> '$.id')), (raw ->> '$.id'), NULL,
       try_cast(json_extract_string(raw -> '$.feedback_stats', '$."' || k || '".avg') AS DOUBLE)
FROM (SELECT raw, unnest(json_keys(raw -> '$.feedback_stats')) AS k FROM gm_raw
      WHERE err IS NULL AND (raw ->> '$.run_type') IS NOT NULL
        AND json_type(raw, '$.feedback_stats') = 'OBJECT');
INSERT INTO gm_tfb
SELECT (raw ->> '$.trace_id'), (raw ->> '$.run_id'), (raw ->> '$.value'),
       try_cast(raw ->> '$.score' AS DOUBLE)
FROM gm_raw WHERE err IS NULL AND (raw ->> '$.run_type') IS NULL
  AND (raw ->> '$.run_id') IS NOT NULL AND (raw ->> '$.key') IS NOT NULL;
"""

# ---- OpenAI chat logs: messages in order; a tool call whose result lists ids is a retrieval.

_OPENAI = """
CREATE OR REPLACE TEMP TABLE gm_omsg AS
SELECT line, conv, user_id, ts_text, i - 1 AS idx, (m ->> '$.role') AS role,
    CASE json_type(m, '$.content') WHEN 'VARCHAR' THEN (m ->> '$.content')
         WHEN 'ARRAY' THEN array_to_string(json_extract_string(m, '$.content[*].text'), ' ')
    END AS content,
    m AS msg
FROM (
    -- unnest, not a lateral join over range(len(msgs)): that took twenty times as long.
    SELECT line, conv, user_id, ts_text, unnest(msgs) AS m, generate_subscripts(msgs, 1) AS i
    FROM (SELECT line, coalesce(raw ->> '$.conversation_id', (raw ->> '$.id'),
                                (raw ->> '$.metadata.conversation_id'), 'line-' || line) AS conv,
                 gm_first_of(raw, ['$.user', '$.user_id', '$.metadata.user_id']) AS user_id,
                 gm_first_of(raw, ['$.created_at', '$.created', '$.timestamp']) AS ts_text,
                 json_extract(raw, '$.messages[*]') AS msgs
          FROM gm_raw WHERE err IS NULL AND json_type(raw, '$.messages') = 'ARRAY'));
CREATE OR REPLACE TEMP TABLE gm_ocall AS
WITH calls AS (
    SELECT line, conv, user_id, ts_text, idx, (c ->> '$.id') AS call_id,
           (c ->> '$.function.name') AS fn, (c ->> '$.function.arguments') AS args
    FROM (SELECT *, unnest(json_extract(msg, '$.tool_calls[*]')) AS c FROM gm_omsg
          WHERE role = 'assistant' AND json_type(msg, '$.tool_calls') = 'ARRAY')
    UNION ALL
    SELECT line, conv, user_id, ts_text, idx, 'function_call', (msg ->> '$.function_call.name'),
           (msg ->> '$.function_call.arguments')
    FROM gm_omsg WHERE role = 'assistant' AND (msg -> '$.function_call') IS NOT NULL
),
results AS (
    SELECT c.line, c.idx, c.call_id, min(m.idx) AS ridx
    FROM calls c JOIN gm_omsg m ON m.line = c.line AND m.idx > c.idx
        AND ((m.role = 'tool' AND (m.msg ->> '$.tool_call_id') = c.call_id)
             OR (m.role = 'function' AND c.call_id = 'function_call'
                 AND (m.msg ->> '$.name') IS NOT DISTINCT FROM c.fn))
    GROUP BY ALL
)
SELECT row_number() OVER () AS sid, c.*, r.ridx, m.content AS result,
    CASE WHEN json_valid(m.content) THEN gm_docs_of(m.content::JSON) END AS docs,
    CASE WHEN json_valid(c.args) THEN gm_query_of(c.args::JSON) END AS arg_query
FROM calls c JOIN results r USING (line, idx, call_id)
JOIN gm_omsg m ON m.line = r.line AND m.idx = r.ridx;
INSERT INTO gm_tspan (sid, line, raw, err, trace_id, span_id, parent_id, kind, ts_text, ts, failed,
                      status_msg, session_id, user_id, query, output, answer)
SELECT c.sid, c.line, NULL, NULL, c.conv, lpad(c.idx::VARCHAR, 4, '0') || ':' || c.call_id,
    NULL, 'RETRIEVER', c.ts_text, gm_ts(c.ts_text), false, NULL, c.conv, c.user_id,
    coalesce(c.arg_query,
             (SELECT arg_max(u.content, u.idx) FROM gm_omsg u
              WHERE u.line = c.line AND u.idx < c.idx AND u.role = 'user')),
    NULL,
    (SELECT arg_min(a.content, a.idx) FROM gm_omsg a
     WHERE a.line = c.line AND a.idx > c.ridx AND a.role = 'assistant'
       AND coalesce(trim(a.content), '') <> '')
FROM gm_ocall c
WHERE c.docs IS NOT NULL;
INSERT INTO gm_tdocsrc SELECT sid, docs FROM gm_ocall WHERE docs IS NOT NULL;
INSERT INTO gm_tfb
SELECT coalesce(raw ->> '$.conversation_id', (raw ->> '$.id'), 'line-' || line), NULL,
       coalesce(raw ->> '$.feedback', (raw ->> '$.rating')), NULL
FROM gm_raw WHERE err IS NULL AND coalesce(raw ->> '$.feedback', (raw ->> '$.rating')) IS NOT NULL;
"""

# ---- The record-by-record formats streamed from a JSON lines file: one parallel pass straight
# from the file parses each line once into only the fields goldmine reads (``gm_lines``: the
# line's hash, its reader error, the fields as a typed struct, JSON where a value may take any
# shape; a temp table, which spills under the memory limit), and the spans (their documents as
# ranked items) and the feedback are made from that. Reading the file again for each of them
# instead parses it several times and needs more memory, not less: the reader's buffers and the
# parse then share the limit with the documents' JSON. No raw text is kept: a rejected row gets
# its line and text from ``number_lines``, as a streamed OTLP span does.
_LINES = f"""
CREATE OR REPLACE TEMP TABLE gm_lines AS
SELECT lh, CASE WHEN r IS NULL OR NOT gm_object THEN CASE WHEN NOT json_valid(raw)
           THEN 'malformed JSON' WHEN json_type(raw) <> 'OBJECT' THEN 'not a JSON object'
       END END AS err, CASE WHEN gm_object THEN r END AS r
FROM (SELECT hash(raw) AS lh, raw, {OBJECT} AS gm_object,
             try(json_transform(raw, $structure)) AS r
      FROM read_csv($gm_path, {RAW_LINE_OPTIONS}) WHERE {NOT_BLANK})
"""


def _struct(fields: dict[str, Any]) -> str:
    """A json_transform structure: {name: type or nested structure}."""
    return json.dumps(fields, separators=(",", ":"))


_LS_LINE = _struct({
    "id": "VARCHAR", "trace_id": "VARCHAR", "parent_run_id": "VARCHAR", "run_type": "VARCHAR",
    "start_time": "VARCHAR", "error": "VARCHAR", "extra": "JSON", "inputs": "JSON",
    "outputs": "JSON", "feedback_stats": "JSON", "run_id": "VARCHAR", "key": "VARCHAR",
    "value": "VARCHAR", "score": "VARCHAR",
})  # fmt: skip
_LF_OBS = {
    "id": "VARCHAR", "traceId": "VARCHAR", "type": "VARCHAR", "name": "VARCHAR",
    "startTime": "VARCHAR", "parentObservationId": "VARCHAR", "level": "VARCHAR",
    "statusMessage": "VARCHAR", "input": "JSON", "output": "JSON",
}  # fmt: skip
_LF_SCORE = {"traceId": "VARCHAR", "observationId": "VARCHAR", "stringValue": "VARCHAR",
             "value": "VARCHAR"}  # fmt: skip
_LF_LINE = _struct({
    **_LF_OBS, "sessionId": "VARCHAR", "userId": "VARCHAR", "observations": [_LF_OBS],
    "scores": [_LF_SCORE],
    "trace": {"id": "VARCHAR", "sessionId": "VARCHAR", "userId": "VARCHAR", "output": "JSON",
              "scores": [_LF_SCORE]},
})  # fmt: skip
_OA_CALL = {"name": "VARCHAR", "arguments": "VARCHAR"}
_OA_LINE = _struct({
    "conversation_id": "VARCHAR", "id": "VARCHAR", "user": "VARCHAR", "user_id": "VARCHAR",
    "metadata": {"conversation_id": "VARCHAR", "user_id": "VARCHAR"},
    "created_at": "VARCHAR", "created": "VARCHAR", "timestamp": "VARCHAR",
    "feedback": "VARCHAR", "rating": "VARCHAR",
    "messages": [{"role": "VARCHAR", "content": "JSON", "tool_call_id": "VARCHAR",
                  "name": "VARCHAR", "function_call": _OA_CALL,
                  "tool_calls": [{"id": "VARCHAR", "function": _OA_CALL}]}],
})  # fmt: skip

# An unreadable line is a row of ``gm_lines`` with its reader error (``err``) and no fields.
_LANGSMITH_STREAM = [
    """
INSERT INTO gm_tspan BY NAME
SELECT lh, err, coalesce(r.trace_id, r.id) AS trace_id, r.id AS span_id,
    r.parent_run_id AS parent_id, CASE WHEN err IS NULL THEN kind END AS kind,
    r.start_time AS ts_text, gm_ts(r.start_time) AS ts,
    coalesce(trim(r.error), '') <> '' AS failed, r.error AS status_msg,
    coalesce(r.extra ->> '$.metadata.session_id', r.extra ->> '$.metadata.thread_id',
             r.extra ->> '$.metadata.conversation_id') AS session_id,
    r.extra ->> '$.metadata.user_id' AS user_id,
    gm_query_of(r.inputs) AS query, gm_answer_of(r.outputs) AS output,
    CASE WHEN kind = 'RETRIEVER' THEN gm_items(gm_docs_of(r.outputs)) END AS items
FROM (SELECT *, CASE lower(r.run_type) WHEN 'retriever' THEN 'RETRIEVER' WHEN 'llm' THEN 'LLM'
                     ELSE 'OTHER' END AS kind
      FROM gm_lines WHERE err IS NOT NULL OR r.run_type IS NOT NULL)
""",
    """
INSERT INTO gm_tfb
SELECT coalesce(r.trace_id, r.id), r.id, NULL,
       try_cast(json_extract_string(r.feedback_stats, '$."' || k || '".avg') AS DOUBLE)
FROM (SELECT r, unnest(json_keys(r.feedback_stats)) AS k FROM gm_lines
      WHERE err IS NULL AND r.run_type IS NOT NULL AND json_type(r.feedback_stats) = 'OBJECT')
UNION ALL
SELECT r.trace_id, r.run_id, r.value, try_cast(r.score AS DOUBLE) FROM gm_lines
WHERE err IS NULL AND r.run_type IS NULL AND r.run_id IS NOT NULL AND r.key IS NOT NULL
""",
]

_LF_BARE = ", ".join(f"'{k}': r.{k}" for k in _LF_OBS)
_LANGFUSE_STREAM = [
    f"""
INSERT INTO gm_tspan BY NAME
SELECT lh, err, coalesce(o.traceId, tid) AS trace_id, o.id AS span_id,
    o.parentObservationId AS parent_id, CASE WHEN err IS NULL THEN kind END AS kind,
    o.startTime AS ts_text, gm_ts(o.startTime) AS ts, upper(o.level) = 'ERROR' AS failed,
    o.statusMessage AS status_msg, session AS session_id, uid AS user_id,
    gm_query_of(o.input) AS query, gm_answer_of(o.output) AS output,
    CASE WHEN kind = 'RETRIEVER' THEN gm_items(gm_docs_of(o.output)) END AS items
FROM (SELECT *, CASE WHEN upper(o.type) = 'RETRIEVER'
                  OR (upper(o.type) IN ('SPAN', 'TOOL', 'CHAIN')
                      AND regexp_matches(lower(o.name), 'retriev')) THEN 'RETRIEVER'
                WHEN upper(o.type) = 'GENERATION' THEN 'LLM' ELSE 'OTHER' END AS kind
      FROM (
        -- A trace record's observations keep only the three fields of the trace they read;
        -- a record that is an observation is one itself.
        SELECT lh, err, coalesce(r.id, r.trace.id) AS tid,
               coalesce(r.sessionId, r.trace.sessionId) AS session,
               coalesce(r.userId, r.trace.userId) AS uid, unnest(r.observations) AS o
        FROM gm_lines WHERE err IS NULL AND r.observations IS NOT NULL
        UNION ALL
        SELECT lh, err, NULL, NULL, NULL,
               CASE WHEN err IS NULL THEN {{{_LF_BARE}}} END
        FROM gm_lines WHERE err IS NOT NULL OR (r.observations IS NULL
                                                AND r.traceId IS NOT NULL AND r.type IS NOT NULL)))
""",
    """
-- The trace's own fields: session, user and output for the retrievals under it.
INSERT INTO gm_tspan (trace_id, kind, session_id, user_id, output)
SELECT coalesce(r.id, r.trace.id), 'TRACE', coalesce(r.sessionId, r.trace.sessionId),
       coalesce(r.userId, r.trace.userId), gm_answer_of(coalesce(r.output, r.trace.output))
FROM gm_lines WHERE err IS NULL AND r.observations IS NOT NULL
""",
    """
INSERT INTO gm_tfb
SELECT coalesce(s.traceId, tid), s.observationId, s.stringValue, try_cast(s.value AS DOUBLE)
FROM (SELECT coalesce(r.id, r.trace.id) AS tid, unnest(coalesce(r.scores, r.trace.scores)) AS s
      FROM gm_lines WHERE err IS NULL)
""",
]

# A conversation without an id is named by its line's hash (the record-by-record path, which
# numbers its records, names it by its line). ``lid`` tells a line's messages from those of
# another, even of the same text.
_OPENAI_STREAM = [
    """
CREATE OR REPLACE TEMP TABLE gm_omsg AS
SELECT lid, lh, err, conv, user_id, ts_text, i - 1 AS idx, m.role AS role,
    CASE json_type(m.content) WHEN 'VARCHAR' THEN m.content ->> '$'
         WHEN 'ARRAY' THEN array_to_string(json_extract_string(m.content, '$[*].text'), ' ')
    END AS content,
    m.tool_call_id, m.name, m.function_call, m.tool_calls
FROM (
    SELECT lid, lh, err, conv, user_id, ts_text, unnest(msgs) AS m,
           generate_subscripts(msgs, 1) AS i
    FROM (SELECT gen_random_uuid() AS lid, lh, err,
                 coalesce(r.conversation_id, r.id, r.metadata.conversation_id, 'line-' || lh)
                     AS conv,
                 coalesce(r.user, r.user_id, r.metadata.user_id) AS user_id,
                 coalesce(r.created_at, r.created, r.timestamp) AS ts_text,
                 CASE WHEN err IS NULL THEN r.messages ELSE [NULL] END AS msgs
          FROM gm_lines WHERE err IS NOT NULL OR r.messages IS NOT NULL))
""",
    """
INSERT INTO gm_tspan (lh, err) SELECT lh, err FROM gm_omsg WHERE err IS NOT NULL
""",
    """
CREATE OR REPLACE TEMP TABLE gm_ocall AS
WITH calls AS (
    SELECT lid, lh, conv, user_id, ts_text, idx, c.id AS call_id, c.function.name AS fn,
           c.function.arguments AS args
    FROM (SELECT *, unnest(tool_calls) AS c FROM gm_omsg
          WHERE role = 'assistant' AND tool_calls IS NOT NULL)
    UNION ALL
    SELECT lid, lh, conv, user_id, ts_text, idx, 'function_call', function_call.name,
           function_call.arguments
    FROM gm_omsg WHERE role = 'assistant' AND function_call IS NOT NULL
),
results AS (
    SELECT c.lid, c.idx, c.call_id, min(m.idx) AS ridx
    FROM calls c JOIN gm_omsg m ON m.lid = c.lid AND m.idx > c.idx
        AND ((m.role = 'tool' AND m.tool_call_id = c.call_id)
             OR (m.role = 'function' AND c.call_id = 'function_call'
                 AND m.name IS NOT DISTINCT FROM c.fn))
    GROUP BY ALL
)
SELECT c.*, r.ridx, CASE WHEN json_valid(m.content) THEN gm_docs_of(m.content::JSON) END AS docs,
    CASE WHEN json_valid(c.args) THEN gm_query_of(c.args::JSON) END AS arg_query
FROM calls c JOIN results r USING (lid, idx, call_id)
JOIN gm_omsg m ON m.lid = r.lid AND m.idx = r.ridx
""",
    """
INSERT INTO gm_tspan BY NAME
SELECT c.lh, c.conv AS trace_id, lpad(c.idx::VARCHAR, 4, '0') || ':' || c.call_id AS span_id,
    'RETRIEVER' AS kind, c.ts_text, gm_ts(c.ts_text) AS ts, false AS failed,
    c.conv AS session_id, c.user_id,
    coalesce(c.arg_query,
             (SELECT arg_max(u.content, u.idx) FROM gm_omsg u
              WHERE u.lid = c.lid AND u.idx < c.idx AND u.role = 'user')) AS query,
    (SELECT arg_min(a.content, a.idx) FROM gm_omsg a
     WHERE a.lid = c.lid AND a.idx > c.ridx AND a.role = 'assistant'
       AND coalesce(trim(a.content), '') <> '') AS answer,
    gm_items(c.docs) AS items
FROM gm_ocall c
WHERE c.docs IS NOT NULL
""",
    """
INSERT INTO gm_tfb
SELECT coalesce(r.conversation_id, r.id, 'line-' || lh), NULL, coalesce(r.feedback, r.rating),
       NULL
FROM gm_lines WHERE err IS NULL AND coalesce(r.feedback, r.rating) IS NOT NULL
""",
    "DROP TABLE gm_omsg",
    "DROP TABLE gm_ocall",
]

_STREAMED = {
    "openinference": (_struct(_OI_SPAN), [_OI_ANNOTATIONS]),
    "langsmith": (_LS_LINE, _LANGSMITH_STREAM),
    "langfuse": (_LF_LINE, _LANGFUSE_STREAM),
    "openai": (_OA_LINE, _OPENAI_STREAM),
}


def _items_macro(doc_field: str | None) -> str:
    """``gm_items(docs)``: a JSON list of documents as ranked items, as ``events_sql`` makes
    them from gm_tdoc: the id from the first of the id fields a document has (a document that is
    a string or a number is its id), else a hash of its content."""
    fields = [doc_field] if doc_field else list(_ID_FIELDS)
    paths = []
    for f in fields:
        paths.append("'$." + ".".join(f'"{x}"' for x in f.split(".")) + "'")
        if "." in f:  # the dotted name as one key, as the flattened fields also match it
            paths.append(f"'$.\"{f}\"'")
    scalar = "gm_doc_scalar(d), " if "id" in fields else ""
    content = ", ".join(f"'$.\"{f}\"'" for f in _CONTENT_FIELDS)
    return f"""
CREATE OR REPLACE TEMP MACRO gm_doc_scalar(d) AS
    CASE WHEN left(d::VARCHAR, 1) NOT IN ('{{', '[') THEN json_extract_string(d, '$') END;
-- The first of these paths that holds a value that is neither an object nor a list, as text.
CREATE OR REPLACE TEMP MACRO gm_leaf_of(d, paths) AS list_filter(
    list_transform(json_extract(d, paths), lambda v: gm_doc_scalar(v)),
    lambda x: x IS NOT NULL)[1];
CREATE OR REPLACE TEMP MACRO gm_items(docs) AS list_transform(list_transform(
    coalesce(try(from_json(docs, '["JSON"]')), []),
    lambda d: {{'id': coalesce({scalar}gm_leaf_of(d, [{", ".join(paths)}])),
               'content': gm_leaf_of(d, [{content}]),
               'score': try_cast(gm_leaf_of(d, ['$.score']) AS DOUBLE)}}),
    lambda x: {{'id': coalesce(x.id, 'sha256:' || left(sha256(x.content), 16)),
               'hash': sha256(x.content), 'score': x.score,
               'from_content': x.id IS NULL AND x.content IS NOT NULL}});
"""


# Documents given as a JSON list (Langfuse, LangSmith, OpenAI): a string is an id, an object is
# flattened into dotted fields, as the span attributes are.
_DOCS_FROM_JSON = """
INSERT INTO gm_tdoc
SELECT d.sid, d.i - 1, CASE WHEN t.fullkey = '$' THEN 'id' ELSE gm_jkey(t.fullkey) END,
       gm_jtext(t.value, t.type)
FROM (SELECT sid, i, docs[i] AS doc
      FROM (SELECT sid, json_extract(docs, '$[*]') AS docs FROM gm_tdocsrc WHERE docs IS NOT NULL),
           range(1, len(docs) + 1) r(i)) d,
     json_tree(d.doc) t
WHERE t.type NOT IN ('OBJECT', 'ARRAY', 'NULL')
"""

_FORMAT_SQL = {
    "langfuse": _LANGFUSE,
    "langsmith": _LANGSMITH,
    "openai": _OPENAI,
}

_CONTENT_FIELDS = ("content", "page_content", "pageContent", "text")
_ID_FIELDS = ("id", "chunk_id", "metadata.chunk_id", "metadata.id")


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
    if "run_type" in k:
        found.append("langsmith")
    if "messages" in k:
        found.append("openai")
    if not found and {"span_id", "result"} <= k:  # a file of Phoenix span annotations only
        found.append("openinference")
    return found


def _choose(keys: list[str], forced: str | None) -> str | None:
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
    con.execute(MACROS)
    con.execute(_SPAN_TABLE)
    con.execute(_ERRORS)
    if fmt in ("openinference", "otel"):
        if fmt == "openinference":
            con.execute(_PHOENIX_TALL)
            sid_from, records = "line", "gm_raw"
        else:
            con.execute(_OTLP_LINES, {"structure": OTLP_STRUCTURE})
            con.execute(_OTLP_SPANS)
            con.execute(_OTLP_TALL)
            # A rejected span shows its export request's line (the reader's text, no rewrite).
            sid_from, records = (
                "sid",
                "(SELECT sid, line, raw FROM gm_otlp JOIN gm_raw USING (line))",
            )
        con.execute(_EXPAND)
        con.execute(_SPAN_PIVOT.replace("gm_sid_from", sid_from).replace("gm_records", records))
        con.execute(_SPAN_DOCS)
        if fmt == "openinference":
            con.execute(_ANNOTATIONS)
    elif fmt is not None:
        con.execute(_FORMAT_SQL[fmt])
        con.execute(_DOCS_FROM_JSON)


def stream(
    con: duckdb.DuckDBPyConnection, item: InputFile, keys: list[str], state: dict[str, Any]
) -> bool:
    """Stage a JSON lines file straight from disk, in any format (OTLP and OpenInference spans
    through ``_spans_sql``, the others through ``_STREAMED``); False when the format is not
    known (no record could be read), which takes the record-by-record path."""
    if item.format != "jsonl":
        return False
    fmt = _choose(keys, state["forced"])
    if fmt is None:
        return False
    state["format"] = fmt
    con.execute(MACROS)
    con.execute(_OTLP_VALUE)
    con.execute(_SPAN_TABLE)
    params = {"gm_path": str(item.path), "gm_compression": item.compression}
    if fmt == "otel":
        run_sql(con, _spans_sql(_OTLP_ATTRS, state.get("doc_field")),
                {**params, "structure": OTLP_STRUCTURE})  # fmt: skip
        return True
    structure, statements = _STREAMED[fmt]
    if fmt == "openinference":
        statements = [_spans_sql(_OI_ATTRS, state.get("doc_field")), *statements]
    con.execute(_items_macro(state.get("doc_field")))
    con.execute(_OI_FLAT)
    run_sql(con, _LINES, {**params, "structure": structure})
    for sql in statements:
        con.execute(sql)
    con.execute("DROP TABLE gm_lines")
    return True


# The k-th staged row wanting the lines of hash h (counted per event and reason, which repeat
# with the line) takes the ((k - 1) % n + 1)-th of the n lines with that hash.
_WANT_LINES = """
CREATE OR REPLACE TEMP TABLE gm_want AS
SELECT rowid AS rid, gm_lh, event_id, reason FROM gm_stage
WHERE gm_lh IS NOT NULL AND line IS NULL AND (reason IS NOT NULL OR event_id IN (
    SELECT event_id FROM gm_stage WHERE reason IS NULL AND NOT gm_present
    GROUP BY event_id HAVING count(*) > 1))
"""
_MAP_LINES = f"""
CREATE OR REPLACE TEMP TABLE gm_linemap AS
SELECT * FROM (
    SELECT line, raw, hash(raw) AS lh
    FROM (SELECT row_number() OVER () AS line, raw FROM read_csv($gm_path, {RAW_LINE_OPTIONS}))
    WHERE {NOT_BLANK})
WHERE lh IN (SELECT gm_lh FROM gm_want)
"""
_PAIR_LINES = """
CREATE OR REPLACE TEMP TABLE gm_pair AS
WITH w AS (
    SELECT rid, gm_lh,
           row_number() OVER (PARTITION BY gm_lh, event_id, reason ORDER BY rid) AS k
    FROM gm_want
),
l AS (
    SELECT line, raw, lh, row_number() OVER (PARTITION BY lh ORDER BY line) AS j,
           count(*) OVER (PARTITION BY lh) AS n
    FROM gm_linemap
)
SELECT w.rid, l.line, l.raw FROM w JOIN l ON l.lh = w.gm_lh AND l.j = (w.k - 1) % l.n + 1;
"""


def number_lines(con: duckdb.DuckDBPyConnection, item: InputFile, redactor) -> None:
    """Give the streamed rows that need it their line and (redacted) text: the rejected ones,
    and those of an event id the file holds more than once (the first line's row is kept). One
    ordered read of the file, matching lines by their hash; nothing when no row needs it."""
    con.execute(_WANT_LINES)
    if not con.execute("SELECT count(*) FROM gm_want").fetchall()[0][0]:
        con.execute("DROP TABLE gm_want")
        return
    params = {"gm_path": str(item.path), "gm_compression": item.compression}
    run_sql(con, _MAP_LINES, params)
    con.execute(_PAIR_LINES)
    run_sql(
        con,
        f"""UPDATE gm_stage SET line = p.line,
                raw = CASE WHEN gm_stage.reason IS NOT NULL THEN {redactor.nested("p.raw")} END
            FROM gm_pair p WHERE gm_stage.rowid = p.rid""",
        redactor.sql_params(),
    )
    for name in ("gm_want", "gm_linemap", "gm_pair"):
        con.execute(f"DROP TABLE {name}")


def _pick_field(*fields: str) -> str:
    """A document's first field of these (``--doc-id`` checked by ``_doc_field``)."""
    parts = [f"max(val) FILTER (WHERE field = '{f}')" for f in fields]
    return parts[0] if len(parts) == 1 else f"coalesce({', '.join(parts)})"


def events_sql(state: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """One row per retrieval (or unreadable record) with all it takes from its trace."""
    fmt = state.get("format") or state.get("forced") or "traces"
    doc_field = state.get("doc_field")
    the_id = _pick_field(*((doc_field,) if doc_field else _ID_FIELDS))
    content = _pick_field(*_CONTENT_FIELDS)
    # The joins by trace and span run over narrow rows (ids, times, the fields they read); the
    # retrievals' wide columns (documents, raw text) join them once, at the end, by span number.
    # A streamed span has no number: its row id in gm_tspan is one, above any other.
    sql = f"""
    WITH spans AS (
        SELECT coalesce(sid, 100000000000000 + rowid) AS sid, err, trace_id, span_id, parent_id,
               kind, ts, session_id, user_id, output
        FROM gm_tspan
    ),
    retr_ids AS (SELECT DISTINCT trace_id, span_id FROM spans WHERE kind = 'RETRIEVER'),
    ctx AS (
        SELECT trace_id, max(session_id) AS session_id, max(user_id) AS user_id
        FROM spans WHERE trace_id IS NOT NULL AND (session_id IS NOT NULL OR user_id IS NOT NULL)
        GROUP BY trace_id
    ),
    r AS (
        SELECT s.sid, s.trace_id, s.span_id, s.ts, s.session_id, s.user_id FROM spans s
        WHERE s.err IS NOT NULL OR (s.kind = 'RETRIEVER' AND NOT EXISTS (
            SELECT 1 FROM retr_ids p WHERE p.trace_id = s.trace_id AND p.span_id = s.parent_id))
    ),
    llm AS (SELECT trace_id, ts, output FROM spans WHERE kind = 'LLM' AND output IS NOT NULL),
    roots AS (
        SELECT trace_id, max(output) AS output FROM spans
        WHERE kind IN ('TRACE', 'OTHER') AND parent_id IS NULL AND output IS NOT NULL
        GROUP BY trace_id
    ),
    ans AS (
        SELECT r.sid, arg_min(l.output, l.ts) AS answer
        FROM r JOIN llm l ON l.trace_id = r.trace_id
            AND (r.ts IS NULL OR l.ts IS NULL OR l.ts >= r.ts)
        GROUP BY r.sid
    ),
    fbv AS (
        SELECT coalesce(f.trace_id, s.trace_id) AS trace_id, f.span_id,
               f.span_id IS NOT NULL AND f.span_id IN (SELECT span_id FROM retr_ids)
                   AS on_retriever,
               coalesce({thumbs("f.label")},
                        CASE WHEN f.score < 0.5 THEN 'down' WHEN f.score >= 0.5 THEN 'up' END)
                   AS verdict
        FROM gm_tfb f
        LEFT JOIN (SELECT DISTINCT span_id, trace_id FROM spans WHERE span_id IS NOT NULL) s
            ON f.trace_id IS NULL AND s.span_id = f.span_id
    ),
    fb AS (
        SELECT r.sid, CASE WHEN bool_or(f.verdict = 'down') THEN 'down'
                           WHEN bool_or(f.verdict = 'up') THEN 'up' END AS feedback
        FROM r JOIN fbv f ON f.trace_id = r.trace_id
            AND (NOT f.on_retriever OR f.span_id = r.span_id)
        GROUP BY r.sid
    ),
    docs AS (
        SELECT sid, i, {the_id} AS id, {content} AS content,
               try_cast(max(val) FILTER (WHERE field = 'score') AS DOUBLE) AS score
        FROM gm_tdoc GROUP BY sid, i
    ),
    shown AS (
        SELECT sid, list({{
            'id': coalesce(id, 'sha256:' || left(sha256(content), 16)),
            'hash': sha256(content), 'score': score,
            'from_content': id IS NULL AND content IS NOT NULL}} ORDER BY i) AS items
        FROM docs GROUP BY sid
    ),
    found AS MATERIALIZED (
        SELECT r.sid, ans.answer AS gm_llm_answer, roots.output AS gm_root_output,
            coalesce(r.session_id, ctx.session_id) AS gm_session,
            coalesce(r.user_id, ctx.user_id) AS gm_user, fb.feedback AS gm_feedback,
            shown.items AS gm_shown
        FROM r LEFT JOIN ctx USING (trace_id) LEFT JOIN roots USING (trace_id)
        LEFT JOIN ans USING (sid) LEFT JOIN fb USING (sid) LEFT JOIN shown USING (sid)
    )
    SELECT t.*, coalesce(f.gm_llm_answer, t.answer, f.gm_root_output) AS gm_answer,
        f.gm_session, f.gm_user, f.gm_feedback,
        list_filter(coalesce(t.items, f.gm_shown, []), lambda e: e.id IS NOT NULL) AS gm_items,
        $gm_format || ':' || coalesce(t.trace_id, '') || ':' || t.span_id AS gm_event
    FROM (SELECT * REPLACE (coalesce(sid, 100000000000000 + rowid) AS sid) FROM gm_tspan
          WHERE err IS NOT NULL OR kind = 'RETRIEVER') t
    JOIN found f USING (sid)
    """
    return sql, {"gm_format": fmt}


def stage_sql(state: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The rows over the spans reshape or stream made (the events of ``events_sql``, not
    materialized): reason, the search event, the side."""
    fmt = state.get("format") or state.get("forced") or "traces"
    events, _ = events_sql(state)
    sql = """
    SELECT *, reason IS NULL AND gm_stored(event_id) AS gm_present FROM (
    SELECT line, raw, lh AS gm_lh,
        CASE WHEN err IS NOT NULL THEN err
             WHEN span_id IS NULL THEN 'missing span id'
             WHEN failed THEN 'retrieval failed: ' || coalesce(nullif(trim(status_msg), ''),
                                                               'error status')
             WHEN query IS NULL OR trim(query) = '' THEN 'missing query (span ' || span_id || ')'
             WHEN ts_text IS NOT NULL AND ts IS NULL
                 THEN 'unparseable timestamp: ' || left(ts_text, 60)
        END AS reason,
        gm_event AS event_id, 'traces' AS source, ts, gm_session AS session_id,
        gm_user AS user_id, trim(query) AS query,
        list_transform(gm_items, lambda e: e.id) AS result_ids,
        len(gm_items)::INTEGER AS num_results, NULL::VARCHAR[] AS clicked_ids,
        gm_feedback AS feedback, NULL::JSON AS extra,
        $gm_format AS format, trace_id, span_id, parent_id, gm_answer AS answer,
        coalesce(regexp_matches(gm_answer, $gm_dont_know), false) AS dont_know,
        list_transform(gm_items, lambda e: e.score) AS scores,
        list_transform(gm_items, lambda e: e.hash) AS content_hashes,
        len(list_filter(gm_items, lambda e: e.from_content))::INTEGER AS ids_from_content
    FROM (""" + events + """) gm_tev)
    """
    return sql, {"gm_format": fmt, "gm_dont_know": DONT_KNOW}


def store(con: duckdb.DuckDBPyConnection, target: Target, batch_id: int) -> int:
    """The new events into search_events (the anti-join every import uses), and what a trace
    adds to each into trace_retrievals, in the same transaction: the same rows, so the same
    first row of an event id the file holds twice (a window paid only then)."""
    stored = store_new_rows(con, target, batch_id)
    side = ", ".join(SIDE_COLUMNS)
    first = ""
    if repeats(con, target):
        first = "QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY line) = 1"
    con.execute(
        f"""INSERT INTO trace_retrievals (event_id, batch_id, {side})
            SELECT event_id, ?, {side} FROM gm_stage WHERE reason IS NULL AND NOT gm_present
            {first}""",
        [batch_id],
    )
    return stored


def summary(con: duckdb.DuckDBPyConnection, state: dict[str, Any]) -> dict[str, Any]:
    """What the file held besides the rows: its spans, its retrievals, the nested ones (not
    rows), and the documents that had no id (their content hash stands in). A staged row is an
    unreadable record or a retrieval that is not nested, so the nested ones are the retrievals
    that are not rows: one scan of the spans, no join."""
    spans, retrievals, unreadable = con.execute(
        """SELECT count(*) FILTER (WHERE err IS NULL AND kind <> 'TRACE'),
                  count(*) FILTER (WHERE kind = 'RETRIEVER'), count(err)
           FROM gm_tspan"""
    ).fetchall()[0]
    rows, without_id = con.execute(
        "SELECT count(*), coalesce(sum(ids_from_content) FILTER (WHERE reason IS NULL), 0) "
        "FROM gm_stage"
    ).fetchall()[0]
    return {
        "format": state.get("format") or state.get("forced"),
        "spans": spans,
        "retrievals": retrievals,
        "nested_retrievals": retrievals - (rows - unreadable),
        "documents_without_id": int(without_id),
    }


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
        streaming=False,
        reshape=lambda con, keys: reshape(con, keys, state),
        stream=lambda con, item, keys: stream(con, item, keys, state),
        number=number_lines,
        store=store,
        summary=lambda con, batch_id: summary(con, state),
        marks_present=True,
        options={"format": trace_format, "doc_id": doc_id},
    )
