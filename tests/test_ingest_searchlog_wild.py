"""Search logs as other tools write them, each case found by reading files shaped as the real
exports are: an undated export saved again, Elastic App Search's analytics, a warehouse click
table's ``rank`` column, the placeholders exports write for a blank query."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from goldmine.store import open_store


def _ingest(cli, db: Path, *args: str):
    return cli("ingest", "searchlog", *args, "--db", str(db), "--json")


def _total(result) -> dict:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["total"]


def _events(db: Path, columns: str, order: str = "ts") -> list[tuple]:
    """The stored search events' ``columns``, in ``order``."""
    with open_store(db) as con:
        return con.execute(f"SELECT {columns} FROM search_events ORDER BY {order}").fetchall()


def _summaries(db: Path) -> dict[str, tuple]:
    with open_store(db) as con:
        rows = con.execute(
            "SELECT norm_query, sum(n_events), sum(n_zero_results), sum(n_no_click) "
            "FROM search_summaries GROUP BY norm_query"
        ).fetchall()
    return {r[0]: tuple(r[1:]) for r in rows}


GSC = (
    "Top queries,Clicks,Impressions,CTR,Position\n"
    "reset password,120,1234,9.72%,3.4\nvpn,5,50,10%,7\n"
)


def test_an_undated_export_saved_again_is_not_counted_twice(tmp_path, db_path, cli):
    """Google Search Console's Queries.csv and Algolia's top searches carry no date: the same
    export re-saved (CRLF, rows in another order) was stored again, every count doubled."""
    first = tmp_path / "Queries.csv"
    first.write_text(GSC)
    assert _total(_ingest(cli, db_path, str(first)))["stored"] == 2
    lines = GSC.splitlines()
    again = tmp_path / "Queries (1).csv"
    again.write_bytes("\r\n".join([lines[0], lines[2], lines[1]]).encode() + b"\r\n")
    total = _total(_ingest(cli, db_path, str(again)))
    assert (total["stored"], total["already_present"]) == (0, 2)
    assert _summaries(db_path)["reset password"][0] == 1234
    # Next month's export, with other counts, is new traffic.
    later = tmp_path / "Queries-december.csv"
    later.write_text(GSC.replace("120,1234", "80,900"))
    assert _total(_ingest(cli, db_path, str(later)))["stored"] == 2
    assert _summaries(db_path)["reset password"][0] == 1234 + 900


def test_elastic_app_search_analytics_are_summaries(tmp_path, db_path, cli):
    """App Search's analytics API (``{"results": [{"term", "clicks", "queries"}]}``) was read as
    search events, its clicks as document ids, every row a reject; its CSV (``term,queries,
    clicks``) stored one search a row with the click count as a clicked document."""
    api = tmp_path / "as_queries.json"
    api.write_text(json.dumps({"results": [
        {"term": "everglade", "clicks": 14, "queries": 49},
        {"term": "", "clicks": 0, "queries": 9},
        {"term": "old parks", "clicks": 0, "queries": 3},
    ], "meta": {"page": {"current": 1}}}))  # fmt: skip
    total = _total(_ingest(cli, db_path, str(api)))
    assert (total["stored"], total["rejected"]) == (2, 1)
    assert _summaries(db_path) == {"everglade": (49, 0, 35), "old parks": (3, 0, 3)}
    other = tmp_path / "other.duckdb"
    export = tmp_path / "queries.csv"
    export.write_text("term,queries,clicks\nmount,7,2\nglacier,4,0\n")
    assert _total(_ingest(cli, other, str(export)))["stored"] == 2
    assert _summaries(other) == {"mount": (7, 0, 5), "glacier": (4, 0, 4)}


def test_a_click_tables_rank_column_is_the_click_rank(tmp_path, db_path, cli):
    """A warehouse click table names the rank clicked ``rank`` (or ``position``) beside the
    clicked document: it went to extra, and the clicks had no ranks."""
    log = tmp_path / "wh.csv"
    log.write_text(
        "user_id,query,ts,clicked_doc,rank\n"
        "u1,reset password,2026-11-30T14:02:00+01:00,doc-7,2\n"
        "u1,reset password,2026-11-30T14:02:00+01:00,doc-3,1\n"
    )
    assert _total(_ingest(cli, db_path, str(log)))["stored"] == 1
    with open_store(db_path) as con:
        clicked, extra = con.execute("SELECT clicked_ids, extra FROM search_events").fetchall()[0]
    assert dict(zip(clicked, json.loads(extra)["click_ranks"], strict=True)) == {
        "doc-7": 2,
        "doc-3": 1,
    }


