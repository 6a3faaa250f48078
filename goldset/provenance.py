"""Where a query came from: the raw events, tickets and chat turns behind a normalized query.

Triage keeps one row per normalized query; the gold item wants the source ids, a few raw examples
to show the reviewer, and for a follow-up the turns before it. The lookup normalizes the raw text in
SQL (close to ``goldmine.text.normalize_query``: lower case, punctuation to spaces, spaces
collapsed) and confirms each match with the Python definition.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from goldmine.goldset.items import fetch_dicts
from goldmine.text import norm_any_sql, normalize_query

if TYPE_CHECKING:
    import duckdb


@dataclass
class Origin:
    source_ids: list[str] = field(default_factory=list)
    examples: list[dict] = field(default_factory=list)
    context: str | None = None


def _raw_rows(con: duckdb.DuckDBPyConnection, norms: list[str], limit: int) -> list[dict]:
    """Raw rows whose normalized text is one of ``norms`` (at most ``limit`` per query)."""
    sql = f"""
    WITH wanted AS (SELECT unnest(?::VARCHAR[]) AS norm),
    raw AS (
        SELECT 'searchlog' AS source, event_id AS source_id, ts, query AS text,
               session_id AS thread, NULL::INTEGER AS turn, {norm_any_sql(con, "query")} AS norm
        FROM search_events
        UNION ALL
        SELECT 'tickets', ticket_id, ts, question, NULL, NULL, {norm_any_sql(con, "question")}
        FROM tickets
        UNION ALL
        SELECT 'chat', conversation_id || '#' || turn, ts, text, conversation_id, turn,
               {norm_any_sql(con, "text")}
        FROM chat_turns WHERE role = 'user'
        UNION ALL
        SELECT 'manual', query_id, ts, query, NULL, NULL, {norm_any_sql(con, "query")}
        FROM manual_queries
    )
    SELECT * FROM (
        SELECT raw.*, row_number() OVER (PARTITION BY raw.norm ORDER BY ts DESC NULLS LAST,
               source, source_id) AS n
        FROM raw JOIN wanted USING (norm)
    ) WHERE n <= ? ORDER BY norm, n
    """
    return fetch_dicts(con, sql, [norms, limit])


def _chat_context(con: duckdb.DuckDBPyConnection, conversation: str, turn: int) -> str | None:
    rows = con.execute(
        "SELECT role, text FROM chat_turns WHERE conversation_id = ? AND turn < ?"
        " ORDER BY turn DESC LIMIT 4",
        [conversation, turn],
    ).fetchall()
    return "\n".join(f"{role}: {text}" for role, text in reversed(rows)) or None


def _search_context(con: duckdb.DuckDBPyConnection, session: str, event_id: str) -> str | None:
    rows = con.execute(
        """SELECT query FROM search_events WHERE session_id = ? AND ts < (
               SELECT ts FROM search_events WHERE event_id = ? LIMIT 1)
           ORDER BY ts DESC LIMIT 6""",
        [session, event_id],
    ).fetchall()
    lines: list[str] = []
    for (query,) in reversed(rows):
        if not lines or lines[-1] != f"user: {query}":  # a repeated search is one turn
            lines.append(f"user: {query}")
    return "\n".join(lines[-3:]) or None


def origins(
    con: duckdb.DuckDBPyConnection,
    norms: list[str],
    *,
    follow_ups: set[str] = frozenset(),
    limit: int = 20,
) -> dict[str, Origin]:
    """Source ids and examples per normalized query; context for those in ``follow_ups``."""
    found: dict[str, Origin] = {n: Origin() for n in norms}
    if not norms:
        return found
    threads: dict[str, list[dict]] = {}
    for row in _raw_rows(con, list(norms), limit):
        norm = row["norm"]
        if normalize_query(row["text"]) != norm:
            continue
        origin = found[norm]
        origin.source_ids.append(f"{row['source']}:{row['source_id']}")
        if len(origin.examples) < 5 and all(e["text"] != row["text"] for e in origin.examples):
            origin.examples.append({"source": row["source"], "ts": row["ts"], "text": row["text"]})
        if norm in follow_ups and row["thread"] is not None:
            threads.setdefault(norm, []).append(row)
    for norm, rows in threads.items():
        # A chat conversation carries the assistant's side too, so it is the better context.
        rows.sort(key=lambda r: r["source"] != "chat")
        for row in rows:
            if row["source"] == "chat":
                context = _chat_context(con, row["thread"], row["turn"])
            elif row["source"] == "searchlog":
                context = _search_context(con, row["thread"], row["source_id"])
            else:
                continue
            if context:
                found[norm].context = context
                break
    return found
