"""Configuration, resolved once: command-line flag > environment variable > goldmine.toml > default.

``goldmine.toml`` is looked for in the current directory and its parents (the user's repository),
so commands run from a subfolder still find the project's store and settings. It is parsed once
into one typed settings object per section (``StoreSettings``, ``TriageSettings``, …), validated
when it is loaded: a wrong value is one error naming the file and the key, before any command
starts its work, and an unknown key (a typo) is a warning naming the nearest known one.
"""

from __future__ import annotations

import difflib
import math
import os
import sys
import tomllib
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

from goldmine.errors import InputError

# --- the settings, one typed object per section -----------------------------------------------


def _whole(minimum: int) -> Any:
    def check(value: Any) -> int:
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value.strip())
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"must be a whole number of at least {minimum}")
        return value

    return check


def _finite(value: Any) -> float | None:
    """A TOML int or float, or a string of one (read alike, as ``_whole`` reads ``"5"``), other
    than nan and ±inf (which TOML allows, and every comparison with nan is false, so
    ``nan <= 0`` let it through); None for anything else."""
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _number(value: Any) -> float:
    number = _finite(value)
    if number is None or number <= 0:
        raise ValueError("must be a number above 0")
    return number


def _any_number(value: Any) -> float:
    number = _finite(value)
    if number is None:
        raise ValueError("must be a number")
    return number


def _price(value: Any) -> float:
    number = _finite(value)
    if number is None or number < 0:
        raise ValueError("must be a number of at least 0 (a price per million tokens)")
    return number


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a non-empty string")
    return value.strip()


# goldmine.retrieval.KINDS, named here so that reading the config imports no retrieval code.
RETRIEVER_KINDS = ("bm25", "dense", "hybrid")


def _retriever(value: Any) -> str:
    kind = value.strip().lower() if isinstance(value, str) else None
    if kind not in RETRIEVER_KINDS:
        raise ValueError(f"must be one of {', '.join(RETRIEVER_KINDS)}")
    return kind


def _size(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int) or not str(value).strip():
        raise ValueError('must be a size such as "2GB"')
    return str(value).strip()


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("must be true or false")
    return value


def _metric_list(value: Any) -> str:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        value = ",".join(value)
    if not isinstance(value, str) or not value.strip():
        raise ValueError('must be a list of metric names or a string such as "mrr,ndcg@10"')
    from goldmine.metrics import parse_metrics

    try:  # a misspelt name is said when the file is read, not when an eval first uses it
        parse_metrics(value)
    except InputError as exc:
        raise ValueError(f"holds {exc.message}") from None
    return value


def _patterns(value: Any) -> dict[str, str] | list[str]:
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise ValueError('must be a table of NAME = "REGEX" or a list of "NAME=REGEX"')


def _regions(value: Any) -> tuple[str, ...]:
    # The codes themselves are checked against phonenumbers' regions when a redactor is made.
    if isinstance(value, list) and value and all(isinstance(v, str) and len(v) == 2 for v in value):
        return tuple(v.upper() for v in value)
    raise ValueError('must be a list of two-letter region codes such as ["US", "GB", "FR"]')


@dataclass(frozen=True)
class StoreSettings:
    db: str | None = None
    memory_limit: str | None = None
    threads: int | None = None


@dataclass(frozen=True)
class IngestSettings:
    redact_patterns: dict[str, str] | list[str] | None = None
    # Regions a phone number written without + or 00 may be from (None: US, GB, DE, FR, IN).
    pii_regions: tuple[str, ...] | None = None
    # The default of `add`'s --redact/--no-redact and of gold add-query's and notes' (None: on).
    redact: bool | None = None


@dataclass(frozen=True)
class TriageSettings:
    reformulation_window: int | None = None  # seconds; None: the pipeline's default
    no_answer_retriever: str = "bm25"


@dataclass(frozen=True)
class EmbedSettings:
    backend: str | None = None


