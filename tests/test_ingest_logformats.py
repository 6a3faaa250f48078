"""Search logs in the layouts IR people already have, read with no converter: the TREC Session
Track's XML (the real 2012 file), click-level exports (one row per click, AOL's layout) and
dates whose day/month order only the file, or --ts-format, can tell."""

from __future__ import annotations

import gzip
import json
from datetime import datetime
from pathlib import Path

import pytest

from goldmine.store import open_store, transaction
from goldmine.triage.events import build_events

from helpers import trec_session_track_jsonl


def _events(db: Path) -> dict[str, tuple]:
    with open_store(db) as con:
        rows = con.execute(
            "SELECT event_id, session_id, ts, query, result_ids, num_results, clicked_ids, extra "
            "FROM search_events"
        ).fetchall()
    return {r[0]: r[1:] for r in rows}


def _signals(db: Path) -> dict[str, tuple[bool, bool]]:
    with open_store(db) as con:
        with transaction(con):
            build_events(con)
        rows = con.execute(
            "SELECT event_key, is_no_click, is_reformulated FROM triage_events"
        ).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def _ingest(cli, db: Path, *args: str):
    return cli("ingest", "searchlog", *args, "--db", str(db), "--json")


# --- TREC Session Track XML -------------------------------------------------------------------


def test_session_track_xml_is_read_as_the_converter_read_it(shared_dataset, tmp_path, db_path, cli):
    xml = shared_dataset("datasets", "trec_session_track", "sessiontrack2012.xml")
    result = _ingest(cli, db_path, str(xml))
    assert result.returncode == 0, result.stderr
    # 199 interactions and each of the 98 sessions' current query (a search with no results
    # shown), one event each.
    assert json.loads(result.stdout)["total"] == {
        "rows_in": 297,
        "stored": 297,
        "rejected": 0,
        "already_present": 0,
    }
    assert json.loads(result.stdout)["files"][0]["format"] == "session_xml"
    got = _events(db_path)
    converted = tmp_path / "converted.jsonl"
    trec_session_track_jsonl(xml, converted)
    want = [json.loads(line) for line in converted.read_text().splitlines()]
    assert len(want) == 199
    for row in want:
        sid, num = row["event_id"].split("-")
        session, ts, query, shown, n, clicks, _ = got[f"sessiontrack2012/{sid}/{num}"]
        assert session == f"sessiontrack2012/{sid}"
        # The search log's stage trims a query, whichever file it came from; the file escapes
        # two queries' ampersands twice ("merck &amp;amp; co."), which the converter reads once.
        typed = row["query"].strip().replace("&amp;", "&")
        assert (query, shown, clicks) == (typed, row["results"], row["clicks"])
        assert n == len(row["results"])
        assert ts.time() == datetime.fromisoformat(row["timestamp"]).time()
    assert sum(len(v[5]) for v in got.values() if v[5]) == 272
    assert len({v[0] for v in got.values()}) == 98
    current = got["sessiontrack2012/1/current"]
    assert current[2:6] == ("US tax code 403 (b) eligibility", None, None, None)
    # The clicks keep their times, beside the ids.
    first = got["sessiontrack2012/1/1"]
    assert json.loads(first[6])["click_times"] == ["09:54:42.635247", "09:54:44.273290"]


def test_session_track_xml_gives_the_failure_signals(shared_dataset, db_path, cli):
    xml = shared_dataset("datasets", "trec_session_track", "sessiontrack2012.xml")
    assert _ingest(cli, db_path, str(xml)).returncode == 0
    events = _events(db_path)
    signals = _signals(db_path)
    # No click: exactly the interactions that showed results and have no <clicked> click; the
    # current queries showed nothing the log knows of, so they are no such failure.
    no_click = {k for k, v in events.items() if v[3] and not v[5]}
    assert no_click and {k for k, v in signals.items() if v[0]} == no_click
    # Session 2: "personal IRA" -> "personal IRA v 403 (b)" 58 s later, then "… or 403 (b)".
    assert signals["sessiontrack2012/2/2"][1] is True
    assert signals["sessiontrack2012/2/3"][1] is True
    # Read again: the same file adds nothing.
    again = _ingest(cli, db_path, str(xml))
    assert json.loads(again.stdout)["total"]["stored"] == 0


