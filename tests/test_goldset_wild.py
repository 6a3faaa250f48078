"""``gold import`` of another team's judgments and topics as they come: gzipped, with comment
lines or a header row, quoted TSV topics, gold JSONL in the shapes eval reads. Each is read as
the format's own tools read it, or stops with one ``error:`` line that says what to do; never a
row lost or a chunk id made up without a word. And what ``gold export`` writes reads back."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from goldmine.errors import InputError
from goldmine.goldset.exchange import read_topics
from goldmine.store import open_store

TOPICS = "1\treset my password\n2\tvpn setup\n3\trefund in bitcoin\n"
QRELS = "1 0 kb-1 2\n1 0 kb-2 0\n2 0 kb-3 1\n3 0 kb-4 0\n"
# What QRELS with TOPICS store: (query_id, query, no_answer) and (query_id, chunk_id, grade).
ITEMS = [("1", "reset my password", False), ("2", "vpn setup", False),
         ("3", "refund in bitcoin", True)]  # fmt: skip
LABELS = [("1", "kb-1", 2), ("1", "kb-2", 0), ("2", "kb-3", 1), ("3", "kb-4", 0)]


def stored(db: Path) -> tuple[list, list]:
    with open_store(db) as con:
        items = con.execute(
            "SELECT query_id, query, no_answer FROM gold_items ORDER BY query_id"
        ).fetchall()
        labels = con.execute(
            "SELECT query_id, chunk_id, grade FROM gold_labels WHERE kind = 'label' "
            "ORDER BY query_id, chunk_id"
        ).fetchall()
    return items, labels


def source_grades(db: Path) -> list[tuple]:
    """(query_id, chunk_id, grade) of every source judgment naming a chunk."""
    with open_store(db) as con:
        return con.execute(
            "SELECT query_id, chunk_id, grade FROM gold_source_grades WHERE chunk_id IS NOT NULL "
            "ORDER BY query_id, chunk_id"
        ).fetchall()


def imported(cli, tmp_path: Path, files: dict[str, str | bytes], *args: str):
    """Write the files into tmp_path and run ``gold import`` with ``args`` (file names are
    taken as paths in tmp_path)."""
    for name, data in files.items():
        (tmp_path / name).write_bytes(data if isinstance(data, bytes) else data.encode())
    paths = [str(tmp_path / a) if a in files else a for a in args]
    return cli("--db", str(tmp_path / "s.duckdb"), "gold", "import", *paths, "--by", "ana")


def with_topics(cli, tmp_path: Path, qrels: str, topics: str):
    """``gold import qrels --topics t.tsv`` of the two texts."""
    files = {"qrels": qrels, "t.tsv": topics}
    return imported(cli, tmp_path, files, "qrels", "--topics", "t.tsv")


def assert_one_error_line(result, *words: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    error = result.stderr.strip()
    assert error.startswith("error:") and "\n" not in error and "Traceback" not in error, error
    for word in words:
        assert word in error, error


def test_gzipped_qrels_and_topics_import_as_the_plain_files(cli, tmp_path) -> None:
    files = {
        "qrels.gz": gzip.compress(QRELS.encode()),
        "topics.tsv.gz": gzip.compress(TOPICS.encode()),
    }
    result = imported(cli, tmp_path, files, "qrels.gz", "--topics", "topics.tsv.gz")
    assert result.returncode == 0, result.stderr
    assert stored(tmp_path / "s.duckdb") == (ITEMS, LABELS)


def test_gzipped_gold_jsonl_imports_as_jsonl(cli, tmp_path) -> None:
    lines = [{"query_id": "1", "query": "reset my password", "relevant": {"kb-1": 2}}]
    data = gzip.compress("".join(json.dumps(o) + "\n" for o in lines).encode())
    result = imported(cli, tmp_path, {"gold.jsonl.gz": data}, "gold.jsonl.gz")
    assert result.returncode == 0, result.stderr
    assert stored(tmp_path / "s.duckdb")[1] == [("1", "kb-1", 2)]


def test_qrels_comment_lines_and_a_header_row_are_skipped(cli, tmp_path) -> None:
    qrels = "qid iter docno rel\n# judged by team B\n" + QRELS + "# end\n"
    result = with_topics(cli, tmp_path, qrels, TOPICS)
    assert result.returncode == 0, result.stderr
    assert stored(tmp_path / "s.duckdb") == (ITEMS, LABELS)


def test_a_judgment_given_twice_with_two_grades_is_refused(cli, tmp_path) -> None:
    result = with_topics(cli, tmp_path, QRELS + "1 0 kb-1 1\n", TOPICS)
    assert_one_error_line(result, "kb-1", "lines 1 and 5")
    again = with_topics(cli, tmp_path, QRELS + "1 0 kb-1 2\n", TOPICS)  # the same grade: one label
    assert again.returncode == 0, again.stderr
    assert stored(tmp_path / "s.duckdb") == (ITEMS, LABELS)


def test_gold_jsonl_naming_a_query_twice_is_refused_not_half_read(cli, tmp_path) -> None:
    lines = [{"query_id": "1", "query": "reset my password", "relevant": {"kb-1": 2}},
             {"query_id": "1", "query": "reset my password", "relevant": {"kb-2": 1}}]  # fmt: skip
    data = "".join(json.dumps(o) + "\n" for o in lines)
    result = imported(cli, tmp_path, {"gold.jsonl": data}, "gold.jsonl")
    assert_one_error_line(result, "'1'", "lines 1 and 2")
    assert stored(tmp_path / "s.duckdb") == ([], [])


def test_gold_jsonl_relevant_as_id_grade_objects_imports_the_ids(cli, tmp_path) -> None:
    """The shape ``eval run --gold`` reads: a list of {id, grade} objects."""
    relevant = [{"id": "kb-1", "grade": 2}, {"chunk_id": "kb-2", "grade": 0}, "kb-5"]
    line = {"query_id": "1", "query": "reset my password", "relevant": relevant}
    result = imported(cli, tmp_path, {"gold.jsonl": json.dumps(line) + "\n"}, "gold.jsonl")
    assert result.returncode == 0, result.stderr
    labels = stored(tmp_path / "s.duckdb")[1]
    assert labels == [("1", "kb-1", 2), ("1", "kb-2", 0), ("1", "kb-5", 1)]


def test_quoted_tsv_topics_lose_their_quotes(cli, tmp_path) -> None:
    """R's write.table and csv.QUOTE_ALL quote every field: the quotes are no part of a query."""
    topics = (
        '"qid"\t"query"\n"1"\t"reset my password"\n"2"\t"vpn setup"\n"3"\t"refund in ""bitcoin"""\n'
    )
    result = with_topics(cli, tmp_path, QRELS, topics)
    assert result.returncode == 0, result.stderr
    texts = [text for _, text, _ in stored(tmp_path / "s.duckdb")[0]]
    assert texts == ["reset my password", "vpn setup", 'refund in "bitcoin"']


