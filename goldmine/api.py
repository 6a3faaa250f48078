"""goldmine from Python: ``evaluate`` and ``compare``, the CLI's scoring and paired test as calls.

Search engineers run experiments in notebooks and assert on metrics in pytest, so the numbers
``goldmine eval run`` and ``eval compare`` print are one call away, computed by the same code
(``goldmine.eval.scoring``, ``goldmine.eval.compare``): equal to the CLI by construction, and to
trec_eval as the CLI is. Scoring two dicts imports the metrics alone: polars only when a result's
per-query frame is asked for, numpy only for a compare, never DuckDB.
"""

from __future__ import annotations

import html
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goldmine.errors import InputError
from goldmine.eval.scoring import (
    EvalResult,
    check_abstain_below,
    check_overlap,
    duplicates_warning,
    evaluate_run_file,
    no_answerable_warning,
)
from goldmine.eval.scoring import evaluate as score
from goldmine.gold import Run
from goldmine.inputs import GoldLike, RunLike, as_gold, as_run, is_path
from goldmine.metrics import Metric, parse_metrics
from goldmine.output import count

if TYPE_CHECKING:
    import polars

    from goldmine.eval.compare import Comparison, MetricComparison
    from goldmine.gold import Gold

DEFAULT_METRICS = ("recall@5", "mrr", "ndcg@10")


class Means(dict):
    """Metric -> mean, keyed by goldmine's names and read by any spelling ``metrics`` takes:
    ``mean["P_10"]`` is ``mean["precision@10"]``."""

    def __missing__(self, key: object) -> float:
        if isinstance(key, str):
            try:
                names = [m.name for m in parse_metrics(key)]
            except Exception:  # an unknown name: the KeyError below says what there is
                names = []
            if len(names) == 1 and names[0] != key and names[0] in self:
                return self[names[0]]
        raise KeyError(f"{key!r} was not scored; the metrics are {', '.join(self)}")

    def get(self, key: object, default: object = None) -> object:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return self.get(key, _ABSENT) is not _ABSENT


_ABSENT = object()


@dataclass
class Evaluation:
    """One run scored on one gold set: means, per-query scores and what was left out.

    ``mean`` maps each metric to its mean over the answerable gold queries (a gold query the run
    lacks scores 0, as with trec_eval ``-c``); ``missing`` lists those queries, ``ignored`` the
    run's queries the gold does not have; ``no_answer`` the gold queries with nothing relevant,
    scored apart as abstentions. ``result`` is the CLI's own result object.
    """

    result: EvalResult
    gold: Gold
    run_source: str
    warnings: list[str]

    @property
    def mean(self) -> dict[str, float]:
        """Metric -> its mean over the answerable gold queries; a trec_eval or ranx spelling
        reads the same value (``mean["P_10"]``)."""
        return Means(self.result.summary)

    @property
    def metrics(self) -> list[str]:
        """The metrics scored, by goldmine's names, in the order asked."""
        return [m.name for m in self.result.metrics]

    @property
    def missing(self) -> list[str]:
        """Answerable gold queries the run lacks (each scored 0, as trec_eval ``-c``)."""
        return list(self.result.missing)

    @property
    def ignored(self) -> list[str]:
        """The run's queries the gold set does not have."""
        return list(self.result.ignored)

    @property
    def n_queries(self) -> int:
        """How many answerable gold queries the means are over."""
        return self.result.n_queries

    @property
    def per_query(self) -> polars.DataFrame:
        """One row per answerable gold query: ``query_id`` and a Float64 column per metric."""
        import polars as pl

        names = self.metrics
        rows = self.result.per_query
        columns: dict[str, list] = {"query_id": list(rows)}
        columns.update({n: [rows[q][n] for q in rows] for n in names})
        schema = {"query_id": pl.String, **dict.fromkeys(names, pl.Float64)}
        return pl.DataFrame(columns, schema=schema)

    def to_dict(self) -> dict[str, Any]:
        """The result as ``goldmine eval run --json`` gives it (metrics, per_query, counts …),
        with the gold set's source and hash and the run's source."""
        data = self.result.to_json()
        data["gold"] = {
            "source": self.gold.source,
            "format": self.gold.format,
            "version": self.gold.version,
            "hash": self.gold.hash,
            "n_queries": len(self.gold.queries),
        }
        data["run"] = {"source": self.run_source}
        data["warnings"] = list(self.warnings)
        return data

    def __repr__(self) -> str:
        means = ", ".join(f"{k}={v:.4f}" for k, v in self.mean.items())
        return f"Evaluation({means}; {count(self.n_queries, 'query')})"

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(k)}</td><td>{v:.4f}</td></tr>" for k, v in self.mean.items()
        )
        r = self.result
        note = (
            f"{r.n_queries} answerable queries; {len(r.missing)} missing from the run (scored 0), "
            f"{len(r.ignored)} run queries not in the gold, {len(r.no_answer)} no-answer queries"
        )
        return (
            f"<table><caption>{html.escape(note)}</caption>"
            f"<thead><tr><th>metric</th><th>mean</th></tr></thead><tbody>{rows}</tbody></table>"
        )


