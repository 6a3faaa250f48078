"""Corpus chunks into ``chunks``; every import is a snapshot with a content hash.

Labels record which snapshot (which chunking) they were made on, and each chunk's text hash, so
drift can be found later. The content hash is over the sorted (chunk id, text hash) pairs: the
same chunks imported from another file make no new snapshot. The current snapshot is the one
with the highest id.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import duckdb

from goldmine.errors import InputError
from goldmine.ingest.fields import (
    NestedKey,
    column_words,
    field_access,
    nested_key,
    resolve_fields,
    typ,
    val,
)
from goldmine.ingest.files import InputFile
from goldmine.ingest.html_text import HTML_MACROS
from goldmine.ingest.target import Target

# The text in public corpora's words (arXiv's and PubMed's abstract, MS MARCO v2.1's segment, a
# LangChain document's page_content), taken only where no other text field is: beside a text,
# an abstract is the chunk's metadata, not a second spelling of its text.
_FALLBACK_TEXT = ("segment", "page_content", "abstract")

ALIASES: dict[str, tuple[str, ...]] = {
    # docno: TREC's and PyTerrier's; corpus_id: BEIR's qrels name (corpus-id in words);
    # element_id: Unstructured's elements
    "chunk_id": (
        "chunk_id",
        "id",
        "_id",
        "pid",
        "passage_id",
        "docid",
        "docno",
        "corpus_id",
        "uuid",
        "guid",
        "element_id",
    ),  # fmt: skip
    "doc_id": ("doc_id", "document_id", "parent_id", "source_id"),
    "title": ("title", "heading", "name", "wikipedia_title"),
    "url": ("url", "link", "source_url", "href"),
    "text": (
        "text",
        "content",
        "contents",
        "body",
        "chunk",
        "passage",
        "paragraph",
        "sentence",
        "full_text",
        *_FALLBACK_TEXT,
    ),  # fmt: skip
}

COLUMNS = ("chunk_id", "doc_id", "title", "url", "text", "text_hash", "metadata")

# The object a vector store or an index keeps a record's fields in, beside its id: Qdrant's
# payload, Weaviate's properties, an Elasticsearch hit's _source (elasticdump's lines), a
# LangChain Document serialized by ``dumps`` (its kwargs; its own "id" is the class's path).
_WRAPPED = ("payload", "properties", "_source", "kwargs")


# A chunk's title, url and document as RAG frameworks keep them, in its metadata object:
# LangChain's metadata (source, title), Haystack's meta, LlamaIndex's (file_path, ref_doc_id,
# document_title), Unstructured's elements' (filename), BEIR's metadata.url.
_METADATA = ("metadata", "meta")
_IN_METADATA: dict[str, tuple[str, ...]] = {
    "doc_id": ("doc_id", "document_id", "ref_doc_id", "source", "file_path", "filename"),
    "title": ("title", "document_title"),
    "url": ("url", "source_url", "link"),
}


def _metadata_fields(
    keys: list[str], fields: dict[str, list[str]], mapping: dict[str, str]
) -> dict[str, list[str]]:
    """A title, url or doc id the record has not (nor a --map names) read from its metadata
    object, where it has one; the fields read leave that object (``fields.field_access``)."""
    head = next((k for k in keys if k.lower() in _METADATA), None)
    if head is None:
        return fields
    present, by_lower = set(keys), {k.lower(): k for k in keys}
    out = dict(fields)
    for name, names in _IN_METADATA.items():
        if name not in fields and name not in mapping:
            out[name] = [nested_key(f"{head}.{a}", present, by_lower) for a in names]
    return out


def _wrapped_fields(
    keys: list[str], fields: dict[str, list[str]], mapping: dict[str, str]
) -> dict[str, list[str]]:
    """A record with no text field of its own whose text is in a wrapping object: each field
    not mapped read from that object too (after the record's own, save a LangChain kwargs'
    id), so that the object's other fields stay its metadata."""
    wrapper = next((k for k in keys if k.lower() in _WRAPPED), None)
    if wrapper is None or "text" in fields or "text" in mapping:
        return fields
    present, by_lower = set(keys), {k.lower(): k for k in keys}
    out = dict(fields)
    for name, names in ALIASES.items():
        if name in mapping:
            continue
        inner = [nested_key(f"{wrapper}.{a}", present, by_lower) for a in names if a != "abstract"]
        own = fields.get(name, [])
        if name == "chunk_id" and wrapper.lower() == "kwargs" and "lc" in present:
            own = []  # {"lc": 1, "id": ["langchain", "schema", "document", "Document"], …}
        out[name] = list(own) + [k for k in inner if k is not None]
    return out


