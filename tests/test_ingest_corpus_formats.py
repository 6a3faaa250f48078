"""Corpora in the layouts IR collections ship in (issue 26): SMART, TREC SGML, TSV collections,
told by content; and a command that fails on its input leaves no store behind."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import duckdb
import pytest

from helpers import run_cli


def _ingest(tmp_path: Path, *args: str):
    return run_cli("ingest", "corpus", *args, "--db", str(tmp_path / "s.duckdb"), "--json")


def _chunks(tmp_path: Path) -> dict[str, dict]:
    con = duckdb.connect(str(tmp_path / "s.duckdb"), read_only=True)
    try:
        rows = con.execute("SELECT chunk_id, title, text, metadata FROM chunks").fetchall()
    finally:
        con.close()
    return {
        r[0]: {"title": r[1], "text": r[2], "metadata": json.loads(r[3]) if r[3] else {}}
        for r in rows
    }


def _total(proc) -> dict:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["total"]


def test_cranfield_smart_file_is_read_by_content(tmp_path: Path, shared_dataset):
    cran = shared_dataset("datasets", "cranfield", "cran.all.1400")
    total = _total(_ingest(tmp_path, str(cran)))
    # Two of the 1,400 records are empty in the file (.I 471 and .I 995: no title, no text):
    # each is a reject with its line, so every record is counted.
    assert (total["rows_in"], total["stored"], total["rejected"]) == (1400, 1398, 2)
    rejects = json.loads(run_cli("rejects", "--db", str(tmp_path / "s.duckdb"), "--json").stdout)
    assert [(r["line"], r["reason"]) for r in rejects] == [
        (13470, "missing text"),
        (27712, "missing text"),
    ]
    chunks = _chunks(tmp_path)
    assert set(chunks) == {str(i) for i in range(1, 1401)} - {"471", "995"}
    first = chunks["1"]
    assert first["title"] == (
        "experimental investigation of the aerodynamics of a wing in a slipstream ."
    )
    assert first["text"].startswith("experimental investigation of the aerodynamics of a\nwing")
    assert first["text"].endswith("the specific configuration of the experiment .")
    assert first["metadata"] == {"author": "brenckman,m.", "bib": "j. ae. scs. 25, 1958, 324."}
    assert not any("\r" in c["text"] or "\r" in c["title"] for c in chunks.values())
    # A record with two .A/.B pairs or two .W fields keeps all of each.
    assert chunks["240"]["metadata"]["author"].count("\n") == 1
    assert "limit characteristics" in chunks["576"]["text"]


SGML = """<DOC>
<DOCNO> AP880212-0001 </DOCNO>
<FILEID>AP-NR-02-12-88 2344EST</FILEID>
<HEAD>Reports Former Saigon Officials Released</HEAD>
<TEXT>
   Hanoi has freed 1,320 prisoners & Black & Decker said so.
</TEXT>
<TEXT>
   A second block <P>with a paragraph</P> in it.
</TEXT>
</DOC>
<DOC>
<DOCNO>LA010189-0002</DOCNO>
<HEADLINE><P>Unclosed headline tag</HEADLINE>
<BYLINE>By someone
<TEXT>
The text of the second document, whose TEXT is never closed.
</DOC>
<DOC>
<DOCNO>FT911-3</DOCNO>
<DATE>910101</DATE>
</DOC>
"""


def _check_sgml(tmp_path: Path, path: Path) -> None:
    total = _total(_ingest(tmp_path, str(path)))
    assert total["rows_in"] == 3
    assert total["stored"] == 2 and total["rejected"] == 1
    chunks = _chunks(tmp_path)
    ap = chunks["AP880212-0001"]
    assert ap["title"] == "Reports Former Saigon Officials Released"
    assert "1,320 prisoners & Black & Decker" in ap["text"]
    assert "A second block with a paragraph in it." in ap["text"]
    la = chunks["LA010189-0002"]
    assert la["title"] == "Unclosed headline tag"
    assert la["text"] == "The text of the second document, whose TEXT is never closed."
    rejects = json.loads(run_cli("rejects", "--db", str(tmp_path / "s.duckdb"), "--json").stdout)
    assert [(r["line"], r["reason"]) for r in rejects] == [(19, "missing text")]


def test_trec_sgml_not_quite_xml(tmp_path: Path):
    path = tmp_path / "ap880212"
    path.write_text(SGML, encoding="utf-8")
    _check_sgml(tmp_path, path)


def test_trec_sgml_gzip(tmp_path: Path):
    path = tmp_path / "la010189.gz"
    path.write_bytes(gzip.compress(SGML.encode()))
    _check_sgml(tmp_path, path)


# The TREC disks' other sources as they write them: FBIS's title in <TI> inside <H3>, WSJ's and
# SJMN's lead paragraph in <LP> / <LEADPARA> before <TEXT>, FR94's <!-- PJG --> comments.
DISKS = """<DOC>
<DOCNO> FBIS3-1 </DOCNO>
<HT>    "cr00000011094001" </HT>
<HEADER>
<H2>   March Reports </H2>
<DATE1>  1 March 1994 </DATE1>
</HEADER>
<H3> <TI>      FOREIGN MINISTER ON POLICY </TI></H3>
<TEXT>
Language: <F P=105> Chinese </F>
The minister spoke.
</TEXT>
</DOC>
<DOC>
<DOCNO> WSJ870324-0001 </DOCNO>
<HL> John Blair Is Near Accord To Sell Unit, Sources Say </HL>
<LP>
   John Blair &amp; Co. is close to an agreement to sell its TV station.
