"""What the Python API accepts as a gold set or a run, turned into the eval's containers.

A notebook holds its judgments and rankings in whatever shape the last library left them:
pytrec_eval/ranx dicts (``{qid: {doc: grade}}``, ``{qid: {doc: score}}``), plain ``{qid: [ids]}``,
a polars or pandas frame with TREC columns, or a file. Each becomes the same ``Gold`` and ``Run``
the CLI's readers make, so ``goldmine.evaluate`` scores them with the CLI's code, and a path goes
through the CLI's readers themselves. Nothing here imports polars unless a frame is given.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import re
import sys
from collections.abc import Callable, Collection, Iterable, Mapping
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from goldmine.errors import InputError
from goldmine.gold import Gold, GoldQuery, Run, id_text
from goldmine.readers import dedupe, read_gold

if TYPE_CHECKING:
    import pandas
    import polars

# What ``gold=`` and ``run=`` accept (documented on ``goldmine.evaluate``): a frame or a file,
# or a dict of judgments / of scores or ranked ids.
Tabular = Union["polars.DataFrame", "pandas.DataFrame", str, os.PathLike]
GoldLike = Gold | Mapping[str, Mapping[str, int]] | Mapping[str, Iterable[str]] | Tabular
RunLike = (
    Run
    | Mapping[str, Mapping[str, float]]
    | Mapping[str, Iterable[str]]
    | Tabular
    | Callable[[str, int], Any]  # a retriever, for evaluate and compare (not as_run)
)

_VERSION = re.compile(r"^(v?\d+|latest)$", re.IGNORECASE)  # as `eval run --gold` takes them

# Column names for the TREC fields, in the spellings of trec_eval, BEIR, ranx and ir_measures.
QUERY_COLUMNS = ("query_id", "qid", "q_id", "query-id", "topic_id", "topic", "query")
# A run's queries may be given by their text instead, as in a run file (matched to the gold's).
TEXT_COLUMNS = ("query", "query_text")
RUN_QUERY_COLUMNS = (*QUERY_COLUMNS, "query_text")
# MS MARCO's passage runs name a passage "pid". docno before docid: PyTerrier's result frame
# holds both, docid being Terrier's internal number and docno the collection's id.
DOC_COLUMNS = ("doc_id", "docno", "docid", "chunk_id", "corpus-id", "corpus_id", "pid",
               "passage_id", "doc")  # fmt: skip
GRADE_COLUMNS = ("relevance", "grade", "rel", "label", "score")
SCORE_COLUMNS = ("score", "sim", "similarity")


def is_path(value: object) -> bool:
    return isinstance(value, str | os.PathLike)


def as_gold(value: Any) -> Gold:
    """A gold set from any accepted shape; a path is read by the CLI's reader."""
    inner = getattr(value, "gold", None)  # a published version (goldmine.GoldSet)
    if isinstance(inner, Gold):
        return inner
    if isinstance(value, Gold):
        return value
    if is_path(value):
        if isinstance(value, str) and _VERSION.match(value) and not Path(value).exists():
            raise InputError(
                f"gold: {value!r} is no file; a published version is read from its store: "
                f"goldmine.Store('goldmine.duckdb').gold({value!r})"
            )
        return read_gold(Path(value).expanduser())
    return _converted(value, _gold_from_mapping, _gold_from_frame,
                      "gold: expected a dict {qid: {doc: grade}} or {qid: [ids]}, a DataFrame, "
                      "a path or a published version")  # fmt: skip


def _grade(qid: str, doc: str, value: object) -> int:
    # numbers' classes, not int and float: a grade from a numpy array is an np.int64; a bool
    # is no grade (True would read as 1)
    whole = isinstance(value, numbers.Integral) or (
        isinstance(value, numbers.Real) and float(value).is_integer()
    )
    if whole and not isinstance(value, bool | np_bool()):
        return int(value)
    raise InputError(f"gold: query {qid!r}, doc {doc!r}: a grade is an integer, got {value!r}")


def np_bool() -> type:
    """numpy's bool, if numpy is loaded (it is never imported here for it)."""
    numpy = sys.modules.get("numpy")
    return numpy.bool_ if numpy is not None else bool


