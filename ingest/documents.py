"""Markdown and HTML documents read as a corpus: a chunk per file.

Many RAG corpora start as a docs site's sources: Markdown with YAML front matter (Jekyll, Hugo,
Docusaurus, MkDocs), MDX, or HTML pages. Each file is one chunk. Its id (and doc id) is the
document's name as ``formats.discover`` gives it: its path as named on the command line or found
in the folder named (``docs/guide/install.md``), the source path RAG frameworks keep with a chunk
(LangChain's ``metadata["source"]``, LlamaIndex's ``file_path``), so a retriever that returns
documents can be scored as it is. A team that chunks its documents scores chunks: it imports
those as JSONL.

Markdown's text is the file as written, its front matter out; its title the front matter's
``title``, else the first heading outside a code block, else the file's name. An HTML page's
text is its body's text without navigation, header scripts, styles or footer; its title the
page's ``<title>``, else its first ``<h1>``. The work is one statement over DuckDB's
``read_text``; the HTML macros are ``ingest.html_text``'s.
"""

from __future__ import annotations

import duckdb

from goldmine.errors import InputError
from goldmine.ingest.files import InputFile

DOCUMENTS = ("markdown", "html")
KEYS = ["id", "doc_id", "title", "text"]

_WHITE = "chr(9) || chr(10) || chr(13) || ' '"
# A front matter block opens the file: --- lines around YAML (Jekyll, Docusaurus, MkDocs), or
# +++ lines around TOML (Hugo); its title is ``title: …`` or ``title = "…"``.
_FRONT = (
    r"^(?:---[ \t]*\r?\n(?:.*?\r?\n)?(?:---|\.\.\.)"
    r"|\+\+\+[ \t]*\r?\n(?:.*?\r?\n)?\+\+\+)[ \t]*(?:\r?\n|$)"
)
_FM_TITLE = r"(?m)^title[ \t]*[:=][ \t]*[\"']?(.*?)[\"']?[ \t]*\r?$"
_FENCED = r"(?s)(```|~~~).*?(```|~~~)"
_HEADING = r"(?m)^#{1,6}[ \t]+(.+?)[ \t#]*\r?$"

_MARKDOWN = f"""
WITH f AS (SELECT ltrim(content, chr(65279)) AS content FROM read_text($path)),
m AS (SELECT content, regexp_extract(content, '(?s){_FRONT}', 0) AS front FROM f),
d AS (SELECT front, nullif(trim(substr(content, length(front) + 1), {_WHITE}), '') AS body
      FROM m)
SELECT body, coalesce(
    nullif(trim(regexp_extract(front, '{_FM_TITLE.replace("'", "''")}', 1)), ''),
    nullif(trim(regexp_extract(regexp_replace(body, '{_FENCED}', '', 'g'), '{_HEADING}', 1)), ''),
    $stem) AS title
FROM d
"""

# What is no part of a page's text: comments, scripts and styles (taken out first, so that a
# "<body" inside one is not taken for the body), its head, navigation and footer.
_CHROME = (
    r"(?s)<!--.*?-->",
    r"(?is)<script\b.*?</script>",
    r"(?is)<style\b.*?</style>",
    r"(?is)<head\b.*?</head>",
    r"(?is)<nav\b.*?</nav>",
    r"(?is)<footer\b.*?</footer>",
)


def _without_chrome(x: str) -> str:
    for pattern in _CHROME:
        x = f"regexp_replace({x}, '{pattern}', '', 'g')"
    return x


_LINE_GAPS = r"[ \t\x{00a0}]*\n\s*"  # blank lines and the spaces around a line end: one line end
_HTML = f"""
WITH f AS (SELECT ltrim(content, chr(65279)) AS content FROM read_text($path)),
h AS (SELECT coalesce(nullif(regexp_extract(content, '(?is)<title[^>]*>(.*?)</title>', 1), ''),
                      regexp_extract(content, '(?is)<h1[^>]*>(.*?)</h1>', 1)) AS title,
             regexp_replace({_without_chrome("content")}, '(?is)^.*?<body[^>]*>|</body>.*$', '',
                            'g') AS page
      FROM f)
SELECT nullif(trim(regexp_replace(gm_html_text(page), '{_LINE_GAPS}',
                                  chr(10), 'g'), {_WHITE}), '') AS body,
       coalesce(nullif(trim(regexp_replace(gm_html_text(title), '\\s+', ' ', 'g')), ''), $stem)
           AS title
FROM h
"""


def read(con: duckdb.DuckDBPyConnection, item: InputFile) -> list[str]:
    """``gm_src``: the document as one record, its fields as text columns ``gm_f1``.. named
    by the returned keys (see ``files.raw_view``). A document with no text has no title
    either, so that it is rejected ("missing text") rather than stored as its title alone."""
    if item.compression != "none":
        raise InputError("a compressed document is not read; decompress it first", path=item.path)
    try:
        return _read(con, item)
    except duckdb.InvalidInputException as exc:
        if "UTF-8" not in str(exc):
            raise
        raise InputError(
            "not UTF-8 text: read it with --encoding cp1252, or the encoding it was saved in",
            path=item.path,
        ) from exc


def _read(con: duckdb.DuckDBPyConnection, item: InputFile) -> list[str]:
    name = item.name or item.path.as_posix()
    parts = _MARKDOWN if item.format == "markdown" else _HTML
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE gm_src AS
            SELECT 1::BIGINT AS line, NULL::VARCHAR AS raw, NULL::VARCHAR AS err,
                   $name AS gm_f1, $name AS gm_f2,
                   CASE WHEN body IS NOT NULL THEN title END AS gm_f3, body AS gm_f4
            FROM ({parts})""",
        {"path": str(item.path), "name": name, "stem": item.path.stem},
    )
    return list(KEYS)
