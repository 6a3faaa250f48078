"""Chat history into ``chat_turns``, in turn order, so a follow-up keeps its context.

Three shapes are read: JSONL of turns, JSONL of whole conversations (a ``messages`` list each, or
the public data sets' ``conversations``/``conversation`` with their own names for ids and roles),
and message-level CSV with reply-to ids, as in a Twitter customer-support export, whose threads
are rebuilt with a recursive query. Thumbs down and "I don't know"-style answers are kept as
failure signals (``feedback = 'down'``, ``dont_know``).
"""

from __future__ import annotations

from typing import Any

import duckdb

from goldmine.errors import InputError
from goldmine.ingest.feedback import DONT_KNOW, thumbs
from goldmine.ingest.fields import field_access, json_path, resolve_fields, typ, val
from goldmine.ingest.files import check_json, replace_raw
from goldmine.ingest.html_text import HTML_MACROS
from goldmine.ingest.target import Target

ALIASES: dict[str, tuple[str, ...]] = {
    "conversation_id": (
        "conversation_id",
        "conversation",
        "thread_id",
        "chat_id",
        "dialog_id",
        "session_id",
    ),
    "turn": ("turn", "turn_index", "seq", "position", "message_index", "index"),
    "turn_id": ("turn_id", "message_id", "tweet_id", "id"),
    "ts": ("ts", "timestamp", "created_at", "time", "date"),
    "user_id": ("user_id", "user", "customer_id", "author_id"),
    "role": ("role", "speaker", "author_role", "sender", "from"),
    # ShareGPT's turns are {"from": "human", "value": "..."}: "value" is the text where no other is
    "text": ("text", "content", "message", "body", "utterance", "value"),
    "feedback": ("feedback", "rating", "thumbs", "vote"),
    # an assistant turn that calls a tool has no text: the call (a search's query) stands for it
    "tool_calls": ("tool_calls", "function_call"),
}

COLUMNS = (
    "conversation_id",
    "turn",
    "turn_id",
    "ts",
    "user_id",
    "role",
    "text",
    "feedback",
    "dont_know",
    "extra",
)

_USER = "('user', 'customer', 'human', 'client', 'visitor', 'inbound', 'true', 'prompter')"
# Every turn that is not the user's is the other side (a system or developer prompt, a tool's
# answer): triage reads the user's turns, the rest is their context.
_ASSISTANT = (
    "('assistant', 'bot', 'agent', 'ai', 'support', 'system', 'model', 'outbound', 'false', "
    "'developer', 'tool', 'function', 'ipython', "
    # ShareGPT-style data sets name the model, and their tool turns, in "from"
    "'gpt', 'chatgpt', 'bard', 'bing', 'claude', 'gemini', 'llama', 'function_call', "
    "'function_response', 'observation', 'tool_call', 'tool_response')"
)

# A content given as a list of parts, as the chat APIs log it: the text parts (or plain strings)
# joined by line ends; a tool use part as name(input). Images and files have no text.
_PART = (
    "CASE WHEN json_type(p) = 'VARCHAR' THEN json_extract_string(p, '$') "
    "WHEN p ->> '$.type' = 'tool_use' THEN (p ->> '$.name') || '(' || (p ->> '$.input') || ')' "
    "WHEN p ->> '$.type' IS NULL OR p ->> '$.type' IN ('text', 'input_text', 'output_text') "
    "THEN p ->> '$.text' END"
)
# A tool call list (or one function call) as name(arguments), a call a line.
_CALL = (
    "coalesce(c ->> '$.function.name', c ->> '$.name') || '(' || "
    "coalesce(c ->> '$.function.arguments', c ->> '$.arguments', '') || ')'"
)