def ids_text(values: Iterable, where: str) -> list[str]:
    """``id_text`` of each; ``str`` in C unless a float is among them (the types looked at once,
    not each id: a run holds millions)."""
    values = list(values)
    kinds = set(map(type, values))
    if any(_not_str_ready(k) for k in kinds):
        return [id_text(v, where) for v in values]
    return list(map(str, values))


def _not_str_ready(kind: type) -> bool:
    """Whether ``str`` misreads an id of this type: a float (184.0) or bytes (b"184")."""
    fraction = issubclass(kind, numbers.Real) and not issubclass(kind, numbers.Integral)
    return fraction or issubclass(kind, bytes | bytearray)


def _judged(qid: str, value: object) -> dict[str, int]:
    where = f"gold: query {qid!r}"
    if isinstance(value, Mapping):
        docs = ids_text(value, where)
        return {
            doc: _grade(qid, doc, grade) for doc, grade in zip(docs, value.values(), strict=True)
        }
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise InputError(
            f"gold: query {qid!r}: expected {{doc: grade}} or a list of relevant ids, "
            f"got {type(value).__name__}"
        )
    return dict.fromkeys(ids_text(value, where), 1)


def _gold_from_mapping(value: Mapping) -> Gold:
    qids = ids_text(value, "gold")
    queries = {
        q: GoldQuery(q, None, _judged(q, v)) for q, v in zip(qids, value.values(), strict=True)
    }
    if not queries:
        raise InputError("gold: the gold set is empty")
    return Gold(queries, "dict", _digest(queries), "dict")


def _digest(queries: Mapping[str, GoldQuery]) -> str:
    """A content hash of the judgments, order-free, as a version's hash identifies a gold set."""
    canonical = sorted((q, sorted(g.judged.items())) for q, g in queries.items())
    return hashlib.sha256(json.dumps(canonical).encode()).hexdigest()


def as_run(value: Any) -> Run:
    """A run from a dict or a frame, ranked as trec_eval ranks: score descending, ties by doc
    id descending; a list is taken in its order. (A path goes to ``evaluate_run_file``.)"""
    if isinstance(value, Run):
        return value
    return _converted(value, _run_from_mapping, _run_from_frame,
                      "run: expected a dict {qid: {doc: score}} or {qid: [ids]}, a DataFrame or "
                      "a path")  # fmt: skip


def _converted(value: Any, from_mapping: Callable, from_frame: Callable, expected: str) -> Any:
    if type(value).__module__.split(".")[0] == "ranx" and hasattr(value, "to_dict"):
        value = value.to_dict()  # ranx's Qrels and Run, as pytrec_eval-shaped dicts
    if isinstance(value, Mapping):
        return from_mapping(value)
    frame = as_polars(value)
    if frame is not None:
        return from_frame(frame)
    raise InputError(f"{expected}, not {type(value).__name__}")


def _run_from_mapping(value: Mapping) -> Run:
    results: dict[str, list[str]] = {}
    scores: dict[str, list[float]] = {}
    listed = False
    repeated = 0  # ids given twice in (id, score) pairs, told as a list's are (dedupe)
    for key, ranked in value.items():
        qid = id_text(key, "run")
        ranked = _scores_by_doc(ranked)
        if isinstance(ranked, Mapping):
            if None in ranked:  # a key lookup, not a pass over the ids
                _refuse_none(qid, list(ranked))
            results[qid], scores[qid] = _ordered(qid, ranked)
        elif isinstance(ranked, str) or not isinstance(ranked, Iterable):
            raise InputError(
                f"run: query {qid!r}: expected {{doc: score}} or a list of ranked ids, "
                f"got {type(ranked).__name__}"
            )
        elif _pairs(qid, ranked := _reiterable(ranked)):
            firsts = _first_of_each(qid, ranked)
            repeated += len(ranked) - len(firsts)  # type: ignore[arg-type]
            # A list is taken in its order, as a run file's and a retriever's are: a vector
            # store's (id, distance) pairs come nearest first, their scores growing.
            results[qid], scores[qid] = list(firsts), _checked_scores(qid, firsts)
        else:
            results[qid] = ids_text(_refuse_none(qid, list(ranked)), f"run: query {qid!r}")
            listed = True
    # Keyed by id or by the query's text, as a JSON run file of the same shape is matched.
    run = Run(results, "dict", None, "dict", keyed_by="text", scores=scores or None,
              n_duplicates=repeated)  # fmt: skip
    return dedupe(run) if listed else run  # a dict's ids are unique already


