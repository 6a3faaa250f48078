"""Corpora as IR collections ship them: SMART, TREC SGML and TSV collections, told by content.

Cranfield, MED, CISI and CACM come as SMART (``.I``/``.T``/``.A``/``.B``/``.W`` lines), the TREC
disks, Robust04 and AP as SGML that is not quite XML (unescaped ``&``, unclosed tags), MS MARCO and
DPR as TSV: none of them has a suffix that says so, and a user should not have to write a
converter. Each reader makes the view ``gm_raw(line, raw, err)`` of JSON objects that every
target reads (``formats.read_raw``), one per record, its line the record's first line.

SMART and TREC SGML files are split into records before DuckDB sees them (``read_split``): the
lines that open a record (``.I``, ``<DOC>``) and, for SMART, each field's marker are found by a
few vector passes over the bytes, and DuckDB gets one row per record, slices of the file's bytes,
to cut the fields from (by pattern for TREC, as the TREC tools read these files, never with an
XML parser, which would stop at the first bare ``&``; a TREC record of the usual layout has its
fields cut where those patterns would cut them, by numpy at its tags). The split hands the stage
each record's fields as text columns (``files.typed_rows``, as a TSV collection's): no JSON object
is made per record nor parsed again (``json_object`` was half of the statements' time); a SMART
file with a field of another letter (CACM's ``.K``), a key of its own, is split again into JSON
objects. Splitting the records by native code rather than numpy was measured slower (see
``_BLOCK``). A file the split cannot read as the line reader would (invalid UTF-8, a CR ending
no line) and TSV are read as lines by DuckDB (``read_by_line``): a running count of the
record-opening lines numbers each line's record, and the records are gathered in SQL, at 10-30
times a bare read's cost for SMART and TREC.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, TypeVar

import duckdb

from goldmine.errors import InputError

# Field letters with the names ir_datasets gives them; other letters keep their own.
SMART_FIELDS = {"I": "id", "T": "title", "W": "text", "A": "author", "B": "bib"}
# A record's keys in the order of its JSON object (``gm_raw``), and of its text columns when the
# split hands them so (``read_split``): a SMART file's, unless a field of another letter is in it.
SMART_KEYS = ("title", "id", "text", "author", "bib")
TREC_KEYS = ("id", "title", "text")

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
_URL = re.compile(r"https?://\S+$")


def tsv_columns(lines: list[str]) -> tuple[list[str], bool]:
    """The column names of a TSV collection and whether its first line is a header.

    A header is told by content: every field is a name (a letter or ``_``, then no space), and
    either every one is a name collections use (id, docid, text, title, passage, contents, …)
    or the first field is not shaped like the ids of the rows below it. MS MARCO's first line
    (``0<TAB>The presence of …``) is data, DPR's (``id<TAB>text<TAB>title``) a header, and so
    is neither ``D301595<TAB>photosynthesis`` above ``D1359209<TAB>…``. Without a header the
    columns are id, text, title, then ``column4`` on; four whose second is a URL on every row
    looked at are MS MARCO's documents (msmarco-docs.tsv): id, url, title, text.
    """
    if not lines or not lines[0].strip():  # an empty file: no columns to tell, and no rows
        return ["id", "text"], False
    fields = lines[0].rstrip("\r\n").split("\t")
    ids = {id_shape(line.split("\t", 1)[0]) for line in lines[1 : _LOOK_ROWS + 1] if line.strip()}
    if all(_HEADER_NAME.fullmatch(f) for f in fields) and (
        all(f.lower() in _KNOWN_COLUMNS for f in fields) or id_shape(fields[0]) not in ids
    ):
        return _unique(fields), True
    if len(fields) == 4 and all(
        _URL.match(line.split("\t", 2)[1:2][0])
        for line in lines[: _LOOK_ROWS + 1]
        if line.count("\t") >= 2
    ):
        return ["id", "url", "title", "text"], False  # MS MARCO's msmarco-docs.tsv
    names = ["id", "text", "title"][: len(fields)]
    return names + [f"column{i}" for i in range(len(names) + 1, len(fields) + 1)], False


def _unique(names: list[str]) -> list[str]:
    """The header's names, a repeat renamed ``name_N`` (the first N no column has), so that no
    column's values are lost under another's name. Names are alike ignoring case, as DuckDB's
    fields are (``Text`` beside ``text`` would be left out)."""
    taken, seen, out = {n.lower() for n in names}, set(), []
    for name in names:
        if name.lower() in seen:
            n = 1
            while f"{name}_{n}".lower() in taken:
                n += 1
            name = f"{name}_{n}"
            taken.add(name.lower())
        seen.add(name.lower())
        out.append(name)
    return out


def id_shape(field: str) -> str:
    """An id's shape: its runs of letters as ``a`` and of digits as ``9`` (D301595 -> a9); also
    how ``add --file`` tells a topics file's ids (``manual._id_and_query``)."""
    return re.sub(r"[0-9]+", "9", re.sub(r"[A-Za-z]+", "a", field.strip()))


