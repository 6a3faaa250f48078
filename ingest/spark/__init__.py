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
(``ingest/searchlog.py``); timestamps take the same forms (:func:`_timestamp`, checked against
``gm_ts`` by ``tests/test_spark.py``). Rejects are counted by Spark, one example per reason comes
back. pyspark is imported here only, and this module only by ``--engine spark``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goldmine import signals
from goldmine.errors import InputError
from goldmine.ingest.batch import FileResult, ImportResult
from goldmine.ingest.fields import parse_map, resolve_fields
from goldmine.ingest.redact import Redactor
from goldmine.ingest.searchlog import ALIASES
from goldmine.store import open_store, registered, transaction
from goldmine.text import norm_sql

if TYPE_CHECKING:
    import duckdb
    from pyspark.sql import Column, DataFrame, SparkSession

INSTALL = "pip install 'goldmine[spark]'"
# Times are read and days cut in UTC, as in DuckDB (batch.prepare), on any master.
ALWAYS = {"spark.sql.session.timeZone": "UTC"}
# Local mode on one machine: quiet, no web UI, few shuffle partitions. A cluster keeps its own
# settings (spark-defaults.conf, --conf).
LOCAL = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.driver.memory": "2g",
}
_SUFFIXES = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",  # a JSON array document, else JSON lines (_opens_array)
    ".csv": "csv",
    ".tsv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_COMPRESSED = (".gz", ".bz2", ".zst")  # Hadoop's codecs, by these suffixes (zstd in pure Java)
_FORMATS = ("jsonl", "json", "csv", "parquet")
_SAMPLE_CHARS = 2000  # a rejected row's text kept as its example


@dataclass
class LogFile:
    """A file Spark reads: where, how big, when last changed (what a re-run compares)."""

    path: str
    size: int
    mtime: int
    format: str

    def key(self) -> tuple[str, int, int]:
        return (self.path, self.size, self.mtime)


@dataclass
class Options:
    """How the Spark engine runs: the master, extra ``--conf`` settings, where the summary goes,
    the reformulation window the session rule uses, and the PII redaction of the queries and
    the rejects' text (off unless ``--redact``)."""

    master: str | None = None  # None: spark-submit's master if run under it, else local[2]
    conf: dict[str, str] = field(default_factory=dict)
    summary_dir: str | None = None
    window_s: int = signals.DEFAULT_WINDOW_S
    redactor: Redactor = field(default_factory=lambda: Redactor(enabled=False))


def parse_conf(specs: list[str] | None) -> dict[str, str]:
    """``--conf k=v`` pairs as a dict."""
    out = {}
    for spec in specs or []:
        key, sep, value = spec.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--conf wants key=value, got {spec!r}")
        out[key.strip()] = value.strip()
    return out


def session(master: str | None = None, conf: dict[str, str] | None = None) -> SparkSession:
    """The Spark session (one per process), or an InputError saying what to install. Without
    a master: spark-submit's when it launched this process, else local[2]."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise InputError(f"--engine spark needs pyspark: {INSTALL}") from exc
    java_home = os.environ.get("JAVA_HOME")
    java = Path(java_home, "bin", "java") if java_home else shutil.which("java")
    if not java or not Path(java).exists():
        raise InputError(
            "--engine spark needs Java 17 or newer (apt-get install openjdk-17-jre-headless, "
            "or set JAVA_HOME)"
        )
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit started this process
    master = master or (None if submitted else "local[2]")
    if master is not None and master.startswith("local"):
        # The UDFs (goldmine.signals) run in Python workers: this interpreter, which has
        # goldmine. On a cluster the executors' Python needs goldmine installed (README).
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("goldmine")
    settings = dict(ALWAYS)
    if master is not None:
        builder = builder.master(master)
        settings.update(LOCAL if master.startswith("local") else {})
    for key, value in {**settings, **(conf or {})}.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # the JVM did not start: say so on one line
        raise InputError(f"Spark did not start: {str(exc).splitlines()[0]}") from exc
    spark.sparkContext.setLogLevel("ERROR")
    from pyspark.sql import functions as F

    for name, (function, kind, batches) in signals.SPARK_UDFS.items():
        if batches:
            spark.udf.register(name, F.arrow_udf(function, kind))
        else:
            spark.udf.register(name, function, kind)
    return spark


def list_files(spark: SparkSession, paths: list[str], forced: str | None = None) -> list[LogFile]:
    """The log files under the paths (files, globs, folders: any URI Spark's Hadoop
    configuration reads), through Hadoop's FileSystem so object stores list as local disks do.
    ``forced``: the format ``--format`` names, for every file."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    found: dict[str, LogFile] = {}
    for given in paths:
        uri = given if "://" in given else str(Path(given).absolute())
        hpath = jvm.org.apache.hadoop.fs.Path(uri)
        fs = hpath.getFileSystem(conf)
        statuses = fs.globStatus(hpath) or []
        if not statuses:
            raise InputError("no such file or folder", path=given)
        for status in statuses:
            for item in _walk(fs, status):
                name = item.getPath().toString()
                kind = _format(name)
                if forced is not None and (kind is not None or not status.isDirectory()):
                    kind = forced  # as in DuckDB: a file named, each known one in a folder
                if kind == "json" and not _opens_array(spark, fs, item.getPath()):
                    kind = "jsonl"
                if kind is not None:
                    found[name] = LogFile(name, item.getLen(), item.getModificationTime(), kind)
                elif not status.isDirectory():
                    raise InputError(
                        "--engine spark reads JSON lines (.jsonl, .ndjson, .json), a JSON array "
                        "(.json), CSV (.csv, .tsv) and Parquet, optionally .gz, .bz2 or .zst; "
                        "rename the file, pass --format, or use --engine duckdb",
                        path=given,
                    )
    if not found:
        raise InputError(f"no .jsonl, .json, .csv or .parquet files under {', '.join(paths)}")
    return sorted(found.values(), key=lambda f: f.path)


