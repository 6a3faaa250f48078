"""Judgments as other teams and tools publish them, through ``gold import``, ``--as-source`` and
``eval run --gold``: NTCIR's graded levels (``L0``..``L3``), MTEB's and BEIR's Hugging Face
folders (qrels as JSON lines or Parquet with ``query-id``, ``corpus-id``, ``score``; ids written
as JSON numbers), MS MARCO's and TREC's qrels in their own spacing, and the shapes that must stop
with one ``error:`` line (a spreadsheet's CSV naming no grade, a Label Studio export, an empty or
UTF-16 file, an empty folder). Each file is written as the public one is laid out."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_goldset_wild import assert_one_error_line, source_grades, stored

TOPICS = "1\treset my password\n2\tvpn setup\n3\trefund in bitcoin\n"
QUERIES = [("1", "reset my password"), ("2", "vpn setup"), ("3", "refund in bitcoin")]
# (query id, chunk id, grade) as the files below judge them, on goldmine's scale.
LABELS = [("1", "kb-1", 2), ("1", "kb-2", 0), ("2", "kb-3", 1), ("3", "kb-4", 0)]
# A run scoring LABELS: query 1 ranks kb-2 over kb-1, 2 finds kb-3 first; 3 has no answer.
RUN = "1 Q0 kb-2 1 2.0 r\n1 Q0 kb-1 2 1.0 r\n2 Q0 kb-3 1 3.5 r\n"


def write(folder: Path, files: dict[str, str | bytes]) -> None:
    for name, data in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode())


def gold_import(cli, tmp_path: Path, target: str, *args: str, db: str = "s.duckdb"):
    """``gold import`` of ``tmp_path / target`` (a file or folder) with ``args``."""
    return cli("--db", str(tmp_path / db), "gold", "import", str(tmp_path / target), *args,
               "--by", "ana")  # fmt: skip


def both_ways(cli, tmp_path: Path, target: str, *args: str) -> tuple:
    """A plain import and an ``--as-source b`` import of the same file, in two stores."""
    plain = gold_import(cli, tmp_path, target, *args)
    source = gold_import(cli, tmp_path, target, *args, "--as-source", "b", db="b.duckdb")
    return plain, source


def assert_imported(cli, tmp_path: Path, target: str, *args: str, labels=LABELS) -> None:
    """Both imports succeed and store ``labels``: as people's labels, and as source b's grades."""
    plain, source = both_ways(cli, tmp_path, target, *args)
    assert plain.returncode == 0, plain.stderr
    assert source.returncode == 0, source.stderr
    assert stored(tmp_path / "s.duckdb")[1] == labels
    assert source_grades(tmp_path / "b.duckdb") == labels


def scored(cli, tmp_path: Path, qrels: str) -> dict:
    """``eval run --json`` of RUN against ``tmp_path / qrels``: metrics, or the failure."""
    (tmp_path / "x.run").write_text(RUN)
    result = cli("eval", "run", "--gold", str(tmp_path / qrels), "--run",
                 str(tmp_path / "x.run"), "-m", "mrr,ndcg", "--json", "--no-store",
                 "--db", str(tmp_path / "e.duckdb"))  # fmt: skip
    if result.returncode:
        return {"returncode": result.returncode, "stderr": result.stderr}
    out = json.loads(result.stdout)
    return {"metrics": out["metrics"], "n_queries": out["n_queries"]}


# What RUN scores against LABELS: query 1's answer second (1/2), query 2's first (1).
PLAIN_SCORES = {"mrr": 0.75, "n_queries": 2}


def assert_scores_as_plain(got: dict) -> None:
    assert "metrics" in got, got
    assert got["metrics"]["mrr"] == PLAIN_SCORES["mrr"], got
    assert got["n_queries"] == PLAIN_SCORES["n_queries"], got


# --- a judgment twice, a grade map past the limit -------------------------------------------


def hf_folder(folder: Path, judgments: dict) -> None:
    """What ``gold export --format hf`` writes: queries.parquet and judgments.parquet."""
    folder.mkdir(parents=True)
    queries = {"query_id": [q for q, _ in QUERIES], "query": [t for _, t in QUERIES],
               "no_answer": [False, False, True]}  # fmt: skip
    pq.write_table(pa.table(queries), folder / "queries.parquet")
    pq.write_table(pa.table(judgments), folder / "judgments.parquet")


def test_hf_judgments_giving_one_judgment_two_grades_are_refused_naming_both_rows(
    cli, tmp_path
) -> None:
    """As the TREC reader refuses it: which grade holds is the file's to say."""
    rows = [*LABELS, ("2", "kb-5", 1), ("1", "kb-1", 1)]
    hf_folder(tmp_path / "v-hf", {"query_id": [r[0] for r in rows],
                                  "doc_id": [r[1] for r in rows],
                                  "grade": [r[2] for r in rows]})  # fmt: skip
    for result in both_ways(cli, tmp_path, "v-hf"):
        assert_one_error_line(result, "kb-1", "rows 1 and 6", "2, then 1")
    assert stored(tmp_path / "s.duckdb") == ([], [])


