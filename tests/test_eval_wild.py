"""``eval run`` on qrels and runs as other teams write them: what trec_eval reads (comment lines,
gzip as ir_datasets reads it, a header row, grades written 1.0) is read the same, and what it
refuses (a judgment given twice with two grades) stops with one line naming both lines, never a
silent choice of one grade."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from goldmine.errors import InputError
from goldmine.readers import LARGE_FILE_BYTES, read_gold

QRELS = "1 0 d1 1\n1 0 d2 0\n2 0 d3 2\n2 0 d4 1\n"
RUN = "1 Q0 d2 1 2.0 r\n1 Q0 d1 2 1.0 r\n2 Q0 d4 1 3.5e0 r\n2 Q0 d3 2 1e-3 r\n"
METRICS = "mrr,ndcg,recall@1"


def scored(cli, tmp_path: Path, qrels: str | bytes, run: str | bytes, name: str = "x") -> dict:
    """``eval run --json`` on the two files; the metrics, or the failed result itself."""
    gold_path, run_path = tmp_path / f"{name}.qrels", tmp_path / f"{name}.run"
    for path, data in ((gold_path, qrels), (run_path, run)):
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    result = cli("eval", "run", "--gold", str(gold_path), "--run", str(run_path), "-m", METRICS,
                 "--json", "--no-store", "--db", str(tmp_path / "s.duckdb"))  # fmt: skip
    if result.returncode:
        return {"returncode": result.returncode, "stderr": result.stderr}
    out = json.loads(result.stdout)
    return {"metrics": out["metrics"], "n_queries": out["n_queries"]}


@pytest.fixture
def plain(cli, tmp_path: Path) -> dict:
    got = scored(cli, tmp_path, QRELS, RUN, "plain")
    assert got["n_queries"] == 2 and got["metrics"]["mrr"] == 0.75, got
    return got


def test_comment_lines_are_skipped_as_trec_eval_skips_them(cli, tmp_path, plain) -> None:
    qrels = "# judged by team B, 2026-11\n" + QRELS + "# 4 judgments\n"
    run = "# bm25 k1=0.9 b=0.4\n" + RUN
    assert scored(cli, tmp_path, qrels, run) == plain


def test_a_header_row_is_skipped(cli, tmp_path, plain) -> None:
    qrels = "qid iter docno rel\n" + QRELS
    run = "qid\tQ0\tdocno\trank\tscore\ttag\n" + RUN.replace(" ", "\t")
    assert scored(cli, tmp_path, qrels, run) == plain


def test_gzipped_qrels_and_run_read_as_the_plain_files(cli, tmp_path, plain) -> None:
    assert (
        scored(cli, tmp_path, gzip.compress(QRELS.encode()), gzip.compress(RUN.encode())) == plain
    )


def test_grades_written_as_whole_floats_read_as_integers(cli, tmp_path, plain) -> None:
    qrels = QRELS.replace(" 1\n", " 1.0\n").replace(" 2\n", " 2.0\n")
    assert " 1.0\n" in qrels
    assert scored(cli, tmp_path, qrels, RUN) == plain


def test_a_judgment_given_twice_with_two_grades_is_refused_naming_both_lines(cli, tmp_path) -> None:
    got = scored(cli, tmp_path, QRELS + "1 0 d1 2\n", RUN)
    assert got["returncode"] == 2
    error = got["stderr"].strip()
    assert error.startswith("error:") and "\n" not in error and "Traceback" not in error
    assert "d1" in error and "lines 1 and 5" in error


def test_a_judgment_repeated_with_the_same_grade_reads_once(cli, tmp_path, plain) -> None:
    assert scored(cli, tmp_path, QRELS + "2 0 d3 2\n", RUN) == plain


def test_a_large_qrels_with_two_grades_for_one_judgment_is_refused(tmp_path) -> None:
    """Past LARGE_FILE_BYTES the qrels are read by polars; it must refuse as the Python reader."""
    body = "".join(f"{q} 0 doc-{q}-{d:03d} {d % 3}\n" for q in range(1000) for d in range(450))
    assert len(body) > LARGE_FILE_BYTES
    path = tmp_path / "large.qrels"
    path.write_text(body + "7 0 doc-7-004 2\n")
    with pytest.raises(InputError, match="lines 3155 and 450001"):
        read_gold(path)
    path.write_text(body + "7 0 doc-7-004 1\n")  # the same grade again: read once
    assert read_gold(path).queries["7"].judged["doc-7-004"] == 1


def test_gold_jsonl_listing_a_chunk_twice_with_two_grades_is_refused(cli, tmp_path) -> None:
    gold = '{"query_id": "1", "relevant": [{"id": "d1", "grade": 1}, {"id": "d1", "grade": 2}]}\n'
    got = scored(cli, tmp_path, gold, RUN)
    assert got["returncode"] == 2 and "d1" in got["stderr"], got


def test_a_run_without_its_tag_column_says_so(cli, tmp_path) -> None:
    run = "".join(" ".join(line.split()[:5]) + "\n" for line in RUN.splitlines())
    got = scored(cli, tmp_path, QRELS, run)
    assert got["returncode"] == 2
    assert "5 fields" in got["stderr"] and "run tag" in got["stderr"], got


def test_a_run_given_as_gold_or_qrels_given_as_run_is_told_which_flag(cli, tmp_path) -> None:
    swapped = scored(cli, tmp_path, RUN, QRELS)
    assert swapped["returncode"] == 2 and "--run" in swapped["stderr"], swapped
    assert "TREC run" in swapped["stderr"]
    run_as_run = scored(cli, tmp_path, QRELS, QRELS)
    assert run_as_run["returncode"] == 2 and "--gold" in run_as_run["stderr"], run_as_run
    assert "qrels" in run_as_run["stderr"]


def test_a_beir_folder_given_as_gold_is_told_its_qrels_file(cli, tmp_path) -> None:
    folder = tmp_path / "scifact"
    (folder / "qrels").mkdir(parents=True)
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n")
    run = tmp_path / "x.run"
    run.write_text(RUN)
    result = cli("eval", "run", "--gold", str(folder), "--run", str(run), "--no-store",
                 "--db", str(tmp_path / "s.duckdb"))  # fmt: skip
    assert result.returncode == 2
    assert "qrels/test.tsv" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "dress",
    [
        lambda text: ("# a comment\n" + text).encode(),
        lambda text: gzip.compress(text.encode()),
        lambda text: ("\ufeff" + text.replace("\n", "\r\n")).encode(),
    ],
    ids=["comment", "gzip", "bom-crlf"],
)
def test_the_columnar_engine_reads_what_the_python_reader_reads(tmp_path, dress) -> None:
    """Large files go to polars (``force`` stands in for the size): the same figures."""
    from goldmine.eval.scoring import evaluate_files
    from goldmine.metrics import parse_metric

    metrics = [parse_metric(m) for m in METRICS.split(",")]
    qrels, run = tmp_path / "q", tmp_path / "r"
    qrels.write_bytes(dress(QRELS))
    run.write_bytes(dress(RUN.replace(" ", "\t")))
    for force in (False, True):
        result = evaluate_files(qrels, run, metrics, force=force)
        assert result.summary == {"mrr": 0.75, "ndcg": pytest.approx(0.7453, abs=1e-4),
                                  "recall@1": 0.5}, force  # fmt: skip


def test_a_ranx_run_json_reads_as_ranx_ranks_it(cli, tmp_path, plain) -> None:
    """ranx's Run.save writes {query_id: {doc_id: score}}: ranked by score, ties by id
    descending as trec_eval breaks them."""
    run = {"1": {"d1": 1.0, "d2": 2.0}, "2": {"d3": 0.001, "d4": 3.5}}
    assert scored(cli, tmp_path, QRELS, json.dumps(run, indent=1)) == plain
    ties = {"1": {"d1": 1.0, "d2": 1.0}, "2": {"d3": 1.0, "d4": 1.0}}  # d2 first, d4 first
    assert scored(cli, tmp_path, QRELS, json.dumps(ties)) == plain


def test_three_column_qrels_with_a_header_and_comments_read_as_gold_import_reads_them(
    cli, tmp_path, plain
) -> None:
    """Cranfield's cranqrel has three columns, qid docid grade; gold import takes a header row and
    comment lines in such a file, and so does eval run."""
    three = "".join(
        " ".join(line.split()[::2] + line.split()[3:]) + "\n" for line in QRELS.splitlines()
    )
    assert three.startswith("1 d1 1\n")
    assert scored(cli, tmp_path, "qid docno rel\n# pass 2\n" + three, RUN) == plain


def test_gold_jsonl_that_gold_import_takes_is_read_by_eval_run(cli, tmp_path, plain) -> None:
    """A "no_answer": true record and relevant_ids are gold import's spellings: eval reads them."""
    lines = [
        {"query_id": "1", "relevant": {"d1": 1, "d2": 0}},
        {"query_id": "2", "relevant_ids": ["d4", "d3"]},
        {"query_id": "3", "query": "refund in bitcoin", "no_answer": True},
    ]
    gold = "".join(json.dumps(line) + "\n" for line in lines)
    got = scored(cli, tmp_path, gold, RUN)
    assert got["metrics"]["mrr"] == plain["metrics"]["mrr"] and got["n_queries"] == 2, got


