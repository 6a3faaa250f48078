"""OpenInference: Phoenix's span JSON (``context.span_id``, ``span_kind``, ``attributes`` nested
or as dotted keys) and its span annotations (``span_id`` + ``result``).

Its attributes are read by the shared span SQL (``spans``); this module says how a record becomes
that table's input, record by record (a tall table of dotted keys) or streamed from the file.
"""

from __future__ import annotations

from goldmine.ingest.traces import spans

# ---- OpenInference (Phoenix span JSON) and OTLP: spans as a tall table of dotted keys.

TALL = """
CREATE OR REPLACE TEMP TABLE gm_tattr AS
SELECT r.line AS sid, gm_jkey(t.fullkey) AS key, gm_jtext(t.value, t.type) AS val
FROM (SELECT line, raw::JSON AS j FROM gm_raw WHERE err IS NULL) r, json_tree(r.j) t
WHERE t.type NOT IN ('OBJECT', 'ARRAY', 'NULL')
"""

# Phoenix's span JSON, parsed into ``gm_lines`` (``spans.LINES``): the attributes, nested objects or
# dotted keys, flattened into dotted keys (six levels: ``retrieval.documents.0.document.
# metadata.chunk_id``); the span's kind and conversation, where only the span has them, after
# the attributes (the first of a key is the one read). Span annotations are feedback, not spans.
_SPAN = {
    "context": {"span_id": "VARCHAR", "trace_id": "VARCHAR"}, "span_id": "VARCHAR",
    "trace_id": "VARCHAR", "parent_id": "VARCHAR", "parent_span_id": "VARCHAR",
    "span_kind": "VARCHAR", "start_time": "VARCHAR", "start_time_ns": "VARCHAR",
    "status_code": "VARCHAR", "status_message": "VARCHAR",
    "conversation": {"conversation_id": "VARCHAR"}, "result": {"label": "VARCHAR",
                                                               "score": "VARCHAR"},
    "attributes": "JSON",
}  # fmt: skip
LINE = spans.json_structure(_SPAN)

FLAT_MACROS = r"""
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

ATTRS = """
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

STREAM_ANNOTATIONS = """
INSERT INTO gm_tfb
SELECT NULL, coalesce(r.span_id, r.context.span_id), r.result.label,
       try_cast(r.result.score AS DOUBLE)
FROM gm_lines WHERE err IS NULL AND (r.result.label IS NOT NULL OR r.result.score IS NOT NULL)
"""

ANNOTATIONS = f"""
INSERT INTO gm_tfb
SELECT NULL, {spans.pick("span_id", "context.span_id")}, {spans.pick("result.label")},
       try_cast({spans.pick("result.score")} AS DOUBLE)
FROM gm_tattr GROUP BY sid HAVING {spans.IS_ANNOTATION}
"""
