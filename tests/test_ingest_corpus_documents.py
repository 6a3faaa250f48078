"""A folder of Markdown or HTML documents read as a corpus, with no converter to write.

Many RAG corpora start as a docs site's sources: Markdown (with YAML front matter, as Jekyll,
Hugo, Docusaurus and MkDocs write it), MDX, or HTML pages. ``ingest corpus docs/`` said the
folder held no file in a format goldmine reads. Now each document is a chunk: its id its path
as given or found under the folder given (``docs/guide/install.md``, the source path RAG
frameworks keep with a chunk), its title from the front matter, the first heading or the
page's <title>, its text the Markdown as written (front matter out) or the page's text. Only
``ingest corpus`` takes them: a README beside a search log, or beside a corpus's data files, is
no record.
"""

from __future__ import annotations

from pathlib import Path

from goldmine.ingest import api
from goldmine.store import open_store

from helpers import run_cli, write_jsonl

INSTALL = """---
title: "Installing the CLI"
sidebar_position: 2
---

Some intro text.

# Install

Run `pip install acme`.

```bash
# not a heading: a comment in a code block
acme --version
```
"""

PAGE = """<!DOCTYPE html>
<html><head><title>Refunds &amp; returns | Acme Help</title>
<style>body { color: red }</style><script>var x = "<p>no</p>";</script></head>
<body><nav><a href="/">Home</a> <a href="/help">Help</a></nav>
<h1>Refunds</h1><p>Refunds go back to the card within 5&nbsp;days.</p>
<p>Returns need the order number.</p>
<footer>&copy; Acme</footer></body></html>
"""


def _docs(root):
    (root / "guide").mkdir(parents=True)
    (root / "guide" / "install.md").write_text(INSTALL, encoding="utf-8")
    (root / "guide" / "faq.mdx").write_text(
        "import Tabs from '@theme/Tabs';\n\n## Can I pay by invoice?\n\nYes, on the Pro plan.\n",
        encoding="utf-8",
    )
    (root / "refunds.html").write_text(PAGE, encoding="utf-8")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (root / "empty.md").write_text("---\ntitle: Nothing yet\n---\n", encoding="utf-8")
    return root


def _chunks(db_path, current: bool = False) -> list[tuple]:
    with open_store(db_path) as con:
        where = "WHERE snapshot_id = (SELECT max(snapshot_id) FROM chunks)" if current else ""
        return con.execute(
            f"SELECT chunk_id, doc_id, title, text FROM chunks {where} ORDER BY chunk_id"
        ).fetchall()


def test_a_folder_of_markdown_and_html_is_a_corpus(tmp_path, db_path, monkeypatch):
    _docs(tmp_path / "docs")
    monkeypatch.chdir(tmp_path)
    with open_store(db_path) as con:
        result = api.corpus(con, ["docs"])
        reasons = con.execute("SELECT path, reason FROM rejects").fetchall()
    assert (result.total["rows_in"], result.total["stored"], result.total["rejected"]) == (4, 3, 1)
    assert [(p.endswith("empty.md"), r) for p, r in reasons] == [(True, "missing text")]
    chunks = {c[0]: c for c in _chunks(db_path)}
    assert sorted(chunks) == ["docs/guide/faq.mdx", "docs/guide/install.md", "docs/refunds.html"]
    _, doc_id, title, text = chunks["docs/guide/install.md"]
    assert (doc_id, title) == ("docs/guide/install.md", "Installing the CLI")
    assert text.startswith("Some intro text.") and "sidebar_position" not in text
    assert "# not a heading" in text  # the Markdown as written
    assert chunks["docs/guide/faq.mdx"][2] == "Can I pay by invoice?"
    _, _, title, text = chunks["docs/refunds.html"]
    assert title == "Refunds & returns | Acme Help"
    assert text == (
        "Refunds\nRefunds go back to the card within 5 days.\nReturns need the order number."
    )


