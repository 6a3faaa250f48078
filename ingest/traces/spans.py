"""The one span table every trace format decodes into, and the SQL the formats share.

Each format's module (``openinference``, ``otlp``, ``langfuse``, ``langsmith``, ``openai``) only
says how its records become rows of ``gm_tspan`` (spans), ``gm_tdoc`` (their documents as
flattened fields) and ``gm_tfb`` (feedback); everything read the same way whatever the format is
here, once: the JSON macros, the span table, the span attributes' reading (OpenInference and the
OpenTelemetry GenAI conventions, from OTLP or Phoenix alike), documents as ranked items, and the
parse of a JSON lines file into ``gm_lines``.
"""

from __future__ import annotations

import json
from typing import Any

from goldmine.ingest.files import NOT_BLANK, OBJECT, RAW_LINE_OPTIONS

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
SPAN_TABLE = """
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
ERRORS = """
INSERT INTO gm_tspan (sid, line, raw, err)
SELECT -line, line, raw, err FROM gm_raw WHERE err IS NOT NULL
"""

# ---- OTLP/JSON lines streamed from the file: one parallel parse, one row per span with only
# the attributes read. A span's attributes become two lists (keys, values as text) once, and
# every attribute is then found by position in the keys (``list_position``); extracting the
# attribute structs one by one, or a tall table of them, costs several times the parse. No raw
# text is kept: a rejected row gets its line and text from an ordered second read
# (``number_lines``), by the hash of its line, only when rows are rejected.
ATTR_MACROS = """
CREATE OR REPLACE TEMP MACRO gm_av(v) AS coalesce(v.stringValue, v.intValue,
    v.doubleValue::VARCHAR, v.boolValue::VARCHAR,
    CASE WHEN v.arrayValue IS NOT NULL OR v.kvlistValue IS NOT NULL
         THEN gm_otlp_value(to_json(v)) END);
CREATE OR REPLACE TEMP MACRO gm_at(k, v, name) AS v[list_position(k, name)];
CREATE OR REPLACE TEMP MACRO gm_json_at(k, v, name) AS CASE
    WHEN left(ltrim(gm_at(k, v, name)), 1) IN ('{', '[') THEN try(gm_at(k, v, name)::JSON) END;
"""


def spans_sql(attrs: str, doc_field: str | None) -> str:
    """The span rows, into gm_tspan, of ``attrs`` (``otlp.ATTRS``, ``openinference.ATTRS``)."""
    fields = [doc_field] if doc_field else list(ID_FIELDS)
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
    oi_content = ", ".join(f"gm_at(k, v, p || '{f}')" for f in CONTENT_FIELDS)
    gen_content = ", ".join(f"'$.{f}'" for f in CONTENT_FIELDS)
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
EXPAND = r"""
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


def pick(*keys: str) -> str:
    """The value of the first of these keys a span has (this module's constants only)."""
    parts = [f"max(val) FILTER (WHERE key = '{k}')" for k in keys]
    return parts[0] if len(parts) == 1 else f"coalesce({', '.join(parts)})"


IS_ANNOTATION = "bool_or(key IN ('result.label', 'result.score'))"

SPAN_PIVOT = f"""
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
        {pick("context.span_id", "span_id")} AS span_id,
        {pick("context.trace_id", "trace_id")} AS trace_id,
        nullif({pick("parent_id", "parent_span_id")}, '') AS parent_id,
        upper({pick("attributes.openinference.span.kind", "span_kind")}) AS kind_oi,
        lower({pick("attributes.gen_ai.operation.name")}) AS op,
        {pick("start_time")} AS ts_text,
        {pick("start_time_ns")} AS ts_ns,
        {pick("status_code")} AS status,
        {pick("status_message")} AS status_msg,
        {
    pick(
        "attributes.session.id", "attributes.gen_ai.conversation.id", "conversation.conversation_id"
    )
} AS session_id,
        {pick("attributes.user.id", "attributes.enduser.id")} AS user_id,
        coalesce({
    pick(
        "attributes.gen_ai.retrieval.query.text",
        "attributes.input.value.query",
        "attributes.input.value.query_str",
        "attributes.input.value.input",
        "attributes.input.value.question",
    )
},
                 CASE WHEN left(ltrim({pick("attributes.input.value")}), 1) <> '{{'
                      THEN {pick("attributes.input.value")} END) AS query,
        coalesce({
    pick(
        "attributes.llm.output_messages.0.message.content",
        "attributes.gen_ai.output.messages.0.parts.0.content",
        "attributes.gen_ai.completion.0.content",
        "attributes.output.value.answer",
        "attributes.output.value.output",
        "attributes.output.value.response",
        "attributes.output.value.content",
    )
},
                 CASE WHEN left(ltrim({pick("attributes.output.value")}), 1) NOT IN ('{{', '[')
                      THEN {pick("attributes.output.value")} END) AS output
    FROM gm_tattr WHERE NOT contains(key, 'retrieval.documents.')
    GROUP BY sid HAVING NOT {IS_ANNOTATION}
) p
LEFT JOIN (SELECT gm_sid_from AS sid, line, raw FROM gm_records) r USING (sid)
"""