def test_a_quote_inside_one_unquoted_topic_stays(cli, tmp_path) -> None:
    topics = TOPICS.replace("vpn setup", '"vpn" setup')
    result = with_topics(cli, tmp_path, QRELS, topics)
    assert result.returncode == 0, result.stderr
    assert stored(tmp_path / "s.duckdb")[0][1][1] == '"vpn" setup'


def test_topic_ids_with_leading_zeros_are_named_when_the_qrels_lack_them(cli, tmp_path) -> None:
    topics = TOPICS.replace("1\t", "001\t").replace("2\t", "002\t").replace("3\t", "003\t")
    result = with_topics(cli, tmp_path, QRELS, topics)
    assert_one_error_line(result, "001", "leading zeros")


# What each ``gold export --format`` writes under --out: the judgments, and whether the query
# texts come in with them or from the trec export's topics file.
WRITTEN = {
    "trec": ("v0001.qrels", True),
    "beir": ("v0001-beir", False),
    "ir_measures": ("v0001.qrels.tsv", True),
    "ranx": ("v0001.qrels.json", True),
    "hf": ("v0001-hf", False),
}


def exported_back(cli, tmp_path: Path, fmt: str) -> list[str]:
    """QRELS and TOPICS imported, published as v1 and exported as ``fmt``: the arguments that
    import the export back (the judgments, with the trec export's topics where it needs them)."""
    first = tmp_path / "first"
    first.mkdir()
    result = with_topics(cli, first, QRELS, TOPICS)
    assert result.returncode == 0, result.stderr
    db = str(first / "s.duckdb")
    assert cli("--db", db, "gold", "publish", "-m", "v1").returncode == 0
    for each in {fmt, "trec"}:
        out = str(tmp_path / each)
        exported = cli("--db", db, "gold", "export", "--format", each, "--out", out)
        assert exported.returncode == 0, exported.stderr
    name, needs_topics = WRITTEN[fmt]
    topics = ["--topics", str(tmp_path / "trec" / "v0001.topics.tsv")] if needs_topics else []
    return [str(tmp_path / fmt / name), *topics]


@pytest.mark.parametrize("fmt", sorted(WRITTEN))
def test_every_export_format_imports_back_into_a_new_store(cli, tmp_path, fmt) -> None:
    second = tmp_path / "second.duckdb"
    args = exported_back(cli, tmp_path, fmt)
    back = cli("--db", str(second), "gold", "import", *args, "--by", "ana")
    assert back.returncode == 0, back.stderr
    assert stored(second) == (ITEMS, LABELS)


def test_as_source_reads_comments_a_header_and_gzip_as_a_plain_import_does(cli, tmp_path) -> None:
    qrels = "qid iter docno rel\n# team B, pass 2\n" + QRELS
    files = {"qrels.gz": gzip.compress(qrels.encode()), "t.tsv": TOPICS}
    result = imported(cli, tmp_path, files, "qrels.gz", "--topics", "t.tsv", "--as-source", "b")
    assert result.returncode == 0, result.stderr
    assert source_grades(tmp_path / "s.duckdb") == LABELS


COVID_XML = """<?xml version="1.0" encoding="UTF-8"?>
<topics task="COVIDSearch 2020" batch="5">
  <topic number="1">
    <query>R&amp;D &lt;vaccine&gt; &quot;mRNA&quot; caf&#233;</query>
    <question>what is known?</question>
    <narrative><![CDATA[seeking <b>any</b> study]]></narrative>
  </topic>
  <topic number='2'>
    <query>
      vpn
      setup
    </query>
    <question>how is a vpn set up?</question>
  </topic>
</topics>
"""