def test_the_placeholders_exports_write_for_no_query_are_no_query(tmp_path, db_path, cli):
    """AOL writes ``-`` for a search with no query and Google Analytics ``(not set)``: both
    were stored as searches of those texts."""
    aol = tmp_path / "user-ct-test-collection-01.txt"
    aol.write_text(
        "AnonID\tQuery\tQueryTime\tItemRank\tClickURL\n"
        "142\t-\t2006-03-29 20:46:33\t\t\n"
        "142\tcheap flights\t2006-03-29 20:47:00\t1\thttp://www.expedia.com\n"
    )
    total = _total(_ingest(cli, db_path, str(aol)))
    assert (total["stored"], total["rejected"]) == (1, 1)
    ga = tmp_path / "Search_terms.csv"
    ga.write_text("Search term,Event count\n(not set),10\nrefund,4\n")
    total = _total(_ingest(cli, db_path, str(ga)))
    assert (total["stored"], total["rejected"]) == (1, 1)
    with open_store(db_path) as con:
        reasons = con.execute("SELECT DISTINCT reason FROM rejects").fetchall()
    assert reasons == [("missing query",)]


AOL_PART1 = (
    "AnonID\tQuery\tQueryTime\tItemRank\tClickURL\n"
    "217\tlottery\t2006-03-01 11:58:51\t1\thttp://www.calottery.com\n"
    "217\tcalifornia lottery\t2006-03-01 12:10:02\t\t\n"
)
AOL_PART2 = AOL_PART1 + (
    "217\tlottery\t2006-03-01 11:58:51\t3\thttp://www.lottery.com\n"
    "217\tcalifornia lottery\t2006-03-01 12:10:02\t2\thttp://www.calottery.com\n"
)


def test_an_overlapping_export_adds_its_new_clicks_to_stored_searches(tmp_path, db_path, cli):
    """A click log exported again with clicks that came in since: each search was already
    stored, so its new clicks were dropped, and 'california lottery' kept a false no-click."""
    first, second = tmp_path / "part1.txt", tmp_path / "part2.txt"
    first.write_text(AOL_PART1)
    second.write_text(AOL_PART2)
    assert _total(_ingest(cli, db_path, str(first)))["stored"] == 2
    result = _ingest(cli, db_path, str(second))
    total = _total(result)
    assert (total["stored"], total["already_present"]) == (0, 2)
    assert json.loads(result.stdout)["files"][0]["searches_given_clicks"] == 2
    with open_store(db_path) as con:
        rows = dict(con.execute("SELECT query, clicked_ids FROM search_events").fetchall())
    assert sorted(rows["lottery"]) == ["http://www.calottery.com", "http://www.lottery.com"]
    assert rows["california lottery"] == ["http://www.calottery.com"]
    # The same file again changes nothing.
    again = _ingest(cli, db_path, str(second))
    assert json.loads(again.stdout)["files"][0].get("searches_given_clicks", 0) == 0


SEARCHES = (
    '{"event_id": "s1", "ts": "2026-11-30T10:00:00Z", "user_id": "u1", "query": "reset password",'
    ' "result_ids": ["d1", "d2", "d3"], "clicked_ids": []}\n'
    '{"event_id": "s2", "ts": "2026-11-30T10:05:00Z", "user_id": "u2", "query": "refund policy",'
    ' "result_ids": ["d4", "d5"], "clicked_ids": ["d4"]}\n'
)


def test_clicks_exported_apart_join_their_stored_searches(tmp_path, db_path, cli):
    """Clicks that come in a file of their own, each naming its search's id (Coveo's clicks by
    searchQueryUid, Algolia Insights' click events by queryID): "no query field", exit 2, and
    every search kept a false no-click. Each click joins its stored search; a click for a search
    the store does not hold is a reject that says so."""
    searches, clicks = tmp_path / "searches.jsonl", tmp_path / "clicks.jsonl"
    searches.write_text(SEARCHES)
    clicks.write_text(
        '{"event_id": "s1", "ts": "2026-11-30T10:00:09Z", "clicked_ids": ["d2"]}\n'
        '{"event_id": "s1", "ts": "2026-11-30T10:00:30Z", "clicked_ids": ["d3", "d2"]}\n'
        '{"event_id": "s2", "ts": "2026-11-30T10:05:20Z", "clicked_ids": ["d5"]}\n'
        '{"event_id": "s9", "ts": "2026-11-30T10:07:00Z", "clicked_ids": ["d1"]}\n'
    )
    assert _total(_ingest(cli, db_path, str(searches)))["stored"] == 2
    result = _ingest(cli, db_path, str(clicks))
    total = _total(result)
    assert (total["stored"], total["rejected"], total["already_present"]) == (0, 1, 3)
    assert json.loads(result.stdout)["files"][0]["searches_given_clicks"] == 2
    assert _events(db_path, "event_id, clicked_ids") == [
        ("s1", ["d2", "d3"]),
        ("s2", ["d4", "d5"]),
    ]
    with open_store(db_path) as con:
        reasons = con.execute("SELECT reason FROM rejects").fetchall()
    assert reasons == [("a click for a search the store does not hold: s9",)]
    # The same file again changes nothing.
    again = _ingest(cli, db_path, str(clicks))
    assert json.loads(again.stdout)["files"][0].get("searches_given_clicks", 0) == 0
    assert _events(db_path, "clicked_ids")[0] == (["d2", "d3"],)


