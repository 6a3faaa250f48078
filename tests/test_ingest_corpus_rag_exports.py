"""A corpus as RAG stacks and search engines export it: an Elasticsearch/OpenSearch ``_search``
response saved whole (each hit's ``_id`` beside its ``_source``), LlamaIndex's persisted
``docstore.json``, Unstructured's element JSON, a Chroma ``collection.get()`` and a field read
from inside an object with ``--map`` (the object's other fields kept as metadata)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from goldmine.store import open_store


def stored(db: Path) -> list[tuple]:
    with open_store(db) as con:
        return con.execute(
            "SELECT chunk_id, doc_id, title, url, text, metadata::VARCHAR FROM chunks "
            "ORDER BY chunk_id"
        ).fetchall()


def ingest(cli, db: Path, *args: str) -> dict:
    result = cli("--db", str(db), "ingest", "corpus", *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_an_elasticsearch_search_response_keeps_each_hits_id(cli, tmp_path) -> None:
    """The hits' ``_source`` alone was read: the documents' ids (``_id``, beside it) were lost
    and the file refused as having no id."""
    hits = [
        {"_index": "docs", "_id": "kb-1", "_score": 1.0,
         "_source": {"title": "Passwords", "body": "Reset it from the account page.",
                     "url": "https://kb/1", "tags": ["account"]}},
        {"_index": "docs", "_id": "kb-2", "_score": 0.5,
         "_source": {"title": "Invoices", "body": "Sent on the first of the month."}},
    ]  # fmt: skip
    response = {
        "took": 3,
        "timed_out": False,
        "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
        "hits": {"total": {"value": 2, "relation": "eq"}, "max_score": 1.0, "hits": hits},
    }
    path = tmp_path / "search.json"
    path.write_text(json.dumps(response, indent=2))
    db = tmp_path / "s.duckdb"
    out = ingest(cli, db, str(path))
    assert out["total"] == {"rows_in": 2, "stored": 2, "rejected": 0, "already_present": 0}
    assert stored(db) == [
        ("kb-1", None, "Passwords", "https://kb/1", "Reset it from the account page.",
         '{"tags":["account"]}'),
        ("kb-2", None, "Invoices", None, "Sent on the first of the month.", None),
    ]  # fmt: skip


def _text_node(node_id: str, text: str, source: str, doc: str) -> dict:
    """A TextNode as SimpleDocumentStore.persist writes it (llama-index-core 0.10-0.12)."""
    data = {
        "id_": node_id, "embedding": None,
        "metadata": {"file_path": source, "file_name": source.rsplit("/", 1)[-1],
                     "file_type": "text/markdown", "file_size": 812},
        "excluded_embed_metadata_keys": ["file_name", "file_type", "file_size"],
        "excluded_llm_metadata_keys": ["file_name", "file_type", "file_size"],
        "relationships": {
            "1": {"node_id": doc, "node_type": "4", "metadata": {"file_path": source},
                  "hash": "5d0f", "class_name": "RelatedNodeInfo"},
        },
        "metadata_template": "{key}: {value}", "metadata_separator": "\n", "text": text,
        "mimetype": "text/plain", "start_char_idx": 0, "end_char_idx": len(text),
        "metadata_seperator": "\n", "text_template": "{metadata_str}\n\n{content}",
        "class_name": "TextNode",
    }  # fmt: skip
    return {"__data__": data, "__type__": "1"}


def test_a_llamaindex_docstore_is_read_a_node_a_chunk(cli, tmp_path) -> None:
    """``storage_context.persist()``'s docstore.json (``docstore/data``: node id -> TextNode) was
    refused as having no id or text; its nodes are the chunks, their source document the doc id.
    In the persist folder, the index and vector stores beside it are no chunks."""
    nodes = {
        "n-1": _text_node("n-1", "Reset your password from the account page.", "docs/a.md", "D1"),
        "n-2": _text_node("n-2", "Invoices are sent on the first.", "docs/b.md", "D2"),
        "n-3": _text_node("n-3", "", "docs/c.md", "D3"),  # an empty node: a reject, not lost
    }
    store = {
        "docstore/metadata": {k: {"doc_hash": "h", "ref_doc_id": f"D{k[-1]}"} for k in nodes},
        "docstore/data": nodes,
        "docstore/ref_doc_info": {f"D{k[-1]}": {"node_ids": [k], "metadata": {}} for k in nodes},
    }
    persist = tmp_path / "storage"
    persist.mkdir()
    (persist / "docstore.json").write_text(json.dumps(store))
    (persist / "index_store.json").write_text(json.dumps({"index_store/data": {"i": {
        "__type__": "vector_store", "__data__": json.dumps({"index_id": "i"})}}}))  # fmt: skip
    vectors = {"embedding_dict": {"n-1": [0.1]}, "text_id_to_ref_doc_id": {"n-1": "D1"},
               "metadata_dict": {}}  # fmt: skip
    (persist / "default__vector_store.json").write_text(json.dumps(vectors))
    (persist / "graph_store.json").write_text(json.dumps({"graph_dict": {}}))
    db = tmp_path / "s.duckdb"
    out = ingest(cli, db, str(persist))
    assert [f["path"].rsplit("/", 1)[-1] for f in out["files"]] == ["docstore.json"]
    assert out["total"] == {"rows_in": 3, "stored": 2, "rejected": 1, "already_present": 0}
    rows = stored(db)
    assert [r[:5] for r in rows] == [
        ("n-1", "D1", None, None, "Reset your password from the account page."),
        ("n-2", "D2", None, None, "Invoices are sent on the first."),
    ]
    meta = json.loads(rows[0][5])
    assert meta["metadata"]["file_path"] == "docs/a.md"
    assert "Reset" not in rows[0][5]  # the text is not kept twice, nor the node's templates
    assert "text_template" not in meta and "embedding" not in meta


def test_a_field_mapped_inside_an_object_keeps_the_objects_other_fields(cli, tmp_path) -> None:
    """Qdrant's points (a LangChain store's payload: page_content beside metadata) read with
    ``--map text=payload.page_content``: the rest of the payload, the chunk's source, was lost
    without a word, since the whole object column counted as read."""
    points = [
        {"id": 1, "payload": {"page_content": "Reset your password.",
                              "metadata": {"source": "docs/a.md", "page": 2}}, "vector": None},
        {"id": "7c1e", "payload": {"page_content": "Invoices come monthly."}, "vector": None},
    ]  # fmt: skip
    path = tmp_path / "points.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in points))
    db = tmp_path / "s.duckdb"
    ingest(cli, db, str(path), "--map", "text=payload.page_content")
    assert [(r[0], r[4], r[5]) for r in stored(db)] == [
        ("1", "Reset your password.",
         '{"payload":{"metadata":{"source":"docs/a.md","page":2}}}'),
        ("7c1e", "Invoices come monthly.", None),
    ]  # fmt: skip


def test_unstructured_elements_are_read_an_element_a_chunk(cli, tmp_path) -> None:
    """Unstructured's element JSON (``elements_to_json``: type, element_id, text, metadata) was
    refused as having no id: ``element_id`` is its elements' id."""
    meta = {"filename": "guide.pdf", "filetype": "application/pdf", "languages": ["eng"],
            "page_number": 1}  # fmt: skip
    elements = [
        {"type": "Title", "element_id": "3f1a", "text": "Passwords", "metadata": meta},
        {"type": "NarrativeText", "element_id": "9b2c", "text": "Reset it from the account.",
         "metadata": {**meta, "parent_id": "3f1a"}},
        {"type": "PageBreak", "element_id": "77aa", "text": "", "metadata": meta},
    ]  # fmt: skip
    path = tmp_path / "guide.pdf.json"
    path.write_text(json.dumps(elements, indent=4))
    db = tmp_path / "s.duckdb"
    out = ingest(cli, db, str(path))
    assert out["total"] == {"rows_in": 3, "stored": 2, "rejected": 1, "already_present": 0}
    rows = stored(db)
    assert [(r[0], r[4]) for r in rows] == [("3f1a", "Passwords"),
                                           ("9b2c", "Reset it from the account.")]  # fmt: skip
    assert [r[1] for r in rows] == ["guide.pdf", "guide.pdf"]  # its file: the chunks' document
    assert json.loads(rows[1][5])["metadata"]["filetype"] == "application/pdf"
    assert json.loads(rows[1][5])["type"] == "NarrativeText"


