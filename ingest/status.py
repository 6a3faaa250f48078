"""What is in the store: counts per table and source, the last batches, the rejected rows."""

from __future__ import annotations

from typing import Any

import duckdb

from goldmine.errors import NotFoundError
from goldmine.store import fetch_dicts

_TABLES = (
    ("search_events", "source"),
    ("search_summaries", "source"),  # rows are query-days summarized by Spark, not events
    ("tickets", None),
    ("chat_turns", None),
    ("manual_queries", "source"),
    ("chunks", None),
    ("rejects", None),
)


def status(con: duckdb.DuckDBPyConnection, last: int = 10) -> dict[str, Any]:
    counts = []
    for table, by in _TABLES:
        if by:
            rows = con.execute(
                f"SELECT {by}, count(*) FROM {table} GROUP BY {by} ORDER BY {by}"
            ).fetchall()
            counts.extend({"table": table, "source": s, "rows": n} for s, n in rows)
            if not rows:
                counts.append({"table": table, "source": None, "rows": 0})
        else:
            n = con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
            counts.append({"table": table, "source": None, "rows": n})
    snapshot = con.execute(
        "SELECT snapshot_id, n_chunks, content_hash, created_at FROM corpus_snapshots "
        "ORDER BY snapshot_id DESC LIMIT 1"
    ).fetchall()
    batches = fetch_dicts(
        con,
        """
        SELECT batch_id, source, path, format, started_at, finished_at, rows_in, stored, rejected,
               already_present, watermark
        FROM import_batches ORDER BY batch_id DESC LIMIT ?""",
        [last],
    )
    return {
        "counts": counts,
        "triage": _triage(con),
        "gold": _gold(con),
        "corpus": dict(
            zip(("snapshot_id", "n_chunks", "content_hash", "created_at"), snapshot[0], strict=True)
        )
        if snapshot
        else None,
        "batches": batches,
    }


def rejects(
    con: duckdb.DuckDBPyConnection, batch: int | None = None, limit: int = 100
) -> list[dict[str, Any]]:
    if batch is not None:
        found = con.execute(
            "SELECT count(*) FROM import_batches WHERE batch_id = ?", [batch]
        ).fetchall()[0][0]
        if not found:
            raise NotFoundError(f"no import batch {batch} (see `goldmine status`)")
    return fetch_dicts(
        con,
        """
        SELECT batch_id, path, line, reason, raw FROM rejects
        WHERE ?::BIGINT IS NULL OR batch_id = ?
        ORDER BY batch_id, line LIMIT ?""",
        [batch, batch, limit],
    )


def top_reasons(
    con: duckdb.DuckDBPyConnection, batches: list[tuple[int, str]], n: int = 3
) -> list[tuple[str, int]]:
    """The commonest kinds of reject in these batches' files, most first. A kind is the reason
    up to its first ": ", where the row's own value follows ("unknown role: wizard"), so a
    thousand bad timestamps are one kind, not a thousand."""
    if not batches:
        return []
    ids, paths = [b for b, _ in batches], [p for _, p in batches]
    return con.execute(
        """
        SELECT split_part(r.reason, ': ', 1) AS kind, count(*) AS n
        FROM rejects r JOIN (SELECT unnest(?) AS b, unnest(?) AS p) k
            ON r.batch_id = k.b AND r.path = k.p
        GROUP BY kind ORDER BY n DESC, kind LIMIT ?""",
        [ids, paths, n],
    ).fetchall()


def _triage(con: duckdb.DuckDBPyConnection) -> dict[str, Any] | None:
    """The latest triage run: when, its status, queries and clusters (None before the first);
    when it did not finish, ``served`` is the finished run ``triage show`` serves (or None)."""
    sql = ("SELECT run_id, status, finished_at, n_queries, n_clusters FROM triage_runs "
           "{} ORDER BY run_id DESC LIMIT 1")  # fmt: skip
    runs = fetch_dicts(con, sql.format(""))
    if not runs:
        return None
    latest = runs[0]
    if latest["status"] != "done":
        done = fetch_dicts(con, sql.format("WHERE status = 'done'"))
        latest["served"] = done[0] if done else None
    return latest


def _gold(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """The gold set's items by status and its latest published version: the labelling day's
    progress."""
    items = dict(
        con.execute(
            "SELECT status, count(*) FROM gold_items GROUP BY status ORDER BY status"
        ).fetchall()
    )
    latest = fetch_dicts(
        con,
        "SELECT version, published_at, n_items, n_answerable, n_labels FROM gold_versions "
        "ORDER BY version DESC LIMIT 1",
    )
    return {"items": items, "latest_version": latest[0] if latest else None}
