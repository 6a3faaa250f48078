"""Options every command shares, declared once (STYLE: shared options are defined in one place)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from goldmine.store import Store

DbOption = Annotated[
    Path | None,
    typer.Option(
        "--db",
        help="DuckDB store file. Default: $GOLDMINE_DB, then [store] db in goldmine.toml, "
        "then ./goldmine.duckdb.",
        show_default=False,
        dir_okay=False,
    ),
]

JsonOption = Annotated[
    bool,
    typer.Option("--json", help="Print machine-readable JSON on stdout instead of tables."),
]


class _State:
    """Values given to the root command (``goldmine --db X eval run``) for subcommands to use."""

    db: Path | None = None


state = _State()


def db_flag(db: Path | None) -> Path | None:
    """The subcommand's ``--db``, else the root's; config resolution does the rest."""
    return db if db is not None else state.db


def store_flag(db: Path | None) -> Store:
    """The store a command works on: ``--db`` (the subcommand's, else the root's) >
    ``GOLDMINE_DB`` > goldmine.toml > the default, resolved here once; stages take this object,
    never a path."""
    from goldmine.store import Store

    return Store(db_flag(db), write=True)