def _walk(fs, status):
    if not status.isDirectory():
        yield status
        return
    files = fs.listFiles(status.getPath(), True)
    while files.hasNext():
        yield files.next()


def _opens_array(spark: SparkSession, fs, hpath) -> bool:
    """Whether a .json file's first character (after a BOM and white space, decompressed)
    opens an array: then it is one JSON document, else JSON lines."""
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    codec = spark.sparkContext._jvm.org.apache.hadoop.io.compress.CompressionCodecFactory(
        conf
    ).getCodec(hpath)
    stream = fs.open(hpath)
    try:
        if codec is not None:
            stream = codec.createInputStream(stream)
        for _ in range(65536):
            byte = stream.read()
            if byte not in (0xEF, 0xBB, 0xBF, 0x20, 0x09, 0x0A, 0x0D):
                return byte == ord("[")
        return False
    finally:
        stream.close()


def _format(name: str) -> str | None:
    lower = name.lower()
    for suffix in _COMPRESSED:
        lower = lower.removesuffix(suffix)
    return next((kind for suffix, kind in _SUFFIXES.items() if lower.endswith(suffix)), None)


# --- reading: one VARIANT per record, fields by alias, the DuckDB stage's checks ---------------


# What every record carries besides ``v``: where it is from, its text, and whether it is an
# object (``gm_bad`` when not), starts with a brace, or is JSON at all (the reject reasons).
RECORD = ("file", "pos", "raw", "gm_bad", "gm_brace", "gm_json")


def _records(spark: SparkSession, files: list[LogFile]) -> DataFrame:
    """Every record as ``RECORD`` and ``v``, the parsed object (NULL when it is not one);
    ``pos`` orders the records of a file as they come (the first of a repeated id wins)."""
    from pyspark.sql import functions as F

    frames = []
    lines = [f.path for f in files if f.format == "jsonl"]
    if lines:
        text = spark.read.text(lines).where(F.trim("value") != "")
        parsed = F.try_parse_json("value")
        frames.append(text.select(F.col("value").alias("raw"), parsed, parsed.isNotNull()))
    for rows in _tables(spark, files):
        if "gm_element" in rows.columns:  # an array's elements, objects or not
            element = F.col("gm_element")
            frames.append(rows.select(F.to_json(element), element, F.lit(True)))
            continue
        record = F.struct(*[F.col(f"`{c}`") for c in rows.columns])
        variant = F.to_variant_object(record)
        frames.append(rows.select(F.to_json(record), variant, F.lit(True)))
    out = frames[0].toDF("raw", "v", "gm_json")
    for other in frames[1:]:
        out = out.unionByName(other.toDF("raw", "v", "gm_json"))
    is_object = F.schema_of_variant("v").startswith("OBJECT")
    return out.select(
        F.input_file_name().alias("file"),
        F.monotonically_increasing_id().alias("pos"),
        "raw",
        F.when(is_object, F.col("v")).alias("v"),
        (~is_object | F.col("v").isNull()).alias("gm_bad"),
        F.ltrim(F.col("raw")).startswith("{").alias("gm_brace"),
        "gm_json",
    )