def collections(items: list[InputFile]) -> list[InputFile]:
    """A ``.tsv`` corpus is a TSV collection (MS MARCO's ``collection.tsv``, DPR's
    ``psgs_w100.tsv``): read by tabs, with or without a header, and not as CSV, whose quoting
    MS MARCO's passages break (a lone ``"`` in a text)."""
    return [
        replace(i, format="tsv")
        if i.format == "csv" and ".tsv" in [s.lower() for s in i.path.suffixes[-2:]]
        else i
        for i in items
    ]


def current_snapshot_id(con: duckdb.DuckDBPyConnection) -> int | None:
    """The snapshot labels and baselines use by default: the newest one."""
    return con.execute("SELECT max(snapshot_id) FROM corpus_snapshots").fetchall()[0][0]


def _whole(value: str, kind: str) -> str:
    """SQL of a chunk id as it is read: trimmed (" d5 ": a log's ids are trimmed, so a click
    matches), and a whole float its integer (7.0, as pandas keeps an integer column that had a
    gap, is 7: qrels, runs and logs name it so)."""
    number = f"try_cast({value} AS DOUBLE)"
    return (
        f"CASE WHEN {kind} = 'DOUBLE' AND {number} = trunc({number}) AND abs({number}) < 1e15 "
        f"THEN {number}::BIGINT::VARCHAR ELSE trim({value}) END"
    )


def stage_sql(keys: list[str], mapping: dict[str, str]) -> tuple[str, dict[str, Any]]:
    fields = _wrapped_fields(keys, resolve_fields(keys, ALIASES, mapping, strict=True), mapping)
    fields = _metadata_fields(keys, fields, mapping)
    # ir_datasets' docs, doc_id and text: a document is one chunk. Not parent_id or source_id,
    # which name the document a file's chunks come from.
    from_doc = [k for k in fields.get("doc_id", []) if column_words(k) == "doc_id"]
    if "chunk_id" not in fields and from_doc:
        fields["chunk_id"] = from_doc
    texts = [k for k in fields.get("text", []) if k.lower() not in _FALLBACK_TEXT]
    if texts and "text" not in mapping:
        fields["text"] = texts
    if keys and not {"chunk_id", "text"} <= set(fields):
        raise InputError(
            f"chunks need an id and a text field (found {', '.join(keys[:12])}); goldmine "
            "reads an id (id, _id, chunk_id, docid, docno, …) and a text (text, content, "
            "body, passage, page_content, …): name them with --map chunk_id=COLUMN --map "
            "text=COLUMN, or a collection's layout with --format smart|trec|tsv"
        )
    known = {k for names in fields.values() for k in names}
    extras = [k for k in keys if k not in known]
    # text and chunk id typed (a text's type is checked, a float id read whole); no embeddings
    access, params = field_access(fields, extras, ("text", "chunk_id"), vectors=True)
    wrapped = [k for k in fields.get("text", []) if isinstance(k, NestedKey)]
    params["gm_no_text"] = (
        f" ({wrapped[0].head} holds no text field goldmine knows, --map "
        f"text={wrapped[0].head}.FIELD names it)"
        if wrapped and "text" not in mapping
        else ""
    )
    # LangChain's Document.id is None unless given: its dumps have a null id on every row
    params["gm_no_id"] = (
        " (a LangChain Document saved without one, --map chunk_id=metadata.FIELD names one)"
        if "page_content" in keys and "chunk_id" not in mapping
        else ""
    )
    params["gm_from_doc"] = (
        " (the ids are the file's doc_id: if its rows are chunks of documents, name their own "
        "id with --map chunk_id=COLUMN)"
        if from_doc and fields["chunk_id"] == from_doc
        else ""
    )
    cid, given, kind = val(fields, "chunk_id"), val(fields, "text"), typ(fields, "text")
    title = val(fields, "title")
    # A text given as a list of paragraphs (KILT's Wikipedia) is one text, a paragraph a line.
    paragraphs = (
        f"array_to_string(list_transform(from_json({given}, '[\"VARCHAR\"]'), "
        "lambda p: rtrim(p, chr(10) || chr(13))), chr(10))"
    )
    all_text = (
        f"list_bool_and(list_transform(json_type({given}, '$[*]')::VARCHAR[], "
        "lambda t: t = 'VARCHAR'))"
    )
    text = "gm_text"
    sql = f"""
        SELECT * REPLACE (coalesce(reason, CASE WHEN row_number() OVER (
            PARTITION BY chunk_id, reason IS NULL ORDER BY line) > 1
            THEN 'duplicate chunk id: ' || chunk_id || $gm_from_doc END) AS reason)
        FROM (
        SELECT line, raw,
            CASE WHEN err IS NOT NULL THEN err
                 WHEN gm_blank({cid}) THEN 'missing chunk id' || $gm_no_id
                 WHEN gm_blank({text}) THEN 'missing text' || $gm_no_text
                 WHEN {kind} <> 'VARCHAR' AND NOT gm_paragraphs AND NOT gm_titled
                     THEN 'wrong type: text is ' || gm_jtype({kind})
            END AS reason,
            {_whole(cid, typ(fields, "chunk_id"))} AS chunk_id,
            {val(fields, "doc_id")} AS doc_id,
            {title} AS title,
            {val(fields, "url")} AS url,
            {text} AS text,
            sha256({text}) AS text_hash,
            x AS metadata
        FROM (SELECT *, CASE WHEN gm_paragraphs THEN {paragraphs}
                             WHEN gm_titled THEN {title}
                             ELSE {given} END AS gm_text
              FROM (SELECT *, coalesce(CASE WHEN {kind} = 'ARRAY' THEN {all_text} END, false)
                              AS gm_paragraphs,
                          -- a paper with a title and no abstract (TREC-COVID's): its title
                          coalesce(gm_blank({given}) AND NOT gm_blank({title})
                              AND coalesce({kind}, 'NULL') IN ('VARCHAR', 'NULL'), false)
                              AS gm_titled
                    FROM ({access}))))
    """
    return sql, params


