"""OpenAI chat logs (``messages``): each tool call whose result lists chunk ids is a retrieval.

A chat log has no spans: its messages are put in order and each tool call with its result becomes
a retriever span of the shared span table (``spans``), the next assistant reply its answer.
"""

from __future__ import annotations

from goldmine.ingest.traces import spans

# ---- OpenAI chat logs: messages in order; a tool call whose result lists ids is a retrieval.

RECORDS = """
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

_CALL = {"name": "VARCHAR", "arguments": "VARCHAR"}

LINE = spans.json_structure({
    "conversation_id": "VARCHAR", "id": "VARCHAR", "user": "VARCHAR", "user_id": "VARCHAR",
    "metadata": {"conversation_id": "VARCHAR", "user_id": "VARCHAR"},
    "created_at": "VARCHAR", "created": "VARCHAR", "timestamp": "VARCHAR",
    "feedback": "VARCHAR", "rating": "VARCHAR",
    "messages": [{"role": "VARCHAR", "content": "JSON", "tool_call_id": "VARCHAR",
                  "name": "VARCHAR", "function_call": _CALL,
                  "tool_calls": [{"id": "VARCHAR", "function": _CALL}]}],
})  # fmt: skip

# A conversation without an id is named by its line's hash (the record-by-record path, which
# numbers its records, names it by its line). ``lid`` tells a line's messages from those of
# another, even of the same text.
STREAM = [
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