@pytest.mark.parametrize(
    ("field", "texts"),
    [
        ("title", {"1": 'R&D <vaccine> "mRNA" café', "2": "vpn setup"}),
        ("desc", {"1": "what is known?", "2": "how is a vpn set up?"}),
        ("narr", {"1": "seeking <b>any</b> study"}),
    ],
)
def test_trec_covid_xml_topics_read_as_an_xml_parser_reads_them(tmp_path, field, texts) -> None:
    """Entities and CDATA are XML's, not the query's; an attribute may take either quote."""
    path = tmp_path / "topics.xml"
    path.write_text(COVID_XML, encoding="utf-8")
    assert read_topics(path, [], field) == texts


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("t.tsv", "1\treset my password\n2\tvpn setup\n1\tforgot my password\n"),
        ("t.jsonl", '{"_id": "1", "text": "reset my password"}\n{"_id": 1, "text": "forgot it"}\n'),
        (
            "t.xml",
            '<topics><topic number="1"><query>a</query></topic>'
            '<topic number="1"><query>b</query></topic></topics>',
        ),  # fmt: skip
        ("t.txt", "<top><num> Number: 1\n<title> a\n</top>\n<top><num> 1\n<title> b\n</top>\n"),
    ],
)
def test_a_topic_id_given_two_texts_is_refused(tmp_path, name, text) -> None:
    """Which text is the query is the file's to say: neither is taken without a word."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match="twice"):
        read_topics(path)


def test_the_same_topic_twice_with_one_text_reads_once(tmp_path) -> None:
    path = tmp_path / "t.tsv"
    path.write_text(TOPICS + "2\tvpn setup\n", encoding="utf-8")
    assert read_topics(path)["2"] == "vpn setup"


def test_a_run_given_to_gold_import_is_told_to_go_to_eval(cli, tmp_path) -> None:
    run = "1 Q0 kb-1 1 2.5 bm25\n1 Q0 kb-2 2 1.5 bm25\n"
    result = with_topics(cli, tmp_path, run, TOPICS)
    assert_one_error_line(result, "TREC run", "eval run")


@pytest.mark.parametrize(
    ("fmt", "relevant"),
    [
        ("trec", {"doc 1": 2}),
        ("beir", {"doc\t1": 2}),
        ("trec", {"d\n1": 1}),
        ("trec", {"d\x001": 2}),
    ],
)
def test_export_refuses_an_id_its_format_cannot_hold(cli, tmp_path, fmt, relevant) -> None:
    """A space splits a TREC qrels line, a tab a BEIR one: written anyway, trec_eval and BEIR
    read other ids and grades than the version's. trec_eval, in C, reads an id up to a NUL."""
    line = {"query_id": "1", "query": "reset my password", "relevant": relevant}
    result = imported(cli, tmp_path, {"gold.jsonl": json.dumps(line) + "\n"}, "gold.jsonl")
    assert result.returncode == 0, result.stderr
    db = str(tmp_path / "s.duckdb")
    assert cli("--db", db, "gold", "publish", "-m", "v1").returncode == 0
    out = tmp_path / "out"
    exported = cli("--db", db, "gold", "export", "--format", fmt, "--out", str(out))
    assert_one_error_line(exported, "export --format hf or jsonl")
    assert not any(p.is_file() for p in out.rglob("*"))


def _published(cli, tmp_path: Path, lines: list[dict]) -> str:
    """Gold JSONL ``lines`` imported and published as v1; the store's path."""
    data = "".join(json.dumps(line) + "\n" for line in lines)
    result = imported(cli, tmp_path, {"gold.jsonl": data}, "gold.jsonl")
    assert result.returncode == 0, result.stderr
    db = str(tmp_path / "s.duckdb")
    assert cli("--db", db, "gold", "publish", "-m", "v1").returncode == 0
    return db


@pytest.mark.parametrize(
    ("fmt", "query_id", "relevant", "words"),
    [
        ("trec", "#1", {"kb-1": 2}, "starting with #"),
        ("ir_measures", "#1", {"kb-1": 2}, "starting with #"),
        ("beir", '"1', {"kb-1": 2}, "starting with a double quote"),
        ("beir", "1", {'"kb-1"': 2}, "starting with a double quote"),
    ],
)
def test_export_refuses_a_line_its_readers_take_for_a_comment_or_a_quote(
    cli, tmp_path, fmt, query_id, relevant, words
) -> None:
    """trec_eval (and gold import) skip a qrels line starting with #: query "#1" was written
    and its judgments left the score without a word. BEIR reads qrels/test.tsv with Python's
    csv quoting: an id starting with " opened a quoted field running over the tabs and lines
    after it, and BEIR's loader stopped on a grade that was no number."""
    line = {"query_id": query_id, "query": "reset my password", "relevant": relevant}
    db = _published(cli, tmp_path, [line])
    out = tmp_path / "out"
    exported = cli("--db", db, "gold", "export", "--format", fmt, "--out", str(out))
    assert_one_error_line(exported, words, "export --format hf or jsonl")
    assert not any(p.is_file() for p in out.rglob("*"))


def test_beir_export_reads_back_as_beir_reads_it_with_quotes_and_hashes_inside(
    cli, tmp_path
) -> None:
    """A quote inside an id, or a # anywhere but a TREC line's start, is data to every reader:
    BEIR's own reading (csv, tab-delimited, minimal quoting) gives the version's judgments."""
    import csv

    lines = [{"query_id": 'q"1', "query": "reset my password",
              "relevant": {'kb"1': 2, "#kb-2": 1, "kb,3": 0}},
             {"query_id": "q#2", "query": "vpn setup", "relevant": {"kb-4'": 2}}]  # fmt: skip
    db = _published(cli, tmp_path, lines)
    out = tmp_path / "out"
    assert cli("--db", db, "gold", "export", "--format", "beir", "--out", str(out)).returncode == 0
    with (out / "v0001-beir" / "qrels" / "test.tsv").open(encoding="utf-8") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_MINIMAL)  # BEIR's
        next(reader)
        qrels = {(row[0], row[1], int(row[2])) for row in reader}
    assert qrels == {('q"1', 'kb"1', 2), ('q"1', "#kb-2", 1), ('q"1', "kb,3", 0),
                     ("q#2", "kb-4'", 2)}  # fmt: skip