def test_a_coveo_click_export_joins_its_searches(tmp_path, db_path, cli):
    """Coveo's usage analytics export clicks a row each, named by the search's searchQueryUid
    and the document's URI."""
    searches, clicks = tmp_path / "searches.jsonl", tmp_path / "clicks.csv"
    searches.write_text(SEARCHES)
    clicks.write_text(
        "searchQueryUid,documentUri,documentPosition,datetime\n"
        "s1,d3,3,2026-11-30 10:00:12\n"
        "s1,d1,1,2026-11-30 10:00:40\n"
    )
    _total(_ingest(cli, db_path, str(searches)))
    result = _ingest(cli, db_path, str(clicks))
    assert json.loads(result.stdout)["files"][0]["searches_given_clicks"] == 1
    assert _events(db_path, "clicked_ids")[0] == (["d3", "d1"],)


def test_a_search_exported_again_with_new_clicks_gains_them(tmp_path, db_path, cli):
    """A search log's event exported again (the same id, query and time) with clicks that came
    in since: its clicks were dropped as already present."""
    searches, later = tmp_path / "searches.jsonl", tmp_path / "later.jsonl"
    searches.write_text(SEARCHES)
    later.write_text(
        '{"event_id": "s1", "ts": "2026-11-30T10:00:00Z", "user_id": "u1",'
        ' "query": "reset password", "clicked_ids": ["d2"]}\n'
    )
    _total(_ingest(cli, db_path, str(searches)))
    result = _ingest(cli, db_path, str(later))
    assert _total(result)["already_present"] == 1
    assert json.loads(result.stdout)["files"][0]["searches_given_clicks"] == 1
    assert _events(db_path, "clicked_ids")[0] == (["d2"],)


def test_the_ts_format_hint_fits_the_dates_and_a_wrong_one_is_named(tmp_path, db_path, cli):
    """The error suggested '%d/%m/%Y %H:%M' for dates with no time, which fails the same way
    when pasted; and a --ts-format that matches nothing got the same "name the layout" line."""
    export = tmp_path / "an_amb.csv"
    export.write_text("date,query,searches\n03/04/2026,foo,10\n05/06/2026,bar,5\n")
    result = _ingest(cli, db_path, str(export))
    assert result.returncode == 2
    assert "--ts-format '%d/%m/%Y'" in result.stderr and "%H" not in result.stderr
    dashed = tmp_path / "dashed.csv"
    dashed.write_text("date,query,searches\n03-04-2026 10:00,foo,10\n")
    assert "--ts-format '%d-%m-%Y %H:%M'" in _ingest(cli, db_path, str(dashed)).stderr
    wrong = _ingest(cli, db_path, str(export), "--ts-format", "%Y-%m-%d")
    assert wrong.returncode == 2
    assert "does not match" in wrong.stderr and "%Y-%m-%d" in wrong.stderr
    assert _total(_ingest(cli, db_path, str(export), "--ts-format", "%d/%m/%Y"))["stored"] == 2


def test_the_ts_format_hint_reads_a_twelve_hour_clock():
    from goldmine.ingest.searchlog import day_first_layout

    assert day_first_layout("03/04/2026 10:00 AM") == "%d/%m/%Y %I:%M %p"


def test_map_names_an_aggregated_exports_columns(tmp_path, db_path, cli):
    """An export whose header is in another language: --map query= alone read each row as one
    search (its count lost in extra), and --map count= was refused as an unknown field."""
    export = tmp_path / "de.csv"
    export.write_bytes(
        "\ufeffSuchbegriff;Suchanfragen;Klicks;CTR\nrechnung herunterladen;1.234;617;50,0 %\n"
        "passwort;80;0;0 %\n".encode()
    )
    result = _ingest(cli, db_path, str(export), "--map", "query=Suchbegriff",
                     "--map", "count=Suchanfragen", "--map", "clicks=Klicks")  # fmt: skip
    assert _total(result)["stored"] == 2
    assert json.loads(result.stdout)["files"][0]["format"] == "analytics"
    assert _summaries(db_path) == {
        "rechnung herunterladen": (1234, 0, 617),
        "passwort": (80, 0, 80),
    }


@pytest.mark.parametrize(
    "kind, name, text",
    [
        ("searchlog", "empty.csv", ""),
        ("searchlog", "hdr.csv", "query,timestamp,user_id\n"),
        ("searchlog", "aol.txt", "AnonID\tQuery\tQueryTime\tItemRank\tClickURL\n"),
        ("searchlog", "Queries.csv", "Top queries,Clicks,Impressions,CTR,Position\n"),
        ("corpus", "psgs_w100.tsv", "id\ttext\ttitle\n"),
        ("corpus", "empty.tsv", ""),
    ],
)
def test_a_file_with_no_rows_stores_nothing_and_says_so(tmp_path, db_path, cli, kind, name, text):
    """A header-only or empty file gave "rows in 0", exit 0, and a store holding one empty batch,
    where an import whose every row is rejected exits 4 for a script not to go on with an empty
    week."""
    path = tmp_path / name
    path.write_text(text)
    result = cli("ingest", kind, str(path), "--db", str(db_path))
    assert result.returncode == 4, (result.stdout, result.stderr)
    assert "no rows" in result.stderr and "--allow-empty" in result.stderr
    assert not db_path.exists()
    allowed = cli("ingest", kind, str(path), "--db", str(db_path), "--allow-empty")
    assert allowed.returncode == 0, allowed.stderr


