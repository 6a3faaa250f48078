"""A corpus as RAG stacks and search engines export it: an Elasticsearch/OpenSearch ``_search``
response saved whole (each hit's ``_id`` beside its ``_source``), LlamaIndex's persisted
``docstore.json``, Unstructured's element JSON, a Chroma ``collection.get()`` and a field read
from inside an object with ``--map`` (the object's other fields kept as metadata)."""

from __future__ import annotations

import json
from pathlib import Path

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
