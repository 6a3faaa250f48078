"""The per-event rules, written once: normalization, session order, the failure signals and the
roll-up to one row per source, day and normalized query.

Each rule is DuckDB SQL text over named columns. Triage runs it on ``triage_events`` (DuckDB);
``goldmine ingest … --engine spark`` runs the very same text on Spark after :func:`to_spark`
translates it with sqlglot, so the two engines cannot drift apart. Two functions Spark lacks are
given to it as Python UDFs under the names the translated SQL calls (:data:`SPARK_UDFS`): Jaro-
Winkler similarity (rapidfuzz, the algorithm DuckDB's ``jaro_winkler_similarity`` comes from) and
the non-ASCII half of normalization (:func:`goldmine.text.normalize_query` itself, since neither
engine's SQL has Unicode NFKC). ``tests/test_spark.py`` checks that the engines agree row for row.

Columns the rules read:

- search signals (:func:`search_signals`): ``shown`` (results shown: ``num_results``, else the
  length of the result list), ``clicks`` (clicked ids), ``tracks_clicks`` (the import batch, i.e.
  the file, records clicks at all), ``fb`` (feedback, lower-cased and trimmed);
- session order (:func:`session_sql`): ``source, event_key, ts, session_id, seq, query,
  norm_query``; ``seq`` is :data:`SEQ`;
- roll-up (:func:`query_day_sql`): the ``is_*`` flags, ``ts``, ``session_id``, ``query``.
"""

from __future__ import annotations

from functools import cache

from goldmine.errors import InputError

# The times a log's event can hold (DuckDB ``gm_in_time``, Spark ``translate._query_checks``):
# from the Unix epoch to 2099; fixed, not today's date, so a line gets the same reason on every
# import. Year 99999 and year 1 parse, and are rejects.
TIME_RANGE = ("1970-01-01 00:00:00", "2099-12-31 23:59:59.999999")
DEFAULT_WINDOW_S = 300  # five minutes: the usual bound for a query reformulation in a session


def reformulation_window(window_s: int | None, configured: int | None = None) -> int:
    """The reformulation window: as given, else goldmine.toml's (``configured``, which the command
    passes from the settings), else the default. Triage and the Spark engine
    (``ingest --engine spark``) both take it, so both mark reformulations alike."""
    if window_s is None:
        window_s = DEFAULT_WINDOW_S if configured is None else configured
    if window_s < 0:
        raise InputError(f"the reformulation window must be >= 0 seconds, not {window_s}")
    return window_s


NEGATIVE_FEEDBACK = (
    "negative",
    "down",
    "thumbs_down",
    "thumbsdown",
    "thumbs-down",
    "bad",
    "unhelpful",
    "not_helpful",
    "not helpful",
    "no",
    "dislike",
    "wrong",
)
# Words too common to make two queries "similar" by sharing them.
STOP_WORDS = (
    "the",
    "and",
    "for",
    "you",
    "your",
    "are",
    "was",
    "can",
    "how",
    "what",
    "why",
    "who",
    "when",
    "where",
    "which",
    "does",
    "did",
    "not",
    "with",
    "from",
    "have",
    "has",
    "this",
    "that",
    "there",
    "they",
    "them",
    "its",
    "into",
    "about",
    "get",
    "got",
    "but",
    "any",
    "all",
    "our",
    "out",
    "off",
    "will",
    "would",
    "could",
    "should",
    "been",
    "were",
    "just",
    "still",
    "why",
    "yet",
    "one",
)
# A turn whose meaning leans on the one before: opening words, and pronouns with no referent.
FOLLOW_UP_START = r"^(and|but|also|so|then|ok|okay|what about|how about|what if|and what|same)\b"
FOLLOW_UP_REF = r"\b(it|its|that|this|those|these|they|them|there|he|she|him|her|one|ones)\b"


# The per-source, per-day, per-query counts both engines produce (search_summaries and
# triage_query_days hold exactly these, in this order).
COUNT_COLUMNS = (
    "n_events",
    "n_sessions",
    "n_zero_results",
    "n_no_click",
    "n_reformulated",
    "n_negative_feedback",
    "n_tickets",
    "n_chat_fail",
    "n_failed",
    "n_follow_up",
)
SUMMARY_COLUMNS = (
    "source",
    "day",
    "norm_query",
    "spellings",
    "first_seen",
    "last_seen",
    *COUNT_COLUMNS,
)


