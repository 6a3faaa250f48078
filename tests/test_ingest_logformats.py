"""Search logs in the layouts IR people already have, read with no converter: the TREC Session
Track's XML (the real 2012 file), click-level exports (one row per click, AOL's layout) and
dates whose day/month order only the file, or --ts-format, can tell."""

from __future__ import annotations

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
        # The search log's stage trims a query, whichever file it came from.
        assert (query, shown, clicks) == (row["query"].strip(), row["results"], row["clicks"])
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
