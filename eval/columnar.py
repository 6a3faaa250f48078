"""The columnar engine: large run files read with polars, every metric a grouped sum.

At millions of run lines, parsing dominates (FACTS.md: a Python split loop 7.7 s for 7M lines,
polars reading three columns 0.6 s). So the run is read column-wise, ranked once (the sort is
skipped when the file is already in trec_eval's order), joined to the judged documents, and each
metric is an aggregate over the few joined rows. The definitions are those of
``goldmine.eval.metrics``; the conformance tests run both engines against trec_eval's fixtures.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from goldmine.errors import InputError
from goldmine.eval.metrics import Metric
from goldmine.eval.readers import detect_run_format, read_bytes
from goldmine.eval.scoring import EvalResult, _abstention
from goldmine.gold import Gold, GoldQuery, Run
from goldmine.text import sha256_file


def _separator(path: Path, n_fields: int, *, extra_ok: bool) -> str | None:
    """The file's one-character separator ('\\t' or ' ') when every line of its head splits into
    ``n_fields`` clean fields on it (more allowed with ``extra_ok``), else None: the Python reader
    handles padded or ragged files and names a bad line."""
    with open(path, "rb") as handle:
        head = handle.read(1 << 16).decode("utf-8", errors="replace")
    lines = [line for line in head.splitlines()[:-1] if line.strip()]  # last may be cut short
    for sep in ("\t", " "):
        fields = [line.split(sep) for line in lines]
        if fields and all(
            (len(f) >= n_fields if extra_ok else len(f) == n_fields)
            and all(x and x == x.strip() for x in f[:n_fields])
            for f in fields
        ):
            return sep
    return None


def _read_columns(
    path: Path, sep: str, columns: dict[int, tuple[str, pl.DataType]]
) -> pl.DataFrame | None:
    """Only the named columns, typed as given (ids stay strings: "007" is not 7)."""
    try:
        frame = pl.read_csv(
            path,
            separator=sep,
            has_header=False,
            columns=list(columns),
            schema_overrides={f"column_{i}": dtype for i, (_, dtype) in columns.items()},
            infer_schema=False,
            quote_char=None,
            truncate_ragged_lines=True,
            comment_prefix=None,
        ).rename({f"column_{i}": name for i, (name, _) in columns.items()})
    except pl.exceptions.PolarsError:
        return None  # the Python reader will name the bad line
    if frame.null_count().sum_horizontal().item():
        return None
    return frame


def _read_trec_frame(path: Path) -> pl.DataFrame | None:
    sep = _separator(path, 6, extra_ok=True)
    if sep is None:
        return None
    return _read_columns(
        path, sep, {0: ("qid", pl.String), 2: ("doc", pl.String), 4: ("score", pl.Float64)}
    )


def _order(frame: pl.DataFrame) -> pl.DataFrame:
    """trec_eval's order within each query (score desc, doc id desc), sorting as little as
    possible: nothing when the file is already in order (the usual case), only the queries out of
    order when each query's lines are contiguous, everything otherwise."""
    q, s, d = pl.col("qid"), pl.col("score"), pl.col("doc")
    same = (q == q.shift(1)).fill_null(False)
    ordered = (s < s.shift(1)) | ((s == s.shift(1)) & (d < d.shift(1)))
    flagged = frame.with_columns(bad=same & ~ordered.fill_null(False))
    boundaries, n_queries, n_bad = flagged.select(
        boundaries=(~same).sum(), n_queries=q.n_unique(), n_bad=pl.col("bad").sum()
    ).row(0)
    keys = {"by": ["qid", "score", "doc"], "descending": [False, True, True]}
    if boundaries != n_queries:
        return frame.sort(**keys)
    if n_bad == 0:
        return frame
    bad_queries = flagged.filter(pl.col("bad")).select("qid").unique().to_series()
    out_of_order = q.is_in(bad_queries.implode())
    return pl.concat([frame.filter(~out_of_order), frame.filter(out_of_order).sort(**keys)])


def rank_frame(frame: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """Order (trec_eval's order) and rank a (qid, doc, score) frame; drop repeated ids.

    Returns the (qid, doc, score, rank) frame and the number of repeats dropped.
    """
    frame = _order(frame)
    # A repeated id within a query: keep its first position. Counting distinct ids per query is
    # the cheap check (one grouped pass); the exact, costlier dedupe runs only when it finds one.
    repeats = frame.group_by("qid").agg(n=pl.len() - pl.col("doc").n_unique())["n"].sum()
    n_dupes = 0
    if repeats:
        keep = frame.select(pl.struct("qid", "doc").is_first_distinct()).to_series()
        n_dupes = int((~keep).sum())
        frame = frame.filter(keep)
    index = pl.int_range(pl.len(), dtype=pl.Int64)
    start = pl.when(pl.col("qid") != pl.col("qid").shift(1)).then(index).forward_fill()
    frame = frame.with_columns(rank=(index - start.fill_null(0) + 1).cast(pl.Int64))
    return frame, n_dupes


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
    hits = hits.join(n_rel, on="qid", how="inner").join(
        _ideal_dcg(qrels, metrics), on="qid", how="left"
    )
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
                _abstention(qid, gold.queries[qid].query, ranked_ids, scores, abstain_below)
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


def read_trec_qrels(path: Path) -> Gold | None:
    """A large TREC qrels file read column-wise, or None when it needs the Python reader."""

    sep = _separator(path, 4, extra_ok=False)
    if sep is None:
        return None
    frame = _read_columns(
        path, sep, {0: ("qid", pl.String), 2: ("doc", pl.String), 3: ("grade", pl.Int64)}
    )
    if frame is None:
        return None
    # Last judgment wins for a repeated (qid, doc), as in the Python reader.
    frame = frame.unique(subset=["qid", "doc"], keep="last", maintain_order=True)
    grouped = frame.group_by("qid", maintain_order=True).agg("doc", "grade")
    queries = {
        qid: GoldQuery(qid, None, dict(zip(docs, grades, strict=True)))
        for qid, docs, grades in grouped.iter_rows()
    }

    return Gold(queries, str(path), sha256_file(path), "trec", frame=frame)


def read_ranked_frame(path: Path, fmt: str | None = None) -> tuple[pl.DataFrame, int] | None:
    """A large id-keyed run as a ranked frame, or None when it needs the Python reader."""
    if fmt is None:
        data, _ = read_bytes(path) if path.stat().st_size < 1 << 16 else (b"", "")
        if not data:
            with open(path, "rb") as handle:
                data = handle.read(1 << 16)
        text = None if data[:4] == b"PAR1" else data.decode("utf-8", errors="replace")
        try:
            fmt = detect_run_format(data, text)
        except InputError as exc:
            raise InputError(exc.message, path=path) from None
    if fmt != "trec":
        return None
    frame = _read_trec_frame(path)
    if frame is None:
        return None
    return rank_frame(frame)
