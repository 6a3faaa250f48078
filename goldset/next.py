"""What to label next: ``goldmine gold next``.

**To settle a comparison** (``--for-compare A B``): the minimal-test-collection idea of Carterette,
Allan and Sitaraman (SIGIR 2006). Take DCG@k with the gold grades as gains (``ndcg@k`` before its
normalisation). The difference between two runs on a query is a sum over chunks,

    delta = sum_c grade(c) * (disc_B(c) - disc_A(c)),  disc(r) = 1 / log2(r + 1) for r <= k, else 0,

so a chunk's label can move the difference by at most ``max_grade * |disc_B(c) - disc_A(c)|``: its
weight. A chunk both runs put at the same rank weighs 0 (its label cannot change the comparison);
one retrieved by one run at rank 1 and not by the other weighs most (1). The unjudged pairs are
proposed heaviest first (ties: the better rank, then query and chunk id), up to ``budget``.

The same sums bound the comparison as it stands: the judged chunks give the known part of the mean
delta; each unjudged one could add anything between ``max_grade * min(0, disc_B - disc_A)`` and
``max_grade * max(0, disc_B - disc_A)``. When the bounds leave out 0 the sign of the mean DCG@k
difference is settled whatever the unjudged chunks turn out to be, and labelling more cannot change
it (whether the difference is outside the noise is ``eval compare``'s question). Queued, the
proposed pairs become drafts (``source = 'next'``, ``rank`` their order, ``score`` their weight) on
their items, which move to the front of the review queue in that order; a verified item with a new
draft goes back to review (``items.settle``).

**To grow the set** (the default): the clusters no verified or published gold item covers (as
``triage show`` says it; one still "in review" is listed, so its waiting item is labelled),
ordered by expected information, ``volume x failure rate x novelty``: how much traffic, how much
of it fails, and how little the gold set already says about it, ``novelty = 1 - max
cosine(centroid, covered centroids)`` (1 when the cluster or the covered ones have no centroid).
The failure rate is the shrunk one triage ranks by, where it has it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goldmine.errors import InputError, NotFoundError
from goldmine.gold import COVERAGE_COLUMNS, Run, coverage_cte
from goldmine.goldset import items as gi
from goldmine.store import Store, registered, transaction
from goldmine.text import normalize_query

if TYPE_CHECKING:
    import duckdb

MAX_GRADE = 2
SOURCE = "next"
METHOD = (
    "minimal test collection (Carterette, Allan and Sitaraman 2006): weight = max grade x "
    "|disc_B - disc_A| on DCG@k"
)
CLUSTER_METHOD = "expected information = volume x failure rate x novelty"


def discount(rank: int | None, k: int) -> float:
    """DCG's discount at a 1-based rank within the cut-off, 0 beyond it or when not retrieved."""
    if rank is None or rank > k:
        return 0.0
    return 1.0 / math.log2(rank + 1)


@dataclass
class Pair:
    query_id: str
    chunk_id: str
    weight: float  # |disc_B - disc_A|: the most its label moves the query's DCG delta, per grade
    rank_a: int | None
    rank_b: int | None
    query: str | None = None


@dataclass
class Plan:
    pairs: list[Pair]
    k: int
    budget: int
    n_queries: int  # queries both runs and the gold set have
    n_ignored: int  # run queries with no gold item (or an item that is rejected or no-answer)
    n_unjudged: int  # unjudged pairs whose label could change the comparison (weight > 0)
    known: float  # the mean DCG@k delta (B - A) from the judged chunks
    bounds: tuple[float, float]  # where the mean delta can lie, whatever the unjudged are
    width_after: float  # the bounds' width once the proposed pairs are judged
    label_a: str = "A"
    label_b: str = "B"
    queued: dict[str, int] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def settled(self) -> bool:
        return self.bounds[0] > 0 or self.bounds[1] < 0

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.label_a,
            "b": self.label_b,
            "method": METHOD,
            "metric": f"dcg@{self.k}",
            "k": self.k,
            "budget": self.budget,
            "n_queries": self.n_queries,
            "n_ignored": self.n_ignored,
            "n_unjudged": self.n_unjudged,
            "known_delta": self.known,
            "bounds": list(self.bounds),
            "width_after": self.width_after,
            "settled": self.settled,
            "queued": self.queued,
            "notes": self.notes,
            "pairs": [p.__dict__ for p in self.pairs],
        }


