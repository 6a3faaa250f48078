"""The search-log readers' fast paths give the records of their plain ones, byte for byte: a
plain Session Track file is cut into blocks by numpy (``logsplit.blocks``) and must give the
line reader's records (a gzip copy takes the line reader), on layouts the TREC files never
quite use; a click-level log is held the same way to its reader of a table of lines."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import duckdb
import pytest

from goldmine.errors import InputError
from goldmine.ingest import batch, logformats, logsplit

import helpers


def _records(path: Path, fmt: str, compression: str = "none") -> list[tuple]:
    con = duckdb.connect()
    batch.prepare(con)
    logformats.read(con, path, fmt, compression)
    rows = con.execute("SELECT line, raw, err FROM gm_raw ORDER BY line, raw, err").fetchall()
    con.close()
    return rows


def _gzipped(path: Path) -> Path:
    out = path.with_name(path.name + ".gz")
    out.write_bytes(gzip.compress(path.read_bytes()))
    return out


def _xml_alike(path: Path, whole: bool = True) -> list[tuple]:
    """The file's records read whole and by line (a gzip copy), which must be equal; ``whole``:
    whether the whole-file path takes this file (else both are the line reader's)."""
    assert (logsplit.blocks(path) is not None) == whole
    read = _records(path, "session_xml")
    assert read == _records(_gzipped(path), "session_xml", "gzip")
    return read


_SESSION = (
    '<session num="{s}" starttime="09:00:00">\n'
    '<interaction num="1" starttime="09:01:00">\n<query>{q}</query>\n<results>\n'
    '<result rank="1">\n<url>http://e.org/1</url>\n<clueweb12id>{d}</clueweb12id>\n</result>\n'
    '<result rank="2">\n<clueweb12id>{d}-2</clueweb12id>\n</result>\n</results>\n<clicked>\n'
    '<click num="1" starttime="09:01:09">\n<rank>2</rank>\n</click>\n</clicked>\n'
    "</interaction>\n"
    '<currentquery starttime="09:02:00">\n<query>last {q}</query>\n</currentquery>\n'
    "</session>\n"
)

# Each a whole file: openers at the file's start and end, names that only begin like an
# opener's, an opener's name ended by a tab, CR, LF or '>', non-ASCII text, no root element,
# a byte-order mark, no last line end.
ODD_XML = {
    "no root": _SESSION.format(s=1, q="plain", d="d1"),
    "bom": "\ufeff<sessiontrack2013>\n"
    + _SESSION.format(s=1, q="bom", d="d1")
    + "</sessiontrack2013>",
    "near names": (
        "<sessiontrack2014><sessions>\n<sessionx num='9'>\n"
        + _SESSION.format(s=2, q="near", d="d2")
        .replace("<results>", "<results><resultset>")
        .replace("<clicked>", "<clicked><clicks><clicking>")
        + "</sessions></sessiontrack2014>\n"
    ),
    "name ends": (
        '<sessiontrack2012>\n<session\tnum="3">\n<interaction num="1">\n'
        '<query>tab &amp; cr</query>\n<result rank="2">\n<docid>x</docid>\n</result>'
        '<result\trank="1"><docno>y</docno></result><click><rank>1</rank></click>'
        "<click\n><rank>2</rank></click>\n</interaction>\n</session>\n</sessiontrack2012>"
    ).replace("\n", "\r\n"),
    "non-ascii": "<sessiontrack2012>\n"
    + _SESSION.format(s="é", q="café 👋 ñ", d="dé")
    + _SESSION.format(s=5, q="中文 query", d="文")
    + "</sessiontrack2012>\n",
    "opener at the end": "<sessiontrack2012>\n" + _SESSION.format(s=1, q="a", d="b") + "<click",
    "opener at the end with a space": _SESSION.format(s=1, q="a", d="b") + "<click ",
    "empty": "",
    "root only": "<sessiontrack2012>\n</sessiontrack2012>\n",
}


@pytest.mark.parametrize("name", sorted(ODD_XML))
def test_odd_session_xml_read_whole_as_by_line(tmp_path: Path, name: str):
    path = tmp_path / "log.xml"
    path.write_text(ODD_XML[name], encoding="utf-8")
    if name in ("empty", "root only"):  # no search in it: an error from either reader
        for file, compression in ((path, "none"), (_gzipped(path), "gzip")):
            with pytest.raises(InputError, match="no <interaction> or <currentquery>"):
                _records(file, "session_xml", compression)
        return
    rows = _xml_alike(path)
    assert rows and all(r[2] is None for r in rows if "outside" not in (r[2] or ""))


def test_openers_ended_by_a_tab_or_a_line_end(tmp_path: Path):
    """Openers whose name a tab or a CRLF ends, a result without a rank: as the SQL cut read
    them (the line reader reads such a file otherwise: it misses a ``<result>`` with no
    attributes alone on its line, and names an interaction without a number by its place)."""
    path = tmp_path / "log.xml"
    path.write_bytes(
        b'<sessiontrack2012>\r\n<session\tnum="3">\r\n<interaction\r\nnum="1">\r\n'
        b"<query>tab &amp; cr</query>\r\n<result>\r\n<docid>x</docid>\r\n</result>"
        b'<result\trank="1"><docno>y</docno></result><click><rank>1</rank></click>'
        b"<click\r\n><rank>1</rank></click>\r\n</interaction>\r\n</session>\r\n"
    )
    assert _records(path, "session_xml") == [(3, (
        '{"event_id":"sessiontrack2012/3/3","session_id":"sessiontrack2012/3","user_id":null,"ts":null,'
        '"query":"tab & cr","result_ids":["y","x"],"clicked_ids":["y","y"],"click_ranks":[1,1],'
        '"click_times":[null,null]}'), None)]  # fmt: skip


def test_a_file_the_blocks_cannot_take_is_read_by_line(tmp_path: Path):
    """A chr(1) (the SQL cut's marker) or invalid UTF-8 sends the file to the line reader."""
    marked = tmp_path / "marked.xml"
    marked.write_text(_SESSION.format(s=1, q="a\x01b", d="d"), encoding="utf-8")
    assert len(_xml_alike(marked, whole=False)) == 2
    broken = tmp_path / "broken.xml"
    broken.write_bytes(_SESSION.format(s=1, q="caf", d="d").encode().replace(b"caf", b"caf\xe9"))
    assert logsplit.blocks(broken) is None
    assert any(r[2] for r in _records(broken, "session_xml"))


def _random_xml(path: Path, sessions: int, seed: int, end: str) -> None:
    """Sessions of odd and usual layouts mixed: several tags on a line, attributes in any order
    or missing, entities, results without ids, clicks naming no result; lines ending in ``end``
    (DuckDB's line reader refuses a file of CRLF and LF lines mixed)."""
    rng = random.Random(seed)
    out = ["<sessiontrack2012>"]
    for s in range(sessions):
        attrs = rng.choice(['num="{s}"', 'starttime="10:00:00" num="{s}"', "", 'x="1"'])
        out.append(f"<session {attrs.format(s=s)}>" if attrs else "<session>")
        for i in range(rng.randint(0, 3)):
            start = rng.choice(['starttime="10:0{i}:00"', 'starttime="23:59:5{i}"', ""])
            out.append(f'<interaction num="{i}" {start.format(i=i)}>')
            out.append(f"<query> q{s} &lt;{i}&gt; </query>")
            results = []
            for rank in range(1, rng.randint(1, 4)):
                tag = rng.choice(["clueweb09id", "DOCNO", "docid", "url"])
                results.append(f'<result rank="{rank}"><{tag}>d{s}-{rank}</{tag}></result>')
            out.append(rng.choice(["", "\n"]).join(results))
            for c in range(rng.randint(0, 2)):
                out.append(f'<click num="{c}"><rank>{rng.randint(0, 4)}</rank></click>')
            out.append("</interaction>")
        if rng.random() < 0.5:
            out.append("<currentquery><query>now</query></currentquery>")
        out.append("</session>")
    out.append("</sessiontrack2012>")
    path.write_bytes(("\n".join(out) + "\n").replace("\n", end).encode())


@pytest.mark.parametrize(("seed", "end"), [(1, "\n"), (2, "\r\n")])
def test_generated_session_xml_read_whole_as_by_line(tmp_path: Path, seed: int, end: str):
    path = tmp_path / "log.xml"
    _random_xml(path, 400, seed, end)
    assert len(_xml_alike(path)) > 400


# Pieces an opener's attributes are made of, the usual and the odd: blanks around '=', single
# quotes, a value cut by '>' or a line end, names that only end or start like one read, a name
# inside another's value, the same name twice, non-ASCII before a name.
_ATTR_PIECES = [
    ' num="1"', ' rank="2"', ' starttime="09:00:01.5"', ' num=""', "\tnum=\"7\"", ' num = "3"',
    ' num\t="4"', ' num=\f"5"', " num='6'", ' num="8', ' rank="a>b"', ' xnum="9"', ' my-num="10"',
    ' numx="11"', ' NUM="12"', ' starttime="a num="', ' é=num="13"', ' num="14" num="15"', " x",
    ' rank="1\n"', ' =', ' "', ' num="é"', ' starttime="23:59"', ' data-rank="3"', '  rank="4"',
]  # fmt: skip


def test_opener_attributes_read_as_the_pattern_reads_them(tmp_path: Path):
    """``logsplit.blocks`` reads num, rank and starttime from each opener where the pattern of
    ``logformats._attr`` would give the same, and marks the others odd (read by the pattern):
    on every opener of thousands of random ones, the two agree."""
    rng = random.Random(5)
    openers = []
    for _ in range(3000):
        name = rng.choice(logsplit.OPENERS)
        attrs = "".join(rng.choice(_ATTR_PIECES) for _ in range(rng.randint(0, 4)))
        gap, end = rng.choice(["", " ", "\t"]), rng.choice([">", "", "<"])
        openers.append(f"<{name}{gap}{attrs}{end}")
    path = tmp_path / "log.xml"
    path.write_text("<root>\n" + "\n".join(openers) + "\n", encoding="utf-8")
    con = duckdb.connect()
    con.register("gm_xml_blocks", logsplit.blocks(path))
    read = ", ".join(
        f"{col}, {logformats._attr(col, tuple(logsplit.OPENERS[k - 1] for k in kinds))}"
        for col, kinds in logsplit.ATTRIBUTES.items()
    )
    rows = con.execute(f"SELECT odd, {read} FROM gm_xml_blocks WHERE idx > 1").fetchall()
    assert len(rows) > 2800  # '<click<' opens no block
    plain = [r for r in rows if not r[0]]
    assert len(plain) > 2000  # most are read without the pattern
    for row in plain:
        assert (row[1], row[3], row[5]) == (row[2], row[4], row[6]), row
    assert {r[1] for r in plain} >= {None, "", "1", "7", "10", "14"}


# --- click-level logs: made in the statement that reads the lines, or from a table of them ------

# A warehouse CSV: quotes (a comma and doubled quotes inside), a stray quote, too many and too
# few fields, blank lines, edge spaces, blank users and times, ranks from 0 and unreadable, a
# search whose rows are apart, rows without a query, a column of no part of an event.
CLICK_CSV = [
    "user_id,query,timestamp,clicked_doc,click_position,device",
    'u1,"a, ""b""",2026-01-01T10:00:00,d1,1,mobile',
    "u1,q2,2026-01-01T10:01:00,d2,0,mobile",
    'u1,a "b,2026-01-01T10:02:00,d3,2,',
    'u2,"q5,2026-01-01T10:04:00,d5,1,x',
    "u2,q6,2026-01-01T10:05:00,d6,1,x,extra",
    "u2,q7",
    "",
    "   ",
    " u3 , spaced q , 2026-01-01T10:06:00 , d7 , 3 , tablet ",
    "u1,q2,2026-01-01T10:01:00,d8,-1,mobile",
    ",no user,,d9,3.5,",
    "u4,,2026-01-01T10:07:00,,,",
    "u4,,2026-01-01T10:07:00,,,",
    "u5,café 👋,2026-01-01T10:08:00,dé,2,",
    "u5,café 👋,2026-01-01T12:08:00,,,",
]


def _clicks_alike(path: Path, compression: str = "none") -> list[tuple]:
    """gm_raw of a click log read in one statement, equal to that made from a table of lines."""
    head = path.read_bytes() if compression == "none" else gzip.decompress(path.read_bytes())
    args = (path, compression, (h := logformats._header(head)), logformats.clicklog_columns(h),
            logformats._delimiter(head))  # fmt: skip
    return helpers.records_alike(
        lambda con: logformats._read_clicklog(con, *args),
        lambda con: logformats._read_clicklog_by_line(con, *args),
    )


def test_a_warehouse_click_csv_reads_alike(tmp_path: Path):
    path = tmp_path / "clicks.csv"
    path.write_text("\n".join(CLICK_CSV) + "\n", encoding="utf-8")
    rows = {r[0]: r for r in _clicks_alike(path)}
    assert rows[5][2] == "unbalanced quotes" and rows[6][2] == "expected 6 fields, found 7"
    assert rows[3][1].startswith('{"device":"mobile","event_id":"c-') and '"d2","d8"' in rows[3][1]
    assert rows[13][2] is None and rows[14][2] is None  # no query: a search each
    assert '"clicked_ids":["dé"]' in rows[15][1]
    packed = tmp_path / "clicks.csv.gz"
    packed.write_bytes(gzip.compress(("\r\n".join(CLICK_CSV) + "\r\n").encode()))
    assert _clicks_alike(packed, "gzip") == sorted(rows.values())


def test_an_aol_log_reads_alike(tmp_path: Path):
    """AOL's layout: tab-separated, never quoted, a search's rows together; a bare quote in a
    query, a row with more fields, generated searches."""
    rng = random.Random(3)
    lines = ["AnonID\tQuery\tQueryTime\tItemRank\tClickURL"]
    for n in range(3000):
        user, query = rng.randrange(200), rng.choice(["a", 'say "hi', "b c", " edge ", ""])
        ts = f"2006-03-01 {n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}"
        for rank in range(rng.choice((0, 1, 1, 2, 3))) or [None]:
            click = "\t\t" if rank is None else f"\t{rank + 1}\thttp://e.org/{rng.randrange(99)}"
            lines.append(f"{user}\t{query} {n % 7}\t{ts}{click}")
    lines.insert(500, "1\tx\t2006-03-01 00:00:00\t1\tu\tmore")
    path = tmp_path / "user-ct-test-collection-01.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows = _clicks_alike(path)
    assert sum(r[2] is not None for r in rows) == 1
    assert len(rows) > 2000
