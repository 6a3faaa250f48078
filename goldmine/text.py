"""Text utilities every stage agrees on: hashing, query normalization, text fit to show.

The normalized form is the key of exact dedupe (triage) and of matching queries by text (eval), so
there is one definition of it. ``norm_sql`` applies the same steps in SQL for speed (triage, eval's
trace runs, ingest's analytics summaries) and ``fill_non_ascii`` finishes what it leaves NULL; a
test keeps the two equal.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

# Punctuation, but for the signs a name ends with (C++, C#, F#, Notepad++, Disney+): a run of +
# and # right after a letter or digit and before no other word character or sign is kept
# (group 1). norm_sql follows the same rule in three steps.
_PUNCT = re.compile(r"((?<=[^\W_])[+#]+(?![+#]|[^\W_]))|[^\w\s]|_", re.UNICODE)
# Arabic's optional vowel marks (tashkeel, U+064B-U+065F and the superscript alef U+0670) and the
# tatweel that stretches a word (U+0640): dropped, as Lucene's Arabic normalizer drops them, since
# people type a word without them that a text writes with them.
ARABIC_OPTIONAL = re.compile("[\u0640\u064b-\u065f\u0670]")
_SPACE = re.compile(r"\s+", re.UNICODE)
# Unicode's default-ignorable code points (DerivedCoreProperties: zero-width space and joiners,
# soft hyphen, BOM, direction marks and controls, variation selectors, fillers, tags): nothing
# to draw, so "reset pass\u200bword" shows as "reset password" and must be that query, not
# "reset pass word". NFKC_Casefold (ICU's and Lucene's search folding) removes them outright.
IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
# The same class in RE2's syntax, for DuckDB: the code points written as \x{...}.
IGNORABLE_RE2 = "".join(c if c in "[]-" else f"\\x{{{ord(c):04X}}}" for c in IGNORABLE.pattern)
_WS = r"\t\n\x0B\x0C\r\x1C-\x1F "  # what Python's str.isspace() calls whitespace in ASCII
# C0 and C1 controls but tab and line ends: a terminal acts on them (ESC starts a sequence that
# clears the screen or retitles the window) and HTML cannot carry some (NUL). And the bidi
# embeddings, overrides and isolates (U+202A-E, U+2066-9): they make the rest of a line draw in
# another order ("Trojan Source"), so a person would read a query other than the one stored.
# The implicit marks (U+200E/F) that real right-to-left text carries are kept.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def sha256_text(text: str) -> str:
    """Hex sha256 of the UTF-8 text: the hash stored for chunk texts and queries."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def printable(text: str | None) -> str:
    """Text from traffic or a corpus as a person should see it, in a terminal or the page: each
    control character but tab and line ends shown as U+FFFD, one for one, so an offset into the
    text (a marked word) still points where it did."""
    return _CONTROL.sub("\N{REPLACEMENT CHARACTER}", text or "")


def sha256_file(path, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk_size):
            digest.update(block)
    return digest.hexdigest()


def normalize_query(text: str) -> str:
    """NFKC, case fold, punctuation to spaces, whitespace collapsed and trimmed.

    A combining mark is part of its word, not punctuation: Hindi, Thai and Hebrew write vowels
    and points as marks ("दिन" and "दान" are two words). Arabic's optional vowel marks are
    dropped (``ARABIC_OPTIONAL``), and case folding's dotted i (İ folds to i and a combining dot)
    is an i. A character Unicode says to ignore (a zero-width space, a soft hyphen) is dropped,
    as NFKC_Casefold drops it: it joins the word it sits in, never splits it."""
    if not text.isascii():
        text = IGNORABLE.sub("", text)
    text = unicodedata.normalize("NFKC", text).casefold()
    if text.isascii():
        text = _PUNCT.sub(_sign_or_space, text)
    else:
        text = ARABIC_OPTIONAL.sub("", text.replace("i\u0307", "i"))
        text = _PUNCT.sub(_mark_or_space, text)
    return _SPACE.sub(" ", text).strip()


def _sign_or_space(found: re.Match[str]) -> str:
    return found.group(1) or " "


