"""Langfuse: traces with their observations and scores (observations of type ``RETRIEVER``, or
spans named so), or records that are observations themselves.

Decoded into the shared span table (``spans``), record by record or streamed from the file.
"""

from __future__ import annotations

from goldmine.ingest.traces import spans

# ---- Langfuse: trace records with observations and scores, or observation records.

# A trace's own fields sit at the top of its record, or under ``trace`` beside the observations
# (``{"trace": {…}, "observations": […]}``, as Langfuse's repository keeps exported traces).
RECORDS = """
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

_OBS = {
    "id": "VARCHAR", "traceId": "VARCHAR", "type": "VARCHAR", "name": "VARCHAR",
    "startTime": "VARCHAR", "parentObservationId": "VARCHAR", "level": "VARCHAR",
    "statusMessage": "VARCHAR", "input": "JSON", "output": "JSON",
}  # fmt: skip

_SCORE = {"traceId": "VARCHAR", "observationId": "VARCHAR", "stringValue": "VARCHAR",
             "value": "VARCHAR"}  # fmt: skip

LINE = spans.json_structure({
    **_OBS, "sessionId": "VARCHAR", "userId": "VARCHAR", "observations": [_OBS],
    "scores": [_SCORE],
    "trace": {"id": "VARCHAR", "sessionId": "VARCHAR", "userId": "VARCHAR", "output": "JSON",
              "scores": [_SCORE]},
})  # fmt: skip

_BARE = ", ".join(f"'{k}': r.{k}" for k in _OBS)

STREAM = [
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
               CASE WHEN err IS NULL THEN {{{_BARE}}} END
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
