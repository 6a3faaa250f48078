"""Corpora as IR collections ship them: SMART, TREC SGML and TSV collections, told by content.

Cranfield, MED, CISI and CACM come as SMART (``.I``/``.T``/``.A``/``.B``/``.W`` lines), the TREC
disks, Robust04 and AP as SGML that is not quite XML (unescaped ``&``, unclosed tags), MS MARCO and
DPR as TSV: none of them has a suffix that says so, and a user should not have to write a
converter. Each reader makes the view ``gm_raw(line, raw, err)`` of JSON objects that every
target reads (``files.read_raw``), one per record, its line the record's first line.

The files are read as lines by DuckDB and the records assembled in SQL: a running count of the
lines that open a record (``.I``, ``<DOC>``) gives each line its record number, and the record's
fields are cut out of its lines with RE2 patterns, as the TREC tools read these files (by line
and pattern, never an XML parser, which would stop at the first bare ``&``).
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

# Field letters with the names ir_datasets gives them; other letters keep their own.
SMART_FIELDS = {"I": "id", "T": "title", "W": "text", "A": "author", "B": "bib"}

_SMART_LINE = re.compile(rb"^\.I(?:[ \t]+\S+)?[ \t]*\r?$")
_TREC_LINE = re.compile(rb"^\s*<DOC>", re.IGNORECASE)
_LOOK = 10  # lines in which a record must open for a file to be told as SMART or TREC
_HEADER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")


def sniff(head: bytes) -> str | None:
    """``smart``, ``trec`` or ``tsv`` from a file's first bytes (decompressed), or None.

    SMART and TREC SGML are told by a line among the first few that opens a record (``.I n``,
    ``<DOC>``; a stray line before it is a reject), which no JSON, CSV or Parquet file has; TSV
    by a tab in a first line that is none of those.
    """
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
    lines = [line for line in text.split(b"\n", _LOOK)[:_LOOK] if line.strip()]
    for line in lines:
        if _SMART_LINE.match(line):
            return "smart"
        if _TREC_LINE.match(line):
            return "trec"
    first = lines[0] if lines else b""
    if b"\t" in first and first[:1] not in (b"{", b"[", b"<") and b"\0" not in head:
        return "tsv"
    return None


# The names collections' headers give their columns (MS MARCO's and DPR's tools, ir_datasets,
# Pyserini, BEIR): a first row of these is a header whatever the ids below it look like.
_KNOWN_COLUMNS = frozenset(
    ("id", "docid", "doc_id", "did", "pid", "passage_id", "_id", "text", "title", "passage",
     "contents", "content", "body", "url", "document", "doc", "segment", "headings")
)  # fmt: skip
_LOOK_ROWS = 20  # rows after the first whose ids the first row's first field is compared with


def tsv_columns(lines: list[str]) -> tuple[list[str], bool]:
    """The column names of a TSV collection and whether its first line is a header.

    A header is told by content: every field is a name (a letter or ``_``, then no space), and
    either every one is a name collections use (id, docid, text, title, passage, contents, …)
    or the first field is not shaped like the ids of the rows below it. MS MARCO's first line
    (``0<TAB>The presence of …``) is data, DPR's (``id<TAB>text<TAB>title``) a header, and so
    is neither ``D301595<TAB>photosynthesis`` above ``D1359209<TAB>…``. Without a header the
    columns are id, text, title, then ``column4`` on.
    """
    fields = lines[0].rstrip("\r\n").split("\t") if lines else [""]
    ids = {_shape(line.split("\t", 1)[0]) for line in lines[1 : _LOOK_ROWS + 1] if line.strip()}
    if all(_HEADER_NAME.fullmatch(f) for f in fields) and (
        all(f.lower() in _KNOWN_COLUMNS for f in fields) or _shape(fields[0]) not in ids
    ):
        return fields, True
    names = ["id", "text", "title"][: len(fields)]
    return names + [f"column{i}" for i in range(len(names) + 1, len(fields) + 1)], False


def _shape(field: str) -> str:
    """An id's shape: its runs of letters as ``a`` and of digits as ``9`` (D301595 -> a9)."""
    return re.sub(r"[0-9]+", "9", re.sub(r"[A-Za-z]+", "a", field.strip()))


def first_lines(path: Path, compression: str) -> list[str]:
    """The first lines of the file (from its first MiB; a line cut there is only compared by
    its first field)."""
    from goldmine.ingest.scan import open_compressed

    with open_compressed(path, compression) as handle:
        head = handle.read(1 << 20)
    lines = head.removeprefix(b"\xef\xbb\xbf").split(b"\n", _LOOK_ROWS + 1)[: _LOOK_ROWS + 1]
    return [line.decode("utf-8", "replace") for line in lines]


