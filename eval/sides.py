"""The two sides of a compare: a run file scored on a gold set, a stored run, a history row.

Each becomes a ``ScoreTable`` (per-query scores and what they are), so compare, power and the CI
gate pair any two of them the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from goldmine.errors import GoldmineError, InputError, NotFoundError
from goldmine.eval.history import read_history
from goldmine.eval.runner import DEFAULT_METRICS, load_gold, score_run_file
from goldmine.eval.store import find_run, run_scores
from goldmine.metrics import parse_metrics
from goldmine.store import Store, as_store
from goldmine.versions import load_gold as load_version

if TYPE_CHECKING:
    import duckdb

    from goldmine.gold import Gold

Scores = Mapping[str, Mapping[str, float]]


@dataclass
class ScoreTable:
    """One side of a compare: per-query scores (query id -> metric -> value) and what they are."""

    scores: dict[str, dict[str, float]]
    label: str
    texts: dict[str, str] = field(default_factory=dict)
    source: str = ""
    gold_hash: str | None = None
    run_id: int | None = None
    rel_level: int | None = None  # the -l it was scored at, where known

    @property
    def metric_names(self) -> list[str]:
        names: dict[str, None] = {}
        for values in self.scores.values():
            names.update(dict.fromkeys(values))
        return list(names)


def as_table(side: ScoreTable | Scores, label: str) -> ScoreTable:
    if isinstance(side, ScoreTable):
        return side
    return ScoreTable({str(q): dict(v) for q, v in side.items()}, label=label)


HISTORY_PREFIX = "history:"


def resolve_side(
    ref: str,
    con: duckdb.DuckDBPyConnection | None = None,
    gold: Gold | str | None = None,
    *,
    metrics: Sequence[str] | str | None = None,
    rel_level: int = 1,
) -> ScoreTable:
    """A compare side from a reference: a run file, a history row, or a stored run.

    - an existing file: a run file, scored against ``gold`` (a ``Gold`` or a gold spec);
    - ``history:FILE:LABEL`` or ``history:FILE:ROW`` (1-based): a row of the history CSV. A row
      holds only means, so it is paired through the stored run its ``run_id`` names (``con``);
    - otherwise a stored run's id or label (``con`` required).
    """
    if Path(ref).is_file():
        return _file_side(ref, con, gold, metrics, rel_level)
    if ref.startswith(HISTORY_PREFIX):
        return _history_side(ref, con)
    if con is None:
        raise InputError(f"{ref!r} is not a file; a stored run needs the store (--db)")
    return stored_side(con, ref)


def stored_side(con: duckdb.DuckDBPyConnection, ref: str) -> ScoreTable:

    run = find_run(con, ref)
    run_id = int(run["run_id"])
    rows = con.execute(
        "SELECT query_id, query FROM eval_queries WHERE run_id = ? AND query IS NOT NULL",
        [run_id],
    ).fetchall()
    label = f"run {run_id}" + (f" ({run['label']})" if run["label"] else "")
    return ScoreTable(
        scores=run_scores(con, run_id),
        label=label,
        texts=dict(rows),
        source=f"stored run {run_id}: {run['run_source']} on {run['gold_source']}",
        gold_hash=run["gold_hash"],
        run_id=run_id,
        rel_level=None if run.get("rel_level") is None else int(run["rel_level"]),
    )


def _file_side(
    ref: str,
    con: duckdb.DuckDBPyConnection | None,
    gold: Gold | str | None,
    metrics: Sequence[str] | str | None,
    rel_level: int,
) -> ScoreTable:

    if gold is None:
        raise InputError(
            f"{ref} is a run file: give --gold to score it (a gold file or a version, e.g. v3)"
        )
    if isinstance(gold, str):
        gold = _load_gold(gold, con)
    outcome = score_run_file(
        gold, Path(ref), parse_metrics(metrics or DEFAULT_METRICS), rel_level=rel_level
    )
    _say_missing(ref, outcome.result.missing)
    texts = {q: g.query for q, g in gold.queries.items() if g.query}
    return ScoreTable(
        scores=outcome.result.per_query,
        label=Path(ref).name,
        texts=texts,
        source=f"run file {ref} on {gold.source}",
        gold_hash=gold.hash,
        rel_level=rel_level,
    )


def _say_missing(ref: str, missing: list[str]) -> None:
    """A gold query the run file leaves out scores 0 and is paired so, as eval run counts it;
    said, as eval run says it, so a delta made of absent queries is not read as a ranking's."""
    if not missing:
        return
    from goldmine.output import count, warn

    shown = ", ".join(missing[:5]) + (" …" if len(missing) > 5 else "")
    warn(f"{ref}: {count(len(missing), 'gold query')} missing from the run scored 0 (paired as "
         f"0): {shown}")  # fmt: skip


