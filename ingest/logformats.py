"""Search logs in the layouts IR people already have, read as they are: no converter to write.

Two layouts are told by their content and turned into goldmine's search events, one JSON object
per search in ``gm_raw(line, raw, err)``, so the search log's own stage maps, checks, redacts and
counts them as it does a JSONL file's:

- ``session_xml``: the TREC Session Track logs (2011-2014): one event per ``<interaction>`` (its
  query, the ranked ids of ``<results>``, the ids at the ranks of ``<clicked>``, in click order,
  with the click times) and the session's ``<currentquery>`` as a search whose results the log
  does not show. Python's XML parsers build an object per element; DuckDB reads the file
  instead, whole where it can (cut into a block per session, search, result and click, each
  block's tags read by one pattern apiece), else line by line (each line's tags cut out and
  placed in their search by running windows); bench/bench_searchlog_formats.py times both
  against a bare read. A tag's value is read on the line it opens (as the TREC files write
  them).
- ``clicklog``: one row per click, the query repeated on each (AOL's ``AnonID Query QueryTime
  ItemRank ClickURL``, a warehouse click table): the rows sharing user, session, query and time
  are one search with its clicks, a row with no click a search without one. Without a session
  column, a user's searches less than 30 minutes apart are one session.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from pathlib import Path

import duckdb

from goldmine.errors import InputError
from goldmine.ingest.files import excel_sep, head_lines, run_sql
from goldmine.ingest.html_text import ENTITY_MACROS
from goldmine.signals import SESSION_GAP_S, TIME_RANGE

# Columns that hold one click per row (a clicked document, or the rank clicked): their presence
# tells a click-level export from an event-level log (whose clicks are a list per search).
CLICK_DOC = ("clickurl", "click_url", "clicked_url", "clicked_doc", "clicked_doc_id", "click_doc")
CLICK_RANK = ("itemrank", "item_rank", "click_rank", "clicked_rank", "click_position")
# A rank named plainly: the click's only beside a clicked document (a warehouse click table's
# ``clicked_doc, rank``); alone it could be anything's.
_PLAIN_RANK = ("rank", "position", "click_pos", "pos")
_USER = ("anonid", "user_id", "userid", "user", "uid", "client_id", "visitor_id", "customer_id")
_SESSION = ("session_id", "sessionid", "session", "sid")
_QUERY = ("query", "q", "query_text", "search_term", "search_query", "keywords")
_TIME = ("querytime", "query_time", "ts", "timestamp", "time", "datetime", "event_time", "date")

# The root element's name, after an XML declaration, comments and a DOCTYPE (with or without
# an internal subset).
_XML_START = re.compile(
    rb"^\s*(<\?xml[^>]*\?>\s*)?(?:<!--.*?-->\s*|<!DOCTYPE[^\[>]*(?:\[.*?\])?\s*>\s*)*"
    rb"<([A-Za-z_][\w.-]*)",
    re.S,
)


def sniff(head: bytes, suffix: str) -> str | None:
    """The log layout a file's first bytes show, or None. ``suffix``: the file's last suffix."""
    head = head.removeprefix(b"\xef\xbb\xbf")
    root = _XML_START.match(head)
    if root and b"<session" in head and (b"<interaction" in head or b"<currentquery" in head):
        return "session_xml"
    if suffix in (".json", ".jsonl", ".ndjson", ".parquet", ".pq", ".xml"):
        return None
    if access_log(head):
        return "accesslog"
    if _SOLR.search(head):
        return "solrlog"
    if clicklog_columns(_header(head)):
        return "clicklog"
    from goldmine.ingest.analytics import columns

    return "analytics" if columns(_header(head)) else None


# A web server's access log line, as nginx's and Apache's "combined" and "common" formats write
# it: client, identity, user, [time], "request", status, bytes, then "referer" "user agent".
# A request nginx could not read is "-"; Apache escapes a quote inside a field as \".
ACCESS_LINE = (
    r'^(\S+) \S+ (\S+) \[([^\]]+)\] "(?:(\S+) (\S+)(?:[^"\\]|\\.)*|(?:[^"\\]|\\.)*)" '
    r'(\d{3}) \S+(?: "((?:[^"\\]|\\.)*)" "((?:[^"\\]|\\.)*)")?'
)
_ACCESS = re.compile(ACCESS_LINE.encode())
# The parameters a site's search page takes its words by (WordPress's "s"), in this order; a
# request naming none of them is no search (a page, a script, an image).
SEARCH_PARAMS = ("q", "query", "search", "s", "search_query", "search_term", "searchterm",
                 "term", "keywords")  # fmt: skip
# A later page of results is the search's own, not another search: page=2, or an offset past 0.
PAGE_PARAMS = ("page", "p", "pg", "start", "offset", "from")


# Solr's request log line (solr.log, o.a.s.c.S.Request): its time at the line's start, the core,
# the handler's path, the request's parameters as a query string, the hits of a search.
SOLR_LINE = (
    r"^(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?).*?\] o\.a\.s\.c\.S\.Request "
    r"\[([^\]]*)\]\s+webapp=\S+ path=(\S+) params=\{(.*)\}(?: hits=(\d+))? status=(-?\d+)"
)
_SOLR = re.compile(
    rb"(?m)^\d{4}-\d{2}-\d{2}[ T][\d:.,]+ .*o\.a\.s\.c\.S\.Request \[[^\]]*\]\s+webapp="
)


def access_log(head: bytes) -> bool:
    """Whether a file's first line is a web server's access log line (``ACCESS_LINE``), or its
    directives name the fields of one in the W3C extended format (CloudFront, IIS)."""
    lines = head_lines(head.removeprefix(b"\xef\xbb\xbf"), 1)
    return bool(lines) and (_ACCESS.match(lines[0]) is not None or _w3c_fields(head) is not None)


# The W3C extended format's fields goldmine reads, by the names its #Fields line gives them;
# the client's user (IIS's cs-username) and referer may be absent.
_W3C_NAMES = {
    "date": "date", "time": "time", "ip": "c-ip", "method": "cs-method", "stem": "cs-uri-stem",
    "query": "cs-uri-query", "status": "sc-status", "agent": "cs(user-agent)",
    "user": "cs-username", "referer": "cs(referer)",
}  # fmt: skip


def _w3c_fields(head: bytes) -> dict | None:
    """Each field's place (1-based) among a W3C extended log's ``#Fields``, how many there are
    and the delimiter of its lines; None unless its directives open the file and name a
    request's time, client, path and query."""
    lines = head_lines(head.removeprefix(b"\xef\xbb\xbf"), 50)
    if not lines or not lines[0].startswith(b"#"):
        return None
    named = next((ln for ln in lines if ln.startswith(b"#Fields:")), None)
    if named is None:
        return None
    names = named[len(b"#Fields:") :].decode("utf-8", "replace").lower().split()
    places = {k: names.index(v) + 1 for k, v in _W3C_NAMES.items() if v in names}
    if not {"date", "time", "ip", "stem", "query"} <= places.keys():
        return None
    data = next((ln for ln in lines if not ln.startswith(b"#")), b"")
    # absent fields point past the row: f[n + 1] is NULL
    out = {f"gm_{k}": places.get(k, len(names) + 1) for k in _W3C_NAMES}
    return {**out, "gm_n": len(names), "gm_delim": "\t" if b"\t" in data else " "}


def header(path: Path, compression: str) -> list[str]:
    """The column names of a delimited file's first line (of UTF-16 text where a byte-order
    mark says so, as ``formats.detect`` reads it)."""
    from goldmine.ingest.scan import UTF16_BOMS, read_head

    head = read_head(path, compression, 1 << 16)
    if head[:2] in UTF16_BOMS:
        head = head.decode("utf-16", "replace").encode("utf-8")
    return _header(head)


def xml_root(head: bytes) -> str:
    found = _XML_START.match(head.removeprefix(b"\xef\xbb\xbf"))
    return found.group(2).decode("ascii", "replace") if found else "sessions"


def preamble(head: bytes) -> int:
    """How many lines come before the header: Excel's ``sep=;`` line, and Google Analytics'
    block of ``#`` lines (and blank ones) above its table; 0 for a file that opens with its
    header. Lines end at LF, CRLF or a CR alone, as DuckDB's line reader ends them."""
    lines = head_lines(head, 1 << 16)
    n = 1 if excel_sep(head) else 0
    # Adobe's Workspace quotes a comment holding a comma ("# Date: Nov 1, 2026 - Nov 30, 2026").
    comment = (b"#", b'"#')
    if not lines[n:] or not lines[n].startswith(comment):
        return n
    while n < len(lines) - 1 and (lines[n].startswith(comment) or not lines[n].strip()):
        n += 1
    return n


def _header_line(head: bytes) -> bytes:
    skip = preamble(head)
    lines = head_lines(head, skip + 1)
    return lines[skip] if skip < len(lines) else b""


def _header(head: bytes) -> list[str]:
    # A byte-order mark would be part of the first column's name (and keep its quotes).
    line = _header_line(head).decode("utf-8", "replace")
    try:
        return next(csv.reader([line], delimiter=_delimiter(head)), [])
    except csv.Error:  # a NUL inside the line: no header of a log this module reads
        return []


