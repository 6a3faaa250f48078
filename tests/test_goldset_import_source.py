"""``gold import FILE --as-source NAME``: another source's judgments kept beside the gold set.

A file imported as a source becomes rows of ``gold_source_grades`` (source ``import:NAME``) on the
items its queries match (by id, else by normalized text, as ``gold import`` matches), with items
created as candidates where none matches. Nothing becomes gold: no label, no verification. The
real case is Cranfield (its corpus, its SMART topics file ``cran.qry`` and a slice of its
``cranqrel`` as people's gold), with two sources written in the layouts found in the wild: a 0-3
scale with ``Q0`` in the second column, and a 0-1 scale with ``0`` there.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import test_goldset_draft

from goldmine.store import open_store

from fake_llm import serve
from helpers import gold, norm_qid, store_corpus
from realdata import cranfield_chunks, cranfield_queries

# Source "nist", graded 0-3, TREC's four columns with Q0. Chunk 1401 is not in Cranfield
# (ids 1..1400); query 3 says no chunk is relevant (all zero), so: no answer.
NIST = """\
1 Q0 184 3
1 Q0 29 2
1 Q0 1401 1
2 Q0 12 1
2 Q0 13 0
3 Q0 5 0
3 Q0 6 0
5 Q0 51 3
"""
# Source "clicks-team", graded 0-1, with 0 in the second column. 1500 is not in the corpus;
# query 6 is all zero: no answer.
CLICKS = """\
1 0 184 1
1 0 29 0
2 0 12 1
4 0 9 1
4 0 1500 1
6 0 60 0
"""


def _rows(db: Path, sql: str, params=None) -> list[tuple]:
    with open_store(db) as con:
        return con.execute(sql, params or []).fetchall()


@pytest.fixture
def cranfield_store(shared_dataset, cli, tmp_path: Path) -> dict:
    """Cranfield's corpus; people's gold for queries 3 and 4 (cranqrel's own lines, imported the
    usual way); query 1 typed in by hand in other letters (an item matched by its text only)."""
    folder = shared_dataset("datasets", "cranfield")
    db = tmp_path / "cran.duckdb"
    with open_store(db) as con:
        store_corpus(con, [(c.id, c.title, c.text) for c in cranfield_chunks(folder)])
    people = tmp_path / "people.qrels"
    lines = (folder / "cranqrel").read_text().splitlines()
    people.write_text("".join(f"{x}\n" for x in lines if x.split()[0] in ("3", "4")))
    topics = folder / "cran.qry"
    gold(cli, db, "import", str(people), "--topics", str(topics),
         "--grade-map", "1=2,2=2,3=1,4=1,-1=0", "--by", "cleverdon")  # fmt: skip
    typed = cranfield_queries(folder)["1"].upper().replace(" .", "?")
    gold(cli, db, "add-query", typed, "--by", "ana")
    return {"db": db, "topics": topics, "typed": typed, "folder": folder}


def _as_source(cli, db: Path, path: Path, name: str, topics: Path, grade_map: str, *extra: str):
    return gold(cli, db, "import", str(path), "--as-source", name, "--topics", str(topics),
                "--grade-map", grade_map, "--json", *extra)  # fmt: skip


def test_two_qrels_on_different_scales_become_two_sources_beside_the_gold(
    cli, cranfield_store: dict, tmp_path: Path
) -> None:
    db, topics = cranfield_store["db"], cranfield_store["topics"]
    typed_id = norm_qid(cranfield_store["typed"])
    labels_before = _rows(db, "SELECT * FROM gold_labels ORDER BY ALL")
    history_before = _rows(db, "SELECT count(*) FROM gold_history WHERE query_id IN ('3', '4')")
    nist, clicks = tmp_path / "nist.qrels", tmp_path / "clicks.qrels"
    nist.write_text(NIST)
    clicks.write_text(CLICKS)

    a = json.loads(_as_source(cli, db, nist, "nist", topics, "0=0,1=1,2=2,3=2").stdout)
    # 8 judgments over queries 1 (matched by text), 2 and 5 (created), 3 (matched by id);
    # 1401 not in the corpus; query 3 all zero: no answer.
    assert a["source"] == "import:nist"
    assert (a["judgments"], a["queries"], a["matched"], a["created"]) == (8, 4, 2, 2)
    assert (a["not_in_corpus"], a["no_answer"], a["replaced"]) == (1, 1, 0)

    b = json.loads(_as_source(cli, db, clicks, "clicks-team", topics, "0=0,1=2").stdout)
    # 6 judgments over 1 (text), 2 (the item nist created), 4 (id), 6 (created).
    assert (b["judgments"], b["queries"], b["matched"], b["created"]) == (6, 4, 3, 1)
    assert (b["not_in_corpus"], b["no_answer"], b["replaced"]) == (1, 1, 0)

    rows = _rows(
        db,
        """SELECT source, query_id, chunk_id, grade, raw_grade, in_corpus, line
           FROM gold_source_grades ORDER BY source, line, chunk_id NULLS FIRST""",
    )
    nist_rows = [r[1:] for r in rows if r[0] == "import:nist"]
    assert nist_rows == [
        (typed_id, "184", 2, "3", True, 1),
        (typed_id, "29", 2, "2", True, 2),
        (typed_id, "1401", 1, "1", False, 3),
        ("2", "12", 1, "1", True, 4),
        ("2", "13", 0, "0", True, 5),
        ("3", None, None, None, True, 6),  # the source's "no answer", at the query's first line
        ("3", "5", 0, "0", True, 6),
        ("3", "6", 0, "0", True, 7),
        ("5", "51", 2, "3", True, 8),
    ]
    click_rows = [r[1:] for r in rows if r[0] == "import:clicks-team"]
    assert click_rows[0] == (typed_id, "184", 2, "1", True, 1)
    assert ("4", "1500", 2, "1", False, 5) in click_rows
    assert ("6", None, None, None, True, 6) in click_rows
    assert _rows(db, "SELECT DISTINCT file FROM gold_source_grades ORDER BY 1") == [
        (str(clicks),), (str(nist),)
    ]  # fmt: skip

    # Nothing became gold: the labels are as they were, the created items are candidates with
    # the source as their origin, people's verified items are untouched.
    assert _rows(db, "SELECT * FROM gold_labels ORDER BY ALL") == labels_before
    assert _rows(db, "SELECT count(*) FROM gold_history WHERE query_id IN ('3', '4')") == (
        history_before
    )
    items = dict(_rows(db, "SELECT query_id, status || ' ' || origin FROM gold_items"))
    assert items == {
        "3": "verified import:people.qrels",
        "4": "verified import:people.qrels",
        typed_id: "candidate add-query",
        "2": "candidate import:nist",
        "5": "candidate import:nist",
        "6": "candidate import:clicks-team",
    }
    assert _rows(db, "SELECT query FROM gold_items WHERE query_id = '5'") == [
        ("what chemical kinetic system is applicable to hypersonic aerodynamic problems .",)
    ]

    # The same name again replaces that source's rows (and says so); the other is left alone.
    nist.write_text(NIST.replace("5 Q0 51 3\n", ""))
    again = gold(cli, db, "import", str(nist), "--as-source", "nist", "--topics", str(topics),
                 "--grade-map", "0=0,1=1,2=2,3=2")  # fmt: skip
    assert "replaced the 9 rows import:nist had" in again.stderr
    assert "7 judgments" in again.stdout and "0 created" in again.stdout
    counts = _rows(db, "SELECT source, count(*) FROM gold_source_grades GROUP BY 1 ORDER BY 1")
    assert counts == [("import:clicks-team", 7), ("import:nist", 8)]
    assert _rows(db, "SELECT count(*) FROM gold_items") == [(6,)]  # never duplicated


def _generated(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A store with two chunks, TREC <top> topics and a qrels file, written as TREC ships them."""
    db = tmp_path / "g.duckdb"
    with open_store(db) as con:
        store_corpus(con, [("d1", "Reset", "How to reset a password."),
                           ("d2", "VPN", "Connect to the VPN.")])  # fmt: skip
    topics = tmp_path / "topics.txt"
    topics.write_text(
        "<top>\n<num> Number: 301\n<title> reset password\n<desc> Description:\nhow?\n</top>\n"
        "<top>\n<num> Number: 302\n<title> vpn\n<desc> Description:\nvpn?\n</top>\n"
    )
    qrels = tmp_path / "run.qrels"
    qrels.write_text("301 0 d1 1\n301 0 d2 0\n302 0 d2 1\n")
    return db, topics, qrels


