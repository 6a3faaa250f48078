"""From records to events on Spark, by the rules DuckDB runs.

The fields are found under the searchlog aliases and checked in the same order, with the same
reasons, as the DuckDB stage (``ingest/searchlog.py``, ``ingest/ubi.py``); timestamps take the
same forms (:func:`timestamp`, checked against ``gm_ts`` by ``tests/test_spark.py``); redaction
is the Redactor's steps as Java regexes; the roll-up per source, day and normalized query is
:mod:`goldmine.signals`'s SQL translated by sqlglot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from goldmine import signals
from goldmine.errors import InputError
from goldmine.ingest.batch import NUMBERED
from goldmine.ingest.fields import NestedKey, resolve_fields
from goldmine.ingest.logformats import BLANK, NO_QUERY
from goldmine.ingest.redact import Redactor
from goldmine.ingest.searchlog import (
    ALIASES,
    DSL_QUERY,
    may_count_results,
    no_query,
    session_owner,
)
from goldmine.ingest.spark import read
from goldmine.text import norm_sql

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession


def _path(key: str) -> str:
    """A variant path for one top-level key, or a nested one's keys (a literal handed to Spark,
    never SQL text)."""
    keys = (key.head, *key.below) if isinstance(key, NestedKey) else (key,)
    return "$" + "".join('["' + k.replace("\\", "\\\\").replace('"', '\\"') + '"]' for k in keys)


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


# ``batch.TEXT_TIMES`` and ``batch.ZONED_TIMES`` in Spark's patterns, in the same order.
TEXT_TIMES = (
    "MMM d, yyyy h:mm:ss a", "MMMM d, yyyy h:mm:ss a", "MMM d, yyyy H:mm:ss",
    "MMM d, yyyy '@' H:mm:ss.SSS", "MMM d, yyyy '@' H:mm:ss", "d MMM yyyy H:mm:ss",
    "d MMMM yyyy H:mm:ss",
    "yyyy-MM-dd H:mm:ss.SSS Z", "yyyy-MM-dd H:mm:ss.SSSSSS Z", "yyyy-MM-dd H:mm:ss Z",
)  # fmt: skip


def timestamp(s: Column) -> Column:
    """``gm_ts`` (ingest/batch.py) in Spark: a plain ISO date-time as it is; else one with an
    offset or zone, converted to UTC; epoch seconds (9-10 digits, with a fraction),
    milliseconds (12-13 digits), microseconds (15-16) or nanoseconds (18-19); Twitter's "Wed Oct
    11 06:55:44 +0000 2017"; the layouts of ``TEXT_TIMES``. UTC wall time."""
    from pyspark.sql import functions as F

    t = F.trim(s)
    epoch = (
        F.when(
            t.rlike(r"^[0-9]{9,10}(\.[0-9]+)?$"),
            F.timestamp_micros(F.round(t.cast("double") * 1_000_000).cast("bigint")),
        )
        .when(t.rlike("^[0-9]{12,13}$"), F.timestamp_millis(t.cast("bigint")))
        .when(t.rlike("^[0-9]{15,16}$"), F.timestamp_micros(t.cast("bigint")))
        .when(
            t.rlike("^[0-9]{18,19}$"),
            F.timestamp_micros((t.cast("decimal(20,0)") / 1000).cast("bigint")),
        )
        .cast("timestamp_ntz")
    )
    zoned = F.try_to_timestamp(s.substr(5, 1000), F.lit("MMM dd HH:mm:ss Z yyyy"))
    texts = F.coalesce(*[F.try_to_timestamp(t, F.lit(p)) for p in TEXT_TIMES])
    any_form = F.coalesce(
        s.try_cast("timestamp").cast("timestamp_ntz"),
        epoch,
        F.when(s.rlike(r"^[A-Z][a-z]{2} "), zoned.cast("timestamp_ntz")),
        F.when(
            t.rlike(r"^[A-Za-z]{3}|^[0-9]{1,2} [A-Za-z]{3}|[0-9] [+-][0-9]{4}$"),
            texts.cast("timestamp_ntz"),
        ),
    )
    plain = s.try_cast("timestamp_ntz")
    return F.when(s.rlike(_ISO_PLAIN), plain).otherwise(any_form)


