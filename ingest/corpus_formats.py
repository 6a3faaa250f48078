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
_HEADER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")


def sniff(head: bytes) -> str | None:
    """``smart``, ``trec`` or ``tsv`` from a file's first bytes (decompressed), or None.

    SMART and TREC SGML are told by their first non-blank line (``.I n``, ``<DOC>``), which no
    JSON, CSV or Parquet file starts with; TSV by a tab in a first line that is none of those.
    """
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
    first = text.split(b"\n", 1)[0]
    if _SMART_LINE.match(first):
        return "smart"
    if _TREC_LINE.match(first):
        return "trec"
    if b"\t" in first and first[:1] not in (b"{", b"[", b"<") and b"\0" not in head:
        return "tsv"
    return None


def tsv_columns(first_line: str) -> tuple[list[str], bool]:
    """The column names of a TSV collection and whether its first line is a header.

    A header is a line whose every field is a name (a letter or ``_``, then no space): MS
    MARCO's first line (``0<TAB>The presence of …``) is not, DPR's (``id<TAB>text<TAB>title``)
    is. Without one the columns are id, text, title, then ``column4`` on.
    """
    fields = first_line.rstrip("\r\n").split("\t")
    if all(_HEADER_NAME.fullmatch(f) for f in fields):
        return fields, True
    names = ["id", "text", "title"][: len(fields)]
    return names + [f"column{i}" for i in range(len(names) + 1, len(fields) + 1)], False


def first_line(path: Path, compression: str) -> str:
    from goldmine.ingest.scan import open_compressed

    with open_compressed(path, compression) as handle:
        head = handle.read(1 << 20)
    return head.removeprefix(b"\xef\xbb\xbf").split(b"\n", 1)[0].decode("utf-8", "replace")


# Each reader reads ``gm_lined(line, raw, err)``: the file's non-blank lines with their number
# and any reader error (``files._lines_view``), and writes ``gm_src(line, raw, err)``.

# A record's first line with an error names it; a record holding one is a reject.
_SMART_KEYS = " ".join(f"WHEN '{k}' THEN '{v}'" for k, v in SMART_FIELDS.items())
_LINE_ERR = "min(CASE WHEN err IS NOT NULL THEN err || ' (line ' || line || ')' END)"

# SMART: a marker line is ``.X`` or ``.X value``; a record runs from one ``.I`` to the next, a
# field from its marker to the next marker. Lines before the first ``.I`` are one reject.
_SMART = f"""
CREATE OR REPLACE TEMP TABLE gm_src AS
WITH marked AS (
    SELECT line, raw, err,
           CASE WHEN starts_with(raw, '.') THEN regexp_extract(raw, '^\\.([A-Z])(?:\\s|$)', 1)
                ELSE '' END AS tag
    FROM gm_lined
),
numbered AS (
    SELECT *, sum((tag = 'I')::INT) OVER w AS rec, sum((tag <> '')::INT) OVER w AS fld
    FROM marked WINDOW w AS (ORDER BY line ROWS UNBOUNDED PRECEDING)
),
fields AS (
    SELECT rec, fld, min(line) AS line, arg_min(tag, line) AS tag, {_LINE_ERR} AS err,
           trim(string_agg(CASE WHEN tag <> '' THEN substr(raw, 3) ELSE raw END, chr(10)
                           ORDER BY line), chr(10) || chr(13) || ' ') AS val
    FROM numbered GROUP BY rec, fld
),
named AS (
    SELECT rec, min(line) AS line, min(err) AS err, key,
           string_agg(val, chr(10) ORDER BY fld) FILTER (WHERE val <> '') AS val
    FROM (SELECT *, CASE tag {_SMART_KEYS} ELSE tag END AS key FROM fields)
    GROUP BY rec, key
)
SELECT min(line) AS line,
       CASE WHEN rec = 0 THEN string_agg(val, chr(10))
            ELSE to_json(map_from_entries(list({{'k': key,
                 'v': CASE WHEN key = 'title' THEN regexp_replace(val, '\\s+', ' ', 'g')
                           ELSE coalesce(val, '') END}} ORDER BY line)))::VARCHAR END AS raw,
       CASE WHEN rec = 0 THEN 'text before the first .I line'
            WHEN bool_or(key = 'id' AND contains(val, chr(10)))
                THEN 'text after the .I line before the next field'
            ELSE min(err) END AS err
FROM named GROUP BY rec
"""

# The tags a TREC document's title is in (AP's HEAD, LA Times' HEADLINE, WSJ's HL, FT's TITLE).
_TITLE_TAGS = "HEAD|HEADLINE|HL|TITLE"
# A markup tag inside a field (``<P>``, ``</P>``); a bare ``<`` in the text is no tag.
_TAG = "</?[A-Za-z][^<>]*>"

# TREC SGML: a record runs from a ``<DOC>`` line to the next. DOCNO ends at its close, a tag or
# the line's end; every TEXT block runs to its ``</TEXT>``, else to ``</DOC>`` or the record's
# end (an unclosed tag); markup inside is dropped, entities are left as written.
_TREC = f"""
CREATE OR REPLACE TEMP TABLE gm_src AS
WITH numbered AS (
    SELECT line, raw, err,
           sum(regexp_matches(raw, '^\\s*<(?i:DOC)>')::INT)
               OVER (ORDER BY line ROWS UNBOUNDED PRECEDING) AS rec
    FROM gm_lined
),
docs AS (
    SELECT rec, min(line) AS line, {_LINE_ERR} AS err,
           string_agg(raw, chr(10) ORDER BY line) AS doc
    FROM numbered GROUP BY rec
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
                trim(regexp_replace(regexp_replace(t, '{_TAG}', '', 'g'), '[ \\t]+', ' ', 'g'),
                     chr(10) || chr(13) || ' ')), chr(10)), chr(10)) AS text
    FROM parts
)
SELECT line,
       CASE WHEN rec = 0 THEN doc
            ELSE json_object('id', docno, 'title', nullif(title, ''), 'text', text)::VARCHAR
       END AS raw,
       CASE WHEN rec = 0 THEN 'text before the first <DOC> line' ELSE err END AS err
FROM clean
"""

# TSV: one record a line, fields split at tabs; a field in CSV quotes (DPR's texts) loses them.
_TSV = """
CREATE OR REPLACE TEMP TABLE gm_src AS
SELECT line,
       CASE WHEN err IS NULL AND len(f) = len($names)
            THEN to_json(map($names, list_transform(f, lambda v:
                 CASE WHEN len(v) > 1 AND starts_with(v, '"') AND ends_with(v, '"')
                      THEN replace(v[2:-2], '""', '"') ELSE v END)))::VARCHAR
            ELSE raw END AS raw,
       coalesce(err, CASE WHEN len(f) <> len($names) THEN 'expected ' || len($names)
                || ' tab-separated fields, found ' || len(f) END) AS err
FROM (SELECT line, rtrim(raw, chr(13)) AS raw, err, string_split(rtrim(raw, chr(13)), chr(9)) AS f
      FROM gm_lined WHERE line > $skip)
"""


def read(con: duckdb.DuckDBPyConnection, fmt: str, path: Path, compression: str) -> None:
    """``gm_src(line, raw, err)`` from ``gm_lined`` in format ``fmt`` (smart, trec or tsv)."""
    if fmt == "smart":
        con.execute(_SMART)
    elif fmt == "trec":
        con.execute(_TREC)
    else:
        names, header = tsv_columns(first_line(path, compression))
        con.execute(_TSV, {"names": names, "skip": 1 if header else 0})