def _sample_keys(spark: SparkSession, files: list[LogFile], sample: int = 20000) -> list[str]:
    """Field names of the logs: the JSONL files' first records (as the DuckDB stage samples
    them) and the Parquet files' columns."""
    from pyspark.sql import functions as F

    keys: dict[str, None] = {}
    lines = [f.path for f in files if f.format == "jsonl"]
    if lines:
        first = spark.read.text(lines).limit(sample)
        names = first.select(F.explode(F.json_object_keys("value")).alias("k")).distinct()
        keys.update((r["k"], None) for r in names.collect())
    for rows in _tables(spark, files):
        if "gm_element" in rows.columns:
            first = rows.limit(sample).select(F.to_json("gm_element").alias("value"))
            names = first.select(F.explode(F.json_object_keys("value")).alias("k")).distinct()
            keys.update((r["k"], None) for r in names.collect())
        else:
            keys.update((c, None) for c in rows.columns)
    return list(keys)


def _tables(spark: SparkSession, files: list[LogFile]) -> list[DataFrame]:
    """The files read as rows of columns: Parquet, CSV (each file with its own header), JSON
    array documents (their objects' keys as VARIANT columns, or ``gm_element`` per element)."""
    out = []
    parquet = [f.path for f in files if f.format == "parquet"]
    if parquet:
        out.append(spark.read.parquet(*parquet))
    for f in files:
        if f.format == "csv":
            out.append(_csv(spark, f.path))
        elif f.format == "json":
            out.append(_json_array(spark, f))
    return out


_DELIMITERS = (",", "\t", ";", "|")


def _csv(spark: SparkSession, path: str) -> DataFrame:
    """A CSV file as the DuckDB stage reads it (``read_csv(header, all_varchar)``): every value
    text, an empty one NULL, a quote doubled inside quotes; the delimiter the header line has
    most of (comma, tab, semicolon, pipe)."""
    header = spark.read.text(path).first()
    line = header["value"] if header else ""
    sep = max(_DELIMITERS, key=line.count) if any(d in line for d in _DELIMITERS) else ","
    return spark.read.csv(path, header=True, sep=sep, quote='"', escape='"', inferSchema=False)


_ARRAYS: dict[tuple[str, int, int], list[str] | None] = {}


def _json_array(spark: SparkSession, f: LogFile) -> DataFrame:
    """A JSON document that is an array of records. Its objects are read as rows, one VARIANT
    column per key, streamed by Spark's JSON reader; an array with anything else in it (a
    number, a list, null) is read whole and cut into ``gm_element``s, so that those become
    rejects as in the DuckDB stage."""
    from pyspark.sql import functions as F

    if f.key() not in _ARRAYS:  # the keys of a file, found once (a pass over it)
        columns = spark.read.option("multiLine", True).json(f.path).columns
        _ARRAYS[f.key()] = None if "_corrupt_record" in columns else columns
    columns = _ARRAYS[f.key()]
    if columns:
        schema = ", ".join(f"`{c.replace('`', '``')}` VARIANT" for c in columns)
        return spark.read.option("multiLine", True).schema(schema).json(f.path)
    whole = spark.read.option("multiLine", True).option("singleVariantColumn", "v").json(f.path)
    elements = F.try_variant_get("v", "$", "array<variant>")
    if not whole.where(elements.isNull()).isEmpty():
        raise InputError("cannot read as a JSON array: malformed JSON", path=f.path)
    return whole.select(F.explode(elements).alias("gm_element"))


def _path(key: str) -> str:
    """A variant path for one top-level key (a literal handed to Spark, never SQL text)."""
    return '$["' + key.replace("\\", "\\\\").replace('"', '\\"') + '"]'


def _field(v: Column, keys: list[str]) -> Column:
    """The first alias whose value is not null (JSON null counts as absent), as a VARIANT."""
    from pyspark.sql import functions as F

    values = []
    for key in keys:
        got = F.try_variant_get(v, _path(key), "variant")
        values.append(F.when(~F.is_variant_null(got), got))
    return F.coalesce(*values) if len(values) > 1 else values[0]


def _null() -> Column:
    from pyspark.sql import functions as F

    return F.lit(None).cast("variant")


def _text(value: Column) -> Column:
    """A field's text: a string as it is, anything else as JSON."""
    from pyspark.sql import functions as F

    return F.try_variant_get(value, "$", "string")


