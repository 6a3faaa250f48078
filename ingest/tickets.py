"""Support tickets into ``tickets``: every ticket is a search that failed.

The stored question is what the customer asked: the subject plus the first question of the body,
with greetings, quoted replies, signatures and the @handles a tweet opens with dropped (in SQL,
over the whole batch). The full description is kept, redacted, for reading. In a support-tweet
export only the customers' messages are tickets: the brand's replies (``inbound`` false, or the
brand's own handles given as agents) are rejected with their reason, so they never reach triage.
"""

from __future__ import annotations

from typing import Any

import duckdb

from goldmine.errors import InputError
from goldmine.ingest.chat import is_intercom, is_slack
from goldmine.ingest.fields import column_words, field_access, resolve_fields, typ, val
from goldmine.ingest.files import check_json, replace_raw
from goldmine.ingest.html_text import HTML_MACROS
from goldmine.ingest.logformats import BLANK
from goldmine.ingest.target import Target

ALIASES: dict[str, tuple[str, ...]] = {
    # Jira's CSV names a ticket by its "Issue key" (HELP-12)
    "ticket_id": ("ticket_id", "id", "ticket", "number", "key", "issue_key", "tweet_id"),
    # Freshdesk's CSV export: "Created time"
    "ts": ("created_at", "ts", "timestamp", "created", "created_time", "date", "time"),
    "user_id": (
        "requester_id",
        # Zendesk's CSV export: "Requester" is the requester's name, "Requester id" the id
        "requester id",
        "user_id",
        "requester",
        "submitter_id",
        "customer_id",
        "author_id",
        "contact_id",  # Freshdesk's CSV export
        "reporter_id",  # Jira's, beside the reporter's display name
        "reporter",  # Jira's older CSV: a display name (NAME_COLUMNS)
        "user",  # GitHub's issues: an object, stored as its id (gm_requester)
    ),
    "subject": ("subject", "title", "summary", "raw_subject"),
    # Freshdesk gives the HTML description and its text: the text is kept for reading
    "body": ("description_text", "description", "body", "text", "message", "content", "question"),
    "comments": ("comments",),
    "status": ("status", "state"),
    # A support-tweet export has the brand's replies in the same file: inbound = False.
    "inbound": ("inbound", "is_inbound"),
}

COLUMNS = (
    "ticket_id", "ts", "user_id", "subject", "body", "question", "no_question", "status", "extra"
)  # fmt: skip

# Quoted replies and everything after them; a signature block and everything after it.
_QUOTED_TAIL = (
    r"(?s)(\n[ \t]*On [^\n]{0,200}wrote:|\n-{2,}[ \t]*Original Message|\n[ \t]*From: ).*$"
)
_QUOTED_LINE = r"(?m)^[ \t]*>.*$"
_SIGNATURE = (
    r"(?is)(\n[ \t]*--[ \t]*\n|\n[ \t]*(thanks|thank you|many thanks|best|best regards|"
    r"kind regards|regards|cheers|sent from my)\b[^\n]{0,40}(\n|$)).*$"
)
_GREETING = (
    r"(?i)^\s*(hi|hello|hey|dear|good (morning|afternoon|evening)|greetings)\b"
    r"[^\n,.!]{0,40}[,.!]?\s*"
)
# The @handles a tweet opens with say whom it is addressed to, not what is asked.
_ADDRESSEES = r"^\s*(@[A-Za-z0-9_]{1,30}[\s,:]*)+"

# A sentence, for RE2 (no look-around): runs of characters up to a terminator (.!? then white
# space or the end) or a line end. A terminator followed by a non-space character does not end
# it (a URL, a version, a decimal: "https://t.co/x", "11.0.2", "3.50"), nor a title's dot, nor
# an abbreviation's or an ellipsis' followed by a lowercase word ("e.g. the", "hours... y'all").
# The alternatives are tried in this order at each character, so the abbreviations come first.
_TITLES = r"(?i:\b(?:mr|mrs|ms|dr|prof|st|jr|sr)\.)\s"
_ABBREVIATIONS = (
    r"(?i:\b(?:e\.g|i\.e|etc|vs|approx|incl|a\.m|p\.m|no|nr|min|max|fig|cf|ca)\.)\s+[a-z0-9(]"
)
_ELLIPSIS = r"(?:\.{2,}|…)\s+[a-z]"
# Other scripts' terminators end a sentence whatever follows (Chinese and Japanese write no
# space after 。): the ideographic full stop, full-width ! and ?, Arabic's ؟, Greek's ;, Hindi's ।.
_WIDE_ENDS = "\u3002\uff01\uff1f\u061f\u037e\u0964"
SENTENCE = (
    rf"\s*((?:{_TITLES}|{_ABBREVIATIONS}|{_ELLIPSIS}|[.!?]+[^\s.!?{_WIDE_ENDS}]"
    rf"|[^.!?\n{_WIDE_ENDS}])+[.!?{_WIDE_ENDS}]*)"
)
_QUESTION_END = "[?\uff1f\u061f\u037e][.!?\u3002\uff01\uff1f\u061f]*$"