def _text_sql(text: str, kind: str, calls: str) -> str:
    """SQL of a turn's text: the text, its parts' text, or the tool calls of a turn with none."""
    parts = (
        f"array_to_string(list_filter(list_transform(from_json({text}, '[\"JSON\"]'), "
        f"lambda p: {_PART}), lambda t: t IS NOT NULL AND trim(t) <> ''), chr(10))"
    )
    listed = (
        f"array_to_string(list_transform(CASE WHEN left({calls}, 1) = '[' "
        f"THEN from_json({calls}, '[\"JSON\"]') ELSE [{calls}::JSON] END, lambda c: {_CALL}), "
        "chr(10))"
    )
    return (
        f"CASE WHEN {kind} = 'ARRAY' THEN nullif({parts}, '') "
        f"WHEN gm_blank({text}) AND json_valid({calls}) "
        f"AND {calls} NOT IN ('[]', 'null') THEN {listed} ELSE {text} END"
    )


def stage_sql(keys: list[str], mapping: dict[str, str]) -> tuple[str, dict[str, Any]]:
    fields = resolve_fields(keys, ALIASES, mapping, strict=True)
    if keys and "text" not in fields:
        raise InputError(
            "no text field (looked for text, content, message, body); "
            "name it with --map text=COLUMN"
        )
    known = {k for names in fields.values() for k in names}
    access, params = field_access(fields, [k for k in keys if k not in known], ("text",))
    text, ts, role = "gm_text", val(fields, "ts"), val(fields, "role")
    given = _text_sql(val(fields, "text"), typ(fields, "text"), val(fields, "tool_calls"))
    conv, turn = val(fields, "conversation_id"), val(fields, "turn")
    fb = val(fields, "feedback")
    sql = f"""
        SELECT line, raw,
            CASE WHEN err IS NOT NULL THEN err
                 WHEN gm_blank({text}) THEN 'missing text'
                 WHEN {typ(fields, "text")} NOT IN ('VARCHAR', 'ARRAY', 'NULL')
                     THEN 'wrong type: text is ' || gm_jtype({typ(fields, "text")})
                 WHEN {conv} IS NULL THEN 'missing conversation_id'
                 WHEN {role} IS NULL THEN 'missing role'
                 WHEN lower({role}) NOT IN {_USER} AND lower({role}) NOT IN {_ASSISTANT}
                     THEN 'unknown role: ' || left({role}, 40)
                 WHEN {ts} IS NOT NULL AND gm_t IS NULL
                     THEN 'unparseable timestamp: ' || left({ts}, 60)
                 WHEN {turn} IS NOT NULL AND try_cast({turn} AS INTEGER) IS NULL
                     THEN 'wrong type: turn is not an integer: ' || left({turn}, 40)
            END AS reason,
            {conv} AS conversation_id,
            try_cast({turn} AS INTEGER) AS turn,
            {val(fields, "turn_id")} AS turn_id,
            gm_t AS ts,
            {val(fields, "user_id")} AS user_id,
            CASE WHEN lower({role}) IN {_USER} THEN 'user' ELSE 'assistant' END AS role,
            {text} AS text,
            coalesce({thumbs(fb)}, {fb}) AS feedback,
            coalesce(lower({role}) IN {_ASSISTANT} AND regexp_matches({text}, $gm_dont_know),
                     false) AS dont_know,
            x AS extra
        FROM (SELECT *, gm_ts({ts}) AS gm_t, {given} AS gm_text FROM ({access}))
    """
    return sql, {**params, "gm_dont_know": DONT_KNOW}


