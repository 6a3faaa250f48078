"""``goldmine add --file`` with the list a colleague kept in a spreadsheet.

"Ask five colleagues what they would type" comes back as a CSV or TSV saved from a sheet: a header
row (``query,owner``) and quoted cells holding commas. Each line was one query, so the header
became a query called "query", and ``"reset my password, please",alice`` was stored with its
quotes and the owner's name. A file with such a header gives its query column; a plain list of
lines is read as before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from goldmine.errors import InputError
from goldmine.ingest import api
from goldmine.store import open_store


def added(db_path: Path, path: Path) -> list[str]:
    with open_store(db_path) as con:
        api.add(con, [], file=path, source="colleague")
        return sorted(r[0] for r in con.execute("SELECT query FROM manual_queries").fetchall())


def test_a_csv_with_a_query_column(tmp_path: Path, db_path: Path) -> None:
    path = tmp_path / "asked.csv"
    path.write_text('query,owner\n"reset my password, please",alice\nvpn on linux,bob\n,carol\n')
    assert added(db_path, path) == ["reset my password, please", "vpn on linux"]


def test_a_tsv_saved_from_a_sheet_with_the_column_in_words(tmp_path: Path, db_path: Path) -> None:
    path = tmp_path / "asked.tsv"
    path.write_text("Owner\tSearch Query\r\nalice\tinvoice copy\r\nbob\trefund status\r\n")
    assert added(db_path, path) == ["invoice copy", "refund status"]


def test_a_topics_file_of_ids_and_queries_gives_the_queries(tmp_path: Path, db_path: Path) -> None:
    """TREC's query TSVs (``topics.dl20.txt``: ``qid<TAB>query``, no header, CRLF) were stored
    a line a query, id and tab inside: ``1030303\twho is aziz hashim`` never joined the item a
    qrels import made of ``who is aziz hashim``."""
    path = tmp_path / "topics.dl20.txt"
    path.write_text("1030303\twho is aziz hashim\r\n1037496\twho is rep scalise?\r\n\r\n")
    assert added(db_path, path) == ["who is aziz hashim", "who is rep scalise?"]


def test_queries_holding_a_tab_are_no_id_column(tmp_path: Path, db_path: Path) -> None:
    path = tmp_path / "asked.txt"
    path.write_text("reset password\tandroid\nhow to export\n")
    assert added(db_path, path) == ["how to export", "reset password\tandroid"]


def test_a_list_of_lines_is_read_as_before(tmp_path: Path, db_path: Path) -> None:
    path = tmp_path / "asked.txt"
    path.write_text("query\nhow do I, as an admin, add a user\n")
    assert added(db_path, path) == ["how do I, as an admin, add a user", "query"]


def test_a_list_with_an_unclosed_quote_is_read_as_lines(tmp_path: Path, db_path: Path) -> None:
    """A plain list whose first query holds a comma was parsed whole as CSV before its header
    was looked at: a query typed with an opening quote alone ('"how to export') made the rest
    of the file one field, and past 128 KiB Python's csv module ended in a traceback."""
    queries = ["reset password, android", '"how to export']
    queries += [f"query number {i} about invoices" for i in range(6000)]
    path = tmp_path / "asked.txt"
    path.write_text("\n".join(queries) + "\n")
    assert added(db_path, path) == sorted(queries)


def test_a_sheet_with_an_overlong_cell_is_one_error_line(tmp_path: Path, db_path: Path) -> None:
    path = tmp_path / "asked.csv"
    path.write_text('query,owner\n"' + "pasted page " * 12000 + '",alice\n')
    with pytest.raises(InputError, match="asked.csv: .*field"):
        added(db_path, path)


def test_a_real_sheet_gives_every_row_its_query(shared_dataset, db_path: Path) -> None:
    """banking77's train.csv as a sheet of queries (``text,category``, quoted cells holding
    commas): each of its 10,003 rows is one query, none lost, none with its category."""
    path = shared_dataset("datasets", "banking77", "train.csv")
    with open_store(db_path) as con:
        result = api.add(con, [], file=path, source="banking77")
        texts = [r[0] for r in con.execute("SELECT query FROM manual_queries").fetchall()]
    assert result.total["rows_in"] == 10_003 and result.total["rejected"] == 0
    assert len(texts) == 10_003
    assert "I am still waiting on my card?" in texts
    assert not any(t.endswith(",card_arrival") for t in texts)