def store_snapshot(con: duckdb.DuckDBPyConnection, target: Target, batch_id: int) -> int:
    """A new snapshot of the file's chunks unless they equal the current one's; returns chunks
    stored."""
    return _snapshot_of(con, "(SELECT * FROM gm_stage WHERE reason IS NULL)", "line", batch_id,
                        target.options.get("label"))  # fmt: skip


# What tells a snapshot from the last: every stored field of every chunk. Snapshots stored
# before titles, urls and metadata counted were hashed on ids and texts alone (_TEXT_ROW).
_TEXT_ROW = "chunk_id || chr(9) || text_hash"
_WHOLE_ROW = (
    f"{_TEXT_ROW} || chr(9) || coalesce(doc_id, '') || chr(9) || coalesce(title, '') || chr(9) "
    "|| coalesce(url, '') || chr(9) || coalesce(metadata::VARCHAR, '')"
)


def _hash(row: str) -> str:
    return f"sha256(coalesce(string_agg({row}, chr(10) ORDER BY chunk_id), ''))"


def _same_snapshot(
    con: duckdb.DuckDBPyConnection, current: int, content_hash: str, texts_hash: str
) -> bool:
    """Whether the chunks hashed are the current snapshot's, every field. A snapshot hashed on
    ids and texts alone (stored before) whose texts are these is compared field by field once,
    and stored with the whole hash when it holds."""
    stored = con.execute(
        "SELECT content_hash FROM corpus_snapshots WHERE snapshot_id = ?", [current]
    ).fetchall()[0][0]
    if stored == content_hash or stored != texts_hash:
        return stored == content_hash
    whole = con.execute(
        f"SELECT {_hash(_WHOLE_ROW)} FROM chunks WHERE snapshot_id = ?", [current]
    ).fetchall()[0][0]
    if whole != content_hash:
        return False
    con.execute(
        "UPDATE corpus_snapshots SET content_hash = ? WHERE snapshot_id = ?",
        [content_hash, current],
    )
    return True