# A sentence that states a problem, for a message that asks no question (a support tweet rarely
# does): a word of trouble, or a negation before a verb ("will not depart", "can't log in"; not
# "you won't!", "you don't have to", "not a customer", "Not 25"). A sentence of thanks or of a
# problem solved states none. Measured by hand on the support-tweet sample (DEVELOPERS.md).
_APOSTROPHE = "['\u2019]?"
_TROUBLE = (
    r"(?i)\b(broken|break(s|ing)?|errors?|issues?|problems?|bugs?|buggy|crash(es|ed|ing)?|"
    r"freez(e|es|ing)|froze|fail(s|ed|ing|ure)?|stuck|slow(s|ed|ing|down|er)?|lag(s|gy|ging)?|"
    r"drain(s|ed|ing)?|drop(s|ped|ping)|killing|dead|down|outage|disconnect(s|ed|ing)?|"
    r"skip(s|ping|ped)|delay(s|ed)?|late|cancell?ed|reschedul(e|ed|es|ing)|missing|lost|wrong|"
    r"(over)?charged|refund|fix|need|wish|takes ages|forever|sucks?|horrible|terrible|awful|"
    r"worst|paraly[sz]ed|messed up|waiting|stop(s|ped)? working|no (one|signal|service|"
    r"internet|wifi|connection|delivery|response|reply|way))\b"
)
_NEGATION = (
    rf"(?i)\b(can{_APOSTROPHE}t|cannot|won{_APOSTROPHE}t|doesn{_APOSTROPHE}t|"
    rf"don{_APOSTROPHE}t|didn{_APOSTROPHE}t|isn{_APOSTROPHE}t|aren{_APOSTROPHE}t|"
    rf"wasn{_APOSTROPHE}t|weren{_APOSTROPHE}t|hasn{_APOSTROPHE}t|haven{_APOSTROPHE}t|"
    rf"couldn{_APOSTROPHE}t|not|never|unable to|no longer)\s+([a-z]+)"
)
# The same in the languages support traffic most often comes in beside English: a negated verb
# or a word of trouble (German, French, Spanish, Portuguese, Italian, Russian; Chinese and
# Japanese, which write no spaces, by their negations and words of failure anywhere).
_TROUBLE_ELSEWHERE = (
    r"(?i)(\b(nicht|keine?n?|kaputt|fehler|funktioniert nicht|n['’]?\S*\s+(pas|plus|jamais)|"
    r"ne\s+\S+\s+(pas|plus|jamais)|erreur|problème|panne|no\s+(funciona|puedo|llega|llegó|"
    r"recib\S*|sirve|carga|aparece|consigo|chegou)|não\s+\S+|non\s+(funziona|riesco|arriva)|"
    r"problema|errore|fallo|falla)\b|(^|\s)(не|нет)\s|проблем|ошибк|不能|无法|没有|没|不了|"
    r"失败|错误|问题|故障|できない|できません|ません|ない。|エラー|問題|失敗)"
)
# Words after a negation that make no problem of it ("not a customer", "don't have to").
_NOT_AFTER = ("a", "an", "the", "have", "sure", "that", "so", "too", "only", "bad", "just")
_SETTLED = (
    r"(?i)\b(solved|resolved|sorted|fixed|seems to be working|working (now|again|fine)|"
    r"thanks?|thank you|cheers|brilliant)\b"
)


