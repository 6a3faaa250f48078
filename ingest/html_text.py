"""HTML as text, in SQL: a help desk's description, an Intercom message's body.

Apart from ``tickets`` and ``chat``, which both read HTML bodies, so that neither imports the
other for it.
"""

from __future__ import annotations


def _sql(pattern: str) -> str:
    # This module's own constants only, never user text.
    return "'" + pattern.replace("'", "''") + "'"


# A message as HTML (a help desk's description or html_body, an Intercom part) is read as its
# text: scripts and styles out, a line break or the end of a block a line end, other tags out,
# then the entities decoded, as is Twitter's text, which escapes & < > as HTML does.
_HTML_TAG = (
    r"(?i)</?(p|div|br|span|li|ul|ol|h[1-6]|table|tr|td|th|strong|em|b|i|u|a|font|body|html|"
    r"head|style|script|img|hr|blockquote|pre|code)\b[^>]*>"
)
_BLOCK_END = r"(?i)<br\s*/?>|</(p|div|li|h[1-6]|tr|blockquote|pre)>"
_ENTITY = r"&#([0-9]{1,8}|[xX][0-9a-fA-F]{1,6});"
_NAMED = {
    "&nbsp;": " ", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&apos;": "'", "&mdash;": "\u2014",
    "&ndash;": "\u2013", "&hellip;": "\u2026", "&rsquo;": "\u2019", "&lsquo;": "\u2018",
    "&ldquo;": "\u201c", "&rdquo;": "\u201d", "&eacute;": "\u00e9", "&euro;": "\u20ac",
    "&amp;": "&",  # last: "&amp;lt;" is the text "&lt;"
}  # fmt: skip


def _named(x: str) -> str:
    """SQL decoding the named entities above in ``x``."""
    for entity, char in _NAMED.items():
        x = f"replace({x}, {_sql(entity)}, {_sql(char)})"
    return x


_NUMERIC = (
    "CASE WHEN contains(y, '&#') THEN array_to_string(list_transform(list_zip("
    f"string_split_regex(y, {_sql(_ENTITY)}), regexp_extract_all(y, {_sql(_ENTITY)})), "
    "lambda p: p[1] || coalesce(gm_entity_char(p[2]), '')), '') ELSE y END"
)
_STRIPPED = (
    "regexp_replace(regexp_replace(regexp_replace(regexp_replace(b, "
    + _sql(r"(?is)<(script|style)\b.*?</(script|style)>")
    + f", '', 'g'), {_sql(_BLOCK_END)}, chr(10), 'g'), '<[^>]*>', '', 'g'), "
    + _sql(r"[ \t]+")
    + ", ' ', 'g')"
)

# A numeric entity (``&#39;``, ``&#x1F600;``) as its character; one that names none (``&#0;``,
# past U+10FFFF, a surrogate) stays as written. Also read by the Session Track's XML reader
# (``logformats.DATE_MACROS`` installs these on every import's connection).
ENTITY_MACROS = """
CREATE OR REPLACE TEMP MACRO gm_entity_code(e) AS CASE WHEN e[3] IN ('x', 'X')
    THEN try_cast('0x' || e[4:-2] AS INTEGER) ELSE try_cast(e[3:-2] AS INTEGER) END;
CREATE OR REPLACE TEMP MACRO gm_entity_char(e) AS coalesce(
    CASE WHEN gm_entity_code(e) BETWEEN 1 AND 1114111 THEN try(chr(gm_entity_code(e))) END, e);
"""

HTML_MACROS = (
    ENTITY_MACROS
    + f"""
-- The numeric entities, then the named ones, ``&amp;`` last.
CREATE OR REPLACE TEMP MACRO gm_unescape(y) AS {_named(_NUMERIC)};
CREATE OR REPLACE TEMP MACRO gm_html_text(b) AS CASE
    WHEN NOT contains(b, '&') AND NOT contains(b, '<') THEN b
    WHEN regexp_matches(b, {_sql(_HTML_TAG)}) THEN gm_unescape({_STRIPPED})
    ELSE gm_unescape(b) END;
-- A message's body as a block of text: no more than one blank line in a row, no white space at
-- its ends (an Intercom part, a Help Scout thread).
CREATE OR REPLACE TEMP MACRO gm_html_block(b) AS trim(
    regexp_replace(gm_html_text(b), '\n{{3,}}', '\n\n', 'g'), chr(9) || chr(10) || chr(13) || ' ');
"""
)
