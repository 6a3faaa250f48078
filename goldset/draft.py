"""Drafting: a built-in retriever proposes candidate chunks for the items nobody has labelled.

A draft is never gold: it lands as ``kind = 'draft'`` rows with the retriever's rank and score, and
the item's status says ``drafted`` and by what. The retriever (``goldmine.eval.baselines``) runs
over the current corpus snapshot: BM25 via bm25s, dense via the bundled MiniLM, or both fused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from goldmine.goldset.items import current_snapshot, fetch_dicts, now, record

from goldmine.errors import InputError, NotFoundError
from goldmine.store import transaction

if TYPE_CHECKING:
    import duckdb

RETRIEVERS = ("bm25", "dense", "hybrid")


@dataclass
class Drafted:
    items: int
    drafts: int
    retriever: str
    snapshot_id: int | None


def draft(
    con: duckdb.DuckDBPyConnection, retriever: str = "bm25", k: int = 10, *, by: str
) -> Drafted:
    """Top-k chunks for every candidate (no label yet), written as drafts in one transaction."""
    if retriever not in RETRIEVERS:
        raise InputError(f"--retriever must be one of {', '.join(RETRIEVERS)}, not {retriever!r}")
    if k < 1:
        raise InputError("-k must be at least 1")
    snapshot_id, _ = current_snapshot(con)
    if snapshot_id is None:
        raise NotFoundError("no corpus in the store: ingest one first (`goldmine ingest corpus`)")
    items = fetch_dicts(
        con,
        """SELECT query_id, query, context FROM gold_items i WHERE status = 'candidate'
           AND NOT EXISTS (SELECT 1 FROM gold_labels l WHERE l.query_id = i.query_id
                           AND l.kind = 'label')
           ORDER BY position""",
    )
    if not items:
        return Drafted(0, 0, retriever, snapshot_id)
    # The store may be opened through the bare C module (goldmine.store.duckdb_engine); the
    # retriever uses the connection's Python helpers (``con.sql``), which importing duckdb adds.
    import duckdb  # noqa: F401
    from goldmine.eval.baselines import build_retriever

    ranked = build_retriever(con, kind=retriever).search([i["query"] for i in items], k)
    hashes = dict(
        con.execute(
            "SELECT chunk_id, text_hash FROM chunks WHERE snapshot_id = ?", [snapshot_id]
        ).fetchall()
    )
    at = now()
    n_drafts = 0
    who = f"retriever:{retriever}"
    with transaction(con):
        for item, hits in zip(items, ranked, strict=True):
            qid = item["query_id"]
            rows = [
                [
                    qid,
                    str(chunk_id),
                    rank,
                    float(score),
                    retriever,
                    hashes.get(str(chunk_id)),
                    snapshot_id,
                    who,
                    at,
                ]
                for rank, (chunk_id, score) in enumerate(hits[:k], 1)
            ]
            con.execute("DELETE FROM gold_labels WHERE query_id = ? AND kind = 'draft'", [qid])
            if rows:
                con.executemany(
                    """INSERT INTO gold_labels (query_id, chunk_id, kind, rank, score, source,
                           text_hash, snapshot_id, who, ts)
                       VALUES (?, ?, 'draft', ?, ?, ?, ?, ?, ?, ?)""",
                    rows,
                )
            con.execute(
                "UPDATE gold_items SET status = 'drafted', drafted_by = ?, updated_at = ?"
                " WHERE query_id = ?",
                [who, at, qid],
            )
            record(
                con,
                qid,
                "draft",
                who,
                {"k": k, "chunks": [r[1] for r in rows], "snapshot_id": snapshot_id},
                at,
            )
            n_drafts += len(rows)
    return Drafted(len(items), n_drafts, retriever, snapshot_id)
