"""``gold synth``: a model drafts the questions a chunk answers, as items never gold by themselves.

Chunks are sampled from the current snapshot, stratified over documents (one chunk of each
document in turn, in a seeded order), skipping very short chunks and boilerplate (a text that
several documents share, or a short legal/navigation/feedback footer). ``--doc`` takes one
document's chunks, ``--cluster`` the chunks a triage cluster's queries retrieve (BM25).

Each question becomes a gold item with status ``drafted`` and origin ``model``, its source chunk a
drafted candidate (``kind = 'draft'``, ``suggested_grade`` 2, source ``model``), and provenance in
``gold_model_items`` and a ``synth`` history row (which a published version keeps): endpoint,
model, prompt version, chunk id and text hash, style, time. Only a person's grade makes it gold,
through ``goldmine.goldset.items`` like any other item.

Each question is compared with the real traffic (triage's queries, or the raw queries before a
triage run): rapidfuzz ``token_sort_ratio`` on the normalized text and, unless ``--match fuzzy``,
the cosine of the bundled MiniLM embeddings (cached in the store). A question a real query covers
is tagged ``covered`` and linked to that query's gold item: a real query is better evidence than a
model's, so it is offered too. Without an item it becomes a candidate (origin ``covered``, with
triage's provenance as ``gold starter`` gives it), written before the model's question so review
reaches it first; its item, if still open, gets the question's source chunk as a draft (source
``synth``, no suggested grade: a resemblance is not a grade; ``items.add_draft``). A question
that normalizes to the real query is that query's item, not a model twin of it: the item takes
the chunk and ``gold_model_items`` records the model's provenance against it. A question already
in the set is left as it is, so a re-run served from the cache writes nothing.

The store is open to read the chunks, closed while the model answers and the embeddings are
computed, and opened once to write everything in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from goldmine.errors import GoldmineError, InputError, NotFoundError
from goldmine.goldset import items as gi
from goldmine.goldset.modelcalls import (
    asked,
    cache_key,
    cached,
    failure_lines,
    kept_on_ctrl_c,
    record_calls,
)
from goldmine.goldset.provenance import origins
from goldmine.llm import Ask, load_prompt
from goldmine.store import WRITE_WAIT_S, Store, transaction
from goldmine.text import norm_any_sql, normalize_query

if TYPE_CHECKING:
    import duckdb

    from goldmine.llm import Settings

STYLES = ("user", "question")
MATCHES = ("both", "fuzzy", "none")
MIN_WORDS = 8  # a chunk shorter than this answers nothing a user asks
BOILERPLATE_MAX_WORDS = 40
BOILERPLATE = (
    r"(?i)(all rights reserved|copyright|cookie|privacy policy|terms of (service|use)"
    r"|was this (article|page) helpful|table of contents|skip to (main )?content)"
)
DEFAULT_CHUNKS = 20
FUZZY_THRESHOLD = 85.0
SIMILARITY_THRESHOLD = 0.80


@dataclass
class SynthResult:
    endpoint: str
    model: str
    prompt_version: str
    chunks: int = 0  # chunks asked about (cached or not)
    questions: int = 0  # new gold items
    already: int = 0  # questions already in the set
    covered: int = 0  # new questions a real query covers
    real_added: int = 0  # real queries added as candidates because they cover a question
    real_drafted: int = 0  # real queries' open items given the question's chunk as a draft
    failed: int = 0
    failures: list[str] = field(default_factory=list)
    usage: Any = None
    query_ids: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "endpoint": self.endpoint,
            "model": self.model,
            "prompt_version": self.prompt_version,
            "chunks": self.chunks,
            "questions": self.questions,
            "already": self.already,
            "covered": self.covered,
            "real_added": self.real_added,
            "real_drafted": self.real_drafted,
            "failed": self.failed,
            "failures": self.failures,
            "usage": self.usage.as_dict() if self.usage else None,
            "query_ids": self.query_ids,
        }


_ELIGIBLE = f"""
    SELECT c.chunk_id, coalesce(c.doc_id, c.chunk_id) AS doc, c.title, c.text, c.text_hash
    FROM chunks c
    WHERE c.snapshot_id = $snapshot
      AND len(string_split_regex(trim(c.text), '\\s+')) >= {MIN_WORDS}
      AND NOT (len(string_split_regex(trim(c.text), '\\s+')) < {BOILERPLATE_MAX_WORDS}
               AND regexp_matches(c.text, '{BOILERPLATE}'))
      AND c.text_hash NOT IN (
          SELECT text_hash FROM chunks WHERE snapshot_id = $snapshot
          GROUP BY text_hash HAVING count(DISTINCT coalesce(doc_id, chunk_id)) > 1)
