"""A stdout that cannot encode every character: `PYTHONIOENCODING=ascii`, a Latin-1 locale, a CI
runner's pipe set up by a tool that names an encoding.

Queries are German, Chinese and emoji; `goldmine gold list --json` there crashed with a
UnicodeEncodeError traceback and printed nothing (exit 1), as did every table holding such a
query. JSON then escapes those characters (`\\u00e4`, still the same document for `jq` and
`json.loads`); a table shows what it cannot encode as `?`.
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers import run_cli

QUERY = "Größe der Tragfläche 翼 😱"
ASCII = {"PYTHONIOENCODING": "ascii"}


def _store(db: Path) -> str:
    added = run_cli("--db", str(db), "gold", "add-query", QUERY)
    assert added.returncode == 0, added.stderr
    return added.stdout.split("\t")[1]


def test_json_on_an_ascii_stdout_is_escaped_not_a_traceback(db_path: Path) -> None:
    qid = _store(db_path)
    for args in (("gold", "list", "--json"), ("gold", "show", qid, "--json")):
        out = run_cli("--db", str(db_path), *args, env=ASCII)
        assert out.returncode == 0, out.stderr
        assert "Traceback" not in out.stderr
        assert out.stdout.isascii()
        text = json.dumps(json.loads(out.stdout), ensure_ascii=False)
        assert QUERY in text


def test_a_table_on_an_ascii_stdout_replaces_what_it_cannot_encode(db_path: Path) -> None:
    qid = _store(db_path)
    for args in (("gold", "list"), ("gold", "show", qid)):
        out = run_cli("--db", str(db_path), *args, env=ASCII)
        assert out.returncode == 0, out.stderr
        assert "Traceback" not in out.stderr
        assert "Gr??e der Tragfl?che" in out.stdout
