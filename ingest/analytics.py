"""Aggregated search analytics into ``search_summaries``: rows of query text with counts, no events.

Many teams have only these: a site-search export (query, searches, searches with no results,
click-through rate) or a web search console's (query, clicks, impressions, CTR, position). Each
row stands for its count of searches, so it is kept as the summaries Spark writes are, one row
per source (``analytics``), day and normalized query with its signal counts, and triage, the
starter set and priorities weigh it by that count (``triage_query_days``). The failure signals
come from the rates the row gives: searches with no results are zero-result searches; of the
others, those not clicked (count less no-results less clicks, or less CTR times count) are
no-click searches. Reformulations and sessions cannot be told from a count: none are counted,
and each search is taken as its own session. A row with a date is that day's (and a second
export holding the same day and query adds nothing); a row without one is the export's, dated
by the import. Dates are read as an event log's are: a day/month date in the order the file's
other dates show, ``--ts-format`` naming the layout first (``searchlog`` settles the file's order
with ``logformats.check_dates``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import duckdb

from goldmine.ingest.fields import column_words, json_path
from goldmine.ingest.target import Target
from goldmine.text import fill_non_ascii, norm_sql

SOURCE = "analytics"

# Column names as they are compared: lower case, runs of other characters as one underscore.
QUERY = (
    "query",
    "q",
    "search_term",
    "search_terms",
    "searchterm",
    "search_query",
    "top_queries",
    "keyword",
    "keywords",
    "query_text",
    "term",
    "search",  # Algolia's top searches: search, count, nbHits
    "internal_search_term",  # Adobe Analytics' Reports
    "internal_search_terms",
    "queries",  # last: Elastic App Search's "queries" is the count beside its "term"
)
COUNT = (
    "count",
    "searches",
    "total_searches",
    "search_count",
    "total_unique_searches",
    "unique_searches",
    "n_searches",
    "num_searches",
    "volume",
    "frequency",
    "impressions",
    "event_count",  # Google Analytics 4: a search term's view_search_results events
    "queries",  # Elastic App Search: term, queries, clicks (when it is no query column)
)
ZERO = (
    "no_results",
    "searches_with_no_results",
    "zero_results",
    "no_result_searches",
    "zero_result_searches",
    "null_searches",
    "no_results_count",
    "total_no_results",
)
ZERO_RATE = (
    "no_results_rate",
    "zero_results_rate",
    "no_result_rate",
    "zero_result_rate",
    "percent_no_results",
    "no_results_percent",
)
# The column only Algolia's searches-without-results export has (/2/searches/noResults): each
# search its count counts found nothing.
NO_RESULTS_ONLY = "withfiltercount"
# The hits a search found (Algolia's nbHits): 0 means each of its searches found nothing.
HITS = ("nbhits", "nb_hits")
CLICKS = ("clicks", "clicked_searches", "searches_with_clicks", "total_clicks",
          "search_clickthroughs", "clickthroughs")  # Adobe's  # fmt: skip
CTR = ("ctr", "click_through_rate", "clickthrough_rate", "click_rate", "search_ctr",
       "clickthroughrate",  # Algolia's clickThroughRate
       "search_clickthrough_rate")  # Adobe's  # fmt: skip
DATE = ("date", "day")
# A column an event-level log has and an aggregate has not: an event's time under each name the
# search log reads it by (searchlog.ALIASES' ts, but an export's day), its ids and results.
_EVENT = (
    "session_id",
    "user_id",
    "event_id",
    "timestamp",
    "ts",
    "time",
    "datetime",
    "created_at",
    "event_time",
    "@timestamp",
    "results",
    "clicked_ids",
    "result_ids",
    "num_results",
)

_PARTS = {
    "query": QUERY,
    "count": COUNT,
    "zero": ZERO,
    "zero_rate": ZERO_RATE,
    "hits": HITS,
    "clicks": CLICKS,
    "ctr": CTR,
    "date": DATE,
}


# The parts ``--map`` may name beside the query: naming one (``--map count=Suchanfragen``) reads
# a delimited file as an aggregated export whatever its header's words.
MAP_PARTS = ("count", "zero", "zero_rate", "hits", "clicks", "ctr")
# What else --map may name for an export, beside its query: its day.
MAP_ALSO = ("date",)


def columns(header: list[str], mapping: dict[str, str] | None = None) -> dict[str, str] | None:
    """The file's column for each part of an aggregate row, or None if the header is not one
    of an aggregated export (a query and a count, and nothing only an event has). ``mapping``
    (``--map part=column``) names parts first, in any case the header writes them."""
    found = _parts_named(header)
    if mapping:
        by_lower = {h.lower(): h for h in reversed(header)}
        named = {part: by_lower.get(col.lower(), col) for part, col in mapping.items()
                 if part in _PARTS}  # fmt: skip
        # a column named for another part is that part's, but the count's may also be the
        # zero-results' ("--map zero=count": every search counted found nothing)
        shared = "count" not in named
        found = {p: c for p, c in (found or {}).items()
                 if c not in named.values() or (p == "count" and shared)} | named  # fmt: skip
    if not (found and "query" in found and "count" in found):
        return None
    if (
        NO_RESULTS_ONLY in {column_words(h) for h in header}
        and not {"zero", "zero_rate", "hits"} & found.keys()
    ):
        found["zero"] = found["count"]  # Algolia's noResults: each search counted found nothing
    return found


def count_column(header: list[str]) -> str | None:
    """The count column of a header that would be an aggregated export's but for its query
    column (Algolia's ``search``): None when it has no count or a field only an event has."""
    return (_parts_named(header) or {}).get("count")


def _parts_named(header: list[str]) -> dict[str, str] | None:
    """The header's column for each part it names (the first of a repeated name), or None
    when it has a field only an event has."""
    names = {column_words(h): h for h in reversed(header)}
    if any(n in names for n in _EVENT):
        return None
    found: dict[str, str] = {}
    for part, options in _PARTS.items():  # a column is one part's: the query's first
        column = next((names[n] for n in options if n in names and names[n] not in
                       found.values()), None)  # fmt: skip
        if column is not None:
            found[part] = column
    if "query" not in found and header and not header[0].strip():
        # Adobe Workspace's freeform table: its dimension (the query) is the first column, its
        # name written on the row below beside the table's totals (see stage_sql's totals).
        found = {"query": header[0], **found}
    return found


# Counts as exports write them ("1,080", "1 080", "1_000"), over a trimmed text: the separators
# are taken out only of a text holding one (a pattern replace on every count cost more).
_NUMBER = (
    "try_cast(CASE WHEN contains({0}, ',') OR contains({0}, '_') OR contains({0}, ' ') "
    "THEN replace(replace(replace({0}, ',', ''), '_', ''), ' ', '') ELSE {0} END AS DOUBLE)"
)
# Numbers as an export from a decimal-comma locale writes them ("1.234" clicks, "12,5 %"):
# the thousand separators (dots, spaces, no-break spaces) out, the decimal comma a point. Only
# in a file whose numbers show that convention (``decimal_comma``); a macro the reader defines
# per file (``gm_decimal_comma()``, a constant: a file of the other convention pays nothing).
_LOCAL_COUNT = (
    "CASE WHEN gm_decimal_comma() THEN replace(replace(replace(replace(replace({0}, '.', ''), "
    "' ', ''), chr(160), ''), chr(8239), ''), ',', '.') ELSE {0} END"
)
_LOCAL_RATE = (
    "CASE WHEN gm_decimal_comma() THEN replace(replace(replace(replace({0}, ' ', ''), "
    "chr(160), ''), chr(8239), ''), ',', '.') ELSE {0} END"
)
# A number in a decimal-comma locale's export (12,5 / 12,5 % / 1.234 / 1.234,5), and one in a
# decimal-point locale's (0.5 / 12.5 % / 1.2345 / 1,234 / 1,234.5). "1.234" alone is the
# first only where fields are split by ``;``: Excel writes ``;`` where the comma is decimal.
_COMMA_NUMBER = re.compile(r"-?\d+,\d{1,2}\s*%?|-?\d{1,3}(\.\d{3})+,\d+")
_THOUSAND_DOTS = re.compile(r"-?\d{1,3}(\.\d{3})+")
_POINT_NUMBER = re.compile(r"-?\d*\.(\d{1,2}|\d{4,})\s*%?|-?[1-9]\d{0,2}(,\d{3})+(\.\d+)?")


def decimal_comma(rows: list[list[str]], delim: str) -> bool:
    """Whether an export's numbers (``rows``: its first rows' fields) are written with a decimal
    comma: some field shows it and none shows a decimal point. Never for a comma-separated file
    (whose 1,5 is as likely a count of 15 written badly)."""
    if delim == ",":
        return False
    fields = [f.strip().replace("\u00a0", " ").replace("\u202f", " ") for r in rows for f in r]
    if any(_POINT_NUMBER.fullmatch(f) for f in fields):
        return False
    comma = any(_COMMA_NUMBER.fullmatch(f) for f in fields)
    return comma or (delim == ";" and any(_THOUSAND_DOTS.fullmatch(f) for f in fields))


# Rates as a share or a percentage ("7.5%"), over a trimmed text.
# A percentage: ``45%``; ``12,5 %`` too in any file (one or two decimals after a comma are no
# thousands), as a decimal-comma locale's Sheets export quotes it in a comma-separated file.
_RATE = (
    "CASE WHEN ends_with({0}, '%') THEN try_cast(CASE "
    "WHEN regexp_full_match({0}, '-?[0-9]+,[0-9]{{1,2}} ?%') "
    "THEN replace(rtrim({0}, '%'), ',', '.') "
    "ELSE rtrim({0}, '%') END AS DOUBLE) / 100 "
    "ELSE CASE WHEN try_cast({0} AS DOUBLE) > 1 THEN try_cast({0} AS DOUBLE) / 100 "
    "ELSE try_cast({0} AS DOUBLE) END END"
)

# A count above this is a reject, not a number: no query is searched 10^12 times in one row's
# period, and a value past 64 bits (1e400 reads as inf) cast to BIGINT stopped the whole import.
# It also keeps a day's rows of one query summed far from BIGINT's end.
MAX_COUNT = 10**12


def _fits(value: str) -> str:
    """SQL: the count when it is finite and at most MAX_COUNT in size (NaN, inf and 1e19 are
    NULL), so what is computed from it is a number even on a rejected row."""
    return f"CASE WHEN abs({value}) <= {MAX_COUNT} THEN {value} END"


def _share(value: str) -> str:
    """SQL: the rate when it is a share from 0 to 1 (NaN, inf, 150% and -5% are NULL)."""
    return f"CASE WHEN {value} BETWEEN 0 AND 1 THEN {value} END"


# A day/month date's parts (30/11/2026: gm_dmy_parts), cut only where the second or third
# character is a date separator, as it must be for the pattern to match: cut on every row, they
# were a third of an ISO-dated export's date cost.
_DMY_PARTS = (
    "CASE WHEN substr({0}, 2, 1) IN ('/', '-', '.') OR substr({0}, 3, 1) IN ('/', '-', '.') "
    "THEN gm_dmy_parts({0}) END"
)


def _day(ts_format: str | None) -> str:
    """SQL reading a row's date: --ts-format's layout first, then every layout gm_ts knows, then a
    day/month date in the order it shows (or the file's, ``$gm_date_order``)."""
    parsed = "gm_ts(date_text), gm_dmy_from(dmy, $gm_date_order)"
    if ts_format:
        parsed = f"try_strptime(date_text, $gm_ts_format)::TIMESTAMP, {parsed}"
    return f"coalesce({parsed})::DATE"


def stage_sql(
    found: dict[str, str],
    ts_format: str | None = None,
    order: str | None = None,
    keys: list[str] | None = None,
) -> tuple[str, dict[str, Any]]:
    """SQL over the export's rows: each row's counts and reason. ``keys``: the names of the
    reader's text columns (``gm_src.gm_f1``.., see ``logformats._read_analytics``), read as they
    are; None: the rows are JSON objects (``gm_raw``).

    No JSON is made or parsed for a row of text columns: a reject's raw text (its object) is made
    for the reject alone, in the statement's last step, where its reason is known (a column
    computed below it is computed for every row). A row's object is read in one pass
    (``json_extract_string`` of the list of their paths): one call per field parsed the object
    once per field. ``gm_dates`` and ``ts`` are what ``check_dates`` reads: the order a
    day/month date shows, and the row's day.
    """
    parts = list(found)
    params: dict[str, Any] = {}
    params["gm_now"] = datetime.now(UTC).replace(tzinfo=None)
    params["gm_date_order"] = order or ""
    if ts_format:
        params["gm_ts_format"] = ts_format
    rows, raw, carried = _rows(found, keys, params)
    # Adobe's freeform table (a header whose query column has no name): its first row with a
    # query names the dimension and holds the table's totals.
    totals = (
        "\n                 WHEN line = min(line) FILTER (WHERE NOT gm_no_query(q)) OVER () "
        "THEN 'the table''s totals (the row naming its dimension), not a search'"
        if found.get("query") == ""
        else ""
    )

    def text(part: str) -> str:
        if part not in found:
            return "NULL::VARCHAR"
        if keys is not None:  # the first column of the name (found names the first)
            return f"nullif(trim(gm_f{keys.index(found[part]) + 1}), '')"
        return f"nullif(trim(gm_v[{parts.index(part) + 1}]), '')"

    # The reader's text columns may be of a decimal-comma export (gm_decimal_comma, per file).
    local = (_LOCAL_COUNT, _LOCAL_RATE) if keys is not None else ("{0}", "{0}")
    number = {
        p: _NUMBER.format(local[0].format(f"{p}_text")) for p in ("count", "zero", "hits", "clicks")
    }
    rate = {p: _RATE.format(local[1].format(f"{p}_text")) for p in ("zero_rate", "ctr")}
    sql = f"""
        SELECT line, {raw} AS raw, reason, query, day, first_seen, last_seen, n_events,
               n_zero_results, n_no_click, least(n_events, n_zero_results + n_no_click) AS n_failed,
               gm_dates, day AS ts
        FROM (
        SELECT *, CASE WHEN clicked IS NULL THEN 0
                       ELSE greatest(n_events - n_zero_results - clicked, 0) END AS n_no_click
        FROM (
        SELECT line, raw,
            CASE WHEN err IS NOT NULL THEN err
                 WHEN gm_no_query(q) THEN 'missing query'{totals}
                 WHEN n_read IS NULL OR n < 0
                     THEN 'wrong type: count is not a number: ' || coalesce(left(n_text, 40), '')
                 WHEN n IS NULL THEN 'wrong type: count is out of range: ' || left(n_text, 40)
                 WHEN zero_text IS NOT NULL AND (zero_read IS NULL OR zero < 0)
                     THEN 'wrong type: no results is not a number: ' || left(zero_text, 40)
                 WHEN zero_text IS NOT NULL AND zero IS NULL
                     THEN 'wrong type: no results is out of range: ' || left(zero_text, 40)
                 WHEN round(zero) > round(n)
                     THEN 'no results exceed the count: ' || left(zero_text, 40) || ' > '
                          || left(n_text, 40)
                 WHEN hits_text IS NOT NULL AND (hits_read IS NULL OR hits_read < 0)
                     THEN 'wrong type: nbHits is not a number: ' || left(hits_text, 40)
                 WHEN clicks_text IS NOT NULL AND (clicks_read IS NULL OR clicks < 0)
                     THEN 'wrong type: clicks is not a number: ' || left(clicks_text, 40)
                 WHEN clicks_text IS NOT NULL AND clicks IS NULL
                     THEN 'wrong type: clicks is out of range: ' || left(clicks_text, 40)
                 WHEN zero_rate_text IS NOT NULL AND zero_rate_read IS NULL
                     THEN 'wrong type: no-results rate is not a rate: ' || left(zero_rate_text, 40)
                 WHEN zero_rate_text IS NOT NULL AND zero_rate IS NULL
                     THEN 'no-results rate is out of range: ' || left(zero_rate_text, 40)
                 WHEN ctr_text IS NOT NULL AND ctr_read IS NULL
                     THEN 'wrong type: click-through rate is not a rate: ' || left(ctr_text, 40)
                 WHEN ctr_text IS NOT NULL AND ctr IS NULL
                     THEN 'click-through rate is out of range: ' || left(ctr_text, 40)
                 WHEN date_text IS NOT NULL AND day IS NULL THEN gm_unread_time(date_text, gm_dates)
                 WHEN NOT gm_in_time(day) THEN 'timestamp out of range: ' || left(date_text, 60)
            END AS reason,
            q AS query, day, gm_dates{carried},
            coalesce(day::TIMESTAMP, $gm_now) AS first_seen,
            coalesce(day::TIMESTAMP, $gm_now) AS last_seen,
            round(n)::BIGINT AS n_events,
            least(round(coalesce(zero, zero_rate * n, CASE WHEN hits_read = 0 THEN n END, 0)),
                  round(n))::BIGINT AS n_zero_results,
            round(coalesce(clicks, ctr * n))::BIGINT AS clicked
        FROM (
            -- The values as read (*_read) give the reasons; the values used are only those in
            -- range, so that a rejected row's counts are numbers too.
            SELECT *, {_fits("n_read")} AS n, {_fits("zero_read")} AS zero,
                   {_fits("clicks_read")} AS clicks, {_share("zero_rate_read")} AS zero_rate,
                   {_share("ctr_read")} AS ctr
            FROM (
            SELECT line, raw, err, q, count_text AS n_text, {number["count"]} AS n_read, zero_text,
                   {number["zero"]} AS zero_read, hits_text, {number["hits"]} AS hits_read,
                   clicks_text, {number["clicks"]} AS clicks_read,
                   zero_rate_text, {rate["zero_rate"]} AS zero_rate_read, ctr_text,
                   {rate["ctr"]} AS ctr_read,
                   date_text, {_day(ts_format)} AS day,
                   CASE WHEN dmy IS NOT NULL THEN gm_dmy_order(dmy) END AS gm_dates{carried}
            FROM (
                SELECT line, raw, err, {text("query")} AS q, {text("count")} AS count_text,
                       {text("zero")} AS zero_text, {text("hits")} AS hits_text,
                       {text("clicks")} AS clicks_text,
                       {text("zero_rate")} AS zero_rate_text, {text("ctr")} AS ctr_text,
                       {text("date")} AS date_text,
                       {_DMY_PARTS.format(text("date"))} AS dmy{carried}
                FROM ({rows}))))))
    """
    return sql, params


def _rows(
    found: dict[str, str], keys: list[str] | None, params: dict[str, Any]
) -> tuple[str, str, str]:
    """The stage's source rows, the SQL of a row's raw text in its last step, and the columns
    carried up to it; adds their parameters to ``params``."""
    if keys is None:
        params["gm_paths"] = [json_path(found[p]) for p in found]
        # Not on a row the reader could not read (its raw is not JSON): a reject.
        rows = """SELECT line, raw, err,
                         CASE WHEN err IS NULL THEN json_extract_string(raw, $gm_paths) END AS gm_v
                  FROM gm_raw"""
        return rows, "raw", ""
    params.update({f"gm_k{i}": key for i, key in enumerate(keys, start=1)})
    columns = [f"gm_f{i}" for i in range(1, len(keys) + 1)]
    pairs = ", ".join(f"$gm_k{i}, {c}" for i, c in enumerate(columns, start=1))
    raw = f"CASE WHEN reason IS NOT NULL THEN coalesce(raw, json_object({pairs})::VARCHAR) END"
    return "SELECT * FROM gm_src", raw, "".join(f", {c}" for c in columns)


_COLUMNS = (
    "query",
    "day",
    "first_seen",
    "last_seen",
    "n_events",
    "n_zero_results",
    "n_no_click",
    "n_failed",
)


def store(con: duckdb.DuckDBPyConnection, _target: Target, batch_id: int) -> int:
    """Insert the good rows as summaries: normalized as triage normalizes (non-ASCII text by
    normalize_query itself), a dated row only if that day's row of the query is not stored."""
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE gm_summary AS SELECT *, {norm_sql('query')} AS norm_query "
        "FROM gm_stage WHERE reason IS NULL"
    )
    fill_non_ascii(con, "gm_summary", "query", "norm_query")
    undated = "false" if _undated_seen(con) else "day IS NULL"  # a constant, no user text
    # Rows of one day whose queries normalize alike ("Reset Password", "reset password!") are
    # one summary: their counts summed, so its rates are the rows' weighted by their counts.
    stored = con.execute(
        """INSERT INTO search_summaries (batch_id, source, day, norm_query, spellings,
               first_seen, last_seen, n_events, n_sessions, n_zero_results, n_no_click,
               n_reformulated, n_negative_feedback, n_tickets, n_chat_fail, n_failed, n_follow_up)
           SELECT ?, ?, day, norm_query, list({'query': query, 'n': n_events}),
                  min(first_seen), max(last_seen), sum(n_events), sum(n_events),
                  sum(n_zero_results), sum(n_no_click), 0, 0, 0, 0, sum(n_failed), 0
           FROM gm_summary s
           WHERE {undated} OR (day IS NOT NULL AND NOT EXISTS (
               SELECT 1 FROM search_summaries t
               WHERE t.source = ? AND t.day = s.day AND t.norm_query = s.norm_query))
           GROUP BY day, norm_query""".replace("{undated}", undated),
        [batch_id, SOURCE, SOURCE],
    ).fetchall()[0][0]
    return stored