# Columns that hold a person's name, which no pattern finds: never an extra, and as the only
# user column (Jira's "Reporter", Zendesk's CSV "Requester") a keyed hash of the name.
NAME_COLUMNS = frozenset(
    ["name", "full_name", "first_name", "last_name", "display_name", "contact_name",
     "contact", "customer_name", "requester_name", "requester", "reporter", "reporter_name",
     "submitter_name", "author_name", "assignee", "assignee_name", "agent_name", "cc", "ccs"]
)  # fmt: skip


# A requester given as an object (a Zendesk export's ``requester``: name, email, phone) is
# stored as its first key here, never whole: the name is PII no pattern finds, and an email or
# phone is then redacted like any user id.
_REQUESTER_KEYS = "['$.id', '$.external_id', '$.email', '$.phone']"


def _sql(pattern: str) -> str:
    # This module's own constants only, never user text.
    return "'" + pattern.replace("'", "''") + "'"


MACROS = (
    HTML_MACROS
    + f"""
CREATE OR REPLACE TEMP MACRO gm_ticket_text(b) AS trim(regexp_replace(regexp_replace(
    regexp_replace(regexp_replace(regexp_replace(chr(10) || gm_html_text(b),
        {_sql(_QUOTED_TAIL)}, ''),
        {_sql(_QUOTED_LINE)}, '', 'g'), {_sql(_SIGNATURE)}, ''),
    {_sql(_GREETING)}, ''), {_sql(_ADDRESSEES)}, ''));
CREATE OR REPLACE TEMP MACRO gm_sentences(b) AS list_filter(list_transform(
    regexp_extract_all(b, {_sql(SENTENCE)}, 1), lambda s: trim(s, chr(32) || chr(9) || chr(13))
), lambda s: s <> '');
CREATE OR REPLACE TEMP MACRO gm_first_question(b) AS
    list_filter(gm_sentences(b), lambda s: regexp_matches(s, {_sql(_QUESTION_END)}))[1];
CREATE OR REPLACE TEMP MACRO gm_first_sentence(b) AS
    nullif(left(gm_sentences(b)[1], 300), '');
CREATE OR REPLACE TEMP MACRO gm_states_problem(s) AS NOT regexp_matches(s, {_sql(_SETTLED)})
    AND (regexp_matches(s, {_sql(_TROUBLE)}) OR regexp_matches(s, {_sql(_TROUBLE_ELSEWHERE)})
         OR len(list_filter(
        regexp_extract_all(lower(s), {_sql(_NEGATION)}, 2),
        lambda w: NOT list_contains({list(_NOT_AFTER)}, w))) > 0);
CREATE OR REPLACE TEMP MACRO gm_first_problem(b) AS
    left(list_filter(gm_sentences(b), lambda s: gm_states_problem(s))[1], 300);
-- No question and no sentence that states a problem: kept, tagged no-question, left out of triage.
CREATE OR REPLACE TEMP MACRO gm_no_question(b) AS
    gm_first_question(b) IS NULL AND gm_first_problem(b) IS NULL;
CREATE OR REPLACE TEMP MACRO gm_ticket_query(b) AS
    coalesce(gm_first_question(b), gm_first_problem(b), gm_first_sentence(b));
-- Jira's CSV writes its dates as its default display format, dd/MMM/yy h:mm a.
CREATE OR REPLACE TEMP MACRO gm_ticket_ts(s) AS
    coalesce(gm_ts(s), try_strptime(s, '%d/%b/%y %I:%M %p')::TIMESTAMP);
CREATE OR REPLACE TEMP MACRO gm_requester(u) AS CASE
    WHEN left(u, 1) = '{{' AND try_cast(u AS JSON) IS NOT NULL
        THEN list_filter(json_extract_string(u, {_REQUESTER_KEYS}), lambda v: v IS NOT NULL)[1]
    ELSE u END;
"""
)


def _name_user(fields: dict[str, list]) -> bool:
    """Leave a name column out of the user's columns when another names the user; True when
    only names do (the user is then a keyed hash of the name, ``_user_sql``)."""
    columns = fields.get("user_id", [])
    names = [k for k in columns if isinstance(k, str) and column_words(k) in NAME_COLUMNS]
    if names and len(names) < len(columns):
        fields["user_id"] = [k for k in columns if k not in names]
    return bool(names) and len(names) == len(columns)


# A space of any kind between a name's words (a no-break space too): RE2's \s is ASCII's.
# One of gm_blank's characters (logformats.BLANK is a run of them).
_SPACE = BLANK.removesuffix("*")


