"""Command line for the model drafts: ``gold synth``, and the ``--judge llm`` halves of ``gold
draft`` and ``gold agreement`` (goldset/cli.py hands over to these).

The model settings come from ``[llm]`` in goldmine.toml, ``--base-url``/``--model``/
``--concurrency``/``--timeout``/``--max-failures`` over them (goldmine.llm). The totals (calls,
requests, retries, failures, tokens) go to stderr, like every message for people; ``--json``
prints the result on stdout. A run that gave up on the endpoint keeps what it got and exits 1.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from goldmine.errors import GoldmineError, InputError
from goldmine.goldset.cli_agreement import print_confusion, print_judge_agreement
from goldmine.goldset.items import default_user
from goldmine.goldset.judge import JudgeResult, model_agreement
from goldmine.goldset.judge import judge as run_judge
from goldmine.goldset.kappa import reading
from goldmine.goldset.synth import check_all_failed
from goldmine.goldset.synth import synth as run_synth
from goldmine.llm import DEFAULT_MAX_FAILURES, DEFAULT_TIMEOUT, KEEP_CHARS, settings
from goldmine.metrics import parse_metric
from goldmine.options import DbOption, JsonOption, store_flag
from goldmine.output import info, print_json, warn
from goldmine.readers import read_run
from goldmine.store import Store, open_store

BaseUrlOption = Annotated[
    str | None,
    typer.Option(
        "--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1 (Ollama)."
    ),
]
ModelOption = Annotated[str | None, typer.Option("--model", help="The model's name there.")]
ConcurrencyOption = Annotated[
    int | None, typer.Option("--concurrency", help="Requests at a time (default 4).")
]
TimeoutOption = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        help=f"Seconds a request may take, retries included (default {DEFAULT_TIMEOUT:g}).",
    ),
]
MaxFailuresOption = Annotated[
    int | None,
    typer.Option(
        "--max-failures",
        help=f"Give up after N requests in a row got no answer (default {DEFAULT_MAX_FAILURES}; "
        "0: never).",
    ),
]
LimitOption = Annotated[
    int | None,
    typer.Option(
        "--limit",
        min=1,
        help="--judge llm: grade at most N candidates this run (review's order: items as queued, "
        "each item's best-ranked candidates first), to try the model on a few; the next run "
        "goes on from there.",
    ),
]
ByOption = Annotated[
    str | None,
    typer.Option("--by", help="Who did it (default: $GOLDMINE_USER, then the login name)."),
]


def model_settings(
    base_url: str | None,
    model: str | None,
    concurrency: int | None,
    timeout: float | None = None,
    max_failures: int | None = None,
):

    return settings(base_url, model, concurrency, timeout=timeout, max_failures=max_failures)


def print_usage(what: str, usage, failures: list[str]) -> None:
    # A command that embedded (gold synth's traffic matching, a dense draft before the judge)
    # loaded the embedding model in this process: its seconds belong with the run's.
    embed = sys.modules.get("goldmine.embed")
    if embed is not None and embed.load_seconds():
        usage.embed_load_seconds = embed.load_seconds()
    info(f"{what}: model {usage.summary()}")
    if usage.reasons:
        warn(
            f"{usage.failed} failed drafts ("
            + ", ".join(f"{n} {why}" for why, n in sorted(usage.reasons.items()))
            + "), kept in gold_llm_calls; asked again next run:"
        )
        for line in failures:
            warn(f"  {line}")
    if usage.cut:
        warn(
            f"{usage.cut} {'answer' if usage.cut == 1 else 'answers'} longer than "
            f"{KEEP_CHARS:,} characters: gold_llm_calls keeps the first {KEEP_CHARS:,} "
            "(truncated, content_chars)"
        )


def check_gave_up(usage) -> None:
    """Exit 1 when the run stopped asking a failing endpoint (what it got is kept)."""
    if usage and usage.gave_up:
        raise GoldmineError(f"{usage.gave_up}; run again when the endpoint answers")


def synth(
    chunks: Annotated[
        int | None, typer.Option("--chunks", help="How many chunks to sample (default 20).")
    ] = None,
    doc: Annotated[str | None, typer.Option("--doc", help="Every chunk of one document.")] = None,
    cluster: Annotated[
        int | None,
        typer.Option("--cluster", help="The chunks a triage cluster's queries retrieve."),
    ] = None,
    per_chunk: Annotated[int, typer.Option("--per-chunk", help="Questions per chunk.")] = 2,
    style: Annotated[
        str, typer.Option("--style", help="user (a few words, as typed) or question.")
    ] = "user",
    seed: Annotated[int, typer.Option("--seed", help="Which chunks the sample takes.")] = 0,
    match: Annotated[
        str,
        typer.Option(
            "--match",
            help="Compare with real traffic: both (fuzzy + embedding), fuzzy, or none.",
        ),
    ] = "both",
    fuzzy_threshold: Annotated[
        float, typer.Option("--fuzzy-threshold", help="token_sort_ratio that counts as covered.")
    ] = 85.0,
    similarity: Annotated[
        float, typer.Option("--similarity", help="Embedding cosine that counts as covered.")
    ] = 0.80,
    base_url: BaseUrlOption = None,
    model: ModelOption = None,
    concurrency: ConcurrencyOption = None,
    timeout: TimeoutOption = None,
    max_failures: MaxFailuresOption = None,
    by: ByOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Draft the questions chunks answer with a model: drafted items, never gold by themselves."""

    s = model_settings(base_url, model, concurrency, timeout, max_failures)
    result = run_synth(
        store_flag(db), s, n_chunks=chunks, doc=doc, cluster=cluster, per_chunk=per_chunk,
        style=style, seed=seed, match=match, fuzzy_threshold=fuzzy_threshold,
        similarity=similarity, by=default_user(by),
    )  # fmt: skip
    result.usage.price(s)
    print_usage("synth", result.usage, result.failures)
    info(
        f"drafted {result.questions} questions from {result.chunks} chunks with {result.model} "
        f"({result.prompt_version}); {result.covered} covered by a real query, "
        f"{result.already} already in the set, {result.failed} failed. "
        "They are drafts: `goldmine gold review` makes them gold."
    )
    if result.real_added or result.real_drafted:
        info(
            f"real queries offered for review first (better evidence than the model's): "
            f"{result.real_added} added as candidates, {result.real_drafted} given the chunk "
            "their question was drafted from"
        )
    if as_json:
        print_json(result.as_dict())
    check_gave_up(result.usage)
    check_all_failed(result)


