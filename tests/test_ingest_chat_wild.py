"""Chat as the public chat data sets and fine-tuning files write it, read with no converter.

ShareGPT's ``conversations`` of ``from``/``value`` turns (``human``, ``gpt``), the layout most
chat data sets on the Hub use; WildChat's ``conversation_hash``; UltraChat's ``prompt_id``; and
OpenAI's fine-tuning JSONL, a ``messages`` list with no id at all. Each was refused whole ("no text
field", "missing conversation_id").
"""

from __future__ import annotations

import duckdb
import pytest

from goldmine.ingest import api
from goldmine.ingest.feedback import DONT_KNOW
from goldmine.store import open_store

from helpers import stored_turns, write_jsonl


def turns(db_path) -> list[tuple]:
    return stored_turns(db_path, "conversation_id, turn, role, text, dont_know")


def test_sharegpt_conversations_of_from_and_value(tmp_path, db_path):
    path = write_jsonl(tmp_path / "sharegpt.jsonl", [
        {"id": "QWJhYvA_0", "conversations": [
            {"from": "human", "value": "How do I reset my VPN password?"},
            {"from": "gpt", "value": "Open Settings and choose Security."},
            {"from": "human", "value": "And on Linux?"},
            {"from": "gpt", "value": "I don't know."}]},
        {"id": "b2", "conversations": [
            {"from": "system", "value": "You are helpful."},
            {"from": "user", "value": "What is the refund window?"},
            {"from": "function_call", "value": "{\"name\": \"search\"}"},
            {"from": "observation", "value": "refunds: 30 days"},
            {"from": "chatgpt", "value": "30 days."}]},
    ])  # fmt: skip
    with open_store(db_path) as con:
        result = api.chat(con, [path])
    assert result.total["rejected"] == 0
    assert turns(db_path) == [
        ("QWJhYvA_0", 0, "user", "How do I reset my VPN password?", False),
        ("QWJhYvA_0", 1, "assistant", "Open Settings and choose Security.", False),
        ("QWJhYvA_0", 2, "user", "And on Linux?", False),
        ("QWJhYvA_0", 3, "assistant", "I don't know.", True),
        ("b2", 0, "assistant", "You are helpful.", False),
        ("b2", 1, "user", "What is the refund window?", False),
        ("b2", 2, "assistant", '{"name": "search"}', False),
        ("b2", 3, "assistant", "refunds: 30 days", False),
        ("b2", 4, "assistant", "30 days.", False),
    ]


def test_wildchat_and_ultrachat_name_their_conversations_their_own_way(tmp_path, db_path):
    path = write_jsonl(tmp_path / "wild.jsonl", [
        {"conversation_hash": "c9ec5b440fbdd2a269333dd241f32f64", "model": "gpt-4-0314",
         "timestamp": "2023-04-09T00:02:53+00:00", "turn": 1, "language": "English",
         "conversation": [
            {"content": "Are you familiar with reality shifting?", "role": "user",
             "timestamp": None, "toxic": False, "turn_identifier": 101, "country": "Texas"},
            {"content": "Yes, I am.", "role": "assistant",
             "timestamp": "2023-04-09T00:02:53+00:00", "turn_identifier": 101}]},
        {"prompt_id": "f0a8e1c2", "prompt": "How do tides work?", "messages": [
            {"role": "user", "content": "How do tides work?"},
            {"role": "assistant", "content": "The moon's gravity."}]},
    ])  # fmt: skip
    with open_store(db_path) as con:
        result = api.chat(con, [path])
    assert result.total["rejected"] == 0, result.total
    assert turns(db_path) == [
        ("c9ec5b440fbdd2a269333dd241f32f64", 0, "user",
         "Are you familiar with reality shifting?", False),
        ("c9ec5b440fbdd2a269333dd241f32f64", 1, "assistant", "Yes, I am.", False),
        ("f0a8e1c2", 0, "user", "How do tides work?", False),
        ("f0a8e1c2", 1, "assistant", "The moon's gravity.", False),
    ]  # fmt: skip