# Where each export's files are, under --out, and what else its import needs.
EXPORTED = {
    "jsonl": ("v0001.jsonl", []),
    "beir": ("v0001-beir", []),
    "ranx": ("v0001.qrels.json", ["--topics", "beir/v0001-beir/queries.jsonl"]),
    "hf": ("v0001-hf", []),
}


@pytest.mark.parametrize("fmt", sorted(EXPORTED))
def test_texts_and_ids_holding_unicode_line_separators_read_back(cli, tmp_path, fmt) -> None:
    """U+2028, U+0085 (cp1252's ellipsis read as Latin-1) and a form feed in a query's text
    or a chunk id: gold export writes them as they are, as JSON and TSV may hold them, and
    gold import split its own files at them (``str.splitlines``): a version file failed as
    "not JSON" and a BEIR folder's queries likewise. A line ends at LF, CRLF or CR, as the
    formats' own readers (and BEIR's, and ``datasets``') take it."""
    line = {"query_id": "q1", "query": "one\u2028two\x85three\x0cfour",
            "relevant": {"a\u2028b": 2, "c\x85d": 1, "e\x0cf": 0}}  # fmt: skip
    db = _published(cli, tmp_path, [line])
    for each in {fmt, "beir"}:
        exported = cli(
            "--db", db, "gold", "export", "--format", each, "--out", str(tmp_path / each)
        )
        assert exported.returncode == 0, exported.stderr
    name, more = EXPORTED[fmt]
    more = [str(tmp_path / m) if "/" in m else m for m in more]
    back = tmp_path / "back.duckdb"
    result = cli("--db", str(back), "gold", "import", str(tmp_path / fmt / name), *more,
                 "--by", "ana")  # fmt: skip
    assert result.returncode == 0, result.stderr
    items, labels = stored(back)
    # A topics file's text is read with its whitespace collapsed, as every import of one is.
    text = line["query"] if fmt in ("jsonl", "hf") else " ".join(line["query"].split())
    assert items == [("q1", text, False)]
    assert labels == sorted(("q1", c, g) for c, g in line["relevant"].items())


TREC1_TOPIC = """<top>
<head> Tipster Topic Description
<num> Number: 051
<dom> Domain: International Economics
<title> Topic: Airbus Subsidies

<desc> Description:
Document will discuss government assistance to Airbus Industrie.

<narr> Narrative:
To be relevant, a document must cite or discuss assistance.

<con> Concept(s):
1.  Airbus Industrie

<fac> Factor(s):
<nat> Nationality: U.S.
</fac>
<def> Definition(s):
</top>
"""


@pytest.mark.parametrize("as_source", [[], ["--as-source", "b"]])
def test_judged_queries_missing_from_the_topics_are_named_with_what_to_do(
    cli, tmp_path, as_source
) -> None:
    topics = TOPICS.replace("1\t", "001\t")
    files = {"qrels": QRELS, "t.tsv": topics}
    result = imported(cli, tmp_path, files, "qrels", "--topics", "t.tsv", *as_source)
    assert_one_error_line(result, "1 judged queries have no text", "001 for 1", "--topics")


@pytest.mark.parametrize("fmt", ["trec", "beir"])
def test_topics_left_out_for_having_no_judgment_are_counted(cli, tmp_path, fmt) -> None:
    """Qrels cannot say "no answer" without a judged chunk: a version's no-answer query with none
    is in the exported topics only, and the import that leaves it out says so."""
    lines = [{"query_id": "1", "query": "reset my password", "relevant": {"kb-1": 2}},
             {"query_id": "2", "query": "refund in bitcoin", "no_answer": True}]  # fmt: skip
    data = "".join(json.dumps(o) + "\n" for o in lines)
    assert imported(cli, tmp_path, {"g.jsonl": data}, "g.jsonl").returncode == 0
    db = str(tmp_path / "s.duckdb")
    assert cli("--db", db, "gold", "publish", "-m", "v1").returncode == 0
    out = tmp_path / "out"
    assert cli("--db", db, "gold", "export", "--format", fmt, "--out", str(out)).returncode == 0
    judged = [str(out / "v0001.qrels"), "--topics", str(out / "v0001.topics.tsv")]
    args = judged if fmt == "trec" else [str(out / "v0001-beir")]
    back = cli("--db", str(tmp_path / "b.duckdb"), "gold", "import", *args, "--by", "ana")
    assert back.returncode == 0, back.stderr
    assert "1 topic has no judgment" in back.stderr and "left out" in back.stderr


def test_a_beir_folder_with_crlf_and_a_trailing_blank_line_imports(cli, tmp_path) -> None:
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    queries = [{"_id": q, "text": t} for q, t, _ in ITEMS]
    (folder / "queries.jsonl").write_text("".join(json.dumps(o) + "\r\n" for o in queries))
    tsv = "query-id\tcorpus-id\tscore\r\n" + "".join(f"{q}\t{c}\t{g}\r\n" for q, c, g in LABELS)
    (folder / "qrels" / "test.tsv").write_text(tsv + "\r\n", newline="")
    result = cli("--db", str(tmp_path / "s.duckdb"), "gold", "import", str(folder), "--by", "ana")
    assert result.returncode == 0, result.stderr
    assert stored(tmp_path / "s.duckdb") == (ITEMS, LABELS)


def test_tsv_topics_with_a_third_column_and_no_header_are_refused(cli, tmp_path) -> None:
    """id<TAB>title<TAB>description without a header: the query would be the title, a tab and
    the description. ir_datasets refuses such a line; so does the import, saying what to do."""
    topics = "".join(f"{q}\t{t}\tabout {t}\n" for q, t, _ in ITEMS)
    result = with_topics(cli, tmp_path, QRELS, topics)
    assert_one_error_line(result, "3 tab-separated columns", "header row")