# A turn the file gives no number is numbered here, after redaction, as it will be stored (its
# conversation id pseudonymized, its text redacted): a turn already stored (the same
# conversation, time, role and text, the k-th such in both) keeps its number; the others follow
# the conversation's last stored turn, in time order. The text tells apart turns of one day or
# of no time at all, as an export that dates them by the day, or not at all, gives them. An
# export cut by date holds a conversation's later turns alone: numbered from 0 in each file,
# they took the stored turns' numbers and were lost as present.
_PLACE = """
WITH s AS MATERIALIZED ({staged}),
new AS (
    SELECT *, md5(text) AS gm_text_md5,
           row_number() OVER (PARTITION BY conversation_id, ts, role, md5(text) ORDER BY line)
               AS gm_k
    FROM s WHERE reason IS NULL AND turn IS NULL
),
known AS (
    SELECT conversation_id, ts, role, gm_text_md5, turn AS gm_turn,
           row_number() OVER (PARTITION BY conversation_id, ts, role, gm_text_md5 ORDER BY turn)
               AS gm_k
    FROM gm_known_rows WHERE conversation_id IN (SELECT conversation_id FROM new)
),
top AS (
    SELECT conversation_id, max(turn) + 1 AS gm_next FROM gm_known_rows
    WHERE conversation_id IN (SELECT conversation_id FROM new) GROUP BY conversation_id
),
matched AS (
    SELECT n.*, k.gm_turn FROM new n LEFT JOIN known k
        ON n.conversation_id = k.conversation_id AND n.ts IS NOT DISTINCT FROM k.ts
       AND n.role = k.role AND n.gm_text_md5 = k.gm_text_md5 AND n.gm_k = k.gm_k
)
SELECT m.* EXCLUDE (gm_k, gm_turn, gm_text_md5) REPLACE (coalesce(gm_turn, coalesce(gm_next, 0)
           + row_number() OVER (PARTITION BY m.conversation_id, gm_turn IS NULL
                                ORDER BY m.ts, m.line) - 1)::INTEGER AS turn)
FROM matched m LEFT JOIN top t ON m.conversation_id = t.conversation_id
UNION ALL BY NAME
SELECT * FROM s WHERE NOT (reason IS NULL AND turn IS NULL)
"""


# Whole conversations become one record per turn before mapping: the conversation's own fields
# (id, user) are merged into each message, and the message's position is its turn. A record's
# list is the first of the file's list keys it holds as an array (a file may mix data sets). Its
# id is the first of _CONVERSATION_IDS it has; a conversation with none (OpenAI's fine-tuning
# JSONL) is named by a hash of its record, so importing the same file again adds nothing; keyed
# when redacting (``batch.content_hash``), so the name confirms no guess of the text.
_EXPAND_CONVERSATIONS = """
WITH listed AS (
    SELECT line, raw, err,
           CASE WHEN err IS NULL THEN
               $list_paths[list_position(json_type(raw, $list_paths), 'ARRAY')] END AS list_path
    FROM gm_raw
)
SELECT line, raw, err FROM listed WHERE list_path IS NULL
UNION ALL
SELECT line,
       json_merge_patch(
           json_object('conversation_id', coalesce(
                           list_filter(json_extract_string(raw, $id_paths),
                                       lambda v: v IS NOT NULL AND v <> '')[1],
                           'md5:' || gm_content_hash(raw)),
                       'user_id', raw ->> '$.user_id', 'turn', i - 1),
           msgs[i])::VARCHAR,
       CASE WHEN json_type(msgs[i]) <> 'OBJECT' THEN 'not a JSON object' END
FROM (SELECT line, raw, from_json(json_extract(raw, list_path), '["JSON"]') AS msgs FROM listed
      WHERE list_path IS NOT NULL),
     range(1, len(msgs) + 1) r(i)
"""
# A whole conversation's id, as the data sets name it: WildChat's conversation_hash, UltraChat's
# prompt_id, ShareGPT's id.
_CONVERSATION_IDS = (
    "conversation_id", "conversation_hash", "id", "_id", "prompt_id", "chat_id", "thread_id",
    "dialog_id", "session_id", "uuid",
)  # fmt: skip

