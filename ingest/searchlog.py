"""Search logs into ``search_events``: one row per search as shown to the user.

Field names vary between systems, so common aliases are mapped (``q``, ``timestamp``, ``hits``, …)
and ``--map field=column`` names the rest. A log without event ids gets a stable id from the
row's content, so the same search imported twice is still recognised.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

import duckdb

from goldmine.errors import InputError
from goldmine.ingest import analytics, batch
from goldmine.ingest.batch import LINE_HASH, ImportResult, in_file_error
from goldmine.ingest.fields import field_access, ids, resolve_fields, typ, val, val_of
from goldmine.ingest.files import InputFile
from goldmine.ingest.logformats import (
    AmbiguousDates,
    access_skipped,
    check_dates,
    check_ts_format,
    header,
)
from goldmine.ingest.redact import Redactor
from goldmine.ingest.target import Target

# What --map may name beside ALIASES' fields: an aggregated export's columns (ingest.analytics).
EXPORT_PARTS = analytics.MAP_PARTS + analytics.MAP_ALSO

ALIASES: dict[str, tuple[str, ...]] = {
    "event_id": (
        "event_id",
        "eventid",
        "id",
        "search_id",
        "request_id",
        "query_id",
        "_id",
        "search_query_uid",
    ),  # Coveo's  # fmt: skip
    # after goldmine's own: GA4's BigQuery export (event_timestamp, user_pseudo_id,
    # ga_session_id), Segment (received_at, anonymous_id), Mixpanel (distinct_id), Amplitude
    # (event_time, device_id) and warehouse tables' names
    "ts": (
        "ts",
        "timestamp",
        "time",
        "datetime",
        "created_at",
        "event_time",
        "@timestamp",
        "date",
        "event_timestamp",
        "event_ts",
        "search_time",
        "searched_at",
        "occurred_at",
        "received_at",
        "sent_at",
        "client_event_time",
        "logged_at",
        "time_stamp",
    ),
    "session_id": (
        "session_id",
        "sid",
        "session",
        "sessionid",
        "ga_session_id",
        "visit_id",
        "visitid",
    ),
    "user_id": (
        "user_id",
        "uid",
        "user",
        "userid",
        "client_id",
        "visitor_id",
        "customer_id",
        "user_pseudo_id",
        "anonymous_id",
        "anonymousid",
        "distinct_id",
        "device_id",
    ),
    # user_query first: OpenSearch's UBI writes the user's words there and the search's DSL
    # (JSON text) as "query"
    "query": (
        "user_query",
        "query",
        "q",
        "query_text",
        "search_term",
        "search_query",
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
        "nb_hits",  # Algolia's nbHits
        "estimated_total_hits",  # Meilisearch's estimatedTotalHits
    ),
    # then a click event's: Algolia Insights' objectIDs, Coveo's documentUri
    "clicked_ids": (
        "clicked_ids",
        "clicks",
        "clicked",
        "clicked_docs",
        "click_ids",
        "object_ids",
        "document_uri",
    ),  # fmt: skip
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


# Names an export gives a column of how many results a search found as often as a list of them.
COUNTED_RESULTS = ("results", "hits")
_NUMBER_TYPES = "('UBIGINT', 'BIGINT', 'HUGEINT', 'DOUBLE')"


def _event_map(mapping: dict[str, str]) -> dict[str, str]:
    """--map's search-event fields, an export's parts left out (a file of no records has no
    keys to tell it an export by)."""
    parts = analytics.MAP_PARTS + analytics.MAP_ALSO
    return {k: v for k, v in mapping.items() if k not in parts}


def may_count_results(fields: dict[str, list[str]]) -> bool:
    """Whether the results field may hold counts: the file has no count of its own and the
    field is named as exports name a count (both engines then test its values)."""
    names = [str(k).lower() for k in fields.get("result_ids", [])]
    return "num_results" not in fields and any(n in COUNTED_RESULTS for n in names)


def _counted_results(fields: dict[str, list[str]]) -> str:
    """SQL: the results field holds counts, not ids ("Results": 0, "hits": 9), where the file
    has no count of its own, the field is named as exports name a count, and every value the
    file gives it is a whole number (a file of one numeric id a row is ids); else ``false``."""
    if not may_count_results(fields):
        return "false"
    value, kind = val(fields, "result_ids"), typ(fields, "result_ids")
    number = f"{kind} IN {_NUMBER_TYPES} OR regexp_full_match(trim({value}), '[0-9]+')"
    return f"coalesce(bool_and(CASE WHEN {value} IS NOT NULL THEN {number} END) OVER (), false)"


def _not_ids(fields: dict[str, list[str]], name: str) -> str:
    """SQL: the field holds no list of ids: not a list, a string or null, nor a search
    service's response stored whole with its list of results (``gm_result_list``)."""
    kind = typ(fields, name)
    response = f"CASE WHEN {kind} = 'OBJECT' THEN gm_result_list({val(fields, name)}) END"
    return f"({kind} NOT IN {_LISTS} AND {response} IS NULL)"