</LP>
<TEXT>
   Reliance has owned Blair since 1986.
</TEXT>
</DOC>
<DOC>
<DOCNO> SJMN91-06010002 </DOCNO>
<HEADLINE> A HEADLINE </HEADLINE>
<LEADPARA>
   The lead paragraph.
</LEADPARA>
<TEXT>
   The rest of the story.
</TEXT>
</DOC>
<DOC>
<DOCNO> FR940104-0-00001 </DOCNO>
<PARENT> FR940104-0-00001 </PARENT>
<TEXT>
<!-- PJG FTAG 4700 -->
<!-- PJG STAG 4700 -->
<!-- PJG ITAG l=90 g=1 f=1 -->
Federal Register
<!-- PJG /ITAG -->
<!-- PJG ITAG l=90 g=1 f=4 -->
Tuesday, January 4, 1994
<!-- PJG /ITAG -->
</TEXT>
</DOC>
"""


@pytest.mark.parametrize("gz", [False, True])
def test_trec_disks_titles_lead_paragraphs_and_comments(tmp_path: Path, gz: bool):
    path = tmp_path / ("disk4.gz" if gz else "disk4")
    path.write_bytes(gzip.compress(DISKS.encode()) if gz else DISKS.encode())
    assert _total(_ingest(tmp_path, str(path)))["stored"] == 4
    chunks = _chunks(tmp_path)
    assert chunks["FBIS3-1"]["title"] == "FOREIGN MINISTER ON POLICY"
    assert chunks["WSJ870324-0001"]["text"] == (
        "John Blair &amp; Co. is close to an agreement to sell its TV station.\n"
        "Reliance has owned Blair since 1986."
    )
    assert chunks["SJMN91-06010002"]["text"] == "The lead paragraph.\nThe rest of the story."
    fr = chunks["FR940104-0-00001"]["text"]
    assert "PJG" not in fr and "Federal Register" in fr and "January 4, 1994" in fr


def test_tsv_collection_without_header(tmp_path: Path):
    # MS MARCO's collection.tsv: id<TAB>text, no header, quotes that are not CSV quoting.
    path = tmp_path / "collection.tsv"
    path.write_text(
        '0\tThe presence of "communication amid scientific minds\n'
        "1\tThe Manhattan Project and its atomic bomb\n"
        "2\tonly\ttoo\tmany\tfields\n",
        encoding="utf-8",
    )
    total = _total(_ingest(tmp_path, str(path)))
    assert (total["rows_in"], total["stored"], total["rejected"]) == (3, 2, 1)
    chunks = _chunks(tmp_path)
    assert chunks["0"]["text"] == 'The presence of "communication amid scientific minds'
    assert chunks["1"]["title"] is None


def test_tsv_quotes_that_are_no_csv_quoting_stay(tmp_path: Path):
    """MS MARCO's passages are not CSV-quoted: one that starts and ends with a quote, with lone
    quotes inside, lost its outer two (``Hello" he said, "bye``)."""
    path = tmp_path / "collection.tsv"
    path.write_text('10\t"Hello" he said, "bye"\n11\t"to be" or "not to be"\n12\t"a ""b"" c"\n')
    assert _total(_ingest(tmp_path, str(path)))["stored"] == 3
    chunks = _chunks(tmp_path)
    assert chunks["10"]["text"] == '"Hello" he said, "bye"'
    assert chunks["11"]["text"] == '"to be" or "not to be"'
    assert chunks["12"]["text"] == 'a "b" c'  # CSV quoting: read


def test_ms_marco_documents_keep_url_title_and_body(tmp_path: Path):
    """MS MARCO's document collection (msmarco-docs.tsv: docid, url, title, body, no header)
    stored the url as the text and the body in metadata.column4."""
    path = tmp_path / "msmarco-docs.tsv"
    path.write_text(
        "D1555982\thttps://answers.yahoo.com/question/index?qid=1\tThe hot glowing surfaces"
        "\tScience & Mathematics Physics The hot glowing surfaces of stars emit energy\n"
        "D301595\thttp://childparenting.about.com/od/physical/a/bathing.htm\t.\tBathing a "
        "newborn: how often\n"
    )
    assert _total(_ingest(tmp_path, str(path)))["stored"] == 2
    con = duckdb.connect(str(tmp_path / "s.duckdb"), read_only=True)
    rows = con.execute(
        "SELECT chunk_id, url, title, text, metadata FROM chunks ORDER BY 1"
    ).fetchall()
    con.close()
    assert rows[0][1:4] == (
        "https://answers.yahoo.com/question/index?qid=1",
        "The hot glowing surfaces",
        "Science & Mathematics Physics The hot glowing surfaces of stars emit energy",
    )
    assert rows[1][3] == "Bathing a newborn: how often"
    assert "column4" not in (rows[0][4] or "")


def test_tsv_collection_with_header_and_title(tmp_path: Path):
    # DPR's psgs_w100.tsv: id<TAB>text<TAB>title with a header row, the text CSV-quoted when it
    # holds a quote; CRLF line ends.
    path = tmp_path / "psgs_w100.tsv"
    path.write_bytes(
        b"id\ttext\ttitle\r\n"
        b'1\t"Aaron Aaron ( or ; ""Ah\xc3\xa4r\xc3\xb4n"") is a prophet"\tAaron\r\n'
        b"2\tGod at Sinai granted Aaron the priesthood\tAaron\r\n"
    )
    total = _total(_ingest(tmp_path, str(path)))
    assert (total["rows_in"], total["stored"]) == (2, 2)
    chunks = _chunks(tmp_path)
    assert chunks["1"] == {
        "title": "Aaron",
        "text": 'Aaron Aaron ( or ; "Ahärôn") is a prophet',
        "metadata": {},
    }


def test_a_tsv_header_naming_a_column_twice_keeps_both(tmp_path: Path):
    # The second of two columns named alike was lost without a word: a repeat is kept under the
    # name with the first _N no column of the header has (a CSV's reader renames alike), and
    # so is a name alike but for case, which the fields' reader cannot tell apart.
    path = tmp_path / "dup.tsv"
    path.write_text("id\ttext\ttext\ttext_1\ttext\tText\nD1\tfirst\tsecond\tthird\tfourth\tfifth\n")
    total = _total(_ingest(tmp_path, str(path)))
    assert (total["rows_in"], total["stored"]) == (1, 1)
    assert _chunks(tmp_path)["D1"] == {
        "title": None,
        "text": "first",
        "metadata": {"text_2": "second", "text_1": "third", "text_3": "fourth", "Text_4": "fifth"},
    }


def test_tsv_told_by_content_and_format_forced(tmp_path: Path):
    plain = tmp_path / "passages"
    plain.write_text("p1\tfirst passage here\np2\tsecond passage here\n", encoding="utf-8")
    assert _total(_ingest(tmp_path, str(plain)))["stored"] == 2
    smart = tmp_path / "med.txt"
    smart.write_text(".I 7\n.W\nmedical abstract\n", encoding="utf-8")
    forced = _ingest(tmp_path, str(smart), "--format", "smart")
    assert _total(forced)["stored"] == 1
    assert _chunks(tmp_path)["7"]["text"] == "medical abstract"


def test_unknown_format_lists_formats_and_leaves_no_store(tmp_path: Path):
    path = tmp_path / "notes.txt"
    path.write_text("just some prose\nwith no layout at all\n", encoding="utf-8")
    proc = _ingest(tmp_path, str(path))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    for name in ("jsonl", "csv", "parquet", "smart", "trec", "tsv", "--format"):
        assert name in lines[0]
    assert list(tmp_path.iterdir()) == [path]


def test_failed_input_found_while_staging_leaves_no_store(tmp_path: Path):
    path = tmp_path / "chunks.jsonl"
    path.write_text('{"passage_key": "a", "body_text": "x"}\n', encoding="utf-8")
    proc = _ingest(tmp_path, str(path))
    assert proc.returncode == 2 and "--map" in proc.stderr
    assert list(tmp_path.iterdir()) == [path]


def test_failed_input_keeps_a_store_that_was_there(tmp_path: Path):
    good = tmp_path / "good.tsv"
    good.write_text("a\tsome text\n", encoding="utf-8")
    assert _total(_ingest(tmp_path, str(good)))["stored"] == 1
    bad = tmp_path / "notes.txt"
    bad.write_text("prose\n", encoding="utf-8")
    assert _ingest(tmp_path, str(bad)).returncode == 2
    assert set(_chunks(tmp_path)) == {"a"}


def test_smart_other_fields_are_metadata_and_stray_text_a_reject(tmp_path: Path):
    # CACM's layout: .K keywords, .X references over several lines; a stray line before .I 1.
    path = tmp_path / "cacm.all"
    path.write_bytes(
        b"stray header\r\n.I 1\r\n.T\r\nPreliminary Report\r\n.W\r\nAn abstract.\r\n"
        b".K\r\nalgebraic languages\r\n.X\r\n100\t5\t1\r\n101\t5\t1\r\n.I 2\r\n.T\r\nNo words\r\n"
    )
    total = _total(_ingest(tmp_path, str(path)))
    assert (total["rows_in"], total["stored"], total["rejected"]) == (3, 2, 1)
    chunks = _chunks(tmp_path)
    assert chunks["1"]["text"] == "An abstract."
    assert chunks["1"]["metadata"] == {"K": "algebraic languages", "X": "100\t5\t1\n101\t5\t1"}
    # many of CACM's documents are a title alone, and judged: the title is the text
    assert chunks["2"]["text"] == chunks["2"]["title"] == "No words"
    rejects = json.loads(run_cli("rejects", "--db", str(tmp_path / "s.duckdb"), "--json").stdout)
    assert [(r["line"], r["reason"]) for r in rejects] == [(1, "text before the first .I line")]


def test_a_line_the_reader_cannot_read_rejects_its_record_naming_the_line(tmp_path: Path):
    path = tmp_path / "med.all"
    path.write_bytes(b".I 1\n.W\nfirst abstract\nbad \xff byte\n.I 2\n.W\nsecond abstract\n")
    total = _total(_ingest(tmp_path, str(path)))
    assert (total["rows_in"], total["stored"], total["rejected"]) == (2, 1, 1)
    assert set(_chunks(tmp_path)) == {"2"}
    rejects = json.loads(run_cli("rejects", "--db", str(tmp_path / "s.duckdb"), "--json").stdout)
    assert [(r["line"], r["reason"]) for r in rejects] == [
        (1, "invalid UTF-8 at line 4: the record is not read")
    ]


def test_a_folder_takes_collections_told_by_content_but_not_any_file_with_a_tab(tmp_path: Path):
    folder = tmp_path / "disk1"
    folder.mkdir()
    (folder / "ap880212").write_text(SGML, encoding="utf-8")
    (folder / "Makefile").write_text("CC\t= gcc\nall:\n\tmake build\n", encoding="utf-8")
    total = _total(_ingest(tmp_path, str(folder)))
    assert (total["rows_in"], total["stored"]) == (3, 2)


def test_a_first_row_of_words_is_data_when_its_id_looks_like_the_others(tmp_path: Path):
    """A header-less collection whose first row is all words (an id and a one-word passage)
    was taken for a header, and its first passage lost: a header is told by its names (id,
    docid, text, title, …) or by a first field unlike the ids below it."""
    path = tmp_path / "collection.tsv"
    path.write_text(
        "D301595\tphotosynthesis\n"
        "D1359209\tThe mitochondria is the powerhouse of the cell\n"
        "D2147834\tPhotosynthesis turns light into chemical energy\n",
        encoding="utf-8",
    )
    total = _total(_ingest(tmp_path, str(path)))
    assert (total["rows_in"], total["stored"]) == (3, 3)
    assert _chunks(tmp_path)["D301595"]["text"] == "photosynthesis"


def test_a_header_of_known_names_is_a_header_whatever_the_ids(tmp_path: Path):
    path = tmp_path / "passages.tsv"
    path.write_text("pid\tpassage\nid7\tfirst passage\nid8\tsecond passage\n", encoding="utf-8")
    total = _total(_ingest(tmp_path, str(path)))
    assert (total["rows_in"], total["stored"]) == (2, 2)
    assert _chunks(tmp_path)["id7"]["text"] == "first passage"


def _with_bad_line(fmt: str) -> bytes:
    """1,201 records, the 1,100th holding a Latin-1 byte past the first 64 KiB."""
    records = []
    for i in range(1, 1202):
        body = "first good line\nlast good line"
        if i == 1100:
            body = "first good line\nbad \xe9 byte line\nlast good line"
        if fmt == "trec":
            records.append(f"<DOC>\n<DOCNO> D{i} </DOCNO>\n<TEXT>\n{body}\n</TEXT>\n</DOC>\n")
        else:
            records.append(f".I {i}\n.T\ntitle {i}\n.W\n{body}\n")
    return "".join(records).encode("latin-1")


@pytest.mark.parametrize("fmt", ["trec", "smart"])
def test_a_damaged_line_rejects_the_record_holding_it(tmp_path: Path, fmt: str):
    """A line of invalid UTF-8 was a reject of its own, counted beside the records (1,202 in
    for 1,201 records), and its record was stored without it, silently shorter."""
    path = tmp_path / f"{fmt}.txt"
    path.write_bytes(_with_bad_line(fmt))
    total = _total(_ingest(tmp_path, str(path), "--format", fmt))
    assert (total["rows_in"], total["stored"], total["rejected"]) == (1201, 1200, 1)
    chunks = _chunks(tmp_path)
    assert ("D1100" if fmt == "trec" else "1100") not in chunks
    rejects = json.loads(run_cli("rejects", "--db", str(tmp_path / "s.duckdb"), "--json").stdout)
    assert len(rejects) == 1
    assert rejects[0]["reason"].startswith("invalid UTF-8") and "not read" in rejects[0]["reason"]


def test_unix_compressed_files_are_named_not_skipped(tmp_path: Path):
    """The TREC disks ship files compressed by Unix compress (``FT911_1.Z``): in a folder they
    were left out without a word, named alone they were an "unknown file format"."""
    folder = tmp_path / "disk4"
    (folder / "ft" / "ft911").mkdir(parents=True)
    (folder / "fr940104.0").write_text(SGML, encoding="utf-8")
    z = folder / "ft" / "ft911" / "FT911_1.Z"
    z.write_bytes(b"\x1f\x9d\x90<DOC>\n" + bytes(range(40)))
    for given in (folder, z):
        result = _ingest(tmp_path, str(given))
        assert result.returncode == 2, result.stdout
        error = result.stderr.strip()
        assert "FT911_1.Z" in error and "Unix compress" in error and "uncompress" in error
        assert len(error.splitlines()) == 1
    assert not (tmp_path / "s.duckdb").exists()


# GOV2's (and ClueWeb's trecweb) pages: the HTTP header in <DOCHDR>, then the raw page, no TEXT.
TRECWEB = """<DOC>
<DOCNO>GX000-00-0000000</DOCNO>
<DOCHDR>
http://sgra.jpl.nasa.gov
HTTP/1.1 200 OK
Content-Type: text/html
</DOCHDR>
<html><head><title>JPL Galileo Probe</title>
<style>body { color: red }</style><script>var x = 1;</script></head>
<body><h1>The probe</h1><p>Galileo's   probe entered Jupiter's atmosphere.</p>
<!-- a comment --></body></html>
</DOC>
<DOC>
<DOCNO>GX000-00-0000001</DOCNO>
<DOCHDR>
http://example.gov/plain
</DOCHDR>
A page of plain text with no markup.
</DOC>
"""


@pytest.mark.parametrize("gz", [False, True])
def test_trecweb_pages_are_read_as_their_text(tmp_path: Path, gz: bool):
    """A page stored with its title as its text, or rejected as missing text: the body after
    <DOCHDR> was never read."""
    path = tmp_path / ("00.gz" if gz else "00")
    path.write_bytes(gzip.compress(TRECWEB.encode()) if gz else TRECWEB.encode())
    assert _total(_ingest(tmp_path, str(path)))["stored"] == 2
    chunks = _chunks(tmp_path)
    page = chunks["GX000-00-0000000"]
    assert page["title"] == "JPL Galileo Probe"
    assert "Galileo's probe entered Jupiter's atmosphere." in page["text"]
    assert "The probe" in page["text"]
    assert not any(w in page["text"] for w in ("HTTP/1.1", "color", "var x", "comment", "<"))
    assert chunks["GX000-00-0000001"]["text"] == "A page of plain text with no markup."


def test_a_file_that_only_starts_like_compress_output_does_not_stop_a_folder(tmp_path: Path):
    folder = tmp_path / "disk"
    folder.mkdir()
    (folder / "ap880212").write_text(SGML, encoding="utf-8")
    (folder / "notes.bin").write_bytes(b"\x1f\x9d" + bytes(range(30)))
    assert _total(_ingest(tmp_path, str(folder)))["stored"] == 2
