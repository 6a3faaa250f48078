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
from dataclasses import replace
from pathlib import Path

import duckdb

from goldmine.errors import InputError
from goldmine.files import require_file
from goldmine.ingest import corpus_formats, documents, files, logformats
from goldmine.ingest.documents import DOCUMENTS
from goldmine.ingest.files import InputFile
from goldmine.ingest.scan import UTF16_BOMS, not_in, read_head, zip_member

_COLLECTIONS = ("smart", "trec", "tsv")  # IR collections' layouts (ingest.corpus_formats)
# search logs' own (ingest.logformats)
_LOG_LAYOUTS = ("session_xml", "clicklog", "analytics", "accesslog", "solrlog")
FORMATS = ("jsonl", "json", "csv", "parquet", *_COLLECTIONS, *_LOG_LAYOUTS, *DOCUMENTS)
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
    "accesslog": "web server access logs (nginx or Apache combined, CloudFront or IIS W3C: "
    "GET /search?q=…)",
    "solrlog": "Solr's request log (solr.log: path=/select params={q=…} hits=N)",
    "markdown": "Markdown documents (.md, .mdx: a corpus, a chunk per file)",
    "html": "HTML pages (.html: a corpus, a chunk per file)",
}
_SUFFIXES = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".tsv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".html": "html",
    ".htm": "html",
}
_COMPRESSION = {
    ".gz": "gzip",
    ".gzip": "gzip",
    ".zst": "zstd",
    ".zstd": "zstd",
    ".zip": "zip",
    ".bz2": "bzip2",
    ".xz": "xz",
}
_MAGIC = {
    b"\x1f\x8b": "gzip",
    b"\x28\xb5\x2f\xfd": "zstd",
    b"PK\x03\x04": "zip",
    b"BZh": "bzip2",
    b"\xfd7zX": "xz",
    b"\x1f\x9d": "compress",  # compress(1)'s .Z, as the TREC disks ship many: refused (detect)
}
# Formats whose text is UTF-8 by definition (JSON's RFC 8259): a UTF-16 one is refused (scan).
_UTF8_ONLY = ("jsonl", "json", "parquet")


def detect(
    path: Path, forced: str | None = None, encoding: str | None = None, told_only: bool = False
) -> InputFile:
    """The file's format: ``forced``, else told by its first bytes (SMART and TREC SGML, which
    ship with no telling suffix: ``cran.all.1400``, ``ap880212``), else by its suffix, else a
    tab in its first line (a TSV collection). A zip archive is read as the one file it holds
    (told by that file's name). Its text's encoding: ``encoding``, else UTF-16 where a
    byte-order mark says so (Excel's "Unicode Text"), else UTF-8. ``told_only``: the format
    alone, text in another encoding not refused (a folder's files are chosen by format)."""
    _refuse_unix_compress(path)
    suffixes = [s.lower() for s in path.suffixes]
    compression = "none"
    if suffixes and suffixes[-1] in _COMPRESSION:
        compression = _COMPRESSION[suffixes.pop()]
    if compression == "none":
        compression = _compression_by_magic(path)
    if compression == "zip":
        suffixes = [s.lower() for s in Path(_zip_member(path)).suffixes]
    raw = _first_bytes(path, compression)
    codec = _codec(encoding) if encoding else "utf-8"
    if encoding is None and raw[:2] in UTF16_BOMS:
        codec = "utf-16"
    head = _as_utf8(raw, codec, path)
    by_suffix = _SUFFIXES.get(suffixes[-1]) if suffixes else None
    fmt = forced or _log_layout(head, suffixes)
    if fmt is None:
        told = corpus_formats.sniff(head)
        fmt = told if told in ("smart", "trec") or by_suffix is None else by_suffix
        if fmt is None and not told_only:  # named, with no suffix that says (an S3 part)
            fmt = _by_content(head)
    if fmt == "json" and not forced and _json_lines(head):
        fmt = "jsonl"  # JSON lines named .json (Elasticsearch's slow log, BigQuery's exports)
    elif fmt == "jsonl" and not forced and _json_document(head):
        fmt = "json"  # a document named .jsonl (json.dump(records, f, indent=2))
    if fmt not in FORMATS:
        raise InputError(
            "unknown file format: goldmine reads "
            + ", ".join(FORMAT_NAMES.values())
            + ", each optionally .gz, .zst, .zip, .bz2 or .xz; name one with --format "
            + "|".join(FORMATS),
            path=path,
        )
    if fmt == "parquet" or (encoding is None and fmt in _UTF8_ONLY):
        codec = "utf-8"  # Parquet holds no text to decode; JSON's is UTF-8 or refused
    elif encoding is None and not told_only:  # JSON's lines not in UTF-8: each a reject
        _refuse_legacy_text(head, path)
    return InputFile(path, fmt, compression, codec)