def sql_list(values: tuple[str, ...]) -> str:
    """Constant words as a SQL list literal (module constants, never user input)."""
    return "[" + ", ".join("'" + v.replace("'", "''") + "'" for v in values) + "]"


def _in_list(values: tuple[str, ...]) -> str:
    return "(" + ", ".join("'" + v.replace("'", "''") + "'" for v in values) + ")"


def search_signals() -> dict[str, str]:
    """Each per-event signal of a search, as SQL over ``shown, clicks, tracks_clicks, fb``:
    zero results (nothing shown), no click (results shown, none clicked, in a log that records
    clicks), explicit negative feedback (a known word or a negative number)."""
    return {
        "is_zero_results": "coalesce(shown = 0, false)",
        "is_no_click": "coalesce(tracks_clicks AND shown > 0 AND clicks = 0, false)",
        "is_negative_feedback": (
            f"coalesce(fb IN {_in_list(NEGATIVE_FEEDBACK)} OR try_cast(fb AS DOUBLE) < 0, false)"
        ),
    }


# The usual web-log session cut: half an hour without a search (a log that names no session).
SESSION_GAP_S = 30 * 60

# Order within a session: by time (unknown times last), ties by the event's key.
SEQ = (
    "CASE WHEN session_id IS NOT NULL THEN row_number() OVER ("
    "PARTITION BY session_id ORDER BY ts NULLS LAST, event_key) END"
)


def user_sessions_sql(events: str) -> str:
    """Per search of ``events`` (``source, event_key, ts, session_id, user_id``) that has no
    session but a user and a time (a warehouse table's user_id and ts): ``user_session``, its
    user's session, cut at ``SESSION_GAP_S`` without a search as web logs are cut (the
    click-level reader's rule), known by its user and its first search's time. Without it no
    reformulation or follow-up could ever be told. Both engines run it (``to_spark``)."""
    return f"""
        SELECT source, event_key, 'user:' || user_id || '@' || CAST(max(
            CASE WHEN prev IS NULL OR date_diff('second', prev, ts) > {SESSION_GAP_S} THEN ts END)
            OVER (PARTITION BY user_id ORDER BY ts, event_key
                  ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS VARCHAR) AS user_session
        FROM (SELECT source, event_key, user_id, ts,
                     lag(ts) OVER (PARTITION BY user_id ORDER BY ts, event_key) AS prev
              FROM {events}
              WHERE session_id IS NULL AND user_id IS NOT NULL AND ts IS NOT NULL)
    """


def session_sql(events: str) -> str:
    """Per event of a session: the previous query, whether the next query (within ``$window``
    seconds) reformulates it (different but similar: a shared content word, or Jaro-Winkler >=
    0.85, a spelling fix), and whether it leans on the turn before (a follow-up)."""
    stop = sql_list(STOP_WORDS)
    return f"""
        SELECT source, event_key, prev_q,
               coalesce(next_norm IS NOT NULL AND next_norm <> norm_query
                   AND (next_ts IS NULL OR ts IS NULL
                        OR date_diff('microsecond', ts, next_ts) <= $window * 1000000)
                   AND (list_has_any(words, next_words)
                        OR jaro_winkler_similarity(norm_query, next_norm) >= 0.85), false)
                   AS is_reformulated,
               coalesce(seq > 1 AND (regexp_matches(norm_query, '{FOLLOW_UP_START}')
                   OR regexp_matches(norm_query, '{FOLLOW_UP_REF}')
                   OR (source = 'chat' AND array_length(string_split(norm_query, ' ')) <= 2)),
                   false) AS is_follow_up
        FROM (
            SELECT *, lead(norm_query) OVER w AS next_norm, lead(ts) OVER w AS next_ts,
                   lag(query) OVER w AS prev_q,
                   lead(words) OVER w AS next_words
            FROM (SELECT *, list_filter(string_split(norm_query, ' '),
                              lambda t: length(t) >= 3 AND NOT list_contains({stop}, t))
                              AS words
                  FROM {events} WHERE session_id IS NOT NULL)
            WINDOW w AS (PARTITION BY session_id ORDER BY seq)
        )
    """