def test_a_comma_decimal_rate_in_a_comma_separated_export_is_read(tmp_path, db_path, cli):
    """A Sheets export in a German locale quotes its rates (``"12,5 %"``) in a comma-separated
    file: every row was a reject ("click-through rate is not a rate"). A percentage with one or
    two decimals after a comma is no thousands separator."""
    export = tmp_path / "ctr_comma.csv"
    export.write_text('query,searches,ctr\nfoo,200,"12,5 %"\nbar,100,"7,25%"\n')
    assert _total(_ingest(cli, db_path, str(export)))["stored"] == 2
    assert _summaries(db_path) == {"foo": (200, 0, 175), "bar": (100, 0, 93)}


def test_an_event_log_with_a_count_like_key_stays_an_event_log(tmp_path, db_path, cli):
    """Records of a query, a time under another name (time, created_at) and a key an export's
    count goes by (impressions, volume) were read as an aggregated export: the events lost."""
    log = tmp_path / "ev.jsonl"
    log.write_text(
        '{"query": "reset password", "time": "2024-03-01T10:00:00", "impressions": ["d1", "d2"],'
        ' "clicks": ["d1"]}\n'
        '{"query": "vpn", "created_at": "2024-03-01T10:05:00", "volume": 3}\n'
    )
    assert _total(_ingest(cli, db_path, str(log)))["stored"] == 2
    with open_store(db_path) as con:
        assert con.execute("SELECT count(*) FROM search_events").fetchall() == [(2,)]
        assert con.execute("SELECT count(*) FROM search_summaries").fetchall() == [(0,)]
    csv_log = tmp_path / "ev.csv"
    csv_log.write_text("created_at,search_text,hits,count\n2024-03-01T10:00:00,vpn,3,1\n")
    other = tmp_path / "other.duckdb"
    result = _ingest(cli, other, str(csv_log), "--map", "query=search_text")
    assert json.loads(result.stdout)["files"][0]["format"] != "analytics"


def test_map_names_an_exports_date_column(tmp_path, db_path, cli):
    export = tmp_path / "de3.csv"
    export.write_text(
        "Datum;Suchbegriff;Suchanfragen\n2026-11-30;rechnung;10\n2026-12-01;rechnung;5\n"
    )
    result = _ingest(cli, db_path, str(export), "--map", "query=Suchbegriff",
                     "--map", "count=Suchanfragen", "--map", "date=Datum")  # fmt: skip
    assert _total(result)["stored"] == 2
    with open_store(db_path) as con:
        days = con.execute("SELECT day FROM search_summaries ORDER BY day").fetchall()
    assert [str(d[0]) for d in days] == ["2026-11-30", "2026-12-01"]


def test_kibanas_dash_for_an_empty_cell_is_no_value(tmp_path, db_path, cli):
    """Kibana's Discover CSV writes "-" where a document has no value: every "-" in the
    clicks column was a click on a document called "-" (no_click 0), in the results column a
    result, and in the user column one user shared by all."""
    log = tmp_path / "discover.csv"
    log.write_text(
        "timestamp,user_id,session_id,query,result_ids,clicked_ids\n"
        "2026-11-23T08:00:00Z,u1,s1,gift card balance,-,-\n"
        "2026-11-23T08:01:00Z,-,-,return policy,d1|d2,-\n"
        "2026-11-23T08:02:00Z,-,-,shipping times,d3,d3\n"
    )
    assert _total(_ingest(cli, db_path, str(log)))["stored"] == 3
    got = _events(db_path, "query, user_id, session_id, result_ids, clicked_ids")
    assert got == [
        ("gift card balance", "u1", "s1", None, None),
        ("return policy", None, None, ["d1", "d2"], None),
        ("shipping times", None, None, ["d3"], ["d3"]),
    ]


@pytest.mark.parametrize(
    ("written", "read"),
    [("Nov 23, 2026 8:37:51 AM", "2026-11-23 08:37:51"),  # Google's, Adobe's reports
     ("Nov 23, 2026 @ 03:33:17.673", "2026-11-23 03:33:17.673"),  # Kibana's Discover CSV
     ("2026-11-23 00:10:47.133 -0800", "2026-11-23 08:10:47.133"),  # Snowflake TIMESTAMP_TZ
     ("23 Nov 2026 08:37:51", "2026-11-23 08:37:51"),
     ("1795421150916000", "2026-11-23 08:05:50.916")],  # GA4's event_timestamp, microseconds
)  # fmt: skip
def test_the_times_exports_write_are_read(tmp_path, db_path, cli, written, read):
    """Each of these rejected every row ("unparseable timestamp"), exit 4."""
    log = tmp_path / "export.csv"
    log.write_text(f'timestamp,query\n"{written}",gift card balance\n')
    assert _total(_ingest(cli, db_path, str(log)))["stored"] == 1
    ((ts,),) = _events(db_path, "ts::VARCHAR")
    assert ts == read