def test_hf_judgments_repeating_a_grade_read_it_once(cli, tmp_path) -> None:
    rows = [*LABELS, ("1", "kb-1", 2)]
    hf_folder(tmp_path / "v-hf", {"query_id": [r[0] for r in rows],
                                  "doc_id": [r[1] for r in rows],
                                  "grade": [r[2] for r in rows]})  # fmt: skip
    assert_imported(cli, tmp_path, "v-hf")


@pytest.mark.parametrize(
    ("files", "target", "args", "where"),
    [
        ({"q.qrels": "1 0 kb-1 2\n1 0 kb-2 0\n2 0 kb-3 1\n1 0 kb-1 1\n", "t.tsv": TOPICS},
         "q.qrels", ("--topics", "t.tsv"), "lines 1 and 4"),
        ({"beir/queries.jsonl": "",
          "beir/qrels/test.tsv": "query-id\tcorpus-id\tscore\n1\tkb-1\t2\n1\tkb-1\t1\n"},
         "beir", (), "lines 2 and 3"),
        ({"beir/queries.jsonl": "",
          "beir/qrels/test.parquet": b""},
         "beir", (), "rows 1 and 5"),
    ],
    ids=["trec", "beir-tsv", "beir-parquet"],
)  # fmt: skip
def test_a_source_judging_a_chunk_twice_with_two_grades_is_refused(
    cli, tmp_path, files, target, args, where
) -> None:
    """--as-source kept the last grade without a word; a plain import refused the file."""
    files = {**files, "beir/queries.jsonl": queries_jsonl()} if target == "beir" else files
    if "beir/qrels/test.parquet" in files:
        files["beir/qrels/test.parquet"] = qrels_parquet([*LABELS, ("1", "kb-1", 1)])
    write(tmp_path, files)
    paths = [str(tmp_path / a) if a in files else a for a in args]
    for result in both_ways(cli, tmp_path, target, *paths):
        assert_one_error_line(result, "kb-1", where)
    assert source_grades(tmp_path / "b.duckdb") == []


DL19 = "1 0 kb-1 3\n1 0 kb-2 0\n2 0 kb-3 2\n3 0 kb-4 1\n"  # TREC DL's 0-3, space-separated


@pytest.mark.parametrize(
    ("grade_map", "words"),
    [
        ("0=0,1=0,2=1,3=99999999999999999999", ("99999999999999999999", "--grade-map")),
        ("0=0,1=0,2=1,99999999999999999999=2", ("99999999999999999999", "--grade-map")),
        ("0=0,1=0,2=1,3=-99999999999999999999", ("-99999999999999999999", "--grade-map")),
    ],
)
@pytest.mark.parametrize("as_source", [[], ["--as-source", "b"]])
def test_a_grade_map_entry_past_any_scale_is_one_error_line(
    cli, tmp_path, grade_map, words, as_source
) -> None:
    write(tmp_path, {"dl19.qrels": DL19, "t.tsv": TOPICS})
    result = gold_import(cli, tmp_path, "dl19.qrels", "--topics", str(tmp_path / "t.tsv"),
                         "--grade-map", grade_map, *as_source)  # fmt: skip
    assert_one_error_line(result, *words)


