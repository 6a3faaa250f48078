"""Search logs summarized on Spark: ``goldmine ingest searchlog|ubi … --engine spark``.

A log too big for one machine already lives next to a Spark cluster. There, Spark reads it, runs
the per-event work (parse, normalize, sessionize, failure signals) and rolls it up to one row per
source, day and normalized query; only that summary, written as Parquet, comes back into the store
(``search_summaries``), as one import batch with the usual accounting. Triage reads it beside the
events it rolls up itself (``triage_query_days``).

The signals, session order, normalization and roll-up are :mod:`goldmine.signals`'s SQL,
translated to Spark SQL by sqlglot: the rules DuckDB runs. What Spark does its own way is the
reading: each line is parsed into a VARIANT (``try_parse_json``) and the fields are found under
the same aliases and checked in the same order, with the same reasons, as the DuckDB stage
(``ingest/searchlog.py``); timestamps take the same forms (:func:`translate.timestamp`, checked
against ``gm_ts`` by ``tests/test_spark.py``). Rejects are counted by Spark, one example per reason
comes back. pyspark is imported in this package only, and this package only by ``--engine spark``.

Three modules, in the order a run goes: ``read`` (the session, the files, a row per record),
``translate`` (records to events and the summary, by the DuckDB rules) and ``write`` (the
accounting, the summary and one import batch); here, the two commands that chain them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goldmine.errors import InputError
from goldmine.ingest.batch import FileResult, ImportResult
from goldmine.ingest.fields import parse_map, resolve_fields
from goldmine.ingest.searchlog import ALIASES
from goldmine.ingest.spark import read, write
from goldmine.ingest.spark.read import (
    INSTALL,
    LogFile,
    Options,
    list_files,
    parse_conf,
    session,
)
from goldmine.ingest.spark.translate import (
    java_regex,
    redact,
    searchlog_events,
    summarize,
    timestamp,
    ubi_events,
)
from goldmine.ingest.spark.write import SparkRun, write_batch
from goldmine.store import Store, as_store

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "INSTALL",
    "LogFile",
    "Options",
    "SparkRun",
    "import_logs",
    "java_regex",
    "list_files",
    "parse_conf",
    "redact",
    "searchlog",
    "searchlog_events",
    "session",
    "summarize",
    "timestamp",
    "ubi",
    "ubi_events",
    "write_batch",
]


def import_logs(
    store: Store,
    paths: list[str],
    source: str,
    events_of: Callable[[SparkSession, list[LogFile]], DataFrame],
    options: Options,
    recorded: dict[str, Any],
    fmt: str | None = None,
    pair: bool = False,
    aside_of: Callable[[SparkSession, list[LogFile]], write.Aside] | None = None,
) -> ImportResult:
    """List the files, leave out those an earlier run read, summarize the rest on Spark with
    the store closed, then write one batch. ``events_of`` parses the new files; with ``pair``
    (UBI's queries and events) the files are read together or not at all; ``aside_of`` counts
    what the batch reads beside its rows."""

    spark = session(options.master, options.conf)
    files = list_files(spark, paths, fmt)
    with store.open() as con:
        known = write.known_files(con, source)
    new = [f for f in files if f.key() not in known]
    if pair and new:
        new = files
    label = ", ".join(paths)
    if not new:
        batches = ", ".join(str(b) for b in sorted({known[f.key()] for f in files}))
        note = f"already imported: all {len(files)} files (batch {batches})"
        return ImportResult([FileResult(label, source, "spark", None, skipped=True, note=note)])
    out = options.summary_dir or write.default_summary_dir(store.path, source)
    if options.summary_dir is None and not spark.sparkContext.master.startswith("local"):
        raise InputError(
            "--summary-dir is needed with a cluster master: a path the executors and this "
            "machine both reach (hdfs://…, s3a://…)"
        )
    done = write.run(spark, events_of(spark, new), options, out)
    aside = aside_of(spark, new) if aside_of else None
    recorded = {
        **recorded,
        "master": spark.sparkContext.master,
        "window_s": options.window_s,
        "redact": options.redactor.enabled,
    }
    with store.open() as con:
        result = write_batch(con, source, label, new, done, recorded, aside)
    if len(new) < len(files):
        result.note = f"{len(files) - len(new)} of {len(files)} files already imported"
    return ImportResult([result])


def searchlog(
    store: Store | Path,
    paths: list[str],
    mapping: list[str] | dict[str, str] | None,
    options: Options,
    fmt: str | None = None,
) -> ImportResult:
    """``ingest searchlog --engine spark``: the search logs' summary as one batch. ``store``: the
    command's (a script's path is made one here)."""
    if fmt is not None and fmt not in read.FORMATS:
        raise InputError(f"--engine spark reads --format {', '.join(read.FORMATS)}, not {fmt!r}")
    fields = mapping if isinstance(mapping, dict) else parse_map(mapping)
    resolve_fields([], ALIASES, fields)  # a wrong --map name fails before Spark starts

    def events_of(spark: SparkSession, files: list[LogFile]) -> DataFrame:
        keys = read.sample_keys(spark, files)
        records = read.records(spark, files)
        return searchlog_events(records, keys, fields, "searchlog", options.redactor)

    recorded = {"map": fields, "format": fmt}
    paths = [str(p) for p in paths]
    return import_logs(as_store(store), paths, "searchlog", events_of, options, recorded, fmt)


def ubi(
    store: Store | Path, queries: str, events: str, click_actions: list[str], options: Options
) -> ImportResult:
    """``ingest ubi --engine spark``: UBI queries and their click events, summarized as one
    batch. A re-run reads the pair again only if either file changed."""

    def listed(spark: SparkSession, files: list[LogFile], path: str) -> DataFrame:
        by_path = {f.path: f for f in files}
        return read.records(spark, [by_path[p] for p in read.listed(spark, path)])

    def events_of(spark: SparkSession, files: list[LogFile]) -> DataFrame:
        q, e = listed(spark, files, queries), listed(spark, files, events)
        return ubi_events(q, e, click_actions, options.redactor)

    def aside_of(spark: SparkSession, files: list[LogFile]) -> write.Aside:
        return write.ubi_events_aside(listed(spark, files, events), options.redactor)

    recorded = {"events": events, "click_actions": click_actions}
    return import_logs(
        as_store(store),
        [queries, events],
        "ubi",
        events_of,
        options,
        recorded,
        pair=True,
        aside_of=aside_of,
    )