# Reply-to threads (Twitter customer support): the root is the message that answers nothing
# in the file; every message gets its root as conversation id and its depth for turn order.
_REBUILD_THREADS = """
WITH RECURSIVE m AS (
    SELECT line, raw, err,
           CASE WHEN err IS NULL THEN
               regexp_replace(json_extract_string(raw, $id_path), '\\.0$', '') END AS id,
           CASE WHEN err IS NULL THEN nullif(regexp_replace(
               json_extract_string(raw, $parent_path), '\\.0$', ''), '') END AS parent
    FROM gm_raw
),
tree(id, root, depth) AS (
    SELECT id, id, 0 FROM m
    WHERE id IS NOT NULL
      AND (parent IS NULL OR parent NOT IN (SELECT id FROM m WHERE id IS NOT NULL))
    UNION ALL
    SELECT m.id, tree.root, tree.depth + 1 FROM m JOIN tree ON m.parent = tree.id
    WHERE tree.depth < 500
),
placed AS (SELECT id, min(root) AS root, min(depth) AS depth FROM tree GROUP BY id),
ordered AS (
    SELECT m.*, coalesce(p.root, m.id) AS root, coalesce(p.depth, 0) AS depth,
           CASE WHEN m.err IS NULL THEN gm_ts(json_extract_string(m.raw, $ts_path)) END AS ts,
           CASE WHEN m.err IS NULL THEN lower(json_extract_string(m.raw, '$.inbound')) END
               AS inbound
    FROM m LEFT JOIN placed p ON p.id = m.id
)
SELECT line,
       CASE WHEN err IS NULL THEN json_merge_patch(raw, json_object(
           'conversation_id', root,
           'turn', row_number() OVER (PARTITION BY root ORDER BY depth, ts, line) - 1,
           'role', CASE inbound WHEN 'true' THEN 'user' WHEN 'false' THEN 'assistant' END
       ))::VARCHAR ELSE raw END AS raw,
       err
FROM ordered
"""

# A Slack export: a day's messages of a channel. A thread is a conversation (a message with no
# replies is one alone); the thread's starter (``parent_user_id`` on a reply, whose thread may
# have begun in an earlier day's file) is the user, and whoever else writes in it answers: a
# bot, a colleague. Join, leave and topic events are rejected as what they are. A turn (and a
# rejected event's record) keeps only what it needs, its author by id: Slack writes the author's
# profile (real name, display name, avatar) beside each message, names no redaction pattern
# finds, and its blocks (the text again).
_SLACK_MESSAGES = "('bot_message', 'thread_broadcast', 'file_share', 'me_message')"
# mrkdwn as Slack shows it: a link's label (else its address), #channel, @user, @here, then
# the three entities it escapes (&amp; last, so "&amp;lt;" stays "&lt;").
_SLACK_MARKUP = (
    ("<#[A-Z0-9]+\\|([^>]*)>", "#\\1"),
    ("<@([A-Z0-9]+)(\\|[^>]*)?>", "@\\1"),
    ("<!(here|channel|everyone)(\\|[^>]*)?>", "@\\1"),
    ("<!subteam\\^[A-Z0-9]+\\|([^>]*)>", "\\1"),
    ("<(?:https?|mailto|tel):[^|>]*\\|([^>]*)>", "\\1"),
    ("<(?:mailto:|tel:)?([^|>]*)>", "\\1"),
    ("&lt;", "<"),
    ("&gt;", ">"),
    ("&amp;", "&"),
)


def _slack_text(text: str) -> str:
    for pattern, replacement in _SLACK_MARKUP:
        text = f"regexp_replace({text}, '{pattern}', '{replacement}', 'g')"
    return text


# A reaction is read as a verdict in the spellings chat and traces read (``feedback.thumbs``).
_SLACK_FEEDBACK = f"""CASE
    WHEN list_contains(list_transform(reactions, lambda r: {thumbs("r")}), 'down') THEN 'down'
    WHEN list_contains(list_transform(reactions, lambda r: {thumbs("r")}), 'up') THEN 'up' END"""