def test_a_file_of_unread_times_names_ts_format(tmp_path, db_path, cli):
    """Every row rejected for its time said to see the rejects, never how to name the layout."""
    log = tmp_path / "export.csv"
    log.write_text("timestamp,query\n2026.11.23 08h37,gift card\n2026.11.23 09h01,returns\n")
    result = _ingest(cli, db_path, str(log))
    assert result.returncode == 4
    assert "--ts-format" in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("column", "user", "session"),
    [("event_timestamp", "user_pseudo_id", "ga_session_id"),  # GA4's BigQuery export
     ("EVENT_TS", "ANONYMOUS_ID", "SESSION_ID"),  # a warehouse table, Segment's ids
     ("received_at", "anonymous_id", "session_id"),
     ("event_time", "device_id", "session_id")],  # Amplitude
)  # fmt: skip
def test_the_time_user_and_session_columns_of_analytics_tables_are_read(
    tmp_path, db_path, cli, column, user, session
):
    """A time column under a name not known was left out without a word: every search stored
    without a time (reformulations lost), users and sessions with it."""
    log = tmp_path / "events.csv"
    rows = "2026-11-23T08:00:00Z,u1,s1,gift card\n2026-11-23T08:00:20Z,u1,s1,gift cards\n"
    log.write_text(f"{column},{user},{session},search_term\n{rows}")
    assert _total(_ingest(cli, db_path, str(log)))["stored"] == 2
    got = _events(db_path, "ts IS NOT NULL, user_id, session_id")
    # GA4's ga_session_id is its user's: the session is the two together
    sid = "u1:s1" if session == "ga_session_id" else "s1"
    assert got == [(True, "u1", sid)] * 2


def test_ga4_sessions_of_two_users_started_in_the_same_second_are_two(tmp_path, db_path, cli):
    """GA4's ga_session_id is the second its session started, unique only with its user's
    user_pseudo_id: two visitors who began in the same second were one session, one's search
    read as the other's reformulation."""
    log = tmp_path / "bq-results.csv"
    log.write_text(
        "event_timestamp,event_name,user_id,user_pseudo_id,ga_session_id,search_term\n"
        "1795420801000000,view_search_results,,1234567.111,1795420000,refund policy\n"
        "1795420820000000,view_search_results,,7654321.222,1795420000,shipping to canada\n"
        "1795420840000000,view_search_results,alice,1234567.111,1795420000,refund policies\n"
    )
    assert _total(_ingest(cli, db_path, str(log)))["stored"] == 3
    got = _events(db_path, "query, user_id, session_id")
    # the session is the pseudonymous id's, the same after the visitor signs in
    assert got == [
        ("refund policy", "1234567.111", "1234567.111:1795420000"),
        ("shipping to canada", "7654321.222", "7654321.222:1795420000"),
        ("refund policies", "alice", "1234567.111:1795420000"),
    ]


def test_a_time_without_an_offset_after_one_with_is_read_as_written(tmp_path, db_path, cli):
    """DuckDB's try_strptime, given layouts with and without %z, read a row without an offset
    at the offset of the row before it (8:37 AM stored as 03:07)."""
    log = tmp_path / "mixed.csv"
    log.write_text(
        'timestamp,query\n2026-11-23 00:10:47 +0530,a\n"Nov 23, 2026 8:37:51 AM",b\n'
        "2026-11-23 00:10:47 -0800,c\n23 Nov 2026 08:37:51,d\n"
    )
    assert _total(_ingest(cli, db_path, str(log)))["stored"] == 4
    got = _events(db_path, "query, ts::VARCHAR", "query")
    assert got == [("a", "2026-11-22 18:40:47"), ("b", "2026-11-23 08:37:51"),
                   ("c", "2026-11-23 08:10:47"), ("d", "2026-11-23 08:37:51")]  # fmt: skip


@pytest.mark.parametrize("gz", [False, True])
def test_json_lines_in_a_json_file_are_read_as_json_lines(tmp_path, db_path, cli, gz):
    """Elasticsearch's slow log, BigQuery's and Amplitude's exports write JSON lines under a
    .json name: "cannot read as json: Malformed JSON at byte 1138", or for Amplitude's
    .json.gz, "compressed .json documents are not supported; use JSONL"."""
    import gzip

    lines = "".join(
        json.dumps({"ts": f"2026-11-23T08:0{i}:00Z", "query": q}) + "\n"
        for i, q in enumerate(["gift card", "returns", "shipping"])
    )
    path = tmp_path / ("export.json.gz" if gz else "export.json")
    path.write_bytes(gzip.compress(lines.encode()) if gz else lines.encode())
    assert _total(_ingest(cli, db_path, str(path)))["stored"] == 3