def test_a_grade_past_any_scale_is_refused_even_when_the_map_names_it(cli, tmp_path) -> None:
    """The map cannot make a grade no scale has readable: exchange's reader checks the limit."""
    big = "99999999999999999999"
    write(tmp_path, {"q.qrels": DL19 + f"2 0 kb-9 {big}\n", "t.tsv": TOPICS})
    for result in both_ways(cli, tmp_path, "q.qrels", "--topics", str(tmp_path / "t.tsv"),
                            "--grade-map", f"0=0,1=0,2=1,3=2,{big}=2"):  # fmt: skip
        assert_one_error_line(result, big)


def test_a_map_sending_a_source_grade_off_the_scale_is_refused(cli, tmp_path) -> None:
    """A source's grades are compared on goldmine's 0-2 scale (``gold agreement``): a grade
    mapped to 99 would drop out of every comparison without a word."""
    write(tmp_path, {"dl19.qrels": DL19, "t.tsv": TOPICS})
    args = ("--topics", str(tmp_path / "t.tsv"), "--grade-map", "0=0,1=1,2=1,3=99")
    source = gold_import(cli, tmp_path, "dl19.qrels", *args, "--as-source", "b")
    assert_one_error_line(source, "3=99", "0-2")


def test_a_map_sending_gold_off_the_scale_says_so(cli, tmp_path) -> None:
    """A plain import keeps a map's gains off the scale (Cranfield's codes as gains), and says
    which grades are off it."""
    write(tmp_path, {"dl19.qrels": DL19, "t.tsv": TOPICS})
    args = ("--topics", str(tmp_path / "t.tsv"), "--grade-map", "0=0,1=1,2=1,3=99")
    plain = gold_import(cli, tmp_path, "dl19.qrels", *args)
    assert plain.returncode == 0, plain.stderr
    assert "99" in plain.stderr and "0-2" in plain.stderr
    assert stored(tmp_path / "s.duckdb")[1][0] == ("1", "kb-1", 99)


# --- NTCIR -----------------------------------------------------------------------------------

# NTCIR's qrels: topic, document, level (L0 not relevant .. L3; L-1 where a page could not be
# judged), separated by one space.
NTCIR = "0001 kb-1 L3\n0001 kb-2 L0\n0002 kb-3 L1\n0002 kb-5 L-1\n0003 kb-4 L0\n"
NTCIR_TOPICS = "0001\treset my password\n0002\tvpn setup\n0003\trefund in bitcoin\n"
NTCIR_LABELS = [("0001", "kb-1", 2), ("0001", "kb-2", 0), ("0002", "kb-3", 1),
                ("0002", "kb-5", 0), ("0003", "kb-4", 0)]  # fmt: skip


def test_ntcir_levels_read_through_a_grade_map(cli, tmp_path) -> None:
    write(tmp_path, {"ntcir.qrels": NTCIR, "t.tsv": NTCIR_TOPICS})
    args = ("--topics", str(tmp_path / "t.tsv"), "--grade-map", "L0=0,L1=1,L2=2,L3=2,L-1=0")
    assert_imported(cli, tmp_path, "ntcir.qrels", *args, labels=NTCIR_LABELS)


def test_ntcir_levels_without_a_grade_map_are_one_error_line_naming_it(cli, tmp_path) -> None:
    write(tmp_path, {"ntcir.qrels": NTCIR, "t.tsv": NTCIR_TOPICS})
    for result in both_ways(cli, tmp_path, "ntcir.qrels", "--topics", str(tmp_path / "t.tsv")):
        assert_one_error_line(result, "L3", "--grade-map L", "NTCIR")


def test_ntcir_levels_the_map_does_not_name_are_one_error_line(cli, tmp_path) -> None:
    write(tmp_path, {"ntcir.qrels": NTCIR, "t.tsv": NTCIR_TOPICS})
    args = ("--topics", str(tmp_path / "t.tsv"), "--grade-map", "L0=0,L1=1,L2=2,L3=2")
    for result in both_ways(cli, tmp_path, "ntcir.qrels", *args):
        assert_one_error_line(result, "--grade-map", "-1")


def test_eval_run_on_ntcir_levels_says_how_to_read_them(cli, tmp_path) -> None:
    write(tmp_path, {"ntcir.qrels": NTCIR})
    got = scored(cli, tmp_path, "ntcir.qrels")
    assert got.get("returncode") == 2, got
    error = got["stderr"].strip()
    assert error.startswith("error:") and "\n" not in error, error
    assert "NTCIR" in error and "--grade-map" in error, error


