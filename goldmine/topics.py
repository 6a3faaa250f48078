"""Query texts by id from the topic files IR collections ship, and the queries of any of them.

TREC's ``<top>`` topics, TREC-COVID's XML, JSON lines or Parquet of ``{id, text}`` (MTEB),
``id<TAB>text`` lines and SMART ``.I``/``.W`` records (Cranfield's ``cran.qry``): ``gold import
--topics`` joins them to qrels by id (``read_topics``), and ``add --file`` takes the queries of
the same files (``query_texts``). Apart from both stages so that neither reads a topics file its
own way.
"""

from __future__ import annotations

import csv
import html
import json
import re
from collections.abc import Iterable
from pathlib import Path

from goldmine.errors import InputError
from goldmine.files import json_objects, lines_of, open_unpacked, unpacked
from goldmine.gold_records import first_of, is_llamaindex
from goldmine.readers import decode_text


def one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def read_lines(path: Path) -> list[str]:
    """The file's lines, decompressed first if it is gzip, bz2 or xz (ir_datasets serves qrels
    gzipped); CRLF files (Cranfield) read like any other."""
    return lines_of(read_text(path))


def read_text(path: Path) -> str:
    try:
        data = unpacked(path.read_bytes(), path)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=path) from exc
    return decode_text(data, path)


def json_lines(path: Path) -> list[tuple[int, dict]]:
    return json_objects(read_lines(path), path)


def is_parquet(path: Path) -> bool:
    return file_head(path, 4) == b"PAR1"


def file_head(path: Path, size: int = 1 << 16) -> bytes:
    """The file's first ``size`` bytes, decompressed; a file that cannot be read gives none
    (the reader that reads it whole says what is wrong)."""
    try:
        with open_unpacked(path) as handle:
            return handle.read(size)
    except Exception:  # OSError, EOFError, zlib's and lzma's errors for a damaged stream
        return b""


_TOP = re.compile(r"<top>(.*?)</top>", re.S | re.I)
# One field of a TREC <top>: its text runs to the next tag (the files close none; TREC-1 to 3
# topics have <dom>, <con>, <fac>, <def> and <nat> too, which are no part of the field before).
_TOP_FIELD = re.compile(r"<(num|title|desc|narr)>\s*(.*?)\s*(?=</?[a-z]+>|\Z)", re.S | re.I)
# The label a field's text starts with in the TREC files ("Number: 301", "Description:").
_TOP_LABEL = re.compile(r"^(?:Number|Topic|Description|Narrative)\s*:\s*", re.I)
# TREC-COVID's <topic number="1">, and the Session Track log's <topic num="1"> (its topics sit in
# the log itself, repeated in every session of the topic).
_TOPIC_XML = re.compile(
    r"<topic\s[^>]*?\bnum(?:ber)?=[\"']?([^\"'\s>]+)[\"']?[^>]*>(.*?)</topic>", re.S | re.I
)
_CDATA = re.compile(r"<!\[CDATA\[(.*?)\]\]>", re.S)
_SMART_ID = re.compile(r"^\.I(?:\s+(\S+))?\s*$")
_SMART_FIELD = re.compile(r"^\.([A-Z])\s*(.*)$")
TOPIC_LAYOUTS = (
    "TREC <top> topics, TREC-COVID <topic number> XML (or a Session Track log's topics), "
    "JSONL ({id|_id|query_id|qid, title|text|query}) or Parquet with those columns (MTEB's "
    "queries), id<TAB>text lines (a header row naming the columns is read), "
    "or SMART .I/.W records (Cranfield's cran.qry)"
)
TOPIC_FIELDS = ("title", "desc", "narr")
# What each --topic-field is called in each layout: TREC-COVID's XML tags, JSONL keys and TSV
# header names (the newer TREC JSONL topics say title/description/narrative).
_XML_TAGS = {  # Web track: description; Session Track: desc, narr
    "title": "query|title",
    "desc": "question|description|desc",
    "narr": "narrative|narr",
}
_TEXT_KEYS = {
    "title": ("text", "query", "title", "query_text"),
    "desc": ("description", "desc", "question"),
    "narr": ("narrative", "narr"),
}
_ID_KEYS = ("_id", "id", "query_id", "qid", "query-id", "topic_id", "topic", "number", "num")