FAILED = (
    "is_zero_results OR is_no_click OR is_reformulated OR is_negative_feedback OR is_ticket "
    "OR is_chat_fail"
)


def query_day_sql(events: str) -> str:
    """One row per source, day (UTC) and normalized query: the counts of each signal, the
    distinct sessions, first and last time, and each original spelling with its count. A day is
    the unit a summary is kept in, so rows from several imports add up."""
    flags = {
        "n_zero_results": "is_zero_results",
        "n_no_click": "is_no_click",
        "n_reformulated": "is_reformulated",
        "n_negative_feedback": "is_negative_feedback",
        "n_tickets": "is_ticket",
        "n_chat_fail": "is_chat_fail",
        "n_failed": "is_failed",
        "n_follow_up": "is_follow_up",
    }
    counts = ", ".join(f"count_if({flag}) AS {name}" for name, flag in flags.items())
    return f"""
        WITH gm_ev AS (SELECT *, CAST(ts AS DATE) AS day FROM {events}),
        agg AS (
            SELECT source, day, norm_query, min(ts) AS first_seen, max(ts) AS last_seen,
                   count(*) AS n_events, count(DISTINCT session_id) AS n_sessions,
                   {counts}
            FROM gm_ev GROUP BY source, day, norm_query
        ),
        spelled AS (
            SELECT source, day, norm_query, query, count(*) AS n
            FROM gm_ev GROUP BY source, day, norm_query, query
        ),
        spellings AS (
            SELECT source, day, norm_query,
                   list_sort(list(struct_pack(query := query, n := n))) AS spellings
            FROM spelled GROUP BY source, day, norm_query
        )
        SELECT a.source, a.day, a.norm_query, s.spellings, a.first_seen, a.last_seen,
               {", ".join(f"a.{c}" for c in COUNT_COLUMNS)}
        FROM agg a JOIN spellings s
          ON a.source = s.source AND a.norm_query = s.norm_query
         AND a.day IS NOT DISTINCT FROM s.day
    """


@cache
def _spark_dialect():
    """sqlglot's Spark dialect, corrected where its output does not run on Spark 4: a list
    overlap is ``arrays_overlap``, not the ``&&`` operator."""
    from sqlglot import exp
    from sqlglot.dialects.spark import Spark

    class GoldmineSpark(Spark):
        class Generator(Spark.Generator):
            TRANSFORMS = {
                **Spark.Generator.TRANSFORMS,
                exp.ArrayOverlaps: lambda self, e: self.func(
                    "ARRAYS_OVERLAP", e.this, e.expression
                ),
            }

    return GoldmineSpark


@cache
def to_spark(sql: str) -> str:
    """The DuckDB SQL of a rule in Spark SQL (sqlglot); ``$name`` parameters become ``:name``."""
    import sqlglot

    return sqlglot.transpile(sql, read="duckdb", write=_spark_dialect())[0]


def _jaro_winkler(a, b):
    """Jaro-Winkler of each pair of two Arrow string arrays (NULL where either is), in one
    vectorized rapidfuzz call: Spark hands the UDF whole batches, not rows."""
    import numpy as np
    import pyarrow as pa
    from rapidfuzz import process
    from rapidfuzz.distance import JaroWinkler

    left, right = a.to_pylist(), b.to_pylist()
    scores = process.cpdist(
        [x or "" for x in left],
        [y or "" for y in right],
        scorer=JaroWinkler.normalized_similarity,
        dtype=np.float64,
        workers=1,
    )
    known = [x is not None and y is not None for x, y in zip(left, right, strict=True)]
    return pa.array([float(s) if k else None for s, k in zip(scores, known, strict=True)])


def _normalize(text: str | None) -> str | None:
    from goldmine.text import normalize_query

    return None if text is None else normalize_query(text)


# Spark SQL function name (as the translated SQL calls it) -> (Python function, return type,
# whether it takes Arrow batches). Jaro-Winkler runs on every pair of consecutive queries in a
# session, so it is vectorized; normalization only on the distinct non-ASCII texts.
SPARK_UDFS = {
    "jarowinkler_similarity": (_jaro_winkler, "double", True),
    "gm_normalize_query": (_normalize, "string", False),
}