# --- MTEB and BEIR folders from Hugging Face -------------------------------------------------


def queries_jsonl(ids=None) -> str:
    ids = ids or [q for q, _ in QUERIES]
    lines = [{"_id": i, "text": t} for i, (_, t) in zip(ids, QUERIES, strict=True)]
    return "".join(json.dumps(line) + "\n" for line in lines)


def qrels_jsonl(rows) -> str:
    return "".join(json.dumps({"query-id": q, "corpus-id": c, "score": s}) + "\n"
                   for q, c, s in rows)  # fmt: skip


def qrels_parquet(rows) -> bytes:
    table = pa.table({"query-id": [r[0] for r in rows], "corpus-id": [r[1] for r in rows],
                      "score": pa.array([r[2] for r in rows], pa.int64())})  # fmt: skip
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


# mteb/scifact: queries.jsonl, corpus.jsonl, qrels/test.jsonl; the Parquet conversions:
# qrels/test-00000-of-00001.parquet.
MTEB_LAYOUTS = {
    "jsonl": {"queries.jsonl": queries_jsonl(), "qrels/test.jsonl": qrels_jsonl(LABELS)},
    "parquet": {"queries.jsonl": queries_jsonl(),
                "qrels/test-00000-of-00001.parquet": qrels_parquet(LABELS)},
    "tsv-bom-crlf": {"queries.jsonl": queries_jsonl(),
                     "qrels/test.tsv": "\ufeffquery-id\tcorpus-id\tscore\r\n"
                     + "".join(f"{q}\t{c}\t{g}\r\n" for q, c, g in LABELS)},
}  # fmt: skip


def queries_parquet() -> bytes:
    """MTEB's queries config as Parquet: ``_id`` and ``text``."""
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"_id": [q for q, _ in QUERIES], "text": [t for _, t in QUERIES]}),
                   sink)  # fmt: skip
    return sink.getvalue().to_pybytes()


# A repo serving the split twice, as BEIR's TSV and its JSON lines conversion: the TSV is read.
MTEB_LAYOUTS["tsv-and-jsonl"] = {
    "queries.jsonl": queries_jsonl(),
    "qrels/test.tsv": "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{c}\t{g}\n"
                                                            for q, c, g in LABELS),
    "qrels/test.jsonl": qrels_jsonl(LABELS),
}  # fmt: skip


# The MTEB repos converted to Parquet (mteb/CQADupstack*-NL, mteb/GermanDPR): every config a
# folder of shards, the queries as queries/test-00000-of-00001.parquet.
MTEB_LAYOUTS["parquet-queries"] = {
    "queries/test-00000-of-00001.parquet": queries_parquet(),
    "corpus/test-00000-of-00001.parquet": b"PAR1 not read",
    "qrels/test-00000-of-00001.parquet": qrels_parquet(LABELS),
}


@pytest.mark.parametrize("layout", sorted(MTEB_LAYOUTS))
def test_an_mteb_folder_imports_with_its_qrels_as_published(cli, tmp_path, layout) -> None:
    write(tmp_path / "scifact", MTEB_LAYOUTS[layout])
    assert_imported(cli, tmp_path, "scifact")
    assert [q for q, _, _ in stored(tmp_path / "s.duckdb")[0]] == ["1", "2", "3"]


@pytest.mark.parametrize("layout", sorted(MTEB_LAYOUTS))
def test_eval_run_scores_an_mteb_qrels_file_as_a_trec_one(cli, tmp_path, layout) -> None:
    write(tmp_path / "scifact", MTEB_LAYOUTS[layout])
    qrels = next(p for p in (tmp_path / "scifact" / "qrels").iterdir())
    assert_scores_as_plain(scored(cli, tmp_path, str(qrels.relative_to(tmp_path))))


def test_eval_run_given_an_mteb_folder_names_its_qrels_file(cli, tmp_path) -> None:
    write(tmp_path / "scifact", MTEB_LAYOUTS["parquet"])
    got = scored(cli, tmp_path, "scifact")
    assert got.get("returncode") == 2, got
    assert "qrels/test-00000-of-00001.parquet" in got["stderr"], got


