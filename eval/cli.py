"""Command line for the eval stage: ``goldmine eval run``, ``goldmine eval runs``.

The commands parse options, call ``goldmine.eval.runner`` and print. Nothing here imports a
dataframe library or a model: ``goldmine eval run`` on a starter set finishes in a fraction of a
second.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from goldmine.config import settings
from goldmine.eval.options import MetricsOption, eval_app
from goldmine.eval.report import print_runs
from goldmine.eval.runner import DEFAULT_METRICS, Reranker, RunSource, run_eval
from goldmine.eval.store import list_runs
from goldmine.options import DbOption, JsonOption, db_flag, store_flag
from goldmine.store import open_store


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the root app."""
    # Importing them adds their commands to eval_app (goldmine.eval.options).
    from goldmine.eval import cli_compare, cli_power  # noqa: F401

    app.add_typer(eval_app, name="eval")


GoldOption = Annotated[
    str,
    typer.Option(
        "--gold",
        "-g",
        help="Gold set: a file (TREC qrels, BEIR qrels as TSV, JSON lines or Parquet, goldmine "
        "gold JSONL, or a JSON object "
        "of query -> relevant ids), or a published version from the store: v3, latest.",
        show_default=False,
    ),
]
RunOption = Annotated[
    Path | None,
    typer.Option(
        "--run",
        "-r",
        help="Run file: TREC run, JSONL (query_id or query + results), CSV/Parquet with "
        "query_id, doc_id and rank or score, or a JSON object of query -> ranked ids.",
        show_default=False,
        dir_okay=False,
    ),
]
_SOURCES = "Run sources (give one)"
_HTTP = "HTTP retriever"
_GATE = "CI gate"


RetrieverOption = Annotated[
    str | None,
    typer.Option(
        "--retriever",
        help="A Python callable module:function(query, k) returning ids or (id, score) "
        "pairs; a first parameter named 'queries' gets the whole list. The working "
        "directory is importable.",
        rich_help_panel=_SOURCES,
    ),
]
HttpOption = Annotated[
    str | None,
    typer.Option(
        "--http",
        help="POST each query to this URL; the answer is a JSON list of ids or {id, score}, "
        "or an object holding it where search services put it (results, hits.hits, documents, "
        "matches, result, root.children, ids; or --json-path).",
        rich_help_panel=_SOURCES,
    ),
]
BaselineOption = Annotated[
    str | None,
    typer.Option(
        "--baseline",
        help="A built-in retriever over the stored corpus: bm25, dense or hybrid.",
        rich_help_panel=_SOURCES,
    ),
]
FromTracesOption = Annotated[
    bool,
    typer.Option(
        "--run-from-traces",
        help="What production retrieved: each gold query's latest stored trace retrieval "
        "(goldmine ingest traces), scored on the gold queries it asked.",
        rich_help_panel=_SOURCES,
    ),
]
SinceOption = Annotated[
    datetime | None,
    typer.Option(
        "--since",
        help="With --run-from-traces: retrievals at or after this.",
        rich_help_panel=_SOURCES,
        show_default=False,
    ),
]
UntilOption = Annotated[
    datetime | None,
    typer.Option(
        "--until",
        help="With --run-from-traces: retrievals before this.",
        rich_help_panel=_SOURCES,
        show_default=False,
    ),
]
KOption = Annotated[
    int | None,
    typer.Option(
        "--k",
        "-k",
        help="Ids to ask a retriever for (default: --k-candidates or the largest cut-off).",
        min=1,
    ),
]
HttpBodyOption = Annotated[
    str | None,
    typer.Option(
        "--http-body",
        help='JSON body template with "{query}" and "{k}", e.g. \'{"q": "{query}", '
        '"size": "{k}"}\' ("{k}" alone in its string is sent as a number). Default: '
        '{"query": ..., "k": ...}.',
        rich_help_panel=_HTTP,
    ),
]
JsonPathOption = Annotated[
    str | None,
    typer.Option(
        "--json-path",
        help="Dotted path to the result list in the response, e.g. hits.hits.",
        rich_help_panel=_HTTP,
    ),
]
HeaderOption = Annotated[
    list[str] | None,
    typer.Option(
        "--header", help="Extra HTTP header 'Name: value' (repeatable).", rich_help_panel=_HTTP
    ),
]
ConcurrencyOption = Annotated[
    int, typer.Option("--concurrency", help="Requests in flight.", min=1, rich_help_panel=_HTTP)
]
TimeoutOption = Annotated[
    float,
    typer.Option(
        "--timeout",
        help="Seconds a request may take, its answer read in full (each retry has its own).",
        rich_help_panel=_HTTP,
    ),
]
RetriesOption = Annotated[
    int,
    typer.Option(
        "--retries",
        help="Retries on timeouts, dropped connections, 5xx and 429, with backoff (or the "
        "wait a Retry-After asks, up to a minute).",
        min=0,
        rich_help_panel=_HTTP,
    ),
]
RelLevelOption = Annotated[
    int,
    typer.Option(
        "--rel-level",
        "-l",
        help="A chunk is relevant when its grade is at least this (trec_eval -l); a chunk "
        "nobody judged never is. nDCG uses the grade as gain whatever the level.",
    ),
]
KPromptOption = Annotated[
    int | None,
    typer.Option(
        "--k-prompt", help="Chunks sent to the model. [default: 5]", min=1, show_default=False
    ),
]
KCandidatesOption = Annotated[
    int | None,
    typer.Option(
        "--k-candidates",
        help="Chunks the first stage returns. [default: 50]",
        min=1,
        show_default=False,
    ),
]
GoldFormatOption = Annotated[
    str | None,
    typer.Option("--gold-format", help="Force the gold format: trec, beir, jsonl, json, parquet."),
]
RunFormatOption = Annotated[
    str | None,
    typer.Option(
        "--run-format",
        help="Force the run format: trec, jsonl, csv, parquet, json, msmarco "
        "(qid<TAB>docid<TAB>rank, no header).",
    ),
]
LabelOption = Annotated[
    str | None,
    typer.Option("--label", help="A name for this run, e.g. 'bm25+rerank'; kept in history."),
]
HistoryOption = Annotated[
    Path | None,
    typer.Option(
        "--history",
        help="Append one row for this run to this CSV (kept in your repository).",
        dir_okay=False,
    ),
]
SaveRunOption = Annotated[
    Path | None,
    typer.Option(
        "--save-run",
        help="Write what the retriever returned as a TREC run (or JSONL for .jsonl).",
        dir_okay=False,
    ),
]
AbstainBelowOption = Annotated[
    float | None,
    typer.Option(
        "--abstain-below",
        help="For no-answer queries: a best score under this counts as abstaining.",
    ),
]
FailUnderOption = Annotated[
    list[str] | None,
    typer.Option(
        "--fail-under",
        help="Exit 1 if a metric is under a floor, e.g. recall@5=0.70 (repeatable).",
        rich_help_panel=_GATE,
    ),
]
FailIfWorseThanOption = Annotated[
    str | None,
    typer.Option(
        "--fail-if-worse-than",
        help="Exit 1 if this run is worse than a stored run (id or label) by the compare's "
        "verdict: outside the noise, not any drop.",
        rich_help_panel=_GATE,
    ),
]
PerQueryOption = Annotated[
    bool, typer.Option("--per-query", help="Also print every query's scores.")
]
StoreOption = Annotated[
    bool,
    typer.Option(
        "--store/--no-store",
        help="Keep the run and its per-query scores in the DuckDB store (for compare).",
    ),
]