def test_session_track_xml_detected_by_content_and_forced(tmp_path, db_path, cli):
    log = tmp_path / "log.txt"
    log.write_text(
        '<?xml version="1.0"?>\n<sessiontrack2013><session num="7">\n'
        '<interaction num="1" starttime="23:59:50"><query>cheap laptops</query>'
        '<results><result rank="1"><clueweb12id>d1</clueweb12id></result>'
        '<result rank="2"><clueweb12id>d2</clueweb12id></result></results>'
        '<clicked><click num="1" starttime="23:59:58" endtime="00:00:09"><rank>2</rank>'
        "</click></clicked></interaction>\n"
        '<interaction num="2" starttime="00:00:20"><query>cheap laptops 2013</query>'
        '<results><result rank="1"><clueweb12id>d3</clueweb12id></result></results>'
        "</interaction>\n</session></sessiontrack2013>\n"
    )
    result = _ingest(cli, db_path, str(log))
    assert result.returncode == 0, result.stderr
    got = _events(db_path)
    assert got["sessiontrack2013/7/1"][3:6] == (["d1", "d2"], 2, ["d2"])
    assert got["sessiontrack2013/7/2"][3:6] == (["d3"], 1, [])
    # Times of day only: a session that passes midnight goes on to the next day.
    assert got["sessiontrack2013/7/2"][1] - got["sessiontrack2013/7/1"][1] == (
        datetime(2013, 1, 2, 0, 0, 20) - datetime(2013, 1, 1, 23, 59, 50)
    )
    other = tmp_path / "other.duckdb"
    forced = _ingest(cli, other, str(log), "--format", "session_xml")
    assert forced.returncode == 0, forced.stderr


# --- click-level exports ----------------------------------------------------------------------

AOL = (
    "AnonID\tQuery\tQueryTime\tItemRank\tClickURL\n"
    "142\tcheap flights\t2006-03-01 07:17:12\t1\thttp://www.expedia.com\n"
    "142\tcheap flights\t2006-03-01 07:17:12\t3\thttp://www.orbitz.com\n"
    "142\tcheap flights paris\t2006-03-01 07:18:40\t\t\n"
    "217\tlottery results\t2006-03-02 19:02:01\t2\thttp://www.lottery.com\n"
    "217\t\t2006-03-02 19:03:00\t\t\n"
    "217\tweather\t2006-03-04 08:00:00\t\t\n"
)


def test_click_level_rows_are_one_search_with_its_clicks(tmp_path, db_path, cli):
    log = tmp_path / "user-ct-test-collection-01.txt"
    log.write_text(AOL)
    result = _ingest(cli, db_path, str(log))
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["files"][0]["format"] == "clicklog"
    # Five searches (the two rows of the first share user, query and time), one without a query.
    assert out["total"] == {"rows_in": 5, "stored": 4, "rejected": 0 + 1, "already_present": 0}
    by_query = {v[2]: v for v in _events(db_path).values()}
    assert by_query["cheap flights"][5] == ["http://www.expedia.com", "http://www.orbitz.com"]
    assert by_query["cheap flights"][1] == datetime(2006, 3, 1, 7, 17, 12)
    assert json.loads(by_query["cheap flights"][6])["click_ranks"] == [1, 3]
    assert by_query["cheap flights paris"][5] == []
    # A user's searches less than 30 minutes apart are one session; a user's next day, another.
    assert by_query["cheap flights"][0] == by_query["cheap flights paris"][0]
    assert by_query["lottery results"][0] != by_query["weather"][0]
    signals = _signals(db_path)
    ids = {v[2]: k for k, v in _events(db_path).items()}
    assert signals[ids["cheap flights"]][1] is True  # reformulated 88 s later
    assert signals[ids["lottery results"]][1] is False
    with open_store(db_path) as con:
        rejects = con.execute("SELECT line, reason FROM rejects").fetchall()
    assert rejects == [(6, "missing query")]


def test_click_level_csv_of_a_warehouse_table(tmp_path, db_path, cli):
    log = tmp_path / "clicks.csv"
    log.write_text(
        "user_id,session_id,query,timestamp,clicked_doc,click_position,device\n"
        "u1,s1,reset password,2026-11-30T10:00:00Z,doc-7,2,mobile\n"
        "u1,s1,reset password,2026-11-30T10:00:00Z,doc-9,4,mobile\n"
        "u2,s2,invoice pdf,2026-11-30T11:00:00Z,,,desktop\n"
    )
    result = _ingest(cli, db_path, str(log))
    assert result.returncode == 0, result.stderr
    by_query = {v[2]: v for v in _events(db_path).values()}
    assert by_query["reset password"][0] == "s1"
    assert by_query["reset password"][5] == ["doc-7", "doc-9"]
    assert by_query["invoice pdf"][5] == []
    # A column goldmine has no field for is kept with the search.
    assert json.loads(by_query["invoice pdf"][6])["device"] == "desktop"


# --- timestamps -------------------------------------------------------------------------------


def _dated(path: Path, dates: list[str]) -> Path:
    path.write_text(
        "query,timestamp\n" + "".join(f"q{i},{d}\n" for i, d in enumerate(dates)), encoding="utf-8"
    )
    return path


