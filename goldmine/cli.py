"""The ``goldmine`` command: parses arguments, calls a stage's function, prints.

Each stage registers its own command group (``goldmine eval …``, ``goldmine ingest …``) from its
``cli`` module. Errors raised as ``GoldmineError`` become one line on stderr and an exit code;
``--debug`` (anywhere on the line) or ``GOLDMINE_DEBUG=1`` shows the traceback instead.
"""

from __future__ import annotations

import os
import sys
import traceback

import typer

from goldmine import __version__
from goldmine.errors import GoldmineError
from goldmine.options import DbOption, state

app = typer.Typer(
    name="goldmine",
    help="Turn production traffic into a retrieval gold set, and score retrievers against it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        print(f"goldmine {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    db: DbOption = None,
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors."),
) -> None:
    """Turn production traffic into a retrieval gold set, and score retrievers against it."""
    state.db = db


def _register_stages() -> None:
    # Each stage's cli module keeps heavy imports inside its commands, so registering is cheap.
    from goldmine.eval import cli as eval_cli
    from goldmine.goldset import cli as goldset_cli
    from goldmine.ingest import cli as ingest_cli
    from goldmine.triage import cli as triage_cli

    for module in (ingest_cli, triage_cli, goldset_cli, eval_cli):
        module.register(app)


_register_stages()


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = os.environ.get("GOLDMINE_DEBUG", "") not in ("", "0")
    if "--debug" in args:
        args.remove("--debug")
        debug = True
    try:
        app(args=args, prog_name="goldmine")
    except GoldmineError as exc:
        if debug:
            traceback.print_exc()
        print(f"error: {exc.message}", file=sys.stderr)
        sys.exit(exc.exit_code)