def _load_gold(spec: str, con: duckdb.DuckDBPyConnection | None) -> Gold:

    if Path(spec).exists() or con is None:
        return load_gold(spec)

    return load_version(con, spec)


def _history_side(ref: str, con: duckdb.DuckDBPyConnection | None) -> ScoreTable:

    body = ref[len(HISTORY_PREFIX) :]
    path_text, sep, key = body.rpartition(":")
    if not sep or not path_text or not key:
        raise InputError(f"{ref!r}: write a history row as history:FILE:LABEL or history:FILE:ROW")
    path = Path(path_text)
    if not path.is_file():
        raise InputError("no such history file", path=path)
    rows = read_history(path)
    row = _history_row(rows, key)
    if row is None:
        raise NotFoundError(
            f"{path}: no history row with label {key!r}"
            + (f" (rows are numbered 1 to {len(rows)})" if key.isdigit() else "")
        )
    name = row.get("label") or f"row {key}"
    run_id = (row.get("run_id") or "").strip()
    needs = (
        f"history row {name!r} in {path} holds only the means; pairing per query needs the "
        "stored run"
    )
    if not run_id:
        raise InputError(f"{needs}, and this row has no run_id (the run was not stored)")
    if con is None:
        raise InputError(f"{needs} (run {run_id}): give the store with --db")
    try:
        side = stored_side(con, run_id)
    except GoldmineError as exc:
        raise InputError(f"{needs}: run {run_id} is not in this store ({exc})") from exc
    if row.get("gold_hash") and side.gold_hash and row["gold_hash"] != side.gold_hash:
        raise InputError(
            f"{needs}: stored run {run_id} was scored on another gold set than the row says "
            "(is this the store the history was written with?)"
        )
    side.label = f"{name} (history, run {run_id})"
    return side


def _history_row(rows: list[dict[str, str]], key: str) -> dict[str, str] | None:
    matches = [r for r in rows if r.get("label") == key]
    if matches:
        return matches[-1]
    if key.isdigit() and 1 <= int(key) <= len(rows):
        return rows[int(key) - 1]
    return None


def resolve_refs(
    refs: Sequence[str],
    *,
    gold: str | None = None,
    metrics: Sequence[str] | str | None = None,
    store: Store | None = None,
    rel_level: int = 1,
) -> list[ScoreTable]:
    """Each reference as a ``ScoreTable`` (see ``resolve_side``), for compare and power.

    Stored runs and history rows are resolved first, so a run file is scored on the metrics the
    other side has (or ``metrics``, or the default set). The store is opened only if needed.
    """
    from contextlib import nullcontext

    files = [Path(r).is_file() for r in refs]
    gold_in_store = gold is not None and not Path(gold).exists()
    need_store = not all(files) or gold_in_store
    with as_store(store).open(create=False) if need_store else nullcontext() as con:
        sides: list[ScoreTable | None] = [
            None if is_file else resolve_side(ref, con)
            for ref, is_file in zip(refs, files, strict=True)
        ]
        known = [s.metric_names for s in sides if s is not None]
        names = metrics or (known[0] if known else None)
        loaded = _load_gold(gold, con) if gold is not None and any(files) else None
        return [
            side or resolve_side(ref, con, loaded, metrics=names, rel_level=rel_level)
            for ref, side in zip(refs, sides, strict=True)
        ]
