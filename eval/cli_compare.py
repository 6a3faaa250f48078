"""``goldmine eval compare``, ``history``, ``diagnose`` and ``export-generation``.

Added to ``goldmine.eval.options.eval_app`` on import. numpy is imported by the compare itself,
inside the command, so ``goldmine eval run`` (and ``eval history``) start without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from goldmine.config import load_config
from goldmine.errors import InputError
from goldmine.eval.generation import diagnose, export_generation, print_diagnosis, read_grades
from goldmine.eval.history import history_json, history_path, metric_columns, read_history
from goldmine.eval.options import RunRelLevelOption, SharedMetricsOption, eval_app
from goldmine.eval.report import print_history
from goldmine.eval.runner import load_gold
from goldmine.options import DbOption, JsonOption, store_flag
from goldmine.readers import read_run

PlotOption = Annotated[
    Path | None,
    typer.Option(
        "--plot",
        help="Write a plot: .html (self-contained, inline SVG) or .png (needs matplotlib).",
        dir_okay=False,
        show_default=False,
    ),
]


@eval_app.command("compare")
def compare_command(
    a: Annotated[
        str,
        typer.Argument(
            metavar="A",
            help="A: a stored run (id or label), a run file, or "
            "history:FILE:LABEL / history:FILE:ROW.",
        ),
    ],
    b: Annotated[str, typer.Argument(metavar="B", help="B: the same kinds; deltas are B - A.")],
    gold: Annotated[
        str | None,
        typer.Option("--gold", "-g", help="Gold set to score run files against (file or v3)."),
    ] = None,
    metrics: SharedMetricsOption = None,
    permutations: Annotated[
        int, typer.Option("--permutations", help="Sign flips in the randomization test.", min=1)
    ] = 10_000,
    bootstrap: Annotated[
        int, typer.Option("--bootstrap", help="Resamples for the 95% interval.", min=1)
    ] = 10_000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of both resamplings.")] = 0,
    alpha: Annotated[
        float, typer.Option("--alpha", help="A verdict needs the (Holm) p under this.")
    ] = 0.05,
    rel_level: RunRelLevelOption = 1,
    plot: PlotOption = None,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Pair two runs query by query: delta, randomization test, bootstrap interval, verdict."""
    from goldmine.eval.compare import compare_refs
    from goldmine.eval.compare_report import format_comparison

    if plot is not None:
        from goldmine.eval.plot import plot_kind

        plot_kind(plot)
    comparison = compare_refs(
        a,
        b,
        gold=gold,
        metrics=metrics,
        store=store_flag(db),
        rel_level=rel_level,
        permutations=permutations,
        seed=seed,
        alpha=alpha,
        bootstrap=bootstrap,
    )
    if plot is not None:
        from goldmine.eval.plot import write_compare_plot

        write_compare_plot(comparison, plot)
    if json_output:
        from goldmine.output import print_json

        print_json(comparison.to_json() | ({"plot": str(plot)} if plot else {}))
        return
    print("\n".join(format_comparison(comparison)))
    if plot is not None:
        print(f"\nplot written to {plot}")


@eval_app.command("history")
def history_command(
    given: Annotated[
        Path | None,
        typer.Argument(
            help="The history CSV, as --file says it (either spelling).",
            dir_okay=False,
            show_default=False,
        ),
    ] = None,
    file: Annotated[
        Path | None,
        typer.Option(
            "--file",
            "-f",
            help="The history CSV (what eval run --history appends to). "
            "Default: [eval] history in goldmine.toml.",
            dir_okay=False,
            show_default=False,
        ),
    ] = None,
    metrics: SharedMetricsOption = None,
    plot: PlotOption = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="table (whole columns, also through a pipe) or tsv (header and rows, "
            "tab-separated, for a script).",
        ),
    ] = "table",
    json_output: JsonOption = False,
) -> None:
    """The table of eval runs in the history file, and a trend plot per metric."""
    if fmt not in ("table", "tsv"):
        raise InputError(f"--format is table or tsv, not {fmt!r}")
    if given is not None and file is not None and given != file:
        raise InputError(f"two history files given ({given} and --file {file}): give one")
    path = history_path(given or file, load_config())
    if plot is not None:
        from goldmine.eval.plot import plot_kind

        plot_kind(plot)
    rows = read_history(path)
    names = metric_columns(rows, metrics)
    if plot is not None:
        from goldmine.eval.plot import write_history_plot

        write_history_plot(rows, names, plot)
    if json_output:
        from goldmine.output import print_json

        print_json(history_json(path, rows, names) | ({"plot": str(plot)} if plot else {}))
        return
    print_history(path, rows, names, fmt)
    if plot is not None:
        print(f"plot written to {plot}")


@eval_app.command("diagnose")
def diagnose_command(
    grades: Annotated[
        Path,
        typer.Argument(
            help="CSV or JSONL with query_id, with_gold, production: booleans, 0/1, or grades "
            "(with --pass-at).",
            dir_okay=False,
        ),
    ],
    pass_at: Annotated[
        float | None,
        typer.Option("--pass-at", help="A grade at least this counts as right (e.g. 4 on 1-5)."),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Which half fails: right with the gold passages but wrong in production is retrieval;
    wrong even with the gold passages is the prompt."""

    diagnosis = diagnose(read_grades(grades, pass_at), str(grades))
    diagnosis.pass_at = pass_at
    if json_output:
        from goldmine.output import print_json

        print_json(diagnosis.to_json())
        return
    print_diagnosis(diagnosis)


@eval_app.command("export-generation")
def export_generation_command(
    gold: Annotated[
        str, typer.Option("--gold", "-g", help="Gold set: a file, or a version (v3, latest).")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="JSONL file to write.", dir_okay=False)],
    run: Annotated[
        Path | None,
        typer.Option(
            "--run", "-r", help="Also write this run file's top k chunks per query.", dir_okay=False
        ),
    ] = None,
    k: Annotated[
        int, typer.Option("--k", help="Retrieved chunks per query (with --run).", min=1)
    ] = 5,
    rel_level: Annotated[
        int, typer.Option("--rel-level", "-l", help="A chunk is gold when graded at least this.")
    ] = 1,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Each answerable query with its gold chunks' text (and a run's), for your generation step."""

    store = store_flag(db)
    gold_set = load_gold(gold, None, store)
    ranked = read_run(run) if run is not None else None
    with store.open(create=False) as con:
        stats = export_generation(con, gold_set, out, run=ranked, k=k, rel_level=rel_level)
    if json_output:
        from goldmine.output import print_json

        print_json(stats.to_json())
        return
    print(
        f"wrote {stats.n_queries} answerable queries with {stats.n_gold_chunks} gold chunks "
        f"to {out} (corpus snapshot {stats.snapshot_id})"
    )
    if run is not None:
        print(f"with the top {k} chunks of {run} for {stats.n_with_run} of them")
    if stats.n_missing_chunks:
        from goldmine.output import warn

        warn(
            f"{stats.n_missing_chunks} chunk ids are not in corpus snapshot {stats.snapshot_id} "
            "(their text is null): was the corpus re-chunked since the gold set was made?"
        )
