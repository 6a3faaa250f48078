"""User Behavior Insights (UBI) into ``search_events``, read natively.

``ubi_queries`` gives the query, its time, client and the hit ids shown; ``ubi_events`` gives
the clicks, joined to their query by ``query_id``. Both the o19s/ubi ``schema/1.3.0`` spellings
and the OpenSearch plugin's mapping are read (``event_attributes.object.object_id`` nested or as
a dotted key; ``position.ordinal`` or ``position.index``), from JSON, JSONL/NDJSON or an
OpenSearch ``_search`` dump.
"""

from __future__ import annotations

import hashlib
from typing import Any

import duckdb

from goldmine.errors import InputError, error_line
from goldmine.ingest.batch import Source
from goldmine.ingest.files import InputFile, check_json, run_sql
from goldmine.ingest.formats import read_raw
from goldmine.ingest.redact import Redactor
from goldmine.ingest.searchlog import COLUMNS
from goldmine.ingest.target import Target
from goldmine.text import sha256_file

_OBJECT_ID = [
    "$.event_attributes.object.object_id",
    '$."event_attributes.object.object_id"',
    "$.event_attributes.object.id",
    "$.event_attributes.object_id",
    "$.object_id",
]
_ORDINAL = [
    "$.event_attributes.position.ordinal",
    '$."event_attributes.position.ordinal"',
    "$.event_attributes.position.index",
    '$."event_attributes.position.index"',
    "$.event_attributes.position",
]

_EVENTS = """
CREATE OR REPLACE TEMP TABLE gm_ubi_events AS
SELECT line, raw, err,
       CASE WHEN err IS NULL THEN raw ->> '$.query_id' END AS query_id,
       CASE WHEN err IS NULL THEN lower(raw ->> '$.action_name') END AS action,
       CASE WHEN err IS NULL THEN gm_ts(raw ->> '$.timestamp') END AS ts,
       CASE WHEN err IS NULL THEN raw ->> '$.session_id' END AS session_id,
       CASE WHEN err IS NULL THEN raw ->> '$.user_id' END AS user_id,
       CASE WHEN err IS NULL THEN list_filter(json_extract_string(raw, $object_paths),
                                              lambda x: x IS NOT NULL)[1] END AS object_id,
       CASE WHEN err IS NULL THEN try_cast(list_filter(json_extract_string(raw, $ordinal_paths),
                                  lambda x: try_cast(x AS INTEGER) IS NOT NULL)[1] AS INTEGER)
       END AS ordinal
FROM gm_raw
"""

_STAGE = """
WITH clicks AS (
    SELECT query_id,
           list(object_id ORDER BY ts, ordinal, line)
               FILTER (WHERE action IN (SELECT unnest($click_actions)) AND object_id IS NOT NULL)
               AS clicked_ids,
           first(session_id ORDER BY ts) FILTER (WHERE session_id IS NOT NULL) AS session_id,
           first(user_id ORDER BY ts) FILTER (WHERE user_id IS NOT NULL) AS user_id
    FROM gm_ubi_events WHERE err IS NULL AND query_id IS NOT NULL
    GROUP BY query_id
),
q AS (
    SELECT line, raw, err,
           CASE WHEN err IS NULL THEN json_extract_string(raw, ['$.query_id', '$.user_query',
               '$.timestamp', '$.client_id', '$.query_response_hit_ids',
               '$.query_attributes.session_id', '$.user_id']) END AS v,
           CASE WHEN err IS NULL THEN json_type(raw, '$.user_query') END AS query_type
    FROM gm_raw
),
qt AS (SELECT *, gm_ts(v[3]) AS t, gm_ids(v[5]) AS shown FROM q
)
SELECT q.line, q.raw,
    CASE WHEN q.err IS NOT NULL THEN q.err
         WHEN v[1] IS NULL THEN 'missing query_id'
         WHEN gm_no_query(v[2]) THEN 'missing query'
         WHEN query_type <> 'VARCHAR' THEN 'wrong type: user_query is ' || gm_jtype(query_type)
         WHEN v[3] IS NOT NULL AND t IS NULL
             THEN 'unparseable timestamp: ' || left(v[3], 60)
         WHEN NOT gm_in_time(t) THEN 'timestamp out of range: ' || left(v[3], 60)
    END AS reason,
    v[1] AS event_id,
    'ubi' AS source,
    t AS ts,
    coalesce(c.session_id, v[6]) AS session_id,
    coalesce(v[7], c.user_id, v[4]) AS user_id,
    trim(v[2]) AS query,
    shown AS result_ids,
    len(shown)::INTEGER AS num_results,
    coalesce(list_filter(c.clicked_ids, lambda x, i: list_position(c.clicked_ids, x) = i), [])
        AS clicked_ids,
    NULL::VARCHAR AS feedback,
    CASE WHEN q.err IS NULL THEN json_object(
        'application', raw -> '$.application',
        'query_response_id', raw -> '$.query_response_id',
        'query_attributes', raw -> '$.query_attributes')::VARCHAR END AS extra
FROM qt q LEFT JOIN clicks c ON c.query_id = q.v[1]
"""


def target(click_actions: list[str], events_path: str, redactor: Redactor) -> Target:
    """Rows are the queries (rows in = queries); the events file's own bad records are kept in
    ``rejects`` under its path and counted apart (``events_rejected``)."""
    actions = [a.lower() for a in click_actions]

    def summary(con: duckdb.DuckDBPyConnection, batch_id: int) -> dict[str, Any]:
        raw = redactor.nested("raw")
        run_sql(
            con,
            f"INSERT INTO rejects (batch_id, path, line, reason, raw) SELECT $batch, $path, line, "
            f"'ubi_events: ' || err, {raw} FROM gm_ubi_events WHERE err IS NOT NULL ORDER BY line",
            {"batch": batch_id, "path": events_path, **redactor.sql_params()},
        )
        n, bad, objects = con.execute(
            "SELECT count(*), count(err), count(object_id) FROM gm_ubi_events"
        ).fetchall()[0]
        return {"events_in": n, "events_rejected": bad, "events_with_object": objects}

    return Target(
        source="ubi",
        table="search_events",
        key=("event_id",),
        columns=COLUMNS,
        stage=lambda keys: (_STAGE, {"click_actions": actions}),
        redact=("query", "user_id", "feedback", "extra"),
        pseudonymize=("session_id",),
        pseudonymize_lists=("result_ids", "clicked_ids"),
        summary=summary,
    )


def source(con: duckdb.DuckDBPyConnection, queries: InputFile, events: InputFile) -> Source:
    """Both files as one batch: events are read first and kept aside, then the queries."""
    digest = hashlib.sha256(
        (sha256_file(queries.path) + sha256_file(events.path)).encode()
    ).hexdigest()

    def read(con: duckdb.DuckDBPyConnection) -> None:
        read_raw(con, events)
        check_json(con)
        try:
            con.execute(_EVENTS, {"object_paths": _OBJECT_ID, "ordinal_paths": _ORDINAL})
        except duckdb.Error as exc:
            said = error_line(exc)
            raise InputError(f"cannot read UBI events: {said}", path=events.path) from exc
        read_raw(con, queries)
        check_json(con)

    size = queries.path.stat().st_size + events.path.stat().st_size
    return Source(str(queries.path), f"ubi:{queries.label}+{events.label}", size, digest, read)