def test_a_source_name_is_checked_and_a_version_file_is_not_a_source(cli, tmp_path: Path) -> None:
    db, topics, qrels = _generated(tmp_path)
    bad = gold(cli, db, "import", str(qrels), "--as-source", "our team!", "--topics", str(topics),
               ok=False)  # fmt: skip
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: ") and len(bad.stderr.strip().splitlines()) == 1
    assert "letters, digits" in bad.stderr
    good = gold(cli, db, "import", str(qrels), "--as-source", "team_b.v2", "--topics", str(topics))
    assert good.stdout.startswith("import:team_b.v2: 3 judgments")
    assert _rows(db, "SELECT count(*) FROM gold_labels") == [(0,)]
    assert _rows(db, "SELECT status, count(*) FROM gold_items GROUP BY 1") == [("candidate", 2)]
    version = tmp_path / "v.jsonl"
    version.write_text('{"format": "goldmine-gold", "format_version": 1}\n')
    refused = gold(cli, db, "import", str(version), "--as-source", "x", ok=False)
    assert refused.returncode == 2 and "--as-source" in refused.stderr


def test_grades_off_the_scale_need_a_grade_map_as_a_source_too(cli, tmp_path: Path) -> None:
    db, topics, qrels = _generated(tmp_path)
    qrels.write_text("301 Q0 d1 3\n")
    out = gold(cli, db, "import", str(qrels), "--as-source", "x", "--topics", str(topics),
               ok=False)  # fmt: skip
    assert out.returncode == 2 and "--grade-map" in out.stderr
    assert _rows(db, "SELECT count(*) FROM gold_source_grades") == [(0,)]