def _times(db: Path) -> dict[str, datetime]:
    return {v[2]: v[1] for v in _events(db).values()}


def test_a_day_first_file_reads_its_ambiguous_dates_day_first(tmp_path, db_path, cli):
    log = _dated(tmp_path / "a.csv", ["30/11/2026 10:00", "03/04/2026 09:15", "1/2/2026"])
    result = _ingest(cli, db_path, str(log))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["total"]["stored"] == 3
    assert _times(db_path) == {
        "q0": datetime(2026, 11, 30, 10, 0),
        "q1": datetime(2026, 4, 3, 9, 15),
        "q2": datetime(2026, 2, 1),
    }


def test_a_month_first_file_and_a_dotted_one(tmp_path, db_path, cli):
    log = _dated(tmp_path / "us.csv", ["11/30/2026 10:00:05", "03/04/2026"])
    assert _ingest(cli, db_path, str(log)).returncode == 0
    assert _times(db_path) == {"q0": datetime(2026, 11, 30, 10, 0, 5), "q1": datetime(2026, 3, 4)}
    dotted = _dated(tmp_path / "de.csv", ["03.04.2026 08:00"])
    other = tmp_path / "de.duckdb"
    assert _ingest(cli, other, str(dotted)).returncode == 0
    assert _times(other) == {"q0": datetime(2026, 4, 3, 8, 0)}


def test_a_file_whose_every_date_is_ambiguous_names_ts_format(tmp_path, db_path, cli):
    log = _dated(tmp_path / "b.csv", ["03/04/2026 10:00", "05/06/2026 11:00"])
    result = _ingest(cli, db_path, str(log))
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) == 1
    assert "--ts-format" in result.stderr and "03/04/2026 10:00" in result.stderr
    with open_store(db_path) as con:
        assert con.execute("SELECT count(*) FROM search_events").fetchall() == [(0,)]
        assert con.execute("SELECT count(*) FROM import_batches").fetchall() == [(0,)]
    given = _ingest(cli, db_path, str(log), "--ts-format", "%m/%d/%Y %H:%M")
    assert given.returncode == 0, given.stderr
    assert _times(db_path) == {
        "q0": datetime(2026, 3, 4, 10, 0),
        "q1": datetime(2026, 5, 6, 11, 0),
    }


def test_ts_format_reads_a_layout_no_rule_knows(tmp_path, db_path, cli):
    log = _dated(tmp_path / "c.csv", ["2026|11|30 10h05", "not a date"])
    result = _ingest(cli, db_path, str(log), "--ts-format", "%Y|%m|%d %Hh%M", "--allow-empty")
    assert result.returncode == 0, result.stderr
    assert _times(db_path) == {"q0": datetime(2026, 11, 30, 10, 5)}
    with open_store(db_path) as con:
        reasons = con.execute("SELECT reason FROM rejects").fetchall()
    assert reasons == [("unparseable timestamp: not a date",)]


@pytest.mark.parametrize("bad", ["%Q", ""])
def test_a_wrong_ts_format_is_one_line(tmp_path, db_path, cli, bad):
    log = _dated(tmp_path / "d.csv", ["2026-11-30"])
    result = _ingest(cli, db_path, str(log), "--ts-format", bad)
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and "--ts-format" in result.stderr


# --- aggregated analytics ---------------------------------------------------------------------


def _triage_queries(db: Path) -> dict[str, tuple]:
    from goldmine.triage.events import aggregate_queries

    with open_store(db) as con:
        with transaction(con):
            build_events(con)
            aggregate_queries(con)
        rows = con.execute(
            "SELECT norm_query, n_events, n_zero_results, n_no_click, n_failed, sources "
            "FROM triage_queries"
        ).fetchall()
    return {r[0]: r[1:] for r in rows}


def test_site_search_analytics_rows_stand_for_their_counts(tmp_path, db_path, cli):
    export = tmp_path / "site-search.csv"
    export.write_text(
        "Search Term,Total Searches,Searches with No Results,Click-through Rate\n"
        "refund status,120,0,45%\n"
        'cancel order,"1,080",20,0.25\n'
        "Vérifier Commande,10,10,0%\n"
        ",5,0,0%\n"
        "gift card,abc,0,0\n",
        encoding="utf-8",
    )
    result = _ingest(cli, db_path, str(export))
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["files"][0]["format"] == "analytics"
    assert out["total"] == {"rows_in": 5, "stored": 3, "rejected": 2, "already_present": 0}
    with open_store(db_path) as con:
        rejects = con.execute("SELECT line, reason FROM rejects ORDER BY line").fetchall()
    assert rejects == [(5, "missing query"), (6, "wrong type: count is not a number: abc")]
    got = _triage_queries(db_path)
    # 45% of 120 searches clicked: 66 without a click; 25% of 1,080 clicked, 20 showed nothing.
    assert got["refund status"] == (120, 0, 66, 66, ["analytics"])
    assert got["cancel order"] == (1080, 20, 790, 810, ["analytics"])
    assert got["vérifier commande"] == (10, 10, 0, 10, ["analytics"])
    # The same export again adds nothing.
    again = json.loads(_ingest(cli, db_path, str(export)).stdout)["total"]
    assert again["stored"] == 0