@dataclass(frozen=True)
class ModelsSettings:
    threads: int | None = None


@dataclass(frozen=True)
class EvalSettings:
    metrics: str | None = None
    k_prompt: int = 5
    k_candidates: int = 50
    history: str | None = None


@dataclass(frozen=True)
class LlmSettings:
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    concurrency: int | None = None
    timeout: float | None = None  # seconds for a whole request, retries included
    max_retries: int | None = None
    max_failures: int | None = None  # endpoint failures in a row that end a run; 0: never
    json_mode: bool = True
    temperature: float = 0.0
    # What a million prompt (in) and completion (out) tokens cost, in any currency: a model
    # run's usage line then gives its cost. Unset: no cost is claimed.
    price_in_per_mtok: float | None = None
    price_out_per_mtok: float | None = None


# section -> (its settings class, key -> check); a check returns the typed value or raises
# ValueError saying what the value must be.
SECTIONS: dict[str, tuple[type, dict[str, Any]]] = {
    "store": (StoreSettings, {"db": _text, "memory_limit": _size, "threads": _whole(1)}),
    "ingest": (
        IngestSettings,
        {"redact_patterns": _patterns, "redact": _flag, "pii_regions": _regions},
    ),
    "triage": (
        TriageSettings,
        {"reformulation_window": _whole(0), "no_answer_retriever": _retriever},
    ),
    "embed": (EmbedSettings, {"backend": _text}),
    "models": (ModelsSettings, {"threads": _whole(1)}),
    "eval": (
        EvalSettings,
        {
            "metrics": _metric_list,
            "k_prompt": _whole(1),
            "k_candidates": _whole(1),
            "history": _text,
        },
    ),  # fmt: skip
    "llm": (
        LlmSettings,
        {
            "base_url": _text,
            "model": _text,
            "api_key_env": _text,
            "concurrency": _whole(1),
            "timeout": _number,
            "max_retries": _whole(0),
            "max_failures": _whole(0),
            "json_mode": _flag,
            "temperature": _any_number,
            "price_in_per_mtok": _price,
            "price_out_per_mtok": _price,
        },
    ),  # fmt: skip
}


@dataclass(frozen=True)
class Settings:
    """Every section's settings, typed; a section absent from the file has its defaults."""

    store: StoreSettings = field(default_factory=StoreSettings)
    ingest: IngestSettings = field(default_factory=IngestSettings)
    triage: TriageSettings = field(default_factory=TriageSettings)
    embed: EmbedSettings = field(default_factory=EmbedSettings)
    models: ModelsSettings = field(default_factory=ModelsSettings)
    eval: EvalSettings = field(default_factory=EvalSettings)
    llm: LlmSettings = field(default_factory=LlmSettings)


