"""OTLP/JSON export requests (``resourceSpans`` → ``scopeSpans`` → ``spans``, attributes as
key/value lists), with OpenInference attributes or the OpenTelemetry GenAI conventions.

The attributes, once out of their key/value lists, are read by the shared span SQL (``spans``),
as Phoenix's are; this module holds only the OTLP nesting.
"""

from __future__ import annotations

from goldmine.ingest.files import NOT_BLANK, OBJECT, RAW_LINE_OPTIONS

# One typed parse per line: the nesting and the span fields goldmine reads, attribute values
# by their OTLP/JSON kind (arrays and key/value lists kept as JSON, turned to JSON text below).
_ANY = (
    '{"stringValue":"VARCHAR","intValue":"VARCHAR","doubleValue":"DOUBLE",'
    '"boolValue":"BOOLEAN","arrayValue":"JSON","kvlistValue":"JSON"}'
)

OTLP_STRUCTURE = (
    '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"VARCHAR","spanId":"VARCHAR",'
    '"parentSpanId":"VARCHAR","name":"VARCHAR","startTimeUnixNano":"VARCHAR",'
    '"status":{"code":"VARCHAR","message":"VARCHAR"},'
    f'"attributes":[{{"key":"VARCHAR","value":{_ANY}}}]}}]}}]}}]}}'
)

REQUESTS = """
CREATE OR REPLACE TEMP TABLE gm_otlp_lines AS
SELECT line, raw, try(json_transform(raw, $structure)) AS r FROM gm_raw WHERE err IS NULL
"""

SPANS = """
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

TALL = """
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

# The spans of an OTLP/JSON lines file (``$gm_path``): ``attrs`` has a row per span with its
# fields and its attributes as two lists, as ``spans.spans_sql`` reads them.
ATTRS = f"""
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
