"""Drafting: a built-in retriever proposes candidate chunks for the items nobody has labelled.

A draft is never gold: it lands as ``kind = 'draft'`` rows with the retriever's rank and score, and
the item's status says ``drafted`` and by what. The retriever (``goldmine.retrieval``) runs
over the current corpus snapshot: BM25 via bm25s, dense via the bundled MiniLM, or both fused.

The store is open only to read the items and chunks and, at the end, to write the drafts in one
transaction: the index build, the embedding (chunk and query vectors cached through
:func:`goldmine.embed.embed_closed`) and the search run with it closed, so ``gold list`` or
``status`` in another terminal work meanwhile. Each step is named on stderr, with a bar over the
embedding and the queries.

The dense side embeds with triage's backend choice (:func:`goldmine.embed.draft_backend`:
onnx-int8 unless ``[embed] backend`` or GOLDMINE_EMBED_BACKEND says otherwise), chunks and queries
alike, in triage's cache, so the queries triage embedded are not embedded again. On Cranfield
(1,398 chunks, 225 queries, hybrid, an empty cache) that is 53 s of CPU instead of torch's 111 s,
and the drafted top-10 lists hardly move: 94% of their chunks in common, recall@10 against
cranqrel 0.455 both ways (bench/bench_draft.py). A draft is a proposal a person grades; the eval's
``--baseline dense`` keeps torch, the reference its figures are checked against (FACTS.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from goldmine.errors import InputError, NotFoundError
from goldmine.goldset.items import current_snapshot, now
from goldmine.output import progress, step
from goldmine.store import WRITE_WAIT_S, Store, registered, transaction

if TYPE_CHECKING:
    import duckdb

RETRIEVERS = ("bm25", "dense", "hybrid")
QUERY_BATCH = 64  # queries per search call: the bar's step, and dense encoding's batch


@dataclass
class Drafted:
    items: int
    drafts: int
    retriever: str
    snapshot_id: int | None


# Candidates nobody has labelled: what a draft is for.
_UNLABELLED = """status = 'candidate' AND NOT EXISTS (
    SELECT 1 FROM gold_labels l WHERE l.query_id = i.query_id AND l.kind = 'label')"""


def _inputs(con: duckdb.DuckDBPyConnection) -> tuple[int, Any, Any]:
    """The current snapshot, the items to draft (query_id, query, position), its chunks; None
    and None when no item waits for a draft."""
    snapshot_id, _ = current_snapshot(con)
    if snapshot_id is None:
        raise NotFoundError("no corpus in the store: ingest one first (`goldmine ingest corpus`)")
    # Nothing to draft (a re-run, or `--judge llm` on drafted items): no dataframe to build.
    if not con.execute(f"SELECT count(*) FROM gold_items i WHERE {_UNLABELLED}").fetchall()[0][0]:
        return snapshot_id, None, None
    items = con.sql(
        f"SELECT query_id, query, position FROM gold_items i WHERE {_UNLABELLED} ORDER BY position"
    ).pl()
    chunks = con.sql(
        "SELECT chunk_id, title, text FROM chunks WHERE snapshot_id = ? ORDER BY chunk_id",
        params=[snapshot_id],
    ).pl()
    return snapshot_id, items, chunks


def _retriever(store: Store, kind: str, chunks, queries: list[str]) -> tuple[Any, Any]:
    """The retriever over the chunks, built with the store closed, and the queries' vectors
    (None for BM25): chunks and queries embedded in one pass, with the drafts' backend, cached."""
    from goldmine.embed import cache_key, draft_backend, embed_closed
    from goldmine.retrieval import BM25Retriever, DenseRetriever, HybridRetriever, documents

    if chunks.height == 0:
        raise NotFoundError("the current corpus snapshot has no chunks")
    ids, titles, texts = (chunks[c].to_list() for c in ("chunk_id", "title", "text"))
    bm25 = None
    if kind in ("bm25", "hybrid"):
        step("draft", f"index {len(ids):,} chunks", "BM25")
        bm25 = BM25Retriever(ids, titles, texts)
        if kind == "bm25":
            return bm25, None
    backend = draft_backend()
    step(
        "draft", f"embed {len(ids):,} chunks and {len(queries):,} queries", cache_key(None, backend)
    )
    docs = documents(titles, texts)
    embedded = embed_closed(store, docs + queries, description="embedding", backend=backend)
    step(
        "draft", "vectors", f"{embedded.n_encoded:,} encoded, {embedded.n_cached:,} from the cache"
    )
    vectors = embedded.vectors
    dense = DenseRetriever(ids, texts, titles=titles, vectors=vectors[: len(docs)], backend=backend)
    retriever = dense if bm25 is None else HybridRetriever(bm25, dense)
    return retriever, vectors[len(docs) :]