def read_topics(path: Path, notes: list[str] | None = None, field: str = "title") -> dict[str, str]:
    """Query texts by id, from any of the common layouts (:data:`TOPIC_LAYOUTS`).

    ``field`` picks which text a topic with several gives: ``title`` (the short query, the
    default, as trec_eval runs and Anserini's ``title`` topics use), ``desc`` or ``narr``.

    SMART records (``.I`` then ``.W``) are numbered by their position in the file, 1..N, because
    that is how Cranfield's ``cranqrel`` numbers them: ``cran.qry`` prints ``.I 001, 002, 004 …
    365``, with gaps. When the printed numbers differ from the positions, ``notes`` says so.
    """
    if field not in TOPIC_FIELDS:
        raise InputError(f"--topic-field must be one of {', '.join(TOPIC_FIELDS)}, not {field!r}")
    if is_parquet(path):
        return _parquet_topics(path, field)
    lines = read_lines(path)
    text = "\n".join(lines)
    first = next((line.strip() for line in lines if line.strip()), "")
    if "<top>" in text.lower():
        topics = _trec_top_topics(text, field, path)
    elif _TOPIC_XML.search(text):
        topics = _xml_topics(text, field, path)
    elif _SMART_ID.match(first):
        _only_one_text(field, "SMART .I/.W records", path)
        topics = _smart_topics(lines, path, notes)
    elif path.suffix.lower() in (".jsonl", ".json", ".ndjson") or first.startswith("{"):
        topics = _jsonl_topics(path, field)
    else:
        topics = _tsv_topics(lines, path, field)
    if not topics:
        raise InputError(
            f"no topics with a {field} found; --topics reads {TOPIC_LAYOUTS}", path=path
        )
    return topics


def _only_one_text(field: str, layout: str, path: Path) -> None:
    if field != "title":
        raise InputError(f"{layout} hold one text per query: --topic-field {field} needs "
                         "topics with several (TREC <top>, TREC-COVID XML, JSONL, a TSV header)",
                         path=path)  # fmt: skip


class _Topics(dict):
    """Query texts by id as a topics file gives them. The same text again is one topic; an id
    given another text is refused: which is the query is the file's to say."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def __setitem__(self, qid: str, text: str) -> None:
        held = self.get(qid)
        if held is not None and held != text:
            raise InputError(f"topic {qid} is given twice with different texts ({held!r}, then "
                             f"{text!r}): keep one", path=self.path)  # fmt: skip
        super().__setitem__(qid, text)


def _trec_top_topics(text: str, field: str, path: Path) -> dict[str, str]:
    topics = _Topics(path)
    held: set[str] = set()
    for block in _TOP.findall(text):
        fields = {
            name.lower(): _TOP_LABEL.sub("", one_line(value))
            for name, value in _TOP_FIELD.findall(block)
        }
        num, value = fields.get("num", "").split(), fields.get(field)
        held |= {f for f in TOPIC_FIELDS if fields.get(f)}
        if num and value:
            topics[num[0]] = value
    if not topics and held:  # TREC-4's topics have no <title>, only <desc>
        raise InputError(f"its topics have no {field} text; --topic-field "
                         f"{' or '.join(f for f in TOPIC_FIELDS if f in held)} takes theirs",
                         path=path)  # fmt: skip
    return topics


def _xml_topics(text: str, field: str, path: Path) -> dict[str, str]:
    topics = _Topics(path)
    blocks = _TOPIC_XML.findall(text)
    for number, block in blocks:
        found = _xml_field(field).search(block)
        if found:
            topics[number] = one_line(_xml_text(found.group(2)))
    if blocks and not topics:
        held = [f for f in TOPIC_FIELDS if any(_xml_field(f).search(b) for _, b in blocks)]
        raise InputError(f"its topics have no {field} text; "
                         + (f"--topic-field {' or '.join(held)} takes theirs" if held
                            else "none has a query, question or narrative"),
                         path=path)  # fmt: skip
    return topics


def _xml_field(field: str) -> re.Pattern[str]:
    """An XML topic's element for ``field``, an attribute list allowed (the Session Track's
    ``<subject num="1">`` beside its ``<desc>``)."""
    return re.compile(rf"<({_XML_TAGS[field]})(?:\s[^>]*)?>\s*(.*?)\s*</\1>", re.S | re.I)


def _xml_text(inner: str) -> str:
    """An element's text as an XML parser gives it: entities (``&amp;``, ``&#233;``) read,
    CDATA sections taken as they are."""
    parts = _CDATA.split(inner)  # text, CDATA, text, ...: the odd ones are CDATA
    return "".join(part if i % 2 else html.unescape(part) for i, part in enumerate(parts))


def _jsonl_topics(path: Path, field: str) -> dict[str, str]:
    return _object_topics(json_lines(path), path, field)


def _parquet_topics(path: Path, field: str) -> dict[str, str]:
    """MTEB's queries as Parquet (``queries/test-00000-of-00001.parquet``: ``_id``, ``text``),
    read as the JSONL topics are, a row's place standing for its line."""
    import pyarrow.parquet as pq

    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError(f"cannot read Parquet: {exc}", path=path) from None
    topics = _object_topics(enumerate(rows, 1), path, field)
    if not topics:
        raise InputError(f"no topics with a {field} found; --topics reads {TOPIC_LAYOUTS}",
                         path=path)  # fmt: skip
    return topics


