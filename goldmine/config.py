"""Configuration, resolved once: command-line flag > environment variable > goldmine.toml > default.

``goldmine.toml`` is looked for in the current directory and its parents (the user's repository),
so commands run from a subfolder still find the project's store and settings.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from goldmine.errors import InputError

DEFAULT_DB = "goldmine.duckdb"
CONFIG_NAME = "goldmine.toml"
DB_ENV = "GOLDMINE_DB"


@dataclass(frozen=True)
class Config:
    """The parsed ``goldmine.toml`` (empty when there is none) and where it was found."""

    path: Path | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def section(self, name: str) -> dict[str, Any]:
        value = self.data.get(name, {})
        if not isinstance(value, dict):
            raise InputError(f"[{name}] must be a table", path=self.path)
        return value

    def get(self, section: str, key: str, default: Any = None) -> Any:
        return self.section(section).get(key, default)


def find_config_file(start: Path | None = None) -> Path | None:
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None


@lru_cache(maxsize=8)
def _load(path: Path | None) -> Config:
    if path is None:
        return Config()
    try:
        with path.open("rb") as handle:
            return Config(path=path, data=tomllib.load(handle))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", path=path) from exc


def load_config(start: Path | None = None) -> Config:
    """The project's config; ``GOLDMINE_CONFIG`` names a file explicitly."""
    explicit = os.environ.get("GOLDMINE_CONFIG")
    if explicit:
        return _load(Path(explicit).resolve())
    return _load(find_config_file(start))


def resolve_db_path(flag: str | Path | None = None) -> Path:
    """Where the store lives: --db > GOLDMINE_DB > [store] db in goldmine.toml > default.

    A relative path in goldmine.toml is taken relative to the toml file, so it means the same
    from any subfolder.
    """
    if flag:
        return Path(flag)
    env = os.environ.get(DB_ENV)
    if env:
        return Path(env)
    config = load_config()
    configured = config.get("store", "db")
    if configured:
        path = Path(configured)
        if not path.is_absolute() and config.path is not None:
            path = config.path.parent / path
        return path
    return Path(DEFAULT_DB)


# DuckDB settings a user may need on a small or shared machine: how much memory the store may use
# before it spills to ``<store>.tmp`` on disk, and how many threads it runs.
ENGINE_SETTINGS = {
    "memory_limit": "GOLDMINE_MEMORY_LIMIT",
    "threads": "GOLDMINE_THREADS",
}


def engine_settings() -> dict[str, tuple[str, str]]:
    """DuckDB settings for the store: name -> (value, where it came from), from
    ``GOLDMINE_MEMORY_LIMIT``/``GOLDMINE_THREADS`` > ``[store] memory_limit``/``threads`` in
    goldmine.toml. Unset ones are left to DuckDB (80% of RAM, one thread per core)."""
    out: dict[str, tuple[str, str]] = {}
    for name, env in ENGINE_SETTINGS.items():
        value = os.environ.get(env)
        if value:
            out[name] = (value.strip(), env)
            continue
        config = load_config()
        configured = config.get("store", name)
        if configured not in (None, ""):
            out[name] = (str(configured).strip(), f"[store] {name} in {config.path}")
    return out
