"""goldmine.toml is parsed once into typed settings, validated at load: a wrong value is one line
naming the file and the key (exit 2), never a traceback from deep inside a command."""

from __future__ import annotations

from pathlib import Path

import pytest

from goldmine.config import load_config, settings_of
from goldmine.errors import InputError

from helpers import run_cli_in_process


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "goldmine.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("toml", "says"),
    [
        ('[triage]\nreformulation_window = "ten"\n', "[triage] reformulation_window"),
        ("[eval]\nk_prompt = 0\n", "[eval] k_prompt"),
        ('[models]\nthreads = "many"\n', "[models] threads"),
        ('[llm]\nconcurrency = "4x"\n', "[llm] concurrency"),
        ("[llm]\njson_mode = 3\n", "[llm] json_mode"),
        ("[eval]\nmetrics = 5\n", "[eval] metrics"),
        ('[eval]\nmetrics = ["recall@10", "ndgc@10"]\n', "unknown metric 'ndgc@10'"),
        ('[eval]\nmetrics = "recall@10,mrr@0"\n', "[eval] metrics"),
        ('store = "x"\n', "[store]"),
        ('[triage]\nno_answer_retriever = "bm52"\n', "[triage] no_answer_retriever"),
        ("[llm]\ntimeout = nan\n", "[llm] timeout"),
        ("[llm]\ntimeout = inf\n", "[llm] timeout"),
        ('[llm]\ntimeout = "nan"\n', "[llm] timeout"),
        ('[llm]\ntimeout = "soon"\n', "[llm] timeout"),
        ("[llm]\ntemperature = nan\n", "[llm] temperature"),
        ("[llm]\nprice_in_per_mtok = nan\n", "[llm] price_in_per_mtok"),
    ],
)
def test_a_wrong_value_names_the_file_and_the_key(cli, tmp_path, toml, says) -> None:
    path = write(tmp_path, toml)
    out = cli("gold", "list", "--db", str(tmp_path / "none.duckdb"), cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    line = out.stderr.strip()
    assert line.startswith("error: ") and "\n" not in line and "Traceback" not in out.stderr
    assert says in line and str(path) in line


def test_settings_are_typed_with_defaults(tmp_path, monkeypatch) -> None:
    write(
        tmp_path,
        '[triage]\nreformulation_window = 600\n[eval]\nmetrics = ["mrr", "ndcg@10"]\n'
        "[models]\nthreads = 2\n[llm]\ntimeout = 5\n",
    )
    monkeypatch.chdir(tmp_path)
    settings = settings_of(load_config())
    assert settings.triage.reformulation_window == 600
    assert settings.triage.no_answer_retriever == "bm25"
    assert settings.eval.metrics == "mrr,ndcg@10" and settings.eval.k_candidates == 50
    assert settings.models.threads == 2 and settings.store.threads is None
    assert settings.llm.timeout == 5.0 and isinstance(settings.llm.timeout, float)


def test_an_unknown_key_is_named_with_the_nearest_known_one(cli, tmp_path) -> None:
    write(tmp_path, "[triage]\nreformulaton_window = 600\n")
    out = cli("gold", "list", "--db", str(tmp_path / "none.duckdb"), cwd=tmp_path)
    assert "unknown key [triage] reformulaton_window" in out.stderr
    assert "reformulation_window" in out.stderr.split("unknown key", 1)[1]


@pytest.mark.parametrize(
    ("toml", "section"), [('db = "x.duckdb"\n', "store"), ("k_prompt = 5\n[eval]\n", "eval")]
)
def test_a_key_outside_any_section_names_the_section_it_belongs_in(
    cli, tmp_path, toml, section
) -> None:
    """A key written above every section (``db = ...`` at the file's top) was called an unknown
    section [db]; it is a key outside its section, and the warning says which one."""
    write(tmp_path, toml)
    out = cli("gold", "list", "--db", str(tmp_path / "none.duckdb"), cwd=tmp_path)
    key = toml.split(" ", 1)[0]
    assert f"{key} is outside any section: put it under [{section}]" in out.stderr, out.stderr
    assert "unknown section" not in out.stderr


def test_numbers_written_as_strings_are_read_alike_for_every_key(tmp_path, monkeypatch) -> None:
    """A whole number in quotes was read (``k_prompt = "5"``) but a decimal one was refused
    (``timeout = "30"``: "must be a number above 0"): every number reads either way."""
    write(
        tmp_path,
        '[eval]\nk_prompt = "7"\n[llm]\ntimeout = "30"\ntemperature = " 0.2 "\n'
        'price_in_per_mtok = "0.15"\n',
    )
    monkeypatch.chdir(tmp_path)
    settings = settings_of(load_config())
    assert settings.eval.k_prompt == 7 and settings.llm.timeout == 30.0
    assert settings.llm.temperature == 0.2 and settings.llm.price_in_per_mtok == 0.15


def test_a_bad_value_is_an_input_error_in_python_too(tmp_path, monkeypatch) -> None:
    write(tmp_path, "[store]\nthreads = -1\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match=r"\[store\] threads"):
        settings_of(load_config())


@pytest.mark.parametrize("kind", ["missing", "folder"])
def test_goldmine_config_naming_no_file_is_one_line(tmp_path, kind):
    """GOLDMINE_CONFIG naming a missing file or a folder ended in a traceback."""
    named = tmp_path / "nope.toml"
    if kind == "folder":
        named.mkdir()
    result = run_cli_in_process("status", env={"GOLDMINE_CONFIG": str(named)}, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "GOLDMINE_CONFIG" in result.stderr and "Traceback" not in result.stderr


def test_a_bom_written_by_an_editor_is_read(tmp_path, monkeypatch) -> None:
    """Notepad saves 'UTF-8 with BOM': the file was refused as 'Invalid statement (at line 1,
    column 1)', a character the user cannot see."""
    (tmp_path / "goldmine.toml").write_bytes(b'\xef\xbb\xbf[store]\r\ndb = "x.duckdb"\r\n')
    monkeypatch.chdir(tmp_path)
    assert settings_of(load_config()).store.db == "x.duckdb"


def test_a_file_not_in_utf8_is_one_line(cli, tmp_path) -> None:
    """A toml saved as Latin-1 ended in a UnicodeDecodeError traceback, exit 1."""
    path = tmp_path / "goldmine.toml"
    path.write_bytes(b'[store]\ndb = "caf\xe9.duckdb"\n')
    out = cli("gold", "list", "--db", str(tmp_path / "none.duckdb"), cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    line = out.stderr.strip()
    assert line.startswith("error: ") and "\n" not in line and "Traceback" not in out.stderr
    assert str(path) in line and "UTF-8" in line and "line 2" in line


def test_the_no_answer_retrievers_are_retrievals_own() -> None:
    """[triage] no_answer_retriever = "bm52" passed the load and only warned 'no-answer-likely
    skipped' in the middle of triage run, exit 0; the config checks it against this list."""
    from goldmine.config import RETRIEVER_KINDS
    from goldmine.retrieval import KINDS

    assert RETRIEVER_KINDS == KINDS