# --- every label's source travels with it: history, show, the published version ---------------

store = test_goldset_draft.store  # the fixture: the sample store with three candidates


def _cells(line: str) -> list[str]:
    """A row of a table as rich draws it, cell by cell."""
    return [c.strip() for c in re.split("[│┃]", line)][1:-1]


def _judged_and_accepted(cli, db: Path) -> str:
    """The model grades every candidate; ana takes its grade for reset password's first
    candidate with m and grades the second herself: the item is verified. Returns its id."""
    with serve() as server:
        judged = cli("--db", str(db), "gold", "draft", "-k", "2", "--judge", "llm",
                     "--base-url", server.base_url, "--model", "judge-1")  # fmt: skip
    assert judged.returncode == 0, judged.stderr
    review = cli("--db", str(db), "gold", "review", "--by", "ana", input="m\n2\nq\n")
    assert review.returncode == 0, review.stderr
    return norm_qid("reset password")


def test_a_grade_taken_from_the_model_says_so_in_history_and_in_the_version(
    cli, store: Path, tmp_path: Path
) -> None:
    qid = _judged_and_accepted(cli, store)
    grades = [
        h["detail"]
        for h in json.loads(gold(cli, store, "show", qid, "--json").stdout)["history"]
        if h["action"] == "grade"
    ]
    assert [g["source"] for g in grades] == ["model-accept", "review"]

    gold(cli, store, "publish", "-m", "first", "--by", "ana")
    line = _rows(store, "SELECT item FROM gold_version_items WHERE query_id = ?", [qid])[0][0]
    frozen = json.loads(line)
    sources = {c: meta["source"] for c, meta in frozen["labelled"].items()}
    assert sorted(sources.values()) == ["model-accept", "review"]
    assert "v1\tok" in gold(cli, store, "verify").stdout

    # The exported file carries it, and a store restored from it keeps it on the labels.
    gold(cli, store, "export", "--out", str(tmp_path / "out"))
    exported = (tmp_path / "out" / "v0001.jsonl").read_text().splitlines()
    assert line in exported
    restored = tmp_path / "restored.duckdb"
    gold(cli, restored, "import", str(tmp_path / "out" / "v0001.jsonl"))
    labels = dict(_rows(restored, "SELECT chunk_id, source FROM gold_labels WHERE query_id = ?",
                        [qid]))  # fmt: skip
    assert labels == sources


