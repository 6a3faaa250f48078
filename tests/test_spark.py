"""The Spark engine against the DuckDB one: the same summary row for row, the same triage.

Spark runs in local mode (local[2], no UI, two shuffle partitions), one session for the whole
test run. Without pyspark or Java these tests skip, saying why; under ``CI=true`` (``make test``
installs the ``spark`` extra, and Java is on the machine) a missing one fails instead.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from goldmine import signals
from goldmine.errors import InputError
from goldmine.ingest import api
from goldmine.store import open_store, transaction
from goldmine.text import norm_sql
from goldmine.triage.events import build_query_days, mark_session_signals, normalize_events

from helpers import generate_searchlog, trec_session_track_jsonl, unavailable, write_jsonl

pytestmark = pytest.mark.slow  # a JVM and Spark local mode: make test-all, as CI runs

COLUMNS = ", ".join(signals.SUMMARY_COLUMNS)
TEST_CONF = {"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "1g"}


@pytest.fixture(scope="session")
def spark_options():
    """The options every Spark import here uses; starts the one session of the run."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        unavailable("Spark", "pyspark is not installed (pip install 'goldmine[spark]')")
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        unavailable("Spark", "no Java (apt-get install openjdk-17-jre-headless)")
    from goldmine.ingest import spark

    spark.session("local[2]", TEST_CONF)
    return spark.Options(master="local[2]", conf=TEST_CONF)


def spark_import(db: Path, paths: list[Path], options, tmp_path: Path, fmt=None, **kwargs):
    from dataclasses import replace

    from goldmine.ingest import spark

    out = tmp_path / f"summary-{len(list(tmp_path.glob('summary-*')))}"
    with open_store(db):
        pass
    options = replace(options, summary_dir=str(out))
    return spark.searchlog(db, [str(p) for p in paths], kwargs, options, fmt)


def spark_summary(db: Path) -> list[tuple]:
    with open_store(db) as con:
        return con.execute(f"SELECT {COLUMNS} FROM search_summaries ORDER BY ALL").fetchall()


def duckdb_summary(db: Path, paths: list[Path], fmt=None) -> tuple[list[tuple], dict]:
    """The DuckDB engine: every event stored, then rolled up by the rules triage runs."""
    with open_store(db) as con:
        result = api.searchlog(con, paths, fmt)
        with transaction(con):
            normalize_events(con)
            mark_session_signals(con, signals.DEFAULT_WINDOW_S)
            build_query_days(con)
        rows = con.execute(f"SELECT {COLUMNS} FROM triage_query_days ORDER BY ALL").fetchall()
    return rows, result.total


def assert_same(spark_rows: list[tuple], duck_rows: list[tuple]) -> None:
    assert len(spark_rows) == len(duck_rows)
    for got, want in zip(spark_rows, duck_rows, strict=True):
        assert got == want


def assert_same_reasons(reasons: dict[str, int], duck: Path) -> None:
    """The same reasons, counted alike; a number a reason quotes is written as Spark read it
    ("1000000000000" where the line has "1000000000000.0"), so reasons compare by kind."""
    kinds = sorted((reason.split(": 1")[0], n) for reason, n in reasons.items())
    with open_store(duck) as con:
        want = con.execute(
            "SELECT split_part(reason, ': 1', 1) AS kind, count(*) FROM rejects GROUP BY ALL "
            "ORDER BY ALL"
        ).fetchall()
    assert kinds == want


# --- the rules that are not one SQL text: each side checked against the other ---------------


def test_the_rules_translate_to_spark_sql() -> None:
    pytest.importorskip("sqlglot")
    session = signals.to_spark(signals.session_sql("ev"))
    assert "ARRAYS_OVERLAP(" in session and "JAROWINKLER_SIMILARITY(" in session
    assert ":window" in session and "&&" not in session
    assert "IS NOT DISTINCT FROM" in signals.to_spark(signals.query_day_sql("ev"))


def test_normalization_and_similarity_agree(spark_options) -> None:
    """ASCII text: the translated SQL against DuckDB's; other text: normalize_query in both;
    Jaro-Winkler: rapidfuzz (Spark's UDF) against DuckDB's jaro_winkler_similarity."""
    import duckdb

    from goldmine.ingest import spark as gs
    from goldmine.text import normalize_query

    texts = [
        "  Refund my ORDER!! ",
        "tab\tand\x0bvertical\x1fsep",
        "under_score & dash-es",
        "Café crème",
        "ＦＵＬＬ width ①",
        "Straße İstanbul",
        "e\u0301 combining",
        "emoji 🙂 here",
        "C++ and C# vs C, notepad++",
        "1+1 #1 item#123 c++d ++ a + b",
        "",
    ]
    pairs = [("refund order", "refund ordre"), ("abc", "xyz"), ("cafe", "café"), ("", "a")]
    session = gs.session(spark_options.master, spark_options.conf)
    con = duckdb.connect()
    want = [
        con.execute(f"SELECT coalesce({norm_sql('$t')}, 'NONASCII')", {"t": t}).fetchall()
        for t in texts
    ]
    frame = session.createDataFrame([(t,) for t in texts], "t string")
    frame.createOrReplaceTempView("gm_texts")
    norm = norm_sql("t", "$1")  # Java's group in a replacement
    got = session.sql(
        signals.to_spark(f"SELECT t, coalesce({norm}, 'NONASCII') AS n FROM gm_texts")
    ).collect()
    assert [r["n"] for r in got] == [w[0][0] for w in want]
    for t, w in zip(texts, want, strict=True):
        if w[0][0] != "NONASCII":
            assert w[0][0] == normalize_query(t)
    udf = session.sql("SELECT gm_normalize_query(t) AS n FROM gm_texts").collect()
    assert [r["n"] for r in udf] == [normalize_query(t) for t in texts]
    sims = session.createDataFrame(pairs, "a string, b string")
    sims.createOrReplaceTempView("gm_pairs")
    got_sim = [
        r[0] for r in session.sql("SELECT jarowinkler_similarity(a, b) FROM gm_pairs").collect()
    ]
    want_sim = [
        con.execute("SELECT jaro_winkler_similarity(?, ?)", [a, b]).fetchall()[0][0]
        for a, b in pairs
    ]
    assert got_sim == pytest.approx(want_sim, abs=1e-12)