def _delimiter(head: bytes) -> str:
    """The delimiter Excel's ``sep=`` line names; else a tab when the header line has one (AOL's
    logs, TSV exports); else ``;`` when it has more of them than commas (Excel where a comma is
    the decimal mark writes ``;``); else a comma."""
    line = _header_line(head)
    if sep := excel_sep(head):
        return sep
    if b"\t" in line:
        return "\t"
    return ";" if line.count(b";") > line.count(b",") else ","


def clicklog_columns(header: list[str]) -> dict[str, int] | None:
    """Which column (by position) holds each part of a click row, or None if the header is not
    one of a click-level export (a query, and a clicked document or rank per row)."""
    lower = [h.strip().lower() for h in header]

    def find(names: tuple[str, ...]) -> int | None:
        return next((lower.index(n) for n in names if n in lower), None)

    cols = {
        "user": find(_USER),
        "session": find(_SESSION),
        "query": find(_QUERY),
        "time": find(_TIME),
        "doc": find(CLICK_DOC),
        "rank": find(CLICK_RANK),
    }
    if cols["query"] is None or (cols["doc"] is None and cols["rank"] is None):
        return None
    if cols["rank"] is None:
        cols["rank"] = find(_PLAIN_RANK)
    return {k: v for k, v in cols.items() if v is not None}


def read(
    con: duckdb.DuckDBPyConnection, path: Path, fmt: str, compression: str
) -> list[str] | None:
    """Make ``gm_raw(line, raw, err)``: one JSON object per search of the file. An aggregated
    export's rows are also text columns of ``gm_src``, whose names it returns (see
    ``_read_analytics``); None for the other layouts."""
    from goldmine.ingest.scan import read_head

    head = read_head(path, compression, 1 << 16)
    if fmt == "session_xml":
        _read_session_xml(con, path, compression, xml_root(head))
    elif fmt == "accesslog":
        _read_access_log(con, path, compression)
    elif fmt == "solrlog":
        _read_solr_log(con, path, compression)
    elif fmt == "analytics":  # its rows as text columns by the header's names; analytics maps
        header, delim, skip = _header(head), _delimiter(head), preamble(head)
        _number_convention(con, head, header, delim, skip)
        return _read_analytics(con, path, compression, header, delim, skip)
    else:
        header = _header(head)
        cols = clicklog_columns(header)
        if cols is None:
            raise InputError(
                "not a click-level log: the header names no query column and no clicked "
                f"document or rank column ({', '.join(CLICK_DOC[:2] + CLICK_RANK[:1])}, …)",
                path=path,
            )
        _read_clicklog(con, path, compression, header, cols, _delimiter(head))


def _number_columns(header: list[str]) -> list[int] | None:
    """The positions of an aggregated export's number columns (counts and rates), or None."""
    from goldmine.ingest.analytics import columns

    found = columns(header)
    if found is None:
        return None
    names = [name for part, name in found.items() if part not in ("query", "date")]
    return [header.index(name) for name in names if name in header]


def _number_convention(
    con: duckdb.DuckDBPyConnection, head: bytes, header: list[str], delim: str, skip: int
) -> None:
    """Define ``gm_decimal_comma()`` for the analytics stage: whether this export's numbers
    are written with a decimal comma (``analytics.decimal_comma``, from its first rows below
    the ``header`` after ``skip`` lines, split by ``delim``)."""
    from goldmine.ingest.analytics import decimal_comma

    lines = head_lines(head, skip + 201)[skip + 1 : -1]  # the last may be cut short
    try:
        rows = list(csv.reader([x.decode("utf-8", "replace") for x in lines], delimiter=delim))
    except csv.Error:  # a NUL in a line: its numbers tell nothing
        rows = []
    # Only the number columns tell: a query may be "2.0", a date "1.12.2026".
    numbers = _number_columns(header)
    if numbers is not None:
        rows = [[r[i] for i in numbers if i < len(r)] for r in rows]
    comma = "true" if decimal_comma(rows, delim) else "false"  # a constant, no user text
    con.execute(f"CREATE OR REPLACE TEMP MACRO gm_decimal_comma() AS {comma}")


# A line the reader could not read (invalid UTF-8; ``files.read_lines`` gives it with its line
# and reason) is a marker among the tags, so nothing after it is taken for the search before
# it: ``gm_bad`` inside a search, ``gm_lost`` where it opened one (``gm_lost_session``: a
# session), whose tags are lost. The search holding a bad line, and a lost one, is a reject.
_XML_BAD = """
CREATE OR REPLACE TEMP TABLE gm_xml_bad AS
SELECT line, raw, err,
       CASE WHEN contains(raw, '<session') THEN 'gm_lost_session'
            WHEN contains(raw, '<interaction') OR contains(raw, '<currentquery') THEN 'gm_lost'
            ELSE 'gm_bad' END AS tag
FROM gm_log_lines WHERE err IS NOT NULL
"""
# The markers among the tags, each at the start of its line.
_XML_MARKED = """
INSERT INTO gm_xml_tags SELECT line::HUGEINT * 4294967296, line, tag, NULL, NULL, NULL, NULL,
       NULL
FROM gm_xml_bad
"""


def _decoded(text: str) -> str:
    """SQL: a tag's text with XML's entities read and spaces trimmed (``gm_xml_text``)."""
    return f"gm_xml_text({text})"


# Each opening tag of interest with its attributes and the text after it, in file order
# (``ord``: line and position on the line), from the lines that may hold one (a plain substring
# test first: most lines are urls, titles and snippets). A line is cut at each ``<`` with string
# functions, not a regex per tag (half the time); attributes are read only where a tag has some.
_WANTED = ("<session", "<interaction", "<currentquery", "<query", "<result ", "<click ", "<rank",
           "id>", "ID>", "docno", "DOCNO")  # fmt: skip
_XML_TAGS = r"""
CREATE OR REPLACE TEMP TABLE gm_xml_tags AS
SELECT line::HUGEINT * 4294967296 + pos AS ord, line, tag,
       CASE WHEN attrs <> '' THEN regexp_extract(attrs, '\bnum\s*=\s*"([^"]*)"', 1) END AS num,
       CASE WHEN attrs <> '' THEN regexp_extract(attrs, '\brank\s*=\s*"([^"]*)"', 1) END AS rank,
       CASE WHEN attrs <> '' THEN regexp_extract(attrs, '\bstarttime\s*=\s*"([^"]*)"', 1)
            END AS starttime,
       {decoded} AS text,
       CASE WHEN attrs <> '' THEN regexp_extract(attrs, '\buserid\s*=\s*"([^"]*)"', 1)
            END AS userid
FROM (
    -- Materialized: each piece's tag name is computed once (the filter below, given the
    -- expression, computed it again in each of its tests: 40% of this step).
    WITH named AS MATERIALIZED (
        SELECT line, pos, name AS tag, substr(head, length(name) + 1) AS attrs,
               substr(piece, length(head) + 2) AS text
        FROM (SELECT *, split_part(replace(head, chr(9), ' '), ' ', 1) AS name
              FROM (SELECT line, pos, piece, split_part(piece, '>', 1) AS head
                    FROM (SELECT line, unnest(c) AS piece, generate_subscripts(c, 1) AS pos
                          FROM (SELECT line, string_split(raw, '<') AS c
                                FROM gm_log_lines WHERE err IS NULL AND ({wanted})))
                    WHERE pos > 1))
    )
    SELECT * FROM named
    WHERE tag IN ('session', 'interaction', 'currentquery', 'query', 'result', 'click', 'rank')
       OR lower(tag) = 'docno' OR (lower(tag) LIKE '%id' AND NOT starts_with(tag, '/')))
""".replace("{wanted}", " OR ".join(f"contains(raw, '{w}')" for w in _WANTED)).replace(
    "{decoded}", _decoded("text")
)

# A session's id: its number, else its place among the file's sessions (``@2``: the second),
# which the same file gives again on every import (``n``: the session's count in file order).
_SESSION_ID = "coalesce(nullif(num, ''), '@' || n)"

# Every tag placed in its session, its search (interaction or current query), and the result or
# click it is inside: the last such tag opened before it. ``ord`` grows through the file, so the
# last is the running maximum in ``ord`` order, which the window must sort by: the tags are
# written in parallel, in no order (without the sort, a 150k-line file had thousands of searches
# placed in a session from the file's end). The session's id, the result's rank and the
# click's time (NULL where the click names none) are then joined on.
_XML_PLACED = """
CREATE OR REPLACE TEMP TABLE gm_xml_placed AS
SELECT t.*, s.num AS s, s.userid AS s_user, r.rank AS r_rank, k.starttime AS k_time
FROM (SELECT *,
          max(CASE WHEN tag IN ('session', 'gm_lost_session') THEN ord END) OVER w AS s_ord,
          max(CASE WHEN tag IN ('interaction', 'currentquery', 'gm_lost', 'gm_lost_session')
                   THEN ord END) OVER w AS e,
          max(CASE WHEN tag = 'result' THEN ord END) OVER w AS r,
          max(CASE WHEN tag = 'click' THEN ord END) OVER w AS k
      FROM gm_xml_tags
      WINDOW w AS (ORDER BY ord ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)) t
LEFT JOIN (SELECT ord, {session_id} AS num, userid FROM (
               SELECT ord, tag, num, userid, row_number() OVER (ORDER BY ord) AS n FROM gm_xml_tags
               WHERE tag IN ('session', 'gm_lost_session'))
           WHERE tag = 'session') s ON s.ord = t.s_ord
LEFT JOIN (SELECT ord, rank FROM gm_xml_tags WHERE tag = 'result') r ON r.ord = t.r
LEFT JOIN (SELECT ord, nullif(starttime, '') AS starttime FROM gm_xml_tags WHERE tag = 'click') k
    ON k.ord = t.k
""".replace("{session_id}", _SESSION_ID)

