"""Which format a file to import is in, and the reader that makes it records.

A file's format is told by its first bytes (SMART and TREC SGML ship with no telling suffix, a
search log's own layouts are told by their header or tags), else by its suffix. This module sits
above the base readers (``ingest.files``) and the readers of IR collections
(``ingest.corpus_formats``) and search-log layouts (``ingest.logformats``), which read lines
through ``ingest.files``: so no module of the three imports another in a ring.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

import duckdb

from goldmine.errors import InputError
from goldmine.files import require_file
from goldmine.ingest import corpus_formats, files, logformats
from goldmine.ingest.files import InputFile

_COLLECTIONS = ("smart", "trec", "tsv")  # IR collections' layouts (ingest.corpus_formats)
_LOG_LAYOUTS = ("session_xml", "clicklog", "analytics")  # search logs' own (ingest.logformats)
FORMATS = ("jsonl", "json", "csv", "parquet", *_COLLECTIONS, *_LOG_LAYOUTS)
# What each format is, for the message when a file's format cannot be told.
FORMAT_NAMES = {
    "jsonl": "JSONL (.jsonl/.ndjson)",
    "json": "JSON (.json)",
    "csv": "CSV (.csv)",
    "parquet": "Parquet (.parquet)",
    "smart": "SMART (.I/.T/.W lines)",
    "trec": "TREC SGML (<DOC><DOCNO>)",
    "tsv": "TSV (id<TAB>text)",
    "session_xml": "TREC Session Track XML",
    "clicklog": "click-level logs (a row per click: AnonID, Query, QueryTime, ItemRank, ClickURL)",
    "analytics": "aggregated search analytics (query, count, no results, CTR)",
}
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
_MAGIC = {b"\x1f\x8b": "gzip", b"\x28\xb5\x2f\xfd": "zstd"}


def detect(path: Path, forced: str | None = None) -> InputFile:
    """The file's format: ``forced``, else told by its first bytes (SMART and TREC SGML, which
    ship with no telling suffix: ``cran.all.1400``, ``ap880212``), else by its suffix, else a
    tab in its first line (a TSV collection)."""
    suffixes = [s.lower() for s in path.suffixes]
    compression = "none"
    if suffixes and suffixes[-1] in _COMPRESSION:
        compression = _COMPRESSION[suffixes.pop()]
    if compression == "none":
        compression = _compression_by_magic(path)
    head = _first_bytes(path, compression)
    by_suffix = _SUFFIXES.get(suffixes[-1]) if suffixes else None
    fmt = forced or _log_layout(head, suffixes)
    if fmt is None:
        told = corpus_formats.sniff(head)
        fmt = told if told in ("smart", "trec") or by_suffix is None else by_suffix
    if fmt not in FORMATS:
        raise InputError(
            "unknown file format: goldmine reads "
            + ", ".join(FORMAT_NAMES.values())
            + ", each optionally .gz or .zst; name one with --format "
            + "|".join(FORMATS),
            path=path,
        )
    return InputFile(path, fmt, compression)


def _log_layout(head: bytes, suffixes: list[str]) -> str | None:
    """A search log's own layout (ingest.logformats), told by the file's first bytes."""
    return logformats.sniff(head, suffixes[-1] if suffixes else "")


def _first_bytes(path: Path, compression: str, size: int = 65536) -> bytes:
    """The start of the file's content, decompressed; empty if it cannot be read (discover or
    the scan says what is wrong with the file)."""
    from goldmine.ingest.scan import open_compressed

    try:
        with open_compressed(path, compression) as handle:
            return handle.read(size)
    except Exception:
        return b""


def _compression_by_magic(path: Path) -> str:
    """gzip or zstd by the file's magic number, for a compressed file not named so."""
    try:
        with path.open("rb") as f:
            magic = f.read(4)
    except OSError:
        return "none"
    return next((c for m, c in _MAGIC.items() if magic.startswith(m)), "none")


def discover(paths: list[str | Path], forced: str | None = None) -> list[InputFile]:
    """Files named, matched by a glob, or found in a folder (recursively, known formats only)."""
    found: list[InputFile] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            inside = sorted(p for p in path.rglob("*") if p.is_file() and _known(p))
            if not inside:
                raise InputError(
                    "folder holds no file in a format goldmine reads (--format to name one)",
                    path=path,
                )
            found.extend(detect(p, forced) for p in inside)
        elif path.is_file():
            found.append(detect(path, forced))
        elif os.path.lexists(path) or not glob.has_magic(str(given)):
            require_file(path)
            raise InputError("cannot be read", path=given)  # not reached: it says what is wrong
        else:
            matched = sorted(Path(p) for p in glob.glob(str(given), recursive=True))
            matched = [p for p in matched if p.is_file()]
            if not matched:
                raise InputError("no file matches this pattern", path=given)
            found.extend(detect(p, forced) for p in matched)
    for item in found:
        try:
            with item.path.open("rb"):
                pass
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", path=item.path) from exc
    return found


def _known(path: Path) -> bool:
    """Whether a file in a folder is taken: a known format, but not a file with no telling name
    that is TSV only by a tab in its first line (a Makefile); such a file is read when named."""
    try:
        item = detect(path)
    except InputError:
        return False
    return item.format != "tsv"


def read_raw(con: duckdb.DuckDBPyConnection, item: InputFile) -> list[str] | None:
    """Make view ``gm_raw(line, raw, err)`` over one file's records, whatever its format.
    Returns the field names when the records are also in ``gm_src`` as text columns
    (``files.typed_rows`` reads them with no JSON between), else None."""
    if item.format not in _LOG_LAYOUTS + _COLLECTIONS:
        files.read_raw(con, item)
        return None
    try:
        if item.format in _LOG_LAYOUTS:  # an aggregated export's rows are text columns
            return logformats.read(con, item.path, item.format, item.compression)
        keys = corpus_formats.read(con, item.format, item.path, item.compression)
        files.raw_view(con, keys)
        return keys
    except duckdb.Error as exc:
        raise files.unreadable(item, exc) from exc