@pytest.mark.parametrize("layout", ["jsonl", "parquet"])
def test_ids_written_as_json_or_parquet_numbers_stay_the_text_they_print_as(
    cli, tmp_path, layout
) -> None:
    """``"query-id": 1`` is the query "1" of ``{"_id": 1}``, never "1.0"; chunk 10 is "10"."""
    rows = [(1, 10, 2), (1, 20, 0), (2, 30, 1), (3, 40, 0)]
    qrels = (
        {"qrels/test.jsonl": qrels_jsonl(rows)}
        if layout == "jsonl"
        else {"qrels/test.parquet": qrels_parquet(rows)}
    )
    write(tmp_path / "nfcorpus", {"queries.jsonl": queries_jsonl([1, 2, 3]), **qrels})
    want = [(str(q), str(c), g) for q, c, g in rows]
    assert_imported(cli, tmp_path, "nfcorpus", labels=want)


def test_a_beir_folder_of_ids_as_json_numbers_scores_by_their_text(cli, tmp_path) -> None:
    rows = [(1, "kb-1", 2), (1, "kb-2", 0), (2, "kb-3", 1)]
    write(tmp_path, {"test.jsonl": qrels_jsonl(rows)})
    assert_scores_as_plain(scored(cli, tmp_path, "test.jsonl"))


@pytest.mark.parametrize(
    ("columns", "words"),
    [
        # A doc id missing from one row: --as-source took the query as "no answer".
        ({"query-id": ["1", "1"], "corpus-id": ["kb-1", None], "score": [2, 1]},
         ("qrels/test.parquet:2", "empty")),
        # Ids in lists (a column pandas wrote from lists): a polars traceback.
        ({"query-id": [["1"]], "corpus-id": ["kb-1"], "score": [2]}, ("query-id", "List")),
    ],
    ids=["null-doc-id", "list-ids"],
)  # fmt: skip
def test_parquet_qrels_whose_ids_are_not_ids_are_one_error_line(
    cli, tmp_path, columns, words
) -> None:
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(columns), sink)
    write(tmp_path / "scifact", {"queries.jsonl": queries_jsonl(),
                                 "qrels/test.parquet": sink.getvalue().to_pybytes()})  # fmt: skip
    for result in both_ways(cli, tmp_path, "scifact"):
        assert_one_error_line(result, *words)
    assert source_grades(tmp_path / "b.duckdb") == []


def test_a_folder_with_no_qrels_for_the_split_names_what_it_looked_for(cli, tmp_path) -> None:
    write(tmp_path / "scifact", {"queries.jsonl": queries_jsonl(),
                                 "qrels/train.jsonl": qrels_jsonl(LABELS)})  # fmt: skip
    for result in both_ways(cli, tmp_path, "scifact"):
        assert_one_error_line(result, "qrels/test.tsv", "test.jsonl", "--split")


# --- TREC's and MS MARCO's qrels as written -------------------------------------------------

QRELS_SHAPES = {
    # MS MARCO's qrels.dev.tsv: qid TAB 0 TAB pid TAB 1.
    "msmarco": "1\t0\tkb-1\t1\n2\t0\tkb-3\t1\n",
    # TREC-COVID's qrels: the iteration column is the round, 0.5 for the half rounds.
    "covid": "1 0.5 kb-1 2\n1 0.5 kb-2 0\n2 1 kb-3 1\n3 1.5 kb-4 0\n",
    # Trailing spaces and tabs, tabs mixed with spaces between columns.
    "mixed": "1 0\tkb-1 2  \n1\t0 kb-2\t0\t\n2 0 kb-3 1 \t\n3  0 kb-4\t0\n",
}
SHAPE_LABELS = {"msmarco": [("1", "kb-1", 1), ("2", "kb-3", 1)], "covid": LABELS,
                "mixed": LABELS}  # fmt: skip


@pytest.mark.parametrize("shape", sorted(QRELS_SHAPES))
def test_trec_style_qrels_as_published_import_and_score(cli, tmp_path, shape) -> None:
    write(tmp_path, {"q.qrels": QRELS_SHAPES[shape], "t.tsv": TOPICS})
    assert_imported(cli, tmp_path, "q.qrels", "--topics", str(tmp_path / "t.tsv"),
                    labels=SHAPE_LABELS[shape])  # fmt: skip
    got = scored(cli, tmp_path, "q.qrels")
    assert got["n_queries"] == 2, got