def _search(retriever: Any, queries: list[str], k: int, kind: str, vectors: Any) -> list:

    step("draft", f"search {len(queries):,} queries", kind)
    hits: list = []
    with progress(f"drafting with {kind}", total=len(queries)) as advance:
        for start in range(0, len(queries), QUERY_BATCH):
            batch = queries[start : start + QUERY_BATCH]
            if vectors is None:
                hits.extend(retriever.search(batch, k))
            else:
                hits.extend(retriever.search(batch, k, vectors[start : start + QUERY_BATCH]))
            advance(len(batch))
    return hits


def draft(store: Store, retriever: str = "bm25", k: int = 10, *, by: str) -> Drafted:
    """Top-k chunks for every candidate (no label yet), written as drafts in one transaction."""
    if retriever not in RETRIEVERS:
        raise InputError(f"--retriever must be one of {', '.join(RETRIEVERS)}, not {retriever!r}")
    if k < 1:
        raise InputError("-k must be at least 1")
    with store.open() as con:
        snapshot_id, items, chunks = _inputs(con)
    if items is None:
        return Drafted(0, 0, retriever, snapshot_id)
    import polars as pl

    queries = items["query"].to_list()
    built, vectors = _retriever(store, retriever, chunks, queries)
    ranked = _search(built, queries, k, retriever, vectors)
    hits = pl.DataFrame(
        [
            (qid, str(chunk_id), rank, float(score))
            for qid, found in zip(items["query_id"], ranked, strict=True)
            for rank, (chunk_id, score) in enumerate(found[:k], 1)
        ],
        schema={"query_id": pl.Utf8, "chunk_id": pl.Utf8, "rank": pl.Int64, "score": pl.Float64},
        orient="row",
    )
    with store.open(wait=WRITE_WAIT_S) as con, transaction(con):
        todo = items.select("query_id", "position")
        n_items, n_drafts = _write(con, todo, hits, retriever, k, snapshot_id)
    return Drafted(n_items, n_drafts, retriever, snapshot_id)


def _write(con, items, hits, retriever: str, k: int, snapshot_id: int) -> tuple[int, int]:
    """The drafts of the items still unlabelled (a person may have labelled one meanwhile):
    old drafts replaced, status drafted, one history row each. Returns (items, drafts)."""
    who, at = f"retriever:{retriever}", now()
    with registered(con, _gm_items=items, _gm_hits=hits):
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE _gm_draft AS SELECT query_id, position FROM _gm_items
                WHERE query_id IN (SELECT query_id FROM gold_items i WHERE {_UNLABELLED})"""
        )
        con.execute(
            "DELETE FROM gold_labels WHERE kind = 'draft' "
            "AND query_id IN (SELECT query_id FROM _gm_draft)"
        )
        con.execute(
            """INSERT INTO gold_labels (query_id, chunk_id, kind, rank, score, source,
                   text_hash, snapshot_id, who, ts)
               SELECT h.query_id, h.chunk_id, 'draft', h.rank, h.score, ?, c.text_hash, ?, ?, ?
               FROM _gm_hits h JOIN _gm_draft USING (query_id)
               LEFT JOIN chunks c ON c.snapshot_id = ? AND c.chunk_id = h.chunk_id""",
            [retriever, snapshot_id, who, at, snapshot_id],
        )
        con.execute(
            "UPDATE gold_items SET status = 'drafted', drafted_by = ?, updated_at = ? "
            "WHERE query_id IN (SELECT query_id FROM _gm_draft)",
            [who, at],
        )
        # One history row per item, the detail as goldset.items.record writes it (sorted keys).
        con.execute(
            """INSERT INTO gold_history
               SELECT nextval('gold_history_seq'), d.query_id, ?, ?, 'draft',
                      '{"chunks": ' || coalesce(to_json(list(h.chunk_id ORDER BY h.rank)
                          FILTER (WHERE h.chunk_id IS NOT NULL))::VARCHAR, '[]')
                      || ', "k": ' || ? || ', "snapshot_id": ' || ? || '}'
               FROM _gm_draft d LEFT JOIN _gm_hits h USING (query_id)
               GROUP BY d.query_id, d.position ORDER BY d.position""",
            [at, who, k, snapshot_id],
        )
        n_items, n_drafts = con.execute(
            "SELECT (SELECT count(*) FROM _gm_draft), "
            "(SELECT count(*) FROM _gm_hits WHERE query_id IN (SELECT query_id FROM _gm_draft))"
        ).fetchall()[0]
        con.execute("DROP TABLE _gm_draft")
    return n_items, n_drafts
