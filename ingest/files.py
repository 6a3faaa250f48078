"""Reading the files to import as records with a line number: the formats DuckDB reads itself
(JSONL, CSV, Parquet, JSON documents) and the line reader the other layouts build on. Which
format a file is in, and the readers of IR collections and search-log layouts, are in
``ingest.formats``, above this module and those readers.

Two ways in. The streaming one (``streaming_rows``) lets DuckDB's reader parse a clean JSONL or
Parquet file once, straight from disk. The record-by-record one (``read_raw``) makes every format
a view ``gm_raw(line, raw, err)`` of JSON objects, one per record, with its line (JSONL, CSV) or
row number (Parquet, JSON documents) and a reader error where the record could not be read (bad
JSON, invalid UTF-8, a line too long), so that no bad record stops the import or goes unseen.
Paths reach DuckDB as parameters only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb

from goldmine.errors import GoldmineError, InputError, error_line
from goldmine.ingest.fields import VECTOR_NAME, json_path


@dataclass(frozen=True)
class InputFile:
    path: Path
    format: str
    compression: str  # none | gzip | zstd | bzip2 | xz | zip (an archive of this one file)
    encoding: str = "utf-8"  # the text's codec: UTF-16 (a byte-order mark said), or --encoding
    name: str | None = None  # a document's id (ingest.documents): its path as named or found

    @property
    def label(self) -> str:
        return self.format + ("" if self.compression == "none" else f"+{self.compression}")

    @property
    def read_from_copy(self) -> bool:
        """Whether DuckDB reads a plain UTF-8 copy instead (``scan.blanked_copy``): it reads
        neither a zip archive, bzip2 or xz, nor text in another encoding."""
        return self.compression in ("zip", "bzip2", "xz") or self.encoding != "utf-8"


_LINES = """read_csv($path, columns = {'raw': 'VARCHAR'}, header = false, delim = chr(0),
              quote = '', escape = '', auto_detect = false, compression = $compression,
              store_rejects = true, rejects_table = 'gm_reader_errors',
              rejects_scan = 'gm_reader_scans', max_line_size = 16777216,
              buffer_size = 33554432)"""
_READ_LINES = f"""
CREATE OR REPLACE TEMP TABLE gm_lines AS
SELECT row_number() OVER () AS rn, raw /*columns*/
FROM {_LINES}
"""
# A line may be 16 MB long; the buffer is set to twice that, as DuckDB's default (16 times the
# longest line, 256 MB) could not be had under a small GOLDMINE_MEMORY_LIMIT. ``/*columns*/``: more
# columns computed as the lines are read, in file order (``corpus_formats`` numbers records so,
# with running sums the reader streams, not windows that sort).

_READ_CSV = """
CREATE OR REPLACE TEMP TABLE gm_lines AS
SELECT row_number() OVER () AS rn, to_json(t)::VARCHAR AS raw
FROM read_csv($path, header = true, all_varchar = true, compression = $compression,
              store_rejects = true, rejects_table = 'gm_reader_errors',
              rejects_scan = 'gm_reader_scans'/*sep*/) t
"""
# Below Excel's ``sep=`` line: the header is the second line, the delimiter the one it names.
_READ_CSV_SEP = _READ_CSV.replace("/*sep*/", ", skip = 1, delim = $delim")

# Excel writes (and reads) a first line ``sep=;`` naming the file's delimiter; only the
# delimiters a search export uses are taken (one becomes part of a pattern in logformats).
_SEP_LINE = re.compile(rb'^"?sep=([,;\t|])"?(\r\n|\r|\n)', re.IGNORECASE)
_LINE_END = re.compile(rb"\r\n|\r|\n")


def excel_sep(head: bytes) -> str | None:
    """The delimiter an Excel ``sep=`` first line names (after a byte-order mark), or None."""
    found = _SEP_LINE.match(head.removeprefix(b"\xef\xbb\xbf"))
    return found.group(1).decode() if found else None


def head_lines(head: bytes, n: int) -> list[bytes]:
    """A file's first ``n`` lines (after a byte-order mark), ended by LF, CRLF or a CR alone
    (old Mac exports): split at LF only, a CR-only file was one line."""
    return _LINE_END.split(head.removeprefix(b"\xef\xbb\xbf"), maxsplit=n)[:n]


# Lines the reader skipped (bad encoding, too long, wrong column count) shift the row numbers of
# the lines after them: ``before`` is how many rows precede each skipped line, and an ASOF join
# gives each row the number of skipped lines before it.
_READER_ERRORS = """
CREATE OR REPLACE TEMP TABLE gm_errs AS
WITH errs AS (
    SELECT line, first(error_type) AS error_type, first(csv_line) AS csv_line
    FROM gm_reader_errors GROUP BY line
)
SELECT line, line - $header - row_number() OVER (ORDER BY line) AS before,
       row_number() OVER (ORDER BY line) AS skipped,
       trim(csv_line, chr(10) || chr(13)) AS raw,
       CASE error_type WHEN 'INVALID ENCODING' THEN 'invalid UTF-8'
                       WHEN 'LINE SIZE OVER MAXIMUM' THEN 'line too long'
                       ELSE lower(replace(error_type, '_', ' ')) END AS err
FROM errs
"""

# A line that is not blank (blank lines are not records). Most lines start with a visible ASCII
# character, which settles it without trim's copy of the line (a CASE: an OR may be reordered).
_NOT_BLANK = "CASE WHEN ascii(raw) BETWEEN 33 AND 126 THEN true ELSE trim(raw) <> '' END"

# A line that may be a JSON object: it starts with a brace after any JSON white space.
_OBJECT = (
    "CASE WHEN ascii(raw) = 123 THEN true "
    "ELSE starts_with(ltrim(raw, chr(32) || chr(9) || chr(10) || chr(13)), '{') END"
)
# Such a line is taken as valid here; the single parse that maps the fields finds the malformed
# ones (``try(json_transform(…))``), so a clean file is parsed once.
_JSONL_ERR = (
    f"CASE WHEN NOT ({_OBJECT}) THEN CASE WHEN json_valid(raw) "
    "THEN 'not a JSON object' ELSE 'malformed JSON' END END"
)

# A Parquet row as a JSON object of its own columns: the row number the reader is asked for
# numbers the line and is not a field of the record.
_PARQUET_ROW = "to_json(struct_pack(*COLUMNS(* EXCLUDE (file_row_number))))::VARCHAR"
# Less the columns left out (``$left_out``): embeddings and pandas' index
# (``_left_out_columns``).
_READ_PARQUET = """
CREATE OR REPLACE TEMP TABLE gm_src AS
SELECT file_row_number + 1 AS line,
       to_json(struct_pack(*COLUMNS(lambda c: c <> 'file_row_number'
                                             AND NOT list_contains($left_out, c))))::VARCHAR AS raw,
       NULL::VARCHAR AS err
