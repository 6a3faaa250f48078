"""Spark's side of reading: the session, the files a run reads, and each record as one row.

A log is read where it lives (local, hdfs://, s3a://…): the files are listed with their size and
time (what a re-run compares), and every line or row becomes a record with its file, position and
text, parsed into a VARIANT (``v``). Nothing here knows a log's fields; ``translate`` reads them.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from goldmine import signals
from goldmine.errors import InputError
from goldmine.ingest.redact import Redactor

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


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

FORMATS = ("jsonl", "json", "csv", "parquet")


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


def records(spark: SparkSession, files: list[LogFile]) -> DataFrame:
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


def sample_keys(spark: SparkSession, files: list[LogFile], sample: int = 20000) -> list[str]:
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


def listed(spark: SparkSession, path: str) -> list[str]:
    return [f.path for f in list_files(spark, [path])]