def _undated_seen(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the file's undated rows are an earlier import's, summed alike query by query: the
    same export saved again (CRLF, its rows in another order), which holds no new search. An
    undated export is dated by its import, so a later one with other counts is new traffic; one
    whose every summary an earlier batch holds already, and nothing else, is a copy."""
    found = con.execute(
        """WITH new AS (
               SELECT norm_query, sum(n_events)::BIGINT AS n,
                      sum(n_zero_results)::BIGINT AS z, sum(n_no_click)::BIGINT AS c
               FROM gm_summary WHERE day IS NULL GROUP BY norm_query),
           mine AS (SELECT count(*) AS k, bit_xor(hash(norm_query, n, z, c)) AS h FROM new)
           SELECT count(*) FROM (
               SELECT batch_id FROM search_summaries WHERE source = ? AND day IS NULL
               GROUP BY batch_id
               HAVING count(*) = (SELECT k FROM mine) AND bit_xor(hash(norm_query,
                   n_events::BIGINT, n_zero_results::BIGINT, n_no_click::BIGINT))
                   = (SELECT h FROM mine))
           WHERE (SELECT k FROM mine) > 0""",
        [SOURCE],
    ).fetchall()[0][0]
    return bool(found)


def merged(con: duckdb.DuckDBPyConnection, _batch_id: int) -> dict[str, int]:
    """The batch's summary: how many good rows were summed into another row of the file (they
    count as already present in the account)."""
    n = con.execute(
        "SELECT count(*) - count(DISTINCT (day, norm_query)) FROM gm_summary"
    ).fetchall()[0][0]
    con.execute("DROP TABLE gm_summary")
    return {"merged": n}


def target(
    found: dict[str, str],
    ts_format: str | None = None,
    order: str | None = None,
    records: bool = False,
) -> Target:
    """The target of an aggregated export; ``records``: its rows are JSON records (Algolia's
    Analytics API), not a delimited file's."""
    return Target(
        source=SOURCE,
        table="search_summaries",
        key=("source", "day", "norm_query"),
        columns=_COLUMNS,
        # Its rows are the reader's text columns (logformats._read_analytics), named by keys,
        # or JSON records read by their paths.
        stage=lambda keys: stage_sql(found, ts_format, order, None if records else keys),
        streaming=False,
        redact=("query",),
        store=store,
        summary=merged,
    )