def _by_content(head: bytes) -> str | None:
    """The format a file's first bytes show where no suffix says: Parquet by its magic, JSON
    lines or a JSON document by their first character, CSV by a first line cut by commas or
    semicolons into two or more names."""
    if head[:4] == b"PAR1":
        return "parquet"
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
    if text[:1] == b"[":
        return "json"
    if text[:1] == b"{":
        return "jsonl" if _json_lines(text) or _one_record(text) else "json"
    first = text.split(b"\n", 1)[0].rstrip(b"\r")
    if b"\0" not in head and (first.count(b",") or first.count(b";")):
        return "csv"
    return None


def _one_record(text: bytes) -> bool:
    """Whether a one-line JSON object is a record, not a document wrapping a list of them
    (a minified {"searches": [...]} saved with no suffix)."""
    import json

    if text.rstrip().count(b"\n"):
        return False
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and not any(
        isinstance(v, list) and v and isinstance(v[0], dict) for v in value.values()
    )


def _json_document(head: bytes) -> bool:
    """Whether a .jsonl file's first line opens a JSON document, not a record: it starts an
    array, or is a brace alone (a pretty-printed object). A record's line that is cut or
    malformed stays that line's reject."""
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
    return text[:1] == b"[" or text.split(b"\n", 1)[0].strip() == b"{"


def _json_lines(head: bytes) -> bool:
    """Whether a .json file's first bytes are JSON lines: a first line that is a whole object,
    and another line after it that opens one (a document, pretty-printed or one line, is not)."""
    import json

    lines = [line for line in head.removeprefix(b"\xef\xbb\xbf").split(b"\n") if line.strip()]
    if len(lines) < 2 or not lines[1].lstrip().startswith(b"{"):
        return False
    try:
        return isinstance(json.loads(lines[0]), dict)
    except ValueError:
        return False


def _zip_member(path: Path) -> str:
    """The name of the one file a zip archive holds (``scan.zip_member``)."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            return zip_member(archive, path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(f"not a readable zip archive ({exc})", path=path) from exc


def _codec(encoding: str) -> str:
    """Python's name of an encoding (``windows-1252`` is ``cp1252``), or an InputError."""
    import codecs

    try:
        return codecs.lookup(encoding).name
    except LookupError as exc:
        raise InputError(f"--encoding {encoding!r} is no encoding Python knows") from exc


def _as_utf8(head: bytes, encoding: str, path: Path) -> bytes:
    """A file's first bytes in ``encoding`` as UTF-8 (a character cut at the end dropped)."""
    if encoding == "utf-8":
        return head
    import codecs

    try:
        return codecs.getincrementaldecoder(encoding)().decode(head).encode("utf-8")
    except UnicodeDecodeError as exc:
        raise not_in(encoding, exc.start, head[exc.start], path) from exc


# A file whose first lines are not UTF-8 is read with no guess at its encoding. Measured on
# exports of CLDR text (babel's locale data: place, language, month and day names as queries)
# saved in 29 locales' Windows or legacy code pages, 87 files of 200 rows: "UTF-8, else
# Windows-1252" decoded 36 right and 47 as mojibake (every Central European, Cyrillic, Greek,
# Turkish, Hebrew, Arabic and East Asian one); charset-normalizer 50 right and 37 as mojibake
# (most Western European ones among them). One damaged line is that line's reject; a file whose
# text is all in another encoding is refused, naming --encoding.
_LEGACY_HINT = (
    "Excel and other Windows programs save Windows-1252 (Western Europe; cp1250 Central "
    "Europe, cp1251 Cyrillic)"
)