FROM read_parquet($path, file_row_number = true)
"""

# A column of embeddings: a list of numbers named as one (Cohere's emb, LanceDB's vector, a
# data set's embeddings or title_embedding). Made JSON text for a row's metadata it cost 29x
# the time and 40x the store of the rest (768 numbers a row); no one reads it there.
_VECTOR_TYPE = re.compile(r"(FLOAT|DOUBLE|HALF|DECIMAL\(\d+,\d+\))\[\d*\]")


# pandas' name for a frame's unnamed index written as a column (string labels, a filtered
# frame's row numbers): a row label of the frame, no field of the record.
_PANDAS_INDEX = re.compile(r"__index_level_\d+__")


def _left_out_columns(schema: dict[str, str]) -> tuple[list[str], list[str]]:
    """Of a Parquet file's columns (``parquet_schema``, read once), those of embeddings and
    those of pandas' index: neither is a field of the record."""
    vectors = [n for n, kind in schema.items() if _VECTOR_TYPE.fullmatch(kind)
               and VECTOR_NAME.fullmatch(n)]  # fmt: skip
    return vectors, [n for n in schema if _PANDAS_INDEX.fullmatch(n)]


# A JSON document: an array of records, an object wrapping one (``{"tickets": […]}``,
# an OpenSearch ``_search`` dump: each hit's ``_source`` with its ``_id``), or a single record.
_READ_JSON = """
CREATE OR REPLACE TEMP TABLE gm_src AS
WITH doc AS (SELECT content::JSON AS j FROM /*doc*/read_text($path)),
items AS (
    SELECT CASE
        WHEN json_type(j) = 'ARRAY' THEN json_extract(j, '$[*]')
        -- a hit's _id is beside its _source (a corpus's ids, an index's event ids): kept; a
        -- hit of fields alone (_source: false) is its fields, a one-value list that value
        WHEN json_type(j, '$.hits.hits') = 'ARRAY' THEN list_transform(
            list_filter(json_extract(j, '$.hits.hits[*]'),
                        lambda h: (h -> '$._source') IS NOT NULL
                                  OR json_type(h, '$.fields') = 'OBJECT'),
            lambda h: CASE WHEN json_type(h, '$._source') = 'OBJECT'
                                AND json_type(h, '$._id') IN ('VARCHAR', 'BIGINT', 'UBIGINT')
                           THEN json_merge_patch(json_object('_id', h -> '$._id'), h -> '$._source')
                           WHEN (h -> '$._source') IS NULL THEN json_merge_patch(
                               coalesce(json_object('_id', h -> '$._id'), '{}'),
                               to_json(map_from_entries(list_transform(map_entries(
                                   json_transform(h -> '$.fields', '"MAP(VARCHAR, JSON)"')),
                                   lambda e: {'key': e.key, 'value': CASE
                                       WHEN json_type(e.value) = 'ARRAY'
                                            AND json_array_length(e.value) = 1
                                       THEN e.value -> '$[0]' ELSE e.value END}))))
                           ELSE h -> '$._source' END)
        WHEN json_type(j, $wrapper) = 'ARRAY' THEN json_extract(j, $wrapper || '[*]')
        ELSE [j] END AS records
    FROM doc
)
SELECT i AS line, records[i]::VARCHAR AS raw,
       CASE WHEN json_type(records[i]) <> 'OBJECT' THEN 'not a JSON object' END AS err
FROM items, range(1, len(records) + 1) r(i)
"""

# LlamaIndex's EmbeddingQAFinetuneDataset (save_json): its corpus, an object id -> text, as
# records {id, text}, in its order; its queries and relevant_docs are gold import's to read.
_READ_LLAMAINDEX_CORPUS = """
CREATE OR REPLACE TEMP TABLE gm_src AS
WITH doc AS (SELECT content::JSON AS j FROM /*doc*/read_text($path)),
entries AS (
    SELECT unnest(map_entries(json_transform(j -> '$.corpus', '"MAP(VARCHAR, JSON)"'))) AS e
    FROM doc WHERE json_type(j, '$.corpus') = 'OBJECT'
)
SELECT row_number() OVER () AS line, json_object('id', e.key, 'text', e.value)::VARCHAR AS raw,
       NULL::VARCHAR AS err
FROM entries
"""

# LlamaIndex's persisted docstore (SimpleDocumentStore: docstore.json, ``docstore/data`` a node
# id -> {"__type__", "__data__": node}; ``__data__`` JSON text in releases before 0.9): a node a
# record {id, doc_id (its SOURCE relationship, "1"), text, metadata, offsets}, in its order. The
# node's templates, embedding and relationships are LlamaIndex's own, not the chunk's.
_READ_LLAMAINDEX_DOCSTORE = """
CREATE OR REPLACE TEMP TABLE gm_src AS
WITH doc AS (SELECT content::JSON AS j FROM /*doc*/read_text($path)),
entries AS (
    SELECT unnest(map_entries(json_transform(j -> $data, '"MAP(VARCHAR, JSON)"'))) AS e FROM doc
),
nodes AS (
    SELECT row_number() OVER () AS line, e.key AS key, e.value AS value,
           CASE WHEN json_type(e.value, '$.__data__') = 'VARCHAR'
                THEN try_cast(e.value ->> '$.__data__' AS JSON)
                ELSE coalesce(e.value -> '$.__data__', e.value) END AS d
    FROM entries
),
-- the documents nodes were parsed from (their SOURCE), where the store holds them too (an
-- ingestion pipeline's docstore): their nodes are the chunks
parents AS (SELECT DISTINCT d ->> '$.relationships."1".node_id' AS id FROM nodes)
SELECT line,
       CASE WHEN json_type(d) = 'OBJECT' THEN json_object(
           'id', coalesce(d ->> '$.id_', key),
           'doc_id', d ->> '$.relationships."1".node_id',
           'text', coalesce(d -> '$.text', d -> '$.text_resource.text'),
           'metadata', nullif(d -> '$.metadata', '{}'),
           'start_char_idx', d -> '$.start_char_idx',
           'end_char_idx', d -> '$.end_char_idx')::VARCHAR
       ELSE value::VARCHAR END AS raw,
       CASE WHEN json_type(d) IS DISTINCT FROM 'OBJECT' THEN 'not a JSON object' END AS err,
       coalesce(d ->> '$.id_', key) IN (SELECT id FROM parents WHERE id IS NOT NULL) AS gm_parent
FROM nodes
"""


