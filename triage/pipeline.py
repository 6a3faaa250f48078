"""``triage run``: the steps in order, each named on stderr, the long ones with the store closed.

normalize → signals → dedupe → embed → cluster → tags → rank (and topics) → labels. DuckDB lets
one process hold the file, so the steps that take long (fuzzy dedupe, embedding, clustering) read
their inputs, close the store, compute, and reopen it briefly to write their results in one
transaction: ``status`` or ``triage show`` in another terminal get in between. The SQL steps take
seconds.

Each step commits on its own, into the run's own copies of the tables readers read
(``triage.runs``); the last transaction puts them in place of the last run's and marks the run
done, so a reader sees the last finished run whole, never half of this one. Each step picks up
where an interrupted run stopped: events and per-query rows are rebuilt from the ingest tables
(seconds), fuzzy dedupe and clustering only touch queries without a canonical or a cluster (kept
in ``triage_assignments``), and embeddings are cached chunk by chunk. The summary
says what this run did and what it found already done (queries deduped, vectors cached, runs that
had not finished).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goldmine import signals
from goldmine.errors import InputError, StoreBusyError
from goldmine.output import step
from goldmine.store import Store, as_store, transaction
from goldmine.triage import queries as ranking
from goldmine.triage import runs
from goldmine.triage.events import (
    aggregate_queries,
    has_traffic,
    mark_session_signals,
    normalize_events,
    summary_events,
    wordless_summaries,
)

if TYPE_CHECKING:
    import duckdb
    import numpy as np

    from goldmine.triage.cluster import ClusterInputs, ClusterPlan, IndexBuilder

# triage's embedding backend unless told (--backend, [embed] backend): int8 ONNX encodes 2.8x
# faster than float32 torch on two cores with mean cosine 0.993 to its vectors and banking77 ARI
# 0.566 against torch's 0.559 (bench/bench_triage.py; README "Triage").
DEFAULT_BACKEND = "onnx-int8"
STEPS = ("normalize", "signals", "dedupe", "embed", "cluster", "tags", "rank", "labels")


@dataclass
class RunResult:
    run_id: int | None
    n_events: int = 0
    n_queries: int = 0
    n_new_queries: int = 0  # deduped by this run
    n_deduped_before: int = 0  # already had a canonical (an earlier run, finished or not)
    n_embedded: int = 0  # texts encoded by this run
    n_cached: int = 0  # texts to embed whose vectors were already cached
    n_clustered: int = 0  # canonical queries given a cluster by this run
    n_clusters: int = 0
    cluster: dict[str, Any] = field(default_factory=dict)
    tags: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    # the process's peak RSS in MB when each step ended (max RSS only grows: the step whose figure
    # jumps is the one that used the memory); forked clustering workers are counted apart
    peak_mb: dict[str, int] = field(default_factory=dict)
    resumed_runs: list[int] = field(default_factory=list)  # earlier runs that had not finished
    nothing_to_triage: bool = False
    # events whose text has no letter or digit (emoji, punctuation alone): left out, counted
    n_no_words: int = 0
    no_words_examples: list[str] = field(default_factory=list)
    backend: str = "torch"  # the embedding backend


class _NoEvents(Exception):
    """The window holds no events: the rebuilt event table is rolled back."""


def _check_model(con: duckdb.DuckDBPyConnection, model: str) -> None:
    rows = con.execute(
        "SELECT model FROM triage_runs WHERE status = 'done' ORDER BY run_id DESC LIMIT 1"
    ).fetchall()
    if (
        rows
        and rows[0][0]
        and rows[0][0] != model
        and con.execute("SELECT count(*) FROM triage_cluster_ids").fetchall()[0][0]
    ):
        raise InputError(
            f"the clusters were built with the embedding model {rows[0][0]!r}, not {model!r}: "
            f"run with --model {rows[0][0]!r} to keep cluster ids comparable"
        )


def _start_run(con: duckdb.DuckDBPyConnection, key: str, since: datetime | None) -> tuple:
    """A new run row (with this process's pid and start time, so a second ``triage run`` can
    tell this one is live), empty copies of the result tables for it to build, and the runs since
    the last finished one that did not finish (Ctrl-C, or a process that is gone), whose work this
    run picks up."""
    with transaction(con):
        live = set(runs.settle(con, starting=True))
        for run_id, pid, _, started in runs.running(con):
            if run_id in live:
                raise StoreBusyError(
                    f"triage run {run_id} is still running (PID {pid}, started {started:%H:%M:%S}"
                    "): wait for it to finish"
                )
        unfinished = con.execute(
            """SELECT run_id FROM triage_runs WHERE status = 'interrupted' AND run_id >
                   (SELECT coalesce(max(run_id), 0) FROM triage_runs WHERE status = 'done')
               ORDER BY run_id"""
        ).fetchall()
        run_id = con.execute("SELECT coalesce(max(run_id), 0) + 1 FROM triage_runs").fetchall()
        con.execute(
            "INSERT INTO triage_runs (run_id, started_at, model, status, since, pid, "
            "process_start) VALUES (?, now()::TIMESTAMP, ?, 'running', ?, ?, ?)",
            [run_id[0][0], key, since, *runs.this_process()],
        )
        runs.stage(con)
    return run_id[0][0], [r[0] for r in unfinished]


def peak_rss_mb() -> int:
    """This process's peak resident memory so far, in MB (Linux reports KB, macOS bytes)."""
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024))