# Each search's day (``days`` after the first of the year): a session's clock going back
# means it passed midnight. Then its record, whichever reader placed its tags.
_XML_TIMED = """
timed AS (
    SELECT *, sum(CASE WHEN clock AND try_cast(starttime AS TIME) < prev THEN 1 ELSE 0 END)
                  OVER (PARTITION BY s ORDER BY e) AS days
    FROM (SELECT *, lag(CASE WHEN clock THEN try_cast(starttime AS TIME) END)
                        OVER (PARTITION BY s ORDER BY e) AS prev FROM ev)
),
"""
# A struct made JSON once (as the click-level reader's): json_object of the same members took
# a twentieth longer, for the same text.
_XML_RECORD = """to_json({
        'event_id': $root || '/' || s || '/'
            || CASE WHEN tag = 'currentquery' THEN 'current' ELSE coalesce(num, e::VARCHAR) END,
        'session_id': $root || '/' || s,
        'user_id': nullif(userid, ''),
        'ts': CASE WHEN clock THEN strftime(($day::DATE + days::INTEGER)
                                            + try_cast(starttime AS TIME), '%Y-%m-%dT%H:%M:%S.%f')
                   WHEN regexp_full_match(starttime, '[0-9]{1,8}([.][0-9]{1,9})?')
                       THEN strftime($day::TIMESTAMP + to_microseconds(
                                round(starttime::DOUBLE * 1e6)::BIGINT), '%Y-%m-%dT%H:%M:%S.%f')
                   ELSE nullif(starttime, '') END,
        'query': q.query,
        'result_ids': CASE WHEN tag = 'interaction' THEN coalesce(shown.ids, []) END,
        'clicked_ids': CASE WHEN tag = 'interaction' THEN coalesce(clk.ids, []) END,
        'click_ranks': clk.ranks,
        'click_times': clk.times})::VARCHAR AS raw"""


# One record per search. The logs give times of day (2011, 2012) or seconds from the session's
# start (2013, 2014) only: they are put on the first day of the year the root element names
# (sessiontrack2012), and a session that passes midnight goes on to the next day, so that session
# order and the reformulation window hold.
_XML_EVENTS = r"""
CREATE OR REPLACE TEMP TABLE gm_src AS
WITH ev AS (
    SELECT ord AS e, line, s, s_user AS userid, tag, nullif(num, '') AS num, starttime,
           regexp_full_match(starttime, '[0-9]{1,2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?')
               AND try_cast(starttime AS TIME) IS NOT NULL AS clock
    FROM gm_xml_placed WHERE tag IN ('interaction', 'currentquery')
),
{timed}
q AS (SELECT e, arg_min(text, ord) AS query FROM gm_xml_placed
      WHERE tag = 'query' AND e IS NOT NULL GROUP BY e),
res AS (
    SELECT e, r, gm_rank(r_rank) AS rank, arg_min(text, ord) AS id
    FROM gm_xml_placed
    WHERE tag NOT IN ('session', 'interaction', 'currentquery', 'query', 'result', 'click',
                      'rank', 'gm_bad', 'gm_lost', 'gm_lost_session')
      AND r > e AND (k IS NULL OR k < r)
    GROUP BY e, r, r_rank
),
shown AS (SELECT e, list(id ORDER BY rank NULLS LAST, r) AS ids FROM res GROUP BY e),
-- A click names a rank: the id shown there.
-- A click's own id (2014's <docno> beside its <rank>) names what its first rank opened.
docs AS (
    SELECT k, arg_min(text, ord) AS doc FROM gm_xml_placed
    WHERE tag NOT IN ('session', 'interaction', 'currentquery', 'query', 'result', 'click',
                      'rank', 'gm_bad', 'gm_lost', 'gm_lost_session')
      AND k > e AND (r IS NULL OR r < k)
    GROUP BY k
),
clk AS (
    SELECT p.e, list(p.id ORDER BY p.ord) FILTER (WHERE p.id IS NOT NULL) AS ids,
           list(gm_rank(p.text) ORDER BY p.ord) AS ranks,
           list(p.k_time ORDER BY p.ord) AS times
    FROM (SELECT p.*, coalesce(CASE WHEN p.ord = min(p.ord) OVER (PARTITION BY p.k)
                                    THEN docs.doc END, res.id) AS id
          FROM gm_xml_placed p
          LEFT JOIN res ON res.e = p.e AND res.rank = gm_rank(p.text)
          LEFT JOIN docs ON docs.k = p.k
          WHERE p.tag = 'rank' AND p.k > p.e) p
    GROUP BY p.e
),
-- An unreadable line inside a search (after it opened, in its session) makes it a reject, at
-- the first such line; any other unreadable line is a reject of its own.
bad_in AS (
    SELECT p.line, p.tag, ev.e FROM gm_xml_placed p
    LEFT JOIN ev ON ev.e = p.e AND p.tag = 'gm_bad' AND (p.s_ord IS NULL OR p.e > p.s_ord)
    WHERE p.tag IN ('gm_bad', 'gm_lost', 'gm_lost_session')
),
bad AS (SELECT e, min(line) AS line FROM bad_in WHERE e IS NOT NULL GROUP BY e)
SELECT coalesce(bad.line, timed.line) AS line, {record},
       CASE WHEN bad.line IS NOT NULL THEN
                (SELECT err FROM gm_xml_bad b WHERE b.line = bad.line) || ': the search at line '
                || timed.line || ' is not read'
            WHEN s IS NULL THEN 'outside any <session>' END AS err
FROM timed LEFT JOIN q USING (e) LEFT JOIN shown USING (e) LEFT JOIN clk USING (e)
     LEFT JOIN bad USING (e)
UNION ALL
SELECT line, b.raw, b.err || CASE bad_in.tag
           WHEN 'gm_lost' THEN ': a search opens on this line; it is not read'
           WHEN 'gm_lost_session' THEN ': a session opens on this line; its searches are not read'
           ELSE '' END
FROM bad_in JOIN gm_xml_bad b USING (line) WHERE bad_in.e IS NULL
""".replace("{timed}", _XML_TIMED.strip()).replace("{record}", _XML_RECORD)


def _read_session_xml(con, path: Path, compression: str, root: str) -> None:
    year = re.search(r"(19|20)[0-9]{2}", root)
    day = f"{year.group(0) if year else '1970'}-01-01"
    if not _read_session_xml_whole(con, path, compression, root, day):
        _read_session_xml_lines(con, path, compression, root, day)
    con.execute("CREATE OR REPLACE TEMP VIEW gm_raw AS SELECT line, raw, err FROM gm_src")
    if not con.execute("SELECT count(*) FROM gm_src").fetchall()[0][0]:
        raise InputError(
            "no <interaction> or <currentquery> in this Session Track file: goldmine reads the "
            "2011-2014 layouts (2010's <query> and <reformulation> pairs are not read)",
            path=path,
        )


def _read_session_xml_lines(con, path: Path, compression: str, root: str, day: str) -> None:
    """Make ``gm_src`` from the file read line by line (``files.read_lines``)."""
    from goldmine.ingest.files import InputFile, read_lines

    read_lines(con, InputFile(path, "session_xml", compression), (), "gm_log_lines")
    con.execute(_XML_BAD)
    con.execute(_XML_TAGS)
    if con.execute("SELECT count(*) FROM gm_xml_bad").fetchall()[0][0]:
        con.execute(_XML_MARKED)
    con.execute(_XML_PLACED)
    con.execute(_XML_EVENTS, {"root": root, "day": day})
    con.execute("DROP TABLE gm_xml_tags; DROP TABLE gm_xml_placed; DROP TABLE gm_xml_bad")
    con.execute("DROP VIEW gm_log_lines")


# --- Session Track XML read whole: one row per element that opens a block -------------------

# A file that fits in memory is cut before each tag that opens a session, a search, a result or
# a click (``logsplit.blocks``, numpy over its bytes): each piece (a block) holds no other opening
# tag, so every tag in it is placed as its opener is, by running maxima over the blocks in file
# order, on ~a quarter of a million blocks per million lines instead of half a million tags
# sorted (the line reader below cut every line into tags and sorted them: 5.4 s of 1M lines
# where a bare read is 0.3 s). A file this path cannot read (compressed, over _WHOLE_MAX,
# invalid UTF-8, a chr(1)) takes the line reader, which also turns each unreadable line into a
# reject.
_WHOLE_MAX = 256 << 20