ODD_TIMES = [
    "2026-11-16T10:00:00",
    "2026-11-16 10:00",
    "2026-11-16",
    "2026-11-16T10:00:00.123456",
    "2026-11-16T10:00:00Z",
    "2026-11-16T10:00:00+02:00",
    "2026-11-16 23:30:00-05:00",
    "1763287200",
    "1763287200.25",
    "1763287200123",
    "Wed Oct 11 06:55:44 +0000 2017",
    "1795421150916000",
    "1795421150916000123",
    "Nov 23, 2026 8:37:51 AM",
    "November 3, 2026 10:01:02 PM",
    "Nov 23, 2026 14:37:51",
    "Nov 23, 2026 @ 03:33:17.673",
    "2026-11-23 00:10:47.133 -0800",
    "2026-11-23 00:10:47 +0530",
    "23 Nov 2026 08:37:51",
    "yesterday",
    "2026-02-30",
    "2026-13-01T00:00:00",
]


def test_timestamps_agree_with_gm_ts(spark_options, db_path) -> None:
    """Spark's reading of a time (ingest/spark/translate.py) against gm_ts (ingest/batch.py)."""
    from pyspark.sql import functions as F

    from goldmine.ingest import batch
    from goldmine.ingest import spark as gs

    with open_store(db_path) as con:
        batch.prepare(con)
        want = [con.execute("SELECT gm_ts(?)", [t]).fetchall()[0][0] for t in ODD_TIMES]
    session = gs.session(spark_options.master, spark_options.conf)
    frame = session.createDataFrame([(i, t) for i, t in enumerate(ODD_TIMES)], "i int, s string")
    got = frame.select("i", gs.timestamp(F.col("s")).alias("t")).orderBy("i").collect()
    assert [r["t"] for r in got] == want


# --- the same summary, row for row -----------------------------------------------------------


def test_trec_session_track_same_summary(shared_dataset, spark_options, tmp_path) -> None:
    xml = shared_dataset("datasets", "trec_session_track", "sessiontrack2012.xml")
    log = tmp_path / "sessions.jsonl"
    trec_session_track_jsonl(xml, log)
    duck, total = duckdb_summary(tmp_path / "duck.duckdb", [log])
    result = spark_import(tmp_path / "spark.duckdb", [log], spark_options, tmp_path)
    assert (
        result.total
        == total
        == {
            "rows_in": 199,
            "stored": 199,
            "rejected": 0,
            "already_present": 0,
        }
    )
    got = spark_summary(tmp_path / "spark.duckdb")
    assert_same(got, duck)
    # the log's failure signals are there to compare: no clicks and reformulations
    assert sum(r[-6] for r in got) > 0 and sum(r[-8] for r in got) > 0


def edge_rows() -> list[dict | str]:
    """The cases the DuckDB path handles: bad rows, odd times, aliases, lists given as text,
    Unicode, repeated ids, rows without ids, sessions across midnight and past the window."""
    rows: list[dict | str] = [
        "{bad json",
        "[1, 2]",
        '"just a string"',
        "",
        {"event_id": "m1", "ts": "2026-11-16T10:00:00"},
        {"event_id": "m2", "query": "   ", "ts": "2026-11-16T10:00:00"},
        {"event_id": "m3", "query": None},
        {"event_id": "t1", "query": 42},
        {"event_id": "t2", "query": ["a"]},
        {"event_id": "t3", "query": "bad time", "ts": "yesterday"},
        {"event_id": "t4", "query": "bad results", "results": 7},
        {"event_id": "t5", "query": "bad clicks", "clicks": {"a": 1}},
        {"event_id": "t6", "query": "bad count", "num_results": "many"},
        {"event_id": "t7", "query": "huge count", "num_results": 1e12},
    ]
    for i, ts in enumerate(ODD_TIMES):
        if ts not in ("yesterday", "2026-02-30", "2026-13-01T00:00:00"):
            rows.append({"event_id": f"ts{i}", "ts": ts, "query": f"time form {i}", "n_results": 3})
    sessions = [
        # a reformulation sharing a word, then a spelling fix, then one past the window
        ("s1", "2026-11-16T09:00:00", "refund my order", ["d1", "d2"], [], None),
        ("s1", "2026-11-16T09:00:40", "refund order status", ["d1"], ["d1"], None),
        ("s1", "2026-11-16T09:01:10", "refnud order status", [], [], "thumbs_down"),
        ("s1", "2026-11-16T09:20:00", "refund order status", "d1,d2|d3", [], "-1"),
        ("s2", "2026-11-16T23:59:30", "Café crème", [{"id": "d5"}], [], None),
        ("s2", "2026-11-17T00:00:20", "cafe creme recipe", [{"id": "d6"}], ["d6"], -2),
        ("s2", "2026-11-17T00:01:00", "and what about tea", [], [], "positive"),
        ("s3", "2026-11-17T08:00:00", "ＦＵＬＬ width ①", ["d7"], [], None),
        ("s3", "2026-11-17T08:00:05", "full width 1", ["d7"], [], None),
        ("s3", "2026-11-17T08:00:09", "Straße", ["d8"], [], "bad"),
        ("s3", "2026-11-17T08:00:09", "STRASSE", ["d8"], [], None),
        ("s4", None, "no time at all", ["d9"], [], None),
        ("s4", None, "no time again", [], [], None),
        (None, "2026-11-17T09:00:00", "e\u0301 combining 🙂", ["d1"], [], None),
    ]
    for i, (sid, ts, q, shown, clicks, fb) in enumerate(sessions):
        row = {"event_id": f"e{i}", "sid": sid, "timestamp": ts, "q": q, "results": shown}
        row.update({"clicked": clicks, "feedback": fb})
        rows.append(row)
    rows.append({"event_id": "e1", "sid": "s1", "timestamp": "2026-11-16T09:00:40", "q": "dup"})
    rows.append(
        {"session_id": "s5", "ts": "2026-11-18T10:00:00", "query": "no id", "num_results": "0"}
    )
    rows.append(
        {"session_id": "s5", "ts": "2026-11-18T10:00:00", "query": "no id", "num_results": "0"}
    )
    rows.append(
        {"session_id": "s5", "ts": "2026-11-18T10:00:30", "query": "no id here", "num_results": 2}
    )
    return rows