SPAN_DOCS = f"""
INSERT INTO gm_tdoc
SELECT sid, m.i::INTEGER, m.field, val
FROM (SELECT sid, regexp_extract(key, '{_DOC_KEY}', ['i', 'field']) AS m, val FROM gm_tattr
      WHERE contains(key, 'retrieval.documents.'))
WHERE m.i <> ''
"""

# ---- The record-by-record formats streamed from a JSON lines file: one parallel pass straight
# from the file parses each line once into only the fields goldmine reads (``gm_lines``: the
# line's hash, its reader error, the fields as a typed struct, JSON where a value may take any
# shape; a temp table, which spills under the memory limit), and the spans (their documents as
# ranked items) and the feedback are made from that. Reading the file again for each of them
# instead parses it several times and needs more memory, not less: the reader's buffers and the
# parse then share the limit with the documents' JSON. No raw text is kept: a rejected row gets
# its line and text from ``number_lines``, as a streamed OTLP span does.
LINES = f"""
CREATE OR REPLACE TEMP TABLE gm_lines AS
SELECT lh, CASE WHEN r IS NULL OR NOT gm_object THEN CASE WHEN NOT json_valid(raw)
           THEN 'malformed JSON' WHEN json_type(raw) <> 'OBJECT' THEN 'not a JSON object'
       END END AS err, CASE WHEN gm_object THEN r END AS r
FROM (SELECT hash(raw) AS lh, raw, {OBJECT} AS gm_object,
             try(json_transform(raw, $structure)) AS r
      FROM read_csv($gm_path, {RAW_LINE_OPTIONS}) WHERE {NOT_BLANK})
"""


def json_structure(fields: dict[str, Any]) -> str:
    """A json_transform structure: {name: type or nested structure}."""
    return json.dumps(fields, separators=(",", ":"))


def items_macro(doc_field: str | None) -> str:
    """``gm_items(docs)``: a JSON list of documents as ranked items, as ``events_sql`` makes
    them from gm_tdoc: the id from the first of the id fields a document has (a document that is
    a string or a number is its id), else a hash of its content."""
    fields = [doc_field] if doc_field else list(ID_FIELDS)
    paths = []
    for f in fields:
        paths.append("'$." + ".".join(f'"{x}"' for x in f.split(".")) + "'")
        if "." in f:  # the dotted name as one key, as the flattened fields also match it
            paths.append(f"'$.\"{f}\"'")
    scalar = "gm_doc_scalar(d), " if "id" in fields else ""
    content = ", ".join(f"'$.\"{f}\"'" for f in CONTENT_FIELDS)
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
DOCS_FROM_JSON = """
INSERT INTO gm_tdoc
SELECT d.sid, d.i - 1, CASE WHEN t.fullkey = '$' THEN 'id' ELSE gm_jkey(t.fullkey) END,
       gm_jtext(t.value, t.type)
FROM (SELECT sid, i, docs[i] AS doc
      FROM (SELECT sid, json_extract(docs, '$[*]') AS docs FROM gm_tdocsrc WHERE docs IS NOT NULL),
           range(1, len(docs) + 1) r(i)) d,
     json_tree(d.doc) t
WHERE t.type NOT IN ('OBJECT', 'ARRAY', 'NULL')
"""

CONTENT_FIELDS = ("content", "page_content", "pageContent", "text")

ID_FIELDS = ("id", "chunk_id", "metadata.chunk_id", "metadata.id")