def _user_sql(fields: dict[str, list], named: bool) -> str:
    """The user: a requester object's id (``gm_requester``), a login, else a name's keyed
    hash."""
    user = val(fields, "user_id")
    if not named:
        return f"gm_requester({user})"
    # A login ("jdoe", as Jira Service Management writes its reporter) is kept as an id is.
    return (
        f"CASE WHEN left({user}, 1) = '{{' THEN gm_requester({user}) "
        f"WHEN NOT regexp_matches(trim({user}), '{_SPACE}') THEN trim({user}) "
        f"ELSE 'user-' || left(gm_content_hash({user}), 16) END"
    )


def question_sql(subject: str, clean: str) -> str:
    """SQL: subject plus the first question of the cleaned body ``clean``; without a subject,
    the first question, else the first sentence that states a problem, else the first sentence."""
    question = f"gm_first_question({clean})"
    return (
        f"CASE WHEN gm_blank({subject}) THEN gm_ticket_query({clean})"
        f" WHEN {question} IS NULL THEN trim({subject})"
        f" ELSE trim({subject}) || ': ' || {question} END"
    )


# inbound values that say the brand wrote the message (a reply, not a customer's question).
_OUTBOUND = "('false', 'f', '0', 'no', 'n', 'outbound')"
AGENT_REASON = "agent reply, not a customer message"


def agent_sql(fields: dict[str, list[str]], agents: tuple[str, ...]) -> str:
    """SQL: whether a message is the support team's own (``inbound`` false, or written by one
    of ``agents``, the brand's handles, when the export has no ``inbound``)."""
    tests = []
    if "inbound" in fields:
        tests.append(f"lower(trim({val(fields, 'inbound')})) IN {_OUTBOUND}")
    if agents and "user_id" in fields:
        tests.append(f"list_contains($gm_agents, lower(ltrim({val(fields, 'user_id')}, '@')))")
    return " OR ".join(tests) or "false"


# Help Scout's conversation (Mailbox API 2.0, its threads embedded newest first): the ticket's
# description is the customer's first message as text (its HTML read), else the preview; the
# requester is the primary customer's id, never the name or email beside it. Notes and the
# team's replies are no part of it.
_HELPSCOUT = """
SELECT line,
       CASE WHEN err IS NULL THEN json_object(
           'ticket_id', raw ->> '$.id',
           'subject', raw ->> '$.subject',
           'description', gm_html_block(coalesce(list_sort(list_transform(list_filter(
                   coalesce(from_json(raw -> '$._embedded.threads', '["JSON"]'), []),
                   lambda t: t ->> '$.type' = 'customer' AND t ->> '$.body' IS NOT NULL),
               lambda t: struct_pack(at := t ->> '$.createdAt', body := t ->> '$.body')))[1].body,
               raw ->> '$.preview')),
           'created_at', raw ->> '$.createdAt',
           'requester_id', coalesce(raw ->> '$.primaryCustomer.id', raw ->> '$.customer.id'),
           'status', raw ->> '$.status')::VARCHAR ELSE raw END AS raw,
       err
FROM gm_raw
"""


def is_helpscout(keys: list[str]) -> bool:
    """Help Scout's conversations: HAL records of a mailbox's conversations."""
    have = set(keys)
    return "_embedded" in have and bool({"preview", "primaryCustomer", "mailboxId"} & have)


def reshape(con: duckdb.DuckDBPyConnection, keys: list[str]) -> None:
    """Help Scout's conversations become ticket records, in place."""
    if is_helpscout(keys):
        check_json(con)
        replace_raw(con, _HELPSCOUT)


def _refuse_foreign(keys: list[str]) -> None:
    """Name a layout whose tickets sit deeper than a record, rather than ask for a field."""
    if "tickets" in keys:  # Zendesk's incremental export, its pages saved as JSON lines
        raise InputError(
            "each record holds a list of tickets under 'tickets' (API pages saved as JSON "
            "lines): save one page a .json file and import the folder"
        )
    if "_embedded" in keys:  # a HAL page saved as a JSON line: its records a level down
        raise InputError(
            "each record holds its records under '_embedded' (API pages saved as JSON lines): "
            "save one page a .json file and import the folder"
        )


