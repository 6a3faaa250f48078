"""Shared fixtures: a real DuckDB file per test, the CLI, and the shared real data sets."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
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
def _built_stores() -> dict[str, Path]:
    """The stores ``store_copy`` built this session, by name."""
    return {}


@pytest.fixture
def store_copy(_built_stores: dict[str, Path], tmp_path_factory: pytest.TempPathFactory,
               db_path: Path) -> Callable[[str, Callable[[Path], None]], Path]:  # fmt: skip
    """``store_copy(name, make)``: ``db_path`` holding a copy of the store ``make(path)`` builds,
    built once per session under ``name``. For tests that need the same store again and again
    (building it by the CLI costs a second or more; copying the file, milliseconds); the test
    may write to its copy."""

    def copy(name: str, make: Callable[[Path], None]) -> Path:
        built = _built_stores.get(name)
        if built is None:
            built = tmp_path_factory.mktemp("built") / "store.duckdb"
            make(built)  # in the first test's folder and environment (_isolated_env)
            _built_stores[name] = built
        for suffix in ("", ".wal"):  # a WAL left unmerged too
            source = built.with_name(built.name + suffix)
            if source.exists():
                shutil.copyfile(source, db_path.with_name(db_path.name + suffix))
        return db_path

    return copy


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