def _unless_known(expr: str) -> str:
    # A row whose event_id is already stored needs only its key, reason and ts (the watermark):
    # the already-stored check comes first, so an overlapping file's old half skips the rest.
    return f"CASE WHEN gm_known THEN NULL ELSE {expr} END"


def _unless_seen(expr: str) -> str:
    # A click log's stored search keeps its clicks (and the extra that holds their ranks and
    # times) from a changed line: an export made again may hold clicks that came in since
    # (merge_clicks). Only a click log's: elsewhere an already stored row's extra, redacted, cost
    # a whole import's time on an overlapping file.
    return f"CASE WHEN gm_seen THEN NULL ELSE {expr} END"


def merge_clicks(con: duckdb.DuckDBPyConnection, _batch_id: int) -> dict[str, int]:
    """Add the clicks a file gives a stored search since: where the file's record of a search
    already stored holds every click stored and more (a click log exported again after more
    clicks came in, its searches keyed by user, query and time), the stored clicks and extra
    become the file's. Anything else about the stored search stays; a record with fewer or
    other clicks changes nothing."""
    added = con.execute(
        """UPDATE search_events e SET clicked_ids = s.clicked_ids, extra = s.extra
           FROM (SELECT * FROM gm_stage WHERE gm_present AND reason IS NULL
                 QUALIFY count(*) OVER (PARTITION BY event_id) = 1) s
           WHERE e.event_id = s.event_id
             AND len(s.clicked_ids) > len(coalesce(e.clicked_ids, []))
             AND list_has_all(s.clicked_ids, coalesce(e.clicked_ids, []))"""
    ).fetchall()[0][0]
    return {"searches_given_clicks": added} if added else {}


def add_clicks(con: duckdb.DuckDBPyConnection, _batch_id: int) -> dict[str, int]:
    """Add to each stored search the clicks the file's rows for it give and it lacks, after its
    own, in the file's order: a click file apart from the searches (a row a click), or an event
    exported again after its clicks came in. A click stored already changes nothing."""
    added = con.execute(
        """UPDATE search_events e
           SET clicked_ids = list_concat(
                   coalesce(e.clicked_ids, []),
                   list_filter(n.ids, lambda i: NOT list_contains(coalesce(e.clicked_ids, []), i)))
           FROM (SELECT event_id, list(id ORDER BY first) AS ids
                 FROM (SELECT event_id, id, min(line * 100000 + pos) AS first
                       FROM (SELECT event_id, line, unnest(clicked_ids) AS id,
                                    generate_subscripts(clicked_ids, 1) AS pos
                             FROM gm_stage
                             WHERE gm_present AND reason IS NULL AND len(clicked_ids) > 0)
                       GROUP BY ALL)
                 GROUP BY event_id) n
           WHERE e.event_id = n.event_id
             AND NOT list_has_all(coalesce(e.clicked_ids, []), n.ids)"""
    ).fetchall()[0][0]
    return {"searches_given_clicks": added} if added else {}


def _summary(con: duckdb.DuckDBPyConnection, batch_id: int) -> dict[str, int]:
    """The batch's summary: its dates settled (``check_dates``), then new clicks merged."""
    return {**check_dates(con, batch_id), **merge_clicks(con, batch_id)}