@pytest.mark.parametrize("fmt", ["ranx", "hf"])
def test_as_source_reads_what_gold_export_writes_for_ranx_and_hf(cli, tmp_path, fmt) -> None:
    """Another team's judgments in ranx's JSON or the hf folder are a source like their qrels."""
    second = tmp_path / "second.duckdb"
    args = exported_back(cli, tmp_path, fmt)
    result = cli("--db", str(second), "gold", "import", *args, "--as-source", "team-b",
                 "--by", "ana")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert source_grades(second) == LABELS


WEB_TRACK_XML = """<webtrack2009>
<topic number="1" type="faceted">
  <query>obama family tree</query>
  <description>
  Find information on President Barack Obama's family history.
  </description>
  <subtopic number="1" type="nav">
    Find the TIME magazine photo essay.
  </subtopic>
</topic>
</webtrack2009>
"""


@pytest.mark.parametrize(
    ("name", "text", "field", "texts"),
    [
        # TREC-1 to 3 topics carry <dom>, <con>, <fac> and <def> too: none is part of a narrative.
        ("topics.51-100", TREC1_TOPIC, "title", {"051": "Airbus Subsidies"}),
        ("topics.51-100", TREC1_TOPIC, "narr",
         {"051": "To be relevant, a document must cite or discuss assistance."}),
        # The Web track's XML says <description> where TREC-COVID says <question>.
        ("wt09.topics.xml", WEB_TRACK_XML, "title", {"1": "obama family tree"}),
        ("wt09.topics.xml", WEB_TRACK_XML, "desc",
         {"1": "Find information on President Barack Obama's family history."}),
    ],
)  # fmt: skip
def test_older_trec_topic_layouts_give_the_asked_field(tmp_path, name, text, field, texts) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert read_topics(path, [], field) == texts


def test_comma_separated_topics_are_told_to_be_tab_separated(cli, tmp_path) -> None:
    topics = "id,text\n" + "".join(f'{q},"{t}"\n' for q, t, _ in ITEMS)
    result = with_topics(cli, tmp_path, QRELS, topics)
    assert_one_error_line(result, "comma-separated", "tab-separated")


@pytest.mark.parametrize("grade", ["99999999999999999999", "inf", "nan"])
@pytest.mark.parametrize("as_source", [[], ["--as-source", "b"]])
def test_a_grade_past_any_scale_is_one_error_line(cli, tmp_path, as_source, grade) -> None:
    qrels = QRELS + f"2 0 kb-9 {grade}\n"
    files = {"qrels": qrels, "t.tsv": TOPICS}
    args = ["qrels", "--topics", "t.tsv", "--grade-map", "0=0,1=1,2=2", *as_source]
    result = imported(cli, tmp_path, files, *args)
    assert_one_error_line(result, grade)


@pytest.mark.parametrize("as_source", [[], ["--as-source", "b"]])
def test_qrels_with_no_judgment_are_refused(cli, tmp_path, as_source) -> None:
    files = {"qrels": "# nothing judged yet\n\n", "t.tsv": TOPICS}
    result = imported(cli, tmp_path, files, "qrels", "--topics", "t.tsv", *as_source)
    assert_one_error_line(result, "no judgment")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"q1": {"d1": 1}', ("not JSON",)),  # cut short
        ('{"q1": ["d1"]}', ("{query_id: {doc_id: grade}}",)),  # a list, not doc -> grade
        ('["q1"]', ("{query_id: {doc_id: grade}}",)),
    ],
)
def test_ranx_qrels_that_are_not_ranx_are_one_error_line(cli, tmp_path, text, words) -> None:
    """--format ranx of a file that is no {query_id: {doc_id: grade}} object says so."""
    files = {"qrels.json": text, "t.tsv": "q1\thello\n"}
    args = ("qrels.json", "--format", "ranx", "--topics", "t.tsv")
    assert_one_error_line(imported(cli, tmp_path, files, *args), *words)


@pytest.mark.parametrize(
    ("grade", "words"),
    [("2.5", ("2.5",)), ("true", ("True",)), ("Infinity", ("inf",))],
)
def test_ranx_grades_that_are_no_whole_number_are_refused(cli, tmp_path, grade, words) -> None:
    """A ranx grade of 2.5 or true is no grade (as a TREC or BEIR file's is): it was read as
    2 or 1, and Infinity was a traceback."""
    files = {"qrels.json": f'{{"q1": {{"d1": {grade}}}}}', "t.tsv": "q1\thello\n"}
    args = ("qrels.json", "--format", "ranx", "--topics", "t.tsv")
    assert_one_error_line(imported(cli, tmp_path, files, *args), "grade", *words)


# SMART collections' relevance files: CISI.REL (``qid docid 0 0.000000``) and CACM's qrels.text
# (``01 1410  0 0``) list each query's relevant documents, the doc id in the second column.
CISI_REL = "    1    28  0  0.000000\n    1    35  0  0.000000\n    2    12  0  0.000000\n"
CISI_QRY = ".I 1\n.W\nWhat problems arise in indexing?\n.I 2\n.W\nHow are libraries run?\n"


