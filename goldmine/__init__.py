"""goldmine: turn production traffic into a retrieval gold set, and score retrievers against it.

The core package holds what the four stages share: the DuckDB store and its migrations, config
resolution, errors, text utilities and the CLI entry. The stages themselves live in
``goldmine.ingest``, ``goldmine.triage``, ``goldmine.goldset`` and ``goldmine.eval``.

From Python::

    import goldmine

    result = goldmine.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 0.9, "d2": 0.5}})
    result.mean                                   # {'recall@5': 1.0, 'mrr': 1.0, 'ndcg@10': 1.0}
    goldmine.compare(gold, run_a, run_b)          # paired test, interval, verdict
    goldmine.Store("goldmine.duckdb").gold("v3")  # a published version to score against

The names below are resolved on first use (module ``__getattr__``): ``import goldmine`` costs
nothing, and scoring two dicts imports the metrics alone, no DuckDB, dataframe or model library.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> the module that defines it
_LAZY = {
    "evaluate": "goldmine.api",
    "compare": "goldmine.api",
    "Evaluation": "goldmine.api",
    "Compared": "goldmine.api",
    "Store": "goldmine.stored",
    "GoldSet": "goldmine.stored",
    "GoldmineError": "goldmine.errors",
    "InputError": "goldmine.errors",
    "NotFoundError": "goldmine.errors",
    "StoreError": "goldmine.errors",
    "StoreBusyError": "goldmine.errors",
}
_SUBMODULES = ("testing",)

__all__ = [  # = __version__, _LAZY and _SUBMODULES (a literal, so linters and IDEs read it)
    "Compared",
    "Evaluation",
    "GoldSet",
    "GoldmineError",
    "InputError",
    "NotFoundError",
    "Store",
    "StoreBusyError",
    "StoreError",
    "__version__",
    "compare",
    "evaluate",
    "testing",
]

if TYPE_CHECKING:  # what type checkers and IDEs see; nothing is imported at run time
    from goldmine import testing
    from goldmine.api import Compared, Evaluation, compare, evaluate
    from goldmine.errors import (
        GoldmineError,
        InputError,
        NotFoundError,
        StoreBusyError,
        StoreError,
    )
    from goldmine.stored import GoldSet, Store


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
    elif name in _SUBMODULES:
        value = import_module(f"goldmine.{name}")
    else:
        raise AttributeError(f"module 'goldmine' has no attribute {name!r}")
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