@pytest.mark.parametrize("rank", ["1.0", "-"])
def test_a_run_whose_rank_column_is_no_integer_reads_as_trec_eval_reads_it(
    cli, tmp_path, plain, rank
) -> None:
    """trec_eval never reads the rank column (it ranks by score): 1.0 or '-' there is no error."""
    run = "".join(
        " ".join([*line.split()[:3], rank, *line.split()[4:]]) + "\n" for line in RUN.splitlines()
    )
    assert scored(cli, tmp_path, QRELS, run) == plain


@pytest.mark.parametrize("engine", ["python", "columnar"])
def test_trec_evals_fixtures_dressed_as_files_come_give_trec_evals_figures(
    shared_dataset, tmp_path, engine
) -> None:
    """trec_eval's own qrels and run, gzipped, with a header row and comment lines: every summary
    figure of out.test.aq at 4 decimals, as the plain files give them (test_conformance)."""
    from test_conformance import expected_values

    from goldmine.eval.scoring import evaluate_files
    from goldmine.metrics import parse_metric

    def fixture(name: str) -> str:
        return shared_dataset("conformance", "trec_eval", name).read_text()

    qrels, run = tmp_path / "qrels.test.gz", tmp_path / "results.test.gz"
    qrels.write_bytes(gzip.compress(("qid iter docno rel\n" + fixture("qrels.test")).encode()))
    run.write_bytes(gzip.compress(("# STANDARD\n" + fixture("results.test")).encode()))
    want = expected_values(shared_dataset("conformance", "trec_eval", "out.test.aq"))
    metrics = [parse_metric(name) for name in want]
    result = evaluate_files(qrels, run, metrics, force=engine == "columnar")
    expected = {m: values["all"] for m, values in want.items()}
    assert {m: result.summary[m] for m in want} == pytest.approx(expected, abs=0.00005 + 1e-12)


