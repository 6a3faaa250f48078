"""PII redaction as DuckDB SQL, so it runs vectorised over a whole batch before anything is stored.

Each pattern replaces its matches with a typed placeholder (``<EMAIL>``, ``<CARD>``, …). Card
numbers and IBANs are only replaced when their checksum holds (Luhn, ISO 7064 mod 97): the regex
finds candidates, a SQL macro checks just those, so an order number that merely looks like a card
stays readable. User patterns (``--redact-pattern NAME=REGEX`` or ``[ingest] redact_patterns`` in
goldmine.toml) are passed to DuckDB as parameters, never formatted into SQL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from goldmine.errors import InputError

# RE2 syntax (DuckDB): no look-behind, no back-references.
EMAIL = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
IPV4 = rf"\b(?:{_OCTET}\.){{3}}{_OCTET}\b"
IPV6 = (
    r"(?i)\b(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}\b"
    r"|\b(?:[0-9a-f]{1,4}:){1,7}:(?:[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){0,6})?"
    r"|::(?:[0-9a-f]{1,4}:){0,6}[0-9a-f]{1,4}\b"
)
IBAN = r"\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b"
CARD = r"\b(?:[0-9][ -]?){12,18}[0-9]\b"
PHONE = (
    r"\+[0-9]{1,3}[ .-]?\(?[0-9]{1,4}\)?(?:[ .-]?[0-9]{2,4}){2,5}\b"
    r"|\([0-9]{2,4}\)[ .-]?[0-9]{3,4}[ .-]?[0-9]{3,4}\b"
    r"|\b[0-9]{3}[ .-][0-9]{3}[ .-][0-9]{4}\b"
    r"|\b0[0-9]{2,4}[ .-]?[0-9]{3,4}[ .-]?[0-9]{3,4}\b"
)
# Social handles (@name) in chat exports such as Twitter customer support.
HANDLE = r"@[A-Za-z0-9_]{1,30}\b"

# Macros that check a candidate match; created per connection by ``install_macros``.
MACROS = r"""
CREATE OR REPLACE TEMP MACRO gm_luhn(s) AS (
    list_sum(list_transform(
        split(reverse(regexp_replace(s, '[^0-9]', '', 'g')), ''),
        lambda d, i: CASE WHEN i % 2 = 0
            THEN (CASE WHEN d::INTEGER * 2 > 9 THEN d::INTEGER * 2 - 9 ELSE d::INTEGER * 2 END)
            ELSE d::INTEGER END
    )) % 10 = 0
);
CREATE OR REPLACE TEMP MACRO gm_iban_mod97(c) AS (
    list_reduce(
        list_transform(split(substr(c, 5) || substr(c, 1, 4), ''),
            lambda ch: CASE WHEN ch BETWEEN '0' AND '9' THEN ascii(ch) - 48
                            ELSE ascii(ch) - 55 END),
        lambda acc, v: (acc * CASE WHEN v > 9 THEN 100 ELSE 10 END + v) % 97,
        0
    )
);
CREATE OR REPLACE TEMP MACRO gm_iban_ok(s) AS (
    gm_iban_mod97(upper(replace(s, ' ', ''))) = 1
);
"""


@dataclass(frozen=True)
class Redactor:
    """Which patterns to apply; ``steps(col)`` gives the SQL to wrap a column with."""

    enabled: bool = True
    handles: bool = False
    user_patterns: tuple[tuple[str, str], ...] = ()
    params: dict[str, str] = field(default_factory=dict, compare=False)

    def steps(self, col: str, may_match: str | None = None) -> list[str]:
        """SQL expressions applied one after another (each over the previous step's ``col``).

        The checked patterns reference their input twice, so each gets its own step rather than
        nesting, which would evaluate the inner expression again. ``may_match``: a boolean
        column holding ``may_match(col)`` of the text before the first step; where it is false,
        the built-in patterns are not run.
        """
        if not self.enabled:
            return []
        first = col
        for name, pattern in (("EMAIL", EMAIL), ("IPV6", IPV6), ("IPV4", IPV4)):
            first = _replace(first, _lit(pattern), _lit(f"<{name}>"))
        iban = _checked(col, IBAN, "gm_iban_ok", "<IBAN>")
        card = _checked(col, CARD, "gm_luhn", "<CARD>")
        last = _replace(col, _lit(PHONE), "'<PHONE>'")
        if self.handles:
            last = _replace(last, _lit(HANDLE), "'<HANDLE>'")
        steps = [first, iban, card]
        if not self.user_patterns:
            steps.append(last)
        if may_match:
            steps = [f"CASE WHEN {may_match} THEN {step} ELSE {col} END" for step in steps]
        for i, (name, _pattern) in enumerate(self.user_patterns):
            last = _replace(last, f"$gm_rx_{i}", _lit(f"<{name}>"))
        return steps if len(steps) == 4 else [*steps, last]

    @staticmethod
    def may_match(col: str) -> str:
        """Whether a built-in pattern may match the text: each needs a digit, an @ or a colon
        (an IPv6 address). Most queries and answers have none, and are then left as they are
        after this one test instead of eight regular expressions. (A user's pattern may match
        anything: the step that holds them runs on every text.)"""
        return f"regexp_matches({col}, '[0-9@:]')"

    def nested(self, col: str) -> str:
        """All steps as one expression; for a few rows (the checked steps evaluate their input
        twice, which ``steps`` avoids on the main path)."""
        expr = col
        for step in self.steps("gm_col"):
            expr = step.replace("gm_col", f"({expr})")
        return expr

    def sql_params(self) -> dict[str, str]:
        return {f"gm_rx_{i}": pattern for i, (_name, pattern) in enumerate(self.user_patterns)}


def _lit(text: str) -> str:
    # Only for this module's own constants and validated placeholder names, never user text.
    return "'" + text.replace("'", "''") + "'"


def _replace(col: str, pattern: str, placeholder: str) -> str:
    return f"regexp_replace({col}, {pattern}, {placeholder}, 'g')"


def _checked(col: str, pattern: str, check: str, placeholder: str) -> str:
    return (
        f"list_reduce(list_filter(regexp_extract_all({col}, {_lit(pattern)}), "
        f"lambda m: {check}(m)), lambda acc, m: replace(acc, m, '{placeholder}'), {col})"
    )


_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,31}$")


def parse_patterns(specs: list[str] | dict[str, str] | None) -> tuple[tuple[str, str], ...]:
    """``NAME=REGEX`` strings (CLI) or a {NAME: REGEX} table (goldmine.toml), checked."""
    if not specs:
        return ()
    items = specs.items() if isinstance(specs, dict) else (_split(s) for s in specs)
    out = []
    for name, pattern in items:
        name = str(name).strip().upper()
        if not _NAME.match(name):
            raise InputError(
                f"redact pattern name {name!r} must be letters, digits or _ (e.g. ORDER_ID=…)"
            )
        try:
            re.compile(pattern)
        except re.error as exc:
            raise InputError(f"redact pattern {name}: not a valid regex: {exc}") from exc
        out.append((name, str(pattern)))
    return tuple(out)


def _split(spec: str) -> tuple[str, str]:
    name, sep, pattern = spec.partition("=")
    if not sep or not pattern:
        raise InputError(f"--redact-pattern wants NAME=REGEX, got {spec!r}")
    return name, pattern


def install_macros(con) -> None:
    con.execute(MACROS)


def redact_text(con, text: str | None, redactor: Redactor | None = None) -> str | None:
    """Redact one string with the same SQL (for ``goldmine add`` and tests)."""
    redactor = redactor or Redactor()
    install_macros(con)
    sql = "SELECT $gm_text AS v"
    for step in redactor.steps("v"):
        sql = f"SELECT {step} AS v FROM ({sql})"
    params = {"gm_text": text, **redactor.sql_params()}
    return con.execute(sql, params).fetchall()[0][0]


def configured_patterns(configured: list[str] | dict[str, str] | None) -> list[str]:
    """``[ingest] redact_patterns`` of goldmine.toml (a table or NAME=REGEX strings) as
    NAME=REGEX strings, to go before the flag's."""
    if isinstance(configured, dict):
        return [f"{name}={pattern}" for name, pattern in configured.items()]
    return [str(s) for s in configured or []]


def make_redactor(
    enabled: bool, cli_patterns: list[str] | None = None, handles: bool = False
) -> Redactor:
    """The redactor for one import: the built-in patterns, then ``cli_patterns`` (``NAME=REGEX``;
    the command puts goldmine.toml's first, see ``configured_patterns``)."""
    patterns = parse_patterns(cli_patterns)
    return Redactor(enabled=enabled, handles=handles, user_patterns=patterns)
