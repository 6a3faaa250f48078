"""Support tickets into ``tickets``: every ticket is a search that failed.

The stored question is what the customer asked: the subject plus the first question of the body,
with greetings, quoted replies and signatures dropped (in SQL, over the whole batch). The full
description is kept, redacted, for reading.
"""

from __future__ import annotations

from typing import Any

from goldmine.ingest.batch import Target, field_access, resolve_fields, typ, val

from goldmine.errors import InputError

ALIASES: dict[str, tuple[str, ...]] = {
    "ticket_id": ("ticket_id", "id", "ticket", "number", "key"),
    "ts": ("created_at", "ts", "timestamp", "created", "date", "time"),
    "user_id": ("requester_id", "user_id", "requester", "submitter_id", "customer_id"),
    "subject": ("subject", "title", "summary", "raw_subject"),
    "body": ("description", "body", "text", "message", "content", "question"),
    "comments": ("comments",),
    "status": ("status", "state"),
}

COLUMNS = ("ticket_id", "ts", "user_id", "subject", "body", "question", "status", "extra")

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
MACROS = f"""
CREATE OR REPLACE TEMP MACRO gm_ticket_text(b) AS trim(regexp_replace(
    regexp_replace(regexp_replace(regexp_replace(chr(10) || b, '{_QUOTED_TAIL}', ''),
        '{_QUOTED_LINE}', '', 'g'), '{_SIGNATURE}', ''),
    '{_GREETING}', ''));
CREATE OR REPLACE TEMP MACRO gm_first_question(b) AS
    nullif(trim(regexp_extract(b, '([^.!?\\n]*\\?)', 1)), '');
CREATE OR REPLACE TEMP MACRO gm_first_sentence(b) AS
    nullif(left(trim(regexp_extract(b, '^\\s*([^\\n]*?[.!?]|[^\\n]+)', 1)), 300), '');
"""


def question_sql(subject: str, body: str) -> str:
    """SQL: subject plus the first question of the cleaned body (or its first sentence)."""
    clean = f"gm_ticket_text({body})"
    first = f"coalesce(gm_first_question({clean}), gm_first_sentence({clean}))"
    return (
        f"CASE WHEN nullif(trim({subject}), '') IS NULL THEN {first}"
        f" WHEN gm_first_question({clean}) IS NULL THEN trim({subject})"
        f" ELSE trim({subject}) || ': ' || gm_first_question({clean}) END"
    )


def stage_sql(keys: list[str], mapping: dict[str, str]) -> tuple[str, dict[str, Any]]:
    fields = resolve_fields(keys, ALIASES, mapping)
    if keys and not ({"subject", "body"} & set(fields)):
        raise InputError(
            "no subject or description field (looked for subject, title, description, body, "
            "text); name one with --map subject=COLUMN or --map body=COLUMN"
        )
    known = {k for names in fields.values() for k in names}
    access, params = field_access(fields, [k for k in keys if k not in known], ("subject",))
    subject, ts = val(fields, "subject"), val(fields, "ts")
    comments = val(fields, "comments")
    body = (
        f"coalesce({val(fields, 'body')}, "
        f"json_extract_string(try_cast({comments} AS JSON), '$[0].body'))"
    )
    content = f"concat_ws(chr(31), {ts}, {val(fields, 'user_id')}, {subject}, b)"
    extra = (
        f"CASE WHEN {comments} IS NOT NULL THEN to_json(map_from_entries(["
        f"('n_comments', json_array_length(try_cast({comments} AS JSON))::VARCHAR::JSON)]))"
        f"::VARCHAR ELSE x END"
    )
    sql = f"""
        SELECT line, raw,
            CASE WHEN err IS NOT NULL THEN err
                 WHEN nullif(trim({subject}), '') IS NULL AND nullif(trim(b), '') IS NULL
                     THEN 'missing subject and description'
                 WHEN {typ(fields, "subject")} NOT IN ('VARCHAR', 'NULL')
                     THEN 'wrong type: subject is ' || gm_jtype({typ(fields, "subject")})
                 WHEN {ts} IS NOT NULL AND t IS NULL
                     THEN 'unparseable timestamp: ' || left({ts}, 60)
            END AS reason,
            coalesce({val(fields, "ticket_id")}, 'h-' || md5({content})) AS ticket_id,
            t AS ts,
            {val(fields, "user_id")} AS user_id,
            trim({subject}) AS subject,
            b AS body,
            {question_sql(subject, "b")} AS question,
            {val(fields, "status")} AS status,
            {extra} AS extra
        FROM (SELECT *, {body} AS b, gm_ts({ts}) AS t FROM ({access}))
    """
    return sql, params


def target(mapping: dict[str, str] | None = None) -> Target:
    return Target(
        source="tickets",
        table="tickets",
        key=("ticket_id",),
        columns=COLUMNS,
        stage=lambda keys: stage_sql(keys, mapping or {}),
        redact=("subject", "body", "question", "extra"),
        macros=MACROS,
    )