def first_lines(path: Path, compression: str) -> list[str]:
    """The first lines of the file (from its first MiB; a line cut there is only compared by
    its first field)."""
    from goldmine.ingest.scan import read_head

    head = read_head(path, compression, 1 << 20)
    lines = head.removeprefix(b"\xef\xbb\xbf").split(b"\n", _LOOK_ROWS + 1)[: _LOOK_ROWS + 1]
    return [line.decode("utf-8", "replace") for line in lines]


# A line the reader could not read (invalid UTF-8) is placed in the record it is inside
# (``_place_bad_lines``): that record is a reject, naming the line, rather than stored without
# it; one before the first record is a reject of its own.
_LINE_ERR = (
    "CASE WHEN rec > 0 THEN min(err || ' at line ' || line || ': the record is not read') "
    "ELSE min(err) END"
)
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


def _field(tag: str, sep: str = "chr(10)", items: str = "s", value: str = "x.v") -> str:
    """SQL for one field's text from a record's sorted lines ``s`` (every field of that letter,
    in order), or from other ``items`` with a ``value`` each; empty values are left out."""
    return (
        f"trim(array_to_string(list_transform(list_filter({items}, lambda x: x.t = '{tag}' "
        f"AND {value} <> ''), lambda x: {value}), {sep}), chr(10) || chr(13) || ' ')"
    )


def _line_field(tag: str) -> str:
    """The line reader's field ``tag``: a title's lines joined by spaces, others' by LFs."""
    return _field(tag, "' '" if tag == "T" else "chr(10)")


def _smart_values(field) -> tuple[str, ...]:
    """SQL of the known fields' values in ``SMART_KEYS``' order, each field's text by
    ``field(tag)``: the title's white space collapsed, an empty value null but the text's."""
    title = f"nullif(regexp_replace({field('T')}, '\\s+', ' ', 'g'), '')"
    return (title, *(
        field(tag) if name == "text" else f"nullif({field(tag)}, '')"
        for tag, name in SMART_FIELDS.items() if name != "title"
    ))  # fmt: skip


def _object(keys: tuple[str, ...], values: tuple[str, ...]) -> str:
    """SQL of the JSON object of ``keys`` with the SQL ``values``."""
    return (
        "json_object(" + ", ".join(f"'{k}', {v}" for k, v in zip(keys, values, strict=True)) + ")"
    )


def _fields(keys: tuple[str, ...], values: tuple[str, ...], typed: bool) -> str:
    """A record's columns: ``raw``, the JSON object of ``keys``; with ``typed``, its values as
    the text columns ``gm_f1``.. (``files.typed_rows`` reads them, no JSON made or parsed) and
    ``raw`` null (``files.raw_view`` makes the same object from them, for who reads it)."""
    if typed:
        return f"NULL::VARCHAR AS raw, {_columns(values)}"
    return f"{_object(keys, values)}::VARCHAR AS raw"