def test_edge_cases_same_summary(spark_options, tmp_path) -> None:
    log = write_jsonl(tmp_path / "edge.jsonl", edge_rows())
    duck, total = duckdb_summary(tmp_path / "duck.duckdb", [log])
    result = spark_import(tmp_path / "spark.duckdb", [log], spark_options, tmp_path)
    assert result.total == total
    # e1 again is one event written twice; the two "no id" rows, alike, are two searches
    assert total["rejected"] == 13 and total["already_present"] == 1
    assert_same(spark_summary(tmp_path / "spark.duckdb"), duck)
    reasons = result.files[0].extra["reject_reasons"]
    assert_same_reasons(reasons, tmp_path / "duck.duckdb")
    with open_store(tmp_path / "spark.duckdb") as con:
        examples = con.execute("SELECT reason, raw FROM rejects ORDER BY reason").fetchall()
    assert len(examples) == len(reasons) and all(raw for _, raw in examples)


def test_wild_values_reject_alike_in_both_engines(spark_options, tmp_path) -> None:
    """A time outside 1970-2099 and a negative num_results are row rejects with the DuckDB
    stage's reasons on Spark too (one rule, two engines); the good rows are summarized alike."""
    rows = [
        {"session_id": "w1", "ts": "99999-01-01T00:00:00", "query": "far future"},
        {"session_id": "w1", "ts": "1969-12-31T23:59:59", "query": "before the epoch"},
        {"session_id": "w2", "ts": "1985-06-01T12:00:00", "query": "old export"},
        {"session_id": "w3", "ts": "2026-11-18T10:00:00", "query": "minus", "num_results": -5},
        {"session_id": "w3", "ts": "2026-11-18T10:01:00", "query": "good", "num_results": 3},
    ]
    total = same_in_both_engines(rows, spark_options, tmp_path)
    assert (total["stored"], total["rejected"]) == (2, 3)


def test_placeholder_queries_reject_alike_in_both_engines(spark_options, tmp_path) -> None:
    """AOL's "-" and Google Analytics' "(not set)" are a missing query on both engines."""
    rows = [
        {"session_id": "p1", "ts": "2026-11-18T10:00:00", "query": "-"},
        {"session_id": "p1", "ts": "2026-11-18T10:01:00", "query": " (not set) "},
        {"session_id": "p1", "ts": "2026-11-18T10:01:30", "query": "\n\t\u200b"},
        {"session_id": "p1", "ts": "2026-11-18T10:02:00", "query": "good"},
    ]
    total = same_in_both_engines(rows, spark_options, tmp_path)
    assert (total["stored"], total["rejected"]) == (1, 3)


def test_a_search_response_stored_whole_reads_alike_in_both_engines(spark_options, tmp_path):
    """Elasticsearch's response kept under ``hits``: its hits.hits are the results on both
    engines; an object holding no list is a reject on both."""
    rows = [
        {"session_id": "e1", "ts": "2026-11-18T10:00:00", "query": "es",
         "hits": {"total": {"value": 2}, "hits": [{"_id": "d1"}, {"_id": "d2"}]}},
        {"session_id": "e1", "ts": "2026-11-18T10:01:00", "query": "none", "hits": {"total": 0}},
        {"session_id": "e2", "ts": "2026-11-18T10:00:00", "query": "empty",
         "hits": {"hits": []}},
    ]  # fmt: skip
    total = same_in_both_engines(rows, spark_options, tmp_path)
    assert (total["stored"], total["rejected"]) == (2, 1)