def test_a_version_published_before_sources_were_recorded_still_verifies(
    cli, tmp_path: Path
) -> None:
    """A version file whose labels carry no source (as every version published before) restores,
    verifies, exports to the same bytes, and its labels are the file's ("import")."""
    item = {
        "query_id": "q1", "query": "reset password", "norm_query": "reset password",
        "context": None, "relevant": {"kb-reset-1": 2}, "not_relevant": {}, "no_answer": False,
        "tags": [], "notes": [], "provenance": {"origin": "manual"},
        "label_text_hashes": {"kb-reset-1": None}, "snapshot": [],
        "labelled": {"kb-reset-1": {"at": "2026-11-01T00:00:00", "by": "ana",
                                    "snapshot_id": None}},
        "verified_by": "ana", "verified_at": "2026-11-01T00:00:00", "history": [],
    }  # fmt: skip
    from goldmine.goldset.versions import content_hash, dump_line

    lines = [dump_line(item)]
    header = {"format": "goldmine-gold", "format_version": 1, "version": 1, "message": "old",
              "content_hash": content_hash(lines), "published_at": "2026-11-01T00:00:00",
              "published_by": "ana"}  # fmt: skip
    path = tmp_path / "v0001.jsonl"
    path.write_text("\n".join([dump_line(header), *lines]) + "\n")
    db = tmp_path / "old.duckdb"
    gold(cli, db, "import", str(path))
    assert "v1\tok" in gold(cli, db, "verify").stdout
    gold(cli, db, "export", "--out", str(tmp_path / "again"))
    assert (tmp_path / "again" / "v0001.jsonl").read_text().splitlines()[1:] == lines
    assert _rows(db, "SELECT source FROM gold_labels") == [("import",)]


def test_show_puts_the_models_and_other_sources_grades_beside_peoples(
    cli, store: Path, tmp_path: Path
) -> None:
    qid = _judged_and_accepted(cli, store)
    topics, qrels = tmp_path / "topics.tsv", tmp_path / "team.qrels"
    topics.write_text("t1\treset password\n")
    qrels.write_text("t1 0 kb-reset-1 1\nt1 0 kb-gone 2\n")
    gold(cli, store, "import", str(qrels), "--as-source", "team", "--topics", str(topics))

    shown = json.loads(gold(cli, store, "show", qid, "--json").stdout)
    model = {m["chunk_id"]: m for m in shown["model_grades"]}
    assert model["kb-reset-1"]["grade"] == 2 and model["kb-reset-1"]["source"] == "judge:judge-1"
    assert "words in common" in model["kb-reset-1"]["reason"]
    others = {(s["source"], s["chunk_id"]): s["grade"] for s in shown["source_grades"]}
    assert others == {("import:team", "kb-reset-1"): 1, ("import:team", "kb-gone"): 2}
    assert {lab["chunk_id"]: lab["source"] for lab in shown["labels"]}["kb-reset-1"] == (
        "model-accept"
    )

    text = gold(cli, store, "show", qid).stdout
    table = text.split("grades by source", 1)[1].split("history", 1)[0].splitlines()
    header = next(line for line in table if "chunk_id" in line)
    assert _cells(header) == [
        "chunk_id", "person", "judge:judge-1", "import:team", "model's reason"
    ]  # fmt: skip
    row = next(line for line in table if "kb-reset-1" in line)
    # kb-reset-1: ana's 2 (taken from the model), the model's 2 and why, the team's 1
    cells = _cells(row)
    assert cells[:4] == ["kb-reset-1", "2 ana (model-accept)", "2", "1"]
    assert "words in common" in cells[4]
    gone = _cells(next(line for line in table if "kb-gone" in line))
    assert gone[:4] == ["kb-gone", "", "", "2"]