# A tag's text is what follows its ``>`` on its line up to the next tag, as the line reader
# cuts it; the pattern after the tag's name: attributes, then the text, or no ``>`` on the line.
_TAG_END = r"(?:[ \t][^<>\r\n]*)?(?:>([^<\r\n]*)|[<\r\n]|$)"
_ID_TAG = r"<(?:[^\s<>/][^\s<>]*[iI][dD]|[iI][dD]|[dD][oO][cC][nN][oO])"


def _attr(name: str, kinds: tuple[str, ...]) -> str:
    """SQL: the attribute ``name`` of a block's opener when it is of ``kinds``: NULL where the
    opener has no attributes (no space or tab after its name), '' where it lacks this one.

    One pattern over the opener, as the line reader's over its attributes (after the name, up to
    its '>', the next tag or the line's end): cutting the attributes out first was a second
    pattern per block, a quarter of this step."""
    among = ", ".join(f"'{k}'" for k in kinds)
    return rf"""CASE WHEN kind IN ({among}) AND substr(block, length(kind) + 2, 1) IN (' ', chr(9))
                     THEN regexp_extract(
                         block, '^<[a-z]+[^<>\r\n]*?\b{name}[\t\f ]*=[\t\f ]*"([^"<>\r\n]*)"', 1)
                     END"""


# Each block's opener attributes (read by ``logsplit.blocks``; by the pattern where it marked
# the opener odd) and the tags read from it (each only where a plain substring test says the
# block may hold one): the first query, the first id (a name ending in "id", or DOCNO), every
# rank.
_BLOCK_TAGS = rf"""
CREATE OR REPLACE TEMP TABLE gm_xml_found AS
SELECT idx, kind, line, s, e, r, k,
       CASE WHEN odd THEN {_attr("num", ("session", "interaction", "currentquery"))}
            ELSE num END AS num,
       CASE WHEN odd THEN {_attr("rank", ("result",))} ELSE rank END AS rank,
       CASE WHEN odd THEN {_attr("starttime", ("interaction", "currentquery", "click"))}
            ELSE starttime END AS starttime,
       CASE WHEN odd THEN {_attr("userid", ("session",))} ELSE userid END AS userid,
       CASE WHEN q.m <> '' THEN {_decoded("q.t")} END AS query,
       CASE WHEN id.m <> '' THEN {_decoded("id.t")} END AS id,
       ranks
FROM (SELECT *,
          CASE WHEN contains(block, '<query')
               THEN regexp_extract(block, '(<query){_TAG_END}', ['m', 't']) END AS q,
          CASE WHEN contains(block, 'id>') OR contains(block, 'ID>') OR contains(block, 'docno')
                    OR contains(block, 'DOCNO')
               THEN regexp_extract(block, '({_ID_TAG}){_TAG_END}', ['m', 't']) END AS id,
          CASE WHEN contains(block, '<rank')
               THEN regexp_extract_all(block, '<rank{_TAG_END}', 1) END AS ranks
      FROM gm_xml_blocks)
"""

# One record per search, as _XML_EVENTS makes them from the line reader's tags.
_BLOCK_EVENTS = (
    r"""
CREATE OR REPLACE TEMP TABLE gm_src AS
WITH ev AS (
    SELECT f.idx AS e, f.line, sess.num AS s, sess.userid, f.kind AS tag, nullif(f.num, '') AS num,
           f.starttime,
           regexp_full_match(f.starttime, '[0-9]{1,2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?')
               AND try_cast(f.starttime AS TIME) IS NOT NULL AS clock
    FROM gm_xml_found f
    LEFT JOIN (SELECT idx, {session_id} AS num, userid
               FROM (SELECT idx, num, userid, row_number() OVER (ORDER BY idx) AS n
                     FROM gm_xml_found WHERE kind = 'session')) sess ON sess.idx = f.s
    WHERE f.kind IN ('interaction', 'currentquery')
),
{timed}
q AS (SELECT e, arg_min(query, idx) AS query FROM gm_xml_found
      WHERE query IS NOT NULL AND e IS NOT NULL GROUP BY e),
res AS (
    SELECT f.e, f.r, gm_rank(any_value(o.rank)) AS rank, arg_min(f.id, f.idx) AS id
    FROM gm_xml_found f JOIN gm_xml_found o ON o.idx = f.r
    WHERE f.id IS NOT NULL AND f.r > f.e AND (f.k IS NULL OR f.k < f.r)
    GROUP BY f.e, f.r
),
-- Lists of structs sorted once, not ordered aggregates (a third of this statement).
shown AS (
    SELECT e, [x.id FOR x IN list_sort(list({'unranked': rank IS NULL, 'rank': rank, 'r': r,
                                             'id': id}))] AS ids
    FROM res GROUP BY e
),
-- A click names a rank: the id shown there.
-- A click's own id (2014's <docno> beside its <rank>) names what its first rank opened.
clicks AS (
    SELECT f.e, f.idx, nullif(o.starttime, '') AS k_time, unnest(f.ranks) AS text,
           generate_subscripts(f.ranks, 1) AS pos, CASE WHEN f.idx = f.k THEN f.id END AS doc
    FROM gm_xml_found f JOIN gm_xml_found o ON o.idx = f.k
    WHERE f.ranks IS NOT NULL AND f.k > f.e
),
clk AS (
    SELECT e, [x.id FOR x IN c IF x.id IS NOT NULL] AS ids, [x.rank FOR x IN c] AS ranks,
           [x.k_time FOR x IN c] AS times
    FROM (SELECT c.e, list_sort(list({'idx': c.idx, 'pos': c.pos,
                                      'id': coalesce(CASE WHEN c.pos = 1 THEN c.doc END, res.id),
                                      'rank': gm_rank(c.text), 'k_time': c.k_time}))
                     AS c
          FROM (SELECT * REPLACE ({decoded} AS text) FROM clicks) c
          LEFT JOIN res ON res.e = c.e AND res.rank = gm_rank(c.text)
          GROUP BY c.e)
)
SELECT line, {record},
       CASE WHEN s IS NULL THEN 'outside any <session>' END AS err
FROM timed LEFT JOIN q USING (e) LEFT JOIN shown USING (e) LEFT JOIN clk USING (e)
""".replace("{decoded}", _decoded("text"))
    .replace("{timed}", _XML_TIMED.strip())
    .replace("{record}", _XML_RECORD)
    .replace("{session_id}", _SESSION_ID)
)


def _read_session_xml_whole(con, path: Path, compression: str, root: str, day: str) -> bool:
    """Make ``gm_src`` from the file read whole; False when it must be read line by line."""
    if compression != "none" or path.stat().st_size > _WHOLE_MAX:
        return False
    from goldmine.ingest.logsplit import blocks

    table = blocks(path)
    if table is None:  # invalid UTF-8 or a chr(1): the line reader reads those lines
        return False
    con.register("gm_xml_blocks", table)
    try:
        con.execute(_BLOCK_TAGS)
    finally:
        con.unregister("gm_xml_blocks")
    con.execute(_BLOCK_EVENTS, {"root": root, "day": day})
    con.execute("DROP TABLE gm_xml_found")
    return True


# The rows of a click-level export, each column under a name of ours (``gm_col<i>``, the file's
# names are never SQL), each read from its own line (``files.read_lines``): a stray quote cannot
# take the lines after it into one field, and a row the reader or the split cannot read is a
# reject at its true line. A tab-separated log is not quoted (AOL's queries hold bare quotes); a
# comma-separated one is split at the commas outside CSV quotes, by a pattern only where the line
# holds a quote. A row with fewer fields is padded with NULLs, as DuckDB's reader padded it.


def _csv_field(delim: str) -> str:
    """SQL: the pattern of one CSV field after ``delim`` (one of ``excel_sep``'s, or a comma)."""
    return f"""'(?:^|{re.escape(delim)})("(?:[^"]|"")*"|[^{delim}]*)'"""


_QUOTES_BAD = (
    "list_sum(list_transform(f, lambda x: length(x))) + len(f) - 1 <> length(raw) "
    """OR list_bool_or(list_transform(f, lambda x: starts_with(x, '"') """
    """AND (length(x) < 2 OR NOT ends_with(x, '"'))))"""
)
_UNQUOTED = """CASE WHEN length(v) >= 2 AND starts_with(v, '"') AND ends_with(v, '"')
    THEN replace(v[2:-2], '""', '"') ELSE v END"""
_CLICK_ROWS = """
SELECT line, raw, reject, f, {columns}
FROM (SELECT *, CASE WHEN err IS NOT NULL THEN err{sectioned}
                     WHEN len(f) > {n} THEN 'expected {n} fields, found ' || len(f)
                     WHEN {split_quoted} AND ({quotes_bad}) THEN 'unbalanced quotes' END
                AS reject
      FROM (SELECT line, raw, err, CASE WHEN err IS NOT NULL THEN NULL::VARCHAR[]
                                        WHEN {split_quoted} THEN regexp_extract_all(raw, {field}, 1)
                                        ELSE string_split(raw, $delim) END AS f
            FROM {lines} WHERE line > {first}{comments}))
"""
# After a preamble of ``#`` lines, a later ``# ---`` line starts another section of the export
# (a query may start with #: ``#1 seller``): its lines (``line >= $gm_section``) are rejects,
# its ``#`` lines comments.
_AFTER_TABLE = "after the export''s table (a section that starts with #)"  # SQL-quoted


