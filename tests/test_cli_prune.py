"""main() builds only the subcommand a line names, and leaves the app whole for the next call.

typer introspects every command of a group when it builds it (~10 ms each), so ``main`` keeps
the named subcommand alone while the line runs. It must do so for every group, however it was
added to the root app (``add_typer(app, name="eval")`` or ``add_typer(gold)`` with the name on
the Typer), and it must put the group back: a process that calls ``main`` again (a test runner,
a notebook, a tool built on the CLI) asks for another of its commands.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import goldmine.cli as cli

# Calls main() once per argument list in one process and prints each exit code.
_TWICE = """
import json, sys
from goldmine.cli import main
for args in json.loads(sys.argv[1]):
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    print("EXIT", code, flush=True)
"""


def _in_one_process(*calls: list[str], cwd: Path) -> subprocess.CompletedProcess:
    import json

    return subprocess.run(
        [sys.executable, "-c", _TWICE, json.dumps(list(calls))],
        capture_output=True, text=True, timeout=120, cwd=cwd,
    )  # fmt: skip


def test_a_second_call_in_one_process_finds_the_other_commands_of_its_group(
    tmp_path: Path,
) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"query_id": "q1", "query": "a", "relevant": ["d1"]}\n')
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n")
    done = _in_one_process(
        ["eval", "run", "-g", str(gold), "-r", str(run), "--no-store"],
        ["eval", "compare", "--help"],
        ["gold", "show", "--help"],
        ["gold", "list", "--help"],
        cwd=tmp_path,
    )
    assert done.stdout.count("EXIT 0") == 4, done.stdout + done.stderr
    assert "No such command" not in done.stderr
    assert "Usage: goldmine eval compare" in done.stdout
    assert "Usage: goldmine gold list" in done.stdout


def _commands(group: str) -> list[str]:
    """The names of the commands the root app's group ``group`` holds now."""
    for info in cli._app.registered_groups:
        typer_app = info.typer_instance
        if typer_app is not None and group in (info.name, typer_app.info.name):
            return [c.name or c.callback.__name__ for c in typer_app.registered_commands]
    raise AssertionError(f"no group {group}")


@pytest.mark.parametrize(
    ("args", "group", "sub"),
    [
        (["gold", "show", "q1"], "gold", "show"),  # add_typer(gold): the name is the Typer's
        (["ingest", "tickets", "x.csv"], "ingest", "tickets"),
        (["eval", "run", "-g", "g.jsonl"], "eval", "run"),  # add_typer(eval_app, name="eval")
        (["--db", "s.duckdb", "gold", "show", "q1"], "gold", "show"),  # past the root's --db
    ],
)
def test_a_line_keeps_its_subcommand_alone_while_it_runs_and_then_the_group_whole(
    args: list[str], group: str, sub: str
) -> None:
    cli.register_stages()
    whole = _commands(group)
    assert len(whole) > 1
    with cli._only_invoked_subcommand(args):
        assert _commands(group) == [sub]
    assert _commands(group) == whole


def test_an_unknown_subcommand_keeps_the_group_whole_for_typer_to_list() -> None:
    cli.register_stages()
    whole = _commands("gold")
    with cli._only_invoked_subcommand(["gold", "nope"]):
        assert _commands("gold") == whole
