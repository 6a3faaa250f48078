"""What a Spark run leaves: the accounting, the Parquet summary and one import batch.

Spark counts the rows by reason and writes the summary; only that summary and one example per
reject reason come back into the store, as one batch recording the files read (what the next
run leaves out).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goldmine import signals
from goldmine.ingest.batch import FileResult
from goldmine.ingest.redact import Redactor
from goldmine.ingest.spark import read, translate
from goldmine.store import registered, transaction

if TYPE_CHECKING:
    import duckdb
    from pyspark.sql import Column, DataFrame, SparkSession


_SAMPLE_CHARS = 2000  # a rejected row's text kept as its example


@dataclass
class SparkRun:
    """What Spark found and wrote: the accounting, a reject example per reason, the summary."""

    rows_in: int
    rejected: int
    stored: int
    reasons: list[dict[str, Any]]
    summary_dir: str
    summary_rows: int


def run(spark: SparkSession, events: DataFrame, options: read.Options, out: str) -> SparkRun:
    """Count, summarize and write the summary as Parquet under ``out``."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    # Kept for the two passes (the accounting, the summary); a good row's text is not needed.
    raw = translate.redact(F.col("raw"), options.redactor)
    slim = events.withColumn("raw", F.when(F.col("reason").isNotNull(), raw))
    slim = slim.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        groups = by_reason(slim)
        rows_in = sum(g["n"] for g in groups)
        reasons = _examples(groups)
        rejected = sum(r["n"] for r in reasons)
        stored = translate.stored_events(slim).count()
        summary = translate.summarize(spark, slim, options.window_s)
        summary.write.mode("overwrite").parquet(out)
    finally:
        slim.unpersist()
    n_rows = spark.read.parquet(out).count()
    return SparkRun(rows_in, rejected, stored, reasons, out, n_rows)


def by_reason(frame: DataFrame, *more: Column) -> list[Any]:
    """``frame``'s rows counted by ``reason`` (NULL: good), with a file and the first 2,000
    characters of ``raw`` of each as its example, and any ``more`` aggregates."""
    from pyspark.sql import functions as F

    return (
        frame.groupBy("reason")
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.first("file").alias("path"),
            F.first(F.left("raw", F.lit(_SAMPLE_CHARS))).alias("raw"),
            *more,
        )
        .collect()
    )


def _examples(groups: list[Any], prefix: str = "") -> list[dict[str, Any]]:
    """The reject reasons of ``by_reason``, most frequent first, one example each."""
    return sorted(
        (
            {"reason": prefix + g["reason"], "n": g["n"], "path": g["path"], "raw": g["raw"]}
            for g in groups
            if g["reason"] is not None
        ),
        key=lambda r: (-r["n"], r["reason"]),
    )


@dataclass
class Aside:
    """Records a batch reads beside its rows and counts apart (UBI's events): figures for the
    batch's ``extra`` and one reject example per reason."""

    extra: dict[str, Any]
    reasons: list[dict[str, Any]]


# --- the store: one batch per run, the files it read recorded -----------------------------------


def known_files(con: duckdb.DuckDBPyConnection, source: str) -> dict[tuple[str, int, int], int]:
    """Files an earlier Spark import of this source read (path, size, mtime) -> its batch."""
    rows = con.execute(
        "SELECT batch_id, options FROM import_batches WHERE source = ? "
        "AND finished_at IS NOT NULL AND options->>'engine' = 'spark'",
        [source],
    ).fetchall()
    known = {}
    for batch_id, text in rows:
        for f in json.loads(text).get("files", []):
            known[(f["path"], f["size"], f["mtime"])] = batch_id
    return known