def test_search_console_queries_with_clicks_and_impressions(tmp_path, db_path, cli):
    export = tmp_path / "Queries.csv"
    export.write_text(
        "Date,Top queries,Clicks,Impressions,CTR,Position\n"
        "2026-11-30,reset password,30,400,7.5%,3.2\n"
        "2026-11-30,invoice pdf,0,12,0%,8.9\n"
    )
    result = _ingest(cli, db_path, str(export))
    assert result.returncode == 0, result.stderr
    got = _triage_queries(db_path)
    # Every impression a search that showed the site; the clicked ones are no failure.
    assert got["reset password"] == (400, 0, 370, 370, ["analytics"])
    assert got["invoice pdf"] == (12, 0, 12, 12, ["analytics"])
    with open_store(db_path) as con:
        days = con.execute("SELECT DISTINCT day FROM search_summaries").fetchall()
    assert [d[0].isoformat() for d in days] == ["2026-11-30"]
    # A second export holding the same day's rows adds nothing; another day's rows are added.
    later = tmp_path / "Queries-2.csv"
    later.write_text(
        "Date,Top queries,Clicks,Impressions,CTR,Position\n"
        "2026-11-30,reset password,30,400,7.5%,3.2\n"
        "2026-12-01,reset password,1,100,1%,4.0\n"
    )
    total = json.loads(_ingest(cli, db_path, str(later)).stdout)["total"]
    assert total == {"rows_in": 2, "stored": 1, "rejected": 0, "already_present": 1}
    assert _triage_queries(db_path)["reset password"][:3] == (500, 0, 469)


def test_an_unreadable_analytics_row_is_a_reject_not_a_crash(tmp_path, db_path, cli):
    """Invalid UTF-8 in one row of an analytics export stopped the whole import with a
    traceback (its raw text is not JSON): it is a reject with its line, the rest stored."""
    log = tmp_path / "export.csv"
    log.write_bytes(b"query,searches,no_results,date\nfoo,10,2,2026-01-02\nba\xffr,3,0,2026-01-02\n"
                    b"last,1,0,2026-01-02\n")  # fmt: skip
    result = _ingest(cli, db_path, str(log))
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    total = json.loads(result.stdout)["total"]
    assert (total["rows_in"], total["stored"], total["rejected"]) == (3, 2, 1)


# --- files from the wild (issue 26, review): every row stored or a reject at its line ----------


def _rejects(db: Path) -> list[tuple[int, str]]:
    with open_store(db) as con:
        return con.execute("SELECT line, reason FROM rejects ORDER BY line, reason").fetchall()


def _total(result) -> dict:
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return json.loads(result.stdout)["total"]


def test_a_stray_quote_in_a_click_csv_swallows_no_row(tmp_path, db_path, cli):
    """DuckDB's CSV reader took the rows after an unclosed quote into one reject (6 data rows
    in, 5 counted): each row is read on its own line."""
    log = tmp_path / "clicks.csv"
    log.write_text(
        "user_id,query,timestamp,clicked_doc\n"
        'u1,a "b,2026-01-01T10:00:00,d1\n'
        "u1,q2,2026-01-01T10:01:00,d2\n"
        "u1,q3,2026-01-01T10:02:00,d3\n"
        "u2,q4,2026-01-01T10:03:00,d4\n"
        'u2,"q5,2026-01-01T10:04:00,d5\n'
        'u3,"q, six",2026-01-01T10:05:00,d6\n'
    )
    total = _total(_ingest(cli, db_path, str(log)))
    assert total == {"rows_in": 6, "stored": 5, "rejected": 1, "already_present": 0}
    assert [r[0] for r in _rejects(db_path)] == [6]
    queries = {v[2] for v in _events(db_path).values()}
    assert queries == {'a "b', "q2", "q3", "q4", "q, six"}