def evaluate(
    gold: GoldLike,
    run: RunLike,
    metrics: str | Sequence[str] = DEFAULT_METRICS,
    *,
    rel_level: int = 1,
    abstain_below: float | None = None,
    k: int | None = None,
) -> Evaluation:
    """Score ``run`` against ``gold`` with the CLI's metrics and the CLI's scoring code.

    ``gold``: ``{qid: {doc: grade}}`` (pytrec_eval, ranx), ``{qid: [relevant ids]}``, a polars or
    pandas frame with query, doc and grade columns (``query_id, doc_id, relevance`` or the
    trec_eval/ranx spellings), a file in any format ``goldmine eval run`` reads, or a published
    version (``goldmine.Store(path).gold("v3")``). ``run``: ``{qid: {doc: score}}`` (ranked as
    trec_eval ranks: score descending, ties by doc id descending), ``{qid: [ids]}`` best first,
    ``{qid: [(id, score), ...]}`` as retrievers return them (in their order, as any list;
    a set, which has no order, is refused), a frame with query, doc and ``score`` (or
    ``rank``) columns, a run file, or a retriever: a function (or ``async def``) of a query's
    text and ``k`` returning ids or ``(id, score)`` pairs, called for each gold query as
    ``eval run --retriever`` calls it (the gold needs its queries' texts: a file or a published
    version; ``k`` defaults to 50 or the largest cut-off). ``metrics``: the CLI's names,
    trec_eval's spellings too (``P_10``, ``success_5``, ``ndcg_cut_10``). A run that shares no
    query with the gold is an ``InputError``.

    Example:
        >>> import goldmine
        >>> gold = {"q1": {"d1": 2, "d2": 0}, "q2": {"d3": 1}}
        >>> run = {"q1": {"d2": 0.9, "d1": 0.8}, "q2": {"d3": 0.5}}
        >>> result = goldmine.evaluate(gold, run, metrics=["recall@1", "mrr"])
        >>> result.mean
        {'recall@1': 0.5, 'mrr': 0.75}
    """
    parsed = metric_list(metrics)
    check_rel_level(rel_level)
    check_abstain_below(abstain_below)
    _check_k(k, run)
    gold_set = as_gold(gold)
    if is_retriever(run):
        run = retrieved(gold_set, run, k or max([50, *(m.k or 0 for m in parsed)]))
    result, source = _score(gold_set, run, parsed, rel_level, abstain_below)
    found = (
        check_overlap(result, gold_set),
        duplicates_warning(result),
        failed(result),
        no_answerable_warning(result),
    )
    return Evaluation(result, gold_set, source, [w for w in found if w is not None])


def is_retriever(run: object) -> bool:
    """A function or other callable, not a container or a class."""
    return callable(run) and not isinstance(run, Mapping | Run | type)


def retrieved(gold: Gold, retriever: Any, k: int) -> Run:
    """The run ``eval run --retriever`` makes of the function: one call a gold query."""
    from goldmine.eval.runner import refuse_all_failed
    from goldmine.eval.sources import run_callable

    run = run_callable(gold, retriever, k)
    refuse_all_failed(run)
    return run


def _check_k(k: object, run: object) -> None:
    """``k`` is what a retriever is asked for: a whole number from 1, and for a retriever only
    (given with a run, it looked like a cut-off and did nothing)."""
    if k is None:
        return
    _whole("k", k)
    if k < 1:  # type: ignore[operator]
        raise InputError(f"k: at least 1, not {k!r}")
    if not is_retriever(run):
        raise InputError(
            "k is what a retriever is asked for, and this run is ranked already; a cut-off is "
            "the metric's (recall@5, ndcg@10)"
        )