def test_a_smart_collections_relevance_file_lists_relevant_documents(cli, tmp_path) -> None:
    """Read as TREC qrels, every query was a verified no-answer with a label on chunk '0': the
    documents 28, 35 and 12 were gone without a word."""
    result = imported(cli, tmp_path, {"CISI.REL": CISI_REL, "CISI.QRY": CISI_QRY},
                      "CISI.REL", "--topics", "CISI.QRY")  # fmt: skip
    assert result.returncode == 0, result.stderr
    items, labels = stored(tmp_path / "s.duckdb")
    assert [i[2] for i in items] == [False, False]
    assert labels == [("1", "28", 1), ("1", "35", 1), ("2", "12", 1)]
    assert "relevance file" in result.stdout + result.stderr


def test_eval_reads_a_smart_relevance_file_as_its_judgments(tmp_path) -> None:
    from goldmine.readers import read_gold

    path = tmp_path / "CISI.REL"
    path.write_text(CISI_REL)
    gold = read_gold(path)
    assert {q: g.judged for q, g in gold.queries.items()} == {
        "1": {"28": 1, "35": 1},
        "2": {"12": 1},
    }


def test_qrels_ids_with_leading_zeros_are_named_the_right_way_round(cli, tmp_path) -> None:
    """CACM's qrels write ``01`` where its queries write ``.I 1``: the hint said the topics wrote
    the zeros."""
    qrels = "01 1410  0 0\n01 1572  0 0\n02 2434  0 0\n"
    result = imported(cli, tmp_path, {"qrels.text": qrels, "query.text": CISI_QRY},
                      "qrels.text", "--topics", "query.text")  # fmt: skip
    assert_one_error_line(result, "the qrels write", "01 for 1")


def test_a_smart_relevance_file_as_a_source_names_its_documents(cli, tmp_path) -> None:
    result = imported(cli, tmp_path, {"CISI.REL": CISI_REL, "CISI.QRY": CISI_QRY},
                      "CISI.REL", "--topics", "CISI.QRY", "--as-source", "cisi")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert sorted(source_grades(tmp_path / "s.duckdb")) == [
        ("1", "28", 1), ("1", "35", 1), ("2", "12", 1)
    ]  # fmt: skip


@pytest.mark.parametrize(
    "files, args",
    [
        ({}, ["/nonexistent/qrels.txt", "--topics", "t.tsv"]),
        ({"qrels": "", "t.tsv": TOPICS}, ["qrels", "--topics", "t.tsv"]),
        ({"qrels": QRELS}, ["qrels"]),
        ({"qrels": "1 0 kb-1 7\n", "t.tsv": TOPICS}, ["qrels", "--topics", "t.tsv"]),
    ],
    ids=["missing path", "empty qrels", "no topics", "grade off the scale"],
)
def test_an_import_that_fails_on_its_input_leaves_no_store(cli, tmp_path, files, args) -> None:
    """Every failed ``gold import`` left an empty store (536 KB) and its spill folder behind,
    as ``ingest`` no longer does."""
    result = imported(cli, tmp_path, files, *args)
    assert result.returncode == 2, result.stderr
    assert not (tmp_path / "s.duckdb").exists()
    assert not (tmp_path / "s.duckdb.tmp").exists()


def test_trec_topics_without_a_title_name_the_field_they_have(cli, tmp_path) -> None:
    """TREC-4's topics (201-250) have no <title>, only <desc>: the error said "no topics with a
    title found" and not what would read them."""
    topics = (
        "<top>\n<num> Number: 201\n<desc> Description:\nRaising the gas tax.\n</top>\n"
        "<top>\n<num> Number: 202\n<desc> Description:\nNuclear proliferation.\n</top>\n"
    )
    qrels = "201 0 FR940104-0-00001 1\n202 0 AP880212-0001 0\n"
    result = with_topics(cli, tmp_path, qrels, topics)
    assert_one_error_line(result, "--topic-field desc")
    again = imported(cli, tmp_path, {}, str(tmp_path / "qrels"), "--topics",
                     str(tmp_path / "t.tsv"), "--topic-field", "desc")  # fmt: skip
    assert again.returncode == 0, again.stderr


@pytest.mark.parametrize("as_source", [False, True])
def test_a_query_id_the_set_gives_another_text_is_refused(cli, tmp_path, as_source) -> None:
    """Another team numbers its topics 1..N too: its topic 1 ("cheapest flights to lisbon")
    joined the set's item 1 ("reset my password") by id alone, and its labels landed on the
    wrong query without a word."""
    assert with_topics(cli, tmp_path, QRELS, TOPICS).returncode == 0
    before = stored(tmp_path / "s.duckdb")
    files = {"b.qrels": "1 0 fl-7 2\n", "b.tsv": "1\tcheapest flights to lisbon\n"}
    extra = ["--as-source", "teamb"] if as_source else []
    result = imported(cli, tmp_path, files, "b.qrels", "--topics", "b.tsv", *extra)
    assert_one_error_line(result, "1", "reset my password", "cheapest flights to lisbon",
                          "--id-prefix")  # fmt: skip
    assert stored(tmp_path / "s.duckdb") == before
    # With a prefix the file's ids are its own: a new item, the set's untouched.
    result = imported(cli, tmp_path, files, "b.qrels", "--topics", "b.tsv", *extra,
                      "--id-prefix", "b-")  # fmt: skip
    assert result.returncode == 0, result.stderr
    if as_source:
        assert ("b-1", "fl-7", 2) in source_grades(tmp_path / "s.duckdb")
    else:
        items, labels = stored(tmp_path / "s.duckdb")
        assert ("b-1", "cheapest flights to lisbon", False) in items and (
            "b-1",
            "fl-7",
            2,
        ) in labels
        assert set(before[1]) < set(labels)