def test_a_row_after_a_reader_reject_keeps_its_line(tmp_path, db_path, cli):
    """A row with too many fields was two rejects, and the row after it took its line."""
    log = tmp_path / "clicks.csv"
    log.write_text(
        "user_id,query,timestamp,clicked_doc\n"
        "u1,q1,2026-01-01T10:00:00,d1\n"
        "u1,q2,2026-01-01T10:01:00,d2,extra,x\n"
        "u1,,2026-01-01T10:02:00,d3\n"
    )
    total = _total(_ingest(cli, db_path, str(log)))
    assert total == {"rows_in": 3, "stored": 1, "rejected": 2, "already_present": 0}
    rejects = _rejects(db_path)
    assert [r[0] for r in rejects] == [3, 4]
    assert rejects[1][1] == "missing query"


def test_empty_query_rows_sharing_user_and_time_are_a_reject_each(tmp_path, db_path, cli):
    log = tmp_path / "user-ct-test-collection-02.txt"
    log.write_text(AOL + "217\t\t2006-03-02 19:03:00\t\t\n")
    total = _total(_ingest(cli, db_path, str(log)))
    assert total == {"rows_in": 6, "stored": 4, "rejected": 2, "already_present": 0}
    assert _rejects(db_path) == [(6, "missing query"), (8, "missing query")]


def _session_xml(long_or_bad: bytes = b"", nul: bytes = b"") -> bytes:
    """Three interactions of one session, one line per tag; ``long_or_bad`` is a snippet line
    in the second, ``nul`` a line in the third."""
    lines = [b"<sessiontrack2014>", b'<session num="3" starttime="10:00:00">']
    for i in (1, 2, 3):
        lines += [
            f'<interaction num="{i}" starttime="10:0{i}:00">'.encode(),
            f"<query>query {i}</query>".encode(),
            b"<results>",
            b'<result rank="1">',
            f"<clueweb12id>d{i}</clueweb12id>".encode(),
            (long_or_bad if i == 2 else nul if i == 3 else b"") or b"<snippet>plain</snippet>",
            b"</result>",
            b"</results>",
            b"</interaction>",
        ]
    lines += [b"<currentquery><query>query 4</query></currentquery>", b"</session>",
              b"</sessiontrack2014>"]  # fmt: skip
    return b"\n".join(lines) + b"\n"


def _analytics(long_or_bad: bytes, nul: bytes) -> bytes:
    return (b"query,searches,no_results,date\nfoo,10,2,2026-01-02\n" + long_or_bad
            + b"\nbar,3,0,2026-01-02\n" + nul + b"\nlast,x,0,2026-01-02\n")  # fmt: skip


def _clicks(long_or_bad: bytes, nul: bytes) -> bytes:
    return (b"AnonID\tQuery\tQueryTime\tItemRank\tClickURL\n1\tfoo\t2006-03-01 07:17:12\t1\tu\n"
            + long_or_bad + b"\n2\tbar\t2006-03-01 07:18:12\t\t\n" + nul
            + b"\n3\t\t2006-03-01 07:19:12\t\t\n")  # fmt: skip


LONG = 17 * 1024 * 1024


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["session_xml", "analytics", "clicklog"])
def test_a_17mib_line_and_a_nul_line_are_rejects_at_their_lines(tmp_path, db_path, cli, layout):
    """The log readers' files were not scanned: a line past the reader's limit and a line of
    NUL bytes were lost or split without a word; each is a reject with its line and reason, and
    the other lines keep theirs."""
    long = b"<snippet>" + b"x" * LONG + b"</snippet>"
    nul = b"<snippet>a\0b</snippet>" if layout == "session_xml" else b"q\0x,1,0,2026-01-02"
    make = {"session_xml": _session_xml, "analytics": _analytics, "clicklog": _clicks}[layout]
    path = tmp_path / {"session_xml": "log.xml", "analytics": "export.csv",
                       "clicklog": "clicks.txt"}[layout]  # fmt: skip
    data = make(long, nul) if layout != "clicklog" else make(b"x" * LONG, b"4\tq\0x\t\t\t")
    path.write_bytes(data)
    total = _total(_ingest(cli, db_path, str(path)))
    assert total["rows_in"] == total["stored"] + total["rejected"] + total["already_present"]
    rejects = _rejects(db_path)
    lines = data.split(b"\n")
    long_at = next(i for i, line in enumerate(lines, 1) if len(line) > 16 * 1024 * 1024)
    nul_at = next(i for i, line in enumerate(lines, 1) if b"\0" in line)
    got = {line: reason for line, reason in rejects}
    assert got[long_at].startswith("line too long"), rejects
    assert got[nul_at].startswith("binary data"), rejects
    if layout == "session_xml":
        # The interactions are still read, each with its own results.
        events = _events(db_path)
        assert events["sessiontrack2014/3/1"][3] == ["d1"]
        assert events["sessiontrack2014/3/3"][3] == ["d3"]
    elif layout == "clicklog":
        assert got[len(lines) - 1] == "missing query", rejects  # the last row keeps its line
        assert total["stored"] == 2
    else:
        assert got[len(lines) - 1].startswith("wrong type"), rejects  # its own line
        assert total["stored"] == 2