@pytest.mark.parametrize(("header", "value"), [("results", "0"), ("Results", "12"), ("hits", "3")])
def test_a_results_column_of_counts_is_a_count(tmp_path, db_path, cli, header, value):
    """An export's "Results" or "hits" column holds how many results a search found: "0" was a
    result called "0" (one result, so zero-result searches were none)."""
    log = tmp_path / "searches.csv"
    log.write_text(
        f"timestamp,query,{header}\n2026-11-23T08:00:00Z,gift card,{value}\n"
        "2026-11-23T08:05:00Z,returns,0\n"
    )
    assert _total(_ingest(cli, db_path, str(log)))["stored"] == 2
    got = _events(db_path, "query, result_ids, num_results")
    assert got == [("gift card", None, int(value)), ("returns", None, 0)]


def test_json_hits_as_a_number_are_a_count(tmp_path, db_path, cli):
    """A log's "hits": 9 was a reject ("result_ids is a number")."""
    log = tmp_path / "log.jsonl"
    rows = [{"ts": "2026-11-23T08:00:00Z", "query": "gift card", "hits": 9},
            {"ts": "2026-11-23T08:01:00Z", "query": "returns", "hits": 0}]  # fmt: skip
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert _total(_ingest(cli, db_path, str(log)))["stored"] == 2
    got = _events(db_path, "result_ids, num_results")
    assert got == [(None, 9), (None, 0)]


@pytest.mark.parametrize(
    ("name", "text", "gz"),
    [("part-00000", '{"ts": "2026-11-23T08:00:00Z", "query": "gift card"}\n', True),
     ("export", "ts,query\n2026-11-23T08:00:00Z,gift card\n", True),
     ("searches.txt", "ts;query\n2026-11-23T08:00:00Z;gift card\n", False),
     ("events.log", '{"ts": "2026-11-23T08:00:00Z", "query": "gift card"}\n', False)],
)  # fmt: skip
def test_a_named_file_with_no_telling_suffix_is_read_by_content(
    tmp_path, db_path, cli, name, text, gz
):
    """A Spark or Hive part file, a gzip saved without .gz: "unknown file format", though the
    compression was told by its magic number."""
    import gzip

    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    assert _total(_ingest(cli, db_path, str(path)))["stored"] == 1


def test_a_folders_files_with_no_telling_suffix_are_left_out(tmp_path, db_path, cli):
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "day1.jsonl").write_text('{"ts": "2026-11-23T08:00:00Z", "query": "gift card"}\n')
    (folder / "README").write_text("Exported by the team, one file a day, see the wiki\n")
    assert _total(_ingest(cli, db_path, str(folder)))["stored"] == 1


def test_camel_case_columns_are_the_fields_they_spell(tmp_path, db_path, cli):
    """A JavaScript tracker's events (numResults, clickedIds, searchQuery): the counts and
    clicks were kept as extras, without a word, and every search read as a search with no
    results count and no click."""
    rows = [
        {"eventId": "e1", "searchQuery": "gift card", "timestamp": "2026-11-23T08:00:00Z",
         "numResults": 0, "clickedIds": []},
        {"eventId": "e2", "searchQuery": "returns", "timestamp": "2026-11-23T08:01:00Z",
         "estimatedTotalHits": 124, "clickedIds": ["d9"]},
    ]  # fmt: skip
    log = tmp_path / "events.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert _total(_ingest(cli, db_path, str(log)))["stored"] == 2
    got = _events(db_path, "event_id, query, num_results, clicked_ids")
    assert got == [("e1", "gift card", 0, []), ("e2", "returns", 124, ["d9"])]


def test_algolias_no_results_export_is_searches_that_found_nothing(tmp_path, db_path, cli):
    """Algolia's /2/searches/noResults ({"search", "count", "withFilterCount"}) was read as
    searches that found something: 0 zero-result searches of 15."""
    export = tmp_path / "noResults.json"
    export.write_text(json.dumps({"searches": [
        {"search": "gift crad", "count": 12, "withFilterCount": 0},
        {"search": "retruns", "count": 3, "withFilterCount": 1}]}))  # fmt: skip
    assert _total(_ingest(cli, db_path, str(export)))["stored"] == 2
    assert _summaries(db_path) == {"gift crad": (12, 12, 0), "retruns": (3, 3, 0)}


@pytest.mark.parametrize("name", ["nohits.jsonl", "nohits.csv"])
def test_map_zero_to_the_count_reads_a_no_hits_export(tmp_path, db_path, cli, name):
    """Typesense's nohits_queries (q, count): every search counted found nothing, which only
    the user can say (--map zero=count); for JSON it was refused ("--map it for a CSV")."""
    export = tmp_path / name
    if name.endswith(".jsonl"):
        export.write_text('{"q": "gift crad", "count": 12}\n{"q": "retruns", "count": 3}\n')
    else:
        export.write_text("q,count\ngift crad,12\nretruns,3\n")
    result = _ingest(cli, db_path, str(export), "--map", "zero=count")
    assert _total(result)["stored"] == 2
    assert _summaries(db_path) == {"gift crad": (12, 12, 0), "retruns": (3, 3, 0)}


