"""PII redaction run inside DuckDB, before anything is stored.

Each PII span becomes a typed placeholder (``<EMAIL>``, ``<PHONE>``, ``<CARD>``, ``<IBAN>``,
``<IPV4>``, ``<IPV6>``, ``<SSN>``, ``<NINO>``, ``<NATIONAL_ID>``, ``<SECRET>``, ``<HANDLE>``).
Finding them takes validation a regex cannot do (phone numbers by libphonenumber's metadata, cards
by Luhn and issuer, IBANs by mod 97, addresses by ``ipaddress``, SSNs by their ranges, national
ids by python-stdnum's checks: see
``ingest/pii.py``), so it is Python, registered on the connection as an Arrow UDF (``gm_pii``). A
cheap RE2 test in SQL (``pii.CANDIDATE``: a run of 7+ digits, a dotted quad, an @ or ``%40``, hex
around colons, a credential's literal start) decides which texts reach it: most texts have none
and never leave SQL.
User patterns (``--redact-pattern NAME=REGEX`` or ``[ingest] redact_patterns`` in goldmine.toml)
stay RE2 ``regexp_replace`` over every text, passed to DuckDB as parameters, never formatted in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import duckdb

from goldmine.errors import InputError
from goldmine.ingest import pii
from goldmine.ingest.pii import DEFAULT_REGIONS
from goldmine.store import register_function

UDF = "gm_pii"


@dataclass(frozen=True)
class Redactor:
    """Which patterns to apply; ``steps(col)`` gives the SQL to wrap a column with.
    ``regions``: where a phone number written without + or 00 may be from."""

    enabled: bool = True
    handles: bool = False
    user_patterns: tuple[tuple[str, str], ...] = ()
    params: dict[str, str] = field(default_factory=dict, compare=False)
    regions: tuple[str, ...] = DEFAULT_REGIONS

    def steps(self, col: str, may_match: str | None = None) -> list[str]:
        """SQL expressions applied one after another (each over the previous step's ``col``):
        the built-in types, then the user's patterns. ``may_match``: a boolean column holding
        ``may_match(col)`` of the text before the first step; where it is false, the text does
        not go to Python."""
        if not self.enabled:
            return []
        test = may_match or self.may_match(col)
        regions = _lit(",".join(self.regions))  # checked region codes, never user text
        handles = "true" if self.handles else "false"
        steps = [f"CASE WHEN {test} THEN {UDF}({col}, {regions}, {handles}) ELSE {col} END"]
        if self.user_patterns:
            last = col
            for i, (_pattern, placeholder) in enumerate(self.user_steps()):
                last = _replace(last, f"$gm_rx_{i}", _lit(placeholder))
            steps.append(last)
        return steps

    def user_steps(self) -> list[tuple[str, str]]:
        """The user's patterns in the order they run, each with its placeholder: after the
        built-in types, one after another (a later pattern sees an earlier one's placeholder).
        Both engines read this list: ``steps`` here, ``ingest.spark.redact`` in Spark."""
        return [(pattern, f"<{name}>") for name, pattern in self.user_patterns]

    @staticmethod
    def may_match(col: str) -> str:
        """Whether a built-in type may be in the text (``pii.CANDIDATE``). A query with a short
        number in it ("track order 312") has none. (A user's pattern may match anything: the
        step that holds them runs on every text.)"""
        return f"regexp_matches({col}, {_lit(pii.CANDIDATE)})"

    def nested(self, col: str) -> str:
        """All steps as one expression; for a few rows."""
        expr = col
        for step in self.steps("gm_col"):
            expr = step.replace("gm_col", f"({expr})")
        return expr

    def sql_params(self) -> dict[str, str]:
        return {f"gm_rx_{i}": pattern for i, (_name, pattern) in enumerate(self.user_patterns)}


def _lit(text: str) -> str:
    # Only for this module's own constants and validated names, never user text.
    return "'" + text.replace("'", "''") + "'"


def _replace(col: str, pattern: str, placeholder: str) -> str:
    return f"regexp_replace({col}, {pattern}, {placeholder}, 'g')"


def _pii_batch(texts, regions, handles):
    """The UDF: texts (an Arrow array of only the rows whose candidate test held) redacted."""
    import pyarrow as pa

    where = tuple(regions[0].as_py().split(","))
    with_handles = bool(handles[0].as_py())
    values = texts.to_pylist()
    # A batch repeats itself (a session's id on each of its events, a popular query): each
    # distinct text is checked once.
    done = {t: pii.redact(t, where, with_handles) for t in set(values) if t is not None}
    return pa.array([None if t is None else done[t] for t in values], pa.string())


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
        _check_re2(name, str(pattern))
        out.append((name, str(pattern)))
    return tuple(out)


def _check_re2(name: str, pattern: str) -> None:
    """Refuse a pattern DuckDB's engine (RE2) cannot run, which Python's ``re`` reads: a
    look-behind or look-ahead, a back-reference. It failed mid-import, with a traceback."""
    try:
        duckdb.connect().execute("SELECT regexp_matches('', ?)", [pattern]).fetchall()
    except duckdb.Error as exc:
        said = str(exc).split("\n")[0].removeprefix("Invalid Input Error: ")
        raise InputError(
            f"redact pattern {name}: {said}. Patterns run in RE2, which has no look-behind, "
            "look-ahead or back-reference: match the text itself (CUST=cust-[0-9]+)"
        ) from exc


def _split(spec: str) -> tuple[str, str]:
    name, sep, pattern = spec.partition("=")
    if not sep or not pattern:
        raise InputError(f"--redact-pattern wants NAME=REGEX, got {spec!r}")
    return name, pattern


def install_macros(con: duckdb.DuckDBPyConnection) -> None:
    """Register the redaction UDF on ``con`` (once per connection)."""
    register_function(
        con, UDF, _pii_batch, ["VARCHAR", "VARCHAR", "BOOLEAN"], "VARCHAR",
        type="arrow", null_handling="special", side_effects=False,
    )  # fmt: skip


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
    enabled: bool,
    cli_patterns: list[str] | None = None,
    handles: bool = False,
    regions: list[str] | tuple[str, ...] | None = None,
) -> Redactor:
    """The redactor for one import: the built-in types, then ``cli_patterns`` (``NAME=REGEX``;
    the command puts goldmine.toml's first, see ``configured_patterns``). ``regions``: the
    regions of phone numbers and national ids (``[ingest] pii_regions``; default US, GB, DE, FR,
    IN)."""
    patterns = parse_patterns(cli_patterns)
    try:
        where = pii.check_regions(regions) if regions is not None else DEFAULT_REGIONS
    except ValueError as exc:
        raise InputError(f"pii_regions: {exc}") from exc
    return Redactor(enabled=enabled, handles=handles, user_patterns=patterns, regions=where)