def _kind(value: Column) -> Column:
    """The JSON type in the DuckDB stage's words: VARCHAR, ARRAY, OBJECT, BOOLEAN, NUMBER, NULL."""
    from pyspark.sql import functions as F

    schema = F.schema_of_variant(value)
    return (
        F.when(value.isNull(), F.lit("NULL"))
        .when(schema == "STRING", F.lit("VARCHAR"))
        .when(schema.startswith("ARRAY"), F.lit("ARRAY"))
        .when(schema.startswith("OBJECT"), F.lit("OBJECT"))
        .when(schema == "BOOLEAN", F.lit("BOOLEAN"))
        .otherwise(F.lit("NUMBER"))
    )


def _jtype(kind: Column) -> Column:
    """As ``gm_jtype`` words it in a reason."""
    from pyspark.sql import functions as F

    return (
        F.when(kind == "NUMBER", F.lit("a number"))
        .when(kind == "BOOLEAN", F.lit("a boolean"))
        .when(kind == "OBJECT", F.lit("an object"))
        .when(kind == "ARRAY", F.lit("a list"))
        .otherwise(F.lower(kind))
    )


_ISO_PLAIN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,9})?)?)?$"


def _timestamp(s: Column) -> Column:
    """``gm_ts`` (ingest/batch.py) in Spark: a plain ISO date-time as it is; else one with an
    offset or zone, converted to UTC; epoch seconds (9-10 digits, with a fraction) or
    milliseconds (12-13 digits); Twitter's "Wed Oct 11 06:55:44 +0000 2017". UTC wall time."""
    from pyspark.sql import functions as F

    t = F.trim(s)
    epoch = (
        F.when(
            t.rlike(r"^[0-9]{9,10}(\.[0-9]+)?$"),
            F.timestamp_micros(F.round(t.cast("double") * 1_000_000).cast("bigint")),
        )
        .when(t.rlike("^[0-9]{12,13}$"), F.timestamp_millis(t.cast("bigint")))
        .cast("timestamp_ntz")
    )
    zoned = F.try_to_timestamp(s.substr(5, 1000), F.lit("MMM dd HH:mm:ss Z yyyy"))
    any_form = F.coalesce(
        s.try_cast("timestamp").cast("timestamp_ntz"),
        epoch,
        F.when(s.rlike(r"^[A-Z][a-z]{2} "), zoned.cast("timestamp_ntz")),
    )
    plain = s.try_cast("timestamp_ntz")
    return F.when(s.rlike(_ISO_PLAIN), plain).otherwise(any_form)


def _ids_length(value: Column, kind: Column) -> Column:
    """How many ids a result or click list holds: a JSON list's length, or the items of an
    "a,b|c" string (``gm_ids``), a string that is a JSON list counted as one."""
    from pyspark.sql import functions as F

    text = _text(value)
    as_list = F.try_parse_json(text)
    listed = F.when(
        (text.startswith("[")) & F.schema_of_variant(as_list).startswith("ARRAY"),
        F.size(F.try_variant_get(as_list, "$", "array<variant>")),
    )
    split = F.size(F.filter(F.split(F.trim(text), r"\s*[,;|]\s*"), lambda e: e != ""))
    return (
        F.when(kind == "ARRAY", F.size(F.try_variant_get(value, "$", "array<variant>")))
        .when(kind == "VARCHAR", F.coalesce(listed, split))
        .otherwise(F.lit(None).cast("int"))
    )


def _reason(*checks: tuple[Column, Column]) -> Column:
    """The first failing check's reason (NULL for a good row), after the record's own: not
    JSON, or not an object. Reads ``gm_bad`` (no object), ``gm_brace``, ``gm_json``."""
    from pyspark.sql import functions as F

    chain = F.when(
        F.col("gm_bad") & ~F.col("gm_brace") & F.col("gm_json"), F.lit("not a JSON object")
    ).when(F.col("gm_bad"), F.lit("malformed JSON"))
    for failed, why in checks:
        chain = chain.when(failed, why)
    return chain


def _query_checks(name: str) -> list[tuple[Column, Column]]:
    """The query's text is there and is a string; the time, if any, can be read. Reads
    ``gm_query``, ``gm_k_query`` (its JSON type), ``gm_ts`` (the time's text) and ``ts``."""
    from pyspark.sql import functions as F

    return [
        (F.col("gm_query").isNull() | (F.trim("gm_query") == ""), F.lit("missing query")),
        (
            F.col("gm_k_query") != "VARCHAR",
            F.concat(F.lit(f"wrong type: {name} is "), _jtype(F.col("gm_k_query"))),
        ),
        (
            F.col("gm_ts").isNotNull() & F.col("ts").isNull(),
            F.concat(F.lit("unparseable timestamp: "), F.left(F.col("gm_ts"), F.lit(60))),
        ),
    ]