def test_a_nested_field_mapped_by_its_path_reads_alike_in_both_engines(spark_options, tmp_path):
    """``--map query=search.query``: Elastic's Behavioral Analytics events nest the query, the
    session and the results; the Spark engine took the path for a top-level column."""
    rows = [
        {"@timestamp": "2026-11-18T10:00:00", "session": {"id": "n1"},
         "search": {"query": "reset vpn", "results": {"items": [{"document": {"id": "d1"}}],
                                                        "total_results": 1}}},
        {"@timestamp": "2026-11-18T10:01:00", "session": {"id": "n1"},
         "search": {"query": "vpn reset linux", "results": {"items": [], "total_results": 0}}},
    ]  # fmt: skip
    mapping = {"query": "search.query", "session_id": "session.id", "ts": "@timestamp",
               "result_ids": "search.results.items",
               "num_results": "search.results.total_results"}  # fmt: skip
    log = write_jsonl(tmp_path / "log.jsonl", rows)
    duck = tmp_path / "duck.duckdb"
    with open_store(duck) as con:
        total = api.searchlog(con, [log], mapping=mapping).total
        with transaction(con):
            normalize_events(con)
            mark_session_signals(con, signals.DEFAULT_WINDOW_S)
            build_query_days(con)
        want = con.execute(f"SELECT {COLUMNS} FROM triage_query_days ORDER BY ALL").fetchall()
    result = spark_import(tmp_path / "spark.duckdb", [log], spark_options, tmp_path, **mapping)
    assert (total["stored"], total["rejected"]) == (2, 0)
    assert result.total == total
    assert_same(spark_summary(tmp_path / "spark.duckdb"), want)


def same_in_both_engines(rows: list[dict], spark_options, tmp_path: Path) -> dict:
    """The rows imported by each engine: the same accounting, summary and reject reasons; the
    DuckDB engine's total."""
    log = write_jsonl(tmp_path / "log.jsonl", rows)
    duck, total = duckdb_summary(tmp_path / "duck.duckdb", [log])
    result = spark_import(tmp_path / "spark.duckdb", [log], spark_options, tmp_path)
    assert result.total == total
    assert_same(spark_summary(tmp_path / "spark.duckdb"), duck)
    assert_same_reasons(result.files[0].extra["reject_reasons"], tmp_path / "duck.duckdb")
    return total


def test_a_fractional_num_results_rounds_alike_in_both_engines(spark_options, tmp_path) -> None:
    """num_results 0.5, 2.5 and -0.5 are rounded as DuckDB's cast rounds them (half to even:
    0, 2 and 0), so -0.5 is stored by both engines and 0.5 is a search without results in both;
    Spark rounded half up (1, 3, -1) and rejected the -0.5 line DuckDB stored."""
    rows = [
        {"session_id": "h1", "ts": "2026-11-18T10:00:00", "query": "half", "num_results": 0.5},
        {"session_id": "h1", "ts": "2026-11-18T10:01:00", "query": "two", "num_results": 2.5},
        {"session_id": "h2", "ts": "2026-11-18T10:00:00", "query": "minus", "num_results": -0.5},
        {"session_id": "h2", "ts": "2026-11-18T10:01:00", "query": "whole", "num_results": 3},
    ]
    total = same_in_both_engines(rows, spark_options, tmp_path)
    assert (total["stored"], total["rejected"]) == (4, 0)


def test_benchmark_log_same_summary(spark_options, tmp_path) -> None:
    """The benchmark's 1M-event log (helpers.generate_searchlog: sessions, clicks, feedback,
    PII-like tails): every summary row and column alike, and the same accounting."""
    log = generate_searchlog(tmp_path, 1_000_000, ("jsonl",))["jsonl"]
    duck, total = duckdb_summary(tmp_path / "duck.duckdb", [log])
    result = spark_import(tmp_path / "spark.duckdb", [log], spark_options, tmp_path)
    assert result.total == total and total["stored"] == 1_000_000
    got = spark_summary(tmp_path / "spark.duckdb")
    assert len(got) > 100_000
    assert_same(got, duck)


PII_TEXTS = [
    "mail jane.doe@example.com now",
    "ip 192.168.1.20 and 999.1.1.1",
    "v6 2001:db8::8a2e:370:7334 ok",
    "iban GB82 WEST 1234 5698 7654 32 end",
    "bad iban GB82 WEST 1234 5698 7654 33",
    "card 4111 1111 1111 1111",
    "not a card 4111-1111-1111-1112",
    "x 4111111111111111 y 4111111111111111",
    "é4111111111111111",
    "call +44 20 7946 0958",
    "(555) 123-4567 or 020 7946 0958",
    "Ünïcode 555 123 4567ü",
    "@support_team help",
    "café@example.com",
    "ORD-123456 twice ORD-123456",
    "ticket TCK-991 open",
    "plain text",
    "",
    None,
]
USER_PATTERNS = ["ORDER_ID=ORD-[0-9]{6}", r"WORD=\bplain\b", "TICKET=(?P<t>TCK)-[0-9]+"]


@pytest.mark.parametrize("handles", [False, True])
def test_redaction_agrees_with_duckdb(spark_options, handles) -> None:
    """Each pattern, checksum and word boundary (ASCII in RE2, spelled out for Java)."""
    import duckdb
    from pyspark.sql import functions as F

    from goldmine.ingest import spark as gs
    from goldmine.ingest.redact import make_redactor, redact_text

    redactor = make_redactor(True, USER_PATTERNS, handles=handles)
    con = duckdb.connect()
    want = [redact_text(con, t, redactor) for t in PII_TEXTS]
    session = gs.session(spark_options.master, spark_options.conf)
    frame = session.createDataFrame(list(enumerate(PII_TEXTS)), "i int, t string")
    got = frame.select("i", gs.redact(F.col("t"), redactor).alias("r")).orderBy("i").collect()
    assert [r["r"] for r in got] == want
    assert "<CARD>" in want[5] and "<IBAN>" in want[3] and want[6] == PII_TEXTS[6]


