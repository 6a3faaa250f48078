"""Search logs into ``search_events``: one row per search as shown to the user.

Field names vary between systems, so common aliases are mapped (``q``, ``timestamp``, ``hits``, …)
and ``--map field=column`` names the rest. A log without event ids gets a stable id from the
row's content, so the same search imported twice is still recognised.
"""

from __future__ import annotations

from typing import Any

from goldmine.errors import InputError
from goldmine.ingest.batch import LINE_HASH, Target
from goldmine.ingest.fields import field_access, ids, resolve_fields, typ, val

ALIASES: dict[str, tuple[str, ...]] = {
    "event_id": ("event_id", "eventid", "id", "search_id", "request_id", "query_id", "_id"),
    "ts": ("ts", "timestamp", "time", "datetime", "created_at", "event_time", "@timestamp", "date"),
    "session_id": ("session_id", "sid", "session", "sessionid"),
    "user_id": ("user_id", "uid", "user", "userid", "client_id", "visitor_id", "customer_id"),
    "query": (
        "query",
        "q",
        "query_text",
        "search_term",
        "search_query",
        "user_query",
        "term",
        "keywords",
        "querystring",
    ),
    "result_ids": (
        "result_ids",
        "results",
        "hits",
        "shown",
        "shown_ids",
        "doc_ids",
        "documents",
        "result_list",
        "query_response_hit_ids",
    ),
    "num_results": (
        "num_results",
        "n_results",
        "result_count",
        "results_count",
        "total_hits",
        "num_hits",
        "hit_count",
        "nresults",
    ),
    "clicked_ids": ("clicked_ids", "clicks", "clicked", "clicked_docs", "click_ids"),
    "feedback": ("feedback", "rating", "thumbs", "vote"),
}

COLUMNS = (
    "event_id",
    "source",
    "ts",
    "session_id",
    "user_id",
    "query",
    "result_ids",
    "num_results",
    "clicked_ids",
    "feedback",
    "extra",
)

_LISTS = "('ARRAY', 'VARCHAR', 'NULL')"


_TYPED = ("query", "result_ids", "clicked_ids")


def _unless_known(expr: str) -> str:
    # A row whose event_id is already stored needs only its key, reason and ts (the watermark):
    # the already-stored check comes first, so an overlapping file's old half skips the rest.
    return f"CASE WHEN gm_known THEN NULL ELSE {expr} END"


def stage_sql(keys: list[str], mapping: dict[str, str], source: str) -> tuple[str, dict[str, Any]]:
    fields = resolve_fields(keys, ALIASES, mapping)
    if keys and "query" not in fields:
        raise InputError(
            f"no query field (looked for {', '.join(ALIASES['query'])}; "
            f"found {', '.join(keys[:12])}); name it with --map query=COLUMN"
        )
    known = {k for names in fields.values() for k in names}
    access, params = field_access(fields, [k for k in keys if k not in known], _TYPED)
    params["gm_source"] = source
    q, ts = val(fields, "query"), val(fields, "ts")
    num = val(fields, "num_results")
    count = f"try_cast(try_cast({num} AS DOUBLE) AS INTEGER)"
    content = ", ".join(
        f"coalesce({val(fields, n)}, '')"
        for n in ("ts", "session_id", "user_id", "query", "result_ids", "clicked_ids")
    )
    sql = f"""
        SELECT * EXCLUDE (gm_known) REPLACE (
            coalesce(num_results, len(result_ids))::INTEGER AS num_results),
            reason IS NULL AND gm_known AS gm_present
        FROM (
        SELECT line, raw,
            CASE WHEN gm_seen THEN NULL
                 WHEN err IS NOT NULL THEN err
                 WHEN {q} IS NULL OR trim({q}) = '' THEN 'missing query'
                 WHEN {typ(fields, "query")} <> 'VARCHAR'
                     THEN 'wrong type: query is ' || gm_jtype({typ(fields, "query")})
                 WHEN {ts} IS NOT NULL AND gm_t IS NULL
                     THEN 'unparseable timestamp: ' || left({ts}, 60)
                 WHEN {typ(fields, "result_ids")} NOT IN {_LISTS}
                     THEN 'wrong type: result_ids is ' || gm_jtype({typ(fields, "result_ids")})
                 WHEN {typ(fields, "clicked_ids")} NOT IN {_LISTS}
                     THEN 'wrong type: clicked_ids is ' || gm_jtype({typ(fields, "clicked_ids")})
                 WHEN {num} IS NOT NULL AND try_cast({num} AS DOUBLE) IS NULL
                     THEN 'wrong type: num_results is not a number: ' || left({num}, 40)
                 WHEN {num} IS NOT NULL AND {count} IS NULL
                     THEN 'wrong type: num_results is out of range: ' || left({num}, 40)
            END AS reason,
            gm_key AS event_id,
            $gm_source AS source,
            gm_t AS ts,
            {_unless_known(val(fields, "session_id"))} AS session_id,
            {_unless_known(val(fields, "user_id"))} AS user_id,
            {_unless_known(f"trim({q})")} AS query,
            {_unless_known(ids(fields, "result_ids"))} AS result_ids,
            {_unless_known(count)} AS num_results,
            {_unless_known(ids(fields, "clicked_ids"))} AS clicked_ids,
            {_unless_known(val(fields, "feedback"))} AS feedback,
            {_unless_known("x")} AS extra,
            gm_line AS {LINE_HASH},
            gm_seen,
            gm_known
        FROM (
            SELECT *, gm_seen OR gm_stored(gm_key) AS gm_known
            FROM (
                SELECT *, gm_ts({ts}) AS gm_t,
                       CASE WHEN NOT gm_seen THEN coalesce({val(fields, "event_id")},
                           'h-' || gm_content_hash(concat_ws(chr(31), {content}))) END AS gm_key
                FROM ({access}))))
    """
    return sql, params


def target(mapping: dict[str, str] | None = None, source: str = "searchlog") -> Target:
    return Target(
        source=source,
        table="search_events",
        key=("event_id",),
        # A line already stored is known by its hash, unparsed (a weekly file's old half).
        columns=(*COLUMNS, LINE_HASH),
        stage=lambda keys: stage_sql(keys, mapping or {}, source),
        marks_present=True,
        # Ids can be emails or phone numbers; a session id keeps its sessions apart.
        redact=("query", "user_id", "feedback", "extra"),
        pseudonymize=("session_id",),
    )
