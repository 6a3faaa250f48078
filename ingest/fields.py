"""Fields to SQL: which of a file's fields feeds each canonical field, and the SQL that reads it.

Every target (search log, tickets, chat, corpus) maps a file's own field names onto its canonical
ones: a ``--map field=column`` first, else each known alias present (in alias order, the first
non-null per row winning), matched as spelled and then ignoring case. The SQL reads each field
from the column triple it was parsed into (``gm_c``/``gm_n``/``gm_s``, DEVELOPERS.md); the file's
field names travel as parameters (``gm_columns``, ``gm_extra_keys``), never inside SQL text.
"""

from __future__ import annotations

import json
import re
from typing import Any

from goldmine.errors import InputError
from goldmine.output import warn

# The fields a record is nothing without: a --map naming a column the file lacks is an error
# for them (a corpus's text was read from its title instead), a warning for the rest.
REQUIRED = frozenset({"query", "text", "chunk_id"})

# A field of embeddings, by its name (Cohere's emb, Haystack's and LlamaIndex's embedding,
# LanceDB's and Qdrant's vector, a data set's title_embedding): a list of numbers there is no
# metadata (``field_access``'s ``vectors``; a Parquet column of them, ``files.read_raw``).
VECTOR_NAME = re.compile(r"(?i)(.*[_\-.])?(emb|embeddings?|vectors?|dense_?vec(tor)?s?)")


def resolve_fields(
    keys: list[str],
    aliases: dict[str, tuple[str, ...]],
    mapping: dict[str, str],
    *,
    strict: bool = False,
) -> dict[str, list[str]]:
    """Canonical field -> the file's fields for it: the --map column, else every alias present
    (in alias order; the first non-null wins per row). ``strict`` (a file's own ``keys``): a
    --map column the file has not, nor a path into one of its columns, is an InputError; it
    was read as a field of no value in any record, with exit 0."""
    unknown = set(mapping) - set(aliases)
    if unknown:
        raise InputError(
            f"--map names unknown field(s) {sorted(unknown)}; known: {', '.join(aliases)}"
        )
    by_lower: dict[str, str] = {}
    for k in keys:
        by_lower.setdefault(k.lower(), k)
    # A spreadsheet's or a BI tool's words for a column ("Search Query", "Session-ID") are the
    # alias with its separators as underscores.
    by_words: dict[str, str] = {}
    for k in keys:
        by_words.setdefault(column_words(k), k)
    for k in keys:  # a JavaScript tracker's camelCase: numResults, clickedIds
        by_words.setdefault(column_words(_CAMEL.sub("_", str(k))), k)
    present = set(keys)
    out = {}
    for name, names in aliases.items():
        if name in mapping:
            # A name in another case than the file's takes the file's spelling; a dotted name
            # the file has no column for is a path into an object column (NestedKey).
            column = mapping[name]
            if column in present:
                out[name] = [column]
                continue
            spelled = by_lower.get(column.lower()) or nested_key(column, present, by_lower)
            if spelled is None and strict and keys:
                said = (f"--map {name}={column}: the file has no field {column!r} (its fields: "
                        f"{', '.join(keys[:12])}{', ...' if len(keys) > 12 else ''})")  # fmt: skip
                if name in REQUIRED:  # else a text, a query, read from another field
                    raise InputError(said)
                warn(said + ": read as empty in this file")  # one of several may lack it
            out[name] = [spelled or column]
            continue
        # The alias as spelled, else the first field that matches it ignoring case, else in words.
        found = [a if a in present else by_lower[a] for a in names if a in by_lower]
        if not found:
            found = [by_words[a] for a in names if a in by_words]
        if found:
            out[name] = list(dict.fromkeys(found))
    return out


class NestedKey(str):
    """A ``--map`` column naming a field inside an object column (``search.query``, as event
    pipelines write them): read as ``path`` (a JSON path) of the file's column ``head``."""

    head: str
    path: str
    below: tuple[str, ...]  # the keys below head, in order


