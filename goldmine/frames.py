"""Large gold and run files read column-wise with polars: the readers' fast path.

At millions of lines, parsing dominates (FACTS.md: a Python split loop 7.7 s for 7M lines, polars
reading three columns 0.6 s). ``goldmine.readers`` sends a large TREC file here; a file this
reader cannot take clean (padded, ragged, a bad line) gets None back and goes to the Python
reader, which names the bad line. It sits in the core beside the readers because it is part of
reading, which the gold set's commands need without the eval stage; scoring the frame is
``goldmine.eval.columnar``'s.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from goldmine.files import open_unpacked
from goldmine.gold import GRADE_LIMIT, Gold, GoldQuery
from goldmine.text import sha256_file


def _separator(path: Path, n_fields: int, *, extra_ok: bool) -> str | None:
    """The file's one-character separator ('\\t' or ' ') when every line of its head splits into
    ``n_fields`` clean fields on it (more allowed with ``extra_ok``), else None: the Python reader
    handles padded or ragged files and names a bad line."""
    with open_unpacked(path) as handle:  # polars reads a gzipped file itself
        head = handle.read(1 << 16).decode("utf-8", errors="replace")
    if "\r" in head.replace("\r\n", ""):
        return None  # a CR that ends no LF line: polars reads such a file as one line
    # The last line may be cut short; comment lines are skipped, as trec_eval and polars skip them.
    lines = [line for line in head.splitlines()[:-1] if line.strip() and line[0] != "#"]
    for sep in ("\t", " "):
        fields = [line.split(sep) for line in lines]
        if fields and all(
            (len(f) >= n_fields if extra_ok else len(f) == n_fields)
            and all(x and x == x.strip() for x in f[:n_fields])
            for f in fields
        ):
            return sep
    return None


def _read_columns(
    path: Path, sep: str, columns: dict[int, tuple[str, pl.DataType]]
) -> pl.DataFrame | None:
    """Only the named columns, typed as given (ids stay strings: "007" is not 7)."""
    try:
        frame = pl.read_csv(
            path,
            separator=sep,
            has_header=False,
            columns=list(columns),
            schema_overrides={f"column_{i}": dtype for i, (_, dtype) in columns.items()},
            infer_schema=False,
            quote_char=None,
            truncate_ragged_lines=True,
            comment_prefix="#",
        ).rename({f"column_{i}": name for i, (name, _) in columns.items()})
    except pl.exceptions.PolarsError:
        return None  # the Python reader will name the bad line
    if frame.null_count().sum_horizontal().item():
        return None
    return frame


def _read_trec_frame(path: Path) -> pl.DataFrame | None:
    sep = _separator(path, 6, extra_ok=True)
    if sep is None:
        return None
    frame = _read_columns(
        path, sep, {0: ("qid", pl.String), 2: ("doc", pl.String), 4: ("score", pl.Float64)}
    )
    if frame is not None and frame["score"].is_nan().any():
        return None  # a 'nan' score has no rank: the Python reader names its line
    return frame


def _order(frame: pl.DataFrame) -> pl.DataFrame:
    """trec_eval's order within each query (score desc, doc id desc), sorting as little as
    possible: nothing when the file is already in order (the usual case), only the queries out of
    order when each query's lines are contiguous, everything otherwise."""
    q, s, d = pl.col("qid"), pl.col("score"), pl.col("doc")
    same = (q == q.shift(1)).fill_null(False)
    ordered = (s < s.shift(1)) | ((s == s.shift(1)) & (d < d.shift(1)))
    flagged = frame.with_columns(bad=same & ~ordered.fill_null(False))
    boundaries, n_queries, n_bad = flagged.select(
        boundaries=(~same).sum(), n_queries=q.n_unique(), n_bad=pl.col("bad").sum()
    ).row(0)
    keys = {"by": ["qid", "score", "doc"], "descending": [False, True, True]}
    if boundaries != n_queries:
        return frame.sort(**keys)
    if n_bad == 0:
        return frame
    bad_queries = flagged.filter(pl.col("bad")).select("qid").unique().to_series()
    out_of_order = q.is_in(bad_queries.implode())
    return pl.concat([frame.filter(~out_of_order), frame.filter(out_of_order).sort(**keys)])


def rank_frame(frame: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """Order (trec_eval's order) and rank a (qid, doc, score) frame; drop repeated ids.

    Returns the (qid, doc, score, rank) frame and the number of repeats dropped.
    """
    frame = _order(frame)
    # A repeated id within a query: keep its first position. Counting distinct ids per query is
    # the cheap check (one grouped pass); the exact, costlier dedupe runs only when it finds one.
    repeats = frame.group_by("qid").agg(n=pl.len() - pl.col("doc").n_unique())["n"].sum()
    n_dupes = 0
    if repeats:
        keep = frame.select(pl.struct("qid", "doc").is_first_distinct()).to_series()
        n_dupes = int((~keep).sum())
        frame = frame.filter(keep)
    index = pl.int_range(pl.len(), dtype=pl.Int64)
    start = pl.when(pl.col("qid") != pl.col("qid").shift(1)).then(index).forward_fill()
    frame = frame.with_columns(rank=(index - start.fill_null(0) + 1).cast(pl.Int64))
    return frame, n_dupes


def read_trec_qrels(path: Path) -> Gold | None:
    """A large TREC qrels file read column-wise, or None when it needs the Python reader."""

    sep = _separator(path, 4, extra_ok=False)
    if sep is None:
        return None
    frame = _read_columns(
        path, sep, {0: ("qid", pl.String), 2: ("doc", pl.String), 3: ("grade", pl.Int64)}
    )
    if frame is None or (frame["grade"].abs().max() or 0) > GRADE_LIMIT:
        return None  # the Python reader names the bad line
    if frame.height and (frame["doc"] == "0").all():
        return None  # a SMART collection's relevance file (readers.smart_relevance)
    # A judgment repeated with its grade is one; with another grade the Python reader names
    # both lines (goldmine.readers.judge).
    repeated = frame.filter(pl.struct("qid", "doc").is_duplicated())
    if repeated.height:
        if repeated.group_by("qid", "doc").agg(n=pl.col("grade").n_unique())["n"].max() > 1:
            return None
        frame = frame.unique(subset=["qid", "doc"], keep="first", maintain_order=True)
    grouped = frame.group_by("qid", maintain_order=True).agg("doc", "grade")
    queries = {
        qid: GoldQuery(qid, None, dict(zip(docs, grades, strict=True)))
        for qid, docs, grades in grouped.iter_rows()
    }

    return Gold(queries, str(path), sha256_file(path), "trec", frame=frame)


def read_ranked_frame(path: Path, fmt: str) -> tuple[pl.DataFrame, int] | None:
    """A large id-keyed run in format ``fmt`` (``goldmine.readers.run_format_of``) as a ranked
    frame, or None when it needs the Python reader."""
    if fmt != "trec":
        return None
    frame = _read_trec_frame(path)
    if frame is None:
        return None
    return rank_frame(frame)