def searchlog_events(
    records: DataFrame,
    keys: list[str],
    mapping: dict[str, str],
    source: str,
    redactor: Redactor | None = None,
) -> DataFrame:
    """Each record with ``reason`` (NULL for a good row, else the DuckDB stage's words) and, for
    a good row, what the signals read: ``event_key, ts, session_id, query, shown, clicks, fb``.
    ``keys``: the logs' field names, mapped to the canonical fields as the DuckDB stage maps
    them (aliases, ``--map``)."""
    from pyspark.sql import functions as F

    fields = resolve_fields(keys, ALIASES, mapping)
    if "query" not in fields:
        raise InputError(
            f"no query field (looked for {', '.join(ALIASES['query'])}; "
            f"found {', '.join(keys[:12])}); name it with --map query=COLUMN"
        )
    v = F.col("v")
    f = {name: _field(v, fields[name]) if name in fields else _null() for name in ALIASES}
    text = {name: _text(value) for name, value in f.items()}
    kind = {name: _kind(f[name]) for name in ("query", "result_ids", "clicked_ids")}
    num = text["num_results"]
    count = F.round(F.col("gm_n").try_cast("double")).try_cast("int")
    staged = records.select(
        *RECORD,
        *[text[n].alias(f"gm_{n}") for n in ALIASES],
        *[kind[n].alias(f"gm_k_{n}") for n in kind],
        _ids_length(f["result_ids"], kind["result_ids"]).alias("gm_n_results"),
        _ids_length(f["clicked_ids"], kind["clicked_ids"]).alias("gm_n_clicks"),
        num.alias("gm_n"),
    )
    staged = staged.withColumn("gm_count", count).withColumn("ts", _timestamp(F.col("gm_ts")))
    reason = _reason(
        *_query_checks("query"),
        (
            ~F.col("gm_k_result_ids").isin("ARRAY", "VARCHAR", "NULL"),
            F.concat(F.lit("wrong type: result_ids is "), _jtype(F.col("gm_k_result_ids"))),
        ),
        (
            ~F.col("gm_k_clicked_ids").isin("ARRAY", "VARCHAR", "NULL"),
            F.concat(F.lit("wrong type: clicked_ids is "), _jtype(F.col("gm_k_clicked_ids"))),
        ),
        (
            F.col("gm_n").isNotNull() & F.col("gm_n").try_cast("double").isNull(),
            F.concat(
                F.lit("wrong type: num_results is not a number: "),
                F.left(F.col("gm_n"), F.lit(40)),
            ),
        ),
        (
            F.col("gm_n").isNotNull() & F.col("gm_count").isNull(),
            F.concat(
                F.lit("wrong type: num_results is out of range: "),
                F.left(F.col("gm_n"), F.lit(40)),
            ),
        ),
    )
    # A log without ids gets the DuckDB stage's content key, so the same search is one event.
    content = F.concat_ws(
        "\x1f",
        *[
            F.coalesce(F.col(f"gm_{n}"), F.lit(""))
            for n in ("ts", "session_id", "user_id", "query", "result_ids", "clicked_ids")
        ],
    )
    key = F.coalesce(F.col("gm_event_id"), F.concat(F.lit("h-"), F.md5(content)))
    return staged.select(
        "file",
        "pos",
        "raw",
        reason.alias("reason"),
        F.lit(source).alias("source"),
        key.alias("event_key"),
        "ts",
        F.col("gm_session_id").alias("session_id"),
        redact(F.trim("gm_query"), redactor or Redactor(enabled=False)).alias("query"),
        F.coalesce("gm_count", "gm_n_results").alias("shown"),
        F.coalesce("gm_n_clicks", F.lit(0)).alias("clicks"),
        F.lower(F.trim("gm_feedback")).alias("fb"),
    )


# --- PII redaction: ingest/redact.py's patterns and checks, in Spark ----------------------------

# RE2's \b (DuckDB) is an ASCII word boundary; Java's (Spark) also counts other letters as word
# characters. Spelled out with ASCII \w, a pattern matches the same text in both engines.
_ASCII_BOUNDARY = r"(?:(?<=\w)(?!\w)|(?<!\w)(?=\w))"


def java_regex(pattern: str) -> str:
    """An RE2 pattern (redact.py's, or a user's) as Java reads it the same: ``\b`` spelled out,
    a named group ``(?P<name>…)`` as Java names it."""
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "\\" and i + 1 < len(pattern):
            pair = pattern[i : i + 2]
            out.append(_ASCII_BOUNDARY if pair == r"\b" else pair)
            i += 2
        elif pattern.startswith("(?P<", i):
            out.append("(?<")
            i += 4
        else:
            out.append(pattern[i])
            i += 1
    return "".join(out)