def nested_key(column: str, present: set[str], by_lower: dict[str, str]) -> NestedKey | None:
    """``column`` as a path below the longest dotted prefix of it that is a column of the file
    (``search.results.items``: ``search`` then ``$."results"."items"``), or None."""
    parts = column.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        head = ".".join(parts[:cut])
        head = head if head in present else by_lower.get(head.lower())
        if head is not None and all(parts[cut:]):
            key = NestedKey(column)
            key.head = head
            key.below = tuple(parts[cut:])
            key.path = "$" + "".join(json_path(p)[1:] for p in key.below)
            return key
    return None


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def column_words(name: str) -> str:
    """A column name as an alias is written: lower case, runs of other characters one ``_``
    (``Search Query`` -> ``search_query``)."""
    return re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")


def parse_map(specs: list[str] | None) -> dict[str, str]:
    out = {}
    for spec in specs or []:
        name, sep, column = spec.partition("=")
        if not sep or not name.strip() or not column.strip():
            raise InputError(f"--map wants field=column, got {spec!r}")
        out[name.strip()] = column.strip()
    return out


def json_path(key: str) -> str:
    """A JSON path for one top-level key (a parameter value, never SQL text)."""
    return '$."' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


def field_access(
    fields: dict[str, list[str]],
    extra_keys: list[str],
    typed: tuple[str, ...] = (),
    vectors: bool = False,
) -> tuple[str, dict[str, Any]]:
    """SQL selecting ``line, raw, err, gm_v1, gm_t1, …, x`` from ``gm_rows``.

    ``gm_rows`` holds each record parsed once into the file's fields (``gm_columns``), one
    ``gm_c<i>``/``gm_n<i>``/``gm_s<i>`` triple per field (see ``files.field_columns``): the
    fields named in ``typed`` and the extra fields come as JSON, so a type can be checked and
    extras kept as they were, the rest as text. ``gm_v<i>``/``gm_t<i>`` (value, JSON type) follow
    the order of ``fields``' source keys; ``val``/``typ`` name them. ``vectors``: an extra
    field named as embeddings (``VECTOR_NAME``) holding a list of numbers is left out.
    """
    keys = [k for names in fields.values() for k in names]
    typed_keys = {k for name in typed for k in fields.get(name, [])}
    # A nested field is read from its object column, parsed as JSON text (see _nested_value).
    columns = {
        (k.head if isinstance(k, NestedKey) else k): (
            "JSON" if k in typed_keys or isinstance(k, NestedKey) else "VARCHAR"
        )
        for k in keys
    }
    _refuse_case_twins([k for k in keys if not isinstance(k, NestedKey)])
    # DuckDB's struct fields ignore case, so of two names differing in case only one can be read:
    # an extra field that is another's twin is left out (the line is still imported).
    lowered = {k.lower() for k in columns}
    # An object column a field is read from is kept too, less the fields read from it: the rest
    # of a payload (a chunk's source beside its text) is no field's, and was lost unsaid.
    patches = _read_paths(keys)
    kept = []
    for k in extra_keys:
        if k in patches or k.lower() not in lowered:
            lowered.add(k.lower())
            kept.append(k)
    extra_keys = kept
    columns.update({k: "JSON" for k in extra_keys})
    positions = {k: i + 1 for i, k in enumerate(columns)}
    params: dict[str, Any] = {
        "gm_columns": columns or {"gm_none": "VARCHAR"},
        "gm_structure": json.dumps(columns or {"gm_none": "VARCHAR"}),
        # How records are read: a line's key and reason depend on nothing else (see line_key).
        "gm_reading": json.dumps([fields, sorted(typed)]),
    }
    values, types, natives = [], [], []
    for j, k in enumerate(keys, start=1):
        if isinstance(k, NestedKey):
            value, kind = _nested_value(k, positions[k.head], f"gm_nested{j}")
            params[f"gm_nested{j}"] = k.path
            values.append(value)
            types.append(kind)
            natives.append("NULL::VARCHAR[]")
            continue
        got = f"gm_c{positions[k]}"
        if k in typed_keys:
            native, string = f"gm_n{positions[k]}", f"gm_s{positions[k]}"
            values.append(
                f"CASE WHEN {string} IS NOT NULL THEN {string} "
                f"WHEN left({got}, 1) = '\"' THEN json_extract_string({got}, '$') "
                f"WHEN {got} <> 'null' THEN {got}::VARCHAR END"
            )
            types.append(
                f"CASE WHEN {native} IS NOT NULL THEN 'ARRAY' "
                f"WHEN {string} IS NOT NULL THEN 'VARCHAR' ELSE gm_jtype_of({got}) END"
            )
            natives.append(native)
        else:
            values.append(got)
            types.append(f"CASE WHEN {got} IS NULL THEN 'NULL' ELSE 'VARCHAR' END")
            natives.append("NULL::VARCHAR[]")
    extra = "NULL::VARCHAR"
    if extra_keys:
        params["gm_extra_keys"] = extra_keys
        # An extra passed through natively (a Parquet string or list of strings) has no text.
        pairs = ", ".join(
            _less_read(positions[k], j)
            if k in patches
            else _no_vector(_extra(i))
            if vectors and VECTOR_NAME.fullmatch(k)
            else _extra(i)
            for j, (k, i) in enumerate((k, positions[k]) for k in extra_keys)
        )
        for j, k in enumerate(extra_keys):
            if k in patches:
                params[f"gm_unread{j}"] = json.dumps(patches[k])
        extra = (
            "CASE WHEN err IS NULL THEN nullif(to_json(map_from_entries(list_filter("
            f"list_zip($gm_extra_keys, [{pairs}]::JSON[]), "
            "lambda e: e[2] IS NOT NULL AND e[2]::VARCHAR <> 'null')))::VARCHAR, '{}') END"
        )
    # One column per field (not a list): nothing to build per row, and the optimizer drops the
    # values and types no stage expression reads.
    columns_sql = "".join(
        f"{value}::VARCHAR AS gm_v{i}, {kind} AS gm_t{i}, {native} AS gm_l{i}, "
        for i, (value, kind, native) in enumerate(zip(values, types, natives, strict=True), start=1)
    )
    sql = f"SELECT line, raw, err, gm_seen, gm_line, {columns_sql}{extra} AS x FROM gm_rows"
    return sql, params