# A line the reader could not read (invalid UTF-8) has no record number: it is a reject of its
# own, with its line, and the record around it is read without it.
_LINE_ERR = "min(err)"
# Running counts over the lines in file order, which the reader streams (no sort).
_RUNNING = "OVER (ROWS UNBOUNDED PRECEDING)"

# SMART: a marker line is ``.X`` or ``.X value``; a record runs from one ``.I`` to the next (its
# number ``rec``), a field from its marker to the next marker (``fld``). Lines before the first
# ``.I`` are one reject; a line the reader could not read is one of its own (rec NULL).
# The running counts are computed as the lines are read, on one thread (they need file order),
# so the tests there are plain string functions, never a regex.
_AFTER_MARK = "(strlen(raw) = 2 OR substr(raw, 3, 1) IN (' ', chr(9)))"
_SMART_MARK = (
    f"(starts_with(raw, '.') AND ascii(substr(raw, 2, 1)) BETWEEN 65 AND 90 AND {_AFTER_MARK})"
)
_SMART_COLUMNS = (
    f"sum((starts_with(raw, '.I') AND {_AFTER_MARK})::INT) {_RUNNING} AS rec",
    f"sum({_SMART_MARK}::INT) {_RUNNING} AS fld",
)
_KNOWN = ", ".join(f"'{k}'" for k in SMART_FIELDS)


def _field(tag: str, sep: str = "chr(10)") -> str:
    """SQL for one field's text from a record's sorted lines ``s`` (every field of that letter,
    in order)."""
    return (
        f"trim(array_to_string(list_transform(list_filter(s, lambda x: x.t = '{tag}' "
        f"AND x.v <> ''), lambda x: x.v), {sep}), chr(10) || chr(13) || ' ')"
    )


_SMART_VALUES = ", ".join(
    f"'{name}', nullif({_field(tag)}, '')" if name != "text" else f"'text', {_field(tag)}"
    for tag, name in SMART_FIELDS.items()
    if name != "title"
)
# One aggregate per record: its lines, each with the letter of the field it is in (a join with
# the marker lines), as a list sorted by line; the fields are cut from the list. Cheaper than an
# ordered string_agg per field and then per record.
_SMART = f"""
CREATE OR REPLACE TEMP TABLE gm_src AS
WITH tagged AS (
    SELECT *, CASE WHEN {_SMART_MARK} THEN substr(raw, 2, 1) ELSE '' END AS tag FROM gm_lined
),
marks AS (SELECT fld, tag AS t FROM tagged WHERE tag <> ''),
lines AS (
    SELECT coalesce(l.rec, -l.line) AS rec, l.line, l.err, coalesce(m.t, '') AS t,
           CASE WHEN l.tag <> '' THEN substr(l.raw, 3) ELSE l.raw END AS v
    FROM tagged l LEFT JOIN marks m USING (fld)
),
others AS (  -- fields of other letters (CACM's .K, .X): metadata under their letter
    SELECT rec, to_json(map_from_entries(list({{'k': t, 'v': v}}))) AS other
    FROM (SELECT rec, t, trim(string_agg(v, chr(10) ORDER BY line), chr(10) || chr(13) || ' ') AS v
          FROM lines WHERE t NOT IN ({_KNOWN}, '') GROUP BY rec, t)
    GROUP BY rec
),
records AS (
    SELECT rec, min(line) AS line, min(err) AS err,
           list_sort(list({{'l': line, 't': t, 'v': v}})) AS s
    FROM lines GROUP BY rec
),
built AS (
    SELECT rec, line, err, {_field("I")} AS id,
           json_object('title', nullif(regexp_replace({_field("T", "' '")}, '\\s+', ' ', 'g'), ''),
                       {_SMART_VALUES}) AS known,
           array_to_string(list_transform(s, lambda x: x.v), chr(10)) AS text
    FROM records
)
SELECT line,
       CASE WHEN rec <= 0 THEN text
            WHEN other IS NULL THEN known::VARCHAR
            ELSE json_merge_patch(known, other)::VARCHAR END AS raw,
       CASE WHEN err IS NOT NULL THEN err
            WHEN rec = 0 THEN 'text before the first .I line'
            WHEN contains(id, chr(10)) THEN 'text after the .I line before the next field' END
           AS err
FROM built LEFT JOIN others USING (rec)
"""

# The tags a TREC document's title is in (AP's HEAD, LA Times' HEADLINE, WSJ's HL, FT's TITLE).
_TITLE_TAGS = "HEAD|HEADLINE|HL|TITLE"
# A markup tag inside a field (``<P>``, ``</P>``); a bare ``<`` in the text is no tag.
_TAG = "</?[A-Za-z][^<>]*>"

# A text the two regexes cleaning it would change: one holding a tag's ``<``, a tab or a run of
# spaces. Most lines of a document hold none, and the test is a third of the regexes' time.
_MARKUP_OR_RUNS = "(contains(x, '<') OR contains(x, chr(9)) OR contains(x, '  '))"