def judge_settings(
    judge: str | None,
    base_url: str | None,
    model: str | None,
    concurrency: int | None,
    timeout: float | None = None,
    max_failures: int | None = None,
):
    """The model settings for ``--judge llm`` (None without --judge), checked before any work."""

    if judge is None:
        if timeout is not None or max_failures is not None:
            raise InputError("--timeout and --max-failures are for the model: give --judge llm")
        return None
    if judge != "llm":
        raise InputError(f"--judge takes llm, not {judge!r}")
    return model_settings(base_url, model, concurrency, timeout, max_failures)


def judge_draft(
    store: Store, s, as_json: bool, drafted: dict | None = None, limit: int | None = None
) -> None:
    """``gold draft --judge llm``: the model grades every candidate, beside people's labels."""

    result = run_judge(store, s, limit=limit)
    result.usage.price(s)
    print_usage("judge", result.usage, result.failures)
    info(_judged_line(result))
    if result.left:
        info(f"--limit {limit}: {result.left} candidates left to grade; run again to go on")
    if result.suspicious:
        one = result.suspicious == 1
        warn(
            f"{result.suspicious} {'candidate reads' if one else 'candidates read'} like an "
            "instruction to a model (sent as data, inert): review shows a suspicious note on "
            f"{'its suggestion' if one else 'their suggestions'}"
        )
    print_judge_agreement(store.path, result.model)
    if as_json:
        print_json({"draft": drafted, "judge": result.as_dict()})
    check_gave_up(result.usage)
    u = result.usage
    if u.calls and u.failed == u.calls and not u.cached:
        raise GoldmineError(
            f"every model request failed ({u.failed}): " + "; ".join(result.failures[:3])
        )


def _judged_line(r: JudgeResult) -> str:
    """What the judge did: graded some, or found every grade current (a re-run), or had no
    candidate to grade."""
    model = f"{r.model} ({r.prompt_version})"
    if not r.pairs:
        return "no candidates to grade: `goldmine gold draft` proposes them first"
    if not r.graded and not r.failed and not r.left and r.current == r.pairs:
        return (
            f"all {r.current} candidates of {r.items} queries were already graded by {model}: "
            "nothing asked. Review shows them as suggestions; never gold until a person grades."
        )
    current = f"; {r.current} already current" if r.current else ""
    return (
        f"graded {r.graded} candidates of {r.items} queries with {model}; {r.usage.cached} from "
        f"the cache, {r.failed} failed{current}. Review shows them as suggestions; never gold "
        "until a person grades."
    )


def agreement_llm(
    db: Path | None, judge: str, runs: list[Path], metric: str, as_json: bool
) -> None:
    """``gold agreement --judge llm``: the model's grades against each person's."""

    if judge != "llm":
        raise InputError(f"--judge takes llm, not {judge!r}")

    read = [read_run(path) for path in runs]
    with open_store(db, create=False) as con:
        result = model_agreement(con, runs=read, metric=parse_metric(metric))
    if as_json:
        print_json(result)
        return
    print_agreement(result)


def _fmt(value) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def print_agreement(result: dict) -> None:
    if not result["people"]:
        print(
            "no candidate has both a person's grade and the model's: "
            "`goldmine gold draft --judge llm`, then review"
        )
    for p in result["people"]:
        ci = p["kappa_weighted_ci95"]
        interval = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
        print(
            f"{p['model']} / {p['person']}: {p['n_items']} items, "
            f"{p['n_pairs']} judged chunks; weighted kappa {_fmt(p['kappa_weighted'])}{interval}"
            f", relevant-or-not kappa {_fmt(p['kappa_relevant'])}, raw agreement "
            f"{p['observed_agreement']:.2f}"
        )
        note = reading(p["kappa_weighted"], ci, p["n_pairs"], queries=p["n_items"])
        if note:
            print(f"  weighted kappa: {note}")
        print_confusion(p["confusion"])
    o = result["suggestions"]
    if o["n"]:
        print(
            f"suggestions: {o['n']} candidates graded in review with the model's grade shown; "
            f"{o['accepted']} accepted, {o['overridden']} overridden "
            f"({o['override_share']:.0%} overridden)"
        )
    systems = result.get("systems")
    if systems:
        tau = systems["kendall_tau"]
        print(
            f"systems ranked by {systems['metric']} on people's vs the model's labels, "
            f"{systems['n_queries']} queries: Kendall's tau {_fmt(tau)}"
        )
        for run in systems["runs"]:
            print(f"  {run['run']}: people {run['people']:.4f}, model {run['model']:.4f}")
