"""Steps 1 and 5 of triage: every event as one row with its failure signals, then one row per
distinct normalized query.

All of it is DuckDB SQL over the ingest tables, so a million events take seconds. The normalized
form is :func:`goldmine.text.normalize_query`, computed in SQL for ASCII text (where NFKC is the
identity and case folding is ``lower``) and by that very function for the rest, so the two can never
disagree; ``tests/test_triage.py`` checks the SQL form against the function.

Failure signals, per event (DESIGN.md, "Failure signals and tags"):

- ``zero_results``: a search that showed nothing (``num_results`` = 0, else an empty result list);
- ``no_click``: results were shown and none was clicked, counted only for import batches that
  record clicks at all (a log without click data says nothing about clicks);
- ``reformulated``: the next query in the same session, within ``window`` seconds, is a different
  but similar query (shares a content word, or Jaro-Winkler >= 0.85: a spelling fix);
- ``negative_feedback``: an explicit thumbs-down, "negative", "bad", … or a negative number;
- ``ticket``: every ticket is a search that failed;
- ``chat_fail``: the assistant's answer to this user turn says it does not know, or got a
  thumbs-down (on the answer or the turn); for a RAG trace's retrieval, the LLM answer beside it
  says it does not know (``trace_retrievals.dont_know``; its thumbs-down is ``negative_feedback``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

# The rules are written once, for DuckDB and Spark, in goldmine.signals; the names other
# modules import from here stay importable.
from goldmine.signals import (  # noqa: F401
    COUNT_COLUMNS,
    DEFAULT_WINDOW_S,
    FAILED,
    FOLLOW_UP_REF,
    FOLLOW_UP_START,
    NEGATIVE_FEEDBACK,
    SEQ,
    STOP_WORDS,
    SUMMARY_COLUMNS,
    query_day_sql,
    search_signals,
    session_sql,
    sql_list,
    user_sessions_sql,
)

# fill_non_ascii is shared with ingest's analytics summaries (ingest may not import triage).
from goldmine.text import IGNORABLE_RE2, fill_non_ascii, norm_sql

if TYPE_CHECKING:
    import duckdb


def frame(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None):
    """A query's result as a polars DataFrame.

    The store may connect through DuckDB's bare C module (goldmine.store.duckdb_engine); importing
    the ``duckdb`` package adds the relation helpers (``sql``, ``pl``) to that same connection.
    """
    import duckdb  # noqa: F401

    return con.sql(sql, params=params).pl()


def build_events(
    con: duckdb.DuckDBPyConnection, since: datetime | None = None, window_s: int = DEFAULT_WINDOW_S
) -> int:
    """Rebuild ``triage_events`` from the ingest tables (events at or after ``since``)."""
    normalize_events(con, since)
    return mark_session_signals(con, window_s)


# Each source's events in one shape: source, event_key, ts, session_id, query and the per-event
# signals is_zero_results, is_no_click, is_negative_feedback, is_ticket, is_chat_fail. Each builder
# takes the window's start twice as parameters ("?::TIMESTAMP IS NULL OR ts >= ?::TIMESTAMP").
_SINCE = "(?::TIMESTAMP IS NULL OR {ts} >= ?::TIMESTAMP)"


def search_rows() -> str:
    """Search events (logs, UBI, traces): zero results, no click (where the batch records
    clicks at all; never for a query typed in by hand), negative feedback, a trace's answer that
    does not know."""
    signal = search_signals()
    return f"""
        SELECT source, event_key, ts, coalesce(session_id, user_session) AS session_id, query,
               {signal["is_zero_results"]} AS is_zero_results,
               {signal["is_no_click"]} AND source <> 'manual' AS is_no_click,
               {signal["is_negative_feedback"]} AS is_negative_feedback,
               false AS is_ticket, dont_know AS is_chat_fail
        FROM (
            WITH events AS (
                SELECT e.source, e.event_id AS event_key, e.ts, e.session_id, e.user_id, e.query,
                       coalesce(e.num_results, len(e.result_ids)) AS shown,
                       coalesce(len(e.clicked_ids), 0) AS clicks,
                       e.batch_id IN (SELECT DISTINCT batch_id FROM search_events
                                      WHERE len(clicked_ids) > 0) AS tracks_clicks,
                       lower(trim(e.feedback)) AS fb, coalesce(t.dont_know, false) AS dont_know
                FROM search_events e
                LEFT JOIN trace_retrievals t ON e.source = 'traces' AND t.event_id = e.event_id
                WHERE {_SINCE.format(ts="e.ts")}
            )
            SELECT events.*, u.user_session FROM events
            LEFT JOIN ({user_sessions_sql("events")}) u USING (source, event_key)
        )"""


def ticket_rows() -> str:
    """Tickets: every ticket is a search that failed, but for those tagged no-question (no
    question and no problem stated: nothing to search for)."""
    return f"""
        SELECT 'tickets', ticket_id, ts, NULL, question, false, false, false, true, false
        FROM tickets WHERE NOT coalesce(no_question, false) AND {_SINCE.format(ts="ts")}"""


def chat_rows() -> str:
    """User turns of chats: negative feedback on the turn; a chat failure when an answer to it
    (the assistant turns up to the next user turn) does not know or got a thumbs-down."""
    neg = sql_list(NEGATIVE_FEEDBACK)
    return f"""
        SELECT * FROM (
            WITH chat AS (
                SELECT c.*, sum(CASE WHEN role = 'user' THEN 1 ELSE 0 END)
                            OVER (PARTITION BY conversation_id ORDER BY turn) AS grp
                FROM chat_turns c
            ),
            answers AS (
                SELECT conversation_id, grp, bool_or(dont_know) AS dont_know,
                       bool_or(lower(trim(feedback)) IN (SELECT unnest({neg}))) AS thumbs_down
                FROM chat WHERE role <> 'user' GROUP BY ALL
            )
            SELECT 'chat', c.conversation_id || ':' || c.turn, c.ts, c.conversation_id, c.text,
                   false, false,
                   coalesce(lower(trim(c.feedback)) IN (SELECT unnest({neg})), false),
                   false, coalesce(a.dont_know OR a.thumbs_down, false)
            FROM chat c LEFT JOIN answers a USING (conversation_id, grp)
            WHERE c.role = 'user' AND {_SINCE.format(ts="c.ts")}
        )"""


def manual_rows() -> str:
    """Queries added by hand: no signal."""
    return f"""
        SELECT source, query_id, ts, NULL, query, false, false, false, false, false
        FROM manual_queries WHERE {_SINCE.format(ts="ts")}"""


SOURCE_ROWS = (search_rows, ticket_rows, chat_rows, manual_rows)


@dataclass(frozen=True)
class Wordless:
    """Events left out of triage because their text has no letter or digit (an emoji, a run of
    question marks, a zero-width space): nothing to embed or cluster, but counted, with the
    most frequent texts, so that the run says what it left out."""

    n_events: int = 0
    examples: tuple[str, ...] = ()


def normalize_events(
    con: duckdb.DuckDBPyConnection, since: datetime | None = None
) -> tuple[int, Wordless]:
    """Every event of the window as one row: normalized text and its per-event signals (zero
    results, no click, feedback, ticket, chat failure), one SQL builder per source (above);
    returns the number of events kept and what was left out."""
    raw = " UNION ALL ".join(f"({rows()})" for rows in SOURCE_ROWS)
    con.execute("DELETE FROM triage_events")
    con.execute(
        f"""
        INSERT INTO triage_events
        SELECT source, event_key, ts, session_id, {SEQ} AS seq,
               query, {norm_sql("query")}, NULL,
               coalesce(is_zero_results, false), coalesce(is_no_click, false), false,
               is_negative_feedback, is_ticket, is_chat_fail, false, false
        FROM ({raw}) WHERE query IS NOT NULL AND trim(query) <> ''
        """,
        [since, since] * len(SOURCE_ROWS),
    )
    fill_non_ascii(con, "triage_events", "query", "norm_query")
    n, examples = con.execute(
        "SELECT coalesce(sum(n), 0), list(query ORDER BY n DESC, query)[:3] FROM "
        "(SELECT query, count(*) AS n FROM triage_events WHERE norm_query = '' GROUP BY query)"
    ).fetchall()[0]
    con.execute("DELETE FROM triage_events WHERE norm_query = ''")
    kept = con.execute("SELECT count(*) FROM triage_events").fetchall()[0][0]
    return kept, Wordless(int(n), tuple(examples or ()))


def mark_session_signals(con: duckdb.DuckDBPyConnection, window_s: int = DEFAULT_WINDOW_S) -> int:
    """The signals that need session order (previous query, reformulation, follow-up), then
    ``is_failed`` over all of them; returns the number of events."""
    con.execute(
        f"""
        UPDATE triage_events SET
            prev_query = s.prev_q,
            is_reformulated = s.is_reformulated,
            is_follow_up = s.is_follow_up
        FROM ({session_sql("triage_events")}) s
        WHERE triage_events.source = s.source AND triage_events.event_key = s.event_key
        """,
        {"window": int(window_s)},
    )
    con.execute(f"UPDATE triage_events SET is_failed = {FAILED}")
    return con.execute("SELECT count(*) FROM triage_events").fetchall()[0][0]


def build_query_days(con: duckdb.DuckDBPyConnection, since: datetime | None = None) -> int:
    """Rebuild ``triage_query_days``: the events rolled up per source, day and normalized query
    (the rule Spark runs too), and beside them the summaries imported from Spark
    (``search_summaries``) whose last event is in the window. Returns the events they count."""
    columns = ", ".join(SUMMARY_COLUMNS)
    con.execute("DELETE FROM triage_query_days")
    con.execute(
        f"INSERT INTO triage_query_days ({columns}) SELECT {columns} "
        f"FROM ({query_day_sql('triage_events')})"
    )
    con.execute(
        f"INSERT INTO triage_query_days ({columns}) SELECT {columns} FROM search_summaries "
        f"WHERE ({_IN_WINDOW}) AND norm_query <> ''",
        [since, since],
    )
    return con.execute("SELECT coalesce(sum(n_events), 0) FROM triage_query_days").fetchall()[0][0]


_IN_WINDOW = "?::TIMESTAMP IS NULL OR last_seen >= ?::TIMESTAMP"


def summary_events(con: duckdb.DuckDBPyConnection, since: datetime | None = None) -> int:
    """Events counted by the imported summaries in the window (they have no per-event rows),
    but for queries of no words."""
    return con.execute(
        "SELECT coalesce(sum(n_events), 0) FROM search_summaries "
        f"WHERE ({_IN_WINDOW}) AND norm_query <> ''",
        [since, since],
    ).fetchall()[0][0]


def wordless_summaries(con: duckdb.DuckDBPyConnection, since: datetime | None = None) -> Wordless:
    """The summaries' searches of no letter or digit (an analytics export's "👍", "???"): left
    out as such events are (``normalize_events``), and counted. They were one summary of the
    empty normalized text, a top cluster and a starter pick."""
    n, examples = con.execute(
        "SELECT coalesce(sum(n), 0), list(q ORDER BY n DESC, q)[:3] FROM ("
        "SELECT s.query AS q, sum(s.n) AS n FROM (SELECT unnest(spellings) AS s "
        f"FROM search_summaries WHERE ({_IN_WINDOW}) AND norm_query = '') GROUP BY q)",
        [since, since],
    ).fetchall()[0]
    return Wordless(int(n), tuple(examples or ()))


def aggregate_queries(con: duckdb.DuckDBPyConnection, since: datetime | None = None) -> int:
    """Rebuild ``triage_query_days``, then ``triage_queries`` from it: one row per normalized
    query, with what is remembered of it. Its sessions are session-days: a session that runs past
    midnight counts once a day (a day is the unit summaries are kept in)."""
    build_query_days(con, since)
    sums = ",\n".join(f"sum({c})::BIGINT AS {c}" for c in COUNT_COLUMNS)
    con.execute("DELETE FROM triage_queries")
    con.execute(
        f"""
        INSERT INTO triage_queries BY NAME
        WITH spell AS (
            SELECT norm_query, sp.query AS query, sum(sp.n) AS n
            FROM (SELECT norm_query, unnest(spellings) AS sp FROM triage_query_days)
            GROUP BY ALL
        ),
        per_source AS (
            SELECT norm_query, source, sum(n_events)::BIGINT AS n FROM triage_query_days
            GROUP BY ALL
        ),
        agg AS (
            SELECT norm_query, {sums}, min(first_seen) AS first_seen, max(last_seen) AS last_seen
            FROM triage_query_days GROUP BY norm_query
        )
        SELECT agg.*, agg.n_failed / agg.n_events AS failure_rate, b.query, src.sources,
               src.n_by_source, sha256(agg.norm_query) AS text_hash,
               a.canonical_query, a.cluster_id, a.fuzzy_score
        FROM agg
        JOIN (SELECT norm_query,  -- a spelling holding no invisible character, where one does
                     first(query ORDER BY regexp_matches(query, $invisible), n DESC, query)
                         AS query
              FROM spell GROUP BY norm_query) b USING (norm_query)
        JOIN (SELECT norm_query, list(source ORDER BY source) AS sources,
                     json_group_object(source, n) AS n_by_source
              FROM per_source GROUP BY norm_query) src USING (norm_query)
        LEFT JOIN triage_assignments a USING (norm_query)
        """,
        {"invisible": IGNORABLE_RE2},
    )
    return con.execute("SELECT count(*) FROM triage_queries").fetchall()[0][0]


# The ingest tables triage reads events from: with none of them holding a row, there is nothing to
# triage (``triage run``) or show (``triage show``).
SOURCES = ("search_events", "search_summaries", "tickets", "chat_turns", "manual_queries")


def has_traffic(con: duckdb.DuckDBPyConnection) -> bool:
    union = " UNION ALL ".join(f"(SELECT 1 FROM {t} LIMIT 1)" for t in SOURCES)
    return bool(con.execute(f"SELECT count(*) FROM ({union})").fetchall()[0][0])