def redact(col: Column, redactor: Redactor) -> Column:
    """``Redactor.steps`` in Spark: the built-in types by the same Python (``pii.redact``, a
    pandas UDF; texts without a candidate return at once), then the user's patterns."""
    from pyspark.sql import functions as F

    if not redactor.enabled:
        return col
    regions, handles = redactor.regions, redactor.handles

    @F.pandas_udf("string")
    def builtin(texts):
        from goldmine.ingest import pii

        return texts.map(lambda t: pii.redact(t, regions, handles) if isinstance(t, str) else t)

    out = builtin(col)
    for pattern, placeholder in redactor.user_steps():
        out = F.regexp_replace(out, F.lit(java_regex(pattern)), F.lit(placeholder))
    return out


# --- the per-event work: the shared rules, translated -------------------------------------------


def _sql(spark: SparkSession, duckdb_sql: str, **args: Any) -> DataFrame:
    """Run a rule written in DuckDB SQL (goldmine.signals) on Spark."""
    return spark.sql(signals.to_spark(duckdb_sql), args=args or None)


def summarize(spark: SparkSession, events: DataFrame, window_s: int) -> DataFrame:
    """The good events of ``events`` (deduplicated by key) rolled up per source, day and
    normalized query by the rules triage runs in DuckDB."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    first = Window.partitionBy("event_key").orderBy("file", "pos")
    good = (
        events.where(F.col("reason").isNull())
        .withColumn("gm_rank", F.row_number().over(first))
        .where(F.col("gm_rank") == 1)
        # a file is one import batch in the DuckDB engine: does it record clicks at all?
        .withColumn("tracks_clicks", F.max(F.col("clicks") > 0).over(Window.partitionBy("file")))
    )
    good.createOrReplaceTempView("gm_good")
    ascii_norm = _sql(spark, f"SELECT *, {norm_sql('query')} AS gm_norm FROM gm_good")
    # Non-ASCII text: normalize_query itself (NFKC, case folding), once per distinct text.
    other = (
        ascii_norm.where(F.col("gm_norm").isNull())
        .select("query")
        .distinct()
        .withColumn("gm_norm2", F.call_function("gm_normalize_query", F.col("query")))
    )
    normed = (
        ascii_norm.join(F.broadcast(other), "query", "left")
        .withColumn("norm_query", F.coalesce("gm_norm", "gm_norm2"))
        .where(F.col("norm_query") != "")
    )
    normed.createOrReplaceTempView("gm_normed")
    flags = ", ".join(f"{sql} AS {name}" for name, sql in signals.search_signals().items())
    flagged = _sql(spark, f"SELECT *, {flags}, {signals.SEQ} AS seq FROM gm_normed")
    flagged.createOrReplaceTempView("gm_flagged")
    session = _sql(spark, signals.session_sql("gm_flagged"), window=int(window_s))
    joined = flagged.join(session, ["source", "event_key"], "left").select(
        flagged["*"],
        F.coalesce("is_reformulated", F.lit(False)).alias("is_reformulated"),
        F.coalesce("is_follow_up", F.lit(False)).alias("is_follow_up"),
        F.lit(False).alias("is_ticket"),
        F.lit(False).alias("is_chat_fail"),
    )
    joined.createOrReplaceTempView("gm_signals")
    failed = _sql(spark, f"SELECT *, {signals.FAILED} AS is_failed FROM gm_signals")
    failed.createOrReplaceTempView("gm_events")
    return _sql(spark, signals.query_day_sql("gm_events"))


@dataclass
class SparkRun:
    """What Spark found and wrote: the accounting, a reject example per reason, the summary."""

    rows_in: int
    rejected: int
    stored: int
    reasons: list[dict[str, Any]]
    summary_dir: str
    summary_rows: int


def run(spark: SparkSession, events: DataFrame, options: Options, out: str) -> SparkRun:
    """Count, summarize and write the summary as Parquet under ``out``."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    # Kept for the two passes (the accounting, the summary); a good row's text is not needed.
    raw = redact(F.col("raw"), options.redactor)
    slim = events.withColumn("raw", F.when(F.col("reason").isNotNull(), raw))
    slim = slim.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        groups = by_reason(slim)
        rows_in = sum(g["n"] for g in groups)
        reasons = _examples(groups)
        rejected = sum(r["n"] for r in reasons)
        stored = slim.where(F.col("reason").isNull()).select("event_key").distinct().count()
        summary = summarize(spark, slim, options.window_s)
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