def test_invalid_utf8_in_session_xml_rejects_its_interaction_only(tmp_path, db_path, cli):
    """One invalid byte in a snippet stopped the whole Session Track file: the interaction
    holding it is a reject with the line, the other interactions and the session are read."""
    path = tmp_path / "log.xml"
    data = _session_xml(long_or_bad=b"<snippet>caf\xe9</snippet>")
    path.write_bytes(data)
    total = _total(_ingest(cli, db_path, str(path)))
    assert total == {"rows_in": 4, "stored": 3, "rejected": 1, "already_present": 0}
    bad_at = next(i for i, line in enumerate(data.split(b"\n"), 1) if b"\xe9" in line)
    rejects = _rejects(db_path)
    assert [r[0] for r in rejects] == [bad_at] and "invalid UTF-8" in rejects[0][1]
    events = _events(db_path)
    assert set(events) == {"sessiontrack2014/3/1", "sessiontrack2014/3/3",
                           "sessiontrack2014/3/current"}  # fmt: skip
    assert events["sessiontrack2014/3/3"][2:4] == ("query 3", ["d3"])


def test_invalid_utf8_on_an_interaction_line_loses_nothing_unseen(tmp_path, db_path, cli):
    """The line that opens an interaction is unreadable: that interaction is a reject, and its
    results are not taken for the interaction before it."""
    path = tmp_path / "log.xml"
    data = _session_xml().replace(b'<interaction num="2"', b'<interaction num="2" x="\xff"')
    path.write_bytes(data)
    total = _total(_ingest(cli, db_path, str(path)))
    assert total["rejected"] >= 1 and total["stored"] == 3
    events = _events(db_path)
    assert events["sessiontrack2014/3/1"][3] == ["d1"]
    assert events["sessiontrack2014/3/3"][3] == ["d3"]


def test_analytics_rows_that_normalize_alike_are_one_summary(tmp_path, db_path, cli):
    """Two rows of one export whose queries normalize alike were stored under one key twice:
    they are one summary with the counts summed (the rates weighted by them)."""
    log = tmp_path / "export.csv"
    log.write_text(
        "query,searches,no_results,ctr,date\n"
        "Reset Password,100,10,50%,2026-01-02\n"
        "reset password!,300,30,10%,2026-01-02\n"
        "invoice,5,0,0.2,2026-01-02\n"
        "Café Menü,4,0,0,2026-01-02\n"
        "CAFÉ menü,6,1,0,2026-01-02\n"
    )
    result = _ingest(cli, db_path, str(log))
    total = _total(result)
    assert total == {"rows_in": 5, "stored": 3, "rejected": 0, "already_present": 2}
    assert json.loads(result.stdout)["files"][0]["merged"] == 2
    with open_store(db_path) as con:
        rows = con.execute(
            "SELECT norm_query, n_events, n_zero_results, n_no_click, spellings "
            "FROM search_summaries ORDER BY norm_query"
        ).fetchall()
    assert [r[0] for r in rows] == ["café menü", "invoice", "reset password"]
    # 100 + 300 searches, 10 + 30 without results; clicked 50 + 30: not clicked 40 + 240.
    assert rows[2][1:4] == (400, 40, 280)
    assert sorted(s["n"] for s in rows[2][4]) == [100, 300]
    assert rows[0][1:3] == (10, 1)  # non-ASCII text normalized as triage normalizes it
    # Read again: the day's summary is there, nothing is stored twice.
    again = _total(_ingest(cli, db_path, str(log.rename(tmp_path / "export2.csv"))))
    assert again["stored"] == 0


def _gzipped(path: Path) -> Path:
    out = path.with_name(path.name + ".gz")
    out.write_bytes(gzip.compress(path.read_bytes()))
    return out


def _read_log(con, path: Path, compression: str) -> list[tuple]:
    """``logformats.read`` of a Session Track file: its records (line, raw, err) by line."""
    from goldmine.ingest import batch, logformats

    batch.prepare(con)
    logformats.read(con, path, "session_xml", compression)
    return con.execute("SELECT line, raw, err FROM gm_raw ORDER BY line, raw").fetchall()