def _click_rows_sql(
    n: int,
    quoted: bool,
    lines: str = "gm_click_lines",
    header: int = 1,
    sectioned: bool = False,
    delim: str = ",",
) -> str:
    """The query splitting ``lines`` (SQL of ``line, raw, err``) into ``n`` columns, also as
    the list ``f`` (``quoted``: CSV quotes are read); ``header``: the header's line, after a
    preamble; ``sectioned``: lines from ``$gm_section`` on are another section's."""
    value = _UNQUOTED if quoted else "v"
    columns = ", ".join(
        f"CASE WHEN reject IS NULL THEN {value.replace('v', f'f[{i + 1}]')} END AS gm_col{i}"
        for i in range(n)
    )
    return _CLICK_ROWS.format(
        columns=columns,
        n=n,
        quotes_bad=_QUOTES_BAD if quoted else "false",
        split_quoted="""contains(raw, '"')""" if quoted else "false",
        field=_csv_field(delim),
        lines=lines,
        first=int(header),
        comments=" AND NOT (line >= $gm_section AND starts_with(raw, '#'))" if sectioned else "",
        sectioned=f"\n                     WHEN line >= $gm_section THEN '{_AFTER_TABLE}'"
        if sectioned
        else "",
    )


def _read_analytics(
    con,
    path: Path,
    compression: str,
    header: list[str],
    delim: str,
    skip: int = 0,
    by_line: bool = False,
) -> list[str]:
    """``gm_src(line, raw, err, gm_f1..gm_fn)``: each row's fields as text columns, named by
    the header (a repeated name as ``corpus_formats`` renames it); returns the names. ``raw``
    is the line only where the row is no record; ``gm_raw`` makes the JSON objects for whoever
    reads them (``files.raw_view``), the stage reads the columns (``analytics.stage_sql``):
    making JSON text per row cost about a bare read per 1M rows, and parsing it again more.
    The rows are split in the statement that reads the lines (``_read_split``).
    """

    def make(lines: str, params: dict) -> tuple[str, dict]:
        more: dict = {"delim": delim}
        if skip:  # Google Analytics: a later "# ---" line starts another section of the export
            # Found on the same lines as the rows: the reader's count shifts past a skipped line.
            found = run_sql(
                con,
                f"SELECT min(line) FROM {lines} WHERE line > $header AND starts_with(raw, '# ---')",
                {**params, "header": skip + 1},
            ).fetchall()[0][0]
            more["gm_section"] = found or 2**62
        return _analytics_sql(len(header), delim, lines, skip + 1, bool(skip)), more

    _read_split(con, path, compression, "analytics", make, by_line, (len(header), delim))
    return _analytics_view(con, header)


def _read_analytics_by_line(
    con, path: Path, compression: str, header: list[str], delim: str, skip: int = 0
) -> list[str]:
    """``gm_src`` as ``_read_analytics`` makes it, from a table of the lines (``read_lines``)."""
    return _read_analytics(con, path, compression, header, delim, skip, by_line=True)


def _read_split(
    con,
    path: Path,
    compression: str,
    fmt: str,
    make: Callable[[str, dict], tuple[str, dict]],
    by_line: bool = False,
    fields: tuple[int, str] = (0, "\t"),
) -> None:
    """``gm_src`` made by ``make(lines, params)``: the statement (and its parameters) making it
    from ``lines``, SQL of ``line, raw, err`` read with ``params``. Made in the statement that
    reads the lines (a table of the lines between stored each line's text again: a tenth of a
    reader's CPU on 1M rows). A file the reader skipped lines of (invalid UTF-8), or
    ``by_line``, is made from a table of the lines (``read_lines``), which places each such line
    as a reject; so is one holding a row it could not split (``fields``: how many a row has and
    the delimiter), whose CSV fields quoted over several lines are then joined
    (``_join_quoted``)."""
    from goldmine.ingest.files import InputFile, numbered_lines, read_lines, reader_skipped

    quoted = fields[1] != "\t"
    if not by_line:
        params = {"path": str(path), "compression": compression}
        lines = f"(SELECT line, raw, NULL::VARCHAR AS err FROM {numbered_lines()})"
        sql, more = make(lines, params)
        run_sql(con, sql, {**params, **more})
        skipped = reader_skipped(con)
        if not skipped and not (
            quoted and _unsplit(con) and _join_quoted(con, lines, params, *fields)
        ):
            return
        if not skipped:  # made again from its lines with the quoted fields joined
            run_sql(con, *make("gm_click_joined", {}))
            con.execute("DROP TABLE gm_click_joined")
            return
        con.execute("DROP TABLE IF EXISTS gm_click_joined")
    read_lines(con, InputFile(path, fmt, compression), (), "gm_click_lines")
    lines = "gm_click_lines"
    if quoted and _join_quoted(con, lines, {}, *fields):
        lines = "gm_click_joined"
    run_sql(con, *make(lines, {}))
    con.execute("DROP VIEW gm_click_lines; DROP TABLE IF EXISTS gm_click_joined")


def _unsplit(con) -> bool:
    """Whether ``gm_src`` holds a row whose quotes or fields did not split: the first line of a
    field quoted over several lines is one."""
    return con.execute(
        "SELECT count(*) > 0 FROM gm_src "
        "WHERE err = 'unbalanced quotes' OR starts_with(err, 'expected ')"
    ).fetchall()[0][0]


# The most lines one CSV field is joined over: a query typed into a text box holds a few line
# breaks; a stray quote must not take the rows after it.
_JOIN_MAX = 20

# Each line holding an odd number of quotes opens a field that goes on to the next such line
# (within _JOIN_MAX lines); the lines between them are joined, with a line feed (what Excel
# writes inside a cell), only where the joined row splits into at most ``$n`` fields with every
# quote closed, so a stray quote's line stays its own reject.
_JOIN_QUOTED = r"""
CREATE OR REPLACE TEMP TABLE gm_click_joined AS
WITH gm_all AS MATERIALIZED (SELECT line, raw, err FROM {lines}),
odd AS (
    SELECT line, row_number() OVER (ORDER BY line) AS k, lead(line) OVER (ORDER BY line) AS ends
    FROM gm_all
    WHERE err IS NULL AND (length(raw) - length(replace(raw, '"', ''))) % 2 = 1
),
joined AS (
    SELECT o.line, o.ends, string_agg(l.raw, chr(10) ORDER BY l.line) AS raw
    FROM odd o JOIN gm_all l ON l.line BETWEEN o.line AND o.ends
    WHERE o.k % 2 = 1 AND o.ends - o.line <= {join_max}
    GROUP BY o.line, o.ends
),
kept AS (
    SELECT line, ends, raw FROM (
        SELECT *, regexp_extract_all(raw, {field}, 1) AS f FROM joined)
    WHERE len(f) <= $n AND NOT ({quotes_bad})
)
SELECT l.line, coalesce(k.raw, l.raw) AS raw, l.err
FROM gm_all l
LEFT JOIN kept k ON k.line = l.line
WHERE NOT EXISTS (SELECT 1 FROM kept j WHERE l.line > j.line AND l.line <= j.ends)
"""


def _join_quoted(con, lines: str, params: dict, n: int, delim: str) -> bool:
    """``gm_click_joined(line, raw, err)``: ``lines`` (SQL of ``line, raw, err`` read with
    ``params``) with each CSV field quoted over several lines made one row, at its first line
    (``_JOIN_QUOTED``); whether any was. Only a file with a row that did not split pays for it
    (``_unsplit``): its lines are read again."""
    sql = _JOIN_QUOTED.format(
        lines=lines, join_max=_JOIN_MAX, field=_csv_field(delim), quotes_bad=_QUOTES_BAD
    )
    run_sql(con, sql, {**params, "n": n})
    joined = con.execute(
        "SELECT count(*) FILTER (WHERE contains(raw, chr(10))) > 0 FROM gm_click_joined"
    ).fetchall()[0][0]
    if not joined:
        con.execute("DROP TABLE gm_click_joined")
    return joined


def _analytics_view(con, header: list[str]) -> list[str]:
    """``gm_raw`` over the text columns; their names, each once (``raw_view`` makes a map of
    them), as the TSV reader names a repeated column."""
    from goldmine.ingest.corpus_formats import _unique
    from goldmine.ingest.files import raw_view

    names = _unique(header)
    raw_view(con, names)
    return names