def test_a_query_id_naming_one_item_and_text_naming_another_joins_the_text(cli, tmp_path) -> None:
    """The file's id 1 is the set's item 1, but its text is the set's item 2's: the text says
    which query was judged."""
    assert with_topics(cli, tmp_path, QRELS, TOPICS).returncode == 0
    files = {"b.qrels": "1 0 kb-9 2\n", "b.tsv": "1\tVPN setup?\n"}
    result = imported(cli, tmp_path, files, "b.qrels", "--topics", "b.tsv")
    assert result.returncode == 0, result.stderr
    _, labels = stored(tmp_path / "s.duckdb")
    assert ("2", "kb-9", 2) in labels and ("1", "kb-9", 2) not in labels


IRDS = (
    '{"query_id": "1", "doc_id": "kb-1", "relevance": 2, "iteration": "0"}\n'
    '{"query_id": "1", "doc_id": "kb-2", "relevance": 0, "iteration": "0"}\n'
    '{"query_id": "2", "doc_id": "kb-3", "relevance": 1, "iteration": "0"}\n'
    '{"query_id": "3", "doc_id": "kb-4", "relevance": 0, "iteration": "0"}\n'
)


@pytest.mark.parametrize("as_source", [False, True])
def test_json_lines_qrels_with_topics_import_as_trec_qrels_do(cli, tmp_path, as_source) -> None:
    """``ir_datasets export … qrels --format jsonl`` (and a BEIR qrels file taken out of its
    folder) are judgments a line: with --topics they read as the same TREC qrels do. They were
    told to be a BEIR folder the user does not have."""
    extra = ["--as-source", "irds"] if as_source else []
    result = imported(cli, tmp_path, {"q.jsonl": IRDS, "t.tsv": TOPICS}, "q.jsonl", "--topics",
                      "t.tsv", *extra)  # fmt: skip
    assert result.returncode == 0, result.stderr
    if as_source:
        assert source_grades(tmp_path / "s.duckdb") == LABELS
    else:
        assert stored(tmp_path / "s.duckdb") == (ITEMS, LABELS)


def test_json_lines_qrels_without_topics_ask_for_them(cli, tmp_path) -> None:
    result = imported(cli, tmp_path, {"q.jsonl": IRDS}, "q.jsonl")
    assert_one_error_line(result, "--topics", "BEIR folder")


def test_a_query_text_is_stored_without_the_white_space_around_it(cli, tmp_path) -> None:
    """banking77's "\\nDo I need to go to a physical bank…" kept its line break as the item's
    query, shown as an empty first line in every table and export."""
    topics = "".join(
        json.dumps({"id": i, "title": t}) + "\n"
        for i, t in (("1", "\nreset my password "), ("2", "vpn setup"), ("3", "refund in bitcoin"))
    )
    files = {"qrels": QRELS, "t.jsonl": topics}
    assert imported(cli, tmp_path, files, "qrels", "--topics", "t.jsonl").returncode == 0
    db = tmp_path / "s.duckdb"
    cli("--db", str(db), "gold", "add-query", "\n  dark mode\t", "--by", "ana")
    with open_store(db) as con:
        texts = {q for (q,) in con.execute("SELECT query FROM gold_items").fetchall()}
    assert texts == {"reset my password", "vpn setup", "refund in bitcoin", "dark mode"}


def test_two_topics_of_one_text_in_a_file_are_one_item(cli, tmp_path) -> None:
    """``1 what is alpha`` and ``2 What is alpha?`` normalize alike: they were two verified
    items, which the set promises never to hold."""
    topics = "1\twhat is alpha\n2\tWhat is alpha?\n3\tvpn setup\n"
    qrels = "1 0 d1 2\n1 0 d2 1\n2 0 d1 2\n2 0 d3 2\n3 0 d4 1\n"
    result = with_topics(cli, tmp_path, qrels, topics)
    assert result.returncode == 0, result.stderr
    assert "1 and 2" in result.stderr  # the note says which topics were one
    items, labels = stored(tmp_path / "s.duckdb")
    assert [i[:2] for i in items] == [("1", "what is alpha"), ("3", "vpn setup")]
    assert labels == [("1", "d1", 2), ("1", "d2", 1), ("1", "d3", 2), ("3", "d4", 1)]


def test_two_topics_of_one_text_judging_a_chunk_two_ways_are_refused(cli, tmp_path) -> None:
    topics = "1\twhat is alpha\n2\tWhat is alpha?\n"
    result = with_topics(cli, tmp_path, "1 0 d1 2\n2 0 d1 0\n", topics)
    assert_one_error_line(result, "1", "2", "d1", "what is alpha")


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("cran.all.1400", ".I 1\n.T\nexperimental investigation\n.W\nthe aerodynamics\n",
         ("SMART", "ingest corpus", "--topics")),
        ("topics.tsv", "1030303\twho is aziz hashim\n1037496\twho is rep scalise\n",
         ("topics", "--topics")),
        ("topics.trec", "<top>\n<num> Number: 301\n<title> International Organized Crime\n</top>\n",
         ("topics", "--topics")),
        ("train.csv", "text,category\nI am still waiting on my card?,card_arrival\n",
         ("comma-separated",)),
        ("disk4.trec", "<DOC>\n<DOCNO> FBIS3-1 </DOCNO>\n<TEXT>\nsome text\n</TEXT>\n</DOC>\n",
         ("document", "ingest corpus")),
    ],
)  # fmt: skip
def test_a_file_that_is_no_judgments_is_named_for_what_it_is(cli, tmp_path, name, text, words):
    """Cranfield's documents, a topics file or banking77's CSV given to gold import said "TREC
    qrels carry no query text: pass --topics", then "expected 4 columns"."""
    for args in ([name], [name, "--topics", "t.tsv"]):
        result = imported(cli, tmp_path, {name: text, "t.tsv": TOPICS}, *args)
        assert_one_error_line(result, *words)