# Tags as the TREC files do not quite write them: several on a line, a tab before attributes,
# CRLF ends, entities, a result with no rank and one with two ids, a click with no time and one
# whose rank names no result, a DOCNO, blank lines, a search outside any session, a session
# with no number, a root whose name starts with "session", a midnight.
_ODD_SESSION_XML = (
    '<?xml version="1.0"?>\r\n<sessions2011>\r\n'
    '<interaction num="0" starttime="08:00:00"><query>before</query></interaction>\r\n'
    '<session num="1" starttime="23:59:00">\r\n\r\n'
    '<interaction\tnum="1" starttime="23:59:10">\r\n<query> fish &amp; chips </query>\r\n'
    '<results><result rank="2"><clueweb09id>b</clueweb09id></result>'
    '<result rank="1"><DOCNO>a</DOCNO><docid>a2</docid></result>\r\n'
    "<result><clueweb09id>c</clueweb09id></result></results>\r\n"
    '<clicked><click num="1"><rank>1</rank></click>'
    '<click num="2" starttime="00:00:05"><rank> 2 </rank><rank>9</rank></click></clicked>\r\n'
    "</interaction>\r\n"
    '<interaction num="2" starttime="00:00:30"><query>fish &lt;chips&gt;</query>'
    "</interaction>\r\n"
    '<currentquery starttime="00:01:00">\r\n<query>last</query>\r\n</currentquery>\r\n'
    "</session>\r\n<session>\r\n"
    '<interaction num="1"><query>no number</query><results><result rank="1">\r\n'
    "<clueweb09id>z</clueweb09id></result></results></interaction>\r\n"
    "</session>\r\n</sessions2011>\r\n"
)


@pytest.mark.parametrize("name", ["sessiontrack2012.xml", "odd.xml"])
def test_session_xml_read_whole_gives_the_line_readers_records(shared_dataset, tmp_path, name):
    """A plain Session Track file is read whole, a compressed one (or one with invalid UTF-8)
    line by line: on the real 2012 file and on one of odd layouts, both give the same records
    at the same lines."""
    if name == "odd.xml":
        path = tmp_path / name
        path.write_bytes(_ODD_SESSION_XML.encode())
    else:
        path = shared_dataset("datasets", "trec_session_track", name)
    with open_store(tmp_path / "whole.duckdb") as con:
        whole = _read_log(con, path, "none")
    with open_store(tmp_path / "lines.duckdb") as con:
        lines = _read_log(con, _gzipped(path if name == "odd.xml" else _copy(path, tmp_path)),
                          "gzip")  # fmt: skip
    assert whole == lines
    assert len(whole) == (297 if name != "odd.xml" else 5)


def _copy(path: Path, folder: Path) -> Path:
    out = folder / path.name
    out.write_bytes(path.read_bytes())
    return out


def _big_session_xml(path: Path, sessions: int) -> None:
    """A Session Track file of ``sessions`` sessions of three interactions, a tag a line (as the
    TREC files are), each query naming its session and interaction."""
    with path.open("w", encoding="utf-8") as out:
        out.write("<sessiontrack2012>\n")
        for s in range(1, sessions + 1):
            out.write(f'<session num="{s}" starttime="09:00:00">\n')
            for i in (1, 2, 3):
                out.write(f'<interaction num="{i}" starttime="09:0{i}:00">\n')
                out.write(f"<query>s{s} i{i}</query>\n<results>\n")
                for rank in (1, 2):
                    out.write(f'<result rank="{rank}">\n<url>http://e.org/{rank}</url>\n')
                    out.write(f"<clueweb09id>d{s}-{i}-{rank}</clueweb09id>\n</result>\n")
                out.write("</results>\n</interaction>\n")
            out.write("</session>\n")
        out.write("</sessiontrack2012>\n")


@pytest.mark.slow
@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_a_big_session_xml_file_puts_every_tag_in_its_own_search(tmp_path, compression):
    """The tags were placed by running maxima over a table written in parallel, whose order is
    not the file's: on a file of a few hundred thousand lines, thousands of searches took their
    session from the file's end and lost their query and results. A plain file is read whole,
    a gzipped one line by line: both readers are held to it."""
    path = tmp_path / "big.xml"
    _big_session_xml(path, 8000)  # 8,000 sessions: 368,002 lines
    if compression == "gzip":
        path = _gzipped(path)
    with open_store(tmp_path / "s.duckdb") as con:
        _read_log(con, path, compression)
        wrong = con.execute(
            """SELECT count(*), count(*) FILTER (WHERE
                   json_extract_string(raw, '$.query') IS DISTINCT FROM
                       's' || split_part(json_extract_string(raw, '$.event_id'), '/', 2)
                       || ' i' || split_part(json_extract_string(raw, '$.event_id'), '/', 3)
                   OR json_extract(raw, '$.result_ids')::VARCHAR[] IS DISTINCT FROM [
                       'd' || split_part(json_extract_string(raw, '$.event_id'), '/', 2) || '-'
                       || split_part(json_extract_string(raw, '$.event_id'), '/', 3) || '-1',
                       'd' || split_part(json_extract_string(raw, '$.event_id'), '/', 2) || '-'
                       || split_part(json_extract_string(raw, '$.event_id'), '/', 3) || '-2'])
               FROM gm_raw"""
        ).fetchall()[0]
    assert wrong == (24000, 0)


