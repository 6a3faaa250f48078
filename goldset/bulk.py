"""Writing many gold items, labels and history rows at once: one schema, one history writer.

Importing a file or restoring a published version adds thousands of verified items; drift and
remap touch hundreds. Row by row through ``goldset.items`` that is a statement per row, so these
paths stage polars frames and insert each table in one statement. The history keeps its order
(an item's version is the id of its last history row, DEVELOPERS.md): ``append_history`` numbers
its rows from a block reserved on the sequence, never by ``nextval`` inside a scan.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import polars as pl

from goldmine.goldset.items import reserve
from goldmine.store import registered

if TYPE_CHECKING:
    import duckdb

_TEXT = pl.Utf8
# A verified item as the bulk paths write it; timestamps as ISO text, cast in SQL.
ITEM_SCHEMA: dict[str, Any] = {
    "query_id": _TEXT,
    "query": _TEXT,
    "norm_query": _TEXT,
    "context": _TEXT,
    "cluster_id": pl.Int64,
    "no_answer": pl.Boolean,
    "tags": pl.List(_TEXT),
    "origin": _TEXT,
    "reason": _TEXT,
    "sources": pl.List(_TEXT),
    "source_ids": pl.List(_TEXT),
    "frequency": pl.Int64,
    "first_seen": _TEXT,
    "last_seen": _TEXT,
    "notes": pl.List(_TEXT),
    "verified_by": _TEXT,
    "verified_at": _TEXT,
}
LABEL_SCHEMA: dict[str, Any] = {
    "query_id": _TEXT,
    "chunk_id": _TEXT,
    "grade": pl.Int64,
    "text_hash": _TEXT,
    "snapshot_id": pl.Int64,
    "who": _TEXT,
    "ts": _TEXT,
    "source": _TEXT,
}
HISTORY_SCHEMA: dict[str, Any] = {
    "query_id": _TEXT,
    "ts": _TEXT,
    "who": _TEXT,
    "action": _TEXT,
    "detail": _TEXT,
}


def item_row(**values: Any) -> dict[str, Any]:
    """One row of ITEM_SCHEMA: the values given, the lists empty and the rest NULL otherwise."""
    lists = {k: [] for k, t in ITEM_SCHEMA.items() if isinstance(t, pl.List)}
    if isinstance(values.get("query"), str):  # as add_item stores it: no white space around
        values = {**values, "query": values["query"].strip()}
    row = {k: None for k in ITEM_SCHEMA} | lists | values
    unknown = set(row) - set(ITEM_SCHEMA)
    if unknown:
        raise ValueError(f"not gold item columns: {sorted(unknown)}")
    return row


def insert_verified_items(con: duckdb.DuckDBPyConnection, rows: list[dict], at: str) -> None:
    """Rows of ITEM_SCHEMA as verified items, in order; created/updated at their verification
    time, else ``at``."""
    if not rows:
        return
    with registered(con, gold_bulk_items=pl.DataFrame(rows, schema=ITEM_SCHEMA)):
        con.execute(
            """INSERT INTO gold_items (query_id, position, query, norm_query, context,
                   cluster_id, status, no_answer, tags, origin, reason, sources, source_ids,
                   frequency, first_seen, last_seen, notes, verified_by, verified_at,
                   created_at, updated_at)
               SELECT query_id, nextval('gold_position_seq'), query, norm_query, context,
                      cluster_id, 'verified', no_answer, tags, origin, reason, sources,
                      source_ids, frequency, first_seen::TIMESTAMP, last_seen::TIMESTAMP, notes,
                      verified_by, verified_at::TIMESTAMP, coalesce(verified_at, ?)::TIMESTAMP,
                      coalesce(verified_at, ?)::TIMESTAMP
               FROM gold_bulk_items""",
            [at, at],
        )


def insert_labels(con: duckdb.DuckDBPyConnection, rows: Sequence[tuple]) -> None:
    """(query_id, chunk_id, grade, text_hash, snapshot_id, who, ts, source) tuples as people's
    labels; a source None (a version frozen before sources were kept) is "import"."""
    if not rows:
        return
    frame = pl.DataFrame(rows, orient="row", schema=LABEL_SCHEMA)
    with registered(con, gold_bulk_labels=frame):
        con.execute(
            """INSERT INTO gold_labels (query_id, chunk_id, kind, grade, source, text_hash,
                   snapshot_id, who, ts)
               SELECT query_id, chunk_id, 'label', grade, coalesce(source, 'import'), text_hash,
                      snapshot_id, who, ts::TIMESTAMP
               FROM gold_bulk_labels"""
        )


def history_row(
    query_id: str, action: str, detail: dict | str, *, at: datetime | str, who: str | None
) -> tuple:
    """A history row as ``append_history`` takes it; a dict detail is written with sorted keys,
    as ``goldset.items.record`` writes it."""
    if not isinstance(detail, str):
        detail = json.dumps(detail, sort_keys=True, ensure_ascii=False)
    when = at if isinstance(at, str) else at.isoformat()
    return (query_id, when, who, action, detail)


def append_history(con: duckdb.DuckDBPyConnection, rows: Sequence[tuple]) -> None:
    """History rows (``history_row``), numbered in the order given, in one statement."""
    if not rows:
        return
    frame = pl.DataFrame(rows, orient="row", schema=HISTORY_SCHEMA).with_row_index("ord")
    first = reserve(con, "gold_history_seq", len(rows))
    with registered(con, gold_bulk_history=frame):
        con.execute(
            """INSERT INTO gold_history
               SELECT ? + ord, query_id, ts::TIMESTAMP, who, action, detail
               FROM gold_bulk_history""",
            [first],
        )


def insert_graded(
    con: duckdb.DuckDBPyConnection,
    rows: Sequence[tuple[str, str, int]],
    *,
    snapshot_id: int | None,
    by: str,
    at: datetime,
) -> int:
    """(query_id, chunk_id, grade) as labels from a file, in place of any draft of the same chunk;
    their passages kept in ``gold_texts`` as ``items.set_grade`` keeps them. Returns how many
    chunk ids the current snapshot does not hold (a label is kept without its text)."""
    if not rows:
        return 0
    frame = pl.DataFrame(
        rows, schema={"query_id": _TEXT, "chunk_id": _TEXT, "grade": pl.Int64}, orient="row"
    )
    with registered(con, gold_incoming=frame):
        con.execute(
            """DELETE FROM gold_labels l USING gold_incoming i
               WHERE l.query_id = i.query_id AND l.chunk_id = i.chunk_id"""
        )
        con.execute(
            """INSERT INTO gold_labels (query_id, chunk_id, kind, grade, source,
                   text_hash, snapshot_id, who, ts)
               SELECT i.query_id, i.chunk_id, 'label', i.grade, 'import', c.text_hash,
                      CASE WHEN c.chunk_id IS NULL THEN NULL ELSE ? END, ?, ?
               FROM gold_incoming i LEFT JOIN chunks c
                 ON c.snapshot_id = ? AND c.chunk_id = i.chunk_id""",
            [snapshot_id, by, at, snapshot_id],
        )
        con.execute(
            """INSERT INTO gold_texts SELECT DISTINCT c.text_hash, c.text
               FROM gold_incoming i JOIN chunks c
                 ON c.snapshot_id = ? AND c.chunk_id = i.chunk_id
               WHERE c.text_hash NOT IN (SELECT text_hash FROM gold_texts)""",
            [snapshot_id],
        )
        return con.execute(
            "SELECT count(*) FROM gold_incoming i WHERE NOT EXISTS (SELECT 1 FROM chunks"
            " c WHERE c.snapshot_id = ? AND c.chunk_id = i.chunk_id)",
            [snapshot_id],
        ).fetchall()[0][0]