def _snapshot_of(
    con: duckdb.DuckDBPyConnection, rows: str, order: str, batch_id: int, label: str | None
) -> int:
    """A new snapshot of the chunks ``rows`` (a table or a subquery: this module's own SQL)
    unless they equal the current one's; returns chunks stored."""
    content_hash, texts_hash, n = con.execute(
        f"SELECT {_hash(_WHOLE_ROW)}, {_hash(_TEXT_ROW)}, count(*) FROM {rows}"
    ).fetchall()[0]
    current = current_snapshot_id(con)
    if current is not None:
        same = _same_snapshot(con, current, content_hash, texts_hash)
        if same:
            con.execute(
                "CREATE OR REPLACE TEMP TABLE gm_snapshot AS SELECT ?::BIGINT AS id, false AS new",
                [current],
            )
            return 0
    if n == 0:
        con.execute(
            "CREATE OR REPLACE TEMP TABLE gm_snapshot AS SELECT NULL::BIGINT AS id, false AS new"
        )
        return 0
    snapshot_id = con.execute("SELECT nextval('snapshot_id_seq')").fetchall()[0][0]
    con.execute(
        "INSERT INTO corpus_snapshots (snapshot_id, batch_id, created_at, content_hash, n_chunks, "
        "label) SELECT ?, ?, now()::TIMESTAMP, ?, ?, ?",
        [snapshot_id, batch_id, content_hash, n, label],
    )
    cols = ", ".join(COLUMNS)
    con.execute(
        f"INSERT INTO chunks (snapshot_id, {cols}) SELECT ?, {cols} FROM {rows} ORDER BY {order}",
        [snapshot_id],
    )
    con.execute(
        "CREATE OR REPLACE TEMP TABLE gm_snapshot AS SELECT ?::BIGINT AS id, true AS new",
        [snapshot_id],
    )
    return n


# No chunk at all (every row of every file rejected): no snapshot, as for one file.
_NO_CHUNKS = (
    "(SELECT NULL::BIGINT AS batch_id, NULL::BIGINT AS line, NULL::VARCHAR AS chunk_id, "
    "NULL::VARCHAR AS text_hash WHERE false)"
)


class _Gathered:
    """The chunks of a command's several files, gathered file by file into a temp table and
    made one snapshot when the last is read (``finish``): a corpus in shards is one corpus.
    Each file keeps its own batch, rejects and counts."""

    def __init__(self) -> None:
        # one command's, never reused; not gm_…, the temp tables dropped after each file
        self.table = f"corpus_files_{uuid.uuid4().hex[:12]}"
        self.created = False

    def store(self, con: duckdb.DuckDBPyConnection, target: Target, batch_id: int) -> int:
        cols = ", ".join(COLUMNS)
        self.created = True
        con.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {self.table} AS SELECT NULL::BIGINT AS batch_id, "
            f"line, {cols} FROM gm_stage WHERE false"
        )
        return con.execute(
            f"INSERT INTO {self.table} SELECT ?, line, {cols} FROM gm_stage WHERE reason IS NULL",
            [batch_id],
        ).fetchall()[0][0]

    def finish(
        self, con: duckdb.DuckDBPyConnection, target: Target, files: list, complete: bool
    ) -> None:
        """One snapshot of every file's chunks; a chunk id already in an earlier file (or
        earlier in the same order) is rejected where it repeats; each file's counts follow.
        Not ``complete`` (a file failed): no snapshot, and the batches written are removed."""
        if not complete:
            con.execute(f"DROP TABLE IF EXISTS {self.table}")
            batches = [f.batch_id for f in files]
            con.execute("DELETE FROM rejects WHERE list_contains(?, batch_id)", [batches])
            con.execute("DELETE FROM import_batches WHERE list_contains(?, batch_id)", [batches])
            return
        if not files:
            return
        repeats: dict[int, int] = {}
        kept: dict[int, int] = {}
        try:
            if self.created:
                repeats = self._reject_repeats(con)
                counted = f"SELECT batch_id, count(*) FROM {self.table} GROUP BY ALL"
                kept = dict(con.execute(counted).fetchall())
            first = min(f.batch_id for f in files)
            label = target.options.get("label")
            _snapshot_of(con, self.table if kept else _NO_CHUNKS, "batch_id, line", first, label)
            new = con.execute("SELECT new FROM gm_snapshot").fetchall()[0][0]
            summary = snapshot_summary(con, first)
        finally:
            con.execute(f"DROP TABLE IF EXISTS {self.table}")
        for f in files:
            f.rejected += repeats.get(f.batch_id, 0)
            f.stored = kept.get(f.batch_id, 0) if new else 0
            f.already_present = f.rows_in - f.stored - f.rejected
            f.extra = dict(summary)
            con.execute(
                "UPDATE import_batches SET stored = ?, rejected = ?, already_present = ? "
                "WHERE batch_id = ?",
                [f.stored, f.rejected, f.already_present, f.batch_id],
            )

    def _reject_repeats(self, con: duckdb.DuckDBPyConnection) -> dict[int, int]:
        """Reject each chunk whose id an earlier file gave (a file's own repeats are its
        stage's); returns rejects per batch."""
        con.execute(f"""
            CREATE OR REPLACE TEMP TABLE gm_repeats AS
            SELECT batch_id, line, chunk_id, title, text, first_batch FROM (
                SELECT *, row_number() OVER (PARTITION BY chunk_id ORDER BY batch_id, line) AS k,
                       first_value(batch_id) OVER (PARTITION BY chunk_id ORDER BY batch_id, line)
                           AS first_batch
                FROM {self.table})
            WHERE k > 1""")  # fmt: skip
        con.execute("""
            INSERT INTO rejects (batch_id, path, line, reason, raw)
            SELECT r.batch_id, b.path, r.line,
                   'duplicate chunk id: ' || r.chunk_id || ' (also in ' || f.path || ')',
                   json_object('id', r.chunk_id, 'title', r.title, 'text', r.text)::VARCHAR
            FROM gm_repeats r JOIN import_batches b ON b.batch_id = r.batch_id
                 JOIN import_batches f ON f.batch_id = r.first_batch
            ORDER BY r.batch_id, r.line""")  # fmt: skip
        con.execute(f"DELETE FROM {self.table} t USING gm_repeats r "
                    "WHERE t.batch_id = r.batch_id AND t.line = r.line")  # fmt: skip
        counts = con.execute("SELECT batch_id, count(*) FROM gm_repeats GROUP BY ALL").fetchall()
        con.execute("DROP TABLE gm_repeats")
        return dict(counts)


