"""``gold draft``: its steps on stderr, and the retrieval done with the store closed.

The store comes from tests/helpers.py (build); the hybrid case uses the real bundled MiniLM
and is marked slow.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from goldmine import store as store_module
from goldmine.goldset.items import query_id_for
from goldmine.store import Store, open_store
from goldmine.text import normalize_query

from helpers import CHUNKS, build

QUERIES = ("reset password", "vpn setup", "download invoice")


@pytest.fixture
def store(db_path: Path, cli) -> Path:
    build(db_path)
    out = cli("--db", str(db_path), "gold", "add-query", *QUERIES, "--by", "tester")
    assert out.returncode == 0, out.stderr
    return db_path


def _spy_on_store(monkeypatch: pytest.MonkeyPatch, owner, name: str) -> list[dict]:
    """Record, at each call of owner.name, which stores this process holds open."""
    seen: list[dict] = []
    original = getattr(owner, name)

    def spy(*args, **kwargs):
        seen.append(dict(store_module._held))
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)
    return seen


def test_bm25_draft_names_its_steps_and_searches_with_the_store_closed(
    store: Path, cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    from goldmine import retrieval as baselines
    from goldmine.goldset.draft import draft

    out = cli("--db", str(store), "gold", "draft", "-k", "2")
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    assert any(line.startswith(f"draft: index {len(CHUNKS)} chunks") for line in lines), out.stderr
    assert any(line.startswith("draft: search 3 queries") for line in lines), out.stderr
    assert "drafted 3 queries" in out.stderr
    with open_store(store) as con:
        history = con.execute(
            "SELECT query_id, detail FROM gold_history WHERE action = 'draft' ORDER BY query_id"
        ).fetchall()
        drafts = con.execute(
            "SELECT query_id, list(chunk_id ORDER BY rank) FROM gold_labels "
            "WHERE kind = 'draft' GROUP BY query_id"
        ).fetchall()
    assert {q for q, _ in history} == {query_id_for(normalize_query(q)) for q in QUERIES}
    by_query = dict(drafts)
    for qid, detail in history:
        assert json.loads(detail) == {"chunks": by_query[qid], "k": 2, "snapshot_id": 1}
    reset = by_query[query_id_for(normalize_query("reset password"))]
    assert reset[0] == "kb-reset-1"

    # drafting again replaces the drafts of items still without a label; the search itself
    # runs while this process holds no store
    with open_store(store) as con:
        con.execute("UPDATE gold_items SET status = 'candidate'")
    seen = _spy_on_store(monkeypatch, baselines.BM25Retriever, "search")
    result = draft(Store(store, write=True), "bm25", 2, by="retriever:bm25")
    assert result.items == 3 and result.drafts == 6
    assert seen and all(held == {} for held in seen)


@pytest.mark.slow
def test_hybrid_draft_embeds_with_the_store_closed(
    store: Path, cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    import goldmine.embed as embed
    from goldmine.goldset.draft import draft

    seen = _spy_on_store(monkeypatch, embed, "_encode")
    result = draft(Store(store, write=True), "hybrid", 3, by="retriever:hybrid")
    assert result.items == 3 and result.drafts == 9
    assert seen and all(held == {} for held in seen)  # chunks and queries, in one pass
    with open_store(store) as con:
        cached = con.execute("SELECT count(*) FROM embeddings").fetchall()[0][0]
    # The chunk and query vectors were cached for the next draft (and triage's queries).
    assert cached == len(CHUNKS) + len(QUERIES)

    monkeypatch.undo()
    with open_store(store) as con:
        con.execute("UPDATE gold_items SET status = 'candidate'")
    out = cli("--db", str(store), "gold", "draft", "--retriever", "hybrid", "-k", "3")
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    assert any(line.startswith(f"draft: embed {len(CHUNKS)} chunks") for line in lines), lines


@pytest.mark.slow
def test_dense_draft_embeds_chunks_and_queries_with_triages_backend_and_cache(
    store: Path, cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    from goldmine.embed import embed_closed
    from goldmine.retrieval import documents

    monkeypatch.delenv("GOLDMINE_EMBED_BACKEND", raising=False)
    # Triage's cache already holds one of the queries (triage embeds with onnx-int8).
    embed_closed(store, ["reset password"], backend="onnx-int8")
    out = cli("--db", str(store), "gold", "draft", "--retriever", "dense", "-k", "2")
    assert out.returncode == 0, out.stderr
    assert "all-MiniLM-L6-v2@onnx-int8" in out.stderr
    assert f"{len(CHUNKS) + 2} encoded, 1 from the cache" in out.stderr
    with open_store(store) as con:
        keys = dict(con.execute("SELECT model, count(*) FROM embeddings GROUP BY 1").fetchall())
        drafted = con.execute(
            "SELECT chunk_id, score FROM gold_labels WHERE kind = 'draft' AND query_id = ? "
            "ORDER BY rank",
            [query_id_for(normalize_query("reset password"))],
        ).fetchall()
    texts = documents([c[0] for c in CHUNKS.values()], [c[1] for c in CHUNKS.values()])
    assert keys == {"all-MiniLM-L6-v2@onnx-int8": len(set(texts)) + len(QUERIES)}
    assert drafted[0][0] == "kb-reset-1"
    # A re-draft encodes nothing: chunks and queries come from the cache.
    with open_store(store) as con:
        con.execute("UPDATE gold_items SET status = 'candidate'")
    again = cli("--db", str(store), "gold", "draft", "--retriever", "hybrid", "-k", "2")
    assert again.returncode == 0, again.stderr
    assert f"0 encoded, {len(CHUNKS) + 3} from the cache" in again.stderr
    # [embed] backend (or GOLDMINE_EMBED_BACKEND) chooses for drafts as it does for triage.
    with open_store(store) as con:
        con.execute("UPDATE gold_items SET status = 'candidate'")
    torch = cli(
        "--db", str(store), "gold", "draft", "--retriever", "dense", "-k", "2",
        env={"GOLDMINE_EMBED_BACKEND": "torch"},
    )  # fmt: skip
    assert torch.returncode == 0, torch.stderr
    with open_store(store) as con:
        keys = dict(con.execute("SELECT model, count(*) FROM embeddings GROUP BY 1").fetchall())
    assert keys["all-MiniLM-L6-v2"] == len(set(texts)) + len(QUERIES)


def test_drafts_default_to_triages_backend() -> None:
    from goldmine.embed import DRAFT_BACKEND
    from goldmine.triage.pipeline import DEFAULT_BACKEND

    assert DRAFT_BACKEND == DEFAULT_BACKEND
