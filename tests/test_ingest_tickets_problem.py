"""A ticket whose message asks no question: the sentence that states the problem is its query,
and a ticket that states none (thanks, a complaint, a follow-up) is kept but tagged
``no-question`` so triage and the starter leave it out.

Cases are real support tweets of the Customer Support on Twitter sample (../shared/datasets),
written out here so the unit cases run without it; the whole sample runs through the CLI when
../shared is present.
"""

from __future__ import annotations

import json

import duckdb
import pytest

from goldmine.ingest import api
from goldmine.store import open_store
from goldmine.triage.events import ticket_rows


def chosen(con: duckdb.DuckDBPyConnection, body: str) -> tuple[str | None, bool]:
    got = con.execute(
        "SELECT gm_ticket_query(gm_ticket_text(?)), gm_no_question(gm_ticket_text(?))",
        [body, body],
    ).fetchall()[0]
    return got[0], got[1]


@pytest.mark.parametrize(
    ("body", "query"),
    [
        (
            "@SpotifyCares @Spotify Please help! Spotify Premium skipping through songs constantly "
            "on android tablet &amp; bluetooth speaker. Tried everything!",
            # Twitter's text escapes & < > as HTML does: the query reads as the customer wrote
            "Spotify Premium skipping through songs constantly on android tablet & bluetooth "
            "speaker.",
        ),
        (
            "First flight for long time with @Lufthansa. Now over one 1h delay for the short jump "
            "FRA-LCY and NO one here to provide status updates",
            "Now over one 1h delay for the short jump FRA-LCY and NO one here to provide status "
            "updates",
        ),
        (
            "@Tesco Done all that. Still telling me there are no delivery slots whatsoever.",
            "Still telling me there are no delivery slots whatsoever.",
        ),
        (
            "@AmericanAir Thanks for your answer. Response onsite was that Aircraft will not "
            "depart today, so rebooking",
            "Response onsite was that Aircraft will not depart today, so rebooking",
        ),
        # A question still wins over a problem stated before it.
        (
            "after the 11.0.2 update my phone is slow. Any fix?",
            "Any fix?",
        ),
    ],
)
def test_the_sentence_that_states_the_problem_is_taken(ticket_sql, body, query):
    assert chosen(ticket_sql, body) == (query, False)


@pytest.mark.parametrize(
    ("body", "query"),
    [
        # Help desks export a ticket's description as HTML (Freshdesk's description, Zendesk's
        # html_body, Intercom's parts): the question is the text the customer wrote, not tags.
        (
            "<div><p>Hello team,</p><p>How do I export my data to CSV?</p><br/>Regards</div>",
            "How do I export my data to CSV?",
        ),
        ("<p>My card &amp; PIN don&#39;t work &mdash; why?</p>", "My card & PIN don't work — why?"),
        (
            "<html><head><style>p {color: red}</style></head><body><p>Can I pay&nbsp;by "
            "invoice?</p><script>track()</script></body></html>",
            "Can I pay by invoice?",
        ),
        ("Is 3 &lt; 5 &#x1F600; ok?", "Is 3 < 5 😀 ok?"),
        ("A bare & and an &#0; or &#99999999; stay as written?", "A bare & and an &#0; or "
         "&#99999999; stay as written?"),
    ],
)  # fmt: skip
def test_a_html_message_is_read_as_its_text(ticket_sql, body, query):
    assert chosen(ticket_sql, body) == (query, False)


@pytest.mark.parametrize(
    ("body", "query"),
    [
        # Questions asked with another script's question mark, and sentences ended by 。
        ("我昨天下单了。为什么还没有发货？谢谢。", "为什么还没有发货？"),
        ("昨日注文しました。いつ届きますか？よろしくお願いします。", "いつ届きますか？"),
        ("شكرا لكم. متى يصل طلبي؟ لقد انتظرت أسبوعا.", "متى يصل طلبي؟"),
        # Greek's question mark (U+037E), not a semicolon
        ("Ευχαριστώ. Πού είναι η παραγγελία μου\u037e", "Πού είναι η παραγγελία μου\u037e"),
        # Problems stated, not asked, in other languages
        ("Mon colis n'est pas arrivé. Merci de vérifier.", "Mon colis n'est pas arrivé."),
        ("Meine Karte funktioniert nicht. Danke.", "Meine Karte funktioniert nicht."),
        ("Спасибо. Мой заказ не пришел.", "Мой заказ не пришел."),
        ("我的卡不能用了。", "我的卡不能用了。"),
        ("Gracias. La app no funciona desde ayer.", "La app no funciona desde ayer."),
        ("ログインできません。助けてください。", "ログインできません。"),
    ],
)
def test_questions_and_problems_in_other_languages_are_found(ticket_sql, body, query):
    """Tickets asked with ？ ؟ or ; or stating their problem in German, French, Russian, Chinese
    or Japanese were tagged no-question and left out of triage (a probe's tweets: 10 of 13)."""
    assert chosen(ticket_sql, body) == (query, False)


@pytest.mark.parametrize(
    "body",
    [
        "@sprintcare I really hope you all change but I'm sure you won't! "
        "Because you don't have to!",
        "@AppleSupport Brilliant thanks 😊",
        "@AppleSupport Super help - problem solved 😀 once again in love with Apple",
        "@SpotifyCares seems to be working at this stage. Will let you know if it happens again.",
        "@Tesco Uk offlicense law is 18. Not 25",
        "@AppleSupport I am! Thank you for the answer!!",
    ],
)
def test_a_message_that_states_no_problem_is_tagged_no_question(ticket_sql, body):
    query, no_question = chosen(ticket_sql, body)
    assert no_question is True
    assert query  # kept, with its first sentence as text: nothing is lost


def test_tweets_without_a_question_are_kept_and_left_out_of_triage(shared_dataset, db_path):
    with open_store(db_path) as con:
        api.tickets(con, [shared_dataset("datasets", "twcs_sample", "sample.csv")])
        rows = con.execute(
            "SELECT question, no_question FROM tickets ORDER BY ticket_id"
        ).fetchall()
        to_triage = con.execute(f"SELECT count(*) FROM ({ticket_rows()})", [None, None]).fetchall()[
            0
        ][0]
    tagged = [q for q, flag in rows if flag]
    assert len(rows) == 49  # every customer tweet is kept
    assert "I really hope you all change but I'm sure you won't!" in tagged
    assert not [q for q, flag in rows if flag and q.endswith("?")]
    assert to_triage == len(rows) - len(tagged)
    # Measured by hand on this sample (see the closing note): of 36 tweets with no question,
    # 13 state no problem (thanks, follow-ups, complaints with nothing to search for).
    assert 10 <= len(tagged) <= 16


def test_the_account_says_how_many_were_tagged(shared_dataset, db_path, cli):
    sample = shared_dataset("datasets", "twcs_sample", "sample.csv")
    out = cli("ingest", "tickets", str(sample), "--json", "--db", str(db_path))
    (entry,) = json.loads(out.stdout)["files"]
    with duckdb.connect(str(db_path), read_only=True) as con:
        tagged = con.execute("SELECT count(*) FROM tickets WHERE no_question").fetchall()[0][0]
    assert entry["no_question"] == tagged > 0
    assert f"{tagged} tagged no-question" in entry["note"]