def failed(result: EvalResult) -> str | None:
    """The queries a retriever raised on, scored 0: told, as ``eval run`` tells them."""
    if not result.errors:
        return None
    qid, said = next(iter(result.errors.items()))
    n = count(len(result.errors), "query")
    return f"{n} failed in the retriever, scored 0 (the first: {qid}: {said})"


def metric_list(metrics: object) -> list[Metric]:
    """``metrics`` as a name or names, checked here: ``metrics=5`` was "'int' object is not
    iterable" from the parser; a generator is read once (the check used it up: "no metrics")."""
    if isinstance(metrics, str):
        return parse_metrics(metrics)
    names = list(metrics) if isinstance(metrics, Iterable) else None
    if names is None or not all(isinstance(m, str) for m in names):
        raise InputError(f"metrics: a name or a list of names, not {metrics!r}")
    return parse_metrics(names)


def _whole(name: str, value: object) -> None:
    """A count or a seed is a whole number: 2.5 and "10" failed inside numpy or a comparison."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InputError(f"{name}: a whole number, not {value!r}")


def _number(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"{name}: a number, not {value!r}")


def check_rel_level(rel_level: object) -> None:
    """A grade is whole, as the gold's are; "2" failed as a TypeError inside the scoring."""
    if isinstance(rel_level, bool) or not isinstance(rel_level, numbers.Integral):
        raise InputError(f"rel_level: a whole grade, not {rel_level!r}")


def _score(
    gold: Gold, run: RunLike, metrics: list[Metric], rel_level: int, abstain_below: float | None
) -> tuple[EvalResult, str]:
    if is_path(run):
        path = Path(run).expanduser()  # type: ignore[arg-type]
        result, _ = evaluate_run_file(gold, path, metrics, rel_level, abstain_below=abstain_below)
        return result, str(path)
    ranked = as_run(run)
    return score(gold, ranked, metrics, rel_level, abstain_below), ranked.source


# --- compare ------------------------------------------------------------------------------------


@dataclass
class Compared:
    """Two runs paired query by query, as ``goldmine eval compare`` pairs them.

    ``metrics`` holds one ``MetricComparison`` per metric (``delta`` B - A, ``p_value``
    Holm-corrected across metrics, ``ci`` the bootstrap 95% interval, ``mde`` the smallest
    change this many queries can detect, ``verdict`` "better", "worse" or "inside the noise",
    ``won``/``lost`` the queries that moved most). ``a`` and ``b`` are the two evaluations.
    """

    comparison: Comparison
    a: Evaluation
    b: Evaluation

    @property
    def metrics(self) -> list[MetricComparison]:
        """Each metric's comparison: both means, the difference, its interval and p-value."""
        return list(self.comparison.metrics)

    @property
    def verdicts(self) -> dict[str, str]:
        """Metric -> "better", "worse" or "inside the noise" (B against A)."""
        return {m.metric: m.verdict for m in self.comparison.metrics}

    def metric(self, name: str) -> MetricComparison:
        """One metric's comparison, by its name as given or as the CLI spells it."""
        from goldmine.metrics import parse_metric

        try:
            return self.comparison.metric(name)
        except KeyError:
            pass
        try:
            return self.comparison.metric(parse_metric(name).name)
        except (KeyError, InputError):  # an unknown name, or one not compared: as Means says it
            names = ", ".join(m.metric for m in self.comparison.metrics)
            raise KeyError(f"{name!r} was not compared; the metrics are {names}") from None

    def to_dict(self) -> dict[str, Any]:
        """As ``goldmine eval compare --json`` gives it."""
        return self.comparison.to_json()

    def __str__(self) -> str:
        from goldmine.eval.compare_report import format_comparison

        return "\n".join(format_comparison(self.comparison))

    def __repr__(self) -> str:
        return f"Compared({self.verdicts}; {self.comparison.n_queries} paired queries)"

    def _repr_html_(self) -> str:
        head = "".join(
            f"<th>{h}</th>" for h in ("metric", "A", "B", "delta", "95% CI", "p", "verdict")
        )
        rows = "".join(
            f"<tr><td>{html.escape(m.metric)}</td><td>{m.mean_a:.4f}</td><td>{m.mean_b:.4f}</td>"
            f"<td>{m.delta:+.4f}</td><td>[{m.ci[0]:+.4f}, {m.ci[1]:+.4f}]</td>"
            f"<td>{m.p_value:.4g}</td><td>{html.escape(m.verdict)}</td></tr>"
            for m in self.comparison.metrics
        )
        caption = html.escape(
            f"{self.comparison.label_a} vs {self.comparison.label_b}, paired on "
            f"{count(self.comparison.n_queries, 'query')}"
        )
        return f"<table><caption>{caption}</caption><tr>{head}</tr>{rows}</table>"