def _columns(values: tuple[str, ...]) -> str:
    """SQL naming the ``values`` ``gm_f1``.., in order."""
    return ", ".join(f"{v} AS gm_f{i}" for i, v in enumerate(values, start=1))


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
           CASE WHEN l.tag <> '' AND l.rec > 0 THEN substr(l.raw, 3) ELSE l.raw END AS v
    FROM tagged l LEFT JOIN marks m USING (fld)  -- before the first .I, a marker is text
),
others AS (  -- fields of other letters (CACM's .K, .X): metadata under their letter
    SELECT rec, to_json(map_from_entries(list({{'k': t, 'v': v}}))) AS other
    FROM (SELECT rec, t, trim(string_agg(v, chr(10) ORDER BY line), chr(10) || chr(13) || ' ') AS v
          FROM lines WHERE t NOT IN ({_KNOWN}, '') GROUP BY rec, t)
    GROUP BY rec
),
records AS (
    SELECT rec, min(line) AS line, {_LINE_ERR} AS err,
           list_sort(list({{'l': line, 't': t, 'v': v}})) AS s
    FROM lines GROUP BY rec
),
built AS (
    SELECT rec, line, err, {_field("I")} AS id,
           {_object(SMART_KEYS, _smart_values(_line_field))} AS known,
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

# The tags a TREC document's title is in (AP's HEAD, LA Times' HEADLINE, WSJ's HL, FT's TITLE,
# FBIS's TI).
_TITLE_TAGS = "HEAD|HEADLINE|HL|TITLE|TI"
# The tags its text is in: every TEXT block, after WSJ's lead paragraph (LP) and SJMN's
# (LEADPARA), in file order, as ir_datasets reads the TREC disks.
_TEXT_TAGS = "TEXT|LP|LEADPARA"
# A markup tag inside a field (``<P>``, ``</P>``), or a comment (FR94's ``<!-- PJG ITAG -->``);
# a bare ``<`` in the text is no tag.
_TAG = "</?[A-Za-z][^<>]*>|<!--.*?-->"

# A text the two regexes cleaning it would change: one holding a tag's ``<``, a tab or a run of
# spaces. Most lines of a document hold none, and the test is a third of the regexes' time.
_MARKUP_OR_RUNS = "(contains(x, '<') OR contains(x, chr(9)) OR contains(x, '  '))"


_WHITE, _SPACES = "\\s", "[ \\t]"  # regex classes: white space; spaces and tabs


def _untagged(x: str, spaces: str) -> str:
    """SQL for ``x`` without its tags, each run of ``spaces`` (a regex class) one space."""
    return f"regexp_replace(regexp_replace({x}, '{_TAG}', '', 'g'), '{spaces}+', ' ', 'g')"


def _block(x: str, marked: str | None = None) -> str:
    """SQL for a text block ``x`` (its line ends and spaces before its end dropped) cleaned:
    tags out, runs of spaces and tabs one space, trimmed. ``marked``: SQL of whether ``x``
    holds what that changes, known before (``x`` is trimmed at its start too then)."""
    ends = "chr(10) || chr(13) || ' '"
    if marked:  # ltrim would copy the string
        return f"CASE WHEN {marked} THEN trim({_untagged(x, _SPACES)}, {ends}) ELSE {x} END"
    return (
        f"CASE WHEN {_MARKUP_OR_RUNS.replace('x', x)} "
        f"THEN trim({_untagged(x, _SPACES)}, {ends}) ELSE ltrim({x}, {ends}) END"
    )


# What of a trecweb page is no text: its head (the title is read from it as a title tag), its
# scripts and styles, and the ``</DOC>`` that ends it.
_PAGE_OUT = "(?is)<head\\b.*?</head>|<(script|style)\\b.*?</(script|style)>|[\\n\\r ]*</DOC>\\s*$"

# A text block ends at its ``</TEXT>``, else at ``</DOC>`` or the document's end, with the line
# ends and spaces before it: they are dropped in the pattern's one pass, as DuckDB's rtrim would
# read the whole block again (ltrim stops at the first other character).
_TEXT_END = f"[\\n\\r ]*(?:</(?:{_TEXT_TAGS}|DOC)>.*)?$"

# TREC SGML: a record runs from a ``<DOC>`` line to the next. DOCNO ends at its close, a tag or
# the line's end; every TEXT block runs to its ``</TEXT>``, else to ``</DOC>`` or the record's
# end (an unclosed tag); markup inside is dropped, entities are left as written.
_DOC_LINE = (
    "CASE WHEN starts_with(raw, '<') THEN upper(substr(raw, 1, 5)) = '<DOC>' "
    "WHEN ascii(raw) IN (9, 32) THEN regexp_matches(raw, '^\\s*<(?i:DOC)>') ELSE false END"
)
_TREC_COLUMNS = (f"sum(({_DOC_LINE})::INT) {_RUNNING} AS rec",)
# The documents of the line reader: each record's lines gathered, as a list sorted by line.
_TREC_LINE_DOCS = f"""
    SELECT rec, min(line) AS line, {_LINE_ERR} AS err,
           array_to_string(list_transform(list_sort(list({{'l': line, 'r': raw}})),
                                          lambda x: x.r), chr(10)) AS doc
    FROM (SELECT coalesce(rec, -line) AS rec, line, raw, err FROM gm_lined)
    GROUP BY rec
"""
# Fields cut from ``docs(rec, line, err, doc)``, whichever way the documents were gathered.
_TREC_FIELDS = f"""
WITH parts AS (
    SELECT rec, line, err, doc,
           trim(regexp_extract(doc, '(?i)<DOCNO>\\s*([^<\\n]*)', 1)) AS docno,
           regexp_extract_all(doc, '(?is)<(?:{_TITLE_TAGS})>(.*?)(?:</(?:{_TITLE_TAGS})>|</DOC>|$)',
                              1) AS titles,
           list_transform(string_split_regex(doc, '(?i)<(?:{_TEXT_TAGS})>')[2:],
                          lambda t: regexp_replace(t, '(?is){_TEXT_END}', '')) AS texts
    FROM docs
),
paged AS (  -- a trecweb page (GOV2): no TEXT, its body the page after the HTTP header
    SELECT * REPLACE (CASE WHEN len(texts) = 0 AND regexp_matches(doc, '(?i)</DOCHDR>')
        THEN [regexp_replace(regexp_extract(doc, '(?is)</DOCHDR>(.*)$', 1), '{_PAGE_OUT}', '',
                             'g')] ELSE texts END AS texts)
    FROM parts
),
blocks AS (
    SELECT rec, line, err, doc, docno,
           trim({_untagged("array_to_string(titles, ' ')", _WHITE)}) AS title,
           list_transform(texts, lambda t: {_block("t")}) AS blocks
    FROM paged
),
clean AS (  -- the blocks' lines: LFs trimmed at the end only if the last block is empty
    SELECT rec, line, err, doc, docno, title,
           CASE WHEN blocks[-1] <> '' THEN ltrim(array_to_string(blocks, chr(10)), chr(10))
                ELSE trim(array_to_string(blocks, chr(10)), chr(10)) END AS text
    FROM blocks
)
SELECT line, /*record*/,
       CASE WHEN err IS NOT NULL THEN err
            WHEN rec = 0 THEN 'text before the first <DOC> line' END AS err
FROM clean
"""
_TREC_VALUES = ("docno", "nullif(title, '')", "text")


def _trec_sql(docs: str, typed: bool = False) -> str:
    """The TREC reader over the documents ``docs`` gives (SQL of rec, line, err, doc); a line
    before the first record is its text in ``raw``; with ``typed``, a record's fields are text
    columns (see ``_fields``)."""
    values = tuple(f"CASE WHEN rec > 0 THEN {v} END" for v in _TREC_VALUES)
    record = f"CASE WHEN rec <= 0 THEN doc END AS raw, {_columns(values)}"
    if not typed:
        record = (
            f"CASE WHEN rec <= 0 THEN doc ELSE {_object(TREC_KEYS, _TREC_VALUES)}::VARCHAR "
            "END AS raw"
        )
    return f"WITH docs AS ({docs}) SELECT * FROM ({_TREC_FIELDS.replace('/*record*/', record)})"


_TREC = f"CREATE OR REPLACE TEMP TABLE gm_src AS {_trec_sql(_TREC_LINE_DOCS)}"

# TSV: one record a line, fields split at tabs; a field in CSV quotes (DPR's texts) loses them.
# A field is in CSV quotes only where every quote inside is doubled: MS MARCO's passages are not
# quoted, and one that starts and ends with a quote (``"Hello" he said, "bye"``) stays as written.
_UNQUOTED = (
    "CASE WHEN len(v) > 1 AND starts_with(v, '\"') AND ends_with(v, '\"') "
    "AND NOT contains(replace(v[2:-2], '\"\"', ''), '\"') "
    "THEN replace(v[2:-2], '\"\"', '\"') ELSE v END"
)


def _tsv_sql(n: int, lines: str = "gm_lined") -> str:
    """The TSV reader for ``n`` columns over ``lines`` (SQL of ``line, raw, err``): ``gm_src(line,
    raw, err, gm_f1..gm_fn)``, a record's fields as text columns (``typed_keys`` names them),
    ``raw`` the line's text only where the line is no record."""
    # A line without a quote has no field to unquote: its fields go in as they are.
    fields = ", ".join(
        f"CASE WHEN ok THEN CASE WHEN q THEN {_UNQUOTED.replace('v', f'f[{i}]')} ELSE f[{i}] END "
        f"END AS gm_f{i}"
        for i in range(1, n + 1)
    )
    return f"""
        CREATE OR REPLACE TEMP TABLE gm_src AS
        SELECT line, CASE WHEN NOT ok THEN raw END AS raw,
               coalesce(err, CASE WHEN len(f) <> {n} THEN
                   'expected {n} tab-separated fields, found ' || len(f) END) AS err,
               {fields}
        FROM (SELECT line, raw, err, f, err IS NULL AND len(f) = {n} AS ok,
                     contains(raw, '"') AS q
              FROM (SELECT line, raw, err, string_split(raw, chr(9)) AS f
                    FROM {lines} WHERE line > $skip))
    """


def read_tsv(con: duckdb.DuckDBPyConnection, path: Path, compression: str) -> list[str]:
    """``gm_src`` of a TSV collection (see ``_tsv_sql``), its records made in the statement
    that reads the lines: a table of the lines between, then the records from it, cost 2.7
    times a bare read of the file on 1M passages. A file the reader skipped lines of (invalid
    UTF-8) is read again by ``read_by_line``, which gives each such line its place. Returns the
    columns' names."""
    from goldmine.ingest.files import numbered_lines, reader_skipped

    names, header = tsv_columns(first_lines(path, compression))
    params = {"skip": 1 if header else 0, "path": str(path), "compression": compression}
    lines = f"(SELECT line, raw, NULL::VARCHAR AS err FROM {numbered_lines()})"
    con.execute(_tsv_sql(len(names), lines), params)
    if reader_skipped(con):
        read_by_line(con, "tsv", path, compression)
    return names


# SMART and TREC SGML split into records before DuckDB sees them. Gathering each record's lines
# in SQL (a running count, then one aggregate per record) cost 10-20 times a bare read of the
# file; finding where each record and field starts is a few vector passes over the bytes
# (numpy), and DuckDB then gets one row per record, each a slice of the file's bytes (Arrow
# buffers, no copy), to cut the fields from in parallel. The file is read a block at a time, cut
# at the last record start, so memory holds a block and not the file. What only the line reader
# reads exactly (invalid UTF-8, NUL bytes, a CR that ends no line, a TREC <DOC> after other text
# on its line) sends the whole file to the line reader.
# The split into records was measured against native ways (bench_corpus_formats' 1M-record SMART
# file, records into a table with their lines, against a bare read of the lines into a table, CPU
# time): numpy's cut 1.36x; pyarrow's split_pattern per block 2.53x; polars' str.split per block
# 2.46x; polars' read_csv of the lines, cum_sum and a str.join per record 4.16x; DuckDB's read of
# the lines, a running sum and an ordered string_agg per record 4.9-6.4x; DuckDB's string_split
# of a block 25.7x, of the whole file (read_text) 220x. What costs past the cut is the fields'
# numpy and the statements, not the split.
_BLOCK = 64 << 20  # bytes split into records at a time
_BOM = b"\xef\xbb\xbf"
T = TypeVar("T")


def _not_blank(x: str) -> str:
    """``files``' test of a non-blank line, over ``x``."""
    from goldmine.ingest.files import NOT_BLANK

    return "(" + NOT_BLANK.replace("raw", x) + ")"


def _clean(v: str, b: str, c: str, keep_first: bool) -> str:
    """SQL for a slice's lines as the line reader gives them, joined by LF: CRs of CRLF
    dropped (``c``: it has one) and blank lines left out (``b``: it may have one; with
    ``keep_first``, the first line, a SMART marker's value, is kept). The slice ends with its
    last line's end with ``keep_first`` (SMART), before it without (TREC: DuckDB's rtrim reads
    the whole string, a fifth of the TREC reader's time on 200k documents)."""
    text = f"CASE WHEN {c} THEN replace({v}, chr(13), '') ELSE {v} END"
    first = "i = 1 OR " if keep_first else ""
    lines = f"list_filter(string_split({text}, chr(10)), lambda y, i: {first}{_not_blank('y')})"
    cleaned = f"CASE WHEN {b} THEN array_to_string({lines}, chr(10)) ELSE {text} END"
    return f"rtrim({cleaned}, chr(10))" if keep_first else cleaned


# SMART over ``gm_chunk(line, f)``: ``f`` the record's fields in order, each its marker's letter
# ``t``, its bytes ``v`` from the marker line to the next marker, and the flags of ``_clean``.
# A field's value ``v`` becomes its marker's rest and its lines, joined by LF, as the line
# reader's fields; a known field is every field of its letter, the empty values left out.
def _letter(tag: str) -> str:
    return _field(tag, items="g", value="ltrim(x.v, chr(10))")


_OTHER_VALUE = (
    "trim(array_to_string(list_transform(list_filter(g, lambda x: x.t = k), lambda x: x.v), "
    "chr(10)), chr(10) || chr(13) || ' ')"
)
# Fields of other letters (CACM's .K, .X) merged into the object: only without ``typed``.
_MERGED = f"""CASE WHEN len(others) = 0 THEN known::VARCHAR
            ELSE json_merge_patch(known, to_json(map_from_entries(list_transform(others,
                     lambda k: {{'k': k, 'v': {_OTHER_VALUE}}}))))::VARCHAR END AS raw"""


def _smart_split(typed: bool) -> str:
    """SMART records from the lists of their fields; ``typed``: with no field of another
    letter in the file, so ``others`` is empty and ``known``'s values are the columns."""
    values = _smart_values(_letter)
    return f"""
INSERT INTO gm_src BY NAME
SELECT line, {_columns(values) + ", NULL::VARCHAR AS raw" if typed else _MERGED},
       CASE WHEN contains(id, chr(10)) THEN 'text after the .I line before the next field' END
           AS err
FROM (
    SELECT line, g, {_letter("I")} AS id, {_object(SMART_KEYS, values)} AS known,
           list_distinct(list_transform(list_filter(g, lambda x: x.t NOT IN ({_KNOWN})),
                                        lambda x: x.t)) AS others
    FROM (SELECT line, list_transform(f, lambda x: {{'t': chr(x.t),
                 'v': {_clean("substr(x.v, 3)", "x.b", "x.c", True)}}}) AS g
          FROM gm_chunk)
)
"""


# Whitespace that the title's ``\s+`` would change: a line end, a tab, a run of spaces.
_RUNS = "(contains(T, chr(10)) OR contains(T, chr(9)) OR contains(T, chr(12)) OR contains(T, '  '))"


# SMART records whose fields are one each of the known letters, over ``gm_chunk(line, r, I, T,
# W, A, B)``: each field's text, trimmed, cut from the file's bytes before (``Split.smart``),
# so no list is walked and no lambda runs. The title's white space is collapsed only if it may
# need it: ``r``, it holds a byte below 14 (a line end, a tab, a form feed: found there too),
# or a run of spaces. The records holding a CR come apart (``crs``): only their fields lose it.
def _smart_simple(crs: bool, typed: bool) -> str:
    fields = (f"replace({t}, chr(13), '') AS {t}" if crs else t for t in "ITWAB")
    title = (
        "nullif(CASE WHEN r OR contains(T, '  ') THEN regexp_replace(T, '\\s+', ' ', 'g') "
        "ELSE T END, '')"
    )
    values = (title, "nullif(I, '')", "W", "nullif(A, '')", "nullif(B, '')")
    return f"""
INSERT INTO gm_src BY NAME
SELECT line, {_fields(SMART_KEYS, values, typed)},
       CASE WHEN contains(I, chr(10)) THEN 'text after the .I line before the next field' END
           AS err
FROM (SELECT line, r, {", ".join(fields)} FROM gm_chunk)
"""


def _trec_split(typed: bool) -> str:
    docs = (
        f"SELECT 1 AS rec, line, NULL AS err, {_clean('v', 'b', 'c', False)} AS doc FROM gm_chunk"
    )
    return f"INSERT INTO gm_src BY NAME {_trec_sql(docs, typed)}"


# TREC records of the usual layout, over ``gm_chunk(line, c, m, I, T, X)``: DOCNO, title and
# text cut from the file's bytes as ``_TREC_FIELDS``' patterns cut them (``Split.trec``) and
# trimmed there, so a field is cleaned by the same expressions only when it holds what they
# change: for the text a tag, a tab or two spaces (``m``, found there too), for the title any
# white space but one space.
def _trec_cut(typed: bool) -> str:
    title = f"""nullif(CASE WHEN contains(T, '<') THEN trim({_untagged("T", _WHITE)})
                    WHEN {_RUNS} THEN regexp_replace(T, '\\s+', ' ', 'g') ELSE T END, '')"""
    values = ("I", title, _block("X", marked="m"))
    return f"""
INSERT INTO gm_src BY NAME
SELECT line, {_fields(TREC_KEYS, values, typed)}
FROM (SELECT line, I, T, m, CASE WHEN c THEN replace(X, chr(13), '') ELSE X END AS X
      FROM gm_chunk)
"""


# Each statement as it makes JSON objects (False) and text columns (True).
_SMART_SIMPLE = {typed: _smart_simple(False, typed) for typed in (False, True)}
_SMART_SIMPLE_CRS = {typed: _smart_simple(True, typed) for typed in (False, True)}
_SMART_SPLIT = {typed: _smart_split(typed) for typed in (False, True)}
_TREC_SPLIT = {typed: _trec_split(typed) for typed in (False, True)}
_TREC_CUT = {typed: _trec_cut(typed) for typed in (False, True)}
# The lines before the first record: one reject, at its first line that is not blank.
_PREFIX = f"""
INSERT INTO gm_src BY NAME
SELECT line + i - 1 AS line, text AS raw, $err AS err
FROM (SELECT line, list_position(list_transform(l, lambda x: {_not_blank("x")}), true) AS i,
             array_to_string(list_filter(l, lambda x: {_not_blank("x")}), chr(10)) AS text
      FROM (SELECT line, string_split(replace(v, chr(13), ''), chr(10)) AS l FROM gm_chunk))
WHERE i IS NOT NULL
"""
_PREFIX_ERR = {"smart": "text before the first .I line", "trec": "text before the first <DOC> line"}


def read_split(
    con: duckdb.DuckDBPyConnection,
    fmt: str,
    path: Path,
    compression: str,
    block: int = _BLOCK,
    typed: bool = True,
) -> list[str] | None:
    """``gm_src`` from the file split into records ``block`` bytes at a time (see ``_BLOCK``);
    raises NeedsLines for a file only ``read_by_line`` reads alike. The next block is cut
    (numpy, in a thread) while DuckDB inserts this one's records. With ``typed``, a record's
    fields are text columns, whose names it returns (see ``read``); a SMART file with a field
    of another letter is read again without (``corpus_split.NeedsObjects``)."""
    from goldmine.ingest.corpus_split import NeedsObjects

    try:
        return _read_split(con, fmt, path, compression, block, typed)
    except NeedsObjects:
        return _read_split(con, fmt, path, compression, block, False)


def _read_split(
    con: duckdb.DuckDBPyConnection, fmt: str, path: Path, compression: str, block: int, typed: bool
) -> list[str] | None:
    from goldmine.ingest.scan import open_compressed, stream_errors

    keys = list(SMART_KEYS if fmt == "smart" else TREC_KEYS) if typed else []
    columns = "".join(f", gm_f{i} VARCHAR" for i in range(1, len(keys) + 1))
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE gm_src (line BIGINT, raw VARCHAR, err VARCHAR{columns})"
    )
    try:
        with open_compressed(path, compression) as handle:
            for statements in _prefetched(_blocks(handle, fmt, block, typed)):
                for sql, table, params in statements:
                    con.register("gm_chunk", table)
                    try:
                        con.execute(sql, params)
                    finally:
                        con.unregister("gm_chunk")
    except stream_errors() as exc:  # EOFError would reach click, which reads it as "Aborted!"
        if compression == "none":
            raise
        raise InputError(
            f"the {compression} stream ends early or is damaged ({exc or type(exc).__name__}): "
            "the file is truncated or damaged; nothing from it was stored",
            path=path,
        ) from exc
    return keys or None


def _prefetched(items: Iterator[T]) -> Iterator[T]:
    """``items``, the next one made in a thread while the caller uses this one."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        coming = pool.submit(next, items, None)
        while (item := coming.result()) is not None:
            coming = pool.submit(next, items, None)
            yield item


def _blocks(
    handle: BinaryIO, fmt: str, size: int, typed: bool
) -> Iterator[list[tuple[str, object, dict]]]:
    """For each block of the file, the statements that insert its records: SQL, the Arrow
    table it reads as ``gm_chunk`` and its parameters."""
    from goldmine.ingest.corpus_split import cut, fill

    line, carry = 1, handle.read(len(_BOM)).removeprefix(_BOM)  # the line reader drops it too
    while True:
        data, n, final = fill(handle, carry, size)
        block = cut(data, n, fmt, line, final)
        if block is None:  # no record ends in it: read on
            carry = data[:n].tobytes()
        else:
            yield _statements(fmt, block, line == 1, typed)
            line += len(block.split.starts)  # each line before the cut ends in it
            carry = data[block.end : n].tobytes()
        if final:
            return


def _statements(fmt: str, block, prefix: bool, typed: bool) -> list[tuple[str, object, dict]]:
    """The statements inserting a block's records; with ``prefix``, the lines before the
    first record are one reject; with ``typed``, the records' fields as text columns."""
    from goldmine.ingest.corpus_split import NeedsObjects, batched, other_fields

    if typed and fmt == "smart" and other_fields(block):
        raise NeedsObjects
    tables = []
    if prefix and block.prefix:
        tables.append((_PREFIX, block.split.prefix(block.prefix), {"err": _PREFIX_ERR[fmt]}))
    if len(block.recs) and fmt == "smart":
        plain, crs, fields = block.split.smart(block.recs, block.marks)
        tables += [(_SMART_SIMPLE[typed], plain, {}), (_SMART_SIMPLE_CRS[typed], crs, {})]
        tables.append((_SMART_SPLIT[typed], fields, {}))
    elif len(block.recs):
        cut, other = block.split.trec(block.recs, block.tags)
        tables += [(_TREC_CUT[typed], cut, {}), (_TREC_SPLIT[typed], other, {})]
    return [(sql, batched(table), params) for sql, table, params in tables if table.num_rows]


def read(
    con: duckdb.DuckDBPyConnection, fmt: str, path: Path, compression: str
) -> list[str] | None:
    """``gm_src(line, raw, err)``: the records of a file in ``fmt`` (smart, trec or tsv), as
    JSON objects in ``raw``; or, when it returns the records' field names (TSV, and SMART and
    TREC split into records), as text columns ``gm_f1``.. of those names (see
    ``files.typed_rows``). A SMART file with fields of other letters (CACM's .K, .X: metadata
    under their letter, which a fixed set of columns has not) is split again into objects."""
    if fmt == "tsv":
        return read_tsv(con, path, compression)
    if fmt in ("smart", "trec"):
        from goldmine.ingest.corpus_split import NeedsLines

        try:
            return read_split(con, fmt, path, compression)
        except NeedsLines:
            pass
    return read_by_line(con, fmt, path, compression)


def _place_bad_lines(con: duckdb.DuckDBPyConnection) -> None:
    """Give each line the reader could not read the record of the line before it, so the
    record holding it is a reject (``_LINE_ERR``). Only a file that has such a line pays: its
    lines are read into a table once, which ``gm_lined`` then names."""
    # gm_errs: the lines the reader skipped (files.read_lines), a small table already made
    if not con.execute("SELECT count(*) FROM gm_errs").fetchall()[0][0]:
        return
    con.execute("CREATE OR REPLACE TEMP TABLE gm_lined_bad AS SELECT * FROM gm_lined")
    # The last readable line before each: an ASOF join (a join on line < line paired every bad
    # line with every line before it: 49 s for 10,000 bad lines in 900k).
    con.execute(
        """UPDATE gm_lined_bad SET rec = p.rec
           FROM (SELECT b.line, g.rec FROM (SELECT line FROM gm_lined_bad WHERE err IS NOT NULL) b
                 ASOF JOIN (SELECT line, rec FROM gm_lined_bad WHERE err IS NULL) g
                 ON b.line > g.line) p
           WHERE gm_lined_bad.line = p.line AND p.rec > 0"""
    )
    con.execute("CREATE OR REPLACE TEMP VIEW gm_lined AS SELECT * FROM gm_lined_bad")


def read_by_line(
    con: duckdb.DuckDBPyConnection, fmt: str, path: Path, compression: str
) -> list[str] | None:
    """``gm_src`` from the file read as lines by DuckDB, the records gathered in SQL: slower
    than ``read_split``, but it reads any file (a line it cannot read is a reject). Returns
    what ``read`` returns."""
    from goldmine.ingest.files import InputFile, read_lines

    item = InputFile(path, fmt, compression)
    if fmt == "smart":
        read_lines(con, item, _SMART_COLUMNS, "gm_lined")
        _place_bad_lines(con)
        con.execute(_SMART)
    elif fmt == "trec":
        read_lines(con, item, _TREC_COLUMNS, "gm_lined")
        _place_bad_lines(con)
        con.execute(_TREC)
    else:
        names, header = tsv_columns(first_lines(path, compression))
        read_lines(con, item, (), "gm_lined")
        con.execute(_tsv_sql(len(names)), {"skip": 1 if header else 0})
    con.execute("DROP VIEW gm_lined")
    return names if fmt == "tsv" else None
