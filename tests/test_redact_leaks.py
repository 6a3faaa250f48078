"""What a file holds never reaches the terminal through an error, nor a store past redaction.

Real files as the tools write them (a Zendesk export cut short, a chat export that is no JSON), a
real store, and the command's own stderr: DuckDB's JSON reader quotes the start of the text it
could not parse, which held the customer's address and key.
"""

from __future__ import annotations

import json

from helpers import run_cli

KEY = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
EMAIL = "jane.doe@example.com"


def test_a_json_file_that_does_not_parse_is_named_without_its_text(tmp_path, db_path):
    ticket = {"id": 1, "subject": f"card declined {KEY}", "requester": {"email": EMAIL}}
    cut = json.dumps({"tickets": [ticket]})[:-10]  # a download that ended early
    (tmp_path / "tickets.json").write_text(cut)
    (tmp_path / "notes.json").write_text(f"from {EMAIL}: {KEY} is our key\n")
    for command, name in (("tickets", "tickets.json"), ("chat", "notes.json")):
        out = run_cli("--db", str(db_path), "ingest", command, str(tmp_path / name))
        assert out.returncode == 2, out.stderr
        assert "cannot read as json" in out.stderr and "byte" in out.stderr
        for secret in (KEY, "sk_live", "jane", "declined"):
            assert secret not in out.stderr, out.stderr