class _Steps:
    """Names each step on stderr and times it into the result."""

    def __init__(self, result: RunResult) -> None:
        self.result = result

    def run(self, name: str, fn: Callable, *args, detail: str = "", con=None, **kwargs):

        step("triage", name, detail)
        start = time.perf_counter()
        if con is None:
            out = fn(*args, **kwargs)
        else:
            with transaction(con):
                out = fn(con, *args, **kwargs)
        self.result.timings[name] = round(time.perf_counter() - start, 3)
        self.result.peak_mb[name] = peak_rss_mb()
        return out


def run_triage(
    store: Store | str | Path | None,
    *,
    since: datetime | None = None,
    model: str | None = None,
    window_s: int | None = None,
    backend: str | None = None,
    no_answer_retriever: str = "bm25",
) -> RunResult:
    """Normalize, dedupe, embed, cluster, tag and rank; returns what each step did.

    ``backend`` (torch, onnx, onnx-int8; else [embed] backend, else DEFAULT_BACKEND) only
    changes how the vectors are computed: the clusters stay comparable (cosine >= 0.99 between
    backends), and the cache keeps each backend's vectors apart. ``store``: the command's
    (a path, for a script, is made one here)."""
    from goldmine.embed import embed_backend, model_key

    store = as_store(store)
    key = model_key(model)
    backend = embed_backend(backend, default=DEFAULT_BACKEND)
    window_s = signals.reformulation_window(window_s)
    with store.open(create=False) as con:  # a mistyped --db is no new, empty store
        _check_model(con, key)
        if not has_traffic(con):
            return RunResult(None, nothing_to_triage=True, backend=backend)
        run_id, stale = _start_run(con, key, since)
    result = RunResult(run_id, resumed_runs=stale, backend=backend)
    try:
        return _run_steps(store, result, since, model, window_s, no_answer_retriever)
    except BaseException:
        _mark_interrupted(store, run_id)
        raise


def _run_steps(
    store: Store,
    result: RunResult,
    since: datetime | None,
    model: str | None,
    window_s: int,
    no_answer_retriever: str,
) -> RunResult:
    from goldmine.embed import WRITE_WAIT_S, embed_closed, release_encoders, torch_threads
    from goldmine.triage import cluster, dedupe, labels, tags

    steps = _Steps(result)
    with store.open() as con, runs.staged(con):
        try:
            result.n_events = steps.run("normalize", _events, since, result, con=con)
        except _NoEvents:
            with transaction(con):
                con.execute("DELETE FROM triage_runs WHERE run_id = ?", [result.run_id])
                runs.drop_stage(con)
            return RunResult(
                None, resumed_runs=result.resumed_runs, nothing_to_triage=True,
                n_no_words=result.n_no_words, no_words_examples=result.no_words_examples,
            )  # fmt: skip
        result.n_queries = steps.run("signals", _signals, window_s, since, con=con)
        queries = dedupe.dedupe_inputs(con)
    result.n_deduped_before = int(queries["canonical_query"].is_not_null().sum())
    detail = f"{queries.height - result.n_deduped_before:,} new of {queries.height:,} queries"
    planned = steps.run("dedupe", dedupe.plan_canonicals, queries, detail=detail)
    del queries  # a million queries' rows; clustering's peak comes later
    with store.open(wait=WRITE_WAIT_S) as con, runs.staged(con):
        with transaction(con):
            result.n_new_queries = dedupe.write_canonicals(con, planned, result.run_id)
        inputs = cluster.cluster_inputs(con)
    del planned
    result.n_clustered = len(inputs.todo)
    detail = f"{len(inputs.texts):,} texts with {model or 'the bundled MiniLM'}"
    detail += f" ({result.backend})"
    # a first run's k-NN index, built on the core the embedding leaves idle while it embeds
    builder = None
    if not inputs.known.height:
        builder = cluster.index_builder(len(inputs.texts), torch_threads(), store.path.parent)
    try:
        embedded = steps.run(
            "embed", embed_closed, store, inputs.texts, model, detail=detail,
            backend=result.backend, ready=builder and builder.feed,
        )  # fmt: skip
        result.n_embedded, result.n_cached = embedded.n_encoded, embedded.n_cached
        release_encoders()
        detail = f"{len(inputs.todo):,} queries without a cluster"
        plan = steps.run("cluster", _cluster, inputs, embedded.vectors, builder, detail=detail)
    finally:
        if builder is not None:
            builder.close()
    del embedded, inputs  # the vectors (1.2 GB at 1M queries) are not needed by the SQL steps
    with store.open(wait=WRITE_WAIT_S) as con, runs.staged(con):
        with transaction(con):
            result.cluster = cluster.write_clusters(con, plan, result.run_id)
        del plan
        result.tags = steps.run("tags", tags.tag_queries, no_answer_retriever, con=con)
        result.n_clusters = steps.run("rank", _rank, result.run_id, con=con)
        steps.run("labels", labels.label_clusters, con=con)
        with transaction(con):  # readers see the last run's results or this one's, whole
            runs.publish(con)
            _finish(con, result, window_s)
    return result