def _clicks_added(con: duckdb.DuckDBPyConnection, batch_id: int) -> dict[str, int]:
    """A search log's summary: its dates settled, then its stored searches' new clicks."""
    return {**check_dates(con, batch_id), **add_clicks(con, batch_id)}


# GA4's BigQuery export as BigQuery writes it (JSON lines or Parquet): every event of the day,
# each with its parameters as a list of {key, value: {string_value, int_value, …}}. Its
# view_search_results events are the searches, flattened to the columns the aliases read; the
# other events are no rows (events_not_searches).
_GA4_KEYS = ("event_name", "event_params")
_GA4_PARAM = """[coalesce(p->'value'->>'string_value', p->'value'->>'int_value',
    p->'value'->>'double_value', p->'value'->>'float_value')
    FOR p IN coalesce(json_extract(raw, '$.event_params[*]'), [])
    IF p->>'key' = '{key}'][1]"""
_GA4_SEARCHES = f"""
SELECT line, CASE WHEN err IS NULL THEN json_merge_patch('{{}}', to_json({{
        'event_timestamp': raw->>'event_timestamp', 'event_date': raw->>'event_date',
        'user_pseudo_id': raw->>'user_pseudo_id', 'user_id': raw->>'user_id',
        'ga_session_id': {_GA4_PARAM.format(key="ga_session_id")},
        'search_term': {_GA4_PARAM.format(key="search_term")},
        'platform': raw->>'platform'}}))::VARCHAR ELSE raw END AS raw, err
FROM gm_raw
WHERE err IS NOT NULL OR raw->>'event_name' = 'view_search_results'
"""


# Vespa's JSON access log: a request per line (ip, time in epoch seconds, uri, code, and a
# search's "search": {"totalhits"}); a request whose uri gives a query parameter is a search,
# its totalhits the results found; another (yql alone, a document call, a later page:
# offset past 0) is no row (events_not_searches).
_VESPA_KEYS = ("uri", "time", "code", "method")
_VESPA_PARAMS = """list_transform(string_split(split_part(raw->>'uri', '?', 2), '&'),
    lambda kv: {'k': gm_url_text(split_part(kv, '=', 1)),
                'v': gm_url_text(substr(kv, strpos(kv, '=') + 1))})"""
_VESPA_SEARCHES = f"""
SELECT line, CASE WHEN err IS NULL THEN json_merge_patch('{{}}', to_json({{
        'ts': raw->>'time', 'query': q, 'num_results': raw->'search'->>'totalhits',
        'status': raw->>'code', 'path': split_part(raw->>'uri', '?', 1)}}))::VARCHAR
        ELSE raw END AS raw, err
FROM (SELECT *, CASE WHEN err IS NULL AND upper(raw->>'method') NOT IN ('HEAD', 'OPTIONS')
                      AND NOT list_bool_or([p.k = 'offset' AND try_cast(p.v AS INTEGER) > 0
                                            FOR p IN {_VESPA_PARAMS}])
                     THEN [p.v FOR p IN {_VESPA_PARAMS} IF p.k = 'query'
                           AND trim(p.v) <> ''][1] END AS q
      FROM gm_raw)
WHERE err IS NOT NULL OR q IS NOT NULL
"""


def vespa_access_log(keys: list[str]) -> bool:
    """Whether records are Vespa's access log's: its request fields, and no query column (an
    application's own log of requests that names its query is read as it is)."""
    low = {k.lower() for k in keys}
    return set(_VESPA_KEYS) <= low and not low & set(ALIASES["query"])


def _reshapes(keys: list[str]) -> bool:
    return ga4_export(keys) or vespa_access_log(keys)


def _reshape(con: duckdb.DuckDBPyConnection, keys: list[str]) -> None:
    """GA4's export and Vespa's access log as records of searches (``_ga4_reshape``)."""
    if vespa_access_log(keys):
        _vespa_reshape(con)
    else:
        _ga4_reshape(con, keys)