def _analytics_sql(n: int, delim: str, lines: str, header: int = 1, sectioned: bool = False) -> str:
    """``gm_src`` from ``lines``: a row without a quote has no field to unquote, and its fields
    are kept as they are split (``header``, ``sectioned``: see ``_click_rows_sql``)."""
    quoted = delim != "\t"
    rows = _click_rows_sql(n, quoted, lines, header, sectioned, delim)  # gm_col<i> left unread
    value = f"CASE WHEN q THEN {_UNQUOTED} ELSE v END" if quoted else "v"
    fields = ", ".join(
        f"CASE WHEN reject IS NULL THEN {value.replace('v', f'f[{i}]')} END AS gm_f{i}"
        for i in range(1, n + 1)
    )
    has_quote = """contains(raw, '"')""" if quoted else "false"
    return f"""
        CREATE OR REPLACE TEMP TABLE gm_src AS
        SELECT line, CASE WHEN reject IS NOT NULL THEN raw END AS raw, reject AS err, {fields}
        FROM (SELECT *, {has_quote} AS q FROM ({rows}))
    """


def _read_clicklog(
    con,
    path: Path,
    compression: str,
    header: list[str],
    cols: dict,
    delim: str,
    by_line: bool = False,
) -> None:
    """``gm_raw``: a record per search, made in the statement that reads the lines
    (``_read_split``)."""
    _read_split(
        con,
        path,
        compression,
        "clicklog",
        lambda lines, _params: _clicklog_sql(header, cols, delim, lines),
        by_line,
        (len(header), delim),
    )
    con.execute("CREATE OR REPLACE TEMP VIEW gm_raw AS SELECT line, raw, err FROM gm_src")


def _read_clicklog_by_line(
    con, path: Path, compression: str, header: list[str], cols: dict, delim: str
) -> None:
    """``gm_raw`` as ``_read_clicklog`` makes it, from a table of the lines (``read_lines``)."""
    _read_clicklog(con, path, compression, header, cols, delim, by_line=True)


def _clicklog_sql(header: list[str], cols: dict, delim: str, lines: str) -> tuple[str, dict]:
    """The statement making ``gm_src`` from ``lines`` (SQL of ``line, raw, err``), and its
    parameters: the columns of no part of an event are kept under their names."""
    col = {k: f"gm_col{i}" for k, i in cols.items()}
    part = {k: _trimmed(col[k]) if k in col else "NULL::VARCHAR" for k in _PARTS}
    used = {cols[k] for k in cols}
    others = [(header[i], f"gm_col{i}") for i in range(len(header)) if i not in used]
    rows = _click_rows_sql(len(header), delim != "\t", lines, delim=delim)
    return _click_events(part, others, rows), {"others": [h for h, _ in others], "delim": delim}


_PARTS = ("user", "session", "query", "time", "doc", "rank")

# Each request line's parts, its query string's parameters decoded ("+" a space, %XX a byte of
# UTF-8), and its search words: the first search parameter (SEARCH_PARAMS) given.
# A parameter's text: "+" a space, %XX a byte of UTF-8; left as written where the bytes are not
# UTF-8 (a Latin-1 form's %E9), which url_decode refuses.
URL_TEXT = """
CREATE OR REPLACE TEMP MACRO gm_url_text(s) AS
    coalesce(try(url_decode(replace(s, '+', ' '))), replace(s, '+', ' '));
CREATE OR REPLACE TEMP MACRO gm_url_once(s) AS coalesce(try(url_decode(s)), s);
"""
_COMBINED_PARTS = """
    SELECT line, raw, err, CASE WHEN err IS NULL THEN regexp_extract(raw, $gm_access,
        ['client', 'user', 'time', 'method', 'target', 'status', 'referer', 'agent']) END AS r
    FROM {lines}
"""
# The W3C extended format (CloudFront, IIS): its #Fields line names the columns, split by tabs
# (CloudFront) or spaces (IIS); a line of another count of fields is no request (a reject), a
# "#" line a directive (no row). CloudFront writes a query string's "%" as %25 (q=caf%25C3%25A9):
# such a query string is decoded once before its parameters are.
_W3C_PARTS = """
    SELECT line, raw, err, CASE
        WHEN err IS NOT NULL OR starts_with(raw, '#') THEN NULL
        WHEN len(f) <> $gm_n THEN {'client': '', 'user': '', 'time': '', 'method': '',
            'target': '', 'status': '', 'referer': '', 'agent': ''}
        ELSE {'client': f[$gm_ip], 'user': coalesce(f[$gm_user], '-'),
              'time': f[$gm_date] || ' ' || f[$gm_time], 'method': f[$gm_method],
              'target': f[$gm_stem] || CASE WHEN f[$gm_query] NOT IN ('', '-') THEN '?' || CASE
                  WHEN contains(f[$gm_query], '%25') THEN gm_url_once(f[$gm_query])
                  ELSE f[$gm_query] END ELSE '' END,
              'status': f[$gm_status], 'referer': f[$gm_referer], 'agent': f[$gm_agent]} END AS r
    FROM (SELECT *, CASE WHEN err IS NULL THEN string_split(raw, $gm_delim) END AS f
          FROM {lines})
"""
_ACCESS_SQL = """
CREATE OR REPLACE TEMP TABLE gm_access AS
WITH parts AS ({parts}),
params AS (
    SELECT *, CASE WHEN contains(r.target, '?') THEN list_transform(
            string_split(split_part(substr(r.target, strpos(r.target, '?') + 1), '#', 1), '&'),
            lambda kv: {'k': lower(gm_url_text(split_part(kv, '=', 1))),
                        'v': gm_url_text(substr(kv, strpos(kv, '=') + 1))})
        END AS kv
    FROM parts
)
SELECT line, raw, err, r, r.client <> '' AS request,
    list_filter([list_filter(kv, lambda p: p.k = n AND trim(p.v) <> '')[1].v
                 FOR n IN $gm_search_params], lambda v: v IS NOT NULL)[1] AS q,
    list_bool_or([try_cast(p.v AS INTEGER) > CASE WHEN p.k IN ('page', 'p', 'pg') THEN 1 ELSE 0
                  END FOR p IN coalesce(kv, []) IF list_contains($gm_page_params, p.k)])
        AS later_page,
    coalesce(epoch(try_strptime(r.time, '%d/%b/%Y:%H:%M:%S %z')),
             epoch(try_strptime(r.time, '%Y-%m-%d %H:%M:%S'))) AS t
FROM params
"""
# The searches: a request that gives search words, read as a search page shown to a person:
# not a later page of one, a redirect, a HEAD or OPTIONS request (no page shown), nor a
# crawler's (a user agent naming itself a bot, crawler or spider: search engines follow links
# to search pages). A client's (address and user agent) searches less than 30 minutes apart
# are one session; the session is known by a hash, never by the address.
_ACCESS_EVENTS = """
CREATE OR REPLACE TEMP TABLE gm_src AS
WITH searches AS (
    SELECT * FROM gm_access
    WHERE err IS NOT NULL OR r.client = ''
       OR (q IS NOT NULL AND NOT coalesce(later_page, false)
           AND r.status NOT IN ('301', '302', '303', '307', '308')
           AND upper(r.method) NOT IN ('HEAD', 'OPTIONS')
           AND NOT regexp_matches(coalesce(r.agent, ''), '(?i)bot\\b|bot/|crawl|spider|slurp'))
),
keyed AS (
    SELECT *, left(md5(r.client || chr(31) || coalesce(r.agent, '')), 16) AS client,
           lag(t) OVER (PARTITION BY r.client, r.agent ORDER BY t NULLS LAST, line) AS prev
    FROM searches WHERE err IS NULL AND r.client <> ''
),
sessions AS (
    SELECT line, client || '@' || coalesce(max(CASE WHEN prev IS NULL OR t - prev > {gap}
        THEN t END) OVER (PARTITION BY client ORDER BY t NULLS LAST, line
                          ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)::BIGINT::VARCHAR,
        '') AS session_id
    FROM keyed
)
SELECT line,
    CASE WHEN err IS NOT NULL OR r.client = '' THEN raw
         ELSE to_json({'ts': coalesce(t::VARCHAR, r.time), 'session_id': session_id,
                       'user_id': nullif(r.user, '-'), 'query': q, 'method': r.method,
                       'path': split_part(r.target, '?', 1), 'status': r.status})::VARCHAR
    END AS raw,
    CASE WHEN err IS NOT NULL THEN err
         WHEN r.client = '' THEN 'not an access log line (nginx or Apache combined format)'
    END AS err
FROM searches LEFT JOIN sessions USING (line)
"""


def _read_access_log(con, path: Path, compression: str) -> None:
    """``gm_raw``: a JSON record per search request of a web server's access log; the other
    requests stay in ``gm_access``, counted by ``access_skipped``."""
    from goldmine.ingest.scan import read_head

    con.execute(URL_TEXT)
    params = {"gm_search_params": list(SEARCH_PARAMS), "gm_page_params": list(PAGE_PARAMS)}
    fields = _w3c_fields(read_head(path, compression, 1 << 16))
    if fields is None:
        parts, params["gm_access"] = _COMBINED_PARTS, ACCESS_LINE
    else:
        parts = _W3C_PARTS
        params.update(fields)
    sql = _ACCESS_SQL.replace("{parts}", parts)
    _read_split(
        con, path, compression, "accesslog",
        lambda lines, _params: (sql.replace("{lines}", lines), params),
    )  # fmt: skip
    con.execute(_ACCESS_EVENTS.replace("{gap}", str(SESSION_GAP_S)))
    con.execute("CREATE OR REPLACE TEMP VIEW gm_raw AS SELECT line, raw, err FROM gm_src")
    searches, requests = con.execute(
        "SELECT (SELECT count(*) FROM gm_src), count(*) FROM gm_access WHERE request"
    ).fetchall()[0]
    if requests and not searches:  # else "holds no rows", as if the file were empty
        raise InputError(
            f"none of its {requests:,} requests is a search: none gives search words in a "
            f"parameter goldmine knows ({', '.join(SEARCH_PARAMS)}), other than a later page "
            "or a redirect",
            path=path,
        )