def test_a_conversation_with_no_id_is_named_by_its_content(tmp_path, db_path):
    """OpenAI's fine-tuning JSONL: each line a conversation with no id. Each gets one from its
    own text, so a second import of the file adds nothing and two conversations stay two."""
    rows = [
        {"messages": [{"role": "system", "content": "Marv is a chatbot."},
                      {"role": "user", "content": "What's the capital of France?"},
                      {"role": "assistant", "content": "Paris."}]},
        {"messages": [{"role": "user", "content": "Who wrote Romeo and Juliet?"},
                      {"role": "assistant", "content": "Shakespeare."}]},
    ]  # fmt: skip
    path = write_jsonl(tmp_path / "finetune.jsonl", rows)
    with open_store(db_path) as con:
        first = api.chat(con, [path])
        again = api.chat(con, [write_jsonl(tmp_path / "copy.jsonl", rows)])
    assert first.total["rejected"] == 0 and first.total["stored"] == 5
    assert again.total["stored"] == 0 and again.total["already_present"] == 5
    stored = turns(db_path)
    assert len({conv for conv, *_ in stored}) == 2
    assert sorted(text for _, _, role, text, _ in stored if role == "user") == [
        "What's the capital of France?", "Who wrote Romeo and Juliet?"]  # fmt: skip


def test_a_conversation_named_by_its_content_confirms_no_guess(tmp_path, db_path):
    """The name made from a conversation's line was md5 of the line as written, before
    redaction: someone holding the store and a guess of the line (a short chat with an address
    in it) could confirm the guess, which the redaction's keyed hashes exist to prevent. With
    redaction on, the name is keyed as every content hash is (``gm_content_hash``)."""
    row = {"messages": [{"role": "user", "content": "my email is jane.doe@example.org"},
                        {"role": "assistant", "content": "Noted."}]}  # fmt: skip
    path = write_jsonl(tmp_path / "finetune.jsonl", [row])
    line = path.read_text(encoding="utf-8").strip()
    with open_store(db_path) as con:
        api.chat(con, [path])
        unkeyed = con.execute("SELECT 'md5:' || md5(?)", [line]).fetchall()[0][0]
    stored = {conv for conv, *_ in turns(db_path)}
    assert len(stored) == 1 and stored.pop().startswith("md5:")
    assert unkeyed not in {conv for conv, *_ in turns(db_path)}
    assert all("jane.doe" not in text for *_, text, _ in turns(db_path))


@pytest.mark.parametrize(
    ("answer", "knows"),
    [
        ("Das weiß ich leider nicht.", False),
        ("Ich weiß es nicht, tut mir leid.", False),
        ("Dazu habe ich keine Informationen.", False),
        ("Je ne sais pas, désolé.", False),
        ("Je n'ai pas cette information.", False),
        ("Lo siento, no lo sé.", False),
        ("No tengo información sobre eso.", False),
        ("Desculpe, não sei.", False),
        ("Non lo so.", False),
        ("К сожалению, я не знаю.", False),
        ("抱歉，我不知道。", False),
        ("申し訳ありませんが、わかりません。", False),
        # answers that know
        ("Sie finden es unter Einstellungen.", True),
        ("Je sais: allez dans Paramètres.", True),
        ("Sí, lo sé: está en Ajustes.", True),
        ("在设置里可以找到。", True),
    ],
)
def test_an_answer_that_does_not_know_in_other_languages(answer: str, knows: bool):
    """Only English "I don't know" answers counted as chat failures: a probe's German, French,
    Spanish and Chinese ones showed 0% failed."""
    with duckdb.connect() as con:
        matched = con.execute("SELECT regexp_matches(?, ?)", [answer, DONT_KNOW]).fetchall()[0][0]
    assert matched is not knows