def _vespa_reshape(con: duckdb.DuckDBPyConnection) -> None:
    from goldmine.ingest.files import check_json, replace_raw
    from goldmine.ingest.logformats import URL_TEXT

    check_json(con)
    con.execute(URL_TEXT)
    requests = con.execute("SELECT count(*) FROM gm_raw WHERE err IS NULL").fetchall()[0][0]
    replace_raw(con, _VESPA_SEARCHES)
    searches = con.execute("SELECT count(*) FROM gm_raw WHERE err IS NULL").fetchall()[0][0]
    if requests and not searches:
        raise InputError(
            f"Vespa's access log: none of its {requests:,} requests is a search (a uri giving "
            "a query parameter, other than a later page)"
        )
    con.execute(
        "CREATE OR REPLACE TEMP TABLE gm_ga4_other AS SELECT ?::BIGINT AS n", [requests - searches]
    )


def ga4_export(keys: list[str]) -> bool:
    """Whether records are GA4's BigQuery export as exported (its params not flattened)."""
    return set(_GA4_KEYS) <= {k.lower() for k in keys}


def _ga4_reshape(con: duckdb.DuckDBPyConnection, keys: list[str]) -> None:
    """GA4's export: its view_search_results events as flat records; how many other events it
    held kept for the batch's summary (``_events_not_searches``)."""
    from goldmine.ingest.files import check_json, replace_raw

    if not ga4_export(keys):
        return
    check_json(con)
    events, searches = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE raw->>'event_name' = 'view_search_results') "
        "FROM gm_raw WHERE err IS NULL"
    ).fetchall()[0]
    if events and not searches:
        raise InputError(
            f"GA4's export: none of its {events:,} events is a search (event_name "
            "view_search_results): site search is measured in GA4's enhanced measurement"
        )
    con.execute(
        "CREATE OR REPLACE TEMP TABLE gm_ga4_other AS SELECT ?::BIGINT AS n", [events - searches]
    )
    replace_raw(con, _GA4_SEARCHES)


def _events_not_searches(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    found = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE temporary AND table_name = 'gm_ga4_other'"
    ).fetchall()[0][0]
    if not found:
        return {}
    return {"events_not_searches": con.execute("SELECT n FROM gm_ga4_other").fetchall()[0][0]}


def _event_summary(con: duckdb.DuckDBPyConnection, batch_id: int) -> dict[str, int]:
    return {**_clicks_added(con, batch_id), **_events_not_searches(con)}


def _access_summary(con: duckdb.DuckDBPyConnection, batch_id: int) -> dict[str, int]:
    """An access log's: its requests that were no search (a page, an image, a later page of
    a search, a redirect), beside the rows, which are its searches."""
    return {**_clicks_added(con, batch_id), "requests_not_searches": access_skipped(con)}


def _time(ts: str, ts_format: str | None, order: str | None) -> str:
    """SQL reading a timestamp: --ts-format's layout first, then every layout gm_ts knows, then
    a day/month date in the order it shows (or the file's, ``order``)."""
    parsed = f"coalesce(gm_ts({ts}), gm_dmy_ts({ts}, $gm_date_order))"
    if ts_format:
        return f"coalesce(try_strptime({ts}, $gm_ts_format)::TIMESTAMP, {parsed})"
    return parsed


def session_owner(fields: dict[str, list[str]]) -> list[str]:
    """The user fields whose value a session id is a session of: GA4's ``ga_session_id`` is the
    second its session started, unique only with its user's, so two visitors who began in the
    same second share it. Its ``user_pseudo_id`` (the same before and after a sign-in sets
    ``user_id``) where the file has one, else the user's; none for a session id of its own."""
    sessions = fields.get("session_id", [])
    if len(sessions) != 1 or str(sessions[0]).lower() != "ga_session_id":
        return []
    users = fields.get("user_id", [])
    pseudo = [k for k in users if str(k).lower() == "user_pseudo_id"]
    return pseudo or users