_SLACK = f"""
WITH m AS (
    SELECT line, raw, err,
           raw ->> '$.ts' AS ts,
           coalesce(nullif(raw ->> '$.thread_ts', ''), raw ->> '$.ts') AS conv,
           raw ->> '$.subtype' AS subtype,
           raw ->> '$.user' AS usr,
           raw ->> '$.parent_user_id' AS asker,
           raw ->> '$.bot_id' IS NOT NULL OR raw ->> '$.subtype' = 'bot_message' AS bot,
           list_transform(CASE WHEN json_type(raw, '$.reactions') = 'ARRAY'
                              THEN from_json(raw -> '$.reactions', '["JSON"]') END,
                          lambda r: regexp_replace(r ->> '$.name', '::.*', '')) AS reactions
    FROM gm_raw WHERE err IS NULL
),
roots AS (SELECT conv, any_value(usr) AS starter FROM m WHERE ts = conv GROUP BY conv)
SELECT line,
       CASE WHEN subtype IS NULL OR subtype IN {_SLACK_MESSAGES} THEN
           json_object('conversation_id', conv, 'turn_id', ts, 'ts', ts, 'user', usr,
                       'role', CASE WHEN bot THEN 'assistant'
                                    WHEN usr = coalesce(asker, starter, usr) THEN 'user'
                                    ELSE 'assistant' END,
                       'text', {_slack_text("raw ->> '$.text'")},
                       'feedback', {_SLACK_FEEDBACK}, 'subtype', subtype)::VARCHAR
            -- an event, rejected: its record for reading, without the author's profile
            ELSE json_object('type', raw ->> '$.type', 'subtype', subtype, 'ts', ts,
                             'user', usr, 'text', raw ->> '$.text')::VARCHAR END AS raw,
       CASE WHEN subtype IS NOT NULL AND subtype NOT IN {_SLACK_MESSAGES}
            THEN 'not a message: Slack ' || subtype END AS err
FROM m LEFT JOIN roots USING (conv)
UNION ALL
SELECT line, raw, err FROM gm_raw WHERE err IS NOT NULL
"""


# Keys only Slack's messages carry (a message's id, its thread, its blocks, a bot, an event):
# a chat log of its own with a type, a user and a ts is not taken for one.
_SLACK_KEYS = frozenset((
    "client_msg_id", "thread_ts", "subtype", "bot_id", "blocks", "team", "user_profile",
    "reply_count", "parent_user_id",
))  # fmt: skip


def is_slack(keys: list[str], mapping: dict[str, str] | None = None) -> bool:
    """A Slack export's messages: typed, timed by ``ts``, by a user or a bot, with a key only
    Slack writes, and naming no conversation or no role (by any name goldmine knows, or
    ``--map``)."""
    lower = {k.lower() for k in keys}
    if not ({"type", "ts", "text"} <= lower and {"user", "bot_id"} & lower and _SLACK_KEYS & lower):
        return False
    fields = resolve_fields(keys, ALIASES, mapping or {})
    return not {"conversation_id", "role"} <= fields.keys()


# Intercom's conversation (REST API): its first message in ``source`` (``conversation_message``
# in API 1.0), the rest in ``conversation_parts`` (GET /conversations lists conversations
# without them). A part is a comment, an internal note (not the customer's to see: rejected), or
# an event (assignment, open, close, snooze) that carries a reply's body or none (rejected). The
# customer (user, lead, contact) is the user, the team (admin, bot, team) answers. Bodies are
# HTML. The conversation's rating (1-5 stars) is feedback on the team's last answer. Only the
# author's id is kept: never the name or email that come with it.
_INTERCOM = """
WITH c AS (
    SELECT line, raw, err, raw ->> '$.id' AS conv,
           raw ->> '$.conversation_rating.rating' AS rating,
           list_prepend(
               json_merge_patch(json_object('created_at', raw -> '$.created_at',
                                            'part_type', 'comment'),
                                coalesce(raw -> '$.source', raw -> '$.conversation_message')),
               coalesce(from_json(raw -> '$.conversation_parts.conversation_parts', '["JSON"]'),
                        [])) AS msgs
    FROM gm_raw WHERE err IS NULL
),
parts AS (
    SELECT line, conv, rating, i, msgs[i] ->> '$.part_type' AS kind,
           msgs[i] ->> '$.id' AS part_id, msgs[i] ->> '$.created_at' AS ts,
           msgs[i] ->> '$.author.id' AS author, msgs[i] ->> '$.body' AS body,
           lower(msgs[i] ->> '$.author.type') AS author_type,
           lower(msgs[i] ->> '$.author.type') IN ('user', 'lead', 'contact') AS customer
    FROM c, range(1, len(msgs) + 1) r(i)
),
placed AS (
    SELECT *, CASE WHEN kind = 'note' THEN 'internal note, not a message'
                   WHEN author_type IS NULL THEN 'not a message: Intercom part with no author'
                   WHEN kind <> 'comment' AND gm_blank(body)
                       THEN 'not a message: Intercom ' || kind END AS err,
              max(CASE WHEN NOT customer AND kind <> 'note' AND NOT gm_blank(body)
                       THEN i END) OVER (PARTITION BY line) AS last_answer
    FROM parts
)
SELECT line,
       json_object('conversation_id', conv, 'turn', i - 1, 'turn_id', part_id, 'ts', ts,
                   'role', CASE WHEN customer THEN 'user' ELSE 'assistant' END,
                   'user_id', author,
                   'text', gm_html_block(body),
                   'feedback', CASE WHEN i = last_answer THEN CASE
                       WHEN try_cast(rating AS INTEGER) <= 2 THEN 'down'
                       WHEN try_cast(rating AS INTEGER) >= 4 THEN 'up' END END)::VARCHAR AS raw,
       err
FROM placed
UNION ALL
SELECT line, raw, err FROM gm_raw WHERE err IS NOT NULL
"""


