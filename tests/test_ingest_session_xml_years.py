"""The Session Track's XML as each year wrote it, read whole (a plain file) and line by line (a
gzip copy) alike: 2013's and 2014's times in seconds from the session's start, a click that
names its document, the session's user, entities the files write (numeric ones, and 2012's
doubly escaped ampersands), a DOCTYPE line, and 2010's layout, which is not read."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from goldmine.store import open_store

# 2014's layout: times in seconds from the session's start, the session's user, interaction
# types, and clicks that name their document (the second at a rank the results do not show).
ST2014 = """<?xml version="1.0" encoding="UTF-8"?>
<sessiontrack2014>
<session num="1" userid="14" starttime="0">
<topic num="3"><desc>dogs</desc></topic>
<interaction num="1" starttime="10.0357" type="reformulate">
<query>dog food recall</query>
<results>
<result rank="1">
<url>http://x</url>
<clueweb12id>clueweb12-0000wb-00-00001</clueweb12id>
</result>
<result rank="2">
<url>http://y</url>
<clueweb12id>clueweb12-0000wb-00-00002</clueweb12id>
</result>
</results>
<clicked>
<click num="1" starttime="15.2" endtime="30.1">
<rank>1</rank>
<docno>clueweb12-0000wb-00-00001</docno>
</click>
<click num="2" starttime="40" endtime="52.5">
<rank>12</rank>
<docno>clueweb12-0000tw-00-00099</docno>
</click>
</clicked>
</interaction>
<interaction num="2" starttime="61.5" type="reformulate">
<query>merck &amp;amp; co. caf&#233; &#x263A;</query>
<results>
<result rank="1">
<clueweb12id>clueweb12-0000wb-00-00003</clueweb12id>
</result>
</results>
</interaction>
<currentquery starttime="95.5">
<query>dog food recall 2013</query>
</currentquery>
</session>
</sessiontrack2014>
"""


def _read(tmp_path: Path, text: str, compression: str) -> dict[str, dict]:
    """``logformats.read``'s records of ``text`` (plain: read whole; gzip: by line), by event
    id."""
    from goldmine.ingest import batch, logformats

    path = tmp_path / "st.xml"
    path.write_text(text, encoding="utf-8")
    if compression == "gzip":
        path = path.with_name("st.xml.gz")
        path.write_bytes(gzip.compress(text.encode()))
    with open_store(tmp_path / f"{compression}.duckdb") as con:
        batch.prepare(con)
        logformats.read(con, path, "session_xml", compression)
        rows = con.execute("SELECT raw, err FROM gm_raw ORDER BY line").fetchall()
    assert [err for _, err in rows] == [None] * len(rows)
    return {(r := json.loads(raw))["event_id"]: r for raw, _ in rows}


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_times_in_seconds_from_the_session_start_are_times(tmp_path, compression):
    """2013's and 2014's files time each search in seconds from its session's start: every one
    was a reject ("unparseable timestamp: 10.0357"). They are put on the first day of the year
    the root names, as a time of day is."""
    got = _read(tmp_path, ST2014, compression)
    assert {k: v["ts"] for k, v in got.items()} == {
        "sessiontrack2014/1/1": "2014-01-01T00:00:10.035700",
        "sessiontrack2014/1/2": "2014-01-01T00:01:01.500000",
        "sessiontrack2014/1/current": "2014-01-01T00:01:35.500000",
    }


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_a_click_names_its_document(tmp_path, compression):
    """A 2014 click names the document it opened (<docno>) beside its rank: a click at a rank
    the results do not show was lost, which left a clicked search looking unclicked."""
    first = _read(tmp_path, ST2014, compression)["sessiontrack2014/1/1"]
    assert first["clicked_ids"] == ["clueweb12-0000wb-00-00001", "clueweb12-0000tw-00-00099"]
    assert first["click_ranks"] == [1, 12]
    assert first["result_ids"] == ["clueweb12-0000wb-00-00001", "clueweb12-0000wb-00-00002"]


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_entities_are_read_as_the_user_typed_them(tmp_path, compression):
    """Numeric character references are read, and 2012's file escapes its ampersands twice
    (``merck &amp;amp; co.``): the user typed ``merck & co.``."""
    got = _read(tmp_path, ST2014, compression)
    assert got["sessiontrack2014/1/2"]["query"] == "merck & co. café ☺"


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_the_session_user_is_the_searches_user(tmp_path, compression):
    got = _read(tmp_path, ST2014, compression)
    assert {v.get("user_id") for v in got.values()} == {"14"}


def test_a_2014_file_is_imported_whole(tmp_path, db_path, cli):
    path = tmp_path / "sessiontrack2014.xml"
    path.write_text(ST2014, encoding="utf-8")
    result = cli("ingest", "searchlog", str(path), "--db", str(db_path), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["total"]["stored"] == 3
    with open_store(db_path) as con:
        rows = con.execute(
            "SELECT event_id, user_id, clicked_ids FROM search_events ORDER BY ts"
        ).fetchall()
    assert rows[0][1] == "14" and len(rows[0][2]) == 2


def test_a_doctype_line_does_not_hide_the_layout(tmp_path, db_path, cli):
    path = tmp_path / "log.xml"
    path.write_text(
        ST2014.replace(
            "<sessiontrack2014>", '<!DOCTYPE sessiontrack2014 SYSTEM "st.dtd">\n<sessiontrack2014>'
        ),
        encoding="utf-8",
    )
    result = cli("ingest", "searchlog", str(path), "--db", str(db_path), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["files"][0]["format"] == "session_xml"
    with open_store(db_path) as con:
        ids = {r[0] for r in con.execute("SELECT event_id FROM search_events").fetchall()}
    assert "sessiontrack2014/1/1" in ids


def test_the_2010_layout_forced_is_an_error_not_nothing(tmp_path, db_path, cli):
    """2010's sessions are query and reformulation pairs with no <interaction>: forced with
    --format session_xml they gave "rows in 0" and exit 0, four queries gone without a word."""
    path = tmp_path / "st2010.xml"
    path.write_text(
        '<sessiontrack2010><session num="1"><query>hoover dam</query>'
        '<reformulation type="specification">hoover dam tours</reformulation></session>'
        "</sessiontrack2010>\n",
        encoding="utf-8",
    )
    result = cli("ingest", "searchlog", str(path), "--format", "session_xml", "--db", str(db_path))
    assert result.returncode == 2
    assert "<interaction>" in result.stderr and "2010" in result.stderr
    assert not db_path.exists()
