"""The TREC Session Track's NIST judgments, with the topics its own log file holds.

``relevacne2012.txt`` judges ClueWeb09 documents for the 48 topics of the 2012 log; the topics'
texts are in ``sessiontrack2012.xml`` itself (``<topic num="1">`` with ``<desc>`` and ``<narr>``,
repeated in every session of that topic), and there is no other topics file. ``--topics`` reads
the log for them, so the NIST judgments come in with no converter.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from goldmine.errors import InputError
from goldmine.goldset.exchange import read_topics

from helpers import gold, run_cli

SESSION_MAP = "-2=0,0=0,1=1,2=2,3=2,4=2"  # spam -2, then 0-4 (the track's graded scale)


def test_the_session_logs_topics_by_field(shared_dataset) -> None:
    path = shared_dataset("datasets", "trec_session_track", "sessiontrack2012.xml")
    desc = read_topics(path, field="desc")
    assert len(desc) == 48
    assert desc["1"].startswith("You are writing a summary article about US tax code 403(b)")
    assert desc["2"].startswith("Suppose you are an employee at a US non-profit organization.")
    assert read_topics(path, field="narr")["1"].startswith("You are writing a summary article")


def test_a_session_log_has_no_titles_and_says_which_field_to_take(shared_dataset) -> None:
    path = shared_dataset("datasets", "trec_session_track", "sessiontrack2012.xml")
    with pytest.raises(InputError, match="--topic-field desc"):
        read_topics(path)


def test_nist_judgments_import_with_the_logs_topics(shared_dataset, tmp_path: Path) -> None:
    folder = shared_dataset("datasets", "trec_session_track")
    db = tmp_path / "g.duckdb"
    result = gold(run_cli, db, "import", str(folder / "relevacne2012.txt"), "--topics",
                  str(folder / "sessiontrack2012.xml"), "--topic-field", "desc",
                  "--grade-map", SESSION_MAP, "--json")  # fmt: skip
    report = json.loads(result.stdout)
    assert report["added"] == 48
    listed = json.loads(gold(run_cli, db, "list", "--json").stdout)
    assert len(listed) == 48
    assert any(i["query"].startswith("You are writing a summary article about US tax code")
               for i in listed)  # fmt: skip