def is_intercom(keys: list[str]) -> bool:
    """Intercom's conversations: a first message (``source``, or API 1.0's
    ``conversation_message``) with its parts, or listed beside its contacts."""
    have = set(keys)
    first = bool({"source", "conversation_message"} & have)
    return first and bool({"conversation_parts", "contacts", "teammates"} & have)


_PARENTS = ("in_response_to_tweet_id", "in_response_to", "reply_to", "parent_id", "in_reply_to")
_IDS = ("tweet_id", "message_id", "id")
_LISTS = ("messages", "conversations", "turns", "dialog", "conversation")


def reshape(
    con: duckdb.DuckDBPyConnection, keys: list[str], mapping: dict[str, str] | None = None
) -> None:
    """Turn conversation records or reply-to messages into turn records, in place."""
    lower = {k.lower(): k for k in keys}
    list_keys = [lower[k] for k in _LISTS if k in lower]
    parent = next((lower[k] for k in _PARENTS if k in lower), None)
    slack, intercom = is_slack(keys, mapping), is_intercom(keys)
    if list_keys or parent or slack or intercom:
        check_json(con)
    if intercom:
        replace_raw(con, _INTERCOM)
    elif slack:
        replace_raw(con, _SLACK)
    elif list_keys:
        replace_raw(
            con,
            _EXPAND_CONVERSATIONS,
            {
                "list_paths": [json_path(k) for k in list_keys],
                "id_paths": [json_path(k) for k in _CONVERSATION_IDS],
            },
        )
    elif parent and "conversation_id" not in lower:
        ident = next((lower[k] for k in _IDS if k in lower), None)
        if ident is None:
            raise InputError(
                f"reply-to column {parent!r} but no message id column (tweet_id, message_id or id)"
            )
        ts_key = next((lower[k] for k in ("created_at", "ts", "timestamp") if k in lower), "ts")
        replace_raw(
            con,
            _REBUILD_THREADS,
            {
                "id_path": json_path(ident),
                "parent_path": json_path(parent),
                "ts_path": json_path(ts_key),
            },
        )


def target(mapping: dict[str, str] | None = None) -> Target:
    return Target(
        source="chat",
        table="chat_turns",
        key=("conversation_id", "turn"),
        columns=COLUMNS,
        stage=lambda keys: stage_sql(keys, mapping or {}),
        redact=("text", "user_id", "feedback", "extra"),
        # a support chat keyed by the customer's email: kept apart as a session id is
        pseudonymize=("conversation_id",),
        reshape=lambda con, keys: reshape(con, keys, mapping),
        macros=HTML_MACROS,
        place=lambda staged: _PLACE.format(staged=staged),
        known=("ts", "role", "md5(text) AS gm_text_md5"),
    )
