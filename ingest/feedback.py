"""What a user's verdict on an answer looks like in chat logs and traces, read the same in both.

A chat turn's feedback and a trace's feedback label are free text ("thumbs_down", "-1", "👎");
``thumbs`` maps the spellings to 'down' or 'up' in SQL, and ``DONT_KNOW`` is the pattern of an
assistant turn that says it cannot answer. ``ingest.chat`` and ``ingest.traces`` both read these,
so a spelling added here counts in both.
"""

from __future__ import annotations

# Spelled after ``thumbs`` folds case, hyphens, spaces and emoji skin tones: a 1/0 widget, a
# boolean score's text (Langfuse's "True"/"False") and "Thumbs Down" are all verdicts.
DOWN = (
    "('down', 'thumbs_down', 'thumbsdown', '-1', '0', 'false', 'negative', 'bad', 'dislike', '👎')"
)
UP = "('up', 'thumbs_up', 'thumbsup', '1', '+1', 'true', 'positive', 'good', 'like', '👍')"
DONT_KNOW = (
    r"(?i)\b(i (do not|don't|don’t) know|i'?m not sure|i am not sure|i (could not|couldn't|can't|"
    r"cannot|can’t) (find|answer|help with)|(do not|don't|don’t) have (that|any|enough) "
    r"information|no information (about|on)|unable to (find|answer|help)|not able to "
    r"(find|answer|help)|outside (of )?my knowledge"
    # German, French, Spanish, Portuguese, Italian; Russian, Chinese and Japanese below, whose
    # words RE2's ASCII \b cannot bound
    r"|(weiß|weiss) ich (leider )?nicht|ich (weiß|weiss) (es |das )?(leider )?nicht|"
    r"(habe ich |ich habe )?keine informationen|kann ich (leider )?nicht (beantworten|finden)|"
    r"je ne (le )?sais pas|je n['’]ai pas (cette |d['’]|assez d['’]|les )?information|"
    r"je ne (peux|suis pas en mesure de) (pas )?(répondre|trouver)|no (lo )?sé|"
    r"no tengo (esa |suficiente |la )?información|no (puedo|logro) (responder|encontrar)|"
    r"não sei|não tenho (essa |a )?informação|non lo so|non (ho|dispongo di) informazioni)"
    r"|не знаю|нет информации|не могу (ответить|найти)|不知道|不清楚|没有相关信息|无法回答|"
    r"わかりません|分かりません|存じません|お答えできません|情報がありません"
)


def thumbs(label: str) -> str:
    """SQL: 'down' or 'up' when the column ``label`` spells one, else NULL. Case, spaces and
    hyphens (``Thumbs-Down``), emoji skin tones and the emoji presentation selector (👍🏼) do not
    matter: left in, each was a verdict silently lost."""
    folded = f"regexp_replace(lower(trim({label})), '([a-z])[ -]+([a-z])', '\\1_\\2', 'g')"
    low = f"regexp_replace({folded}, '[\\x{{1F3FB}}-\\x{{1F3FF}}\\x{{FE0F}}]', '', 'g')"
    return f"CASE WHEN {low} IN {DOWN} THEN 'down' WHEN {low} IN {UP} THEN 'up' END"
