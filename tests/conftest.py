"""Shared fixtures: a real DuckDB file per test, the CLI, and the shared real data sets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("GOLDMINE_SHARED", ROOT.parent / "shared"))


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


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None, input: str | None = None):
    """Run ``python -m goldmine`` in a real subprocess; returns CompletedProcess (text)."""
    full_env = {**os.environ, "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "goldmine", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        input=input,
        timeout=600,
    )


@pytest.fixture
def cli():
    return run_cli