def test_a_document_is_named_the_same_by_every_route(tmp_path, db_path, cli):
    """Named alone, matched by a glob or found in a folder: its path as given, so two READMEs
    of two folders never share an id, and the same documents imported another way make the
    same snapshot."""
    _docs(tmp_path / "docs")
    (tmp_path / "docs" / "README.md").write_text("# Docs\n\nThe docs' own README.\n")
    (tmp_path / "docs" / "guide" / "README.md").write_text("# Guide\n\nThe guide's README.\n")
    named = ["docs/guide/install.md", "docs/README.md", "docs/guide/README.md"]
    for paths in (named, ["docs/**/*.md"], ["docs"]):
        out = cli("--db", str(db_path), "ingest", "corpus", *paths, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        ids = [c[0] for c in _chunks(db_path, current=True)]
        assert set(named) <= set(ids), paths


def _beside_a_readme(folder, name: str, record: dict):
    """A folder of one JSONL record and a README.md, as a download or an export holds."""
    folder.mkdir()
    (folder / "README.md").write_text("# About these files\n\nLicense: CC-BY.\n", encoding="utf-8")
    write_jsonl(folder / name, [record])
    return folder


def test_a_readme_beside_a_corpus_data_file_is_left_out(tmp_path, db_path):
    """A data set's download holds its card (README.md) beside its shards."""
    folder = _beside_a_readme(
        tmp_path / "dataset", "corpus.jsonl", {"id": "c1", "text": "a passage"}
    )
    with open_store(db_path) as con:
        api.corpus(con, [folder])
    assert [c[0] for c in _chunks(db_path)] == ["c1"]


def test_a_readme_beside_a_search_log_is_no_record(tmp_path, db_path):
    event = {"query": "refund", "ts": "2026-11-30T10:00:00Z"}
    folder = _beside_a_readme(tmp_path / "logs", "week.jsonl", event)
    with open_store(db_path) as con:
        assert api.searchlog(con, [folder]).total["stored"] == 1
    out = run_cli("--db", str(db_path), "ingest", "searchlog", str(folder / "README.md"))
    assert out.returncode == 2 and "ingest corpus" in out.stderr and "Traceback" not in out.stderr


def test_a_docs_folder_with_a_few_config_files_is_read_as_documents(tmp_path, db_path):
    """Docusaurus keeps a _category_.json beside a section's pages, a built MkDocs site its
    search index: records of their own, fewer than the documents, left out."""
    root = _docs(tmp_path / "docs")
    (root / "guide" / "_category_.json").write_text('{"label": "Guide", "position": 2}')
    (root / "search").mkdir()
    (root / "search" / "search_index.json").write_text('{"docs": [{"location": "", "text": ""}]}')
    with open_store(db_path) as con:
        api.corpus(con, [root])
    assert len(_chunks(db_path)) == 3


def test_hugo_toml_front_matter_and_a_page_with_body_in_a_comment(tmp_path, db_path):
    root = tmp_path / "site"
    root.mkdir()
    (root / "hugo.md").write_text(
        '+++\ntitle = "Rate limits"\ndate = 2026-01-02\n+++\n\n'
        "Each key has 100 requests a minute.\n"
    )
    (root / "page.html").write_text(
        '<html><head><title>Keys</title><!-- old: <body class="x"> --></head>\n'
        '<body><script>var s = "<body>";</script><p>Rotate keys yearly.</p></body></html>'
    )
    with open_store(db_path) as con:
        api.corpus(con, [root])
    got = {c[0].rsplit("/", 1)[-1]: c[2:] for c in _chunks(db_path)}
    assert got == {
        "hugo.md": ("Rate limits", "Each key has 100 requests a minute."),
        "page.html": ("Keys", "Rotate keys yearly."),
    }


def test_a_document_in_another_encoding_names_the_option(tmp_path, db_path, cli):
    root = tmp_path / "legacy"
    root.mkdir()
    (root / "page.html").write_bytes(
        "<html><body><p>Caf\u00e9 menu</p></body></html>".encode("cp1252")
    )
    out = cli("--db", str(db_path), "ingest", "corpus", str(root))
    assert out.returncode == 2 and "--encoding" in out.stderr and "Traceback" not in out.stderr
    out = cli("--db", str(db_path), "ingest", "corpus", str(root), "--encoding", "cp1252")
    assert out.returncode == 0, out.stderr
    assert _chunks(db_path)[0][3] == "Caf\u00e9 menu"


def test_a_real_docs_site_is_read_whole(tmp_path, db_path, monkeypatch):
    """This project's own MkDocs sources, written by people, not by this test: fenced code,
    tables, lists, links, images beside them. Every Markdown file is a chunk or a counted
    reject, none left out, and each title is the file's first heading."""
    import re

    root = Path(__file__).resolve().parent.parent
    pages = sorted(p.relative_to(root).as_posix() for p in (root / "docs").rglob("*.md"))
    monkeypatch.chdir(root)
    with open_store(db_path) as con:
        total = api.corpus(con, ["docs"]).total
    assert total["rows_in"] == len(pages) == total["stored"] + total["rejected"]
    assert total["rejected"] == 0
    chunks = {c[0]: c for c in _chunks(db_path)}
    assert sorted(chunks) == pages
    for page in pages:
        first = re.search(r"(?m)^#{1,6}[ \t]+(.+?)[ \t#]*$", (root / page).read_text())
        assert chunks[page][2] == first.group(1), page
        assert chunks[page][3] == (root / page).read_text().strip(), page