def _scores_by_doc(ranked: Any) -> Any:
    """A pandas Series indexed by doc ids (``g.set_index("docno")["score"]``) as ``{doc: score}``:
    iterated, it gives its scores. Any other value as it is."""
    index = getattr(ranked, "index", None)
    name = getattr(index, "name", None)
    if type(ranked).__module__.split(".")[0] != "pandas" or not isinstance(name, str):
        return ranked
    return dict(zip(index, ranked, strict=True)) if name.lower() in DOC_COLUMNS else ranked


def _reiterable(ranked: Iterable) -> Iterable:
    """``ranked`` as something read twice: a generator or ``map`` is read once into a list
    (``_pairs`` looks at the first item, which a one-shot iterable would lose); a 2-d numpy
    array of (id, score) rows as lists, whose rows ``_pairs`` knows."""
    if getattr(ranked, "ndim", 1) > 1 and hasattr(ranked, "tolist"):
        return ranked.tolist()  # type: ignore[no-any-return]
    return ranked if isinstance(ranked, Collection) else list(ranked)


def _pairs(qid: str, ranked: Iterable) -> bool:
    """Whether a query's list is of (id, score) pairs, as retrievers return them; a set (no
    order) or a list of anything but ids or pairs is refused. The first item tells."""
    if isinstance(ranked, set | frozenset):
        raise InputError(f"run: query {qid!r}: a set has no order; give a list of ranked ids "
                         "(best first) or {doc: score}")  # fmt: skip
    first = next(iter(ranked), None)
    if isinstance(first, tuple | list) and len(first) == 2 and not isinstance(first[1], str):
        return True
    if isinstance(first, numbers.Real) and not isinstance(first, numbers.Integral | bool):
        id_text(first, f"run: query {qid!r}")  # a whole float is an id; a fraction is refused
        return False
    if _no_id(first):
        raise InputError(f"run: query {qid!r}: expected (id, score) pairs or ids, got {first!r}")
    return False


def _no_id(item: object) -> bool:
    """Whether a run's item is plainly no id: a record, a list or set, a truth value, a score
    alone. Any other object (text, a number, a ``uuid.UUID`` as vector stores return ids) is
    an id, read by its text."""
    number = isinstance(item, numbers.Number) and not isinstance(item, numbers.Integral)
    listed = isinstance(item, tuple | list | set | frozenset | Mapping)
    return number or listed or isinstance(item, bool)


def _refuse_none(qid: str, ids: list) -> list:
    """``ids`` unless one is None: a retriever's miss, which ``str`` would make the id "None"
    (and several of them "repeated ids"). ``None in`` runs in C, as the conversion does."""
    if None in ids:
        raise _none_id(qid, ids.index(None) + 1)
    return ids


def _none_id(qid: str, rank: int) -> InputError:
    return InputError(f"run: query {qid!r}: result {rank} is None, not an id; give ids or "
                      "(id, score) pairs")  # fmt: skip


def _first_of_each(qid: str, pairs: Iterable) -> dict[str, object]:
    """{id: score} of (id, score) pairs, an id given twice keeping its first score (as a
    ranked list keeps an id at its first rank)."""
    out: dict[str, object] = {}
    for at, pair in enumerate(pairs, start=1):
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise InputError(f"run: expected (id, score) pairs or ids, got {pair!r}")
        if pair[0] is None:
            raise _none_id(qid, at)
        out.setdefault(id_text(pair[0], f"run: query {qid!r}"), pair[1])
    return out


def _ordered(qid: str, ranked: Mapping) -> tuple[list[str], list[float]]:
    """trec_eval's order (``readers.order_trec``), the per-item work in C: a run of 2,000 x
    1,000 dicts spent more time checking and converting scores than scoring."""
    scores = _checked_scores(qid, ranked)
    pairs = sorted(zip(scores, ids_text(ranked, f"run: query {qid!r}"), strict=True), reverse=True)
    return list(map(itemgetter(1), pairs)), list(map(itemgetter(0), pairs))