def _session(fields: dict[str, list[str]]) -> str:
    """SQL of a search's session id: GA4's prefixed with its user's (session_owner)."""
    session = f"gm_unset({val(fields, 'session_id')})"
    owner = session_owner(fields)
    if not owner:
        return session
    user = f"gm_unset({val_of(fields, 'user_id', owner)})"
    return f"CASE WHEN {user} IS NOT NULL THEN {user} || ':' || {session} ELSE {session} END"


# A query that is the search request's DSL as JSON text (UBI's "query" where its user_query is
# empty, a slow log's source): no one's words, which triage would cluster as such.
DSL_QUERY = "wrong type: query is a search request's DSL (a JSON object), not its words"


def _query_reasons(fields: dict[str, list[str]]) -> str:
    q, kind = val(fields, "query"), typ(fields, "query")
    return f"""WHEN gm_no_query({q}) THEN 'missing query'
                 WHEN {kind} <> 'VARCHAR' THEN 'wrong type: query is ' || gm_jtype({kind})
                 WHEN starts_with(trim({q}), '{{') AND ends_with(trim({q}), '}}')
                      AND json_valid(trim({q})) THEN '{DSL_QUERY.replace("'", "''")}'"""


def _click_reasons(eid: str) -> str:
    """A row of a clicks-only file names a stored search, or is a reject that says so."""
    return f"""WHEN {eid} IS NULL THEN 'missing event_id: a click names its search by its id'
                 WHEN NOT gm_known
                     THEN 'a click for a search the store does not hold: ' || left({eid}, 60)"""


# What to do with the layouts of engines and analytics tools whose records hold no column of
# the user's words: told by the fields only they have.
_GA4_SPARK = (
    "GA4's BigQuery export as BigQuery writes it (a search's term inside event_params) is read "
    "by --engine duckdb; for --engine spark, export its searches flattened, each param a "
    "column (SELECT event_timestamp, user_pseudo_id, (SELECT value.int_value FROM "
    "UNNEST(event_params) WHERE key = 'ga_session_id') AS ga_session_id, (SELECT "
    "value.string_value FROM UNNEST(event_params) WHERE key = 'search_term') AS search_term "
    "FROM `PROJECT.analytics_ID.events_*` WHERE event_name = 'view_search_results')"
)
_SLOW_LOG = (
    "an Elasticsearch or OpenSearch search slow log: it logs a slow search once per shard and "
    "phase, the user's words inside its query DSL (source), so it is no log of what users "
    "searched: log each search's words (OpenSearch's UBI: goldmine ingest ubi; or your "
    "application's log as JSON lines), or name a column of the words with --map query=COLUMN"
)


def _layout_hint(keys: list[str]) -> str | None:
    low = {k.lower() for k in keys}
    if ga4_export(keys):  # the DuckDB engine reads it (_ga4_reshape)
        return _GA4_SPARK
    if {"top pages", "impressions"} <= low:  # Search Console's export beside Queries.csv
        return (
            "Google Search Console's Pages.csv: its rows are pages, not queries; the queries "
            "are in Queries.csv, beside it in the export"
        )
    if "elasticsearch.slowlog.source" in low or (
        "source" in low and low & {"took_millis", "search_type", "total_shards"}
    ):
        return _SLOW_LOG
    return None


def no_query(keys: list[str]) -> str:
    """Why a file has no query, and what to do: a query-and-count export's query column is
    renamed in its header, since --map would read each row as one search and drop its count."""
    found = ", ".join(keys[:12])
    if hint := _layout_hint(keys):
        return f"{hint} (no query field; found {found})"
    said = f"no query field (looked for {', '.join(ALIASES['query'])}; found {found})"
    count = analytics.count_column(keys)
    if count is None:
        return (
            f"{said}; name it with --map query=COLUMN (an aggregated export's counts with "
            "--map count=COLUMN too)"
        )
    return (
        f"{said}; with its {count!r} column it is an aggregated export: name its query column "
        f"with --map query=COLUMN --map count={count}"
    )