def _object_topics(rows: Iterable[tuple[int, dict]], path: Path, field: str) -> dict[str, str]:
    """Topics from objects (JSON lines, Parquet rows): an id key and the field's text key."""
    topics = _Topics(path)
    for n, obj in rows:
        qid, query = first_of(obj, _ID_KEYS), first_of(obj, _TEXT_KEYS[field])
        if qid is None:
            raise InputError("a topic needs an id (id, _id, query_id or qid)", path=path, line=n)
        # A topic without this field is left out, as in the other layouts; a judged query
        # left without text is named when the qrels are joined.
        if query is not None:
            topics[str(qid)] = one_line(str(query))
    return topics


def _tsv_header(line: str, field: str) -> tuple[int, int] | None:
    """The id and text columns a header row names, or None when the line is no header."""
    names = [c.strip().lower() for c in line.split("\t")]
    ids = [i for i, c in enumerate(names) if c in _ID_KEYS]
    texts = [i for key in _TEXT_KEYS[field] for i, c in enumerate(names) if c == key]
    return (ids[0], texts[0]) if ids and texts else None


def _wrapped(cell: str) -> bool:
    return len(cell) >= 2 and cell[0] == cell[-1] == '"'


def _unquoted(lines: list[str]) -> list[str]:
    """The lines with their CSV quoting read, when the writer quoted the fields (R's
    write.table, ``csv.QUOTE_ALL``, pandas' ``QUOTE_NONNUMERIC``): every line holds a field in
    quotes and no field holds a quote it does not begin and end with. Otherwise the lines as they
    are, so one query written in quotes among plain ones keeps them."""
    body = [line for line in lines if line.strip()]
    cells = [line.split("\t") for line in body]
    quoted = bool(body) and all(
        any(_wrapped(c.strip()) for c in row)
        and all(_wrapped(c.strip()) or '"' not in c for c in row)
        for row in cells
    )
    if not quoted:
        return lines
    rows = csv.reader((line if line.strip() else "" for line in lines), delimiter="\t")
    return ["\t".join(cell.replace("\t", " ").strip() for cell in row) for row in rows]


def _refuse_commas(lines: list[str], path: Path) -> None:
    """A CSV of topics has no tab, and its first field ends at a comma: refused, not read as ids
    like '1,reset' (which then matched no judged query)."""
    first = next((line.split()[0] for line in lines if line.strip()), "")
    if "," in first and not any("\t" in line for line in lines):
        raise InputError(
            "looks comma-separated: --topics reads tab-separated id<TAB>text lines (or TREC, "
            "XML, JSONL, SMART); save the file with tabs",
            path=path,
        )


def _tsv_topics(lines: list[str], path: Path, field: str) -> dict[str, str]:
    _refuse_commas(lines, path)
    lines = _unquoted(lines)
    start = next((n for n, line in enumerate(lines) if line.strip()), 0)
    header = _tsv_header(lines[start], field) if lines else None
    if header is None:
        _only_one_text(field, "id<TAB>text lines without a header", path)
    topics = _Topics(path)
    for n, line in enumerate(lines, 1):
        if not line.strip() or (header and n == start + 1):
            continue
        if header:
            parts = line.split("\t")
            if len(parts) <= max(header):
                raise InputError(f"expected {max(header) + 1} tab-separated columns",
                                 path=path, line=n)  # fmt: skip
            parts = [parts[header[0]], parts[header[1]]]
        else:
            parts = line.rstrip().split("\t") if "\t" in line else line.strip().split(None, 1)
            if len(parts) > 2:
                raise InputError(
                    f"{len(parts)} tab-separated columns where id<TAB>text has 2: name the "
                    "columns in a header row (id<TAB>title<TAB>description) to say which is the "
                    "query",
                    path=path,
                    line=n,
                )
        if len(parts) != 2:
            raise InputError("expected: query id, a tab, the query text", path=path, line=n)
        topics[parts[0].strip()] = parts[1].strip()
    return topics