def _checked_scores(qid: str, ranked: Mapping) -> list[float]:
    """The scores of ``{id: score}`` as floats, in its order; a NaN or a score that is no
    number is refused, naming the query."""
    try:
        scores = list(map(float, ranked.values()))
    except (TypeError, ValueError):
        scores = [_score(qid, s) for s in ranked.values()]
    if any(map(math.isnan, scores)):
        raise InputError(f"run: query {qid!r}: a score is NaN")
    return scores


def _score(qid: str, value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"run: query {qid!r}: a score is a number, got {value!r}") from None


# --- frames ------------------------------------------------------------------------------------


def as_polars(value: object) -> polars.DataFrame | None:
    """A polars frame for a polars or pandas frame (checked by module, importing neither)."""
    module = type(value).__module__.split(".")[0]
    if module not in ("polars", "pandas"):
        return None
    import polars as pl

    if module == "pandas":
        # a Series is no frame (its columns were an AttributeError further on)
        frame = pl.from_pandas(value) if hasattr(value, "columns") else None  # type: ignore[arg-type]
        return frame if isinstance(frame, pl.DataFrame) else None
    if isinstance(value, pl.LazyFrame):
        return value.collect()
    return value if isinstance(value, pl.DataFrame) else None


def id_column(column: polars.Series, what: str) -> polars.Series:
    """A frame's id column as text, as ``id_text`` reads one id: a float column of whole numbers
    (pandas' int column with a gap) as its integers, a fraction refused; a column of lists
    (one row per query) is named, not a polars cast error."""
    import polars as pl

    if column.dtype.is_nested():
        raise InputError(
            f"{what}: column {column.name!r} holds {column.dtype}, not one id a row; give one row "
            f"per (query, doc), e.g. frame.explode({column.name!r})"
        )
    if column.dtype.is_float():
        fraction = (~column.is_finite() | (column != column.floor())).fill_null(False)
        if fraction.any():
            id_text(column[int(fraction.arg_max() or 0)], f"{what}: column {column.name!r}")
        column = column.cast(pl.Int64)
    return column.cast(pl.String)


def _column(frame: polars.DataFrame, names: tuple[str, ...], what: str, *, skip=()) -> str | None:
    lower = {c.lower(): c for c in frame.columns if c not in skip}
    found = next((lower[n] for n in names if n in lower), None)
    if found is None and what:
        raise InputError(
            f"{what}: the frame has no {names[0]} column (any of {', '.join(names)}); "
            f"it has {', '.join(frame.columns)}"
        )
    return found


def _gold_from_frame(frame: polars.DataFrame) -> Gold:
    import polars as pl

    qid = _column(frame, QUERY_COLUMNS, "gold")
    doc = _column(frame, DOC_COLUMNS, "gold", skip=(qid,))
    grade = _column(frame, GRADE_COLUMNS, "gold", skip=(qid, doc))
    _refuse_fractions(frame, qid, doc, grade)
    try:
        grades = frame[grade].cast(pl.Int64, strict=True)
    except pl.exceptions.PolarsError:
        raise InputError(f"gold: column {grade!r} must hold integer grades") from None
    table = pl.DataFrame(
        {
            "qid": id_column(frame[qid], "gold"),
            "doc": id_column(frame[doc], "gold"),
            "grade": grades,
        }
    )
    _refuse_gaps(table, {"qid": qid, "doc": doc, "grade": grade})
    _refuse_two_grades(table)
    grouped = table.group_by("qid", maintain_order=True).agg("doc", "grade")
    texts = _texts(frame, table, (qid, doc, grade))
    queries = {
        q: GoldQuery(q, texts.get(q), dict(zip(docs, gs, strict=True)))
        for q, docs, gs in grouped.iter_rows()
    }
    if not queries:
        raise InputError("gold: the frame is empty")
    return Gold(queries, "DataFrame", _digest(queries), "frame")