def _lines(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_a_vector_stores_points_are_read_from_their_payload(cli, tmp_path) -> None:
    """A record whose text is inside an object (Qdrant's payload, Weaviate's properties, an
    elasticdump line's _source, a LangChain ``dumps`` Document's kwargs) was refused as having
    no text, to be named field by field with --map; the object is read as the record, its
    other fields kept as metadata, the id the record's own."""
    db = tmp_path / "s.duckdb"
    qdrant = {"result": {"points": [
        {"id": 1, "payload": {"page_content": "Reset your password.",
                              "metadata": {"source": "docs/a.md"}}, "vector": None},
        {"id": "5c56c793-69f3-4fbf-87e6-c4bf54c28c26",
         "payload": {"page_content": "Invoices come monthly.", "metadata": {}}},
    ], "next_page_offset": None}, "status": "ok", "time": 0.002}  # fmt: skip
    (tmp_path / "scroll.json").write_text(json.dumps(qdrant))
    ingest(cli, db, str(tmp_path / "scroll.json"))
    assert [(r[0], r[4], r[5]) for r in stored(db)] == [
        ("1", "Reset your password.", '{"payload":{"metadata":{"source":"docs/a.md"}}}'),
        ("5c56c793-69f3-4fbf-87e6-c4bf54c28c26", "Invoices come monthly.",
         '{"payload":{"metadata":{}}}'),
    ]  # fmt: skip

    weaviate = {"objects": [
        {"class": "Doc", "creationTimeUnix": 1764000000000, "id": "w-1",
         "properties": {"title": "Passwords", "content": "Reset it.", "url": "https://kb/1"},
         "vectorWeights": None},
    ], "totalResults": 1, "deprecations": None}  # fmt: skip
    (tmp_path / "objects.json").write_text(json.dumps(weaviate))
    db = tmp_path / "w.duckdb"
    ingest(cli, db, str(tmp_path / "objects.json"))
    assert [r[:5] for r in stored(db)] == [("w-1", None, "Passwords", "https://kb/1", "Reset it.")]

    dump = _lines(tmp_path / "dump.jsonl", [
        {"_index": "kb", "_id": "kb-1", "_score": 1, "_source": {"title": "T", "body": "Text."}},
    ])  # fmt: skip
    db = tmp_path / "e.duckdb"
    ingest(cli, db, str(dump))
    assert [r[:5] for r in stored(db)] == [("kb-1", None, "T", None, "Text.")]

    lc = {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "document", "Document"],
          "kwargs": {"id": "lc-1", "metadata": {"source": "a.md"}, "page_content": "Hello.",
                     "type": "Document"}}  # fmt: skip
    (tmp_path / "docs.json").write_text(json.dumps([lc], indent=2))
    db = tmp_path / "l.duckdb"
    ingest(cli, db, str(tmp_path / "docs.json"))
    assert [(r[0], r[4]) for r in stored(db)] == [("lc-1", "Hello.")]