def _extra(i: int) -> str:
    return f"coalesce(gm_c{i}::VARCHAR, to_json(gm_s{i})::VARCHAR, to_json(gm_n{i})::VARCHAR)"


def _no_vector(value: str) -> str:
    """An extra field's value, none where it is a list of numbers (an embedding) or an object
    of lists and objects (a vector store's named vectors, dense and sparse)."""
    return (
        f"CASE WHEN json_type({value}) = 'ARRAY' AND json_type({value}, '$[0]') IN "
        f"('DOUBLE', 'BIGINT', 'UBIGINT') THEN NULL "
        f"WHEN json_type({value}) = 'OBJECT' AND list_bool_and(list_transform("
        f"json_extract({value}, '$.*'), lambda v: json_type(v) IN ('ARRAY', 'OBJECT'))) "
        f"THEN NULL ELSE {value} END"
    )


def _read_paths(keys: list[str]) -> dict[str, dict]:
    """Per object column read by a nested field, a JSON merge patch removing the paths read."""
    patches: dict[str, dict] = {}
    for k in keys:
        if not isinstance(k, NestedKey):
            continue
        node: dict | None = patches.setdefault(k.head, {})
        for part in k.below[:-1]:
            if node is None or (part in node and node[part] is None):
                node = None  # a path above it is removed whole
                break
            node = node.setdefault(part, {})
        if node is not None:
            node[k.below[-1]] = None
    return patches