def test_a_click_csv_with_a_bom_quoted_fields_and_crlf_keeps_its_first_column(
    tmp_path, db_path, cli
):
    """A byte-order mark made the first column's name '\\ufeff"user_id"', so the users were lost;
    fully quoted fields (a comma and doubled quotes inside) are read as CSV."""
    log = tmp_path / "clicks.csv"
    log.write_bytes(
        b'\xef\xbb\xbf"user_id","query","timestamp","clicked_doc"\r\n'
        b'"u1","a, ""b""","2026-01-01T10:00:00","d1"\r\n'
        b'"u1","a, ""b""","2026-01-01T10:00:00","d2"\r\n'
        b"u2,plain,2026-01-01T10:05:00,\r\n"
    )
    total = _total(_ingest(cli, db_path, str(log)))
    assert total == {"rows_in": 2, "stored": 2, "rejected": 0, "already_present": 0}
    with open_store(db_path) as con:
        rows = con.execute(
            "SELECT user_id, query, clicked_ids FROM search_events ORDER BY query"
        ).fetchall()
    assert rows == [("u1", 'a, "b"', ["d1", "d2"]), ("u2", "plain", [])]


# A session with no attributes, one with attributes but no number, and clicks with attributes
# but no time and with none at all: as the TREC files sometimes leave them.
_UNNUMBERED_SESSION_XML = (
    "<sessiontrack2013>\n"
    '<session num="7">\n<interaction num="1" starttime="09:00:00">\n<query>numbered</query>\n'
    "</interaction>\n</session>\n"
    "<session>\n"
    '<interaction num="1" starttime="10:00:00">\n<query>bare one</query>\n<results>\n'
    '<result rank="1">\n<clueweb12id>d1</clueweb12id>\n</result>\n</results>\n<clicked>\n'
    '<click num="1">\n<rank>1</rank>\n</click>\n<click>\n<rank>1</rank>\n</click>\n'
    '<click num="3" starttime="10:00:09">\n<rank>1</rank>\n</click>\n'
    "</clicked>\n</interaction>\n"
    '<interaction num="2" starttime="10:01:00">\n<query>bare two</query>\n</interaction>\n'
    "</session>\n"
    '<session starttime="11:00:00">\n<interaction num="1" starttime="11:00:00">\n'
    "<query>no num</query>\n</interaction>\n</session>\n"
    "</sessiontrack2013>\n"
)


def _read_unnumbered(tmp_path: Path, compression: str) -> list[tuple]:
    """The records of _UNNUMBERED_SESSION_XML, a plain file read whole or a gzip copy by line."""
    path = tmp_path / "log.xml"
    path.write_text(_UNNUMBERED_SESSION_XML, encoding="utf-8")
    if compression == "gzip":
        path = _gzipped(path)
    with open_store(tmp_path / "s.duckdb") as con:
        return _read_log(con, path, compression)


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_a_session_without_a_number_is_a_session_named_by_its_place(tmp_path, compression):
    """A <session> with no attributes made all its searches rejects ("outside any <session>"),
    and one with attributes but no num put its searches under an empty session id: each is
    named by its place among the file's sessions (@2: the second), the same on every import.
    The whole-file reader (plain file) and the line reader (gzip) alike."""
    rows = _read_unnumbered(tmp_path, compression)
    assert [r[2] for r in rows] == [None] * 4
    got = {(j := json.loads(r[1]))["query"]: (j["session_id"], j["event_id"]) for r in rows}
    assert got == {
        "numbered": ("sessiontrack2013/7", "sessiontrack2013/7/1"),
        "bare one": ("sessiontrack2013/@2", "sessiontrack2013/@2/1"),
        "bare two": ("sessiontrack2013/@2", "sessiontrack2013/@2/2"),
        "no num": ("sessiontrack2013/@3", "sessiontrack2013/@3/1"),
    }


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_a_click_without_a_time_has_a_null_time(tmp_path, compression):
    """A <click> with attributes but no starttime gave the time "", one with no attributes gave
    null: both are null. The whole-file reader (plain file) and the line reader (gzip) alike."""
    rows = _read_unnumbered(tmp_path, compression)
    clicked = next(json.loads(r[1]) for r in rows if '"bare one"' in r[1])
    assert clicked["click_ranks"] == [1, 1, 1]
    assert clicked["click_times"] == [None, None, "10:00:09"]