def compare_pairs(
    run_a: dict[str, list[str]],
    run_b: dict[str, list[str]],
    judged: dict[str, dict[str, int]],
    *,
    k: int = 10,
    budget: int = 20,
    max_grade: int = MAX_GRADE,
    texts: dict[str, str] | None = None,
) -> Plan:
    """The unjudged pairs that would most change the comparison of two runs (module doc).

    ``run_a``/``run_b`` map query id -> ranked chunk ids; ``judged`` maps each gold query to its
    labelled chunks and grades (``{}`` for a query nobody has judged a chunk of).
    """
    import polars as pl

    if budget < 1:
        raise InputError(f"--budget must be at least 1, not {budget}")
    if k < 1:
        raise InputError(f"-k must be at least 1, not {k}")
    queries = [q for q in judged if q in run_a and q in run_b]
    n_ignored = len((set(run_a) | set(run_b)) - set(queries))
    if not queries:
        raise InputError(
            "the two runs and the gold set have no query in common: nothing to compare"
        )
    schema = {"query_id": pl.Utf8, "chunk_id": pl.Utf8, "rank": pl.Int64}

    def ranks(run: dict[str, list[str]]) -> pl.DataFrame:
        rows = [(q, c, r) for q in queries for r, c in enumerate(run[q][:k], 1)]
        return pl.DataFrame(rows, schema=schema, orient="row")

    grades = pl.DataFrame(
        [(q, c, g) for q in queries for c, g in judged[q].items()],
        schema={"query_id": pl.Utf8, "chunk_id": pl.Utf8, "grade": pl.Int64},
        orient="row",
    )
    frame = (
        ranks(run_a)
        .join(ranks(run_b), on=["query_id", "chunk_id"], how="full", coalesce=True, suffix="_b")
        .rename({"rank": "rank_a"})
        .join(grades, on=["query_id", "chunk_id"], how="left")
        .with_columns(
            diff=_disc(pl.col("rank_b"), k) - _disc(pl.col("rank_a"), k),
        )
    )
    n = len(queries)
    known = float(
        frame.filter(pl.col("grade").is_not_null())
        .select((pl.col("grade").clip(lower_bound=0) * pl.col("diff")).sum())
        .item()
        or 0.0
    )
    open_ = frame.filter(pl.col("grade").is_null() & (pl.col("diff") != 0)).with_columns(
        weight=pl.col("diff").abs(),
        best=pl.min_horizontal("rank_a", "rank_b"),
    )
    up = float(open_.select(pl.col("diff").clip(lower_bound=0).sum()).item() or 0.0)
    down = float(open_.select(pl.col("diff").clip(upper_bound=0).sum()).item() or 0.0)
    total_weight = up - down
    ordered = open_.sort(
        ["weight", "best", "query_id", "chunk_id"], descending=[True, False, False, False]
    )
    picked = ordered.head(budget)
    texts = texts or {}
    pairs = [
        Pair(r["query_id"], r["chunk_id"], r["weight"], r["rank_a"], r["rank_b"],
             texts.get(r["query_id"]))
        for r in picked.iter_rows(named=True)
    ]  # fmt: skip
    chosen = sum(p.weight for p in pairs)
    return Plan(
        pairs=pairs,
        k=k,
        budget=budget,
        n_queries=n,
        n_ignored=n_ignored,
        n_unjudged=open_.height,
        known=known / n,
        bounds=((known + max_grade * down) / n, (known + max_grade * up) / n),
        width_after=max_grade * max(0.0, total_weight - chosen) / n,
    )


def _disc(rank, k: int):
    import polars as pl

    return (
        pl.when(rank.is_not_null() & (rank <= k))
        .then(1.0 / (rank.cast(pl.Float64) + 1.0).log(2))
        .otherwise(0.0)
    )


# --- reading the runs and the judgments ---------------------------------------------------------