def _refuse_legacy_text(head: bytes, path: Path) -> None:
    """Refuse a file whose first lines are text in another encoding than UTF-8: two or more
    lines are not UTF-8 and none holds a UTF-8 character past ASCII."""
    whole = head[: head.rfind(b"\n") + 1] or head  # the last line may be cut mid-character
    if b"\0" in whole or _is_utf8(whole):  # binary data: the scan says what it is
        return
    lines = files.head_lines(whole, 1 << 16)
    bad = [n for n, line in enumerate(lines, start=1) if not _is_utf8(line)]
    if len(bad) < 2 or any(not line.isascii() and _is_utf8(line) for line in lines):
        return
    line = lines[bad[0] - 1]
    # The byte and the letter it is in Windows-1252, never the line's text: this is said
    # before anything is redacted, and the line may be a customer's message.
    column, byte = next((i, b) for i, b in enumerate(line, start=1) if b >= 0x80)
    letter = bytes([byte]).decode("cp1252", "replace")
    raise InputError(
        f"not UTF-8: line {bad[0]}, column {column} holds byte 0x{byte:02X} ({letter!r} in "
        f"Windows-1252); {_LEGACY_HINT}: read it with --encoding cp1252, or the encoding it "
        "was saved in",
        path=path,
    )


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _log_layout(head: bytes, suffixes: list[str]) -> str | None:
    """A search log's own layout (ingest.logformats), told by the file's first bytes."""
    return logformats.sniff(head, suffixes[-1] if suffixes else "")


def _first_bytes(path: Path, compression: str, size: int = 65536) -> bytes:
    """The start of the file's content, decompressed; empty if it cannot be read (discover or
    the scan says what is wrong with the file)."""
    return read_head(path, compression, size)


def _compression_by_magic(path: Path) -> str:
    """The compression told by the file's magic number, for a compressed file not named so."""
    try:
        with path.open("rb") as f:
            magic = f.read(4)
    except OSError:
        return "none"
    return next((c for m, c in _MAGIC.items() if magic.startswith(m)), "none")


def _unix_compressed(path: Path) -> bool:
    return _compression_by_magic(path) == "compress"


def _refuse_unix_compress(path: Path, among: int = 1) -> None:
    """A file compressed by Unix compress (``.Z``) is an error naming it and what to do: no
    library at hand reads it, and a folder's such files must not be left out without a word."""
    if _unix_compressed(path):
        many = f" (and {among - 1} more in the folder)" if among > 1 else ""
        raise InputError(
            f"is compressed by Unix compress (.Z){many}, which goldmine does not read: "
            "uncompress it first (uncompress FILE, or gzip -d FILE; a folder: find FOLDER "
            "-name '*.Z' -exec uncompress {} +)",
            path=path,
        )


def discover(
    paths: list[str | Path],
    forced: str | None = None,
    encoding: str | None = None,
    documents: bool = False,
) -> list[InputFile]:
    """Files named, matched by a glob, or found in a folder (recursively, known formats only);
    ``encoding``: their text's (--encoding), else told per file (``detect``). ``documents``
    (``ingest corpus``): Markdown and HTML documents are read, each named by its path as given
    or found (the same on every route); elsewhere a document is no record (a README beside a
    log) and is left out of a folder, or refused when named."""
    found: list[InputFile] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file())
            # by name and bytes both: another file that starts with those two bytes is none
            packed = [p for p in files if p.suffix in (".Z", ".z") and _unix_compressed(p)]
            if packed:
                _refuse_unix_compress(packed[0], len(packed))
            _refuse_saved_dataset(files)
            inside = [
                p for p in files if _known(p) and not _slack_meta(p) and not _llamaindex_meta(p)
            ]
            items = [
                _named(detect(p, forced, encoding), documents)
                for p in _of_folder(inside, documents)
            ]
            if not items:
                raise InputError(
                    "folder holds no file in a format goldmine reads (--format to name one)",
                    path=path,
                )
            found.extend(items)
        elif path.is_file():
            found.append(_named(detect(path, forced, encoding), documents))
        elif os.path.lexists(path) or not glob.has_magic(str(given)):
            require_file(path)
            raise InputError("cannot be read", path=given)  # not reached: it says what is wrong
        else:
            matched = sorted(Path(p) for p in glob.glob(str(given), recursive=True))
            matched = [p for p in matched if p.is_file()]
            if not matched:
                raise InputError("no file matches this pattern", path=given)
            found.extend(_named(detect(p, forced, encoding), documents) for p in matched)
    for item in found:
        try:
            with item.path.open("rb"):
                pass
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", path=item.path) from exc
    return found