def test_a_chroma_collection_get_is_read_an_id_a_chunk(cli, tmp_path) -> None:
    """``collection.get()`` saved as JSON: ids, documents and metadatas side by side."""
    got = {"ids": ["c-1", "c-2", "c-3"], "embeddings": None,
           "documents": ["Reset your password.", "Invoices come monthly.", None],
           "uris": None, "data": None,
           "metadatas": [{"source": "a.md"}, None, {"source": "c.md"}],
           "included": ["metadatas", "documents"]}  # fmt: skip
    (tmp_path / "get.json").write_text(json.dumps(got))
    db = tmp_path / "s.duckdb"
    out = ingest(cli, db, str(tmp_path / "get.json"))
    assert out["total"] == {"rows_in": 3, "stored": 2, "rejected": 1, "already_present": 0}
    assert [(r[0], r[1], r[4], r[5]) for r in stored(db)] == [
        ("c-1", "a.md", "Reset your password.", None),  # its source: LangChain's document
        ("c-2", None, "Invoices come monthly.", None),
    ]


def test_a_large_chroma_get_or_pandas_frame_is_read_in_one_pass(cli, tmp_path) -> None:
    """Each record was cut from the whole document by its own JSON path (Chroma's ids[i], a
    pandas column's row label): the document parsed again for every record, so a Chroma get()
    of 4,000 chunks (1 MB) ran out of 100 MB, and one of 20,000 out of 18 GB; pandas' default
    to_json of 20,000 rows took 100 s and 5 GB. Each list is now read once."""
    n = 4000
    texts = [f"document {i} about refunds and orders" for i in range(n)]
    got = {"ids": [f"c-{i}" for i in range(n)], "documents": texts,
           "metadatas": [{"source": f"d{i // 10}.md"} for i in range(n)]}  # fmt: skip
    columns = {"id": {str(i): f"p-{i}" for i in range(n)}, "text": dict(enumerate(texts))}
    for name, body in (("get.json", got), ("frame.json", columns)):
        (tmp_path / name).write_text(json.dumps(body))
        db = tmp_path / f"{name}.duckdb"
        result = cli("--db", str(db), "ingest", "corpus", str(tmp_path / name), "--json",
                     env={"GOLDMINE_MEMORY_LIMIT": "100MB"})  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["total"]["stored"] == n
        rows = stored(db)
        assert len(rows) == n and rows[0][4] == "document 0 about refunds and orders"
    assert stored(tmp_path / "get.json.duckdb")[1][:2] == ("c-1", "d0.md")