def snapshot_summary(con: duckdb.DuckDBPyConnection, batch_id: int) -> dict[str, Any]:
    """After a store: the snapshot and how it differs from the one before (a first snapshot
    from none; the same chunks as the current snapshot, which make no new one, from itself),
    so that every entry holds the four counts."""
    snapshot_id, new = con.execute("SELECT id, new FROM gm_snapshot").fetchall()[0]
    con.execute("DROP TABLE gm_snapshot")
    out: dict[str, Any] = {"snapshot_id": snapshot_id, "new_snapshot": new}
    if not new:
        n = con.execute("SELECT count(*) FROM chunks WHERE snapshot_id = ?", [snapshot_id])
        return out | {"unchanged": n.fetchall()[0][0], "changed": 0, "added": 0, "removed": 0}
    previous = con.execute(
        "SELECT max(snapshot_id) FROM corpus_snapshots WHERE snapshot_id < ?", [snapshot_id]
    ).fetchall()[0][0]
    row = con.execute(
        """SELECT count(*) FILTER (WHERE a.text_hash = b.text_hash),
                  count(*) FILTER (WHERE a.text_hash <> b.text_hash),
                  count(*) FILTER (WHERE b.text_hash IS NULL),
                  count(*) FILTER (WHERE a.text_hash IS NULL)
           FROM (SELECT * FROM chunks WHERE snapshot_id = ?) a
           FULL JOIN (SELECT * FROM chunks WHERE snapshot_id = ?) b USING (chunk_id)""",
        [snapshot_id, previous],  # none before the first: every chunk added
    ).fetchall()[0]
    return out | dict(zip(("unchanged", "changed", "added", "removed"), row, strict=True))


def target(
    mapping: dict[str, str] | None = None, label: str | None = None, files: int = 1
) -> Target:
    """The corpus import of ``files`` files: one file makes its snapshot as it is written;
    several are gathered and make one. A file read before is read again, never skipped by its
    hash: its chunks would be missing from a snapshot of several files, and an earlier file's
    chunking read again (A, B, then A) must become the current snapshot, not stay B."""
    base = Target(
        source="corpus",
        table="chunks",
        key=("chunk_id",),
        columns=COLUMNS,
        stage=lambda keys: stage_sql(keys, mapping or {}),
        store=store_snapshot,
        streaming=False,
        summary=snapshot_summary,
        options={"label": label},
        reread=True,
        asks_stored=False,
        macros=HTML_MACROS,  # an HTML page's text (ingest.documents)
    )
    if files < 2:
        return base
    gathered = _Gathered()
    return replace(base, store=gathered.store, summary=None, finish=gathered.finish)