def _parents_note(con: duckdb.DuckDBPyConnection) -> None:
    """Leave out of ``gm_src`` a docstore's documents whose nodes it holds, and say so."""
    n = con.execute("SELECT count(*) FROM gm_src WHERE gm_parent").fetchall()[0][0]
    con.execute("DELETE FROM gm_src WHERE gm_parent")
    con.execute("ALTER TABLE gm_src DROP COLUMN gm_parent")
    note = (
        f"left out {n} document{'s' if n > 1 else ''} whose nodes the docstore holds "
        f"({'their' if n > 1 else 'its'} nodes are the chunks)"
        if n
        else ""
    )
    con.execute("CREATE OR REPLACE TEMP TABLE gm_reader_note AS SELECT ?::VARCHAR AS note", [note])


def _docstore_data(keys: list[str]) -> str | None:
    """The key of a LlamaIndex docstore's nodes (``docstore/data``, or another namespace's
    ``NAME/data``), when the document is one: its keys are NAME/data, NAME/metadata and
    NAME/ref_doc_info alone."""
    data = [k for k in keys if k.endswith("/data")]
    names = {k.rsplit("/", 1)[0] for k in keys}
    parts = {k.rsplit("/", 1)[-1] for k in keys if "/" in k}
    if len(data) == 1 and len(names) == 1 and parts <= {"data", "metadata", "ref_doc_info"}:
        return json_path(data[0])
    return None


_WRAPPERS = (
    "tickets",
    "conversations",
    "messages",
    "records",
    "data",
    "items",
    "queries",
    "events",
    "results",
    "rows",
    "searches",  # Algolia's Analytics API: {"searches": [{"search", "count", "nbHits"}]}
    "objects",  # Weaviate's /v1/objects: {"objects": [{"id", "class", "properties"}]}
    "documents",  # Haystack's InMemoryDocumentStore.save_to_disk: its to_dict, and documents
)

# Chroma's ``collection.get()`` saved as JSON: ids, documents and metadatas side by side, a
# record {id, text, metadata} an id, in its order (a query's result, lists of lists, is not one).
# Each list is read once and the three unnested side by side: a record cut from the document by
# its own path (ids[i]) parsed the whole document again for each (20,000 chunks ran out of 18 GB).
_READ_CHROMA_GET = """
CREATE OR REPLACE TEMP TABLE gm_src AS
WITH doc AS (SELECT content::JSON AS j FROM /*doc*/read_text($path)),
lists AS (SELECT json_extract(j, '$.ids[*]') AS ids, json_extract(j, '$.documents[*]') AS docs,
                 coalesce(json_extract(j, '$.metadatas[*]'), []) AS metas FROM doc)
SELECT line, json_object('id', id, 'text', text, 'metadata', metadata)::VARCHAR AS raw,
       NULL::VARCHAR AS err
FROM (SELECT generate_subscripts(ids, 1) AS line, unnest(ids) AS id, unnest(docs) AS text,
             unnest(metas) AS metadata FROM lists)
WHERE line IS NOT NULL  -- more documents than ids: no record (an id is what one needs)
"""


# A pandas DataFrame written by to_json: its default orient="columns" (a column an object of
# row labels, in the rows' order) and orient="split" (columns, index, data), a row a record.
# Each column's values unnested once, in its rows' order (the first column's labels), and a row's
# cells gathered: looking each cell up by its row label in the column's map, row by row, took
# 100 s and 5 GB for 20,000 rows.
_READ_PANDAS_COLUMNS = """
CREATE OR REPLACE TEMP TABLE gm_src AS
WITH doc AS (SELECT json_transform(content::JSON, '"MAP(VARCHAR, MAP(VARCHAR, JSON))"') AS m
             FROM /*doc*/read_text($path)),
cols AS (SELECT m, unnest(map_keys(m)) AS c, generate_subscripts(map_keys(m), 1) AS k FROM doc),
cells AS (SELECT c, k, unnest(map_entries(m[c])) AS e FROM cols),
labels AS (SELECT unnest(map_keys(m[map_keys(m)[1]])) AS label,
                  generate_subscripts(map_keys(m[map_keys(m)[1]]), 1) AS i FROM doc)
SELECT i AS line,
       to_json(map_from_entries(list({'key': c, 'value': e.value} ORDER BY k)))::VARCHAR AS raw,
       NULL::VARCHAR AS err
FROM cells JOIN labels ON labels.label = cells.e.key
GROUP BY i
"""
# orient="index": a row label (0, 1, …) an object of the row's fields
_READ_PANDAS_INDEX = """
CREATE OR REPLACE TEMP TABLE gm_src AS
WITH doc AS (SELECT map_values(json_transform(content::JSON, '"MAP(VARCHAR, JSON)"')) AS v
             FROM /*doc*/read_text($path))
SELECT i AS line, v[i]::VARCHAR AS raw, NULL::VARCHAR AS err FROM doc, range(1, len(v) + 1) r(i)
"""
_READ_PANDAS_SPLIT = """
CREATE OR REPLACE TEMP TABLE gm_src AS
WITH doc AS (SELECT json_transform(j -> '$.columns', '["VARCHAR"]') AS cols,
                    json_transform(j -> '$.data', '[["JSON"]]') AS data
             FROM (SELECT content::JSON AS j FROM /*doc*/read_text($path)))
SELECT i AS line,
       CASE WHEN len(data[i]) = len(cols)
            THEN to_json(map_from_entries(list_zip(cols, data[i])))::VARCHAR END AS raw,
       CASE WHEN len(data[i]) IS DISTINCT FROM len(cols)
            THEN 'wrong number of fields' END AS err
FROM doc, range(1, len(data) + 1) r(i)
"""


