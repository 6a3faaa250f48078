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
from goldmine.store import open_store
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
    result = draft(store, "bm25", 2, by="retriever:bm25")
    assert result.items == 3 and result.drafts == 6
    assert seen and all(held == {} for held in seen)


@pytest.mark.slow
def test_hybrid_draft_embeds_with_the_store_closed(
    store: Path, cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    import goldmine.embed as embed
    from goldmine.goldset.draft import draft

    seen = _spy_on_store(monkeypatch, embed, "_encode")
    result = draft(store, "hybrid", 3, by="retriever:hybrid")
    assert result.items == 3 and result.drafts == 9
    assert len(seen) >= 2 and all(held == {} for held in seen)  # chunks, then queries
    with open_store(store) as con:
        cached = con.execute("SELECT count(*) FROM embeddings").fetchall()[0][0]
    assert cached == len(CHUNKS)  # the chunk vectors were cached for the next draft or eval

    monkeypatch.undo()
    with open_store(store) as con:
        con.execute("UPDATE gold_items SET status = 'candidate'")
    out = cli("--db", str(store), "gold", "draft", "--retriever", "hybrid", "-k", "3")
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    assert any(line.startswith(f"draft: embed {len(CHUNKS)} chunks") for line in lines), lines