def default_summary_dir(db: Path, source: str) -> str:
    """Beside the store: goldmine-summaries/<source>-<UTC time>."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
    return str(db.resolve().parent / "goldmine-summaries" / f"{source}-{stamp}")


def write_batch(
    con: duckdb.DuckDBPyConnection,
    source: str,
    label: str,
    files: list[LogFile],
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


def import_logs(
    db: Path,
    paths: list[str],
    source: str,
    events_of: Callable[[SparkSession, list[LogFile]], DataFrame],
    options: Options,
    recorded: dict[str, Any],
    fmt: str | None = None,
    pair: bool = False,
    aside_of: Callable[[SparkSession, list[LogFile]], Aside] | None = None,
) -> ImportResult:
    """List the files, leave out those an earlier run read, summarize the rest on Spark with
    the store closed, then write one batch. ``events_of`` parses the new files; with ``pair``
    (UBI's queries and events) the files are read together or not at all; ``aside_of`` counts
    what the batch reads beside its rows."""

    spark = session(options.master, options.conf)
    files = list_files(spark, paths, fmt)
    with open_store(db) as con:
        known = known_files(con, source)
    new = [f for f in files if f.key() not in known]
    if pair and new:
        new = files
    label = ", ".join(paths)
    if not new:
        batches = ", ".join(str(b) for b in sorted({known[f.key()] for f in files}))
        note = f"already imported: all {len(files)} files (batch {batches})"
        return ImportResult([FileResult(label, source, "spark", None, skipped=True, note=note)])
    out = options.summary_dir or default_summary_dir(db, source)
    if options.summary_dir is None and not spark.sparkContext.master.startswith("local"):
        raise InputError(
            "--summary-dir is needed with a cluster master: a path the executors and this "
            "machine both reach (hdfs://…, s3a://…)"
        )
    done = run(spark, events_of(spark, new), options, out)
    aside = aside_of(spark, new) if aside_of else None
    recorded = {
        **recorded,
        "master": spark.sparkContext.master,
        "window_s": options.window_s,
        "redact": options.redactor.enabled,
    }
    with open_store(db) as con:
        result = write_batch(con, source, label, new, done, recorded, aside)
    if len(new) < len(files):
        result.note = f"{len(files) - len(new)} of {len(files)} files already imported"
    return ImportResult([result])


def searchlog(
    db: Path,
    paths: list[str],
    mapping: list[str] | dict[str, str] | None,
    options: Options,
    fmt: str | None = None,
) -> ImportResult:
    """``ingest searchlog --engine spark``: the search logs' summary as one batch."""
    if fmt is not None and fmt not in _FORMATS:
        raise InputError(f"--engine spark reads --format {', '.join(_FORMATS)}, not {fmt!r}")
    fields = mapping if isinstance(mapping, dict) else parse_map(mapping)
    resolve_fields([], ALIASES, fields)  # a wrong --map name fails before Spark starts

    def events_of(spark: SparkSession, files: list[LogFile]) -> DataFrame:
        keys = _sample_keys(spark, files)
        records = _records(spark, files)
        return searchlog_events(records, keys, fields, "searchlog", options.redactor)

    recorded = {"map": fields, "format": fmt}
    return import_logs(db, [str(p) for p in paths], "searchlog", events_of, options, recorded, fmt)


def _at(v: Column, *paths: str) -> Column:
    """The first of these variant paths (constants) with a value that is not null."""
    from pyspark.sql import functions as F

    values = []
    for path in paths:
        got = F.try_variant_get(v, path, "variant")
        values.append(F.when(~F.is_variant_null(got), got))
    return F.coalesce(*values) if len(values) > 1 else values[0]


def _quoted(path: str) -> str:
    """A DuckDB JSON path's quoted key (``$."a.b"``) in Spark's spelling (``$["a.b"]``)."""
    return f"$[{path[2:]}]" if path.startswith('$."') else path


def ubi_event_rows(events: DataFrame) -> DataFrame:
    """UBI's click events, each with its ``reason`` (malformed JSON, not an object) and what
    the join reads, as ``ingest/ubi.py`` reads them."""
    from pyspark.sql import functions as F

    from goldmine.ingest.ubi import _OBJECT_ID

    v = F.col("v")
    return events.select(
        "file",
        "raw",
        _reason().alias("reason"),
        _text(_at(v, "$.query_id")).alias("query_id"),
        F.lower(_text(_at(v, "$.action_name"))).alias("action"),
        _timestamp(_text(_at(v, "$.timestamp"))).alias("ts"),
        _text(_at(v, "$.session_id")).alias("session_id"),
        _text(_at(v, *[_quoted(p) for p in _OBJECT_ID])).alias("object_id"),
    )


def ubi_events_aside(events: DataFrame, redactor: Redactor) -> Aside:
    """The events file's own accounting, as ``ingest/ubi.py`` keeps it: how many, how many
    rejected (``ubi_events: <reason>``, one example each), how many name an object."""
    from pyspark.sql import functions as F

    rows = ubi_event_rows(events).withColumn("raw", redact(F.col("raw"), redactor))
    groups = by_reason(rows, F.count("object_id").alias("objects"))
    reasons = _examples(groups, "ubi_events: ")
    extra = {
        "events_in": sum(g["n"] for g in groups),
        "events_rejected": sum(r["n"] for r in reasons),
        "events_with_object": sum(g["objects"] for g in groups),
        "events_reject_reasons": {r["reason"]: r["n"] for r in reasons},
    }
    return Aside(extra, reasons)


def ubi_events(
    queries: DataFrame,
    events: DataFrame,
    click_actions: list[str],
    redactor: Redactor | None = None,
) -> DataFrame:
    """UBI queries joined to their click events by query_id, checked as ``ingest/ubi.py``
    checks them: what ``summarize`` reads, one row per query."""
    from pyspark.sql import functions as F

    ev = ubi_event_rows(events).where(F.col("reason").isNull())
    click = (
        F.col("action").isin([a.lower() for a in click_actions]) & F.col("object_id").isNotNull()
    )
    clicks = (
        ev.where(F.col("query_id").isNotNull())
        .groupBy("query_id")
        .agg(
            F.count_distinct(F.when(click, F.col("object_id"))).alias("clicks"),
            F.min_by("session_id", F.when(F.col("session_id").isNotNull(), F.col("ts"))).alias(
                "click_session"
            ),
        )
    )
    v = F.col("v")
    q = queries.select(
        *RECORD,
        _text(_at(v, "$.query_id")).alias("query_id"),
        _text(_at(v, "$.user_query")).alias("gm_query"),
        _kind(_at(v, "$.user_query")).alias("gm_k_query"),
        _text(_at(v, "$.timestamp")).alias("gm_ts"),
        _text(_at(v, "$.query_attributes.session_id")).alias("gm_session"),
        _ids_length(
            _at(v, "$.query_response_hit_ids"), _kind(_at(v, "$.query_response_hit_ids"))
        ).alias("shown"),
    ).withColumn("ts", _timestamp(F.col("gm_ts")))
    reason = _reason(
        (F.col("query_id").isNull(), F.lit("missing query_id")), *_query_checks("user_query")
    )
    joined = q.join(clicks, "query_id", "left")
    return joined.select(
        "file",
        "pos",
        "raw",
        reason.alias("reason"),
        F.lit("ubi").alias("source"),
        F.col("query_id").alias("event_key"),
        "ts",
        F.coalesce("click_session", "gm_session").alias("session_id"),
        redact(F.trim("gm_query"), redactor or Redactor(enabled=False)).alias("query"),
        "shown",
        F.coalesce("clicks", F.lit(0)).alias("clicks"),
        F.lit(None).cast("string").alias("fb"),
    )


def ubi(
    db: Path, queries: str, events: str, click_actions: list[str], options: Options
) -> ImportResult:
    """``ingest ubi --engine spark``: UBI queries and their click events, summarized as one
    batch. A re-run reads the pair again only if either file changed."""

    def listed(spark: SparkSession, files: list[LogFile], path: str) -> DataFrame:
        by_path = {f.path: f for f in files}
        return _records(spark, [by_path[p] for p in _listed(spark, path)])

    def events_of(spark: SparkSession, files: list[LogFile]) -> DataFrame:
        q, e = listed(spark, files, queries), listed(spark, files, events)
        return ubi_events(q, e, click_actions, options.redactor)

    def aside_of(spark: SparkSession, files: list[LogFile]) -> Aside:
        return ubi_events_aside(listed(spark, files, events), options.redactor)

    recorded = {"events": events, "click_actions": click_actions}
    return import_logs(
        db, [queries, events], "ubi", events_of, options, recorded, pair=True, aside_of=aside_of
    )


def _listed(spark: SparkSession, path: str) -> list[str]:
    return [f.path for f in list_files(spark, [path])]
