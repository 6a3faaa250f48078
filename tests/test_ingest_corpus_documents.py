"""A folder of Markdown or HTML documents read as a corpus, with no converter to write.

Many RAG corpora start as a docs site's sources: Markdown (with YAML front matter, as Jekyll,
Hugo, Docusaurus and MkDocs write it), MDX, or HTML pages. ``ingest corpus docs/`` said the
folder held no file in a format goldmine reads. Now each document is a chunk: its id the path
under the folder given (``guide/install.md``, the source path RAG frameworks keep with a
chunk), its title from the front matter, the first heading or the page's <title>, its text
the Markdown as written (front matter out) or the page's text. Only ``ingest corpus`` takes
them: a README beside a search log, or beside a corpus's data files, is no record.
"""

from __future__ import annotations

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


def _chunks(db_path) -> list[tuple]:
    with open_store(db_path) as con:
        return con.execute(
            "SELECT chunk_id, doc_id, title, text FROM chunks ORDER BY chunk_id"
        ).fetchall()


def test_a_folder_of_markdown_and_html_is_a_corpus(tmp_path, db_path):
    root = _docs(tmp_path / "docs")
    with open_store(db_path) as con:
        result = api.corpus(con, [root])
        reasons = con.execute("SELECT path, reason FROM rejects").fetchall()
    assert (result.total["rows_in"], result.total["stored"], result.total["rejected"]) == (4, 3, 1)
    assert [(p.endswith("empty.md"), r) for p, r in reasons] == [(True, "missing text")]
    chunks = {c[0]: c for c in _chunks(db_path)}
    assert sorted(chunks) == ["guide/faq.mdx", "guide/install.md", "refunds.html"]
    _, doc_id, title, text = chunks["guide/install.md"]
    assert (doc_id, title) == ("guide/install.md", "Installing the CLI")
    assert text.startswith("Some intro text.") and "sidebar_position" not in text
    assert "# not a heading" in text  # the Markdown as written
    assert chunks["guide/faq.mdx"][2] == "Can I pay by invoice?"
    _, _, title, text = chunks["refunds.html"]
    assert title == "Refunds & returns | Acme Help"
    assert text == (
        "Refunds\nRefunds go back to the card within 5 days.\nReturns need the order number."
    )


def test_a_document_named_alone_is_a_corpus_of_one(tmp_path, db_path, cli):
    root = _docs(tmp_path / "docs")
    out = cli("--db", str(db_path), "ingest", "corpus", str(root / "guide" / "install.md"))
    assert out.returncode == 0, out.stderr
    assert [c[:3] for c in _chunks(db_path)] == [("install.md", "install.md", "Installing the CLI")]


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