def _less_read(position: int, j: int) -> str:
    """An object column's JSON less the fields read from it (``gm_unread<j>``, a merge patch of
    nulls); nothing when nothing else is in it."""
    got = f"gm_c{position}"
    return (
        f"CASE WHEN json_type({got}::VARCHAR) = 'OBJECT' THEN nullif(json_merge_patch("
        f"{got}::VARCHAR, $gm_unread{j})::VARCHAR, '{{}}') ELSE {got}::VARCHAR END"
    )


def _nested_value(key: NestedKey, head: int, param: str) -> tuple[str, str]:
    """SQL of a nested field's text value and JSON type, from its object column's JSON text
    (``gm_c``, or ``gm_s`` where a reader passed the column as a string)."""
    got = f"json_extract(coalesce(gm_c{head}, gm_s{head}), ${param})"
    value = f"CASE WHEN json_type({got}) = 'VARCHAR' THEN {got} ->> '$' ELSE {got}::VARCHAR END"
    kind = f"CASE WHEN {got} IS NULL THEN 'NULL' ELSE json_type({got}) END"
    return f"CASE WHEN json_type({got}) <> 'NULL' THEN {value} END", kind


def _refuse_case_twins(keys: list[str]) -> None:
    by_lower: dict[str, str] = {}
    for k in keys:
        twin = by_lower.setdefault(k.lower(), k)
        if twin != k:
            raise InputError(
                f"fields {twin!r} and {k!r} differ only in case, which the reader cannot tell "
                "apart; map only one of them"
            )


def _positions(fields: dict[str, list[str]], name: str) -> list[int]:
    start = 1
    for field_name, keys in fields.items():
        if field_name == name:
            return list(range(start, start + len(keys)))
        start += len(keys)
    return []


def _pick(fields: dict[str, list[str]], name: str, kind: str) -> str:
    if kind == "v":
        # A list passed through natively (gm_l) is written as JSON text only where text is used.
        refs = [f"coalesce(gm_v{i}, to_json(gm_l{i})::VARCHAR)" for i in _positions(fields, name)]
    else:
        refs = [f"gm_{kind}{i}" for i in _positions(fields, name)]
    if not refs:
        return "NULL::VARCHAR"
    return refs[0] if len(refs) == 1 else f"coalesce({', '.join(refs)})"


def val_of(fields: dict[str, list[str]], name: str, keys: list[str]) -> str:
    """SQL for the text value of ``keys``, some of a canonical field's fields: the first not
    null (NULL when none is)."""
    start = 1
    for field_name, names in fields.items():
        if field_name == name:
            refs = [f"gm_v{start + names.index(k)}" for k in keys if k in names]
            return f"coalesce({', '.join(refs)})" if refs else "NULL::VARCHAR"
        start += len(names)
    return "NULL::VARCHAR"


def val(fields: dict[str, list[str]], name: str) -> str:
    """SQL for a canonical field's text value (NULL when the file lacks the field)."""
    return _pick(fields, name, "v")


def ids(fields: dict[str, list[str]], name: str) -> str:
    """SQL for a canonical field's list of ids: a native list as it is, else ``gm_ids`` of the
    text (a JSON array, of ids or of objects with an id, or an "a,b|c" string)."""
    refs = _positions(fields, name)
    if len(refs) == 1:
        return f"coalesce(gm_l{refs[0]}, gm_ids(gm_v{refs[0]}))"
    return f"gm_ids({val(fields, name)})"


def typ(fields: dict[str, list[str]], name: str) -> str:
    """SQL for the JSON type of a canonical field's value."""
    refs = _positions(fields, name)
    if len(refs) <= 1:
        return _pick(fields, name, "t").replace("NULL::VARCHAR", "'NULL'")
    # The type of the value val() picks: the first alias whose value is not null.
    whens = " ".join(f"WHEN gm_v{i} IS NOT NULL OR gm_l{i} IS NOT NULL THEN gm_t{i}" for i in refs)
    return f"(CASE {whens} END)"