def _refuse_saved_dataset(files: list[Path]) -> None:
    """A Hugging Face ``datasets`` folder written by ``save_to_disk``: its records are in Arrow
    files (its dataset_info.json and state.json are no records), refused saying how to have
    them as Parquet."""
    for state in (f for f in files if f.name == "state.json"):
        folder = state.parent
        if (folder / "dataset_info.json").is_file() and any(folder.glob("*.arrow")):
            raise InputError(
                "is a Hugging Face datasets folder (save_to_disk): its records are in Arrow "
                "files, which goldmine does not read; write them as Parquet with "
                "datasets.load_from_disk(FOLDER).to_parquet('corpus.parquet') and import that",
                path=folder,
            )


# A Slack export's workspace files, beside its folder per channel of messages per day.
_SLACK_META = frozenset((
    "users.json", "channels.json", "groups.json", "dms.json", "mpims.json", "org_users.json",
    "integration_logs.json", "canvases.json", "huddles.json", "file_conversations.json",
))  # fmt: skip


def _slack_meta(path: Path) -> bool:
    """Whether a file found in a folder is a Slack export's workspace metadata (users,
    channels, integrations), not messages: it is then left out, as it holds no chat."""
    folder = path.parent
    return (
        path.name in _SLACK_META
        and (folder / "users.json").is_file()
        and any((folder / n).is_file() for n in ("channels.json", "groups.json", "dms.json"))
    )


# A LlamaIndex persist folder's stores beside its docstore.json (which holds the nodes): the
# index's structure, the embeddings, the graph. Vector stores are named NAMESPACE__vector_store.
_LLAMAINDEX_META = ("index_store.json", "graph_store.json", "property_graph_store.json")


def _llamaindex_meta(path: Path) -> bool:
    """Whether a file found in a folder is a LlamaIndex persist folder's store other than its
    docstore (``storage_context.persist()``): left out, as it holds no text of a chunk."""
    name = path.name
    return (name in _LLAMAINDEX_META or name.endswith("vector_store.json")) and (
        path.parent / "docstore.json"
    ).is_file()


def _of_folder(paths: list[Path], documents: bool) -> list[Path]:
    """A folder's files to read: its documents only where documents are read (``ingest
    corpus``) and they outnumber the folder's files of records, else those. A data set's card
    (README.md) beside its shards is no chunk, nor a README beside a week's logs; a docs site's
    few config records (Docusaurus's ``_category_.json``, a built MkDocs site's search index)
    are no chunks either."""
    docs, records = [], []
    for p in paths:
        (docs if _SUFFIXES.get(p.suffix.lower()) in DOCUMENTS else records).append(p)
    return docs if documents and len(docs) > len(records) else records


def _named(item: InputFile, documents: bool) -> InputFile:
    """A file to read: a document is refused where documents are not read, else named by its
    path as named or found, the same on every route (a copy read for another encoding keeps
    it)."""
    if item.format not in DOCUMENTS:
        return item
    if not documents:
        raise InputError(
            f"{FORMAT_NAMES[item.format].split(' (')[0]} are read only as a corpus "
            "(goldmine ingest corpus), a chunk per file",
            path=item.path,
        )
    return replace(item, name=item.path.as_posix())


def _known(path: Path) -> bool:
    """Whether a file in a folder is taken: a known format, but not a file with no telling name
    that is TSV only by a tab in its first line (a Makefile); such a file is read when named."""
    try:  # a file of a known format in another encoding is kept: detect then names it
        item = detect(path, told_only=True)
    except InputError:
        return False
    return item.format != "tsv"


def read_raw(con: duckdb.DuckDBPyConnection, item: InputFile) -> list[str] | None:
    """Make view ``gm_raw(line, raw, err)`` over one file's records, whatever its format.
    Returns the field names when the records are also in ``gm_src`` as text columns
    (``files.typed_rows`` reads them with no JSON between), else None."""
    if item.format not in _LOG_LAYOUTS + _COLLECTIONS + DOCUMENTS:
        files.read_raw(con, item)
        return None
    try:
        if item.format in DOCUMENTS:
            keys = documents.read(con, item)
            files.raw_view(con, keys)
            return keys
        if item.format in _LOG_LAYOUTS:  # an aggregated export's rows are text columns
            return logformats.read(con, item.path, item.format, item.compression)
        keys = corpus_formats.read(con, item.format, item.path, item.compression)
        files.raw_view(con, keys)
        return keys
    except duckdb.Error as exc:
        raise files.unreadable(item, exc) from exc