def _smart_topics(lines: list[str], path: Path, notes: list[str] | None) -> dict[str, str]:
    """SMART ``.I``/``.W`` records, keyed by position ("1".."N"); the ``.W`` field is the text."""
    printed: list[str | None] = []
    texts: list[list[str]] = []
    field: str | None = None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        record = _SMART_ID.match(line.strip())
        if record:
            printed.append(record.group(1))
            texts.append([])
            field = None
            continue
        marker = _SMART_FIELD.match(line.strip())
        if marker:
            field = marker.group(1)
            line = marker.group(2)
        if not texts:
            raise InputError("a SMART record starts with .I", path=path, line=n)
        if field == "W" and line.strip():
            texts[-1].append(line)
    topics = {str(pos): one_line(" ".join(t)) for pos, t in enumerate(texts, 1)}
    empty = [pos for pos, t in topics.items() if not t]
    if empty:
        raise InputError(
            f"{len(empty)} records have no .W text (e.g. record {empty[0]})", path=path
        )
    renumbered = [p for p, number in enumerate(printed, 1) if _as_int(number) != p]
    if renumbered and notes is not None:
        notes.append(
            f"{path.name}: queries are numbered by position, 1..{len(texts)}, as Cranfield's "
            f"qrels number them, not by their .I numbers ({printed[renumbered[0] - 1]} is "
            f"query {renumbered[0]})"
        )
    return topics


def _as_int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


_TOP_LINE = re.compile(r"^\s*<top>", re.I | re.M)
_TOPIC_XML_LINE = re.compile(r"^\s*<topic\s[^>]*\bnum(?:ber)?=", re.I | re.M)

# Where a query file's object keeps its text (``add --file``): a search log's words first, then
# a topics file's and a QA set's (BEIR's queries.jsonl says text; DPR, question).
QUERY_KEYS = ("query", "user_query", "search_term", "search_query", "query_text", "q",
              "question", "text", "title")  # fmt: skip


def query_texts(text: str, path: Path) -> list[str] | None:
    """The queries of a file in one of the topics layouts (TREC ``<top>``, TREC-COVID's XML,
    SMART ``.I``/``.W``) or of JSON (lines of objects, an array of them, a LlamaIndex dataset),
    each query once per record, in the file's order; None for any other text (a plain list of
    lines, a sheet's CSV), which the caller reads its own way."""
    lines = lines_of(text)
    first = next((line.strip() for line in lines if line.strip()), "")
    # a layout's queries, where it opens a line and gives any; a query mentioning "<top>" is
    # a list's line
    if _TOP_LINE.search(text) and (topics := _trec_top_topics(text, "title", path)):
        return list(topics.values())
    if _TOPIC_XML_LINE.search(text) and (topics := _xml_topics(text, "title", path)):
        return list(topics.values())
    if _SMART_ID.match(first):
        return list(_smart_topics(lines, path, None).values())
    if first.startswith(("{", "[")):
        return _json_queries(text, first, path)
    return None


def _json_queries(text: str, first: str, path: Path) -> list[str] | None:
    """The queries of JSON: an array of objects, one object a line, a LlamaIndex dataset; None
    where the text is no JSON (a list of queries whose first starts with a bracket)."""
    try:
        document = json.loads(text)
    except ValueError:
        document = None
    if is_llamaindex(document):
        return [str(q) for q in document["queries"].values()]
    if isinstance(document, list) and all(isinstance(obj, dict) for obj in document):
        return [_object_query(obj, path, n) for n, obj in enumerate(document, 1)]
    if isinstance(document, dict):
        return [_object_query(document, path, 1)]
    try:
        if not isinstance(json.loads(first), dict):
            return None
    except ValueError:
        return None
    return [_object_query(obj, path, n) for n, obj in json_objects(lines_of(text), path)]


def _object_query(obj: dict, path: Path, n: int) -> str:
    found = next((obj[k] for k in QUERY_KEYS if isinstance(obj.get(k), str | int | float)), None)
    if found is None:
        raise InputError(
            f"no query text (looked for {', '.join(QUERY_KEYS)}; found {', '.join(obj) or 'none'})",
            path=path,
            line=n,
        )
    return str(found)