def test_a_dash_for_results_is_no_value_not_a_search_that_found_nothing(tmp_path, db_path, cli):
    log = tmp_path / "discover.csv"
    log.write_text("timestamp,user,query,result_ids\n2026-11-23T08:00:00Z,u1,reset password,-\n")
    assert _total(_ingest(cli, db_path, str(log)))["stored"] == 1
    got = _events(db_path, "result_ids, num_results")
    assert got == [(None, None)]


def test_a_one_line_json_document_with_no_suffix_is_a_document(tmp_path, db_path, cli):
    """A minified {"searches": [...]} saved as .txt was read as one JSON line."""
    export = tmp_path / "top_searches.txt"
    rows = [{"search": "gift card", "count": 12, "nbHits": 0},
            {"search": "returns", "count": 3, "nbHits": 8}]  # fmt: skip
    export.write_text(json.dumps({"searches": rows}))
    assert _total(_ingest(cli, db_path, str(export)))["stored"] == 2


GA4_EVENT = {
    "event_date": "20261123", "event_timestamp": "1795420801000000",
    "event_name": "view_search_results",
    "event_params": [
        {"key": "ga_session_id", "value": {"string_value": None, "int_value": "1795420000"}},
        {"key": "search_term", "value": {"string_value": "refund policy", "int_value": None}},
    ],
    "user_id": None, "user_pseudo_id": "1234567.111", "platform": "WEB", "items": [],
}  # fmt: skip
ES8_SLOWLOG = {
    "@timestamp": "2026-11-23T12:42:37.255Z", "elasticsearch.slowlog.id": None,
    "elasticsearch.slowlog.message": "[kb][0]",
    "elasticsearch.slowlog.source": '{"query":{"match":{"body":{"query":"refund policy"}}}}',
    "elasticsearch.slowlog.took_millis": 747, "elasticsearch.slowlog.total_hits": "12 hits",
    "log.logger": "index.search.slowlog.query",
}  # fmt: skip
ES7_SLOWLOG = {
    "type": "index_search_slowlog", "timestamp": "2026-11-23T11:59:37,786+02:00",
    "message": "[kb][0]", "took": "78.4ms", "took_millis": "78", "total_hits": "0 hits",
    "search_type": "QUERY_THEN_FETCH", "total_shards": "1",
    "source": '{"query":{"match":{"body":"reset password"}}}', "id": "",
}  # fmt: skip


def test_search_console_s_pages_csv_points_to_its_queries_csv(tmp_path, db_path, cli):
    """Pages.csv, beside Queries.csv in Search Console's export, was taken for an export
    whose query column --map should name: "--map query=COLUMN --map count=Impressions"."""
    pages = tmp_path / "Pages.csv"
    pages.write_text("Top pages,Clicks,Impressions,CTR,Position\nhttps://x.example/a,1,10,10%,3\n")
    result = _ingest(cli, db_path, str(pages))
    assert result.returncode == 2
    assert "rows are pages, not queries" in result.stderr and "Queries.csv" in result.stderr


@pytest.mark.parametrize(
    ("record", "said"),
    [(ES8_SLOWLOG, "search slow log"), (ES7_SLOWLOG, "search slow log")],
)  # fmt: skip
def test_an_engine_s_or_analytics_layout_that_holds_no_query_column_is_named(
    tmp_path, db_path, cli, record, said
):
    """Elastic's slow log (the words inside the DSL of source) was refused as any file without
    a query column, "name it with --map query=COLUMN": a --map of its source stored each
    search's DSL as its query."""
    log = tmp_path / "events_20261123.json"
    log.write_text(json.dumps(record) + "\n" + json.dumps(record) + "\n")
    result = _ingest(cli, db_path, str(log))
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert said in line and "--map query=" in line, line


def test_a_query_that_is_a_search_request_s_dsl_is_a_reject(tmp_path, db_path, cli):
    """A query column holding the search's DSL (UBI's "query" where its user_query is empty, a
    slow log's source named with --map) was stored as the query: triage clustered JSON."""
    dsl = json.dumps({"query": {"match": {"body": {"query": "refund policy"}}}})
    rows = [
        {"query_id": "q1", "user_query": "refund policy", "query": dsl,
         "timestamp": "2026-11-23T08:00:00Z"},
        {"query_id": "q2", "user_query": None, "query": f"  {dsl} ",
         "timestamp": "2026-11-23T08:01:00Z"},
        {"query_id": "q3", "user_query": "{curly} braces", "timestamp": "2026-11-23T08:02:00Z"},
    ]  # fmt: skip
    log = tmp_path / "ubi_queries.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    total = _total(_ingest(cli, db_path, str(log)))
    assert (total["stored"], total["rejected"]) == (2, 1)
    with open_store(db_path) as con:
        (reason,) = con.execute("SELECT reason FROM rejects").fetchone()
    assert reason == "wrong type: query is a search request's DSL (a JSON object), not its words"