def eval_defaults() -> dict[str, Any]:
    """``[eval]`` in goldmine.toml: metrics, k_prompt, k_candidates (read here, at the command:
    the stage takes values)."""

    section = settings().eval  # typed and checked when goldmine.toml was loaded
    return {
        "metrics": section.metrics or DEFAULT_METRICS,
        "k_prompt": section.k_prompt,
        "k_candidates": section.k_candidates,
    }


@eval_app.command("run")
def run_command(
    gold: GoldOption,
    run: RunOption = None,
    retriever: RetrieverOption = None,
    http: HttpOption = None,
    baseline: BaselineOption = None,
    from_traces: FromTracesOption = False,
    since: SinceOption = None,
    until: UntilOption = None,
    k: KOption = None,
    http_body: HttpBodyOption = None,
    json_path: JsonPathOption = None,
    header: HeaderOption = None,
    concurrency: ConcurrencyOption = 8,
    timeout: TimeoutOption = 10.0,
    retries: RetriesOption = 2,
    metrics: MetricsOption = None,
    rel_level: RelLevelOption = 1,
    k_prompt: KPromptOption = None,
    k_candidates: KCandidatesOption = None,
    gold_format: GoldFormatOption = None,
    run_format: RunFormatOption = None,
    label: LabelOption = None,
    history: HistoryOption = None,
    save_run: SaveRunOption = None,
    abstain_below: AbstainBelowOption = None,
    fail_under: FailUnderOption = None,
    fail_if_worse_than: FailIfWorseThanOption = None,
    per_query: PerQueryOption = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose", "-v", help="List every no-answer query and what the run did with it."
        ),
    ] = False,
    store: StoreOption = True,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Score a run against a gold set: recall@k, MRR, nDCG@k … equal to trec_eval's."""

    defaults = eval_defaults()
    source = RunSource(path=run, format=run_format, retriever=retriever, baseline=baseline, k=k,
                       traces=from_traces, since=since, until=until)  # fmt: skip
    if http is not None:
        from goldmine.eval.sources import HttpOptions, parse_headers

        source.http = HttpOptions(
            url=http,
            body_template=http_body,
            json_path=json_path,
            concurrency=concurrency,
            timeout=timeout,
            retries=retries,
            headers=parse_headers(header or []),
        )
    gate = None
    if fail_under or fail_if_worse_than:
        from goldmine.eval.gate import Gate

        gate = Gate.parse(fail_under or [], fail_if_worse_than)
    asked = metrics or defaults["metrics"]
    if gate is not None and gate.metrics():
        asked = ",".join([asked, *gate.metrics()])
    at = store_flag(db)
    outcome = run_eval(
        gold,
        source,
        asked,
        rel_level=rel_level,
        gold_format=gold_format,
        abstain_below=abstain_below,
        label=label,
        history=history,
        store=at,
        keep_run=store,
        reranker=Reranker(
            k_prompt or defaults["k_prompt"], k_candidates or defaults["k_candidates"]
        ),
        save_run=save_run,
    )
    if json_output:
        from goldmine.output import print_json

        print_json(outcome.to_json())
    else:
        from goldmine.eval.report import print_outcome

        print_outcome(outcome, per_query=per_query, verbose=verbose)
    if gate is not None:
        gate.enforce(outcome, at)


@eval_app.command("runs")
def runs_command(
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many, newest first.")] = 20,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """List the eval runs kept in the store."""

    with open_store(db_flag(db), create=False) as con:
        runs = list_runs(con, limit)
    if json_output:
        from goldmine.output import print_json

        print_json({"runs": runs})
        return

    print_runs(runs)