def _pandas_columns(con: duckdb.DuckDBPyConnection, item: InputFile, keys: list[str]) -> bool:
    """Whether the document is in pandas' default to_json layout (orient="columns"), or its
    orient="index": an object of objects that all have the same keys."""
    if len(keys) < 2 or "hits" in keys:  # a search response: _READ_JSON's
        return False
    # every value an object, all with the same row labels: no record is written so
    sql = """SELECT list_bool_and(list_transform(v, lambda x: json_type(x) = 'OBJECT'))
                    AND len(list_distinct(list_transform(v, lambda x: json_keys(x)::VARCHAR))) = 1
                    AND json_array_length(json_keys(v[1])) > 0
             FROM (SELECT map_values(json_transform(content::JSON, '"MAP(VARCHAR, JSON)"')) AS v
                   FROM /*doc*/read_text($path))"""
    return bool(_run_document(con, sql, item).fetchall()[0][0])


def _chroma_get(con: duckdb.DuckDBPyConnection, item: InputFile, keys: list[str]) -> bool:
    """Whether the document is a Chroma ``get()``: ids (strings) and documents, lists."""
    if not {"ids", "documents", "metadatas"} <= set(keys):
        return False
    sql = """SELECT json_type(j, '$.ids') = 'ARRAY' AND json_type(j, '$.documents') = 'ARRAY'
                    AND coalesce(json_type(j, '$.ids[0]') = 'VARCHAR', true)
             FROM (SELECT content::JSON AS j FROM /*doc*/read_text($path))"""
    return bool(_run_document(con, sql, item).fetchall()[0][0])


def read_raw(con: duckdb.DuckDBPyConnection, item: InputFile) -> None:
    """Make view ``gm_raw(line, raw, err)`` over one file's records."""
    params = {"path": str(item.path), "compression": item.compression}
    try:
        if item.format == "parquet":
            vectors, index = _left_out_columns(parquet_schema(con, item))
            left_out = vectors + index
            con.execute(_READ_PARQUET, {"path": str(item.path), "left_out": left_out})
            _left_out_note(con, vectors)
            con.execute("CREATE OR REPLACE TEMP VIEW gm_raw AS SELECT line, raw, err FROM gm_src")
        elif item.format == "json":
            _read_json_document(con, item)
            con.execute("CREATE OR REPLACE TEMP VIEW gm_raw AS SELECT line, raw, err FROM gm_src")
        elif item.format == "csv":
            sep = check_csv_width(item)
            con.execute(_READ_CSV if sep is None else _READ_CSV_SEP,
                        params if sep is None else {**params, "delim": sep})  # fmt: skip
            _lines_view(con, header=1 if sep is None else 2, jsonl=False)
        else:
            con.execute(_READ_LINES, params)
            _lines_view(con, header=0, jsonl=True)
            _bulk_records(con)
    except duckdb.Error as exc:
        raise unreadable(item, exc) from exc


# An Elasticsearch/OpenSearch _bulk body: an action line ({"index": {"_index", "_id"}}), then
# the document (none after a delete). A document is a record with its action's _id; an action
# line is no record.
_BULK_ACTION = (
    "(json_type(raw) = 'OBJECT' AND json_array_length(json_keys(raw)) = 1 "
    "AND json_keys(raw)[1] IN ('index', 'create', 'update', 'delete') "
    "AND json_type(raw -> ('$.' || json_keys(raw)[1])) = 'OBJECT')"
)
_BULK = f"""
CREATE OR REPLACE TEMP VIEW gm_raw AS
SELECT line, CASE WHEN err IS NULL AND json_type(raw) = 'OBJECT' AND action_id IS NOT NULL
                  THEN json_merge_patch(json_object('_id', action_id), raw)::VARCHAR
                  ELSE raw END AS raw, err
FROM (SELECT line, raw, err, action,
             lag(CASE WHEN action THEN json_extract(raw -> ('$.' || json_keys(raw)[1]), '$._id')
                 END) OVER (ORDER BY line) AS action_id
      FROM (SELECT line, raw, err, coalesce(err IS NULL AND {_BULK_ACTION}, false) AS action
            FROM gm_bulk_lines))
WHERE NOT action
"""


def _is_bulk_action(raw: str) -> bool:
    import json

    try:
        value = json.loads(raw)
    except ValueError:
        return False
    return (
        isinstance(value, dict)
        and len(value) == 1
        and next(iter(value)) in ("index", "create", "update", "delete")
        and isinstance(next(iter(value.values())), dict)
    )


def _bulk_records(con: duckdb.DuckDBPyConnection) -> None:
    """A JSONL file whose first record is a _bulk action is read as a _bulk body."""
    first = con.execute(
        "SELECT raw FROM gm_raw WHERE err IS NULL ORDER BY line LIMIT 1"
    ).fetchall()  # told in Python: the file's every line is not parsed for it
    if not first or not _is_bulk_action(first[0][0]):
        return
    con.execute("DROP VIEW IF EXISTS gm_bulk_lines")
    con.execute("ALTER VIEW gm_raw RENAME TO gm_bulk_lines")
    con.execute(_BULK)


def _left_out_note(con: duckdb.DuckDBPyConnection, vectors: list[str]) -> None:
    """``gm_reader_note``: what the reader left out of the file's records, for its note."""
    n = len(vectors)
    note = (
        f"left out {n} column{'s' if n > 1 else ''} of embeddings (lists of numbers, not "
        f"metadata): {', '.join(vectors)}"
        if vectors
        else ""
    )
    con.execute("CREATE OR REPLACE TEMP TABLE gm_reader_note AS SELECT ?::VARCHAR AS note", [note])


def reader_note(con: duckdb.DuckDBPyConnection) -> str:
    """The note ``read_raw`` left for the file read last, if any."""
    if not con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE temporary AND table_name = 'gm_reader_note'"
    ).fetchall()[0][0]:
        return ""
    return con.execute("SELECT note FROM gm_reader_note").fetchall()[0][0] or ""


