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


def test_the_layouts_of_msmarco_runs_other_tools_write(tmp_path: Path) -> None:
    """``qid pid rank score`` (four columns), a header row (``qid pid rank``, ``QueryId DocId
    Score``), Excel's semicolons: each was refused ("this one has 4 fields", "cannot tell the
    run format")."""
    want = {"1": ["d1", "d2"], "2": ["d3"]}
    files = {
        "four.tsv": "1\td2\t2\t3.5\n1\td1\t1\t7.25\n2\td3\t1\t1.0\n",
        "header.tsv": "qid\tpid\trank\n1\td2\t2\n1\td1\t1\n2\td3\t1\n",
        "topics.tsv": "topic\tdocno\tscore\n1\td2\t0.5\n1\td1\t0.9\n2\td3\t0.1\n",
        "words.csv": "QueryId,DocId,Score\n1,d2,0.5\n1,d1,0.9\n2,d3,0.1\n",
        "excel.csv": "query_id;doc_id;score\n1;d2;0,5\n1;d1;0,9\n2;d3;0,1\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        assert read_run(tmp_path / name).results == want, name


def test_a_third_column_of_scores_is_not_read_as_ranks(tmp_path: Path) -> None:
    """``q1 d1 87`` (a score) was read as rank 87, the order reversed, exit 0."""
    path = tmp_path / "scores.tsv"
    path.write_text("q1\td1\t87\nq1\td2\t54\nq1\td3\t12\n")
    with pytest.raises(InputError, match="rank"):
        read_run(path)


def test_a_topic_column_beside_the_query_text_keys_nothing(tmp_path: Path) -> None:
    path = tmp_path / "trun.csv"
    path.write_text("query,topic,doc_id,rank\nReset password,account,d1,1\nbilling,billing,d2,1\n")
    run = read_run(path)
    assert run.keyed_by == "text" and run.results == {"Reset password": ["d1"], "billing": ["d2"]}


def test_msmarco_qrels_given_as_a_run_are_named(tmp_path: Path) -> None:
    path = tmp_path / "qrels.dev.tsv"
    path.write_text("1\t0\t2026790\t1\n2\t0\t3333\t1\n")
    with pytest.raises(InputError, match="this is TREC qrels"):
        read_run(path)


@pytest.mark.parametrize(
    ("data", "words"),
    [(b"# run made by bm25\n\n# nothing yet\n", "only # comment lines"),
     (b"PK\x03\x04" + b"\x00" * 40, "zip archive")],
)  # fmt: skip
def test_a_run_that_ranks_nothing_or_is_zipped_says_so(tmp_path: Path, data, words) -> None:
    path = tmp_path / "r.trec"
    path.write_bytes(data)
    with pytest.raises(InputError, match=words):
        read_run(path)


def test_a_run_of_no_answer_queries_alone_names_them(tmp_path: Path) -> None:
    gold = tmp_path / "g.jsonl"
    gold.write_text('{"query_id": "a1", "query": "x", "relevant": ["d1"]}\n'
                    '{"query_id": "n1", "query": "y", "relevant": []}\n')  # fmt: skip
    run = tmp_path / "r.trec"
    run.write_text("n1 Q0 d9 1 1.0 r\n")
    out = run_cli("eval", "run", "-g", str(gold), "-r", str(run), "--no-store")
    assert out.returncode == 2 and "n1 (only queries the gold has no answer for)" in out.stderr
