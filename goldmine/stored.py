"""What a store holds, from Python: published gold versions, eval runs, triage's queries.

``goldmine.Store`` is the core ``goldmine.store.Store`` (the path resolved once, ``read()`` and
``write()`` for one unit of work, DuckDB's errors as the project's) with the views a notebook
wants: a published version to score against, and the stored tables as polars frames. Each view
opens the store for its own read and closes it, so a notebook never holds the file another
terminal needs.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from goldmine.errors import StoreError
from goldmine.gold import Gold
from goldmine.output import count
from goldmine.store import Store as CoreStore

if TYPE_CHECKING:
    import duckdb
    import polars


@dataclass(frozen=True)
class GoldSet:
    """A gold set to score against: its queries, judgments and content hash.

    ``goldmine.evaluate`` and ``goldmine.compare`` take it as ``gold``; ``qrels`` is the same
    judgments in pytrec_eval/ranx shape.

    Example:
        >>> v3 = goldmine.Store("goldmine.duckdb").gold("v3")  # doctest: +SKIP
        >>> v3.hash, len(v3), v3.judgments.head()              # doctest: +SKIP
    """

    gold: Gold

    @property
    def hash(self) -> str:
        """The version's content hash, as ``gold verify`` checks it."""
        return self.gold.hash

    @property
    def version(self) -> int | None:
        """The version's number (1 for v1)."""
        return self.gold.version

    @property
    def qrels(self) -> dict[str, dict[str, int]]:
        """``{query_id: {doc_id: grade}}``, the shape pytrec_eval and ranx take."""
        return {q: dict(g.judged) for q, g in self.gold.queries.items()}

    @property
    def queries(self) -> polars.DataFrame:
        """One row per query: ``query_id``, ``query`` (its text), ``answerable`` (grade >= 1)."""
        import polars as pl

        rows = self.gold.queries.values()
        return pl.DataFrame(
            {
                "query_id": [g.query_id for g in rows],
                "query": [g.query for g in rows],
                "answerable": [g.answerable() for g in rows],
            },
            schema={"query_id": pl.String, "query": pl.String, "answerable": pl.Boolean},
        )

    @property
    def judgments(self) -> polars.DataFrame:
        """One row per judged document: ``query_id``, ``doc_id``, ``grade`` (0 = not relevant)."""
        import polars as pl

        triples = [(q, d, g) for q, gq in self.gold.queries.items() for d, g in gq.judged.items()]
        return pl.DataFrame(
            triples,
            schema={"query_id": pl.String, "doc_id": pl.String, "grade": pl.Int64},
            orient="row",
        )

    def __hash__(self) -> int:  # the content hash: a gold set is a dict key (frozen; Gold is not)
        return hash(self.gold.hash)

    def __len__(self) -> int:
        return len(self.gold.queries)

    def __iter__(self) -> Iterator[str]:
        return iter(self.gold.queries)

    def __repr__(self) -> str:
        name = f"v{self.version}" if self.version is not None else self.gold.source
        return f"GoldSet({name}, {count(len(self), 'query')}, hash {self.hash[:12]})"


class Store(CoreStore):
    """A goldmine store (a DuckDB file), read-only unless ``write=True``.

    Nothing stays open between calls (each opens the file for its own read); ``with Store(path)
    as store:`` and ``close()`` are there for code written as for sqlite3 or duckdb, and a closed
    Store refuses further use with a ``StoreError``.

    Example:
        >>> store = goldmine.Store("goldmine.duckdb")             # doctest: +SKIP
        >>> store.versions()                                      # doctest: +SKIP
        >>> goldmine.evaluate(store.gold("latest"), "run.trec")  # doctest: +SKIP
    """

    closed = False

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Refuse further use; no file is held open (twice is harmless)."""
        self.closed = True

    def read(self) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        self._refuse_closed()
        return super().read()

    def write(self) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        self._refuse_closed()
        return super().write()

    def open(self, **options: Any) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        self._refuse_closed()
        return super().open(**options)

    def _refuse_closed(self) -> None:
        if self.closed:
            again = f"goldmine.Store({str(self.path)!r})"
            raise StoreError(f"this Store of {self.path} was closed; make another: {again}")

    def gold(self, version: str | int = "latest") -> GoldSet:
        """A published version: ``"v3"``, ``3`` or ``"latest"`` (``NotFoundError`` if absent)."""
        from goldmine.versions import load_gold

        with self.read() as con:
            return GoldSet(load_gold(con, str(version)))

    def versions(self) -> polars.DataFrame:
        """The published versions, oldest first: number, message, hash, when, by whom, counts."""
        return self._frame(
            "SELECT version, message, content_hash, published_at, published_by, n_items, "
            "n_answerable, n_no_answer, n_labels FROM gold_versions ORDER BY version"
        )

    def runs(self) -> polars.DataFrame:
        """The eval runs kept by ``goldmine eval run``, oldest first, metrics as a JSON string."""
        return self._frame("SELECT * FROM eval_runs ORDER BY run_id")

    def queries(self) -> polars.DataFrame:
        """Triage's table: one row per normalized query with its volume, failure signals and
        cluster, most failing first."""
        return self._frame(
            "SELECT * FROM triage_queries ORDER BY n_failed DESC, n_events DESC, norm_query"
        )

    def _frame(self, sql: str) -> polars.DataFrame:
        with self.read() as con:
            return con.sql(sql).pl()