@pytest.mark.parametrize("suffix", [".json", ".parquet"])
def test_ga4_s_export_as_bigquery_writes_it_is_read(tmp_path, db_path, cli, suffix):
    """GA4's BigQuery export (JSON lines, or Parquet as an export to Cloud Storage writes it)
    holds every event, each search's term inside event_params: it was refused (no query
    field). Its view_search_results events are the searches, its session its user's."""
    page_view = {
        **GA4_EVENT,
        "event_name": "page_view",
        "event_params": GA4_EVENT["event_params"][:1],
    }
    later = {
        **GA4_EVENT,
        "event_timestamp": "1795420840000000",
        "user_id": "alice",
        "event_params": [
            GA4_EVENT["event_params"][0],
            {"key": "search_term", "value": {"string_value": "refund policies"}},
        ],
    }
    other = {**GA4_EVENT, "user_pseudo_id": "7654321.222"}  # same second, another visitor
    events = [page_view, GA4_EVENT, later, other]
    log = tmp_path / f"events_20261123{suffix}"
    if suffix == ".json":
        log.write_text("".join(json.dumps(e) + "\n" for e in events))
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        for e in events:  # Parquet holds INT64 as numbers, not JSON's strings
            e["event_timestamp"] = int(e["event_timestamp"])
        pq.write_table(pa.Table.from_pylist(events), log)
    result = _ingest(cli, db_path, str(log))
    assert result.returncode == 0, result.stderr
    (file,) = json.loads(result.stdout)["files"]
    assert (file["rows_in"], file["stored"], file["events_not_searches"]) == (3, 3, 1)
    got = _events(db_path, "ts::VARCHAR, query, user_id, session_id", "ts, user_id")
    assert got == [
        ("2026-11-23 08:00:01", "refund policy", "1234567.111", "1234567.111:1795420000"),
        ("2026-11-23 08:00:01", "refund policy", "7654321.222", "7654321.222:1795420000"),
        ("2026-11-23 08:00:40", "refund policies", "alice", "1234567.111:1795420000"),
    ]
    again = _ingest(cli, db_path, str(log))
    assert json.loads(again.stdout)["total"]["stored"] == 0


def test_a_ga4_export_without_a_search_event_says_so(tmp_path, db_path, cli):
    log = tmp_path / "events_20261123.json"
    page_view = {**GA4_EVENT, "event_name": "page_view"}
    log.write_text(json.dumps(page_view) + "\n" + json.dumps(page_view) + "\n")
    result = _ingest(cli, db_path, str(log))
    assert result.returncode == 2
    assert "none of its 2 events is a search" in result.stderr, result.stderr


def test_vespa_s_access_log_is_read(tmp_path, db_path, cli):
    """Vespa's JSON access log gives each search's query in its uri and its hits in
    search.totalhits: it was refused (no query field; found agent, code, …)."""

    def request(time: float, uri: str, hits: int | None) -> str:
        record = {"ip": "172.17.0.2", "time": time, "duration": 0.011, "responsesize": 2403,
                  "code": 200, "method": "GET", "uri": uri, "version": "HTTP/1.1",
                  "agent": "python-requests/2.31", "host": "localhost:8080", "scheme": "http",
                  "localport": 8080}  # fmt: skip
        if hits is not None:
            record["search"] = {"totalhits": hits, "hits": min(hits, 10)}
        return json.dumps(record) + "\n"

    log = tmp_path / "JsonAccessLog.default.20261123"
    log.write_text(
        request(1795420800.123, "/search/?query=refund+policy&hits=10", 12)
        + request(
            1795420860.5,
            "/search/?yql=select%20*%20from%20doc%20where%20userQuery()"
            "&query=cancel%20subscription",
            0,
        )
        + request(1795420870.0, "/search/?query=refund+policy&offset=10", 12)
        + request(1795420880.0, "/document/v1/ns/doc/docid/1", None)
        + request(1795420890.0, "/search/?yql=select%20*%20from%20doc%20where%20true", 5000)
    )
    result = _ingest(cli, db_path, str(log))
    assert result.returncode == 0, result.stderr
    (file,) = json.loads(result.stdout)["files"]
    assert (file["rows_in"], file["stored"], file["events_not_searches"]) == (2, 2, 3)
    got = _events(db_path, "ts::VARCHAR, query, num_results")
    assert got == [("2026-11-23 08:00:00.123", "refund policy", 12),
                   ("2026-11-23 08:01:00.5", "cancel subscription", 0)]  # fmt: skip


def test_an_application_s_request_log_naming_its_query_is_read_as_it_is(tmp_path, db_path, cli):
    """A log with Vespa's request fields (uri, time, code, method) and a query column of its own
    is not Vespa's access log: its q is the query."""
    log = tmp_path / "requests.jsonl"
    log.write_text(json.dumps({"uri": "/api/find", "time": 1795420800, "code": 200,
                               "method": "POST", "q": "refund policy"}) + "\n")  # fmt: skip
    assert _total(_ingest(cli, db_path, str(log)))["stored"] == 1
    assert _events(db_path, "query") == [("refund policy",)]