def _texts(frame: polars.DataFrame, table: polars.DataFrame, taken: tuple[str, ...]) -> dict:
    """Query id -> its text, where the frame has a ``query`` (or ``query_text``) column beside
    the id (BEIR's queries joined to its qrels): a retriever is asked it, and a run keyed by
    text is matched to it, as with a gold file."""
    import polars as pl

    text = _column(frame, TEXT_COLUMNS, "", skip=taken)
    if text is None or frame[text].dtype != pl.String:
        return {}
    pairs = pl.DataFrame({"qid": table["qid"], "text": frame[text]}).drop_nulls()
    return dict(pairs.unique("qid", keep="first", maintain_order=True).iter_rows())


def _refuse_fractions(frame: polars.DataFrame, qid: str, doc: str, grade: str) -> None:
    """A float grade that is not whole (1.7) is refused as a dict's is: a cast to integers
    would truncate it to 1 without a word. 2.0, as pandas holds a column with a gap, is 2."""
    column = frame[grade]
    if not column.dtype.is_float():
        return
    fractional = (column != column.floor()).fill_null(False)
    if fractional.any():
        at = int(fractional.arg_max() or 0)
        _grade(str(frame[qid][at]), str(frame[doc][at]), column[at])  # raises, as for a dict


def _refuse_gaps(table: polars.DataFrame, names: dict[str, str], what: str = "gold") -> None:
    """A row missing its query, doc or grade (None, or NaN from pandas) is an InputError."""
    for column, name in names.items():
        nulls = table[column].is_null()
        if nulls.any():
            row = int(nulls.arg_max() or 0) + 1
            raise InputError(f"{what}: row {row} of the frame is missing its {name!r}")


def _refuse_two_grades(table: polars.DataFrame) -> None:
    """A judgment given twice with two grades is refused, as in a qrels file."""
    import polars as pl

    rows = table.with_row_index("row", offset=1)
    twice = (
        rows.group_by("qid", "doc", maintain_order=True)
        .agg(pl.col("grade").n_unique().alias("n"), "row", "grade")
        .filter(pl.col("n") > 1)
    )
    if twice.height:
        qid, doc, _, at, grades = twice.row(0)
        other = next(i for i, g in enumerate(grades) if g != grades[0])
        raise InputError(
            f"gold: query {qid!r}: {doc} is judged twice with two grades ({grades[0]} and "
            f"{grades[other]}, rows {at[0]} and {at[other]}); keep one"
        )


def _run_from_frame(frame: polars.DataFrame) -> Run:
    """Ranked by ``score`` (trec_eval's order) or, without one, by ``rank``."""
    import polars as pl

    qid = _column(frame, RUN_QUERY_COLUMNS, "run")
    doc = _column(frame, DOC_COLUMNS, "run", skip=(qid,))
    score = _column(frame, SCORE_COLUMNS, "", skip=(qid, doc))
    rank = None if score else _column(frame, ("rank",), "", skip=(qid, doc))
    if score is None and rank is None:
        raise InputError(
            f"run: the frame has no score column (any of {', '.join(SCORE_COLUMNS)}) and no "
            f"rank column to order it by; it has {', '.join(frame.columns)}"
        )
    key = pl.col(score).cast(pl.Float64) if score else -pl.col(rank).cast(pl.Float64)
    table = frame.select(qid=id_column(frame[qid], "run"), doc=id_column(frame[doc], "run"),
                         score=key)  # fmt: skip
    _refuse_gaps(table, {"qid": qid, "doc": doc}, "run")  # a null id is no id (nor "None")
    if table["score"].is_nan().any() or table["score"].null_count():
        raise InputError("run: a score (or rank) is missing or NaN")
    order = {"descending": [False, True, True], "maintain_order": True}
    ranked = table.sort(["qid", "score", "doc"], **order)
    grouped = ranked.group_by("qid", maintain_order=True).agg("doc", "score")
    results = {q: docs for q, docs, _ in grouped.iter_rows()}
    scores = {q: s for q, _, s in grouped.iter_rows()} if score else None
    # A query column of texts (PyTerrier's "query") is matched by text, as a CSV run's is.
    keyed_by = "text" if qid.lower() in TEXT_COLUMNS else "id"
    return dedupe(Run(results, "DataFrame", None, "frame", keyed_by=keyed_by, scores=scores))