def unreadable(item: InputFile, exc: duckdb.Error) -> GoldmineError:
    """The one-line error for a file DuckDB's reader gave up on; its memory running out is the
    memory limit's error (exit 1), not a bad file's."""
    from goldmine.store import out_of_memory

    return out_of_memory(exc) or InputError(
        f"cannot read as {item.label}: {error_line(exc)}", path=item.path
    )


# A header wider than this is refused at once: DuckDB's sniffer and a JSON object per row over
# 20,000 columns ran out of memory after half a minute. No search log or corpus needs more.
MAX_CSV_COLUMNS = 1000


def check_csv_width(item: InputFile) -> str | None:
    """Refuse a CSV whose header has more than MAX_CSV_COLUMNS fields, before DuckDB reads it;
    the delimiter an Excel ``sep=`` line above the header names, if any."""
    import csv

    from goldmine.ingest.scan import read_head

    head = read_head(item.path, item.compression, 1 << 20)  # the scan names a damaged stream
    sep = excel_sep(head)
    lines = head_lines(head, 2)[1 if sep else 0 :]
    text = (lines or [b""])[0].decode("utf-8", errors="replace")
    dialect = "excel-tab" if "\t" in text and item.path.suffix.lower() != ".csv" else "excel"
    fields = max(
        (len(row) for row in csv.reader([text], dialect, **({"delimiter": sep} if sep else {}))),
        default=0,
    )
    if fields > MAX_CSV_COLUMNS:
        raise InputError(
            f"the CSV header has {fields:,} columns (goldmine reads at most "
            f"{MAX_CSV_COLUMNS:,}): is it the right file, with the right delimiter?",
            path=item.path,
        )
    return sep


def read_lines(
    con: duckdb.DuckDBPyConnection, item: InputFile, columns: tuple[str, ...], name: str
) -> None:
    """View ``name(line, raw, err, *columns)`` over a file's non-blank lines: ``columns`` are
    SQL over ``raw`` computed in file order (NULL on a line the reader could not read)."""
    extra = "".join(f", {c}" for c in columns)
    params = {"path": str(item.path), "compression": item.compression}
    con.execute(_READ_LINES.replace("/*columns*/", extra), params)
    _lines_view(con, header=0, jsonl=False, name=name, columns=[c.split()[-1] for c in columns])


def numbered_lines() -> str:
    """SQL of a file's non-blank lines ``(line, raw)`` numbered as ``read_lines`` numbers them,
    for a reader that makes its records in the statement that reads the lines (``$path``,
    ``$compression``): a table of the lines between stores each line's text again, which cost a
    TSV collection's reader as much as reading the file. A line the reader skips (invalid UTF-8,
    too long) shifts the numbers after it: when ``reader_skipped`` says so after the statement,
    read the file with ``read_lines``, which places each such line as a reject."""
    return (
        f"(SELECT rn AS line, raw FROM (SELECT row_number() OVER () AS rn, raw FROM {_LINES}) "
        f"WHERE {_NOT_BLANK})"
    )


def reader_skipped(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the last read of ``numbered_lines`` skipped a line; its reader errors are
    dropped (``read_lines`` reads them again)."""
    skipped = con.execute("SELECT count(*) FROM gm_reader_errors").fetchall()[0][0] > 0
    con.execute("DELETE FROM gm_reader_errors; DELETE FROM gm_reader_scans")
    return skipped


def _lines_view(
    con: duckdb.DuckDBPyConnection,
    header: int,
    jsonl: bool,
    name: str = "gm_raw",
    columns: list[str] | None = None,
) -> None:
    con.execute(_READER_ERRORS, {"header": header})
    con.execute("DELETE FROM gm_reader_errors; DELETE FROM gm_reader_scans")
    err = _JSONL_ERR if jsonl else "NULL::VARCHAR"
    # header is 0 or 1, a constant of this module: views cannot take parameters.
    if con.execute("SELECT count(*) FROM gm_errs").fetchall()[0][0] == 0:
        line = f"rn + {int(header)}"
        source = "gm_lines"
    else:
        line = f"rn + coalesce(e.skipped, 0) + {int(header)}"
        source = (
            "gm_lines l ASOF LEFT JOIN (SELECT before, max(skipped) AS skipped FROM gm_errs "
            "GROUP BY before) e ON l.rn > e.before"
        )
    con.execute(f"""
        CREATE OR REPLACE TEMP VIEW {name} AS
        SELECT {line} AS line, raw, {err} AS err{"".join(f", {c}" for c in columns or [])}
        FROM {source} WHERE {_NOT_BLANK}
        UNION ALL
        SELECT line, raw, err{"".join(f", NULL AS {c}" for c in columns or [])} FROM gm_errs
    """)


_replaced = 0


def replace_raw(con: duckdb.DuckDBPyConnection, sql: str, params: dict | None = None) -> None:
    """Materialize ``sql`` (over the current gm_raw) as the new gm_raw."""
    global _replaced
    _replaced += 1
    name = f"gm_src_{_replaced}"
    con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {sql}", params or {})
    con.execute(f"CREATE OR REPLACE TEMP VIEW gm_raw AS SELECT line, raw, err FROM {name}")


def check_json(con: duckdb.DuckDBPyConnection) -> None:
    """Mark malformed JSON records up front, for the steps that read gm_raw with JSON functions
    before the mapping parse (chat threads, UBI)."""
    replace_raw(
        con,
        "SELECT line, raw, coalesce(err, CASE WHEN NOT json_valid(raw) THEN 'malformed JSON' "
        "WHEN json_type(raw) <> 'OBJECT' THEN 'not a JSON object' END) AS err FROM gm_raw",
    )


def drop_raw(con: duckdb.DuckDBPyConnection) -> None:
    """Drop the batch's temp tables and views (all named ``gm_…``)."""
    con.execute("DROP VIEW IF EXISTS gm_raw")
    con.execute("DROP VIEW IF EXISTS gm_bulk_lines")
    names = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE temporary AND starts_with(table_name, 'gm_')"
    ).fetchall()
    for (name,) in names:
        con.execute(f"DROP TABLE {name}")


# A compressed document (gzip, zstd: the others are read from a plain copy) read whole, as
# read_text reads a plain one; its size is bounded by the memory limit, not the reader's 16 MB.
_COMPRESSED_DOCUMENT = """(SELECT json::VARCHAR AS content FROM read_json_objects($path,
    format = 'unstructured', compression = $compression, maximum_object_size = 4294967295))"""