# Each Solr request line's parts and parameters; its search: the q of a request that is no shard's
# part of a distributed search (isShard, distrib=false), no later page (start past 0), and no
# match-all (*:*, which browsing and faceting send).
_SOLR_SQL = """
CREATE OR REPLACE TEMP TABLE gm_access AS
WITH parts AS (
    SELECT line, raw, err, CASE WHEN err IS NULL THEN regexp_extract(raw, $gm_solr,
        ['time', 'core', 'path', 'params', 'hits', 'status']) END AS r
    FROM {lines}
),
params AS (
    SELECT *, CASE WHEN r.path <> '' THEN list_transform(string_split(r.params, '&'),
            lambda kv: {'k': gm_url_text(split_part(kv, '=', 1)),
                        'v': gm_url_text(substr(kv, strpos(kv, '=') + 1))}) END AS kv
    FROM parts
)
SELECT line, raw, err, r, r.path <> '' AS request,
    CASE WHEN NOT list_bool_or([(p.k = 'isShard' AND p.v = 'true')
                                OR (p.k = 'distrib' AND p.v = 'false')
                                OR (p.k = 'start' AND try_cast(p.v AS INTEGER) > 0)
                                FOR p IN coalesce(kv, [])])
         THEN list_filter(kv, lambda p: p.k = 'q' AND trim(p.v) NOT IN ('', '*:*', '*'))[1].v
    END AS q
FROM params
"""
_SOLR_EVENTS = """
CREATE OR REPLACE TEMP TABLE gm_src AS
SELECT line,
    CASE WHEN err IS NOT NULL THEN raw
         ELSE to_json({'ts': r.time, 'query': q, 'num_results': nullif(r.hits, ''),
                       'core': r.core, 'path': r.path, 'status': r.status})::VARCHAR END AS raw,
    err
FROM gm_access WHERE err IS NOT NULL OR q IS NOT NULL
"""


def _read_solr_log(con, path: Path, compression: str) -> None:
    """``gm_raw``: a JSON record per search of a Solr log (solr.log's request lines); its other
    lines (other requests, the server's messages) stay in ``gm_access``."""
    con.execute(URL_TEXT)
    _read_split(
        con, path, compression, "solrlog",
        lambda lines, _params: (_SOLR_SQL.replace("{lines}", lines), {"gm_solr": SOLR_LINE}),
    )  # fmt: skip
    con.execute(_SOLR_EVENTS)
    con.execute("CREATE OR REPLACE TEMP VIEW gm_raw AS SELECT line, raw, err FROM gm_src")
    searches, requests = con.execute(
        "SELECT (SELECT count(*) FROM gm_src), count(*) FILTER (WHERE request) FROM gm_access"
    ).fetchall()[0]
    if not searches:  # else "holds no rows", as if the file were empty
        raise InputError(
            f"none of its {requests:,} Solr requests is a search: none gives a q (other than "
            "*:*) outside a shard's part of a distributed search or a later page",
            path=path,
        )


def access_skipped(con: duckdb.DuckDBPyConnection) -> int:
    """How many requests of the access or Solr log last read were no search: no search words,
    a later page of a search, a redirect, a shard's part of a distributed search."""
    return con.execute(
        "SELECT count(*) FROM gm_access WHERE err IS NULL AND request AND line NOT IN "
        "(SELECT line FROM gm_src)"
    ).fetchall()[0][0]


def _trimmed(column: str) -> str:
    """SQL: the value without its edge spaces, NULL when nothing is left; trimmed (a copy) only
    where an edge is a space, which few values have (five columns of 1M rows: 1.90 s -> 1.46 s)."""
    return (
        f"CASE WHEN starts_with({column}, ' ') OR ends_with({column}, ' ') "
        f"THEN nullif(trim({column}), '') ELSE nullif({column}, '') END"
    )


def _click_events(part: dict[str, str], others: list[tuple[str, str]], rows: str) -> str:
    """SQL grouping the click rows into searches (one record each, at its first row's line).
    The rows that could not be read or split are records with the reason: each is a group of
    its own (its columns, the query too, are NULL), so one pass over the lines makes both (a
    second pass for the rejects read and split every line again)."""
    rank = f"gm_rank({part['rank']})"
    kept = ", ".join(f"any_value({c}) AS {c}" for _, c in others)
    names = "".join(f", {c}" for _, c in others)
    extra = (
        f"to_json(map($others, [{', '.join(c for _, c in others)}]))" if others else "'{}'::JSON"
    )
    gap = SESSION_GAP_S
    # A struct made JSON once: json_object of the same members took a tenth longer.
    event = """to_json({
        'event_id': CASE WHEN q IS NOT NULL THEN
            'c-' || gm_content_hash(concat_ws(chr(31), u, sess, q, t)) END,
        'user_id': u, 'session_id': session_id, 'query': q, 'ts': t,
        'clicked_ids': clicked, 'click_ranks': ranks})"""
    # The merge drops the event's NULL members too. Without other columns it is needed only for
    # an event holding a NULL (clicked_ids and click_ranks never are): it was a third of the
    # reader's time on a log whose every column is one of the event's.
    raw = f"json_merge_patch({extra}, {event})"
    if not others:
        nulls = "u IS NULL OR session_id IS NULL OR q IS NULL OR t IS NULL"
        raw = f"CASE WHEN {nulls} THEN json_merge_patch('{{}}', {event}) ELSE {event} END"
    return f"""
CREATE OR REPLACE TEMP TABLE gm_src AS
WITH click_rows AS (
    SELECT line, {part["user"]} AS u, {part["session"]} AS sess,
           {part["query"]} AS q, {part["time"]} AS t, {part["doc"]} AS doc, {rank} AS rank,
           {part["rank"]} AS rank_text, reject, CASE WHEN reject IS NOT NULL THEN raw END AS bad,
           * EXCLUDE (line, raw, reject)
    FROM ({rows})
),
-- A search's clicks by rank (then row): a list of structs sorted once, not an ordered aggregate.
-- A row without a query is a search of its own (a reject each, at its line), never grouped.
searches AS (
    SELECT line, u, sess, q, t, reject, bad, [c.doc FOR c IN clicks] AS clicked,
           [c.rank FOR c IN clicks IF c.rank IS NOT NULL] AS ranks{names}
    FROM (SELECT min(line) AS line, u, sess, q, t, any_value(reject) AS reject,
                 any_value(bad) AS bad,
                 list_sort(coalesce(list({{'rank': rank, 'line': line,
                                           'doc': coalesce(doc, rank_text)}})
                     FILTER (WHERE doc IS NOT NULL OR rank_text IS NOT NULL), [])) AS clicks
                 {", " + kept if kept else ""}
          FROM click_rows GROUP BY u, sess, q, t, CASE WHEN q IS NULL THEN line END)
),
-- A session starts at a user's first search and after each gap over the cut: its start is the
-- running maximum of those starts (one ordering of the user's searches serves both windows).
-- The windows sort each search's user, time and line only, joined back on the line (a search's
-- first line): sorting the searches whole, lists and all, was a third of the reader's time.
gaps AS (
    SELECT line, u, gm_at, lag(gm_at) OVER (PARTITION BY u ORDER BY gm_at NULLS LAST, line) AS prev
    FROM (SELECT line, u, gm_ts(t) AS gm_at FROM searches WHERE reject IS NULL)
),
starts AS (
    SELECT line, coalesce(strftime(max(
        CASE WHEN prev IS NULL OR date_diff('second', prev, gm_at) > {gap} THEN gm_at END)
        OVER (PARTITION BY u ORDER BY gm_at NULLS LAST, line
              ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW), '%Y-%m-%dT%H:%M:%S'), '')
        AS start
    FROM gaps
),
sessions AS (
    SELECT searches.*, coalesce(sess, u || '@' || start) AS session_id
    FROM searches LEFT JOIN starts USING (line)
)
SELECT line, CASE WHEN reject IS NULL THEN {raw}::VARCHAR ELSE bad END AS raw, reject AS err
FROM sessions
"""


# --- dates whose day/month order the file must tell -------------------------------------------

# The reason of a row whose date may be either: its file, or --ts-format, must tell.
# What a search log gives for a search without a query, beside nothing: AOL's "-", Google
# Analytics' "(not set)" and "(not provided)" (both engines: gm_no_query, spark.translate).
NO_QUERY = ("", "-", "(not set)", "(not provided)")
# White space of any kind (RE2; Spark's translate reads it too): ASCII's, the no-break and
# typographic spaces, the line and paragraph separators, and the zero-width ones.
BLANK = (
    r"[\s\x{000B}\x{0085}\x{00A0}\x{00AD}\x{1680}\x{180E}\x{2000}-\x{200D}\x{2028}\x{2029}\x{202F}"
    r"\x{205F}\x{2060}\x{3000}\x{FEFF}]*"
)
AMBIGUOUS = "ambiguous date (day/month or month/day? --ts-format names the layout): "

