"""Command line for the eval stage: ``goldmine eval run``, ``goldmine eval runs``.

The commands parse options, call ``goldmine.eval.runner`` and print. Nothing here imports a
dataframe library or a model: ``goldmine eval run`` on a starter set finishes in a fraction of a
second.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from goldmine.options import DbOption, JsonOption, db_flag

eval_app = typer.Typer(
    help="Score a retriever's ranked chunk ids against a gold set.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the root app."""
    app.add_typer(eval_app, name="eval")


GoldOption = Annotated[
    str,
    typer.Option(
        "--gold",
        "-g",
        help="Gold set: a file (TREC qrels, BEIR qrels TSV, goldmine gold JSONL, or a JSON object "
        "of query -> relevant ids), or a published version from the store: v3, latest.",
        show_default=False,
    ),
]
RunOption = Annotated[
    Path,
    typer.Option(
        "--run",
        "-r",
        help="Run file: TREC run, JSONL (query_id or query + results), CSV/Parquet with "
        "query_id, doc_id and rank or score, or a JSON object of query -> ranked ids.",
        show_default=False,
        dir_okay=False,
    ),
]


@eval_app.command("run")
def run_command(
    gold: GoldOption,
    run: RunOption,
    metrics: Annotated[
        str,
        typer.Option(
            "--metrics",
            "-m",
            help="Comma-separated metrics: recall@k, frac_recall@k, mrr[@k], ndcg[@k], "
            "precision@k, map[@k], r_precision. trec_eval and ranx names are accepted "
            "(P_10, success_5, ndcg_cut_10, hit_rate@5).",
        ),
    ] = "recall@1,recall@5,recall@10,mrr,ndcg@10",
    rel_level: Annotated[
        int,
        typer.Option(
            "--rel-level",
            "-l",
            help="A chunk is relevant when its grade is at least this (trec_eval -l). "
            "nDCG uses the grade as gain whatever the level.",
        ),
    ] = 1,
    gold_format: Annotated[
        str | None,
        typer.Option("--gold-format", help="Force the gold format: trec, beir, jsonl, json."),
    ] = None,
    run_format: Annotated[
        str | None,
        typer.Option("--run-format", help="Force the run format: trec, jsonl, csv, parquet, json."),
    ] = None,
    label: Annotated[
        str | None,
        typer.Option("--label", help="A name for this run, e.g. 'bm25+rerank'; kept in history."),
    ] = None,
    history: Annotated[
        Path | None,
        typer.Option(
            "--history",
            help="Append one row for this run to this CSV (kept in your repository).",
            dir_okay=False,
        ),
    ] = None,
    abstain_below: Annotated[
        float | None,
        typer.Option(
            "--abstain-below",
            help="For no-answer queries: a best score under this counts as abstaining.",
        ),
    ] = None,
    per_query: Annotated[
        bool, typer.Option("--per-query", help="Also print every query's scores.")
    ] = False,
    store: Annotated[
        bool,
        typer.Option(
            "--store/--no-store",
            help="Keep the run and its per-query scores in the DuckDB store (for compare).",
        ),
    ] = True,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Score a run against a gold set: recall@k, MRR, nDCG@k … equal to trec_eval's."""
    from goldmine.eval.runner import run_eval

    outcome = run_eval(
        gold,
        run,
        metrics,
        rel_level=rel_level,
        gold_format=gold_format,
        run_format=run_format,
        abstain_below=abstain_below,
        label=label,
        history=history,
        db=db_flag(db),
        store=store,
    )
    if json_output:
        from goldmine.output import print_json

        print_json(outcome.to_json())
        return
    from goldmine.eval.report import print_outcome

    print_outcome(outcome, per_query=per_query)


@eval_app.command("runs")
def runs_command(
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many, newest first.")] = 20,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """List the eval runs kept in the store."""
    from goldmine.eval.store import list_runs

    from goldmine.store import open_store

    with open_store(db_flag(db)) as con:
        runs = list_runs(con, limit)
    if json_output:
        from goldmine.output import print_json

        print_json({"runs": runs})
        return
    from goldmine.eval.report import print_runs

    print_runs(runs)