def _response_list(value: Column) -> Column:
    """The list of results in a search service's response stored whole: the first of
    ``batch.RESULT_LIST_PATHS`` that is an array (``gm_result_list``), else null."""
    from pyspark.sql import functions as F

    from goldmine.ingest.batch import RESULT_LIST_PATHS

    return F.coalesce(*[F.try_variant_get(value, p, "array<variant>") for p in RESULT_LIST_PATHS])


def _session(v: Column, fields: dict[str, list[str]]) -> Column:
    """A search's session id: GA4's prefixed with its user's (searchlog.session_owner)."""
    from pyspark.sql import functions as F

    session = _unset(_text(_field(v, fields["session_id"]))) if "session_id" in fields else None
    if session is None:
        return F.lit(None).cast("string")
    owner = session_owner(fields)
    if not owner:
        return session
    user = _unset(_text(_field(v, owner)))
    return F.when(user.isNotNull(), F.concat(user, F.lit(":"), session)).otherwise(session)


def _unset(value: Column) -> Column:
    """``value``, NULL where an export wrote that it holds nothing (``batch.UNSET``: Kibana's
    "-"), as ``gm_unset`` reads it."""
    from pyspark.sql import functions as F

    from goldmine.ingest.batch import UNSET

    return F.when(F.lower(F.trim(value)).isin(*UNSET), F.lit(None)).otherwise(value)