def _mark_or_space(found: re.Match[str]) -> str:
    """A name's sign (``_PUNCT``) and a combining mark after a letter, digit or kept mark stay;
    any other character the pattern found is a space. An emoji's presentation selector (U+FE0F,
    ❤️) and a keycap (U+20E3, 1️⃣) are no part of a word: a query of them alone has no words."""
    if found.group(1):
        return found.group(1)
    char = found.group()
    if not is_word_mark(char):
        return " "
    at = found.start()
    before = found.string[at - 1] if at else " "
    return char if before.isalnum() or is_word_mark(before) else " "


def is_word_mark(char: str) -> bool:
    """A combining mark written inside a word (a vowel sign, a point, an accent): not an
    enclosing one (a keycap) nor a variation selector (U+FE00-U+FE0F, U+E0100-U+E01EF), which
    picks how a character is drawn (an emoji's U+FE0F)."""
    return unicodedata.category(char) in ("Mn", "Mc") and not (
        "\ufe00" <= char <= "\ufe0f" or "\U000e0100" <= char <= "\U000e01ef"
    )


def norm_sql(column: str, group: str = "\\1") -> str:
    """SQL for normalize_query(column) on ASCII text; NULL for non-ASCII (finished in Python).
    ``group``: a replacement's first group as the engine writes it (Spark's Java regexes: $1)."""
    # Punctuation but + and # to spaces; then a run of them after no letter or digit (a space
    # before it goes too: spaces are collapsed below), and one before a letter or digit
    # (``_PUNCT``'s rule of a name's sign, without look-around).
    # A text without either sign (most) takes the first step alone: the other two change
    # only + and #.
    kept = f"regexp_replace(lower({column}), '[^a-z0-9+#{_WS}]', ' ', 'g')"
    led = f"regexp_replace({kept}, '(^|[{_WS}])[+#]+', ' ', 'g')"
    signs = f"regexp_replace({led}, '[+#]+([a-z0-9])', ' {group}', 'g')"
    either = f"contains({column}, '+') OR contains({column}, '#')"
    return (
        f"CASE WHEN regexp_matches({column}, '^[\\x00-\\x7F]*$') THEN "
        f"trim(regexp_replace(CASE WHEN {either} THEN {signs} ELSE {kept} END, "
        f"'[{_WS}]+', ' ', 'g')) END"
    )


NORMALIZE_UDF = "gm_normalize_query"


def norm_any_sql(con: duckdb.DuckDBPyConnection, column: str) -> str:
    """SQL for normalize_query(column) on any text: ``norm_sql`` for ASCII, the function itself
    (registered on ``con``, once) for the rest, whose marks and folding SQL cannot follow. For
    lookups over stored text (a query's origins); a table of many texts is better filled by
    ``fill_non_ascii``, once per distinct text."""
    from goldmine.store import register_function

    register_function(con, NORMALIZE_UDF, normalize_query, ["VARCHAR"], "VARCHAR",
                      side_effects=False)  # fmt: skip
    return (
        f"CASE WHEN regexp_matches({column}, '^[\\x00-\\x7F]*$') THEN {norm_sql(column)} "
        f"ELSE {NORMALIZE_UDF}({column}) END"
    )


def fill_non_ascii(con: duckdb.DuckDBPyConnection, table: str, raw: str, norm: str) -> int:
    """Set ``norm`` where ``norm_sql`` left it NULL (non-ASCII text), by normalize_query itself,
    once per distinct text. ``table`` and the columns are the caller's own names, never input."""
    import polars as pl

    from goldmine.store import registered

    texts = [
        r[0]
        for r in con.execute(
            f"SELECT DISTINCT {raw} FROM {table} WHERE {norm} IS NULL AND {raw} IS NOT NULL"
        ).fetchall()
    ]
    if not texts:
        return 0
    frame = pl.DataFrame({"raw": texts, "norm": [normalize_query(t) for t in texts]})
    with registered(con, _gm_norm=frame):
        con.execute(
            f"UPDATE {table} SET {norm} = n.norm FROM _gm_norm n "
            f"WHERE {table}.{norm} IS NULL AND {table}.{raw} = n.raw"
        )
    return len(texts)