def side(evaluation: Evaluation, label: str) -> Any:
    """An evaluation as one side of a compare (what ``eval compare`` makes of a run file)."""
    from goldmine.eval.sides import ScoreTable

    gold = evaluation.gold
    return ScoreTable(
        scores=evaluation.result.per_query,
        label=label,
        texts={q: g.query for q, g in gold.queries.items() if g.query},
        source=f"run {evaluation.run_source} on {gold.source}",
        gold_hash=gold.hash,
    )


def _label(run: object, default: str) -> str:
    """A file's name, a retriever's (``bm25_search``), else ``default``."""
    if is_path(run):
        return Path(run).name  # type: ignore[arg-type]
    name = getattr(run, "__name__", None) if is_retriever(run) else None
    return name if isinstance(name, str) and name != "<lambda>" else default


def _labels(labels: object) -> tuple[str, str] | None:
    """Two labels, one per run (zip's "argument 2 is shorter" said neither)."""
    if labels is None:
        return None
    if isinstance(labels, str) or not isinstance(labels, Sequence) or len(labels) != 2:
        raise InputError(f"labels: two, one per run, not {labels!r}")
    return str(labels[0]), str(labels[1])


def compare(
    gold: GoldLike,
    run_a: RunLike | Evaluation,
    run_b: RunLike | Evaluation,
    metrics: str | Sequence[str] = DEFAULT_METRICS,
    *,
    rel_level: int = 1,
    permutations: int = 10_000,
    bootstrap: int = 10_000,
    seed: int = 0,
    alpha: float = 0.05,
    labels: tuple[str, str] | None = None,
    k: int | None = None,
) -> Compared:
    """Is ``run_b`` better than ``run_a`` on ``gold``, worse, or inside the noise?

    The same paired randomization test (sign flips, two-sided, Holm-corrected across metrics),
    bootstrap interval, detectable effect and verdict as ``goldmine eval compare A B --gold G``.
    The runs take every shape ``evaluate`` takes, or an ``Evaluation`` already made; ``labels``
    name them in the report (default: a file's name or a retriever's, else "A" and "B"); ``k``
    is what a retriever is asked for, as in ``evaluate``.

    Example:
        >>> import goldmine
        >>> gold = {f"q{i}": {f"d{i}": 1} for i in range(40)}
        >>> a = {q: [f"x{q}", *docs] for q, docs in gold.items()}  # answer at rank 2
        >>> b = {q: list(docs) for q, docs in gold.items()}        # answer at rank 1
        >>> goldmine.compare(gold, a, b, metrics="mrr").verdicts
        {'mrr': 'better'}
    """
    from goldmine.eval.compare import compare_runs

    names = [m.name for m in metric_list(metrics)]
    check_rel_level(rel_level)
    for name, value in (("permutations", permutations), ("bootstrap", bootstrap), ("seed", seed)):
        _whole(name, value)
    _number("alpha", alpha)
    gold_set = as_gold(gold)
    sides = []
    names_ab = _labels(labels) or (_label(run_a, "A"), _label(run_b, "B"))
    for run, label in zip((run_a, run_b), names_ab, strict=True):
        if isinstance(run, Evaluation):
            scored = run
        else:
            asked = k if is_retriever(run) else None  # a run file or dict is ranked already
            scored = evaluate(gold_set, run, names, rel_level=rel_level, k=asked)
        sides.append((scored, side(scored, label)))
    comparison = compare_runs(sides[0][1], sides[1][1], names, permutations=permutations,
                              seed=seed, alpha=alpha, bootstrap=bootstrap)  # fmt: skip
    return Compared(comparison, sides[0][0], sides[1][0])