def test_trec_dl_qrels_on_0_to_3_import_through_a_map(cli, shared_dataset, tmp_path) -> None:
    """TREC DL 2020's real qrels (0-3, space-separated) with their topics, as a source."""
    folder = shared_dataset("datasets", "trec_topics")
    qrels, topics = folder / "qrels.dl20-passage.txt", folder / "topics.dl20.txt"
    result = cli("--db", str(tmp_path / "b.duckdb"), "gold", "import", str(qrels),
                 "--topics", str(topics), "--grade-map", "3=2,2=2,1=1,0=0",
                 "--as-source", "nist", "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["judgments"] == 11386 and report["queries"] == 54


# --- files that are no judgments goldmine reads ---------------------------------------------

LABEL_STUDIO = json.dumps([{
    "id": 1, "data": {"query": "reset my password", "doc_id": "kb-1"},
    "annotations": [{"id": 7, "completed_by": 1, "result": [{
        "from_name": "relevance", "to_name": "doc", "type": "choices",
        "value": {"choices": ["Relevant"]}}]}],
}], indent=2)  # fmt: skip

NOT_JUDGMENTS = {
    # a sheet of queries and documents with no grade column (gold import reads one with it)
    "spreadsheet.csv": "query,doc_id\nreset my password,kb-1\nvpn setup,kb-3\n",
    "judgments.txt": "query,doc_id\nreset my password,kb-1\nvpn setup,kb-3\n",
    "label-studio.json": LABEL_STUDIO,
    "empty.qrels": "",
    "comments.qrels": "# judged by team B\n# nothing yet\n",
    "header.qrels": "qid iter docno rel\n",
    "utf16.qrels": "1 0 kb-1 2\n2 0 kb-3 1\n".encode("utf-16"),
    # UTF-16 without its byte order mark, either way round: the NULs were read as id text.
    "utf16le.qrels": "1 0 kb-1 2\n2 0 kb-3 1\n".encode("utf-16-le"),
    "utf16be.qrels": "1 0 kb-1 2\n2 0 kb-3 1\n".encode("utf-16-be"),
}
# What each error names: the format it is taken for or the trouble, and what goldmine reads.
NOT_JUDGMENTS_WORDS = {
    "spreadsheet.csv": ("comma-separated", "grade"),
    "judgments.txt": ("comma-separated", "grade"),
    "label-studio.json": ("Label Studio", "gold JSONL"),
    "empty.qrels": ("no judgment",),
    "comments.qrels": ("no judgment",),
    "header.qrels": ("no judgment",),
    "utf16.qrels": ("UTF-16", "UTF-8"),
    "utf16le.qrels": ("UTF-16", "UTF-8"),
    "utf16be.qrels": ("UTF-16", "UTF-8"),
}


@pytest.mark.parametrize("name", sorted(NOT_JUDGMENTS))
def test_what_is_no_judgments_file_is_one_error_line(cli, tmp_path, name) -> None:
    write(tmp_path, {name: NOT_JUDGMENTS[name], "t.tsv": TOPICS})
    for result in both_ways(cli, tmp_path, name, "--topics", str(tmp_path / "t.tsv")):
        assert_one_error_line(result, *NOT_JUDGMENTS_WORDS[name])
    assert stored(tmp_path / "s.duckdb") == ([], [])


@pytest.mark.parametrize("name", sorted(NOT_JUDGMENTS))
def test_eval_run_on_what_is_no_judgments_file_is_one_error_line(cli, tmp_path, name) -> None:
    write(tmp_path, {name: NOT_JUDGMENTS[name]})
    got = scored(cli, tmp_path, name)
    assert got.get("returncode") == 2, got
    error = got["stderr"].strip()
    assert error.startswith("error:") and "\n" not in error and "Traceback" not in error, error
    assert all(word in error for word in NOT_JUDGMENTS_WORDS[name][:1]), error


def test_an_empty_folder_is_one_error_line_naming_what_a_folder_holds(cli, tmp_path) -> None:
    (tmp_path / "downloads").mkdir()
    for result in both_ways(cli, tmp_path, "downloads"):
        assert_one_error_line(result, "queries.jsonl", "qrels/", "judgments.parquet")
