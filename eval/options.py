"""The eval commands' app and the options more than one of them takes, each written once.

``eval run`` lives in ``goldmine.eval.cli``; ``compare``, ``history``, ``diagnose`` and
``export-generation`` in ``cli_compare``; ``power`` in ``cli_power``. Each adds its commands to
``eval_app`` here, so the command modules import this one and never each other: ``cli.register``
imports the other two to have their commands added, and nothing imports back.
"""

from __future__ import annotations

from typing import Annotated

import typer

eval_app = typer.Typer(
    help="Score a retriever's ranked chunk ids against a gold set.",
    no_args_is_help=True,
)

# The metric-name grammar (goldmine.metrics) as a user reads it; each option adds its default.
_METRIC_NAMES = (
    "Comma-separated metrics: recall@k, frac_recall@k, mrr[@k], ndcg[@k], precision@k, map[@k], "
    "r_precision. trec_eval and ranx names are accepted (P_10, success_5, ndcg_cut_10, hit_rate@5)."
)


def _metrics_option(default: str) -> typer.models.OptionInfo:
    return typer.Option("--metrics", "-m", help=f"{_METRIC_NAMES} {default}", show_default=False)


# `eval run`: the default is [eval] metrics in goldmine.toml, else runner.DEFAULT_METRICS.
MetricsOption = Annotated[
    str | None, _metrics_option("[default: recall@1,recall@5,recall@10,mrr,ndcg@10]")
]
# compare, history, power: two sides (or a file's columns) already name their metrics.
SharedMetricsOption = Annotated[str | None, _metrics_option("Default: all both sides have.")]
RunRelLevelOption = Annotated[
    int, typer.Option("--rel-level", "-l", help="Relevance level for run files.")
]