def _ids_length(value: Column, kind: Column) -> Column:
    """How many ids a result or click list holds: a JSON list's length, or the items of an
    "a,b|c" string (``gm_ids``), a string that is a JSON list counted as one, or a response's
    list of results."""
    from pyspark.sql import functions as F

    text = _text(value)
    as_list = F.try_parse_json(text)
    listed = F.when(
        (text.startswith("[")) & F.schema_of_variant(as_list).startswith("ARRAY"),
        F.size(F.try_variant_get(as_list, "$", "array<variant>")),
    )
    split = F.when(
        _unset(text).isNotNull(),
        F.size(
            F.filter(
                F.split(F.trim(text), r"\s*[,;|]\s*"), lambda e: (e != "") & _unset(e).isNotNull()
            )
        ),
    )
    response = _response_list(value)
    return (
        F.when(kind == "ARRAY", F.size(F.try_variant_get(value, "$", "array<variant>")))
        .when(kind == "VARCHAR", F.coalesce(listed, split))
        .when((kind == "OBJECT") & response.isNotNull(), F.size(response))
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
        # As the DuckDB engine's gm_no_query: white space alone, or an export's placeholder.
        (
            F.col("gm_query").isNull()
            | F.col("gm_query").rlike(f"^{BLANK}$")
            | F.trim("gm_query").isin(*NO_QUERY),
            F.lit("missing query"),
        ),
        (
            F.col("gm_k_query") != "VARCHAR",
            F.concat(F.lit(f"wrong type: {name} is "), _jtype(F.col("gm_k_query"))),
        ),
        (
            F.col("gm_ts").isNotNull() & F.col("ts").isNull(),
            F.concat(F.lit("unparseable timestamp: "), F.left(F.col("gm_ts"), F.lit(60))),
        ),
        (
            F.col("ts").isNotNull() & ~F.col("ts").between(*signals.TIME_RANGE),
            F.concat(F.lit("timestamp out of range: "), F.left(F.col("gm_ts"), F.lit(60))),
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
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    fields = resolve_fields(keys, ALIASES, mapping, strict=True)
    if "query" not in fields:
        raise InputError(no_query(keys))
    v = F.col("v")
    f = {name: _field(v, fields[name]) if name in fields else _null() for name in ALIASES}
    text = {name: _text(value) for name, value in f.items()}
    kind = {name: _kind(f[name]) for name in ("query", "result_ids", "clicked_ids")}
    num = text["num_results"]
    # A results column of counts (searchlog._counted_results): the count, no ids.
    counted = F.lit(False)
    if may_count_results(fields):
        number = (kind["result_ids"] == "NUMBER") | F.trim(text["result_ids"]).rlike("^[0-9]+$")
        in_file = Window.partitionBy("file")  # every value of the file's column a count
        counted = F.coalesce(
            F.bool_and(F.when(text["result_ids"].isNotNull(), number)).over(in_file),
            F.lit(False),
        )
        num = F.when(counted, text["result_ids"])
    # Half to even, as DuckDB casts a DOUBLE to INTEGER (searchlog.stage_sql): round() went half
    # up, so -0.5 was a reject and 0.5 a search with results here, not there.
    count = F.bround(F.col("gm_n").try_cast("double")).try_cast("int")
    staged = records.select(
        *read.RECORD,
        *[text[n].alias(f"gm_{n}") for n in ALIASES],
        *[kind[n].alias(f"gm_k_{n}") for n in kind],
        F.when(~counted, _ids_length(f["result_ids"], kind["result_ids"])).alias("gm_n_results"),
        counted.alias("gm_counted"),
        _ids_length(f["clicked_ids"], kind["clicked_ids"]).alias("gm_n_clicks"),
        *[
            _response_list(f[n]).isNotNull().alias(f"gm_r_{n}")
            for n in ("result_ids", "clicked_ids")
        ],
        num.alias("gm_n"),
        _session(v, fields).alias("gm_session"),
    )
    staged = staged.withColumn("gm_count", count).withColumn("ts", timestamp(F.col("gm_ts")))
    reason = _reason(
        *_query_checks("query"),
        (
            F.trim("gm_query").startswith("{")
            & F.trim("gm_query").endswith("}")
            & F.try_parse_json(F.trim("gm_query")).isNotNull(),
            F.lit(DSL_QUERY),
        ),
        (
            ~F.col("gm_counted")
            & ~F.col("gm_k_result_ids").isin("ARRAY", "VARCHAR", "NULL")
            & ~((F.col("gm_k_result_ids") == "OBJECT") & F.col("gm_r_result_ids")),
            F.concat(F.lit("wrong type: result_ids is "), _jtype(F.col("gm_k_result_ids"))),
        ),
        (
            ~F.col("gm_k_clicked_ids").isin("ARRAY", "VARCHAR", "NULL")
            & ~((F.col("gm_k_clicked_ids") == "OBJECT") & F.col("gm_r_clicked_ids")),
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
            F.col("gm_n").isNotNull() & (F.col("gm_count").isNull() | (F.col("gm_count") < 0)),
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
        F.col("gm_session").alias("session_id"),
        # a search's own user, against another's under one id (stored_events)
        _unset(F.col("gm_user_id")).alias("user_id"),
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


def stored_events(events: DataFrame) -> DataFrame:
    """The good events of ``events`` as the DuckDB engine stores them: a key's rows in the first
    file that has it (a later file's are already stored); there, a key made from the content
    ('h-…') repeated is a search made again, the n-th stored as KEY~n, and a repeated event id
    keeps its first row, unless it is another search (``_apart``)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    # An id of digits alone a later file gives another time and another query, or a time over a
    # day away, is another search (a file that numbers its rows 1..N), as the DuckDB engine
    # keys it against the stored row: ID@TIME.
    key = F.col("event_key")
    earliest = Window.partitionBy("event_key").orderBy("file", "pos")
    ts0, q0 = F.first("ts").over(earliest), F.first("query").over(earliest)
    apart = F.abs(F.unix_timestamp("ts") - F.unix_timestamp(ts0))
    another = (
        key.rlike(f"^{NUMBERED}$")
        & (F.col("file") != F.first("file").over(earliest))
        & (F.col("ts") != ts0)
        & ((apart > 86400) | ~F.col("query").eqNullSafe(q0))
    )
    dated = F.concat(key, F.lit("@"), F.date_format("ts", "yyyyMMdd'T'HHmmss"))
    events = events.where(F.col("reason").isNull()).withColumn(
        "event_key", F.when(another, dated).otherwise(key)
    )
    if "user_id" not in events.columns:  # UBI's events name no user
        events = events.withColumn("user_id", F.lit(None).cast("string"))
    events = events.withColumn(
        "gm_first", F.min("file").over(Window.partitionBy("event_key"))
    ).where(F.col("file") == F.col("gm_first"))
    made = F.col("event_key").startswith("h-")
    numbered = F.concat(F.lit("~"), F.col("gm_n").cast("string"))
    again = _apart(events.where(made), numbered, F.lit(False))
    stamp = F.coalesce(
        F.date_format("ts", "yyyyMMdd'T'HHmmss"), F.concat(F.lit("n"), F.col("gm_n").cast("string"))
    )
    given = _apart(events.where(~made), F.concat(F.lit("@"), stamp))
    given = _apart(given, numbered)
    return again.unionByName(given).drop("gm_first")


def _apart(events: DataFrame, suffix: Column, like: Column | None = None) -> DataFrame:
    """A key's first row in its file kept, a later row ``like`` it (default: the same user, and
    the same time or the same query within a day) dropped, one unlike it another search keyed
    ``event_key`` + ``suffix`` (which may read ``gm_n``, the row's place under its key), as
    ``batch._apart`` keys DuckDB's."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    w = Window.partitionBy("event_key", "file").orderBy("pos")
    if like is None:
        ts0 = F.first("ts").over(w)
        near = F.coalesce(
            F.abs(F.unix_timestamp("ts") - F.unix_timestamp(ts0)) <= 86400, F.lit(True)
        )
        like = F.coalesce(
            F.col("user_id").eqNullSafe(F.first("user_id").over(w))
            & (
                F.coalesce(F.col("ts") == ts0, F.lit(False))
                | (F.col("query").eqNullSafe(F.first("query").over(w)) & near)
            ),
            F.lit(False),
        )
    marked = events.withColumn("gm_n", F.row_number().over(w)).withColumn("gm_like", like)
    return (
        marked.where((F.col("gm_n") == 1) | ~F.col("gm_like"))
        .withColumn(
            "event_key",
            F.when(F.col("gm_n") == 1, F.col("event_key")).otherwise(
                F.concat(F.col("event_key"), suffix)
            ),
        )
        .drop("gm_n", "gm_like")
    )


def summarize(spark: SparkSession, events: DataFrame, window_s: int) -> DataFrame:
    """The good events of ``events`` (``stored_events``) rolled up per source, day and
    normalized query by the rules triage runs in DuckDB."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    # a file is one import batch in the DuckDB engine: does it record clicks at all?
    good = stored_events(events).withColumn(
        "tracks_clicks", F.max(F.col("clicks") > 0).over(Window.partitionBy("file"))
    )
    good.createOrReplaceTempView("gm_good")
    if "user_id" in good.columns:  # a user's searches with no session: sessions of theirs
        sessions = _sql(spark, signals.user_sessions_sql("gm_good"))
        good = (
            good.join(sessions, ["source", "event_key"], "left")
            .withColumn("session_id", F.coalesce("session_id", "user_session"))
            .drop("user_session")
        )
        good.createOrReplaceTempView("gm_good")
    ascii_norm = _sql(spark, f"SELECT *, {norm_sql('query', '$1')} AS gm_norm FROM gm_good")
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
        timestamp(_text(_at(v, "$.timestamp"))).alias("ts"),
        _text(_at(v, "$.session_id")).alias("session_id"),
        _text(_at(v, *[_quoted(p) for p in _OBJECT_ID])).alias("object_id"),
    )


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
        *read.RECORD,
        _text(_at(v, "$.query_id")).alias("query_id"),
        _text(_at(v, "$.user_query")).alias("gm_query"),
        _kind(_at(v, "$.user_query")).alias("gm_k_query"),
        _text(_at(v, "$.timestamp")).alias("gm_ts"),
        _text(_at(v, "$.query_attributes.session_id")).alias("gm_session"),
        _ids_length(
            _at(v, "$.query_response_hit_ids"), _kind(_at(v, "$.query_response_hit_ids"))
        ).alias("shown"),
    ).withColumn("ts", timestamp(F.col("gm_ts")))
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
