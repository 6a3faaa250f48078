"""Shared fixtures: a real DuckDB file per test, the CLI, and the shared real data sets."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from goldmine.retrieval import build_retriever
from goldmine.store import open_store

from helpers import ROOT, SHARED, run_cli, store_corpus
from realdata import load_cranfield

# `python -m pytest` puts the checkout on sys.path, where the stage folders would import as
# top-level `eval` or `ingest`; the tests see them as installed, as goldmine.<stage> only.
sys.path[:] = [p for p in sys.path if p and Path(p).resolve() != ROOT]


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the developer's goldmine.toml or GOLDMINE_DB, or writes in the checkout."""
    monkeypatch.delenv("GOLDMINE_DB", raising=False)
    monkeypatch.delenv("GOLDMINE_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    from goldmine.config import _load

    _load.cache_clear()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store.duckdb"


@pytest.fixture
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"../shared is absent ({SHARED}): real-data test skipped")
    return SHARED


@pytest.fixture
def shared_dataset(shared_dir: Path):
    def get(*parts: str) -> Path:
        path = shared_dir.joinpath(*parts)
        if not path.exists():
            pytest.skip(f"{path} is absent: real-data test skipped")
        return path

    return get


@pytest.fixture
def ticket_sql():
    """An in-memory connection with the ticket macros (sentences, questions, problems)."""
    import duckdb

    from goldmine.ingest.batch import prepare
    from goldmine.ingest.tickets import MACROS

    with duckdb.connect() as connection:
        prepare(connection)
        connection.execute(MACROS)
        yield connection


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(scope="session")
def cranfield_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding Cranfield's 1,400 abstracts with their MiniLM vectors cached, embedded once
    per session: a test copies the file instead of embedding the corpus again."""
    folder = SHARED / "datasets" / "cranfield"
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent: real-data test skipped")

    path = tmp_path_factory.mktemp("cranfield") / "cranfield.duckdb"
    with open_store(path) as con:
        store_corpus(con, load_cranfield(folder).chunks)
        build_retriever(con, "dense", show_progress=False)
    return path