def stage_sql(
    keys: list[str], mapping: dict[str, str], agents: tuple[str, ...] = ()
) -> tuple[str, dict[str, Any]]:
    # Every Slack message (a bot's answer, a join) would be a ticket; an Intercom conversation
    # holds its text in parts that no ticket field names.
    fields = resolve_fields(keys, ALIASES, mapping, strict=True)
    slack = is_slack(keys) and "subject" not in fields  # no Slack message has a subject
    chats = ((slack, "a Slack export's messages"), (is_intercom(keys), "Intercom's conversations"))
    for told, layout in chats:
        if told:
            raise InputError(
                f"{layout} are chat, not tickets: read them with goldmine ingest chat "
                "(each conversation's turns in order)"
            )
    if keys and not ({"subject", "body"} & set(fields)):
        _refuse_foreign(keys)
        raise InputError(
            "no subject or description field (looked for subject, title, description, body, "
            "text); name one with --map subject=COLUMN or --map body=COLUMN"
        )
    known = {k for names in fields.values() for k in names}
    named = _name_user(fields)
    extras = [k for k in keys if k not in known and column_words(k) not in NAME_COLUMNS]
    access, params = field_access(fields, extras, ("subject",))
    subject, ts = val(fields, "subject"), val(fields, "ts")
    comments = val(fields, "comments")
    body = (
        f"coalesce({val(fields, 'body')}, "
        f"json_extract_string(try_cast({comments} AS JSON), '$[0].body'))"
    )
    content = f"concat_ws(chr(31), {ts}, {val(fields, 'user_id')}, {subject}, b)"
    # Zendesk lists the comments; GitHub's issues count them.
    listed = f"try_cast({comments} AS JSON)"
    count = (
        f"CASE WHEN json_type({listed}) = 'ARRAY' THEN json_array_length({listed}) "
        f"WHEN json_type({listed}) IN ('UBIGINT', 'BIGINT') THEN try_cast({comments} AS BIGINT) END"
    )
    # Zendesk's "via" names the sender (source.from.name and address): its channel is kept.
    x = "json_merge_patch(x, json_object('via', json_extract(x, '$.via.channel')))"
    x = x if "via" in extras else "x"
    extra = (
        f"CASE WHEN {comments} IS NOT NULL THEN to_json(map_from_entries(["
        f"('n_comments', ({count})::VARCHAR::JSON)]))::VARCHAR ELSE {x} END"
    )
    sql = f"""
        SELECT line, raw,
            CASE WHEN err IS NOT NULL THEN err
                 WHEN coalesce({agent_sql(fields, agents)}, false) THEN '{AGENT_REASON}'
                 WHEN gm_blank({subject}) AND gm_blank(b)
                     THEN 'missing subject and description'
                 WHEN {typ(fields, "subject")} NOT IN ('VARCHAR', 'NULL')
                     THEN 'wrong type: subject is ' || gm_jtype({typ(fields, "subject")})
                 WHEN {ts} IS NOT NULL AND t IS NULL
                     THEN 'unparseable timestamp: ' || left({ts}, 60)
            END AS reason,
            -- an id holding PII is known by its pseudonym when redacting (batch.content_hash)
            coalesce(gm_id_key({val(fields, "ticket_id")}), 'h-' || gm_content_hash({content}))
                AS ticket_id,
            t AS ts,
            {_user_sql(fields, named)} AS user_id,
            trim({subject}) AS subject,
            b AS body,
            {question_sql(subject, "gm_ticket_text(b)")} AS question,
            gm_blank({subject})
                AND coalesce(gm_no_question(gm_ticket_text(b)), false) AS no_question,
            {val(fields, "status")} AS status,
            {extra} AS extra
        FROM (SELECT *, {body} AS b, gm_ticket_ts({ts}) AS t FROM ({access}))
    """
    if agents:
        params["gm_agents"] = [a.lower().lstrip("@") for a in agents]
    return sql, params


def target(mapping: dict[str, str] | None = None, agents: list[str] | None = None) -> Target:
    """``agents``: the brand's own handles (author ids), whose messages are replies."""
    handles = tuple(agents or ())
    return Target(
        source="tickets",
        table="tickets",
        key=("ticket_id",),
        columns=COLUMNS,
        stage=lambda keys: stage_sql(keys, mapping or {}, handles),
        redact=("user_id", "subject", "body", "question", "extra"),
        macros=MACROS,
        reshape=reshape,
        reshapes=is_helpscout,
    )