def test_a_beir_export_holds_the_corpus_its_judgments_name(cli, tmp_path) -> None:
    """BEIR's GenericDataLoader wants corpus.jsonl beside queries.jsonl and qrels/: the export
    wrote the two alone, so the folder the docs say "loads with BEIR" raised "File corpus.jsonl
    not present". It now holds the version's corpus snapshot, as BEIR reads it (``_id``,
    ``title``, ``text``, a JSON object a line), and still imports as the same gold set."""
    corpus = tmp_path / "corpus.jsonl"
    chunks = [{"id": "kb-1", "title": "Passwords", "text": "Reset it from\nthe login page."},
              {"id": "kb-2", "text": "VPN: install the client \u2028 then sign in. \U0001f510"},
              {"id": "kb-3", "title": "Billing", "text": "Invoices are monthly."}]  # fmt: skip
    corpus.write_text("".join(json.dumps(c) + "\n" for c in chunks), encoding="utf-8")
    db = str(tmp_path / "s.duckdb")
    assert cli("--db", db, "ingest", "corpus", str(corpus)).returncode == 0
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"query_id": "q1", "query": "reset my password",
                                "relevant": {"kb-1": 2}}) + "\n")  # fmt: skip
    assert cli("--db", db, "gold", "import", str(gold)).returncode == 0
    assert cli("--db", db, "gold", "publish", "-m", "v1").returncode == 0
    out = tmp_path / "out"
    exported = cli("--db", db, "gold", "export", "--format", "beir", "--out", str(out), "--json")
    assert exported.returncode == 0, exported.stderr
    folder = out / "v0001-beir"
    assert str(folder / "corpus.jsonl") in json.loads(exported.stdout)["paths"]
    read = {}
    with (folder / "corpus.jsonl").open(encoding="utf8") as handle:  # as BEIR's loader reads
        for line in handle:
            doc = json.loads(line)
            read[doc.get("_id")] = {"text": doc.get("text"), "title": doc.get("title")}
    assert read == {
        "kb-1": {"text": "Reset it from\nthe login page.", "title": "Passwords"},
        "kb-2": {"text": chunks[1]["text"], "title": ""},
        "kb-3": {"text": "Invoices are monthly.", "title": "Billing"},
    }
    again = cli("--db", str(tmp_path / "t.duckdb"), "gold", "import", str(folder), "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["added"] == 1


@pytest.mark.parametrize("fmt", ["jsonl", "beir"])
def test_export_to_dash_is_stdout_or_refused_never_a_folder_named_dash(
    cli, tmp_path, monkeypatch, fmt
) -> None:
    """``gold export --out -`` made a folder named "-" without a word, where a user piping
    the version into jq or another store meant stdout: the version file (one file) goes there,
    a format of several files is refused in one line, and no "-" is made."""
    line = {"query_id": "q1", "query": "reset my password", "relevant": {"kb-1": 2}}
    db = _published(cli, tmp_path, [line])
    monkeypatch.chdir(tmp_path)
    result = cli("--db", db, "gold", "export", "--format", fmt, "--out", "-")
    assert not (tmp_path / "-").exists()
    if fmt == "beir":
        assert_one_error_line(result, "--out -", "a folder")
        return
    assert result.returncode == 0, result.stderr
    header, item = (json.loads(x) for x in result.stdout.splitlines())
    assert header["version"] == 1 and item["query_id"] == "q1"
    again = tmp_path / "again.jsonl"
    again.write_text(result.stdout, encoding="utf-8")
    assert cli("--db", str(tmp_path / "t.duckdb"), "gold", "import", str(again)).returncode == 0


def test_cranfield_exports_as_a_beir_folder_whose_corpus_is_every_stored_abstract(
    cli, tmp_path, shared_dataset
) -> None:
    """Cranfield's own files, not ones written here: the first snapshot's --json counts all
    1,398 stored abstracts added (the two empty ones rejected, 1,400 in), and the BEIR export's
    corpus.jsonl holds those 1,398, each with its SMART title, as BEIR's loader reads them."""
    folder = shared_dataset("datasets", "cranfield")
    db = str(tmp_path / "s.duckdb")
    ingested = cli("--db", db, "ingest", "corpus", str(folder / "cran.all.1400"), "--json")
    assert ingested.returncode == 0, ingested.stderr
    entry = json.loads(ingested.stdout)["files"][0]
    assert (entry["rows_in"], entry["stored"], entry["rejected"]) == (1400, 1398, 2)
    assert (entry["added"], entry["unchanged"], entry["changed"], entry["removed"]) == (
        1398, 0, 0, 0)  # fmt: skip
    imported = cli("--db", db, "gold", "import", str(folder / "cranqrel"), "--topics",
                   str(folder / "cran.qry"), "--grade-map", "1=2,2=2,3=1,4=1,-1=0")  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    assert cli("--db", db, "gold", "publish", "-m", "cranfield").returncode == 0
    out = tmp_path / "out"
    assert cli("--db", db, "gold", "export", "--format", "beir", "--out", str(out)).returncode == 0
    corpus = {}
    with (out / "v0001-beir" / "corpus.jsonl").open(encoding="utf8") as handle:
        for line in handle:
            doc = json.loads(line)
            corpus[doc["_id"]] = doc
    assert len(corpus) == 1398 and "471" not in corpus and "995" not in corpus
    assert corpus["1"]["title"].startswith("experimental investigation of the aerodynamics")
    assert corpus["1"]["text"].startswith("experimental investigation of the aerodynamics")