def test_redacted_log_same_summary(spark_options, tmp_path) -> None:
    """--redact with a user pattern: the queries, and so the summary, redacted alike; the
    rejects' examples too."""
    from dataclasses import replace

    from goldmine.ingest.redact import make_redactor

    rows: list[dict | str] = [
        {"event_id": f"p{i}", "ts": f"2026-11-16T10:0{i % 10}:00", "sid": "s1", "query": t}
        for i, t in enumerate(PII_TEXTS)
    ]
    rows += ['{"query": "jane.doe@example.com", broken', *edge_rows()]
    log = write_jsonl(tmp_path / "pii.jsonl", rows)
    duck = tmp_path / "duck.duckdb"
    with open_store(duck) as con:
        total = api.searchlog(con, [log], redact=True, patterns=USER_PATTERNS).total
        with transaction(con):
            normalize_events(con)
            mark_session_signals(con, signals.DEFAULT_WINDOW_S)
            build_query_days(con)
        want = con.execute(f"SELECT {COLUMNS} FROM triage_query_days ORDER BY ALL").fetchall()
        bad = con.execute("SELECT raw FROM rejects WHERE reason = 'malformed JSON'").fetchall()
    options = replace(spark_options, redactor=make_redactor(True, USER_PATTERNS))
    result = spark_import(tmp_path / "spark.duckdb", [log], options, tmp_path)
    assert result.total == total
    got = spark_summary(tmp_path / "spark.duckdb")
    assert_same(got, want)
    assert any(r[2] == "mail email now" for r in got) and "jane.doe" not in str(got)
    with open_store(tmp_path / "spark.duckdb") as con:
        example = con.execute("SELECT raw FROM rejects WHERE reason = 'malformed JSON'").fetchall()
        assert con.execute("SELECT options->>'redact' FROM import_batches").fetchall() == [
            ("true",)
        ]
    assert example[0][0] in [r[0] for r in bad] and "jane.doe" not in example[0][0]


def _csv_text(rows: list[dict | str], sep: str) -> str:
    """The edge log's objects as CSV: lists and objects as JSON text, no value as empty."""
    import csv
    import io

    objects = [r for r in rows if isinstance(r, dict)]
    names = list(dict.fromkeys(k for r in objects for k in r))
    out = io.StringIO()
    writer = csv.writer(out, delimiter=sep, lineterminator="\n")
    writer.writerow(names)
    for r in objects:
        values = [r.get(k) for k in names]
        writer.writerow(
            "" if v is None else v if isinstance(v, str) else json.dumps(v) for v in values
        )
    return out.getvalue()


def _write_as(kind: str, folder: Path) -> Path:
    """The edge log in another form the DuckDB engine reads."""
    import gzip

    import zstandard

    rows = edge_rows()
    if kind == "csv":
        # a quoted empty value, a doubled quote, a delimiter inside quotes
        text = _csv_text(rows, ",")
        quoted = {"event_id": "qe", "session_id": '""', "query": '"say ""hi"", ok"'}
        text += ",".join(quoted.get(k, "") for k in text.split("\n")[0].split(",")) + "\n"
        return _write(folder / "edge.csv", text.encode())
    if kind == "txt, --format csv":
        return _write(folder / "edge.txt", _csv_text(rows, ";").encode())
    if kind == "tsv.gz":
        return _write(folder / "edge.tsv.gz", gzip.compress(_csv_text(rows, "\t").encode()))
    if kind == "jsonl.zst":
        raw = write_jsonl(folder / "plain.jsonl", rows).read_bytes()
        return _write(folder / "edge.jsonl.zst", zstandard.ZstdCompressor().compress(raw))
    objects = [r for r in rows if isinstance(r, dict)]
    if kind == "json-objects":  # with a byte-order mark, as some exporters write
        return _write(
            folder / "edge.json", b"\xef\xbb\xbf" + json.dumps(objects, indent=1).encode()
        )
    # an array with other values in it: those are rejects ('not a JSON object')
    mixed = [5, *objects[:8], "s", [1], None, *objects[8:], {}]
    return _write(folder / "edge.json", json.dumps(mixed).encode())


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


FORMS = ["csv", "txt, --format csv", "tsv.gz", "jsonl.zst", "json-objects", "json-mixed"]


@pytest.mark.parametrize("kind", FORMS)
def test_other_formats_same_summary(spark_options, tmp_path, kind) -> None:
    """CSV (sniffed delimiter, quoting, empty values), gzip and zstd, JSON array documents
    (objects only, streamed; with other values, read whole): both engines alike."""
    folder = tmp_path / "in"
    folder.mkdir()
    log = _write_as(kind, folder)
    fmt = "csv" if "--format" in kind else None
    duck, total = duckdb_summary(tmp_path / "duck.duckdb", [log], fmt)
    result = spark_import(tmp_path / "spark.duckdb", [log], spark_options, tmp_path, fmt)
    assert result.total == total and total["stored"] > 20
    assert_same(spark_summary(tmp_path / "spark.duckdb"), duck)
    assert_same_reasons(result.files[0].extra["reject_reasons"], tmp_path / "duck.duckdb")


