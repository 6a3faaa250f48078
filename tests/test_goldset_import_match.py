"""gold import joins what is there, and reads the topic layouts IR tools write.

Real files: Cranfield (``cran.qry``, ``cranqrel``, the abstracts) and Anserini's topic files for
Robust04 (TREC ``<top>``), TREC-COVID round 5 (XML) and DL20 (id<TAB>text, with graded qrels).
Judgments imported after some of the same queries were labelled by hand join those items: a
differing grade waits for adjudication with the file named as its source, never over the person's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from goldmine.errors import InputError
from goldmine.goldset import items as gi
from goldmine.goldset import raters
from goldmine.goldset.exchange import import_path, parse_grade_map, read_topics
from goldmine.goldset.review import QueueFilter, ReviewSession
from goldmine.goldset.versions import publish
from goldmine.store import open_store, transaction

from helpers import gold, store_corpus
from realdata import cranfield_chunks, cranfield_queries

CRANFIELD_MAP = "1=2,2=2,3=1,4=1,-1=0"


# --- topics ----------------------------------------------------------------------------------


def test_trec_top_topics_by_field(shared_dataset) -> None:
    path = shared_dataset("datasets", "trec_topics", "topics.robust04.txt")
    titles = read_topics(path)
    assert len(titles) == 250
    assert titles["301"] == "International Organized Crime"
    assert titles["700"] == "gasoline tax U.S."
    desc = read_topics(path, field="desc")
    assert len(desc) == 250
    assert desc["301"].startswith("Identify organizations that participate in international")
    assert "Description:" not in desc["301"]
    narr = read_topics(path, field="narr")
    assert narr["302"].startswith("Relevant documents should contain data or outbreaks")
    assert "Narrative:" not in narr["302"]


def test_trec_covid_xml_topics_by_field(shared_dataset) -> None:
    path = shared_dataset("datasets", "trec_topics", "topics.covid-round5.xml")
    queries = read_topics(path)
    assert len(queries) == 50
    assert queries["1"] == "coronavirus origin"
    assert read_topics(path, field="desc")["1"] == "what is the origin of COVID-19"
    assert read_topics(path, field="narr")["2"].startswith("seeking range of information about")


def test_trec_jsonl_topics_with_id_and_title(tmp_path: Path) -> None:
    path = tmp_path / "topics.jsonl"
    path.write_text(
        '{"id": "2024-105741", "title": "is it safe to eat raw cookie dough", '
        '"description": "The user wants to know the risks of raw dough."}\n'
        '{"id": 42, "title": "tallest building in europe"}\n',
        encoding="utf-8",
    )
    assert read_topics(path) == {
        "2024-105741": "is it safe to eat raw cookie dough",
        "42": "tallest building in europe",
    }
    assert read_topics(path, field="desc")["2024-105741"].startswith("The user wants to know")


def test_query_tsv_with_a_header(tmp_path: Path) -> None:
    path = tmp_path / "queries.tsv"
    path.write_text("qid\tquery\n7\thow do solar panels work\n8\tbest hiking boots\n")
    assert read_topics(path) == {"7": "how do solar panels work", "8": "best hiking boots"}


def test_unknown_topic_field_is_one_line(shared_dataset) -> None:
    path = shared_dataset("datasets", "trec_topics", "topics.robust04.txt")
    with pytest.raises(InputError, match="--topic-field"):
        read_topics(path, field="summary")


def test_dl20_graded_qrels_with_their_topics(cli, shared_dataset, tmp_path: Path) -> None:
    folder = shared_dataset("datasets", "trec_topics")
    db = tmp_path / "dl20.duckdb"
    qrels, topics = folder / "qrels.dl20-passage.txt", folder / "topics.dl20.txt"
    out = gold(cli, db, "import", str(qrels), "--topics", str(topics), "--grade-map",
               "3=2,2=2,1=1,0=0", "--json")  # fmt: skip
    report = json.loads(out.stdout)
    assert report["added"] == 54 and report["matched"] == 0
    assert report["labels"] == report["labels_new"] == 11386
    shown = json.loads(gold(cli, db, "show", "1030303", "--json").stdout)
    assert shown["query"] == "who is aziz hashim"
    assert shown["status"] == "verified"


def test_topic_field_from_the_command_line(cli, shared_dataset, tmp_path: Path) -> None:
    topics = shared_dataset("datasets", "trec_topics", "topics.covid-round5.xml")
    qrels = tmp_path / "covid.qrels"
    qrels.write_text("1 0 doc-a 2\n1 0 doc-b 0\n2 0 doc-c 1\n")
    db = tmp_path / "covid.duckdb"
    gold(cli, db, "import", str(qrels), "--topics", str(topics), "--topic-field", "desc")
    shown = json.loads(gold(cli, db, "show", "1", "--json").stdout)
    assert shown["query"] == "what is the origin of COVID-19"


# --- matching what is there ------------------------------------------------------------------


@pytest.fixture
def hand_labelled(shared_dataset, tmp_path: Path) -> dict:
    """Cranfield's abstracts, and three of its queries typed in by hand before any import: query
    1 labelled and verified by ana (184=2 as the qrels say, 12=2 where the qrels say code 3, i.e.
    1, 486=0 as the code -1 says), query 2 a candidate nobody labelled, query 3 typed in capitals
    with other punctuation (the same normalized text)."""
    folder = shared_dataset("datasets", "cranfield")
    queries = cranfield_queries(folder)
    db = tmp_path / "cran.duckdb"
    with open_store(db) as con:
        store_corpus(con, [(c.id, c.title, c.text) for c in cranfield_chunks(folder)])
        with transaction(con):
            q1 = gi.add_item(con, queries["1"], origin="add-query", by="ana")
            gi.label(con, q1, {"184": 2, "12": 2, "486": 0}, by="ana")
            q2 = gi.add_item(con, queries["2"], origin="add-query", by="ana")
            q3 = gi.add_item(con, queries["3"].upper().replace(" .", "?"), origin="add-query",
                             by="ana")  # fmt: skip
    return {"db": db, "folder": folder, "ids": [q1, q2, q3]}


def _import(db: Path, folder: Path):
    with open_store(db) as con:
        return import_path(con, folder / "cranqrel", by="importer", topics=folder / "cran.qry",
                           grade_map=parse_grade_map(CRANFIELD_MAP))  # fmt: skip


def test_import_joins_items_typed_by_hand(hand_labelled) -> None:
    db, (_, q2, q3) = hand_labelled["db"], hand_labelled["ids"]
    result = _import(db, hand_labelled["folder"])
    assert (result.added, result.matched, result.already_present) == (222, 3, 3)
    assert result.labels == 1837
    assert (result.labels_same, result.labels_different) == (2, 1)
    assert result.labels_new == 1837 - 3
    with open_store(db) as con:
        n_items, n_norm = con.execute(
            "SELECT count(*), count(DISTINCT norm_query) FROM gold_items"
        ).fetchall()[0]
        assert n_items == n_norm == 225
        # Query 2, a candidate, took the file's labels through the item functions: verified,
        # every grade in its history.
        two = gi.show_item(con, q2)
        assert two["status"] == "verified"
        assert {lab["chunk_id"]: lab["grade"] for lab in two["labels"]}["746"] == 2
        assert sum(h["action"] == "grade" for h in two["history"]) == 25
        assert gi.get_item(con, q3)["status"] == "verified"


def test_a_differing_grade_waits_for_adjudication_with_its_source(hand_labelled) -> None:
    db, q1 = hand_labelled["db"], hand_labelled["ids"][0]
    _import(db, hand_labelled["folder"])
    with open_store(db) as con:
        labels = {lab["chunk_id"]: lab for lab in gi.labels_of(con, q1)}
        # Neither grade is written over the other: chunk 12 is a candidate again carrying ana's
        # grade, for an adjudicator to decide; the file's new chunks are added beside it.
        assert labels["12"]["kind"] == "draft" and labels["12"]["grade"] is None
        assert labels["12"]["suggested_grade"] == 2 and labels["12"]["who"] == "ana"
        assert labels["184"]["grade"] == 2 and labels["184"]["who"] == "ana"
        assert labels["29"]["grade"] == 2 and labels["29"]["kind"] == "label"
        assert [w["query_id"] for w in raters.waiting_adjudication(con)] == [q1]
        seen = raters.all_ratings(con, q1)
        assert seen["ana"]["12"] == 2
        assert seen["import:cranqrel"]["12"] == 1
        history = gi.history_of(con, q1)
        assert history[-1]["action"] in ("disagree", "status")
        assert any(h["action"] == "disagree" and "import:cranqrel" in json.dumps(h["detail"])
                   for h in history)  # fmt: skip
        with pytest.raises(InputError, match="adjudication"):
            publish(con, "v1", by="ana")
    # The adjudicator's queue holds it with both sides shown; a plain review (nobody assigned
    # anything in this store) does not offer it as one more item to label.
    view = ReviewSession(db, "dana", QueueFilter(adjudicate=True)).view()
    assert view is not None and view.item["query_id"] == q1
    assert view.ratings["import:cranqrel"] == {"12": 1} and view.ratings["ana"] == {"12": 2}
    assert view.current is not None and view.current["chunk_id"] == "12"
    plain = ReviewSession(db, "ben").view()
    assert plain is None or plain.item["query_id"] != q1
    with open_store(db) as con:
        # The adjudicator decides with an ordinary grade; the item is verified again.
        with transaction(con):
            gi.label(con, q1, {"12": 1}, by="dana")
        assert gi.get_item(con, q1)["status"] == "verified"
        assert raters.waiting_adjudication(con) == []


def test_importing_the_same_file_again_changes_nothing(hand_labelled) -> None:
    db, folder = hand_labelled["db"], hand_labelled["folder"]
    _import(db, folder)
    with open_store(db) as con:
        before = con.execute("SELECT count(*) FROM gold_history").fetchall()[0][0]
    again = _import(db, folder)
    assert (again.added, again.matched, again.labels_new, again.disputed) == (0, 225, 0, 0)
    assert again.labels_same == 1837 - 1 and again.labels_different == 1
    with open_store(db) as con:
        assert con.execute("SELECT count(*) FROM gold_history").fetchall()[0][0] == before
        assert con.execute("SELECT count(*) FROM gold_items").fetchall()[0][0] == 225
        # Once decided (here for ana's grade), the same file does not dispute it again.
        with transaction(con):
            gi.label(con, hand_labelled["ids"][0], {"12": 2}, by="dana")
        decided = con.execute("SELECT count(*) FROM gold_history").fetchall()[0][0]
    third = _import(db, folder)
    assert (third.labels_different, third.disputed) == (1, 0)
    with open_store(db) as con:
        assert con.execute("SELECT count(*) FROM gold_history").fetchall()[0][0] == decided
        assert gi.get_item(con, hand_labelled["ids"][0])["status"] == "verified"


def test_the_report_names_matched_and_label_counts(cli, hand_labelled) -> None:
    db, folder = hand_labelled["db"], hand_labelled["folder"]
    out = gold(cli, db, "import", str(folder / "cranqrel"), "--topics", str(folder / "cran.qry"),
               "--grade-map", CRANFIELD_MAP)  # fmt: skip
    assert out.stdout.startswith("imported 222 verified queries (trec), 1837 labels")
    assert "3 already in the set" in out.stdout
    assert "1834 new, 2 the same, 1 different" in out.stdout
    assert "adjudicate" in out.stdout + out.stderr


def test_a_files_no_answer_joins_open_items_and_disputes_a_persons_answer(tmp_path: Path) -> None:
    db = tmp_path / "na.duckdb"
    with open_store(db) as con:
        store_corpus(con, [("kb-1", "Reset", "How to reset a password."),
                           ("kb-2", "VPN", "Set up the VPN client.")])  # fmt: skip
        with transaction(con):
            answered = gi.add_item(con, "reset my password", origin="add-query", by="ana")
            gi.label(con, answered, {"kb-1": 2}, by="ana")
            open_id = gi.add_item(con, "Quantum teleportation?", origin="add-query", by="ana")
    judged = tmp_path / "gold.jsonl"
    judged.write_text(
        json.dumps({"query_id": "x1", "query": "Reset my password!", "no_answer": True}) + "\n"
        + json.dumps({"query_id": "x2", "query": "quantum teleportation", "relevant": []})
        + "\n"
    )  # fmt: skip
    with open_store(db) as con:
        result = import_path(con, judged, by="importer")
        assert (result.added, result.matched, result.disputed) == (0, 2, 1)
        # The open item took the file's "no answer"; the person's answer stands, disputed.
        assert gi.get_item(con, open_id)["status"] == "verified"
        assert gi.get_item(con, open_id)["no_answer"]
        assert gi.get_item(con, answered)["status"] == "drafted"
        assert [(c["chunk_id"], c["kind"], c["suggested_grade"])
                for c in gi.labels_of(con, answered)] == [("kb-1", "draft", 2)]  # fmt: skip
        seen = raters.all_ratings(con, answered)
        assert seen["import:gold.jsonl"] == {None: 1} and seen["ana"] == {"kb-1": 2}
        assert con.execute("SELECT count(*) FROM gold_items").fetchall()[0][0] == 2


def test_a_query_a_person_rejected_stays_rejected(tmp_path: Path) -> None:
    db = tmp_path / "rej.duckdb"
    with open_store(db) as con:
        store_corpus(con, [("kb-1", "Reset", "How to reset a password.")])
        with transaction(con):
            spam = gi.add_item(con, "asdf asdf", origin="add-query", by="ana")
            gi.set_status(con, spam, "rejected", "ana")
    judged = tmp_path / "gold.jsonl"
    judged.write_text(json.dumps({"query_id": "s1", "query": "ASDF asdf", "relevant": ["kb-1"]}))
    with open_store(db) as con:
        result = import_path(con, judged, by="importer")
        assert (result.added, result.matched, result.labels) == (0, 1, 0)
        assert any("rejected" in note for note in result.notes)
        assert gi.get_item(con, spam)["status"] == "rejected"
        assert gi.labels_of(con, spam) == []


def test_dl20_qrels_as_ir_datasets_exports_them_import_as_the_trec_file(
    cli, shared_dataset, tmp_path: Path
) -> None:
    """The JSON-lines qrels reader on real judgments: DL20's 11,386, written as
    ``ir_datasets export msmarco-passage/trec-dl-2020 qrels --format jsonl`` writes them, import
    as the TREC file does, every line counted."""
    folder = shared_dataset("datasets", "trec_topics")
    lines = (folder / "qrels.dl20-passage.txt").read_text().split("\n")
    rows = [line.split() for line in lines if line.strip()]
    jsonl = tmp_path / "dl20-qrels.jsonl"
    jsonl.write_text("".join(
        json.dumps({"query_id": q, "doc_id": d, "relevance": int(g), "iteration": i}) + "\n"
        for q, i, d, g in rows
    ))  # fmt: skip
    topics = folder / "topics.dl20.txt"
    reports = [
        json.loads(gold(cli, tmp_path / f"{name}.duckdb", "import", str(path), "--topics",
                        str(topics), "--grade-map", "3=2,2=2,1=1,0=0", "--json").stdout)
        for name, path in (("trec", folder / "qrels.dl20-passage.txt"), ("jsonl", jsonl))
    ]  # fmt: skip
    assert reports[1]["format"] == "qrels_jsonl" and reports[0]["format"] == "trec"
    assert len(rows) == reports[1]["labels"] == reports[0]["labels"] == 11386
    assert reports[1]["added"] == reports[0]["added"] == 54


@pytest.mark.parametrize(
    ("parts", "words"),
    [
        (("cranfield", "cran.all.1400"), ("SMART", "ingest corpus")),
        (("cranfield", "cran.qry"), ("SMART", "--topics")),
        (("trec_topics", "topics.robust04.txt"), ("topics file", "--topics")),
        (("trec_topics", "topics.covid-round5.xml"), ("topics file", "--topics")),
        (("trec_topics", "topics.dl20.txt"), ("topics", "--topics")),
        (("banking77", "train.csv"), ("comma-separated",)),
    ],
)
def test_real_files_that_are_no_judgments_are_named(cli, shared_dataset, tmp_path, parts, words):
    """The public files a user might hand gold import by mistake, each named for what it is."""
    path = shared_dataset("datasets", *parts)
    result = gold(cli, tmp_path / "s.duckdb", "import", str(path), ok=False)
    assert result.returncode == 2 and "\n" not in result.stderr.strip()
    for word in words:
        assert word in result.stderr
    assert not (tmp_path / "s.duckdb").exists()
