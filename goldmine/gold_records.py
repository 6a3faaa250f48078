"""Gold lines and runs as other tools write them, read alike by ``eval run`` and ``gold import``.

A team's judgments rarely come as goldmine writes them. RAG and dense-retrieval tools write
their own: LlamaIndex's ``EmbeddingQAFinetuneDataset.save_json`` (one object of ``queries``,
``corpus`` and ``relevant_docs``), Tevatron's JSON lines (``positive_passages`` of ``{docid,
title, text}``), DPR's retriever files (a JSON array of ``{question, positive_ctxs:
[{passage_id, …}]}``), and teams name the ids ``chunk_ids`` or ``gold_ids``; their retrievers
write runs alike (DPR's ``ctxs``, LlamaIndex's ``retrieved_ids`` beside ``expected_ids``). The
keys and layouts are here once, so the readers cannot drift apart.

Mined negatives (Tevatron's ``negative_passages``, DPR's ``hard_negative_ctxs``) are no
judgments: a retriever picked them and nobody read them, so a false negative among them would
count as a judged miss. They are left out and counted (``mined_negatives``).
"""

from __future__ import annotations

import json
from pathlib import Path

from goldmine.errors import InputError
from goldmine.files import json_objects, lines_of

# Where a gold line lists its relevant ids: goldmine's own keys first, then the names other
# tools and teams give them (LlamaIndex's relevant_docs, Tevatron's positive_passages, DPR's
# positive_ctxs). A list of texts under a name like ``pos`` (FlagEmbedding) holds no id a
# retriever returns and is not read.
RELEVANT_KEYS = (
    "relevant", "relevant_ids", "relevant_doc_ids", "relevant_chunk_ids", "relevant_docs",
    "relevant_chunks", "relevant_passages", "gold_ids", "gold_doc_ids", "gold_chunk_ids",
    "chunk_ids", "doc_ids", "positive_ids", "positive_passages", "positive_ctxs", "expected_ids",
)  # fmt: skip
# Where a run line lists its ranked results: goldmine's own key, then LlamaIndex's
# RetrieverEvaluator results (retrieved_ids), DPR's and Pyserini's retriever output (ctxs), and
# search services' answers (Elasticsearch's hits, Pinecone's matches, Vespa's root, Chroma's ids).
RESULT_KEYS = ("results", "retrieved_ids", "ctxs", "hits", "retrieved", "ranked_ids", "matches",
               "root", "ids")  # fmt: skip
NEGATIVE_KEYS = ("negative_passages", "negative_ctxs", "hard_negative_ctxs", "hard_negatives")
QUERY_ID_KEYS = ("query_id", "qid", "_id", "id")
QUERY_TEXT_KEYS = ("query", "text", "question")
# Where an object in a relevant list keeps its id and its grade (a Tevatron passage's docid,
# a DPR context's passage_id, or psg_id in DPR's older files).
ITEM_ID_KEYS = ("id", "chunk_id", "doc_id", "docid", "passage_id", "psg_id", "pid", "_id",
                "corpus_id", "corpus-id")  # fmt: skip
# A run's result object: its id, doc_id, then chunk_id, as run files have always been read (a
# run giving both a doc_id and a chunk_id ranks documents).
RUN_ITEM_ID_KEYS = ("id", "doc_id", *(k for k in ITEM_ID_KEYS if k not in ("id", "doc_id")))
ITEM_GRADE_KEYS = ("grade", "relevance", "rel")


def first_of(obj: dict, keys: tuple[str, ...]) -> object | None:
    """The value of the first of ``keys`` that ``obj`` holds, not null."""
    return next((obj[k] for k in keys if obj.get(k) is not None), None)


def is_json_array(text: str) -> bool:
    """Whether a text (after a BOM and white space) is one JSON array."""
    return text.lstrip("\ufeff \t\r\n").startswith("[")


def result_key(obj: dict) -> str | None:
    """The key a run line lists its ranked results under, if any."""
    return next((k for k in RESULT_KEYS if k in obj), None)


def relevant_key(obj: dict) -> str | None:
    """The key a gold line lists its relevant ids under, if any."""
    return next((k for k in RELEVANT_KEYS if k in obj), None)


def query_id(obj: dict) -> object | None:
    return first_of(obj, QUERY_ID_KEYS)


def query_text(obj: dict) -> object | None:
    return first_of(obj, QUERY_TEXT_KEYS)


def item_id(item: dict, keys: tuple[str, ...] = ITEM_ID_KEYS) -> object | None:
    return first_of(item, keys)


def item_grade(item: dict) -> object:
    found = first_of(item, ITEM_GRADE_KEYS)
    return 1 if found is None else found


def mined_negatives(records: list[tuple[int, dict]]) -> str | None:
    """A note counting the mined negatives the records hold and leave out, or None."""
    keys: dict[str, int] = {}
    for _, obj in records:
        for key in NEGATIVE_KEYS:
            if isinstance(obj.get(key), list):
                keys[key] = keys.get(key, 0) + len(obj[key])
    total = sum(keys.values())
    if not total:
        return None
    return (
        f"{total:,} mined negatives ({', '.join(keys)}) left out: a retriever chose them and "
        "nobody judged them, so they are no 'not relevant' label"
    )


def json_records(text: str, path: Path) -> list[tuple[int, dict]]:
    """(place, object) of the gold records of a text: one JSON object a line, or one JSON array
    of objects (DPR's files), its n-th element at place n."""
    if not is_json_array(text):
        return json_objects(lines_of(text), path)
    try:
        items = json.loads(text.lstrip("\ufeff"))
    except ValueError as exc:
        raise InputError(f"not valid JSON: {exc}", path=path) from None
    for n, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise InputError(f"element {n} of the array is no JSON object", path=path)
    return list(enumerate(items, start=1))


def is_llamaindex(obj: object) -> bool:
    """Whether a JSON document is LlamaIndex's ``EmbeddingQAFinetuneDataset``: ``queries`` (id
    -> text) and ``relevant_docs`` (id -> ids), with its ``corpus`` (id -> text) beside them."""
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("queries"), dict)
        and isinstance(obj.get("relevant_docs"), dict)
    )


def llamaindex_records(obj: dict, path: Path) -> tuple[list[tuple[int, dict]], int]:
    """A LlamaIndex dataset as gold records (``query_id``, ``query``, ``relevant``), in its
    queries' order and then any judged query it gives no text; and how many of its queries
    ``relevant_docs`` leaves unjudged (left out: no judgment is no "no answer")."""
    judged = obj["relevant_docs"]
    for qid, docs in judged.items():
        if not isinstance(docs, list | dict):
            raise InputError(
                f"relevant_docs[{qid!r}] must be a list of ids, got {type(docs).__name__}",
                path=path,
            )
    records, unjudged = [], 0
    for qid, text in obj["queries"].items():
        if qid not in judged:
            unjudged += 1
            continue
        records.append({"query_id": qid, "query": text, "relevant": judged[qid]})
    records += [
        {"query_id": qid, "relevant": docs} for qid, docs in judged.items()
        if qid not in obj["queries"]
    ]  # fmt: skip
    return list(enumerate(records, start=1)), unjudged