def test_ubi_same_summary(spark_options, tmp_path) -> None:
    """UBI queries joined to their click events (JSON lines), both engines."""
    from dataclasses import replace

    from goldmine.ingest import spark

    queries = [
        {
            "query_id": "q1",
            "user_query": "refund policy",
            "timestamp": "2026-11-20T10:00:00Z",
            "query_response_hit_ids": ["p14", "f3", "p1"],
            "query_attributes": {"session_id": "s-attr"},
        },
        {
            "query_id": "q2",
            "user_query": "refund policey",
            "timestamp": "2026-11-20T10:00:30Z",
            "query_response_hit_ids": "p1,p2",
            "query_attributes": {"session_id": "s1"},
        },
        {
            "query_id": "q3",
            "user_query": "vacation days",
            "timestamp": "2026-11-20T10:01:00Z",
            "query_response_hit_ids": [],
            "query_attributes": {"session_id": "s2"},
        },
        {"query_id": "q4", "user_query": "", "timestamp": "2026-11-20T10:02:00Z"},
        {"user_query": "no id"},
        {"query_id": "q5", "user_query": "Café", "timestamp": "1763287200"},
        "{broken",
    ]
    events = [
        {
            "action_name": "click",
            "query_id": "q1",
            "session_id": "s1",
            "timestamp": "2026-11-20T10:00:09Z",
            "event_attributes": {"object": {"object_id": "f3"}, "position": {"ordinal": 2}},
        },
        {
            "action_name": "impression",
            "query_id": "q1",
            "timestamp": "2026-11-20T10:00:01Z",
            "event_attributes": {"object": {"object_id": "p14"}},
        },
        {
            "action_name": "click",
            "query_id": "q1",
            "timestamp": "2026-11-20T10:00:05Z",
            "event_attributes.object.object_id": "p14",
        },
        {
            "action_name": "click",
            "query_id": "q1",
            "timestamp": "2026-11-20T10:00:07Z",
            "event_attributes.object.object_id": "p14",
        },
        {
            "action_name": "add_to_cart",
            "query_id": "q3",
            "timestamp": "2026-11-20T10:01:30Z",
            "event_attributes": {"object": {"object_id": "hr-2"}},
        },
        "not an event",
        "[1, 2]",
        '{"action_name": "click", "query_id": "q2"',
        "",
        "{}",
    ]
    q = write_jsonl(tmp_path / "ubi_queries.ndjson", queries)
    e = write_jsonl(tmp_path / "ubi_events.ndjson", events)
    duck = tmp_path / "duck.duckdb"
    with open_store(duck) as con:
        imported = api.ubi(con, q, e)
        total = imported.total
        with transaction(con):
            normalize_events(con)
            mark_session_signals(con, signals.DEFAULT_WINDOW_S)
            build_query_days(con)
        want = con.execute(f"SELECT {COLUMNS} FROM triage_query_days ORDER BY ALL").fetchall()
        event_reasons = con.execute(
            "SELECT reason, count(*) FROM rejects WHERE starts_with(reason, 'ubi_events: ') "
            "GROUP BY ALL ORDER BY ALL"
        ).fetchall()
    db = tmp_path / "spark.duckdb"
    with open_store(db):
        pass
    options = replace(spark_options, summary_dir=str(tmp_path / "summary"))
    result = spark.ubi(db, str(q), str(e), ["click"], options)
    assert (
        result.total
        == total
        == {
            "rows_in": 7,
            "stored": 4,
            "rejected": 3,
            "already_present": 0,
        }
    )
    assert_same(spark_summary(db), want)
    # the events file's bad records: counted with their reasons, apart from the queries
    extra = result.files[0].extra
    counts = ("events_in", "events_rejected", "events_with_object")
    assert (
        {k: extra[k] for k in counts}
        == imported.files[0].extra
        == {
            "events_in": 9,
            "events_rejected": 3,
            "events_with_object": 5,
        }
    )
    assert sorted(extra["events_reject_reasons"].items()) == event_reasons
    with open_store(db) as con:
        examples = con.execute(
            "SELECT reason, raw FROM rejects WHERE starts_with(reason, 'ubi_events: ') "
            "ORDER BY reason"
        ).fetchall()
    assert [r for r, _ in examples] == [r for r, _ in event_reasons] and all(
        raw for _, raw in examples
    )
    assert spark.ubi(db, str(q), str(e), ["click"], options).files[0].skipped


# --- the batch: accounting, re-runs, triage -----------------------------------------------------