def _run_document(
    con: duckdb.DuckDBPyConnection, sql: str, item: InputFile, params: dict | None = None
) -> duckdb.DuckDBPyConnection:
    """Run one of the document readers over ``item``, plain or compressed."""
    args = {"path": str(item.path), **(params or {})}
    if item.compression != "none":
        sql = sql.replace("/*doc*/read_text($path)", _COMPRESSED_DOCUMENT)
        args["compression"] = item.compression
    return con.execute(sql, args)


def _read_json_document(con: duckdb.DuckDBPyConnection, item: InputFile) -> None:
    if _starts_with_array(item):
        con.execute(_READ_JSON_ARRAY, {"path": str(item.path), "compression": item.compression})
        return
    # The document's keys, and the lists under its _embedded (a HAL page's records), in one read
    keys, embedded = _run_document(
        con,
        "SELECT CASE WHEN json_type(j) = 'OBJECT' THEN json_keys(j) END, "
        "list_filter(json_keys(j, '$._embedded'), "
        "lambda k: json_type(j -> '$._embedded' -> k) = 'ARRAY') "
        "FROM (SELECT content::JSON AS j FROM /*doc*/read_text($path))",
        item,
    ).fetchall()[0]
    keys = keys or []
    if {"queries", "corpus", "relevant_docs"} <= set(keys):
        _run_document(con, _READ_LLAMAINDEX_CORPUS, item)
        return
    data = _docstore_data(keys)
    if data is not None:
        _run_document(con, _READ_LLAMAINDEX_DOCSTORE, item, {"data": data})
        _parents_note(con)
        return
    if _chroma_get(con, item, keys):
        _run_document(con, _READ_CHROMA_GET, item)
        return
    if {"columns", "data"} <= set(keys) <= {"columns", "index", "data"}:
        _run_document(con, _READ_PANDAS_SPLIT, item)
        return
    wrapper = next((f'$."{k}"' for k in _WRAPPERS if k in keys), None)
    if wrapper is None and "result" in keys:  # Qdrant's scroll: {"result": {"points": […]}}
        wrapper = '$."result"."points"'
    # A HAL page (Help Scout's API): its records are _embedded's first list. A record of its own
    # (one conversation, its threads under _embedded) is read whole.
    page = "_embedded" in keys and set(keys) <= {"_embedded", "_links", "page"}
    if wrapper is None and page and embedded and '"' not in embedded[0]:
        wrapper = f'$."_embedded"."{embedded[0]}"'
    if wrapper is None and _pandas_columns(con, item, keys):
        rows = all(k.isdigit() for k in keys)  # orient="index": the labels of a RangeIndex
        _run_document(con, _READ_PANDAS_INDEX if rows else _READ_PANDAS_COLUMNS, item)
        return
    _run_document(con, _READ_JSON, item, {"wrapper": wrapper or "$.none"})


# A document that is an array of records is read element by element by DuckDB's JSON reader,
# which streams it: neither the file nor the array is ever one value (an export of a few GB
# would not fit, and one value cannot spill). Each element keeps its position as its line. Only
# an object wrapping the records (``{"data": […]}``) is read whole.
# The reader gives each element as minified JSON text: an object is one that starts with a brace
# (json_type would parse every element again, and under a tight memory limit runs out of it).
_READ_JSON_ARRAY = """
CREATE OR REPLACE TEMP TABLE gm_src AS
SELECT row_number() OVER () AS line, coalesce(raw, 'null') AS raw,
       CASE WHEN raw IS NULL OR NOT starts_with(raw, '{') THEN 'not a JSON object' END AS err
FROM (SELECT j::VARCHAR AS raw
      FROM read_json($path, format = 'array', records = false, columns = {'j': 'JSON'},
                     compression = $compression))
"""