def test_a_ranx_qrels_json_gives_a_retriever_no_query_ids_for_texts(cli, tmp_path) -> None:
    """ranx's {query_id: {doc_id: grade}} (gold export --format ranx) holds ids, not texts: a
    retriever asked for the text '1' would score garbage without a word."""
    gold = tmp_path / "v0001.qrels.json"
    gold.write_text(json.dumps({"1": {"d1": 1, "d2": 0}, "2": {"d3": 2, "d4": 1}}, indent=1))
    (tmp_path / "echo_retriever.py").write_text(
        "def search(query, k):\n    return [query]\n", encoding="utf-8"
    )
    result = cli("eval", "run", "--gold", str(gold), "--retriever", "echo_retriever:search",
                 "--no-store", "--db", str(tmp_path / "s.duckdb"), cwd=tmp_path)  # fmt: skip
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "no query text" in result.stderr
    run = tmp_path / "x.run"
    run.write_text(RUN)
    scored_by_id = cli("eval", "run", "--gold", str(gold), "--run", str(run), "-m", "mrr",
                       "--json", "--no-store", "--db", str(tmp_path / "s.duckdb"))  # fmt: skip
    assert json.loads(scored_by_id.stdout)["metrics"]["mrr"] == 0.75


def test_a_large_run_with_old_mac_line_ends_loses_no_line(tmp_path) -> None:
    """A run whose lines end in CR alone, past the size that sends it to polars: polars reads one
    line of it, and the Python reader (which splits on CR too) must read it instead."""
    from goldmine.eval.scoring import evaluate_files
    from goldmine.metrics import parse_metric

    lines = [f"{q} Q0 doc-{q}-{d} {d + 1} {100 - d} bm25" for q in range(3000) for d in range(100)]
    run = tmp_path / "cr.run"
    run.write_bytes(("\r".join(lines) + "\r").encode())
    assert run.stat().st_size > LARGE_FILE_BYTES
    qrels = tmp_path / "q.qrels"
    qrels.write_text("".join(f"{q} 0 doc-{q}-5 1\n" for q in range(3000)))
    result = evaluate_files(qrels, run, [parse_metric("mrr")])
    assert result.summary["mrr"] == pytest.approx(1 / 6) and not result.missing


@pytest.mark.parametrize("grade", ["99999999999999999999", "inf", "nan", "1.5"])
def test_a_grade_no_scale_has_is_one_error_line(cli, tmp_path, grade) -> None:
    """trec_eval sizes a table by the largest grade: one past any scale is an error here too,
    and the columnar engine's integer column could not hold it."""
    got = scored(cli, tmp_path, QRELS + f"2 0 d9 {grade}\n", RUN)
    assert got["returncode"] == 2 and grade in got["stderr"], got
    assert "Traceback" not in got["stderr"]