def stage_sql(
    keys: list[str],
    mapping: dict[str, str],
    source: str,
    ts_format: str | None = None,
    order: str | None = None,
    clicks_grow: bool = False,
) -> tuple[str, dict[str, Any]]:
    keep = _unless_seen if clicks_grow else _unless_known
    # Records of a query and a count and nothing only an event has are an aggregated export's
    # (Algolia's {"searches"}, Elastic App Search's {"results": [{"term", "queries"}]}), even
    # where their query column is also an event's (App Search's "term"); so are records whose
    # export parts --map names (--map zero=count).
    export = any(k in analytics.MAP_PARTS for k in mapping)
    aggregated = analytics.columns(keys, mapping) if keys and (export or not mapping) else None
    if aggregated is not None:
        raise AggregatedRecords(aggregated)
    if keys and export:  # --map count=… on records that hold no query and count
        raise InputError(
            f"--map {', '.join(k for k in mapping if k in analytics.MAP_PARTS)}= names an "
            f"aggregated export's column, and these records hold no query and count (their "
            f"fields: {', '.join(keys[:12])}): --map query=COLUMN --map count=COLUMN"
        )
    fields = resolve_fields(keys, ALIASES, _event_map(mapping), strict=True)
    # Clicks exported apart from their searches (Coveo's by searchQueryUid, Algolia Insights'
    # by queryID): each names its search, which the store must hold (add_clicks).
    clicks_only = (
        bool(keys) and "query" not in fields and {"event_id", "clicked_ids"} <= fields.keys()
    )
    if keys and "query" not in fields and not clicks_only:
        raise InputError(no_query(keys))
    known = {k for names in fields.values() for k in names}
    access, params = field_access(fields, [k for k in keys if k not in known], _TYPED)
    params["gm_source"] = source
    params["gm_date_order"] = order or ""
    if ts_format or order:  # a line read another way is not the stored line (batch.line_key)
        params["gm_reading"] = json.dumps([json.loads(params["gm_reading"]), ts_format, order])
    if ts_format:
        params["gm_ts_format"] = ts_format
    q, ts = val(fields, "query"), val(fields, "ts")
    # The row's id, computed once below: one holding PII is known by its pseudonym when
    # redacting (batch.content_hash).
    eid = "gm_eid"
    num = val(fields, "num_results")
    counted = _counted_results(fields)
    if counted != "false":
        num = f"CASE WHEN {counted} THEN {val(fields, 'result_ids')} END"
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
{_click_reasons(eid) if clicks_only else _query_reasons(fields)}
                 WHEN {ts} IS NOT NULL AND gm_t IS NULL THEN gm_unread_time({ts}, gm_dates)
                 WHEN NOT gm_in_time(gm_t) THEN 'timestamp out of range: ' || left({ts}, 60)
                 WHEN NOT {counted} AND {_not_ids(fields, "result_ids")}
                     THEN 'wrong type: result_ids is ' || gm_jtype({typ(fields, "result_ids")})
                 WHEN {_not_ids(fields, "clicked_ids")}
                     THEN 'wrong type: clicked_ids is ' || gm_jtype({typ(fields, "clicked_ids")})
                 WHEN {num} IS NOT NULL AND try_cast({num} AS DOUBLE) IS NULL
                     THEN 'wrong type: num_results is not a number: ' || left({num}, 40)
                 WHEN {num} IS NOT NULL AND ({count} IS NULL OR {count} < 0)
                     THEN 'wrong type: num_results is out of range: ' || left({num}, 40)
            END AS reason,
            gm_key AS event_id,
            $gm_source AS source,
            gm_t AS ts,
            {_unless_known(_session(fields))} AS session_id,
            {_unless_known(f"gm_unset({val(fields, 'user_id')})")} AS user_id,
            {_unless_known(f"trim({q})")} AS query,
            {_unless_known(f"CASE WHEN NOT {counted} THEN {ids(fields, 'result_ids')} END")}
                AS result_ids,
            {_unless_known(count)} AS num_results,
            {_unless_seen(ids(fields, "clicked_ids"))} AS clicked_ids,
            {_unless_known(val(fields, "feedback"))} AS feedback,
            {keep("x")} AS extra,
            gm_line AS {LINE_HASH},
            gm_seen,
            gm_known,
            gm_dates
        FROM (
            SELECT *, gm_seen OR gm_stored(gm_key) AS gm_known
            FROM (
                SELECT *, {_time(ts, ts_format, order)} AS gm_t, gm_dmy_shown({ts}) AS gm_dates,
                       gm_id_key({val(fields, "event_id")}) AS gm_eid,
                       CASE WHEN gm_seen THEN NULL
                            WHEN {"true" if clicks_only else "false"} THEN {eid}
                            WHEN {eid} IS NULL
                                THEN 'h-' || gm_content_hash(concat_ws(chr(31), {content}))
                            -- a numbered id stored for another query or days away: this
                            -- file numbers its rows as another did (1..N): another search
                            WHEN gm_t IS NOT NULL
                                 AND gm_stored_far_off({eid}, gm_t, trim({q}))
                                THEN {eid} || '@' || strftime(gm_t, '%Y%m%dT%H%M%S')
                            ELSE {eid} END AS gm_key
                FROM ({access}))))
    """
    return sql, params


def target(
    mapping: dict[str, str] | None = None,
    source: str = "searchlog",
    ts_format: str | None = None,
    order: str | None = None,
    clicks_grow: bool = False,
    access: bool = False,
) -> Target:
    """``clicks_grow``: a click log's, whose searches (keyed by user, query and time) a later
    export may give more clicks (merge_clicks); ``access``: a web server's access log's, whose
    requests that are no search are counted (``requests_not_searches``)."""
    return Target(
        source=source,
        table="search_events",
        key=("event_id",),
        # A line already stored is known by its hash, unparsed (a weekly file's old half).
        columns=(*COLUMNS, LINE_HASH),
        stage=lambda keys: stage_sql(keys, mapping or {}, source, ts_format, order, clicks_grow),
        marks_present=True,
        # Ids can be emails or phone numbers; a session id keeps its sessions apart.
        redact=("query", "user_id", "feedback", "extra"),
        pseudonymize=("session_id",),
        pseudonymize_lists=("result_ids", "clicked_ids"),
        # Ambiguous dates are settled per file, before its batch is kept (logformats); a stored
        # search's new clicks are added.
        summary=_summary if clicks_grow else _access_summary if access else _event_summary,
        # GA4's export as BigQuery writes it: its searches flattened first
        reshape=_reshape,
        reshapes=_reshapes,
    )


def run(
    con: duckdb.DuckDBPyConnection,
    items: list[InputFile],
    mapping: dict[str, str],
    redactor: Redactor,
    options: dict[str, Any],
    ts_format: str | None = None,
) -> ImportResult:
    """Import each file; one whose ambiguous dates (03/04/2026) its other dates settle is staged
    again in their order, one whose every date is ambiguous is an error naming --ts-format."""
    check_ts_format(con, ts_format)
    files = []
    export = [k for k in mapping if k in analytics.MAP_PARTS]
    for item in items:
        # --map count=… names an export; --map query=… alone does on a query-and-count file
        if (export and item.format in ("csv", "analytics")) or (
            item.format == "csv" and mapping and not export and _mapped_export(item, mapping)
        ):
            item = replace(item, format="analytics")
            made = _analytics(item, ts_format, mapping=mapping)
        elif export and item.format not in ("json", "jsonl", "parquet"):
            raise InputError(
                f"--map {export[0]}= names an aggregated export's column, and this file is read "
                f"as {item.format}: --map it for a CSV or TSV export",
                path=item.path,
            )
        elif item.format == "analytics":
            made = _analytics(item, ts_format)
        else:
            made = partial(
                target,
                mapping,
                ts_format=ts_format,
                clicks_grow=item.format == "clicklog",
                access=item.format in ("accesslog", "solrlog"),
            )
        try:
            files.extend(_one_file(con, made, item, redactor, options, ts_format))
        except InputError as exc:  # each file before it is a batch of its own, kept
            raise in_file_error(exc, item.path, files) from exc
    return ImportResult(files)


def _one_file(con, made, item: InputFile, redactor, options, ts_format) -> list:
    try:
        return _dated(con, made, item, redactor, options, ts_format).files
    except AggregatedRecords as records:  # JSON rows of a query and a count, no events
        made = _analytics(item, ts_format, records.found)
        return _dated(con, made, item, redactor, options, ts_format).files


def day_first_layout(example: str) -> str:
    """The strptime layout that reads ``example`` (an ambiguous date, ``03/04/2026`` or
    ``03.04.2026 10:00:05``) day first: its separator, and a time only where it has one."""
    import re

    sep = next((c for c in example[:6] if c in "/-."), "/")
    layout = (
        f"%d{sep}%m{sep}%Y"
        if re.match(r"\s*\d{1,2}\D\d{1,2}\D\d{4}", example)
        else (f"%d{sep}%m{sep}%y")
    )
    time = re.search(r"\d[ T](\d{1,2}:\d{2})(:\d{2})?(\s*[AaPp][Mm])?", example)
    if time:
        hours = "%I" if time.group(3) else "%H"  # a 12-hour clock: 10:00 AM
        layout += ("T" if "T" in time.group(0) else " ") + hours + ":%M"
        layout += (":%S" if time.group(2) else "") + (" %p" if time.group(3) else "")
    return layout


class AggregatedRecords(InputError):
    """JSON records that are an aggregated export's rows (a query and a count, Algolia's
    Analytics API), found when the log's stage looks for a query: read as an export instead."""

    def __init__(self, found: dict[str, str]) -> None:
        super().__init__("the records are an aggregated export's rows")
        self.found = found