"""


def sample_chunks(
    con: duckdb.DuckDBPyConnection,
    *,
    n: int | None,
    doc: str | None,
    chunk_ids: list[str] | None,
    seed: int,
    skip_drafted_by: tuple[str, str] | None,
) -> list[dict]:
    """Eligible chunks: a document's, the given ids (in order), or ``n`` stratified over documents
    (round robin over documents in a seeded order), leaving out those already drafted."""
    snapshot_id, _ = gi.current_snapshot(con)
    if snapshot_id is None:
        raise NotFoundError("no corpus in the store: ingest one first (`goldmine ingest corpus`)")
    params: dict[str, Any] = {"snapshot": snapshot_id, "seed": str(seed)}
    where = "TRUE"
    if doc is not None:
        where = "doc = $doc"
        params["doc"] = doc
    elif chunk_ids is not None:
        where = "list_contains($ids, chunk_id)"
        params["ids"] = chunk_ids
    elif skip_drafted_by:
        where = """chunk_id NOT IN (SELECT chunk_id FROM gold_model_items
                                    WHERE model = $model AND prompt_version = $version)"""
        params["model"], params["version"] = skip_drafted_by
    rows = gi.fetch_dicts(
        con,
        f"""WITH e AS ({_ELIGIBLE}), picked AS (SELECT * FROM e WHERE {where})
            SELECT chunk_id, doc, title, text, text_hash FROM (
                SELECT *, row_number() OVER (PARTITION BY doc
                                             ORDER BY md5(chunk_id || $seed)) AS turn,
                       md5(doc || $seed) AS doc_order
                FROM picked)
            ORDER BY turn, doc_order, chunk_id""",
        params,
    )
    if chunk_ids is not None and doc is None:
        order = {c: i for i, c in enumerate(chunk_ids)}
        rows.sort(key=lambda r: order[r["chunk_id"]])
    return rows if n is None else rows[:n]


def cluster_chunks(con: duckdb.DuckDBPyConnection, cluster: int, per_query: int = 3) -> list[str]:
    """The chunks a triage cluster's queries retrieve with BM25, best first."""
    from goldmine.retrieval import BM25Retriever

    queries = [
        r[0]
        for r in con.execute(
            "SELECT query FROM triage_queries WHERE cluster_id = ? ORDER BY n_events DESC",
            [cluster],
        ).fetchall()
    ]
    if not queries:
        raise NotFoundError(f"no triage cluster {cluster} (see `goldmine triage show`)")
    snapshot_id, _ = gi.current_snapshot(con)
    chunks = con.execute(
        "SELECT chunk_id, title, text FROM chunks WHERE snapshot_id = ? ORDER BY chunk_id",
        [snapshot_id],
    ).fetchall()
    if not chunks:
        raise NotFoundError("the current corpus snapshot has no chunks")
    ids, titles, texts = (list(c) for c in zip(*chunks, strict=True))
    found = BM25Retriever(ids, titles, texts).search(queries, per_query)
    best: dict[str, tuple[int, float]] = {}
    for hits in found:
        for rank, (chunk_id, score) in enumerate(hits):
            if score > 0 and (chunk_id not in best or (rank, -score) < best[chunk_id]):
                best[str(chunk_id)] = (rank, -score)
    return sorted(best, key=lambda c: best[c])


