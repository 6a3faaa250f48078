"""gold import reads judgments as a team keeps them in a spreadsheet: a CSV (or TSV, or Excel's
semicolon CSV) with a header row naming the query, the document and its grade, the grade often a
word ("Highly relevant") that ``--grade-map`` reads onto goldmine's scale.

Each file is laid out as Google Sheets, Excel and pandas write one: a header, quoted cells with
commas and line breaks, Excel's BOM and CRLF, a merged query cell exported into its first row
only, rows nobody graded yet."""

from __future__ import annotations

import json
from pathlib import Path

from test_goldset_wild import assert_one_error_line, source_grades, stored

from goldmine.goldset.items import query_id_for
from goldmine.text import normalize_query

LABELLED = (
    "query,doc_id,label\n"
    "reset my password,kb-1,Highly relevant\n"
    "reset my password,kb-2,Not relevant\n"
    "vpn setup,kb-3,partially relevant\n"
    "refund in bitcoin,kb-4,NOT RELEVANT\n"
)
LABEL_MAP = "not relevant=0,partially relevant=1,highly relevant=2"


def qid(text: str) -> str:
    return query_id_for(normalize_query(text))


def labels_of(pairs: list[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
    """(query id, chunk, grade) for (query text, chunk, grade), as ``stored`` orders them."""
    return sorted((qid(text), chunk, grade) for text, chunk, grade in pairs)


LABELLED_GRADES = labels_of([
    ("reset my password", "kb-1", 2), ("reset my password", "kb-2", 0),
    ("vpn setup", "kb-3", 1), ("refund in bitcoin", "kb-4", 0),
])  # fmt: skip


def gold_import(cli, tmp_path: Path, files: dict[str, str | bytes], target: str, *args: str,
                db: str = "s.duckdb"):  # fmt: skip
    for name, data in files.items():
        (tmp_path / name).write_bytes(data if isinstance(data, bytes) else data.encode())
    paths = [str(tmp_path / a) if a in files else a for a in args]
    return cli("--db", str(tmp_path / db), "gold", "import", str(tmp_path / target), *paths,
               "--by", "ana")  # fmt: skip


def test_a_spreadsheet_of_word_labels_imports_through_a_label_map(cli, tmp_path) -> None:
    result = gold_import(cli, tmp_path, {"labels.csv": LABELLED}, "labels.csv",
                         "--grade-map", LABEL_MAP, "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["format"] == "csv"
    assert report["added"] == 3 and report["labels"] == 4 and report["no_answer"] == 1
    items, labels = stored(tmp_path / "s.duckdb")
    assert labels == LABELLED_GRADES
    assert sorted(q for _, q, _ in items) == ["refund in bitcoin", "reset my password", "vpn setup"]


def test_the_same_spreadsheet_as_another_source(cli, tmp_path) -> None:
    result = gold_import(cli, tmp_path, {"labels.csv": LABELLED}, "labels.csv",
                         "--grade-map", LABEL_MAP, "--as-source", "team-b")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert source_grades(tmp_path / "s.duckdb") == LABELLED_GRADES


def test_word_labels_without_a_map_name_them_and_a_map(cli, tmp_path) -> None:
    for args in ((), ("--as-source", "b")):
        result = gold_import(cli, tmp_path, {"labels.csv": LABELLED}, "labels.csv", *args)
        assert_one_error_line(result, "Highly relevant", "partially relevant", "--grade-map",
                              "not relevant=0")  # fmt: skip
        # the suggestion puts each label at the grade its words say, best last
        assert '"not relevant=0,partially relevant=1,highly relevant=2"' in result.stderr
    assert stored(tmp_path / "s.duckdb") == ([], [])


def test_a_label_the_map_lacks_is_named_with_its_line(cli, tmp_path) -> None:
    result = gold_import(cli, tmp_path, {"labels.csv": LABELLED}, "labels.csv",
                         "--grade-map", "not relevant=0,highly relevant=2")  # fmt: skip
    assert_one_error_line(result, "partially relevant", "labels.csv:4", "--grade-map")
    assert stored(tmp_path / "s.duckdb") == ([], [])


def test_excel_semicolons_bom_crlf_and_numbers(cli, tmp_path) -> None:
    """Excel in a European locale: ';' between cells, a BOM, CRLF; ids from the file."""
    text = ("Query ID;Query;Document ID;Relevance\r\n"
            "1;reset my password;kb-1;2\r\n1;reset my password;kb-2;0\r\n"
            "2;vpn setup;kb-3;1\r\n3;refund in bitcoin;kb-4;0\r\n")  # fmt: skip
    data = b"\xef\xbb\xbf" + text.encode()
    result = gold_import(cli, tmp_path, {"sheet.csv": data}, "sheet.csv")
    assert result.returncode == 0, result.stderr
    items, labels = stored(tmp_path / "s.duckdb")
    assert labels == [("1", "kb-1", 2), ("1", "kb-2", 0), ("2", "kb-3", 1), ("3", "kb-4", 0)]
    assert [(i, q) for i, q, _ in items] == [
        ("1", "reset my password"), ("2", "vpn setup"), ("3", "refund in bitcoin")]  # fmt: skip


def test_a_tsv_with_a_header_and_quoted_cells(cli, tmp_path) -> None:
    text = ('qid\tquery\tdocid\tgrade\n'
            '7\t"where is ""my"" order, please"\tkb-9\t2\n'
            '8\t"cancel\nsubscription"\tkb-5\t1\n')  # fmt: skip
    result = gold_import(cli, tmp_path, {"sheet.tsv": text}, "sheet.tsv")
    assert result.returncode == 0, result.stderr
    items, labels = stored(tmp_path / "s.duckdb")
    assert [(i, q) for i, q, _ in items] == [
        ("7", 'where is "my" order, please'), ("8", "cancel subscription")]  # fmt: skip
    assert labels == [("7", "kb-9", 2), ("8", "kb-5", 1)]


def test_a_merged_query_cell_and_ungraded_rows(cli, tmp_path) -> None:
    """A merged cell exports its text into the first row only; rows not graded yet are left
    out, and the import says how many."""
    text = ("query,doc_id,grade\n"
            "reset my password,kb-1,2\n,kb-2,0\n,kb-7,\n"
            "vpn setup,kb-3,1\n,kb-8,\n")  # fmt: skip
    result = gold_import(cli, tmp_path, {"s.csv": text}, "s.csv", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["labels"] == 3
    notes = " ".join(report["notes"])
    assert "2 rows have no grade" in notes and "1 row has no query" in notes
    assert stored(tmp_path / "s.duckdb")[1] == labels_of(
        [("reset my password", "kb-1", 2), ("reset my password", "kb-2", 0),
         ("vpn setup", "kb-3", 1)])  # fmt: skip


def test_ids_without_text_read_their_text_from_the_topics(cli, tmp_path) -> None:
    files = {"s.csv": "query_id,doc_id,grade\n1,kb-1,2\n2,kb-3,1\n",
             "t.tsv": "1\treset my password\n2\tvpn setup\n"}  # fmt: skip
    result = gold_import(cli, tmp_path, files, "s.csv", "--topics", "t.tsv")
    assert result.returncode == 0, result.stderr
    assert stored(tmp_path / "s.duckdb")[1] == [("1", "kb-1", 2), ("2", "kb-3", 1)]
    no_topics = gold_import(cli, tmp_path, files, "s.csv", db="t.duckdb")
    assert_one_error_line(no_topics, "--topics")


def test_a_judgment_given_twice_with_two_labels_is_refused(cli, tmp_path) -> None:
    text = LABELLED + "reset my password,kb-1,partially relevant\n"
    result = gold_import(cli, tmp_path, {"s.csv": text}, "s.csv", "--grade-map", LABEL_MAP)
    assert_one_error_line(result, "kb-1", "lines 2 and 6")


def test_one_id_with_two_texts_is_refused(cli, tmp_path) -> None:
    text = "query_id,query,doc_id,grade\n1,reset my password,kb-1,2\n1,vpn setup,kb-3,1\n"
    result = gold_import(cli, tmp_path, {"s.csv": text}, "s.csv")
    assert_one_error_line(result, "reset my password", "vpn setup", "s.csv:3")


def test_a_csv_that_names_no_grade_column_is_still_refused(cli, tmp_path) -> None:
    """banking77's ``text,category`` and a list of queries are no judgments."""
    for text in ("text,category\nreset my password,passcode\n",
                 "query,doc_id\nreset my password,kb-1\n"):  # fmt: skip
        result = gold_import(cli, tmp_path, {"s.csv": text}, "s.csv")
        assert_one_error_line(result, "grade")


def test_label_keys_in_a_map_for_numbered_grades_are_refused(cli, tmp_path) -> None:
    files = {"q.qrels": "1 0 kb-1 2\n", "t.tsv": "1\treset my password\n"}
    result = gold_import(cli, tmp_path, files, "q.qrels", "--topics", "t.tsv",
                         "--grade-map", "relevant=2,2=2")  # fmt: skip
    assert_one_error_line(result, "relevant", "numbers")


def test_an_excel_workbook_says_to_save_it_as_csv(cli, tmp_path) -> None:
    import zipfile

    book = tmp_path / "labels.xlsx"
    with zipfile.ZipFile(book, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("xl/workbook.xml", "<workbook/>")
    result = gold_import(cli, tmp_path, {}, "labels.xlsx")
    assert_one_error_line(result, "Excel", "CSV")


def test_an_excel_workbook_is_told_whatever_its_time_stamp(cli, tmp_path) -> None:
    """A workbook's zip header holds its DOS time: saved at 00:01:24 its first bytes hold a
    comma before any line break, so it passed for a comma-separated sheet, and the sheet reader
    said "is a zip archive: unzip it" instead of "save the sheet as CSV" (about one time in a
    hundred: a flaky test found it). Binary layouts are told before text ones."""
    import zipfile

    book = tmp_path / "labels.xlsx"
    with zipfile.ZipFile(book, "w") as z:
        for name, data in (("[Content_Types].xml", "<Types/>"), ("xl/workbook.xml", "<w/>")):
            z.writestr(zipfile.ZipInfo(name, date_time=(2026, 12, 7, 0, 1, 24)), data)
    result = gold_import(cli, tmp_path, {}, "labels.xlsx")
    assert_one_error_line(result, "Excel", "CSV")


def test_a_long_warning_is_one_line_through_a_pipe(cli, tmp_path) -> None:
    """Warnings were folded at 80 columns away from a terminal ("... `gold \\ndrift` lists
    them"): a log line is one line for grep, as info's are."""
    (tmp_path / "labels.csv").write_text(LABELLED)
    result = cli("--db", str(tmp_path / "s.duckdb"), "gold", "import", str(tmp_path / "labels.csv"),
                 "--grade-map", LABEL_MAP, env={"COLUMNS": "80"})  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines and all(line.startswith("warning:") for line in lines), result.stderr
    assert any("`gold drift` lists them" in line for line in lines)


def test_a_tsv_qrels_whose_header_calls_the_id_query_reads_ids(cli, tmp_path) -> None:
    """``query<TAB>docid<TAB>relevance`` over ids (a qrels header in words) became items whose
    text was "1" and "2"; the ids read their texts from --topics."""
    files = {"q.tsv": "query\tdocid\trelevance\n1\td1\t1\n2\td2\t2\n",
             "t.tsv": "1\thow to reset password\n2\tbilling\n"}  # fmt: skip
    result = gold_import(cli, tmp_path, files, "q.tsv", "--topics", "t.tsv")
    assert result.returncode == 0, result.stderr
    items, labels = stored(tmp_path / "s.duckdb")
    assert [(i, q) for i, q, _ in items] == [("1", "how to reset password"), ("2", "billing")]


def test_a_topic_column_beside_the_query_text_is_no_id(cli, tmp_path) -> None:
    """``query,topic,doc_id,grade`` with two queries of one topic: "query account has two
    texts"."""
    text = "query,topic,doc_id,grade\nreset password,account,d1,2\nchange email,account,d2,1\n"
    result = gold_import(cli, tmp_path, {"s.csv": text}, "s.csv")
    assert result.returncode == 0, result.stderr
    assert len(stored(tmp_path / "s.duckdb")[0]) == 2


def test_spellings_of_one_query_are_one_query(cli, tmp_path) -> None:
    text = "query,doc_id,grade\nReset password,d1,2\nreset password,d2,1\n"
    result = gold_import(cli, tmp_path, {"s.csv": text}, "s.csv")
    assert result.returncode == 0, result.stderr
    items, labels = stored(tmp_path / "s.duckdb")
    assert [q for _, q, _ in items] == ["Reset password"] and len(labels) == 2


def test_a_tab_separated_sheet_is_not_called_comma_separated(cli, tmp_path) -> None:
    result = gold_import(cli, tmp_path, {"s.tsv": "query\tnotes\nreset\tx\n"}, "s.tsv")
    assert_one_error_line(result, "no document or grade column")
    assert "comma" not in result.stderr


def test_a_word_mapped_off_the_scale_is_named_for_a_source(cli, tmp_path) -> None:
    result = gold_import(cli, tmp_path, {"labels.csv": LABELLED}, "labels.csv", "--grade-map",
                         "not relevant=0,partially relevant=1,highly relevant=3",
                         "--as-source", "team")  # fmt: skip
    assert_one_error_line(result, "highly relevant=3")
