"""The tests' in-process CLI runner (``helpers.run_cli``) answers as ``python -m goldmine`` does.

Most tests run the command in the test's own process, sparing ~0.5 s of imports per call; these
check that what they see is what a user's subprocess shows, and that no call leaves state behind
for the next one (an environment variable, the folder, settings read from a goldmine.toml, the
commands ``main`` prunes from a group, rich consoles sized at first use).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pytest

from helpers import ROOT, run_cli, run_cli_in_process, run_cli_subprocess

SEED = ROOT / "data" / "seed"


def _seed_run(db: Path, *more: str) -> list[str]:
    return ["eval", "run", "-g", str(SEED / "gold.json"), "-r", str(SEED / "runs.json"),
            "-m", "recall@1,mrr", "--db", str(db), *more]  # fmt: skip


@pytest.mark.parametrize(
    "args",
    [
        ["--version"],
        ["eval", "--help"],
        ["gold", "nope"],
        ["eval", "run", "-g", "missing.json", "-r", "missing.run"],
    ],
)
def test_in_process_output_and_exit_code_are_a_subprocess_s(args: list[str], tmp_path) -> None:
    ours, theirs = run_cli_in_process(*args), run_cli_subprocess(*args)
    assert (ours.returncode, ours.stdout, ours.stderr) == (
        theirs.returncode,
        theirs.stdout,
        theirs.stderr,
    )


def test_an_error_is_one_line_on_stderr_and_exit_2_with_stdout_apart(tmp_path: Path) -> None:
    result = run_cli_in_process("eval", "run", "-g", str(tmp_path / "none.json"), "-r", "x")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1


def test_each_call_finds_every_command_of_its_group(tmp_path: Path) -> None:
    """main() keeps only the named subcommand in its group; the next call needs the others."""
    db = tmp_path / "store.duckdb"
    assert run_cli_in_process(*_seed_run(db)).returncode == 0
    listed = run_cli_in_process("eval", "runs", "--db", str(db), "--json")
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) == 1


def test_env_folder_and_goldmine_toml_apply_to_one_call_only(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "goldmine.toml").write_text('[store]\ndb = "from-toml.duckdb"\n')
    no_db = _seed_run(Path("unused"))[:-2]
    assert run_cli_in_process(*no_db, cwd=project).returncode == 0
    assert (project / "from-toml.duckdb").is_file()
    assert Path.cwd() == tmp_path  # the fixture's folder, not the call's

    elsewhere = run_cli_in_process("eval", "runs", "--json")
    assert elsewhere.returncode == 2
    assert "no goldmine store at goldmine.duckdb" in elsewhere.stderr  # not the last call's toml

    toml_db = str(project / "from-toml.duckdb")
    named = run_cli_in_process("eval", "runs", env={"GOLDMINE_DB": toml_db})
    assert named.returncode == 0, named.stderr
    assert "GOLDMINE_DB" not in os.environ


def test_tables_are_as_wide_as_columns_says_in_every_call(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    run_cli_in_process(*_seed_run(db))
    narrow = {"COLUMNS": "40"}
    ours = [run_cli_in_process("eval", "runs", "--db", str(db), env=e) for e in (narrow, None)]
    theirs = [run_cli_subprocess("eval", "runs", "--db", str(db), env=e) for e in (narrow, None)]
    assert [r.stdout for r in ours] == [r.stdout for r in theirs]
    assert ours[0].stdout != ours[1].stdout


def test_the_switch_sends_every_call_to_a_subprocess(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GOLDMINE_TEST_SUBPROCESS", "1")
    assert run_cli("--version").args[1:3] == ["-m", "goldmine"]
    monkeypatch.delenv("GOLDMINE_TEST_SUBPROCESS")
    assert run_cli("--version").args == ["goldmine", "--version"]


@pytest.mark.parametrize(
    ("raised", "code", "said"),
    [
        # Ctrl-C reaches DuckDB first: its query stops with its own exception
        (lambda: duckdb.InterruptException("INTERRUPT Error: Interrupted!"), 130, "interrupted"),
        (lambda: RuntimeError("Query interrupted"), 130, "interrupted"),
        # Ctrl-C in Python's own code: the command line's runner (typer) ended it quietly (130
        # and no word), while the docs promise the interrupted line
        (KeyboardInterrupt, 130, "interrupted: stopped (ctrl-c)"),
        (
            lambda: duckdb.IOException(
                'IO Error: Could not write file "s.duckdb": No space left on device'
            ),
            1,
            "no space left on device",
        ),
        (
            lambda: duckdb.TransactionException(
                'TransactionException: Failed to commit: Cannot open file "s.duckdb.wal": '
                "Operation not permitted"
            ),
            1,
            "its folder must be writable",
        ),
    ],
    ids=["duckdb-interrupt", "query-interrupted", "keyboard", "disk-full", "folder-read-only"],
)
def test_ctrl_c_and_a_full_disk_are_one_line(tmp_path, monkeypatch, raised, code, said):
    """Ctrl-C during an import, or a disk that fills up, ended in a traceback and exit 1: one
    line now, 130 for an interrupt (as a shell counts one), 1 for the disk; the unfinished
    step stored nothing (each is one transaction)."""
    from goldmine.ingest import batch

    def fail(*_args, **_kwargs):
        raise raised()

    monkeypatch.setattr(batch, "import_source", fail)
    log = tmp_path / "log.jsonl"
    log.write_text('{"event_id": "e1", "query": "refund"}\n')
    result = run_cli_in_process("ingest", "searchlog", str(log), "--db", str(tmp_path / "s.db"))
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr and said in result.stderr.lower()
    assert len(result.stderr.strip().splitlines()) == (1 if said else 0), result.stderr