def real_queries(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """The traffic's distinct queries: triage's, or before a triage run the raw ones."""

    rows = gi.fetch_dicts(
        con, "SELECT norm_query AS norm, query, n_events, cluster_id FROM triage_queries"
    )
    if rows:
        return rows
    return gi.fetch_dicts(
        con,
        f"""SELECT norm, arg_max(text, ts) AS query, count(*) AS n_events,
                   NULL::BIGINT AS cluster_id FROM (
                SELECT {norm_any_sql(con, "query")} AS norm, query AS text, ts FROM search_events
                UNION ALL SELECT {norm_any_sql(con, "question")}, question, ts FROM tickets
                          WHERE NOT coalesce(no_question, false)
                UNION ALL SELECT {norm_any_sql(con, "text")}, text, ts FROM chat_turns
                          WHERE role = 'user'
                UNION ALL SELECT {norm_any_sql(con, "query")}, query, ts FROM manual_queries)
            WHERE norm != '' GROUP BY norm""",
    )


def match_traffic(
    store: Store,
    questions: list[str],
    real: list[dict],
    *,
    match: str,
    fuzzy_threshold: float,
    similarity: float,
) -> list[dict]:
    """For each question: the best real query by fuzzy score and cosine, and whether it covers."""
    import numpy as np

    out = [{"fuzzy": None, "cosine": None, "covered": None} for _ in questions]
    if match == "none" or not questions or not real:
        return out
    from rapidfuzz import fuzz, process

    norms = [normalize_query(q) for q in questions]
    real_norms = [r["norm"] for r in real]
    scores = process.cdist(norms, real_norms, scorer=fuzz.token_sort_ratio, workers=1)
    best_fuzzy = scores.argmax(axis=1)
    cosines = best_cos = None
    if match == "both":
        from goldmine.embed import embed_closed

        vectors = embed_closed(
            store, norms + real_norms, description="embedding for traffic"
        ).vectors
        cosines = vectors[: len(norms)] @ vectors[len(norms) :].T
        best_cos = cosines.argmax(axis=1)
    for i in range(len(questions)):
        f = int(best_fuzzy[i])
        out[i]["fuzzy"] = float(scores[i, f])
        if cosines is not None:
            out[i]["cosine"] = float(cosines[i, int(best_cos[i])])
        if scores[i, f] >= fuzzy_threshold:
            pick = f
        elif cosines is not None and cosines[i, int(best_cos[i])] >= similarity:
            pick = int(best_cos[i])
        else:
            continue
        out[i]["covered"] = real[pick]
        out[i]["fuzzy"] = float(scores[i, pick])
        if cosines is not None:
            out[i]["cosine"] = float(np.float32(cosines[i, pick]))
    return out


def synth(
    store: Store,
    s: Settings,
    *,
    n_chunks: int | None = None,
    doc: str | None = None,
    cluster: int | None = None,
    per_chunk: int = 2,
    style: str = "user",
    seed: int = 0,
    match: str = "both",
    fuzzy_threshold: float = FUZZY_THRESHOLD,
    similarity: float = SIMILARITY_THRESHOLD,
    by: str,
) -> SynthResult:
    """Questions a model drafts from sampled chunks (``per_chunk`` each, in ``style``), linked to
    the real traffic they match, written as drafted items in one transaction."""
    _check(style, match, per_chunk, n_chunks, doc, cluster)
    prompt = load_prompt("synth")
    result = SynthResult(s.shown_endpoint, s.model, prompt.version)
    with store.open() as con:
        ids = cluster_chunks(con, cluster) if cluster is not None else None
        n = n_chunks if n_chunks else (None if doc or ids else DEFAULT_CHUNKS)
        chunks = sample_chunks(
            con, n=n, doc=doc, chunk_ids=ids, seed=seed, skip_drafted_by=(s.model, prompt.version)
        )
        if not chunks:
            raise _nothing_to_draft(doc, s.model, prompt.version)
        for c in chunks:
            c["key"] = cache_key(
                "synth", s.model, prompt.version, c["text_hash"], c["title"], per_chunk, style
            )
        known = cached(con, [c["key"] for c in chunks])
        real = real_queries(con) if match != "none" else []
    todo = [c for c in chunks if c["key"] not in known]
    asks = [_ask(prompt, c, per_chunk, style) for c in todo]
    answers, usage, cut = asked(s, asks, "drafting questions")
    usage.cached = len(chunks) - len(todo)
    result.usage, result.chunks = usage, len(chunks)
    result.failed = usage.failed
    result.failures = failure_lines(answers, {c["key"]: c["chunk_id"] for c in todo})
    drafted = _questions(chunks, known, {a.key: a for a in answers}, per_chunk)
    links = match_traffic(
        store,
        [q for _, q in drafted],
        real,
        match=match,
        fuzzy_threshold=fuzzy_threshold,
        similarity=similarity,
    )
    with store.open(wait=WRITE_WAIT_S) as con, transaction(con):
        call_ids = record_calls(con, "synth", s, prompt, answers)
        call_ids |= {k: v[0] for k, v in known.items()}
        writer = _Writer(con, s, prompt.version, style, cluster, by, result)
        for (chunk, question), link in zip(drafted, links, strict=True):
            writer.question(chunk, question, link, call_ids.get(chunk["key"]))
    if cut:
        raise kept_on_ctrl_c(answers, "drafted questions")
    return result


def _nothing_to_draft(doc: str | None, model: str, version: str) -> NotFoundError:
    """Why no chunk was sampled: the document has none, or every one is drafted already."""
    return NotFoundError(
        "no chunk to draft from: "
        + (f"document {doc!r} has no eligible chunk" if doc else "every eligible chunk")
        + ("" if doc else f" is drafted already by {model} with {version}")
    )


def _check(
    style: str,
    match: str,
    per_chunk: int,
    n_chunks: int | None,
    doc: str | None,
    cluster: int | None,
) -> None:
    """The options, refused before any chunk is read or any request made."""
    if style not in STYLES:
        raise InputError(f"--style must be one of {', '.join(STYLES)}, not {style!r}")
    if match not in MATCHES:
        raise InputError(f"--match must be one of {', '.join(MATCHES)}, not {match!r}")
    if not 1 <= per_chunk <= 10:
        raise InputError("--per-chunk must be between 1 and 10")
    if sum(x is not None for x in (n_chunks, doc, cluster)) > 1:
        raise InputError("give one of --chunks, --doc and --cluster")
    if n_chunks is not None and n_chunks < 1:
        raise InputError("--chunks must be at least 1")


def _ask(prompt, chunk: dict, per_chunk: int, style: str) -> Ask:
    """The request for one chunk's questions."""
    values = {
        "chunk_id": chunk["chunk_id"],
        "title": chunk["title"],
        "passage": chunk["text"],
        "n_questions": per_chunk,
        "style": style,
    }
    return Ask(chunk["key"], prompt.messages(values), prompt.schema)


def _questions(
    chunks: list[dict], known: dict, answers: dict, per_chunk: int
) -> list[tuple[dict, str]]:
    """(chunk, question) for each distinct question a chunk got, from the cache or this run; a
    chunk the run did not ask (it gave up on the endpoint) has no answer: none drafted."""
    drafted: list[tuple[dict, str]] = []
    for c in chunks:
        answer = answers.get(c["key"])
        data = known[c["key"]][1] if c["key"] in known else answer.data if answer else None
        if not data:
            continue
        seen: set[str] = set()
        for q in data["questions"][:per_chunk]:
            text = " ".join(q["question"].split())
            if normalize_query(text) and normalize_query(text) not in seen:
                seen.add(normalize_query(text))
                drafted.append((c, text))
    return drafted


@dataclass
class _Writer:
    """Writes one run's drafted questions, and offers the real queries that cover them."""

    con: Any
    s: Settings
    version: str
    style: str
    cluster: int | None
    by: str
    result: SynthResult

    @property
    def who(self) -> str:
        return f"model:{self.s.model}"

    def question(self, chunk: dict, question: str, link: dict, call_id: int | None) -> None:
        """The question as a drafted item; a real query covering it offered first (better
        evidence, so first in the queue). A question already in the set is left as it is; one
        that normalizes to the real query covering it is that query's item, not a model twin."""
        norm = normalize_query(question)
        covered = link["covered"]
        same = covered is not None and covered["norm"] == norm
        if _item_of(self.con, norm) is not None:
            self.result.already += 1
            if same:  # the model asked what a user asked: that query's item takes the chunk
                self.offer_real(covered, chunk, question, link)
            return
        real_qid = self.offer_real(covered, chunk, question, link) if covered else None
        self.result.covered += covered is not None
        if same:
            self.model_item(real_qid, chunk, link, call_id, real_qid)
            return
        qid = self.add_question(chunk, question, link, call_id, real_qid)
        self.result.questions += 1
        self.result.query_ids.append(qid)

    def offer_real(self, covered: dict, chunk: dict, question: str, link: dict) -> str:
        """The covering real query's item (added as a candidate when it has none), given the
        source chunk as a draft if it is still open and lacks it. Returns its query_id."""
        at = gi.now()
        qid = _item_of(self.con, covered["norm"])
        if qid is None:
            qid = _add_real_query(self.con, covered, chunk, question, self.who, at)
            self.result.real_added += 1
        detail = {
            "why": "a real query covering a drafted question: the chunk it was drafted from",
            "question": question, "question_id": gi.query_id_for(normalize_query(question)),
            "model": self.s.model, "prompt_version": self.version,
            "fuzzy": link["fuzzy"], "cosine": link["cosine"],
        }  # fmt: skip
        if gi.add_draft(self.con, qid, chunk["chunk_id"], self.who, source=SYNTH_SOURCE,
                        detail=detail, at=at):  # fmt: skip
            self.result.real_drafted += 1
        return qid

    def add_question(
        self, chunk: dict, question: str, link: dict, call_id: int | None, covered_qid: str | None
    ) -> str:
        """One drafted question as a gold item with its source chunk drafted, linked to the
        item of the real query that covers it."""
        at, who, covered = gi.now(), self.who, link["covered"]
        qid = gi.add_item(
            self.con,
            question,
            origin="model",
            by=who,
            reason=f"drafted by {self.s.model} from chunk {chunk['chunk_id']}",
            cluster_id=self.cluster
            if self.cluster is not None
            else (covered or {}).get("cluster_id"),
            tags=["synthetic", *(["covered"] if covered else [])],
            sources=["model"],
            source_ids=[f"chunk:{chunk['chunk_id']}"],
            status="drafted",
            at=at,
        )
        if qid is None:  # cannot be: question() found no item of this text
            raise GoldmineError(f"the drafted question {question!r} could not be added")
        snapshot_id, _ = gi.current_snapshot(self.con)
        self.con.execute("UPDATE gold_items SET drafted_by = ? WHERE query_id = ?", [who, qid])
        self.con.execute(
            """INSERT INTO gold_labels (query_id, chunk_id, kind, suggested_grade, rank, source,
                   text_hash, snapshot_id, who, ts)
               VALUES (?, ?, 'draft', 2, 1, 'model', ?, ?, ?, ?)""",
            [qid, chunk["chunk_id"], chunk["text_hash"], snapshot_id, who, at],
        )
        self.model_item(qid, chunk, link, call_id, covered_qid)
        detail = {
            "endpoint": self.s.shown_endpoint, "model": self.s.model,
            "prompt_version": self.version,
            "chunk_id": chunk["chunk_id"], "chunk_text_hash": chunk["text_hash"],
            "snapshot_id": snapshot_id, "style": self.style, "call_id": call_id,
            "requested_by": self.by,
            "covered_by": (
                {"query": covered["query"], "query_id": covered_qid, "fuzzy": link["fuzzy"],
                 "cosine": link["cosine"]} if covered else None
            ),
        }  # fmt: skip
        gi.record(self.con, qid, "synth", who, detail, at)
        return qid

    def model_item(
        self, qid: str, chunk: dict, link: dict, call_id: int | None, covered_qid: str | None
    ) -> None:
        """The model's provenance for a question: ``qid`` is its item, or the real query's item
        when the question is that query."""
        covered = link["covered"]
        snapshot_id, _ = gi.current_snapshot(self.con)
        self.con.execute(
            "INSERT INTO gold_model_items VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                qid, chunk["chunk_id"], chunk["text_hash"], snapshot_id, self.s.shown_endpoint,
                self.s.model, self.version, self.style, call_id,
                covered["query"] if covered else None, covered["norm"] if covered else None,
                covered_qid, link["fuzzy"], link["cosine"], gi.now(),
            ],
        )  # fmt: skip