def test_a_payload_without_a_text_field_goldmine_knows_names_map(cli, tmp_path) -> None:
    path = _lines(tmp_path / "points.jsonl", [{"id": 1, "payload": {"chunk_txt": "hello"}}])
    db = tmp_path / "s.duckdb"
    result = cli("--db", str(db), "ingest", "corpus", str(path))
    assert result.returncode == 4
    assert "missing text (payload holds no text field goldmine knows, --map text=payload.FIELD " \
        "names it)" in result.stderr  # fmt: skip
    result = cli("--db", str(db), "ingest", "corpus", str(path), "--map", "text=payload.chunk_txt")
    assert result.returncode == 0, result.stderr
    assert [(r[0], r[4]) for r in stored(db)] == [("1", "hello")]


def test_a_parquet_corpus_with_embeddings_leaves_the_vectors_out(cli, tmp_path) -> None:
    """A data set published with its embeddings (Cohere's Wikipedia: id, title, text, url, emb)
    had each vector stored as JSON text in the chunk's metadata: 20,000 chunks of 768 numbers
    took 46 s and 2.4 GB against 1.6 s without, and a store 40 times the size. A column of
    embeddings (numbers, named as one) is no metadata: it is left out, and the file's note says
    which; another list of numbers is kept."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    flat = pa.array([0.25, -0.5, 0.125, 1.0, 0.0, 0.5], type=pa.float32())
    table = pa.table({
        "id": ["w1", "w2"], "title": ["Alpha", "Beta"], "text": ["alpha text", "beta text"],
        "langs": pa.array([["en"], ["en", "de"]]), "views": [10.5, 2.0],
        "emb": pa.FixedSizeListArray.from_arrays(flat, 3),
        "title_embedding": pa.array([[1.0, 2.0], [3.0, 4.0]], type=pa.list_(pa.float64())),
        "bbox": pa.array([[1.0, 2.0], [3.0]], type=pa.list_(pa.float64())),
    })  # fmt: skip
    path = tmp_path / "train-00000-of-00001.parquet"
    pq.write_table(table, path)
    db = tmp_path / "s.duckdb"
    out = ingest(cli, db, str(path))
    assert out["total"] == {"rows_in": 2, "stored": 2, "rejected": 0, "already_present": 0}
    assert out["files"][0]["note"] == (
        "left out 2 columns of embeddings (lists of numbers, not metadata): emb, title_embedding"
    )
    assert [(r[0], r[2], r[4], r[5]) for r in stored(db)] == [
        ("w1", "Alpha", "alpha text", '{"bbox":[1.0,2.0],"langs":["en"],"views":10.5}'),
        ("w2", "Beta", "beta text", '{"bbox":[3.0],"langs":["en","de"],"views":2.0}'),
    ]


def test_a_haystack_in_memory_store_saved_to_disk_is_read(cli, tmp_path) -> None:
    """InMemoryDocumentStore.save_to_disk: the store's to_dict with its documents (each
    ``Document.to_dict(flatten=False)``) under ``documents``; it was refused, its keys
    (type, init_parameters, documents) taken for one record's. Each document's embedding is no
    metadata: left out."""
    docs = [
        {"id": "a1", "content": "Reset your password.", "blob": None,
         "meta": {"file_path": "docs/a.md", "page_number": 1}, "score": None,
         "embedding": [0.25, -0.5, 0.125], "sparse_embedding": None},
        {"id": "b2", "content": "Invoices come monthly.", "blob": None, "meta": {},
         "score": None, "embedding": None, "sparse_embedding": None},
    ]  # fmt: skip
    store = {
        "type": "haystack.document_stores.in_memory.document_store.InMemoryDocumentStore",
        "init_parameters": {"bm25_tokenization_regex": r"(?u)\b\w\w+\b",
                            "bm25_algorithm": "BM25L", "bm25_parameters": {},
                            "embedding_similarity_function": "dot_product", "index": "9f1c"},
        "documents": docs,
    }  # fmt: skip
    (tmp_path / "store.json").write_text(json.dumps(store))
    db = tmp_path / "s.duckdb"
    out = ingest(cli, db, str(tmp_path / "store.json"))
    assert out["total"] == {"rows_in": 2, "stored": 2, "rejected": 0, "already_present": 0}
    assert [(r[0], r[1], r[4], r[5]) for r in stored(db)] == [
        ("a1", "docs/a.md", "Reset your password.", '{"meta":{"page_number":1}}'),
        ("b2", None, "Invoices come monthly.", None),
    ]


def test_a_json_document_named_jsonl_is_read_as_one(cli, tmp_path) -> None:
    """``json.dump(docs, f, indent=2)`` into ``docs.jsonl``: every line of the array was a
    'malformed JSON' reject, and the import stored nothing. A file whose first line opens a
    document (``[``, or a ``{`` alone) holds no JSON lines: it is read as the document."""
    docs = [{"id": "a", "text": "alpha"}, {"id": "b", "text": "beta"}]
    (tmp_path / "docs.jsonl").write_text(json.dumps(docs, indent=2))
    (tmp_path / "one.jsonl").write_text(json.dumps({"records": docs}, indent=2))
    for name in ("docs.jsonl", "one.jsonl"):
        db = tmp_path / f"{name}.duckdb"
        out = ingest(cli, db, str(tmp_path / name))
        assert out["files"][0]["format"] == "json"
        assert [(r[0], r[4]) for r in stored(db)] == [("a", "alpha"), ("b", "beta")]


def test_a_compressed_json_document_is_read(cli, tmp_path) -> None:
    """A gzipped docstore.json, search response or array of documents was refused ("compressed
    .json documents are not supported; use JSONL"), though the same file plain was read."""
    import gzip

    docs = [{"id": "a", "text": "alpha"}, {"id": "b", "text": "beta"}]
    nodes = {d["id"]: {"__data__": {"id_": d["id"], "text": d["text"], "relationships": {}},
                       "__type__": "1"} for d in docs}  # fmt: skip
    hits = [{"_id": d["id"], "_source": {"body": d["text"]}} for d in docs]
    files = {
        "docs.json.gz": docs,
        "docstore.json.gz": {"docstore/data": nodes, "docstore/metadata": {}},
        "search.json.gz": {"took": 1, "hits": {"hits": hits}},
    }
    for name, content in files.items():
        (tmp_path / name).write_bytes(gzip.compress(json.dumps(content, indent=1).encode()))
        db = tmp_path / f"{name}.duckdb"
        out = ingest(cli, db, str(tmp_path / name))
        assert out["files"][0]["format"] == "json+gzip"
        assert [(r[0], r[4]) for r in stored(db)] == [("a", "alpha"), ("b", "beta")], name


def test_an_elasticsearch_bulk_file_is_read_a_source_a_chunk(cli, tmp_path) -> None:
    """A ``_bulk`` NDJSON file (an action line naming the index and ``_id``, then the
    document): it was refused as having no id, or with an id field in the documents each action
    line was a 'missing text' reject. Each document is a chunk, its id its action's ``_id``."""
    lines = [
        {"index": {"_index": "kb", "_id": "kb-1"}},
        {"title": "Passwords", "text": "Reset it from the account page.", "lang": "en"},
        {"create": {"_index": "kb", "_id": "kb-2"}},
        {"title": "Invoices", "text": "Sent on the first."},
        {"delete": {"_index": "kb", "_id": "kb-0"}},
        {"index": {"_index": "kb", "_id": "kb-3"}},
        {"title": "Empty"},
    ]
    path = _lines(tmp_path / "bulk.ndjson", lines)
    db = tmp_path / "s.duckdb"
    out = ingest(cli, db, str(path))
    assert out["total"] == {"rows_in": 3, "stored": 3, "rejected": 0, "already_present": 0}
    assert [(r[0], r[2], r[4], r[5]) for r in stored(db)] == [
        ("kb-1", "Passwords", "Reset it from the account page.", '{"lang":"en"}'),
        ("kb-2", "Invoices", "Sent on the first.", None),
        ("kb-3", "Empty", "Empty", None),  # a title alone is the text, as for any record
    ]


def test_two_bulk_files_are_one_snapshot(cli, tmp_path) -> None:
    for n in (1, 2):
        _lines(tmp_path / f"part-{n}.ndjson", [{"index": {"_id": f"d{n}"}}, {"text": f"t{n}"}])
    db = tmp_path / "s.duckdb"
    out = ingest(cli, db, str(tmp_path / "part-1.ndjson"), str(tmp_path / "part-2.ndjson"))
    assert out["total"]["stored"] == 2
    assert [(r[0], r[4]) for r in stored(db)] == [("d1", "t1"), ("d2", "t2")]


def test_a_chunks_title_url_and_document_are_read_from_its_metadata(cli, tmp_path) -> None:
    """LangChain's documents (page_content beside metadata: source, title), Haystack's
    (content beside meta) and BEIR's corpus (metadata.url) keep a chunk's title, url and
    document in its metadata object: the chunk had no title (which BM25 drafts and review
    show), url or document id. Read from there where the record has none of its own; the
    rest of the object stays the chunk's metadata."""
    lc = [
        {"id": "c1", "page_content": "Reset it.", "type": "Document",
         "metadata": {"source": "https://kb/pw", "title": "Passwords", "start_index": 0}},
        {"id": "c2", "page_content": "Monthly.", "metadata": {"file_path": "docs/b.md"}},
    ]  # fmt: skip
    db = tmp_path / "s.duckdb"
    ingest(cli, db, str(_lines(tmp_path / "lc.jsonl", lc)))
    assert stored(db) == [
        ("c1", "https://kb/pw", "Passwords", None, "Reset it.",
         '{"metadata":{"start_index":0},"type":"Document"}'),
        ("c2", "docs/b.md", None, None, "Monthly.", None),
    ]  # fmt: skip
    own = [{"id": "c3", "title": "Own", "page_content": "Own.", "metadata": {"title": "Kept"}}]
    db = tmp_path / "o.duckdb"
    ingest(cli, db, str(_lines(tmp_path / "own.jsonl", own)))  # a file's own title field wins
    assert stored(db) == [("c3", None, "Own", None, "Own.", '{"metadata":{"title":"Kept"}}')]
    beir = [
        {"_id": "d1", "title": "", "text": "x", "metadata": {"url": "https://p/1", "pmid": "7"}}
    ]
    db = tmp_path / "b.duckdb"
    ingest(cli, db, str(_lines(tmp_path / "corpus.jsonl", beir)))
    assert stored(db) == [("d1", None, "", "https://p/1", "x", '{"metadata":{"pmid":"7"}}')]


def test_a_docstore_holding_its_documents_beside_their_nodes_stores_the_nodes(cli, tmp_path):
    """An ingestion pipeline with a docstore keeps its Documents (``__type__`` 4) beside the
    nodes parsed from them: each Document, its whole text, was stored as one more chunk. A
    Document whose nodes the store holds is left out, the note saying how many."""
    text = "Reset your password from the account page. Invoices are sent monthly."
    document = {
        "__type__": "4",
        "__data__": {
            "id_": "D1",
            "text": text,
            "metadata": {},
            "relationships": {},
            "class_name": "Document",
        },
    }
    nodes = {
        "D1": document,
        "n-1": _text_node("n-1", text[:42], "docs/a.md", "D1"),
        "n-2": _text_node("n-2", text[43:], "docs/a.md", "D1"),
        "D2": {"__type__": "4", "__data__": {"id_": "D2", "text": "A document not split.",
                                             "relationships": {}, "class_name": "Document"}},
    }  # fmt: skip
    (tmp_path / "docstore.json").write_text(json.dumps({"docstore/data": nodes}))
    db = tmp_path / "s.duckdb"
    out = ingest(cli, db, str(tmp_path / "docstore.json"))
    assert out["files"][0]["note"] == (
        "left out 1 document whose nodes the docstore holds (its nodes are the chunks)"
    )
    assert [r[0] for r in stored(db)] == ["D2", "n-1", "n-2"]
    assert out["total"] == {"rows_in": 3, "stored": 3, "rejected": 0, "already_present": 0}


def test_a_layout_goldmine_cannot_read_is_refused_naming_what_it_reads(cli, tmp_path) -> None:
    """The refusal named the file's fields and --map, not the names goldmine looks for: a
    user could not tell whether ``doc_text`` was near a name it knows."""
    path = _lines(tmp_path / "odd.jsonl", [{"key": "a", "doc_text": "alpha"}])
    db = tmp_path / "s.duckdb"
    result = cli("--db", str(db), "ingest", "corpus", str(path))
    assert result.returncode == 2
    line = result.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert "found doc_text, key" in line
    assert "an id (id, _id, chunk_id, docid, " in line and "a text (text, content, " in line
    assert "--map chunk_id=COLUMN --map text=COLUMN" in line and "--format" in line
    assert not db.exists()


def test_a_datasets_save_to_disk_folder_is_refused_saying_how_to_read_it(cli, tmp_path) -> None:
    """``Dataset.save_to_disk`` writes Arrow files beside dataset_info.json and state.json: the
    import read dataset_info.json as a corpus and was refused for its fields (citation,
    description, …), which said nothing of the Arrow files holding the records."""
    folder = tmp_path / "wiki"
    folder.mkdir()
    (folder / "data-00000-of-00001.arrow").write_bytes(b"\xff\xff\xff\xff" + b"\0" * 60)
    (folder / "dataset_info.json").write_text(json.dumps({"citation": "", "features": {}}))
    (folder / "state.json").write_text(json.dumps({"_data_files": [
        {"filename": "data-00000-of-00001.arrow"}], "_fingerprint": "f"}))  # fmt: skip
    db = tmp_path / "s.duckdb"
    result = cli("--db", str(db), "ingest", "corpus", str(folder))
    assert result.returncode == 2
    said = result.stderr.strip()
    assert "\n" not in said
    assert "save_to_disk" in said and "Arrow" in said and ".to_parquet(" in said
    assert not db.exists()


def test_a_points_named_vectors_are_left_out_too(cli, tmp_path) -> None:
    """A Qdrant point with named vectors (``"vector": {"dense": [...], "sparse": {"indices",
    "values"}}``) kept them as metadata, the embedding left out only as a plain list."""
    point = {
        "id": 3,
        "payload": {"text": "Reset it."},
        "vector": {"dense": [0.5, -0.25], "sparse": {"indices": [1, 9], "values": [0.2, 0.4]}},
    }
    path = _lines(tmp_path / "points.jsonl", [point])
    db = tmp_path / "s.duckdb"
    ingest(cli, db, str(path))
    assert [(r[0], r[4], r[5]) for r in stored(db)] == [("3", "Reset it.", None)]


def test_a_search_response_of_fields_without_source_is_read(cli, tmp_path) -> None:
    """A search asking for ``fields`` (``_source: false``) gives each hit its fields as lists:
    the hits were skipped and the file said to hold no rows ('an empty file, or a header
    alone'). Each hit is its fields, a one-value list its value, with its _id."""
    hits = [
        {"_index": "kb", "_id": "a", "_score": 1.0, "fields": {"text": ["alpha"], "title": ["A"],
                                                               "tags": ["x", "y"]}},
        {"_index": "kb", "_id": "b", "_score": 0.5, "fields": {"text": ["beta"]}},
    ]  # fmt: skip
    (tmp_path / "search.json").write_text(json.dumps({"took": 2, "hits": {"hits": hits}}))
    db = tmp_path / "s.duckdb"
    out = ingest(cli, db, str(tmp_path / "search.json"))
    assert out["total"]["stored"] == 2
    assert [(r[0], r[2], r[4], r[5]) for r in stored(db)] == [
        ("a", "A", "alpha", '{"tags":["x","y"]}'),
        ("b", None, "beta", None),
    ]


def test_a_dataframe_written_by_pandas_to_json_is_read_a_row_a_chunk(cli, tmp_path) -> None:
    """``df.to_json("corpus.json")`` (pandas' default, a column an object of row labels) was
    read as one record, every column an object, and rejected ('text is an object');
    ``orient="split"`` made each row a 'not a JSON object' reject."""
    columns = {"id": {"0": "d1", "1": "d2"}, "title": {"0": "A", "1": None},
               "text": {"0": "alpha", "1": "beta"}, "lang": {"0": "en", "1": "de"}}  # fmt: skip
    split = {"columns": ["id", "title", "text", "lang"], "index": [0, 1],
             "data": [["d1", "A", "alpha", "en"], ["d2", None, "beta", "de"]]}  # fmt: skip
    index = {"0": {"id": "d1", "title": "A", "text": "alpha", "lang": "en"},
             "1": {"id": "d2", "title": None, "text": "beta", "lang": "de"}}  # fmt: skip
    for name, content in (("columns.json", columns), ("split.json", split), ("index.json", index)):
        (tmp_path / name).write_text(json.dumps(content))
        db = tmp_path / f"{name}.duckdb"
        out = ingest(cli, db, str(tmp_path / name))
        assert out["total"]["stored"] == 2, name
        assert [(r[0], r[2], r[4], r[5]) for r in stored(db)] == [
            ("d1", "A", "alpha", '{"lang":"en"}'),
            ("d2", None, "beta", '{"lang":"de"}'),
        ], name


def test_langchain_documents_saved_without_ids_say_how_to_name_one(cli, tmp_path) -> None:
    """``[d.model_dump() for d in docs]`` of Documents made without an id writes "id": null:
    every row was 'missing chunk id', with nothing said of where an id could come from."""
    rows = [{"id": None, "metadata": {"source": "a.md", "chunk": i}, "page_content": f"t{i}",
             "type": "Document"} for i in range(2)]  # fmt: skip
    path = _lines(tmp_path / "docs.jsonl", rows)
    db = tmp_path / "s.duckdb"
    result = cli("--db", str(db), "ingest", "corpus", str(path))
    assert result.returncode == 4
    assert "missing chunk id (a LangChain Document saved without one, --map " \
        "chunk_id=metadata.FIELD names one)" in result.stderr  # fmt: skip


def test_a_frames_float_ids_and_index_column_read_as_the_frame_meant(cli, tmp_path) -> None:
    """pandas keeps an integer id column that had a gap as floats, and to_parquet writes its
    index as __index_level_0__: chunk 7 was stored as "7.0" (no qrels or run names it so; both
    read 7.0 as 7) and every chunk's metadata held the frame's row number."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"id": [7, None, 9], "text": ["seven", "none", "nine"]}).dropna()
    frame = frame.set_index(pd.Index([10, 11]))  # not a RangeIndex: written as a column
    frame.to_parquet(tmp_path / "c.parquet")
    (tmp_path / "c.jsonl").write_text('{"id": 7.0, "text": "seven"}\n{"id": 7.5, "text": "x"}\n')
    for name in ("c.parquet", "c.jsonl"):
        db = tmp_path / f"{name}.duckdb"
        ingest(cli, db, str(tmp_path / name))
        rows = stored(db)
        assert rows[0][0] == "7" and rows[0][5] is None, rows
    assert [r[0] for r in stored(tmp_path / "c.jsonl.duckdb")] == ["7", "7.5"]


def test_a_frames_unnamed_index_is_no_metadata(cli, tmp_path) -> None:
    """pandas writes a frame's unnamed index that is no plain row count (string labels, a
    filtered frame's) as the column __index_level_0__: every chunk's metadata held it."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"id": ["a", "b"], "text": ["x y", "z w"], "lang": ["en", "de"]},
                         index=["r1", "r2"])  # fmt: skip
    frame.to_parquet(tmp_path / "c.parquet")
    db = tmp_path / "c.duckdb"
    ingest(cli, db, str(tmp_path / "c.parquet"))
    assert [(r[0], r[5]) for r in stored(db)] == [("a", '{"lang":"en"}'), ("b", '{"lang":"de"}')]
