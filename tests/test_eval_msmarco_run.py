"""MS MARCO's run format, ``qid<TAB>pid<TAB>rank`` with no header: what the MS MARCO leaderboard's
evaluation script reads and Pyserini writes with ``--output-format msmarco``, so most passage
runs in the wild come as it. It was refused ("a tabular run needs query_id ... columns; found 1,
d2, 1"): its first line was taken for a header.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from goldmine.errors import InputError
from goldmine.readers import read_run

from helpers import run_cli


def test_an_msmarco_run_is_read_by_its_ranks(tmp_path: Path) -> None:
    path = tmp_path / "run.dev.small.tsv"
    path.write_text("1048585\t7187158\t2\n1048585\t7187157\t1\n2\t8\t1\r\n\n2\t9\t2\n")
    run = read_run(path)
    assert run.results == {"1048585": ["7187157", "7187158"], "2": ["8", "9"]}


def test_eval_run_scores_an_msmarco_run_as_trec_eval_scores_its_trec_twin(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.dev.tsv"
    qrels.write_text("1\t0\td1\t1\n2\t0\td3\t1\n")  # MS MARCO's qrels: tab-separated TREC
    msmarco = tmp_path / "run.tsv"
    msmarco.write_text("1\td2\t1\n1\td1\t2\n2\td3\t1\n")
    trec = tmp_path / "run.trec"
    trec.write_text("1 Q0 d2 1 3 t\n1 Q0 d1 2 2 t\n2 Q0 d3 1 3 t\n")
    got = [
        json.loads(
            run_cli("eval", "run", "-g", str(qrels), "-r", str(r), "--no-store", "--json").stdout
        )["metrics"]  # fmt: skip
        for r in (msmarco, trec)
    ]
    assert got[0] == got[1] and got[0]["mrr"] == 0.75


def test_a_line_of_another_width_names_the_layout(tmp_path: Path) -> None:
    path = tmp_path / "run.tsv"
    path.write_text("1\td2\t1\n1\td1\n")
    with pytest.raises(InputError, match=r"qid<TAB>docid<TAB>rank"):
        read_run(path)
