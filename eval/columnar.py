"""The columnar engine: large runs scored with polars, every metric a grouped sum.

At millions of run lines, parsing dominates, so the run is read column-wise (``goldmine.frames``),
ranked once (the sort is
skipped when the file is already in trec_eval's order), joined to the judged documents, and each
metric is an aggregate over the few joined rows. The definitions are those of
``goldmine.metrics``; the conformance tests run both engines against trec_eval's fixtures.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from goldmine.eval.result import EvalResult, abstention
from goldmine.gold import Gold, Run
from goldmine.metrics import Metric


def run_to_frame(run: Run) -> pl.DataFrame:
    qids: list[str] = []
    docs: list[str] = []
    ranks: list[int] = []
    scores: list[float | None] = []
    for key, ids in run.results.items():
        qids.extend([key] * len(ids))
        docs.extend(ids)
        ranks.extend(range(1, len(ids) + 1))
        s = (run.scores or {}).get(key)
        scores.extend(s if s is not None else [None] * len(ids))
    return pl.DataFrame(
        {"qid": qids, "doc": docs, "score": scores, "rank": ranks},
        schema={"qid": pl.String, "doc": pl.String, "score": pl.Float64, "rank": pl.Int64},
    )


def gold_to_frame(gold: Gold) -> pl.DataFrame:
    qids, docs, grades = [], [], []
    for qid, query in gold.queries.items():
        for doc, grade in query.judged.items():
            qids.append(qid)
            docs.append(doc)
            grades.append(grade)
    return pl.DataFrame(
        {"qid": qids, "doc": docs, "grade": grades},
        schema={"qid": pl.String, "doc": pl.String, "grade": pl.Int64},
    )


def _metric_exprs(metrics: Sequence[Metric], rel_level: int) -> list[pl.Expr]:
    """One aggregate per metric over a query's judged hits (rank, grade, relcount, n_rel)."""
    rank, grade = pl.col("rank"), pl.col("grade")
    rel = grade >= rel_level
    n_rel = pl.col("n_rel").first().cast(pl.Float64)
    exprs = []
    for m in metrics:
        within = rel if m.k is None else rel & (rank <= m.k)
        if m.family == "recall":
            e = within.any().cast(pl.Float64)
        elif m.family == "frac_recall":
            e = within.sum() / n_rel
        elif m.family == "precision":
            e = within.sum() / float(m.k or 1)
        elif m.family == "mrr":
            e = pl.when(within).then(1.0 / rank).otherwise(0.0).max()
        elif m.family == "map":
            e = pl.when(within).then(pl.col("relcount") / rank).otherwise(0.0).sum() / n_rel
        elif m.family == "r_precision":
            e = (rel & (rank <= pl.col("n_rel").first())).sum() / n_rel
        elif m.family == "ndcg":
            positive = grade > 0 if m.k is None else (grade > 0) & (rank <= m.k)
            dcg = pl.when(positive).then(grade / (rank + 1).log(2)).otherwise(0.0).sum()
            e = dcg / pl.col(f"idcg:{m.name}").first()
        else:  # pragma: no cover - the registry and this table move together
            raise ValueError(f"no columnar form for {m.name}")
        exprs.append(e.fill_nan(0.0).alias(m.name))
    return exprs


def _ideal_dcg(qrels: pl.DataFrame, metrics: Sequence[Metric]) -> pl.DataFrame:
    positive = qrels.filter(pl.col("grade") > 0).sort(["qid", "grade"], descending=[False, True])
    positive = positive.with_columns(pos=pl.int_range(1, pl.len() + 1).over("qid"))
    gain = pl.col("grade") / (pl.col("pos") + 1).log(2)
    exprs = [
        (gain if m.k is None else pl.when(pl.col("pos") <= m.k).then(gain).otherwise(0.0))
        .sum()
        .alias(f"idcg:{m.name}")
        for m in metrics
        if m.family == "ndcg"
    ]
    if not exprs:
        return positive.select("qid").unique()
    return positive.group_by("qid").agg(exprs)


def score_frame(
    gold: Gold,
    ranked: pl.DataFrame,
    metrics: Sequence[Metric],
    rel_level: int = 1,
    *,
    n_duplicates: int = 0,
    abstain_below: float | None = None,
) -> EvalResult:
    """Score a ranked (qid, doc, rank[, score]) frame keyed by gold query ids."""
    qrels = gold.frame if gold.frame is not None else gold_to_frame(gold)
    answerable = [q for q, g in gold.queries.items() if g.answerable(rel_level)]
    n_rel = qrels.filter(pl.col("grade") >= rel_level).group_by("qid").agg(n_rel=pl.len())
    # Only judged (query, doc) pairs matter: a hash of the pair filters the run down to them
    # first, so the exact string join works on thousands of rows, not millions (it was +190 MB of
    # peak memory at 7M lines). A hash collision only lets an extra row reach the exact join.
    pair = pl.struct("qid", "doc").hash()
    judged_pairs = qrels.select(pair).to_series()
    hits = (
        ranked.select("qid", "doc", "rank")
        .filter(pair.is_in(judged_pairs.implode()))
        .join(qrels, on=["qid", "doc"], how="inner")
    )
    hits = hits.sort(["qid", "rank"]).with_columns(
        relcount=(pl.col("grade") >= rel_level).cast(pl.Int64).cum_sum().over("qid")
    )
    # A query with answers below the level has none relevant at it (n_rel 0), and is scored:
    # its binary metrics are 0 and its nDCG is its grades' (trec_eval's -l).
    hits = hits.join(n_rel, on="qid", how="left").with_columns(pl.col("n_rel").fill_null(0))
    hits = hits.join(_ideal_dcg(qrels, metrics), on="qid", how="left")
    names = [m.name for m in metrics]
    per = hits.group_by("qid").agg(_metric_exprs(metrics, rel_level))
    base = pl.DataFrame({"qid": answerable}, schema={"qid": pl.String})
    table = base.join(per, on="qid", how="left").fill_null(0.0)

    run_qids = ranked.select(pl.col("qid").unique()).to_series().to_list()
    in_run = set(run_qids)
    per_query = {row[0]: dict(zip(names, row[1:], strict=True)) for row in table.iter_rows()}
    summary = {n: float(table[n].mean()) if table.height else 0.0 for n in names}

    answerable_set = set(answerable)
    no_answer_ids = [q for q in gold.queries if q not in answerable_set]
    no_answer = []
    if no_answer_ids:
        stats = (
            ranked.filter(pl.col("qid").is_in(no_answer_ids))
            .group_by("qid")
            .agg(
                n=pl.len(), top=pl.col("score").max() if "score" in ranked.columns else pl.lit(None)
            )
        )
        found = {r[0]: (r[1], r[2]) for r in stats.iter_rows()}
        for qid in no_answer_ids:
            n, top = found.get(qid, (0, None))
            ranked_ids = [""] * n if n else None
            scores = [top] if top is not None else None
            no_answer.append(
                abstention(qid, gold.queries[qid].query, ranked_ids, scores, abstain_below)
            )
    return EvalResult(
        metrics=list(metrics),
        summary=summary,
        per_query=per_query,
        rel_level=rel_level,
        n_queries=len(answerable),
        missing=[q for q in answerable if q not in in_run],
        ignored=sorted(q for q in in_run if q not in gold.queries),
        no_answer=no_answer,
        n_duplicates=n_duplicates,
        frame=table,
    )