def test_words_and_counts_are_no_topics_file(tmp_path: Path, db_path: Path) -> None:
    """``vpn<TAB>12``: its first column holds no id, so it is no topics file (its lines are
    the queries, as before); a topics file's header row is no query."""
    path = tmp_path / "counts.tsv"
    path.write_text("vpn\t12\nprinter\t3\n")
    assert added(db_path, path) == ["printer\t3", "vpn\t12"]
    topics = tmp_path / "topics.tsv"
    topics.write_text("qid\ttopic\n101\treset password\n102\tvpn setup\n")
    assert added(tmp_path / "t.duckdb", topics) == ["reset password", "vpn setup"]


def test_the_real_dl20_topics_file_gives_every_query(db_path: Path, shared_dataset) -> None:
    """TREC DL 2020's own topics file (CRLF, no header): each of its 200 lines is one query,
    its text alone; none is lost and no id is left inside a query."""
    path = shared_dataset("datasets", "trec_topics", "topics.dl20.txt")
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    got = added(db_path, path)
    assert len(got) == len(lines) == 200
    assert sorted(got) == sorted(line.split("\t")[1].strip() for line in lines)


# --- the topic files IR collections ship, and query files as tools write them -----------------


def test_cranfields_cran_qry_gives_its_225_queries(shared_dataset, tmp_path, db_path) -> None:
    """``add --file cran.qry`` stored each line of the SMART records as a query: ``.I 001``,
    ``.W`` and every query cut at its line ends (918 "queries" for 225)."""
    queries = added(db_path, shared_dataset("datasets", "cranfield", "cran.qry"))
    assert len(queries) == 225
    assert "what similarity laws must be obeyed when constructing aeroelastic models of heated " \
        "high speed aircraft ." in queries  # fmt: skip
    assert not [q for q in queries if q.startswith(".") or "\n" in q]


@pytest.mark.parametrize(
    ("name", "count", "first"),
    # Robust04's 250 titles hold "Airport Security" and "airport security": one query
    [("topics.robust04.txt", 249, "International Organized Crime"),
     ("topics.covid-round5.xml", 50, "coronavirus origin")],
)  # fmt: skip
def test_trec_topic_files_give_their_titles(shared_dataset, db_path, name, count, first) -> None:
    queries = added(db_path, shared_dataset("datasets", "trec_topics", name))
    assert len(queries) == count and first in queries
    assert not [q for q in queries if "<" in q]


@pytest.mark.parametrize(
    "lines",
    [['{"query": "reset my password"}', '{"query": "card declined abroad", "user": "u1"}'],
     ['{"_id": "1", "text": "reset my password"}', '{"_id": "2", "text": "card declined abroad"}'],
     ['[{"question": "reset my password"},', '{"question": "card declined abroad"}]']],
    ids=["jsonl-query", "beir-queries", "json-array"],
)  # fmt: skip
def test_json_queries_give_their_text_not_the_json(tmp_path, db_path, lines) -> None:
    """A JSON lines file of queries was stored a line a query, braces and keys included."""
    path = tmp_path / "queries.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert added(db_path, path) == ["card declined abroad", "reset my password"]


def test_a_llamaindex_dataset_gives_its_queries(tmp_path, db_path) -> None:
    path = tmp_path / "val_dataset.json"
    path.write_text(json.dumps({
        "queries": {"a1": "What was Lyft's revenue in 2021?", "b2": "How many riders?"},
        "corpus": {"n1": "Revenue was $3.2 billion."}, "relevant_docs": {"a1": ["n1"]},
        "mode": "text"}, indent=4))  # fmt: skip
    assert added(db_path, path) == ["How many riders?", "What was Lyft's revenue in 2021?"]


def test_json_lines_without_a_query_say_which_keys_they_hold(tmp_path, db_path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"id": "1", "body": "reset my password"}\n')
    with pytest.raises(InputError, match="no query text.*found id, body"):
        added(db_path, path)


def test_queries_that_start_with_a_bracket_are_lines(tmp_path, db_path) -> None:
    path = tmp_path / "asked.txt"
    path.write_text("[urgent] reset my password\n{draft} invoice copy\n")
    assert added(db_path, path) == ["[urgent] reset my password", "{draft} invoice copy"]


def test_a_query_mentioning_a_tag_is_a_line(tmp_path, db_path) -> None:
    path = tmp_path / "asked.txt"
    path.write_text("how to center a div\nwhat does <top> mean in css\nreset password\n")
    assert added(db_path, path) == ["how to center a div", "reset password",
                                    "what does <top> mean in css"]  # fmt: skip


def test_the_session_tracks_log_is_sent_to_ingest_searchlog(shared_dataset, db_path) -> None:
    """``add --file sessiontrack2012.xml`` said its topics had no title and named
    --topic-field, an option add has not; its searches are ingest searchlog's."""
    path = shared_dataset("datasets", "trec_session_track", "sessiontrack2012.xml")
    with pytest.raises(InputError, match="ingest searchlog"):
        added(db_path, path)