def _cluster(inputs: ClusterInputs, x: np.ndarray, builder: IndexBuilder | None) -> ClusterPlan:
    """The cluster step; the wait for the index built beside the embedding is part of it."""
    from goldmine.triage import cluster

    return cluster.plan_clusters(inputs, x, builder.finish() if builder is not None else None)


def _events(con: duckdb.DuckDBPyConnection, since: datetime | None, result: RunResult) -> int:
    kept, wordless = normalize_events(con, since)
    summaries = wordless_summaries(con, since)
    result.n_no_words = wordless.n_events + summaries.n_events
    result.no_words_examples = [*wordless.examples, *summaries.examples][:3]
    # Events imported as Spark summaries have no per-event rows: they count all the same.
    n = kept + summary_events(con, since)
    if not n:
        raise _NoEvents  # rolls the rebuilt event table back: the last run's rows stay
    return n


def _signals(con: duckdb.DuckDBPyConnection, window_s: int, since: datetime | None) -> int:

    mark_session_signals(con, window_s)
    return aggregate_queries(con, since)


def _rank(con: duckdb.DuckDBPyConnection, run_id: int) -> int:
    """The clusters ranked, then grouped into topics (a cluster's own rate stays its own)."""
    from goldmine.triage.topics import assign_topics

    n = ranking.summarize_clusters(con, run_id)
    assign_topics(con)
    return n


def _finish(con: duckdb.DuckDBPyConnection, result: RunResult, window_s: int) -> None:
    params = {
        "k": result.cluster.get("k"),
        "window_s": window_s,
        "backend": result.backend,
        **result.cluster,
    }
    con.execute(
        """UPDATE triage_runs SET finished_at = now()::TIMESTAMP, status = 'done',
                  n_queries = ?, n_embedded = ?, n_clusters = ?, params = ?, timings = ?,
                  watermark = (SELECT max(last_seen) FROM triage_query_days)
           WHERE run_id = ?""",
        [
            result.n_queries,
            result.n_embedded,
            result.n_clusters,
            json.dumps(params),
            json.dumps(result.timings),
            result.run_id,
        ],
    )


def _mark_interrupted(store: Store, run_id: int) -> None:
    """Best effort on Ctrl-C or an error: the next run then knows this one did not finish."""
    try:
        with store.open() as con:
            con.execute(
                "UPDATE triage_runs SET status = 'interrupted' WHERE run_id = ? "
                "AND status = 'running'",
                [run_id],
            )
    except Exception:  # the store may be what failed; the pid check covers this case
        pass


def summary(result: RunResult, since: datetime | None = None) -> str:
    """The run in one line: what it found, what it did, and what was already done."""
    if result.nothing_to_triage:
        where = f" at or after {since:%Y-%m-%d %H:%M}" if since else ""
        if result.n_no_words:
            return f"nothing to triage: {_no_words(result)}"
        return (
            f"nothing to triage: the store holds no searches, tickets, chat turns or manual "
            f"queries{where} (import some with goldmine ingest searchlog|tickets|chat FILE, "
            "or goldmine add)"
        )
    c = result.cluster
    line = (
        f"triage run {result.run_id}: {result.n_events:,} events, {result.n_queries:,} distinct "
        f"queries; this run deduped {result.n_new_queries:,} new ({result.n_deduped_before:,} "
        f"done before), {result.n_embedded:,} embedded ({result.n_cached:,} found cached), "
        f"{result.n_clustered:,} clustered ({c.get('n_joined', 0):,} joined existing clusters, "
        f"{c.get('n_new_clusters', 0):,} new clusters); {result.n_clusters:,} clusters in all"
    )
    if result.n_no_words:
        line += f"; {_no_words(result)}"
    if result.resumed_runs:
        runs = ", ".join(str(r) for r in result.resumed_runs)
        plural = "s" if len(result.resumed_runs) > 1 else ""
        line += f"; run{plural} {runs} had not finished: its work was kept"
    return line


def _no_words(result: RunResult) -> str:
    """What the run left out for want of words, with the most frequent such texts."""
    shown = ", ".join(repr(q) for q in result.no_words_examples)
    n = result.n_no_words
    return (
        f"{n:,} event{'s' if n != 1 else ''} left out: no letter or digit in their text "
        f"(e.g. {shown})"
    )