# TREC SGML: a record runs from a ``<DOC>`` line to the next. DOCNO ends at its close, a tag or
# the line's end; every TEXT block runs to its ``</TEXT>``, else to ``</DOC>`` or the record's
# end (an unclosed tag); markup inside is dropped, entities are left as written.
_DOC_LINE = (
    "CASE WHEN starts_with(raw, '<') THEN upper(substr(raw, 1, 5)) = '<DOC>' "
    "WHEN ascii(raw) IN (9, 32) THEN regexp_matches(raw, '^\\s*<(?i:DOC)>') ELSE false END"
)
_TREC_COLUMNS = (f"sum(({_DOC_LINE})::INT) {_RUNNING} AS rec",)
_TREC = f"""
CREATE OR REPLACE TEMP TABLE gm_src AS
WITH docs AS (
    SELECT rec, min(line) AS line, {_LINE_ERR} AS err,
           array_to_string(list_transform(list_sort(list({{'l': line, 'r': raw}})),
                                          lambda x: x.r), chr(10)) AS doc
    FROM (SELECT coalesce(rec, -line) AS rec, line, raw, err FROM gm_lined)
    GROUP BY rec
),
parts AS (
    SELECT rec, line, err, doc,
           trim(regexp_extract(doc, '(?i)<DOCNO>\\s*([^<\\n]*)', 1)) AS docno,
           regexp_extract_all(doc, '(?is)<(?:{_TITLE_TAGS})>(.*?)(?:</(?:{_TITLE_TAGS})>|</DOC>|$)',
                              1) AS titles,
           list_transform(string_split_regex(doc, '(?i)<TEXT>')[2:],
                          lambda t: regexp_replace(t, '(?is)</(?:TEXT|DOC)>.*', '')) AS texts
    FROM docs
),
clean AS (
    SELECT rec, line, err, doc, docno,
           trim(regexp_replace(regexp_replace(array_to_string(titles, ' '), '{_TAG}', '', 'g'),
                               '\\s+', ' ', 'g')) AS title,
           trim(array_to_string(list_transform(texts, lambda t:
                trim(CASE WHEN {_MARKUP_OR_RUNS.replace("x", "t")}
                          THEN regexp_replace(regexp_replace(t, '{_TAG}', '', 'g'), '[ \\t]+',
                                              ' ', 'g')
                          ELSE t END,
                     chr(10) || chr(13) || ' ')), chr(10)), chr(10)) AS text
    FROM parts
)
SELECT line,
       CASE WHEN rec <= 0 THEN doc
            ELSE json_object('id', docno, 'title', nullif(title, ''), 'text', text)::VARCHAR
       END AS raw,
       CASE WHEN err IS NOT NULL THEN err
            WHEN rec = 0 THEN 'text before the first <DOC> line' END AS err
FROM clean
"""

# TSV: one record a line, fields split at tabs; a field in CSV quotes (DPR's texts) loses them.
_UNQUOTED = (
    "CASE WHEN len(v) > 1 AND starts_with(v, '\"') AND ends_with(v, '\"') "
    "THEN replace(v[2:-2], '\"\"', '\"') ELSE v END"
)


def _tsv_sql(n: int) -> str:
    """The TSV reader for ``n`` columns, named by parameters ``$k1``..``$kn``."""
    fields = ", ".join(f"$k{i}, {_UNQUOTED.replace('v', f'f[{i}]')}" for i in range(1, n + 1))
    return f"""
        CREATE OR REPLACE TEMP TABLE gm_src AS
        SELECT line,
               CASE WHEN err IS NULL AND len(f) = {n} THEN json_object({fields})::VARCHAR
                    ELSE raw END AS raw,
               coalesce(err, CASE WHEN len(f) <> {n} THEN
                   'expected {n} tab-separated fields, found ' || len(f) END) AS err
        FROM (SELECT line, raw, err, string_split(raw, chr(9)) AS f
              FROM gm_lined WHERE line > $skip)
    """


def read(con: duckdb.DuckDBPyConnection, fmt: str, path: Path, compression: str) -> None:
    """``gm_src(line, raw, err)``: the records of a file in ``fmt`` (smart, trec or tsv)."""
    from goldmine.ingest.files import InputFile, read_lines

    item = InputFile(path, fmt, compression)
    if fmt == "smart":
        read_lines(con, item, _SMART_COLUMNS, "gm_lined")
        con.execute(_SMART)
    elif fmt == "trec":
        read_lines(con, item, _TREC_COLUMNS, "gm_lined")
        con.execute(_TREC)
    else:
        names, header = tsv_columns(first_lines(path, compression))
        read_lines(con, item, (), "gm_lined")
        params = {f"k{i}": name for i, name in enumerate(names, start=1)}
        con.execute(_tsv_sql(len(names)), {**params, "skip": 1 if header else 0})
    con.execute("DROP VIEW gm_lined")
