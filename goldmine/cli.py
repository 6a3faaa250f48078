"""The ``goldmine`` command: parses arguments, calls a stage's function, prints.

Each stage registers its own command group (``goldmine eval …``, ``goldmine ingest …``) from its
``cli`` module. Errors raised as ``GoldmineError`` become one line on stderr and an exit code;
``--debug`` (anywhere on the line) or ``GOLDMINE_DEBUG=1`` shows the traceback instead.
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import Iterator
from typing import TYPE_CHECKING

import typer

from goldmine import __version__
from goldmine.config import load_config
from goldmine.errors import EXIT_INTERRUPTED, GoldmineError, InputError, Interrupted
from goldmine.options import DbOption, state
from goldmine.output import forgive_stdout

if TYPE_CHECKING:
    from typer.models import TyperInfo

_app = typer.Typer(
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


@_app.callback()
def root(
    db: DbOption = None,
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors."),
) -> None:
    """Turn production traffic into a retrieval gold set, and score retrievers against it."""

    state.db = db
    load_config()  # goldmine.toml checked once, before any command starts its work


# The stage module that defines each first-level command. Building typer's command tree
# introspects every command's signature (~90 ms for all stages), so main() registers only the
# stage the command line names; --help and unknown commands get them all.
_STAGE_OF = {
    "eval": "eval",
    "ingest": "ingest",
    "add": "ingest",
    "status": "ingest",
    "rejects": "ingest",
    "triage": "triage",
    "gold": "goldset",
}
_STAGES = ("ingest", "triage", "goldset", "eval")
_registered: set[str] = set()


def register_stages(stages: tuple[str, ...] = _STAGES) -> None:
    import importlib

    for stage in stages:
        if stage not in _registered:
            importlib.import_module(f"goldmine.{stage}.cli").register(_app)
            _registered.add(stage)


def __getattr__(name: str) -> typer.Typer:
    """``goldmine.cli.app``: the root app with every stage registered (for tests and tools)."""
    if name == "app":
        register_stages()
        return _app
    raise AttributeError(name)


@contextlib.contextmanager
def _only_invoked_subcommand(args: list[str]) -> Iterator[None]:
    """Keep only the subcommand the line names in its group while the line runs (``eval run``
    builds ``run`` alone): typer introspects every command's options when it builds a group,
    ~10 ms each. The group is whole again afterwards, for a process that calls main() again."""
    positional = _positional(args)
    info = _group(positional[0]) if len(positional) >= 2 else None
    if info is None or info.typer_instance is None:
        yield
        return
    group = info.typer_instance
    whole = group.registered_commands
    chosen = [c for c in whole if (c.name or c.callback.__name__) == positional[1]]
    if chosen:  # else keep them all, so typer's "no such command" lists them
        group.registered_commands = chosen
    try:
        yield
    finally:
        group.registered_commands = whole


def _group(name: str) -> TyperInfo | None:
    """The root's group invoked as ``name``: named when added (``add_typer(eval_app,
    name="eval")``) or by its Typer (``add_typer(gold)``, ``gold = Typer(name="gold")``)."""
    for info in _app.registered_groups:
        own = info.typer_instance.info.name if info.typer_instance is not None else None
        if name in (info.name, own):
            return info
    return None


def _positional(args: list[str]) -> list[str]:
    """The line's words that are no option, the root's ``--db`` value left out."""
    words: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--db":
            skip = True
        elif not arg.startswith("-"):
            words.append(arg)
    return words


def _command_name(args: list[str]) -> str | None:
    """The first positional argument, skipping root options and the --db value."""
    words = _positional(args)
    return words[0] if words else None


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = os.environ.get("GOLDMINE_DEBUG", "") not in ("", "0")
    if "--debug" in args:
        args.remove("--debug")
        debug = True
    forgive_stdout()
    stage = _STAGE_OF.get(_command_name(args) or "")
    register_stages((stage,) if stage else _STAGES)
    try:
        with _only_invoked_subcommand(args if stage else []):
            _app(args=args, prog_name="goldmine")
    except GoldmineError as exc:
        _fail(exc, debug)
    except RecursionError:  # json.loads of a document nested thousands deep, wherever it is read
        _fail(InputError("an input is nested too deeply to read (past Python's recursion limit)"),
              debug)  # fmt: skip
    except SystemExit as exc:
        if not _ctrl_c(exc):
            raise
        _fail(Interrupted(), debug)
    except (Exception, KeyboardInterrupt) as exc:
        from goldmine.store import known_failure

        failed = known_failure(exc)  # out of memory, Ctrl-C, a full disk: not a traceback
        if failed is None:
            raise
        _fail(failed, debug)
    finally:
        if argv is None:  # the program itself, not a caller's process
            _quick_exit()


def _ctrl_c(exc: SystemExit) -> bool:
    """Whether typer's runner ended the command for a Ctrl-C in Python's own code: it turns the
    KeyboardInterrupt into exit 130 and says nothing, where goldmine says what was kept."""
    cause = exc.__context__.__cause__ if exc.__context__ is not None else None
    return exc.code == EXIT_INTERRUPTED and isinstance(cause, KeyboardInterrupt)


def _fail(exc: GoldmineError, debug: bool) -> None:
    if debug:
        traceback.print_exc()
    print(f"{exc.label}: {exc.message}", file=sys.stderr)
    sys.exit(exc.exit_code)


def _quick_exit() -> None:
    """Spare the interpreter's last garbage collections over every object the command made.

    At exit Python collects cycles over all live objects: after ``gold draft --judge llm`` graded
    1,000 candidates that was 0.15 s of the 0.3 s from the last answer to the exit
    (``bench/bench_llm.py``, medians of 4; half a second while the ``openai`` package was
    imported). Frozen objects are skipped; everything that holds a resource (the store, files)
    is closed by then, by its ``with`` block.
    """
    import gc

    gc.freeze()