def default_summary_dir(store_file: Path, source: str) -> str:
    """Beside the store's file: goldmine-summaries/<source>-<UTC time>."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
    return str(store_file.resolve().parent / "goldmine-summaries" / f"{source}-{stamp}")


def write_batch(
    con: duckdb.DuckDBPyConnection,
    source: str,
    label: str,
    files: list[read.LogFile],
    done: SparkRun,
    options: dict[str, Any],
    aside: Aside | None = None,
) -> FileResult:
    """The run as one import batch: its row (with the files read), one example per reject reason
    (``line`` unknown: Spark reads a file in parallel splits), and the summary rows."""
    aside = aside or Aside({}, [])
    result = FileResult(label, source, "spark", None)
    result.rows_in, result.rejected, result.stored = done.rows_in, done.rejected, done.stored
    result.already_present = done.rows_in - done.rejected - done.stored
    reasons = {r["reason"]: r["n"] for r in done.reasons}
    result.extra = {
        "engine": "spark",
        "files": len(files),
        "summary_rows": done.summary_rows,
        "summary_dir": done.summary_dir,
        "reject_reasons": reasons,
        **aside.extra,
    }
    recorded = {
        **options,
        "engine": "spark",
        "files": [{"path": f.path, "size": f.size, "mtime": f.mtime} for f in files],
        "summary_dir": done.summary_dir,
        "summary_rows": done.summary_rows,
        "reject_reasons": reasons,
        **aside.extra,
    }
    now = datetime.now(UTC).replace(tzinfo=None)
    with transaction(con):
        batch_id = con.execute("SELECT nextval('batch_id_seq')").fetchall()[0][0]
        result.batch_id = batch_id
        con.execute(
            "INSERT INTO import_batches (batch_id, source, path, size_bytes, format, started_at, "
            "rows_in, stored, rejected, already_present, options) "
            "VALUES (?, ?, ?, ?, 'spark', ?, ?, ?, ?, ?, ?)",
            [
                batch_id,
                source,
                label,
                sum(f.size for f in files),
                now,
                result.rows_in,
                result.stored,
                result.rejected,
                result.already_present,
                json.dumps(recorded, default=str),
            ],
        )
        if done.reasons or aside.reasons:
            con.executemany(
                "INSERT INTO rejects (batch_id, path, line, reason, raw) VALUES (?, ?, NULL, ?, ?)",
                [
                    [batch_id, r["path"], r["reason"], r["raw"]]
                    for r in done.reasons + aside.reasons
                ],
            )
        _insert_summary(con, batch_id, done.summary_dir)
        con.execute(
            "UPDATE import_batches SET finished_at = ?, watermark = "
            "(SELECT max(last_seen) FROM search_summaries WHERE batch_id = ?) WHERE batch_id = ?",
            [now, batch_id, batch_id],
        )
    return result


def _insert_summary(con: duckdb.DuckDBPyConnection, batch_id: int, summary_dir: str) -> None:
    """The Parquet summary into ``search_summaries``: read by DuckDB where it is a local folder;
    elsewhere (hdfs://, s3a://, …) through Spark, as Arrow."""

    columns = ", ".join(signals.SUMMARY_COLUMNS)
    insert = f"INSERT INTO search_summaries (batch_id, {columns}) SELECT ?, {columns} FROM "
    if "://" not in summary_dir or summary_dir.startswith("file:"):
        local = summary_dir.removeprefix("file://").removeprefix("file:")
        con.execute(insert + "read_parquet(?)", [batch_id, str(Path(local) / "*.parquet")])
        return
    from pyspark.sql import SparkSession

    table = SparkSession.getActiveSession().read.parquet(summary_dir).toArrow()
    with registered(con, _gm_summary=table):
        con.execute(insert + "_gm_summary", [batch_id])


def ubi_events_aside(events: DataFrame, redactor: Redactor) -> Aside:
    """The events file's own accounting, as ``ingest/ubi.py`` keeps it: how many, how many
    rejected (``ubi_events: <reason>``, one example each), how many name an object."""
    from pyspark.sql import functions as F

    rows = translate.ubi_event_rows(events)
    rows = rows.withColumn("raw", translate.redact(F.col("raw"), redactor))
    groups = by_reason(rows, F.count("object_id").alias("objects"))
    reasons = _examples(groups, "ubi_events: ")
    extra = {
        "events_in": sum(g["n"] for g in groups),
        "events_rejected": sum(r["n"] for r in reasons),
        "events_with_object": sum(g["objects"] for g in groups),
        "events_reject_reasons": {r["reason"]: r["n"] for r in reasons},
    }
    return Aside(extra, reasons)