# d/m/y or m/d/y (with /, - or .; a time and AM/PM may follow): the order is the one where a
# part over 12 can only be the day; a dotted date is day-first (as it is written where dots are
# used). Both parts 12 or under: 'ambiguous', read in the order ``file_order`` names (the one the
# file's other dates showed, or --ts-format), else not at all.
DATE_MACROS = ENTITY_MACROS + (
    r"""
CREATE OR REPLACE TEMP MACRO gm_dmy_parts(s) AS regexp_extract(trim(s),
    '^([0-9]{1,2})([/.-])([0-9]{1,2})[/.-]([0-9]{4})'
    || '(?:[ T,]+([0-9]{1,2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,9})?)?)\s*([AaPp][Mm])?)?$',
    ['a', 'sep', 'b', 'y', 't', 'half']);
CREATE OR REPLACE TEMP MACRO gm_dmy_order(p) AS CASE
    WHEN p.y = '' THEN NULL
    WHEN p.sep = '.' THEN 'dmy'
    WHEN try_cast(p.a AS INTEGER) > 12 THEN CASE WHEN try_cast(p.b AS INTEGER) <= 12 THEN 'dmy' END
    WHEN try_cast(p.b AS INTEGER) > 12 THEN 'mdy'
    ELSE 'ambiguous' END;
CREATE OR REPLACE TEMP MACRO gm_dmy_at(p, o) AS CASE WHEN o IN ('dmy', 'mdy') THEN try_cast(
    p.y || '-' || lpad(CASE WHEN o = 'dmy' THEN p.b ELSE p.a END, 2, '0') || '-'
    || lpad(CASE WHEN o = 'dmy' THEN p.a ELSE p.b END, 2, '0') || ' '
    || coalesce(nullif(p.t, ''), '00:00:00') AS TIMESTAMP)
    + CASE WHEN upper(p.half) = 'PM' AND p.t NOT LIKE '12:%' THEN INTERVAL 12 HOUR
           WHEN upper(p.half) = 'AM' AND p.t LIKE '12:%' THEN INTERVAL (-12) HOUR
           ELSE INTERVAL 0 HOUR END END;
-- The timestamp of a value's parts ``p`` (gm_dmy_parts), ambiguous ones in ``file_order``.
CREATE OR REPLACE TEMP MACRO gm_dmy_from(p, file_order) AS gm_dmy_at(p,
    CASE WHEN gm_dmy_order(p) = 'ambiguous' THEN file_order ELSE gm_dmy_order(p) END);
CREATE OR REPLACE TEMP MACRO gm_dmy_ts(s, file_order) AS gm_dmy_from(gm_dmy_parts(s), file_order);
-- The order a value shows ('dmy', 'mdy', 'ambiguous'), tested only where its second or third
-- character is a date separator (an ISO date's is not), so a clean file pays a substr per row.
CREATE OR REPLACE TEMP MACRO gm_dmy_shown(s) AS CASE
    WHEN substr(s, 2, 1) IN ('/', '-', '.') OR substr(s, 3, 1) IN ('/', '-', '.')
        THEN gm_dmy_order(gm_dmy_parts(s)) END;
-- Why a time ``s`` was not read: ambiguous (``shown``, gm_dmy_shown's) names --ts-format.
CREATE OR REPLACE TEMP MACRO gm_unread_time(s, shown) AS CASE WHEN shown = 'ambiguous'
    THEN '@AMBIGUOUS@' ELSE 'unparseable timestamp: ' END || left(s, 60);
-- Whether a time read from a log can be one (goldmine.signals.TIME_RANGE).
CREATE OR REPLACE TEMP MACRO gm_in_time(t) AS
    t::TIMESTAMP BETWEEN TIMESTAMP '@EARLIEST@' AND TIMESTAMP '@LATEST@';
-- A rank as a place on a page (0 or 1 first, as the export counts; "3.0" is 3): NULL for what is
-- none (-1, 3.5, a rank past 32 bits), which readers treat as an unreadable rank.
-- A query a search log gives as none: empty, or the placeholder an export writes for a search
-- without one (AOL's "-", Google Analytics' "(not set)").
-- Nothing but white space, of any kind: trim() takes spaces alone, so a query or a text of a
-- newline and a tab was stored (and a zero-width space shows nothing either).
CREATE OR REPLACE TEMP MACRO gm_blank(s) AS s IS NULL OR regexp_full_match(s, '@BLANK@');
CREATE OR REPLACE TEMP MACRO gm_no_query(q) AS
    gm_blank(q) OR trim(q) IN (@NO_QUERY@);
-- Whether an analytics export's numbers have a decimal comma: its reader says, per file.
CREATE OR REPLACE TEMP MACRO gm_decimal_comma() AS false;
-- XML's numeric character references (``caf&#233;``, ``&#x2019;``) read where each names a
-- character (html_text's gm_entity_char: any other is left as written).
CREATE OR REPLACE TEMP MACRO gm_xml_refs(t) AS CASE WHEN contains(t, '&#') THEN list_reduce(
    regexp_extract_all(t, '&#([0-9]{1,8}|[xX][0-9a-fA-F]{1,6});'),
    lambda acc, r: replace(acc, r, gm_entity_char(r)), t) ELSE t END;
CREATE OR REPLACE TEMP MACRO gm_xml_once(t) AS gm_xml_refs(replace(replace(replace(replace(
    replace(replace(t, '&lt;', '<'), '&gt;', '>'), '&quot;', '"'), '&apos;', ''''), '&#39;',
    ''''), '&amp;', '&'));
-- A tag's text with XML's entities read and spaces trimmed. The 2012 Session Track file escapes
-- its ampersands twice (``merck &amp;amp; co.``, typed as ``merck & co.``): an entity left
-- after the first reading is read again.
CREATE OR REPLACE TEMP MACRO gm_xml_text(t) AS CASE WHEN contains(t, '&') THEN trim(CASE
    WHEN regexp_matches(t, '&amp;(amp|lt|gt|quot|apos|#[0-9]+|#[xX][0-9a-fA-F]+);')
        THEN gm_xml_once(gm_xml_once(t)) ELSE gm_xml_once(t) END) ELSE trim(t) END;
CREATE OR REPLACE TEMP MACRO gm_rank(s) AS CASE
    WHEN try_cast(s AS INTEGER) >= 0 AND try_cast(s AS DOUBLE) = try_cast(s AS INTEGER)
        THEN try_cast(s AS INTEGER) END;
""".replace("@EARLIEST@", TIME_RANGE[0])
    .replace("@LATEST@", TIME_RANGE[1])
    .replace("@AMBIGUOUS@", AMBIGUOUS)
    .replace("@NO_QUERY@", ", ".join(f"'{q}'" for q in NO_QUERY))
    .replace("@BLANK@", BLANK)
)


class AmbiguousDates(Exception):
    """A file's staged rows hold dates of unknown day/month order: ``order`` is the one its other
    dates show (stage it again reading them so), None when none does."""

    def __init__(self, order: str | None, example: str) -> None:
        super().__init__(example)
        self.order, self.example = order, example


def check_dates(con: duckdb.DuckDBPyConnection, _batch_id: int) -> dict:
    """Run as the batch's summary, inside its transaction (raising rolls the batch back): a file
    with ambiguous dates whose other dates show one order is staged again in that order; a file
    whose every date is ambiguous is an error naming --ts-format. A file whose dates show both
    orders keeps the ambiguous rows as rejects, each naming the option."""
    amb, dmy, mdy, dated, example = con.execute(
        f"""SELECT count(*) FILTER (WHERE starts_with(reason, $p)),
                   count(*) FILTER (WHERE reason IS NULL AND gm_dates = 'dmy'),
                   count(*) FILTER (WHERE reason IS NULL AND gm_dates = 'mdy'),
                   count(*) FILTER (WHERE reason IS NULL AND ts IS NOT NULL),
                   min(substr(reason, {len(AMBIGUOUS) + 1})) FILTER (WHERE starts_with(reason, $p))
            FROM gm_stage""",
        {"p": AMBIGUOUS},
    ).fetchall()[0]
    if not amb:
        return {}
    if (dmy > 0) != (mdy > 0):
        raise AmbiguousDates("dmy" if dmy else "mdy", example)
    if dated == 0:
        raise AmbiguousDates(None, example)
    return {}


def check_ts_format(con: duckdb.DuckDBPyConnection, ts_format: str | None) -> None:
    """A --ts-format DuckDB's strptime cannot use is one line, before any file is read."""
    if ts_format is None:
        return
    try:
        con.execute("SELECT try_strptime('2026-01-01', $f)", {"f": ts_format}).fetchall()
    except duckdb.Error as exc:
        said = str(exc).strip().splitlines()[0].split("Error: ", 1)[-1]
        raise InputError(f"--ts-format {ts_format!r} is not a strptime layout: {said}") from exc
