"""Finding the files to import and reading any of them into one shape: ``gm_raw(line, raw, err)``.

Every format becomes a temp table of JSON objects, one per record, with the record's line (JSONL,
CSV) or row number (Parquet, JSON documents) and a reader error where the record could not be
read. The stage-specific SQL then maps fields by name, whatever the file format was, and the
accounting starts from one row per input record. Paths reach DuckDB as parameters only.
"""

from __future__ import annotations

import glob
from dataclasses import dataclass
from pathlib import Path

import duckdb

from goldmine.errors import InputError

FORMATS = ("jsonl", "json", "csv", "parquet")
_SUFFIXES = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".tsv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_COMPRESSION = {".gz": "gzip", ".gzip": "gzip", ".zst": "zstd", ".zstd": "zstd"}


@dataclass(frozen=True)
class InputFile:
    path: Path
    format: str
    compression: str  # none | gzip | zstd

    @property
    def label(self) -> str:
        return self.format + ("" if self.compression == "none" else f"+{self.compression}")


def detect(path: Path, forced: str | None = None) -> InputFile:
    suffixes = [s.lower() for s in path.suffixes]
    compression = "none"
    if suffixes and suffixes[-1] in _COMPRESSION:
        compression = _COMPRESSION[suffixes.pop()]
    fmt = forced or (_SUFFIXES.get(suffixes[-1]) if suffixes else None)
    if fmt not in FORMATS:
        raise InputError(
            "unknown file format (expected .jsonl/.ndjson, .json, .csv or .parquet, "
            "optionally .gz or .zst; or pass --format)",
            path=path,
        )
    return InputFile(path, fmt, compression)


def discover(paths: list[str | Path], forced: str | None = None) -> list[InputFile]:
    """Files named, matched by a glob, or found in a folder (recursively, known formats only)."""
    found: list[InputFile] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            inside = sorted(p for p in path.rglob("*") if p.is_file() and _known(p))
            if not inside:
                raise InputError("folder holds no .jsonl, .json, .csv or .parquet files", path=path)
            found.extend(detect(p, forced) for p in inside)
        elif path.is_file():
            found.append(detect(path, forced))
        elif glob.has_magic(str(given)):
            matched = sorted(Path(p) for p in glob.glob(str(given), recursive=True))
            matched = [p for p in matched if p.is_file()]
            if not matched:
                raise InputError("no file matches this pattern", path=given)
            found.extend(detect(p, forced) for p in matched)
        else:
            raise InputError("no such file or folder", path=given)
    for item in found:
        try:
            with item.path.open("rb"):
                pass
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", path=item.path) from exc
    return found


def _known(path: Path) -> bool:
    try:
        detect(path)
    except InputError:
        return False
    return True


_READ_LINES = """
CREATE OR REPLACE TEMP TABLE gm_lines AS
SELECT row_number() OVER () AS rn, raw
FROM read_csv($path, columns = {'raw': 'VARCHAR'}, header = false, delim = chr(0), quote = '',
              escape = '', auto_detect = false, compression = $compression,
              store_rejects = true, rejects_table = 'gm_reader_errors',
              rejects_scan = 'gm_reader_scans', max_line_size = 16777216)
"""

_READ_CSV = """
CREATE OR REPLACE TEMP TABLE gm_lines AS
SELECT row_number() OVER () AS rn, to_json(t)::VARCHAR AS raw
FROM read_csv($path, header = true, all_varchar = true, compression = $compression,
              store_rejects = true, rejects_table = 'gm_reader_errors',
              rejects_scan = 'gm_reader_scans') t
"""

# Lines the reader skipped (bad encoding, too long, wrong column count) shift the row numbers of
# the lines after them; ``shift`` counts, for each surviving row, the skipped lines before it.
_LINES_TO_RAW = """
CREATE OR REPLACE TEMP TABLE gm_raw AS
WITH errs AS (
    SELECT DISTINCT line, first(error_type) AS error_type, first(csv_line) AS csv_line
    FROM gm_reader_errors GROUP BY line
),
shifts AS (SELECT line - $header - row_number() OVER (ORDER BY line) AS before FROM errs)
SELECT rn + (SELECT count(*) FROM shifts WHERE before < rn) + $header AS line,
       raw, NULL::VARCHAR AS err
FROM gm_lines WHERE raw IS NOT NULL AND trim(raw) <> ''
UNION ALL
SELECT line, trim(csv_line, chr(10) || chr(13)),
       CASE error_type WHEN 'INVALID ENCODING' THEN 'invalid UTF-8'
                       WHEN 'LINE SIZE OVER MAXIMUM' THEN 'line too long'
                       ELSE lower(replace(error_type, '_', ' ')) END
FROM errs
"""