def _nearest(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f" (did you mean {close[0]}?)" if close else f" (known: {', '.join(known)})"


def _unknown_name(name: str, value: Any) -> str:
    """What a top-level name that is no section is: a section's key written above every
    section header (TOML puts it at the top level), or an unknown section."""
    owners = [section for section, (_, checks) in SECTIONS.items() if name in checks]
    if not isinstance(value, dict) and owners:
        return f"{name} is outside any section: put it under [{owners[0]}]; it is not read"
    return f"unknown section [{name}]{_nearest(name, list(SECTIONS))}"


def parse_settings(data: dict[str, Any], path: Path | None) -> Settings:
    """Check every known key of ``data`` and build the typed sections; unknown keys warn."""
    where = str(path) if path is not None else "goldmine.toml"
    sections: dict[str, Any] = {}
    for name, value in data.items():
        if name not in SECTIONS:
            _warn(f"{where}: {_unknown_name(name, value)}")
            continue
        if not isinstance(value, dict):
            raise InputError(f"[{name}] must be a table of settings", path=path)
        cls, checks = SECTIONS[name]
        typed: dict[str, Any] = {}
        for key, raw in value.items():
            if name == "llm" and key == "api_key":
                raise InputError(
                    "[llm] holds a key: put it in an environment variable and name that "
                    "variable with api_key_env (a key in a file ends up in a repository)",
                    path=path,
                )
            if key not in checks:
                # Kept for code that reads it raw (a section's newer keys); a typo is named.
                _warn(f"{where}: unknown key [{name}] {key}{_nearest(key, list(checks))}")
                continue
            try:
                typed[key] = checks[key](raw)
            except ValueError as exc:
                raise InputError(f"[{name}] {key} {exc}, not {raw!r}", path=path) from None
        known = {f.name for f in fields(cls)}
        sections[name] = cls(**{k: v for k, v in typed.items() if k in known})
    return Settings(**sections)


def _warn(message: str) -> None:
    # Plain stderr: the config is read before any console exists, and by every command.
    print(f"warning: {message}", file=sys.stderr)


DEFAULT_DB = "goldmine.duckdb"
CONFIG_NAME = "goldmine.toml"
DB_ENV = "GOLDMINE_DB"


@dataclass(frozen=True)
class Config:
    """The parsed ``goldmine.toml`` (empty when there is none), where it was found, and its
    typed, validated ``settings``."""

    path: Path | None = None
    data: dict[str, Any] = field(default_factory=dict)
    settings: Settings = field(default_factory=Settings)

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
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read it: {exc.strerror or exc}", path=path) from None
    try:
        # utf-8-sig: an editor's BOM ("UTF-8 with BOM") is no TOML error the user could see.
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(
            f"not UTF-8 (byte {raw[exc.start]:#04x} on line {line}): save it as UTF-8", path=path
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", path=path) from exc
    return Config(path=path, data=data, settings=parse_settings(data, path))


def settings_of(config: Config) -> Settings:
    return config.settings


def settings() -> Settings:
    """The project's typed settings (goldmine.toml as found from here)."""
    return load_config().settings


def load_config(start: Path | None = None) -> Config:
    """The project's config; ``GOLDMINE_CONFIG`` names a file explicitly."""
    explicit = os.environ.get("GOLDMINE_CONFIG")
    if explicit:
        named = Path(explicit).expanduser().resolve()
        if not named.is_file():
            raise InputError(
                f"GOLDMINE_CONFIG names no file: {explicit} "
                f"({'a folder' if named.is_dir() else 'not found'})"
            )
        return _load(named)
    return _load(find_config_file(start))


def resolve_db_path(flag: str | Path | None = None) -> Path:
    """Where the store lives: --db > GOLDMINE_DB > [store] db in goldmine.toml > default.

    A relative path in goldmine.toml is taken relative to the toml file, so it means the same
    from any subfolder.
    """
    # "~/g.duckdb" as a shell would read it: from Python, or an env var set in quotes.
    if flag:
        return Path(flag).expanduser()
    env = os.environ.get(DB_ENV)
    if env:
        return Path(env).expanduser()
    config = load_config()
    configured = config.settings.store.db
    if configured:
        path = Path(configured).expanduser()
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
            out[name] = (_engine_value(name, value.strip(), env), env)
            continue
        config = load_config()
        configured = getattr(config.settings.store, name)
        if configured not in (None, ""):
            where = f"[store] {name} in {config.path}"
            out[name] = (_engine_value(name, str(configured).strip(), where), where)
    return out


def _engine_value(name: str, value: str, where: str) -> str:
    """What DuckDB would take without a word but not as meant: threads of 2.5 (it rounds to 3)
    and a negative memory limit (-1GB: no limit at all). Its own errors name the rest."""
    if name == "threads" and not (value.isdigit() and int(value) >= 1):
        raise InputError(f"{where} must be a whole number of at least 1, not {value!r}")
    if name == "memory_limit" and value.startswith("-"):
        raise InputError(f'{where} must be a size such as "2GB", not {value!r}')
    return value