# --- the judge's run line: a re-run with nothing to ask, the cost, the embedding's time ---------


def test_a_judge_rerun_with_every_grade_current_says_so(cli, store: Path) -> None:
    with serve() as server:
        first = cli("--db", str(store), "gold", "draft", "-k", "2", "--judge", "llm",
                    "--base-url", server.base_url, "--model", "judge-1")  # fmt: skip
        again = cli("--db", str(store), "gold", "draft", "-k", "2", "--judge", "llm",
                    "--base-url", server.base_url, "--model", "judge-1")  # fmt: skip
    assert first.returncode == 0 and again.returncode == 0, again.stderr
    assert "graded 6 candidates of 3 queries" in first.stderr
    assert "graded 0" not in again.stderr
    assert "all 6 candidates of 3 queries were already graded by judge-1" in again.stderr


def test_prices_in_llm_settings_give_the_run_a_cost(cli, store: Path, tmp_path: Path) -> None:
    config = tmp_path / "goldmine.toml"
    config.write_text("[llm]\nprice_in_per_mtok = 1000\nprice_out_per_mtok = 5000\n")
    with serve() as server:
        out = cli("--db", str(store), "gold", "draft", "-k", "2", "--judge", "llm", "--json",
                  "--base-url", server.base_url, "--model", "judge-1",
                  env={"GOLDMINE_CONFIG": str(config)})  # fmt: skip
    assert out.returncode == 0, out.stderr
    # 6 calls of 50 prompt + 10 completion tokens (tests/fake_llm.py):
    # 300 x 1000 / 1e6 + 60 x 5000 / 1e6 = 0.30 + 0.30
    assert json.loads(out.stdout)["judge"]["usage"]["cost"] == pytest.approx(0.6)
    assert "300 prompt + 60 completion tokens" in out.stderr
    assert "cost 0.6000 at the [llm] prices" in out.stderr

    config.write_text('[llm]\nprice_in_per_mtok = "cheap"\n')
    bad = cli("--db", str(store), "gold", "draft", "--judge", "llm", "--base-url", "http://x",
              "--model", "m", env={"GOLDMINE_CONFIG": str(config)})  # fmt: skip
    assert bad.returncode == 2 and "[llm] price_in_per_mtok" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_no_prices_no_cost(cli, store: Path) -> None:
    with serve() as server:
        out = cli("--db", str(store), "gold", "draft", "-k", "2", "--judge", "llm", "--json",
                  "--base-url", server.base_url, "--model", "judge-1")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["judge"]["usage"]["cost"] is None
    assert "cost" not in out.stderr


@pytest.mark.slow
def test_synth_usage_counts_the_embedding_models_time(cli, store: Path) -> None:
    from fake_llm import Reply

    def responder(body, n):
        return Reply(json.dumps({"questions": [{"question": "get my invoice as a pdf"}]}))

    with serve(responder) as server:
        out = cli("--db", str(store), "gold", "synth", "--base-url", server.base_url,
                  "--model", "m1", "--chunks", "1", "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    seconds = json.loads(out.stdout)["usage"]["embed_load_seconds"]
    assert seconds > 0
    assert re.search(r"; embedding model loaded in [0-9.]+ s", out.stderr)


@pytest.mark.slow
def test_a_dense_draft_then_the_judge_counts_the_embedding_models_load(cli, store: Path) -> None:
    with serve() as server:
        out = cli("--db", str(store), "gold", "draft", "-k", "2", "--retriever", "dense",
                  "--judge", "llm", "--base-url", server.base_url, "--model", "judge-1",
                  "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["judge"]["usage"]["embed_load_seconds"] > 0
    assert re.search(r"judge: model .*; embedding model loaded in [0-9.]+ s", out.stderr)