_READ_PARQUET = """
CREATE OR REPLACE TEMP TABLE gm_raw AS
SELECT file_row_number + 1 AS line, to_json(t)::VARCHAR AS raw, NULL::VARCHAR AS err
FROM (SELECT * EXCLUDE (file_row_number), file_row_number
      FROM read_parquet($path, file_row_number = true)) t
"""

# A JSON document: an array of records, an object wrapping one (``{"tickets": […]}``,
# an OpenSearch ``_search`` dump), or a single record.
_READ_JSON = """
CREATE OR REPLACE TEMP TABLE gm_raw AS
WITH doc AS (SELECT content::JSON AS j FROM read_text($path)),
items AS (
    SELECT CASE
        WHEN json_type(j) = 'ARRAY' THEN json_extract(j, '$[*]')
        WHEN json_type(j, '$.hits.hits') = 'ARRAY' THEN json_extract(j, '$.hits.hits[*]._source')
        WHEN json_type(j, $wrapper) = 'ARRAY' THEN json_extract(j, $wrapper || '[*]')
        ELSE [j] END AS records
    FROM doc
)
SELECT i AS line, records[i]::VARCHAR AS raw,
       CASE WHEN json_type(records[i]) <> 'OBJECT' THEN 'not a JSON object' END AS err
FROM items, range(1, len(records) + 1) r(i)
"""

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
)


def read_raw(con: duckdb.DuckDBPyConnection, item: InputFile) -> None:
    """Fill temp table ``gm_raw(line, raw, err)`` from one file; JSON validity is checked here."""
    params = {"path": str(item.path), "compression": item.compression}
    try:
        if item.format == "parquet":
            con.execute(_READ_PARQUET, {"path": str(item.path)})
        elif item.format == "json":
            _read_json_document(con, item)
        else:
            con.execute(_READ_LINES if item.format == "jsonl" else _READ_CSV, params)
            con.execute(_LINES_TO_RAW, {"header": 1 if item.format == "csv" else 0})
            con.execute("DELETE FROM gm_reader_errors; DELETE FROM gm_reader_scans")
    except duckdb.Error as exc:
        raise InputError(
            f"cannot read as {item.label}: {_first_line(exc)}", path=item.path
        ) from exc
    if item.format == "jsonl":
        con.execute(
            "UPDATE gm_raw SET err = CASE WHEN NOT json_valid(raw) THEN 'malformed JSON' "
            "ELSE 'not a JSON object' END "
            "WHERE err IS NULL AND (NOT json_valid(raw) OR json_type(raw) <> 'OBJECT')"
        )


def _read_json_document(con: duckdb.DuckDBPyConnection, item: InputFile) -> None:
    path = str(item.path)
    if item.compression != "none":
        raise InputError("compressed .json documents are not supported; use JSONL", path=path)
    keys = (
        con.execute(
            "SELECT CASE WHEN json_type(j) = 'OBJECT' THEN json_keys(j) END "
            "FROM (SELECT content::JSON AS j FROM read_text(?))",
            [path],
        ).fetchall()[0][0]
        or []
    )
    wrapper = next((k for k in _WRAPPERS if k in keys), None)
    con.execute(_READ_JSON, {"path": path, "wrapper": f'$."{wrapper}"' if wrapper else "$.none"})


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def discover_keys(con: duckdb.DuckDBPyConnection, sample: int = 20000) -> list[str]:
    """The field names seen in the first records, in first-seen order."""
    rows = con.execute(
        "SELECT k FROM (SELECT unnest(json_keys(raw)) AS k, line FROM "
        "(SELECT raw, line FROM gm_raw WHERE err IS NULL ORDER BY line LIMIT ?)) "
        "GROUP BY k ORDER BY min(line), k",
        [sample],
    ).fetchall()
    return [r[0] for r in rows]