def _dated(
    con,
    made: Callable[..., Target],
    item: InputFile,
    redactor: Redactor,
    options: dict[str, Any],
    ts_format: str | None = None,
) -> ImportResult:
    """Import a file whose target ``made(order=...)`` settles its dates (check_dates): staged
    again in the order its other dates show, an error naming --ts-format when none does (or
    saying that the one given does not match)."""
    try:
        return batch.run(con, made(), [item], redactor, options)
    except AmbiguousDates as found:
        if found.order is None:
            said = (
                f"every date in the file is ambiguous, day/month or month/day ({found.example!r})"
            )
            if ts_format:
                said += f": --ts-format {ts_format!r} does not match it"
            raise InputError(
                f"{said}: name the layout with --ts-format, e.g. --ts-format "
                f"'{day_first_layout(found.example)}'",
                path=item.path,
            ) from None
        read = {**options, "date_order": found.order}
        return batch.run(con, made(order=found.order), [item], redactor, read)


def _mapped_export(item: InputFile, mapping: dict[str, str]) -> bool:
    """Whether --map's query column makes a delimited file an aggregated export: its header then
    names a query and a count, and nothing only an event has."""
    return (
        set(mapping) <= {"query"}
        and analytics.columns(header(item.path, item.compression), mapping) is not None
    )


def _analytics(
    item: InputFile,
    ts_format: str | None,
    records: dict[str, str] | None = None,
    mapping: dict[str, str] | None = None,
) -> Callable[..., Target]:
    """An aggregated export: its rows are summaries (ingest.analytics), not events; its dates are
    settled as a log's are, before its merge count (the batch's summary). ``records``: the
    columns found in JSON records, read by their paths rather than as a delimited file;
    ``mapping``: the columns --map names."""
    names = header(item.path, item.compression)
    found = records or analytics.columns(names, mapping)
    if found is None:
        raise InputError(
            "not an aggregated search export: its header names no query column and no count "
            "(count, searches, impressions, …; or name them with --map query=COLUMN "
            "--map count=COLUMN)",
            path=item.path,
        )
    missing = [c for c in found.values() if records is None and c not in names]
    if missing:
        raise InputError(
            f"--map names a column the header lacks: {missing[0]!r} (found {', '.join(names)})",
            path=item.path,
        )

    def made(order: str | None = None) -> Target:
        read = analytics.target(found, ts_format, order, records=records is not None)
        merge = read.summary or (lambda _con, _batch_id: {})
        return replace(read, summary=lambda con, b: {**check_dates(con, b), **merge(con, b)})

    return made