SYNTH_SOURCE = "synth"  # a draft gold synth gave a real query: the chunk a model drew its twin from


def _item_of(con, norm: str) -> str | None:
    """The gold item of a normalized query, if the set holds it."""
    rows = con.execute(
        "SELECT query_id FROM gold_items WHERE norm_query = ? ORDER BY position LIMIT 1", [norm]
    ).fetchall()
    return rows[0][0] if rows else None


def _add_real_query(con, covered: dict, chunk: dict, question: str, who: str, at) -> str:
    """A candidate for a real query of the traffic, with its provenance as ``gold starter`` and
    ``add-query`` record it (triage's row when there is one, the raw records' ids)."""

    rows = gi.fetch_dicts(
        con, "SELECT * FROM triage_queries WHERE norm_query = ?", [covered["norm"]]
    )
    q = rows[0] if rows else {}
    origin = origins(
        con, [covered["norm"]],
        follow_ups={covered["norm"]} if "follow-up" in (q.get("tags") or []) else set(),
    )[covered["norm"]]  # fmt: skip
    qid = gi.add_item(
        con,
        covered["query"],
        origin="covered",
        by=who,
        reason=f"a real query covering the question {question!r} drafted from chunk "
        f"{chunk['chunk_id']}: better evidence than the model's",
        cluster_id=q.get("cluster_id", covered.get("cluster_id")),
        tags=q.get("tags"),
        sources=q.get("sources"),
        source_ids=origin.source_ids,
        frequency=q.get("n_events", covered.get("n_events")),
        first_seen=q.get("first_seen"),
        last_seen=q.get("last_seen"),
        context=origin.context,
        at=at,
    )
    if qid is None:  # cannot be: _item_of found none; refuse rather than guess
        raise GoldmineError(f"the real query {covered['query']!r} could not be added")
    return qid


def check_all_failed(result: SynthResult) -> None:
    """Exit 1 when the model answered nothing (a wrong endpoint, model or key, most often)."""
    u = result.usage
    if u and u.calls and u.failed == u.calls and not u.cached:
        raise GoldmineError(
            f"every model request failed ({u.failed}): " + "; ".join(result.failures[:3])
        )