def _starts_with_array(item: InputFile) -> bool:
    """Whether a JSON document's first character (after a BOM and white space) opens an array."""
    from goldmine.ingest.scan import read_head

    head = read_head(item.path, item.compression, 65536)
    return head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")[:1] == b"["


_RAW_LINE_OPTIONS = """columns = {'raw': 'VARCHAR'}, header = false, delim = chr(0), quote = '',
    escape = '', auto_detect = false, compression = $gm_compression, max_line_size = 16777216,
    buffer_size = 33554432"""

# For a target that reads a JSONL file's lines itself (ingest.traces).
RAW_LINE_OPTIONS, NOT_BLANK, OBJECT = _RAW_LINE_OPTIONS, _NOT_BLANK, _OBJECT


def sample_keys(
    con: duckdb.DuckDBPyConnection, item: InputFile, sample: int | None = None
) -> list[str]:
    """Field names of a JSONL file's records, read straight from the file: in the order the
    first 20,000 records write them, then any later record's, sorted; of the first ``sample``
    only when given. Every record's, since a field first written after the first 20,000 (a
    deploy's mid-week addition) was stored as nothing: the later keys cost one more pass of
    the lines, their keys only, on every core (~0.1 s for 300k lines)."""
    records = f"""SELECT raw, row_number() OVER () AS line
                  FROM read_csv($gm_path, {_RAW_LINE_OPTIONS}) LIMIT $n"""
    params = {"gm_path": str(item.path), "gm_compression": item.compression}
    first = min(sample or _KEY_SAMPLE, _KEY_SAMPLE)
    try:
        keys = _first_seen_keys(con, records, {**params, "n": first})
        if sample is not None or _lines_below(con, params, first):
            return keys
        later = run_sql(
            con,
            "SELECT DISTINCT unnest(try(json_keys(raw))) AS k "
            f"FROM read_csv($gm_path, {_RAW_LINE_OPTIONS}) ORDER BY k",
            params,
        ).fetchall()
    except duckdb.IOException as exc:  # a compressed stream cut short
        raise InputError(
            f"cannot read: {str(exc).splitlines()[0].removeprefix('IO Error: ')}: the file is "
            "truncated or damaged; nothing from it was stored",
            path=item.path,
        ) from None
    seen = set(keys)
    return keys + [k for (k,) in later if k is not None and k not in seen]


# The records whose keys give their order (a file's usual layout); later ones add keys only.
_KEY_SAMPLE = 20000


def _lines_below(con: duckdb.DuckDBPyConnection, params: dict, n: int) -> bool:
    """Whether the file has fewer than ``n`` lines: the first ``n`` records were all of it."""
    sql = f"SELECT count(*) FROM (SELECT 1 FROM read_csv($gm_path, {_RAW_LINE_OPTIONS}) LIMIT $n)"
    return run_sql(con, sql, {**params, "n": n}).fetchall()[0][0] < n


def parquet_schema(con: duckdb.DuckDBPyConnection, item: InputFile) -> dict[str, str]:
    """A Parquet file's columns, in order, with their DuckDB type (from its metadata)."""
    rows = con.execute(
        "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet($p))",
        {"p": str(item.path)},
    ).fetchall()
    return dict(rows)


def field_columns(columns: dict[str, str], got: Callable[[int, str], str | None]) -> str:
    """The per-field columns of ``gm_rows``: ``gm_c<i>`` (the field as text or JSON text),
    ``gm_n<i>`` (a native list of strings) and ``gm_s<i>`` (a native string), for the i-th of
    ``columns`` in order. ``got(i, key)`` gives the SQL of the three for one field as a tuple, or
    None when the record source has no such field."""
    parts = []
    for i, key in enumerate(columns, start=1):
        c, n, s = got(i, key) or ("NULL::VARCHAR", "NULL::VARCHAR[]", "NULL::VARCHAR")
        parts.append(f"{c} AS gm_c{i}, {n} AS gm_n{i}, {s} AS gm_s{i}")
    return ", ".join(parts)


# Rows that are not hashed by line (see ``streaming_rows``).
_UNSEEN = "false AS gm_seen, NULL::UHUGEINT AS gm_line"


def materialized_rows(columns: dict[str, str]) -> str:
    """SQL for ``gm_rows`` over ``gm_raw``: each record parsed once into the ``columns``."""
    fields = field_columns(
        columns, lambda i, _: (f"struct_extract_at(j, {i})", "NULL::VARCHAR[]", "NULL::VARCHAR")
    )
    return f"""
        SELECT line, raw, coalesce(err, CASE WHEN j IS NULL THEN 'malformed JSON' END) AS err,
               {_UNSEEN}, {fields}
        FROM (SELECT line, raw, err,
                     CASE WHEN err IS NULL THEN try(json_transform(raw, $gm_structure)) END AS j
              FROM gm_raw)
    """


def raw_view(con: duckdb.DuckDBPyConnection, keys: list[str] | None = None) -> None:
    """View ``gm_raw(line, raw, err)`` over ``gm_src``; with ``keys``, the records' fields are
    ``gm_src``'s text columns ``gm_f1``.. (named by ``keys``, unique), made a JSON object here
    only for who reads ``gm_raw`` (a view holds no parameters: the names are in a table)."""
    if keys is None:
        con.execute("CREATE OR REPLACE TEMP VIEW gm_raw AS SELECT line, raw, err FROM gm_src")
        return
    con.execute("CREATE OR REPLACE TEMP TABLE gm_src_keys AS SELECT ?::VARCHAR[] AS k", [keys])
    values = ", ".join(f"gm_f{i}" for i in range(1, len(keys) + 1))
    record = f"to_json(map_from_entries(list_zip((SELECT k FROM gm_src_keys), [{values}])))"
    con.execute(
        "CREATE OR REPLACE TEMP VIEW gm_raw AS "
        f"SELECT line, coalesce(raw, {record}::VARCHAR) AS raw, err FROM gm_src"
    )


def typed_rows(columns: dict[str, str], keys: list[str]) -> str:
    """SQL for ``gm_rows`` (see ``field_columns``) over ``gm_src``'s text columns (``raw_view``):
    no JSON is made or parsed for a record. A field read as JSON (its type checked) comes as a
    native string (``gm_s``). ``raw`` is the text of a line that is no record; a record the
    stage rejects gets its JSON from ``typed_reject_raw`` afterwards (made in the stage, a
    ``gm_rows`` column is computed for every row, rejected or not)."""

    def typed(_: int, key: str) -> tuple[str, str, str] | None:
        if key not in keys:
            return None
        got = f"gm_f{keys.index(key) + 1}"
        if columns[key] == "JSON":
            return "NULL::VARCHAR", "NULL::VARCHAR[]", got
        return got, "NULL::VARCHAR[]", "NULL::VARCHAR"

    return f"SELECT line, raw, err, {_UNSEEN}, {field_columns(columns, typed)} FROM gm_src"


def typed_reject_raw(con: duckdb.DuckDBPyConnection, redactor) -> None:
    """Give the stage's rejected records read as text columns (``typed_rows``) their JSON
    object as ``raw`` (``gm_raw``'s, see ``raw_view``), redacted as the stage redacts a
    reject's text: for the rejects alone."""
    todo = "SELECT line FROM gm_stage WHERE reason IS NOT NULL AND raw IS NULL"
    if not con.execute(f"SELECT count(*) FROM ({todo})").fetchall()[0][0]:
        return
    run_sql(
        con,
        f"""UPDATE gm_stage SET raw = {redactor.nested("m.raw")}
            FROM (SELECT line, raw FROM gm_raw WHERE line IN ({todo})) m
            WHERE gm_stage.reason IS NOT NULL AND gm_stage.raw IS NULL
              AND gm_stage.line = m.line""",
        redactor.sql_params(),
    )


def streaming_rows(
    con: duckdb.DuckDBPyConnection,
    item: InputFile,
    columns: dict[str, str],
    schema: dict[str, str] | None = None,
    numbered: bool = False,
    line_key: str | None = None,
) -> tuple[str, dict]:
    """SQL for ``gm_rows`` (see ``field_columns``) parsed in one pass, straight from the file.

    For JSONL, ``line`` is empty, or the record number when ``numbered`` (blank lines are not
    records), until ``fix_reject_lines`` gives the rejected rows their line number and their
    text. With ``line_key`` (see ``batch.line_key``), ``gm_line`` is a hash of the line's text
    under that key, and ``gm_seen`` says a stored row came from the same text read the same
    way: such a line is not parsed. For Parquet, the fields come from the typed columns by
    position (``schema``: the file's columns in order, with their type), with no JSON round
    trip for the row; a JSON field that is a Parquet list of strings or a string comes as itself
    in ``gm_n``/``gm_s``, its text left NULL: it is neither written as JSON nor parsed back. One
    column per field, never a struct or list packed per row: the optimizer drops what no
    expression reads.
    """
    params = {"gm_path": str(item.path), "gm_compression": item.compression}
    if item.format == "parquet":
        keys = list(schema or {})

        def parquet_field(_: int, key: str) -> tuple[str, str, str] | None:
            if key not in keys:
                return None
            got = f"struct_extract_at(t, {keys.index(key) + 1})"
            passed = schema[key] if columns[key] == "JSON" else None
            if passed == "VARCHAR[]":
                return "NULL::VARCHAR", got, "NULL::VARCHAR"
            if passed == "VARCHAR":
                return "NULL::VARCHAR", "NULL::VARCHAR[]", got
            text = f"to_json({got})::VARCHAR" if columns[key] == "JSON" else f"{got}::VARCHAR"
            return text, "NULL::VARCHAR[]", "NULL::VARCHAR"

        sql = (
            "SELECT file_row_number + 1 AS line, NULL::VARCHAR AS raw, NULL::VARCHAR AS err, "
            f"{_UNSEEN}, {field_columns(columns, parquet_field)} "
            "FROM read_parquet($gm_path, file_row_number = true) t"
        )
        return sql, {"gm_path": str(item.path)}
    # Lines as text, then one parse per line: the text gives each line a hash (``gm_line``), and
    # a line whose hash is among the stored rows' (``gm_seen_line``) is not parsed at all.
    hashed = "NULL::UHUGEINT"
    if line_key:
        # 128 bits: a collision would count a new line as stored. The key is mixed in by xor.
        params["gm_line_key"] = line_key
        hashed = "xor(md5_number(raw), md5_number($gm_line_key))"
    lines = f"read_csv($gm_path, {_RAW_LINE_OPTIONS})"
    if numbered:
        # Numbered: the lines are first read into a temp table, in order, so that rowid numbers
        # the records (a window would run the whole stage on one thread).
        run_sql(con, f"CREATE OR REPLACE TEMP TABLE gm_read AS SELECT raw FROM {lines} "
                f"WHERE {_NOT_BLANK}", params)  # fmt: skip
        lines, number = "gm_read", "rowid + 1"
    else:
        number = "NULL::BIGINT"
    fields = field_columns(
        columns, lambda i, _: (f"struct_extract_at(gm_j, {i})", "NULL::VARCHAR[]", "NULL::VARCHAR")
    )
    # json_transform makes a line holding a list or a number a struct of NULLs: such a line is
    # marked here, by its first character, and fix_reject_lines says which it is.
    sql = f"""
        SELECT line, NULL::VARCHAR AS raw,
               CASE WHEN NOT gm_seen AND (gm_j IS NULL OR NOT gm_object)
                    THEN 'malformed JSON' END AS err,
               gm_seen, gm_line, {fields}
        FROM (SELECT line, gm_line, gm_seen, {_OBJECT} AS gm_object, CASE WHEN NOT gm_seen
                     THEN try(json_transform(raw, $gm_structure)) END AS gm_j
              FROM (SELECT line, raw, gm_line, gm_seen_line(gm_line) AS gm_seen
                    FROM (SELECT {number} AS line, raw, {hashed} AS gm_line
                          FROM {lines} WHERE {_NOT_BLANK})))
    """
    return sql, params


def fix_reject_lines(con: duckdb.DuckDBPyConnection, item: InputFile, redactor) -> None:
    """Give the rejected rows of a streamed file their line number and (redacted) text. For
    JSONL, ``line`` holds the record number until here (blank lines are not records)."""
    recs = con.execute("SELECT list(line) FROM gm_stage WHERE reason IS NOT NULL").fetchall()[0][0]
    if not recs:
        return
    raw = redactor.nested("m.raw")
    if item.format == "parquet":
        source = (
            f"SELECT file_row_number + 1 AS rec, file_row_number + 1 AS line, {_PARQUET_ROW} "
            "AS raw FROM read_parquet($gm_path, file_row_number = true)"
        )
    else:
        source = f"""SELECT row_number() OVER () AS rec, line, raw FROM (
                SELECT row_number() OVER () AS line, raw
                FROM read_csv($gm_path, {_RAW_LINE_OPTIONS}))
            WHERE {_NOT_BLANK}"""
    run_sql(
        con,
        f"""CREATE OR REPLACE TEMP TABLE gm_linemap AS
            SELECT * FROM ({source}) WHERE rec IN (SELECT unnest($recs))""",
        {"gm_path": str(item.path), "gm_compression": item.compression, "recs": recs},
    )
    # A streamed line that did not parse as an object was marked 'malformed JSON' (see
    # streaming_rows): its text says whether it is valid JSON of another kind.
    run_sql(
        con,
        f"""UPDATE gm_stage SET line = m.line, raw = {raw}, reason = CASE
                WHEN NOT json_valid(m.raw) THEN 'malformed JSON'
                WHEN json_type(m.raw) <> 'OBJECT' THEN 'not a JSON object'
                ELSE gm_stage.reason END
            FROM gm_linemap m
            WHERE gm_stage.reason IS NOT NULL AND gm_stage.line = m.rec""",
        redactor.sql_params(),
    )
    con.execute("DROP TABLE gm_linemap")


_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def run_sql(con: duckdb.DuckDBPyConnection, sql: str, params: dict):
    """Execute with only the named parameters the SQL uses (DuckDB refuses unused ones)."""
    used = set(_PARAM.findall(sql))
    return con.execute(sql, {k: v for k, v in params.items() if k in used})


def discover_keys(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The field names of every record of ``gm_raw``, in first-seen order."""
    return _first_seen_keys(con, "SELECT raw, line FROM gm_raw WHERE err IS NULL", {})


def _first_seen_keys(con: duckdb.DuckDBPyConnection, records: str, params: dict) -> list[str]:
    """The keys of the JSON objects in ``records(raw, line)``, in first-seen order."""
    rows = run_sql(
        con,
        "SELECT k FROM (SELECT unnest(try(json_keys(raw))) AS k, line FROM "
        f"({records})) GROUP BY k ORDER BY min(line), k",
        params,
    ).fetchall()
    return [r[0] for r in rows]