def test_a_rerun_imports_only_new_files(spark_options, tmp_path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    write_jsonl(folder / "day1.jsonl", [{"event_id": "a", "query": "one", "ts": "2026-11-16"}])
    write_jsonl(folder / "day2.jsonl", [{"event_id": "b", "query": "two", "ts": "2026-11-17"}])
    db = tmp_path / "s.duckdb"
    first = spark_import(db, [folder], spark_options, tmp_path)
    assert first.total["stored"] == 2 and first.files[0].extra["files"] == 2
    write_jsonl(folder / "day3.jsonl", [{"event_id": "c", "query": "three", "ts": "2026-11-18"}])
    second = spark_import(db, [folder], spark_options, tmp_path)
    assert second.total["stored"] == 1 and "2 of 3 files already imported" in second.files[0].note
    again = spark_import(db, [folder], spark_options, tmp_path)
    assert again.files[0].skipped and again.total["rows_in"] == 0
    with open_store(db) as con:
        days = con.execute(
            "SELECT day::VARCHAR, batch_id FROM search_summaries ORDER BY 1"
        ).fetchall()
        files = json.loads(
            con.execute("SELECT options FROM import_batches WHERE batch_id = 2").fetchall()[0][0]
        )["files"]
    assert days == [("2026-11-16", 1), ("2026-11-17", 1), ("2026-11-18", 2)]
    assert [Path(f["path"]).name for f in files] == ["day3.jsonl"]


def test_triage_after_spark_equals_triage_after_duckdb(shared_dataset, spark_options, tmp_path):
    from goldmine.triage.pipeline import run_triage

    xml = shared_dataset("datasets", "trec_session_track", "sessiontrack2012.xml")
    log = tmp_path / "sessions.jsonl"
    trec_session_track_jsonl(xml, log)
    duck, sparked = tmp_path / "duck.duckdb", tmp_path / "spark.duckdb"
    with open_store(duck) as con:
        api.searchlog(con, [log])
    spark_import(sparked, [log], spark_options, tmp_path)
    queries = (
        "SELECT norm_query, query, canonical_query, cluster_id, n_events, n_sessions, sources, "
        "first_seen, last_seen, n_zero_results, n_no_click, n_reformulated, n_negative_feedback, "
        "n_failed, failure_rate, n_follow_up, tags FROM triage_queries ORDER BY norm_query"
    )
    clusters = (
        "SELECT cluster_id, label, volume, n_variants, n_failed, failure_rate, priority, tags, "
        "signals, first_seen, last_seen FROM triage_clusters ORDER BY cluster_id"
    )
    got = {}
    for db in (duck, sparked):
        result = run_triage(db)
        with open_store(db) as con:
            got[db] = (
                result.n_events,
                con.execute(queries).fetchall(),
                con.execute(clusters).fetchall(),
            )
    assert got[duck][0] == got[sparked][0] == 199
    assert got[sparked][1] == got[duck][1]
    assert got[sparked][2] == got[duck][2]
    assert len(got[duck][2]) > 1


def test_without_pyspark_or_java_one_line_says_what_to_install(monkeypatch, tmp_path) -> None:
    from goldmine.ingest import spark

    monkeypatch.setitem(sys.modules, "pyspark", None)
    monkeypatch.setitem(sys.modules, "pyspark.sql", None)
    with pytest.raises(InputError, match=r"pip install 'goldmine\[spark\]'"):
        spark.session()
    monkeypatch.undo()
    pytest.importorskip("pyspark")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(InputError, match="needs Java 17"):
        spark.session()


def test_cli_engine_options(cli, tmp_path) -> None:
    log = write_jsonl(tmp_path / "l.jsonl", [{"query": "x"}])
    db = str(tmp_path / "s.duckdb")
    out = cli("ingest", "searchlog", str(log), "--master", "local[1]", "--db", db)
    assert out.returncode == 2 and "need --engine spark" in out.stderr
    out = cli("ingest", "searchlog", str(log), "--engine", "flink", "--db", db)
    assert out.returncode == 2 and "duckdb or spark" in out.stderr
    out = cli("ingest", "searchlog", str(log), "--engine", "spark", "--format", "xml", "--db", db)
    assert out.returncode == 2 and "--engine spark reads --format jsonl" in out.stderr
    env = {"JAVA_HOME": str(tmp_path / "nojava"), "PATH": str(Path(sys.executable).parent)}
    out = cli("ingest", "searchlog", str(log), "--engine", "spark", "--db", db, env=env)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_model_free_commands_do_not_import_pyspark(tmp_path) -> None:
    import subprocess

    db = tmp_path / "s.duckdb"
    log = write_jsonl(tmp_path / "l.jsonl", [{"query": "x"}])
    code = f"""
import sys
from goldmine.cli import main
for args in (["ingest", "searchlog", {str(log)!r}], ["status"]):
    try:
        main([*args, "--db", {str(db)!r}])
    except SystemExit as exc:
        assert not exc.code, exc.code
print("HEAVY:" + ",".join(m for m in ("pyspark", "py4j", "sqlglot") if m in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "HEAVY:"


def test_redacted_ids_keep_sessions_apart_in_both_engines(spark_options, tmp_path) -> None:
    """--redact on a log whose session and user ids are emails: DuckDB stores no address (a
    session id becomes ``<EMAIL>~`` and a keyed hash), so its sessions stay as many as Spark
    counts from the ids it never stores; the summaries agree row for row."""
    from dataclasses import replace

    from goldmine.ingest.redact import make_redactor

    people = ["ann@example.com", "bo@example.org", "cy@example.net"]
    rows: list[dict | str] = [
        {"event_id": f"r{i}", "ts": f"2026-11-16T10:{i:02d}:00", "session_id": people[i % 3],
         "user_id": people[i % 3], "query": ["refund", "refund policy", "returns"][i // 4],
         "feedback": "negative" if i % 4 == 0 else None}
        for i in range(12)
    ]  # fmt: skip
    log = write_jsonl(tmp_path / "ids.jsonl", rows)
    duck = tmp_path / "duck.duckdb"
    with open_store(duck) as con:
        api.searchlog(con, [log], redact=True)
        with transaction(con):
            normalize_events(con)
            mark_session_signals(con, signals.DEFAULT_WINDOW_S)
            build_query_days(con)
        want = con.execute(f"SELECT {COLUMNS} FROM triage_query_days ORDER BY ALL").fetchall()
        stored = con.execute("SELECT session_id, user_id FROM search_events").fetchall()
    assert "@" not in str(stored) and len({s for s, _ in stored}) == 3
    options = replace(spark_options, redactor=make_redactor(True))
    spark_import(tmp_path / "spark.duckdb", [log], options, tmp_path)
    got = spark_summary(tmp_path / "spark.duckdb")
    assert_same(got, want)
    assert "@" not in str(got)


def test_ids_numbered_alike_in_two_files_and_repeated_rows_alike_in_both_engines(
    spark_options, tmp_path
) -> None:
    """Two weeks whose exports number their rows 1..N: next week's row 1 is another search
    (another query, days away), stored by both engines; a row repeated without an id is a search
    each time. The same event again (same query, minutes away) is the one stored."""
    first = ["reset password", "cancel order", "track parcel", "opening times"]
    week1 = [{"id": str(i), "query": q, "timestamp": f"2026-11-16T10:0{i}:00Z"}
             for i, q in enumerate(first, 1)]  # fmt: skip
    week2 = [{"id": str(i), "query": q, "timestamp": f"2026-11-23T09:0{i}:00Z"}
             for i, q in enumerate(["refund status", "change address"], 1)]  # fmt: skip
    week2 += [{"id": "3", "query": "track parcel", "timestamp": "2026-11-16T10:03:30Z"}]
    week2 += [{"id": "4", "query": "new one", "timestamp": "2026-11-16T19:00:00Z"}]
    week2 += [{"query": "opening hours", "timestamp": "2026-11-23T09:05:00Z"}] * 2
    logs = [write_jsonl(tmp_path / "week1.jsonl", week1),
            write_jsonl(tmp_path / "week2.jsonl", week2)]  # fmt: skip
    duck, total = duckdb_summary(tmp_path / "duck.duckdb", logs)
    result = spark_import(tmp_path / "spark.duckdb", logs, spark_options, tmp_path)
    assert total == {"rows_in": 10, "stored": 9, "rejected": 0, "already_present": 1}
    assert result.total == total
    assert_same(spark_summary(tmp_path / "spark.duckdb"), duck)


def test_an_id_given_to_two_searches_in_one_file_alike_in_both_engines(
    spark_options, tmp_path
) -> None:
    """Amplitude numbers events per device: one file's id 1 is u1's search and u2's. Both
    engines store both (ID@TIME), and one row written twice once."""
    rows = [
        {"event_id": 1, "user_id": "u1", "ts": "2026-11-23T08:00:00Z", "query": "return policy"},
        {"event_id": 1, "user_id": "u2", "ts": "2026-11-23T08:05:00Z", "query": "gift card"},
        {"event_id": 2, "user_id": "u1", "ts": "2026-11-23T08:01:00Z", "query": "shipping"},
        {"event_id": 2, "user_id": "u1", "ts": "2026-11-23T08:01:30Z", "query": "shipping"},
        {"event_id": 3, "user_id": "u1", "ts": "2026-11-23T08:02:00Z", "query": "size guide"},
        {"event_id": 3, "user_id": "u1", "ts": "2026-11-25T08:02:00Z", "query": "size guide"},
        {"event_id": 4, "user_id": "u3", "ts": "2026-11-23T09:00:00Z", "query": "a"},
        {"event_id": 4, "user_id": "u4", "ts": "2026-11-23T09:00:00Z", "query": "b"},
    ]
    logs = [write_jsonl(tmp_path / "amplitude.jsonl", rows)]
    duck, total = duckdb_summary(tmp_path / "duck.duckdb", logs)
    result = spark_import(tmp_path / "spark.duckdb", logs, spark_options, tmp_path)
    assert total == {"rows_in": 8, "stored": 7, "rejected": 0, "already_present": 1}
    assert result.total == total
    assert_same(spark_summary(tmp_path / "spark.duckdb"), duck)


def test_a_results_column_of_counts_reads_alike_in_both_engines(spark_options, tmp_path) -> None:
    """ "Results": 0 is a search that found nothing, "hits": 9 nine results, in both engines."""
    rows = [
        {"ts": "2026-11-23T08:00:00Z", "query": "gift card", "results": "0"},
        {"ts": "2026-11-23T08:01:00Z", "query": "returns", "results": 12},
        {"ts": "2026-11-23T08:02:00Z", "query": "shipping", "results": "3"},
    ]
    ids = [{"ts": "2026-11-23T09:00:00Z", "query": "reset", "results": "101|205"},
           {"ts": "2026-11-23T09:01:00Z", "query": "refund", "results": "4711"}]  # fmt: skip
    logs = [write_jsonl(tmp_path / "counts.jsonl", rows), write_jsonl(tmp_path / "ids.jsonl", ids)]
    duck, total = duckdb_summary(tmp_path / "duck.duckdb", logs)
    result = spark_import(tmp_path / "spark.duckdb", logs, spark_options, tmp_path)
    assert total["stored"] == 5 and result.total == total
    assert_same(spark_summary(tmp_path / "spark.duckdb"), duck)


def test_ga4_sessions_are_their_users_in_both_engines(spark_options, tmp_path) -> None:
    """GA4's ga_session_id is unique only with its user_pseudo_id: two visitors who began in
    the same second are two sessions on both engines (n_sessions, reformulations)."""
    rows = [
        {"event_timestamp": "1795420801000000", "user_pseudo_id": "1.1",
         "ga_session_id": 1795420000, "search_term": "refund policy"},
        {"event_timestamp": "1795420820000000", "user_pseudo_id": "2.2",
         "ga_session_id": 1795420000, "search_term": "refund policies"},
        {"event_timestamp": "1795420840000000", "user_pseudo_id": "1.1", "user_id": "alice",
         "ga_session_id": 1795420000, "search_term": "refund policy"},
    ]  # fmt: skip
    same_in_both_engines(rows, spark_options, tmp_path)
    with open_store(tmp_path / "duck.duckdb") as con:
        sessions = con.execute("SELECT DISTINCT session_id FROM search_events ORDER BY 1")
        assert sessions.fetchall() == [("1.1:1795420000",), ("2.2:1795420000",)]


def test_a_query_that_is_a_dsl_rejects_alike_in_both_engines(spark_options, tmp_path) -> None:
    """A query column holding the search's DSL (JSON text) is a reject on both engines."""
    dsl = '{"query": {"match": {"body": "refund policy"}}}'
    rows = [
        {"session_id": "d1", "ts": "2026-11-18T10:00:00", "query": dsl},
        {"session_id": "d1", "ts": "2026-11-18T10:01:00", "query": "{curly} braces"},
    ]
    total = same_in_both_engines(rows, spark_options, tmp_path)
    assert (total["stored"], total["rejected"]) == (1, 1)
