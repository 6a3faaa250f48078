"""LangSmith: runs (``run_type`` = ``retriever``, ``outputs.documents``) and feedback records
(``run_id`` + ``key``).

Decoded into the shared span table (``spans``), record by record or streamed from the file.
"""

from __future__ import annotations

from goldmine.ingest.traces import spans

# ---- LangSmith: runs, and feedback records (run_id + key).

RECORDS = """
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

LINE = spans.json_structure({
    "id": "VARCHAR", "trace_id": "VARCHAR", "parent_run_id": "VARCHAR", "run_type": "VARCHAR",
    "start_time": "VARCHAR", "error": "VARCHAR", "extra": "JSON", "inputs": "JSON",
    "outputs": "JSON", "feedback_stats": "JSON", "run_id": "VARCHAR", "key": "VARCHAR",
    "value": "VARCHAR", "score": "VARCHAR",
})  # fmt: skip

# An unreadable line is a row of ``gm_lines`` with its reader error (``err``) and no fields.
STREAM = [
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