def load_judged(con: duckdb.DuckDBPyConnection) -> tuple[dict[str, dict[str, int]], dict[str, str]]:
    """Each gold item that can still change a comparison (not rejected, not "no answer"), with its
    labelled chunks; and the normalised query text -> query id, for runs keyed by text."""
    items = con.execute(
        "SELECT query_id, norm_query FROM gold_items WHERE status <> 'rejected' AND NOT no_answer"
    ).fetchall()
    judged: dict[str, dict[str, int]] = {q: {} for q, _ in items}
    for q, c, g in con.execute(
        "SELECT query_id, chunk_id, grade FROM gold_labels WHERE kind = 'label'"
    ).fetchall():
        if q in judged:
            judged[q][c] = int(g)
    return judged, {norm: q for q, norm in items}


def query_texts(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    return dict(con.execute("SELECT query_id, query FROM gold_items").fetchall())


def read_ranked(run: Run, by_text: dict[str, str]) -> dict[str, list[str]]:
    """A run's ranked ids by gold query id (a run keyed by text is matched by its text)."""
    if run.keyed_by == "text":
        return {
            by_text[normalize_query(key)]: ids
            for key, ids in run.results.items()
            if normalize_query(key) in by_text
        }
    return run.results


# --- queueing -----------------------------------------------------------------------------------


def _already_queued(con: duckdb.DuckDBPyConnection, n_pairs: int, order: list[str]) -> bool:
    """Whether the plan is queued as it stands: every pair a ``next`` draft of the same rank and
    weight, and its items the front of the queue in its order (a re-run on the same runs)."""
    same = con.execute(
        """SELECT count(*) FROM _gm_next n JOIN gold_labels l
             ON l.query_id = n.query_id AND l.chunk_id = n.chunk_id AND l.kind = 'draft'
           WHERE l.source = ? AND l.rank = n.rank AND abs(l.score - n.score) <= 1e-9""",
        [SOURCE],
    ).fetchall()[0][0]
    front = con.execute(
        "SELECT query_id FROM gold_items ORDER BY position LIMIT ?", [len(order)]
    ).fetchall()
    return same == n_pairs and [r[0] for r in front] == order


def queue_pairs(con: duckdb.DuckDBPyConnection, plan: Plan, *, by: str, label: str) -> dict:
    """The proposed pairs as drafts, their items at the front of the review queue in that order.

    Call inside a transaction. Returns ``{"pairs": n, "items": m, "unchanged": bool}``: a plan
    already queued as it stands is not written again (no history row, no version moves).
    """
    import polars as pl

    if not plan.pairs:
        return {"pairs": 0, "items": 0, "unchanged": True}
    snapshot_id, _ = gi.current_snapshot(con)
    at, who = gi.now(), f"next:{by}"
    pairs = pl.DataFrame(
        [(p.query_id, p.chunk_id, i, p.weight) for i, p in enumerate(plan.pairs, 1)],
        schema={"query_id": pl.Utf8, "chunk_id": pl.Utf8, "rank": pl.Int64, "score": pl.Float64},
        orient="row",
    )
    order = list(dict.fromkeys(p.query_id for p in plan.pairs))
    done = {"pairs": len(plan.pairs), "items": len(order)}
    with registered(con, _gm_next=pairs):
        if _already_queued(con, len(plan.pairs), order):
            return {**done, "unchanged": True}
        con.execute(
            """DELETE FROM gold_labels WHERE kind = 'draft'
               AND (query_id, chunk_id) IN (SELECT (query_id, chunk_id) FROM _gm_next)"""
        )
        con.execute(
            """INSERT INTO gold_labels (query_id, chunk_id, kind, rank, score, source,
                   text_hash, snapshot_id, who, ts)
               SELECT n.query_id, n.chunk_id, 'draft', n.rank, n.score, ?, c.text_hash, ?, ?, ?
               FROM _gm_next n
               LEFT JOIN chunks c ON c.snapshot_id = ? AND c.chunk_id = n.chunk_id""",
            [SOURCE, snapshot_id, who, at, snapshot_id],
        )
    first = con.execute("SELECT coalesce(min(position), 1) FROM gold_items").fetchall()[0][0]
    for i, qid in enumerate(order):
        chunks = [p.chunk_id for p in plan.pairs if p.query_id == qid]
        con.execute(
            """UPDATE gold_items SET position = ?, updated_at = ?,
                   status = CASE WHEN status = 'candidate' THEN 'drafted' ELSE status END,
                   drafted_by = CASE WHEN status = 'candidate' THEN ? ELSE drafted_by END
               WHERE query_id = ?""",
            [first - len(order) + i, at, who, qid],
        )
        gi.record(con, qid, "next", by, {"chunks": chunks, "for_compare": label, "k": plan.k}, at)
        gi.settle(con, qid, by, at=at)
    return {**done, "unchanged": False}


def plan_for_compare(
    store: Store,
    a: Run,
    b: Run,
    *,
    k: int = 10,
    budget: int = 20,
    queue: bool = True,
    by: str,
) -> Plan:
    """``gold next --for-compare A B``: propose, and (``queue``) write in one transaction. The
    runs come read (``goldmine.readers.read_run``), so the gold set needs no eval code."""

    with store.open(create=False) as con:
        judged, by_text = load_judged(con)
        if not judged:
            raise NotFoundError("no gold items to label: add some first (`goldmine gold starter`)")
        plan = compare_pairs(
            read_ranked(a, by_text),
            read_ranked(b, by_text),
            judged,
            k=k,
            budget=budget,
            texts=query_texts(con),
        )
        plan.label_a, plan.label_b = a.source, b.source
        if plan.settled:
            plan.notes.append(
                f"the sign of the mean DCG@{k} difference is settled whatever the "
                f"{plan.n_unjudged} unjudged pairs are: labelling more cannot turn it"
            )
        if queue and plan.pairs:
            with transaction(con):
                label = f"{Path(a.source).name} vs {Path(b.source).name}"
                plan.queued = queue_pairs(con, plan, by=by, label=label)
    return plan


# --- growing the set: uncovered clusters --------------------------------------------------------


def cluster_information(con: duckdb.DuckDBPyConnection, top: int = 20) -> list[dict[str, Any]]:
    """Uncovered clusters, most expected information first (module doc)."""
    import numpy as np

    if top < 1:
        raise InputError(f"--top must be at least 1, not {top}")

    # Covered as triage show says it: a verified or published item (one definition).
    rows = con.execute(
        f"""WITH {coverage_cte(con)}
            SELECT c.cluster_id, c.label, c.volume, coalesce(c.shrunk_rate, c.failure_rate),
                   c.centroid, {COVERAGE_COLUMNS}, c.tags
            FROM triage_clusters c LEFT JOIN gm_coverage k USING (cluster_id)"""
    ).fetchall()
    if not rows:
        raise NotFoundError("no clusters: `goldmine triage run` first" + _compare_hint(con))
    covered = [np.asarray(r[4], dtype=np.float64) for r in rows if r[7] and r[4] is not None]
    known = _unit(np.vstack(covered)) if covered else None
    out = []
    for cid, label, volume, rate, centroid, coverage, _version, is_covered, tags in rows:
        if is_covered:
            continue
        novelty = 1.0
        if known is not None and centroid is not None:
            vec = _unit(np.asarray(centroid, dtype=np.float64)[None, :])[0]
            novelty = float(min(1.0, max(0.0, 1.0 - float((known @ vec).max()))))
        out.append(
            {
                "cluster_id": cid,
                "label": label,
                "volume": int(volume),
                "failure_rate": float(rate),
                "novelty": novelty,
                "information": float(volume) * float(rate) * novelty,
                "coverage": coverage,  # "no", or "in review" when an item waits for review
                "tags": list(tags or []),
            }
        )
    out.sort(key=lambda r: (-r["information"], -r["volume"], r["cluster_id"]))
    return out[:top]


def _compare_hint(con: duckdb.DuckDBPyConnection) -> str:
    """With no triage, what --for-compare could use: the store's eval runs, named."""
    runs = con.execute(
        "SELECT coalesce(label, run_source) FROM eval_runs ORDER BY run_id DESC LIMIT 4"
    ).fetchall()
    if not runs:
        return ""
    named = ", ".join(r[0] for r in runs)
    return (
        f"; or label what settles a comparison of two runs: `goldmine gold next --for-compare "
        f"A.trec B.trec` (this store has eval runs {named}; a stored run keeps only its scores, "
        "so write its ranking with `eval run … --save-run FILE`)"
    )


def _unit(matrix):
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)
