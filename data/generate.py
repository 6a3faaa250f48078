# ruff: noqa: E501  (the sample texts are data: one line each reads better than wrapped)
"""Generate the demo's sample data, deterministically (seeded): ``python data/generate.py``.

A fictional shop, Northwind Outfitters: a corpus of policy, finance and HR chunks; ten days of
search traffic cut into two overlapping weeks (the Monday import of week 2 adds only days 8-10);
a Zendesk-style ticket export and a chat log. The traffic has what real traffic has: sessions with
reformulations, zero-result and no-click searches, typos, acronyms, follow-ups, questions the
corpus cannot answer, and PII that ingest must redact.
"""

from __future__ import annotations

import argparse
import json
import random
from datetime import datetime, timedelta
from pathlib import Path

SEED = 20261123
START = datetime(2026, 11, 16, 7, 0, 0)
OUT = Path(__file__).resolve().parent / "sample"

# (chunk id, doc id, title, text)
CHUNKS = [
    (
        "policy-1",
        "returns",
        "Returns: the window",
        "You can return most items within 30 days of delivery for a full refund. Items must be unworn, with tags attached.",
    ),
    (
        "policy-2",
        "returns",
        "Returns: how to send an item back",
        "Start a return from Orders in your account to get a prepaid label and a return authorisation (RMA) number. Drop the parcel at any post office.",
    ),
    (
        "policy-3",
        "returns",
        "Returns: sale and final-sale items",
        "Sale items can be returned within 14 days. Items marked final sale, gift cards and pierced jewellery cannot be returned.",
    ),
    (
        "policy-4",
        "returns",
        "Exchanges",
        "We do not swap items directly. Return the item for a refund and place a new order for the size or colour you want.",
    ),
    (
        "policy-5",
        "shipping",
        "Shipping times",
        "Standard delivery takes 3-5 working days and is free over 50 EUR. Express delivery arrives the next working day if ordered before 2 pm.",
    ),
    (
        "policy-6",
        "shipping",
        "International shipping",
        "We ship to the EU, the UK, Switzerland and Norway. Orders outside the EU may be charged import duties by the carrier.",
    ),
    (
        "policy-7",
        "shipping",
        "Tracking an order",
        "Your tracking link is in the dispatch email. Tracking updates can take 24 hours to appear after dispatch.",
    ),
    (
        "policy-8",
        "shipping",
        "Damaged or missing parcels",
        "If a parcel arrives damaged or does not arrive within 10 working days, contact us with your order number and photos; we send a replacement or refund.",
    ),
    (
        "policy-9",
        "orders",
        "Cancelling an order",
        "You can cancel an order within one hour of placing it from Orders in your account. After that it is packed and must be returned instead.",
    ),
    (
        "policy-10",
        "orders",
        "Changing the delivery address",
        "The delivery address can be changed until the order is dispatched. Contact customer care with the order number and the new address.",
    ),
    (
        "policy-11",
        "warranty",
        "Warranty on outdoor gear",
        "Tents, backpacks and jackets carry a two-year warranty against manufacturing defects. Wear and tear and misuse are not covered.",
    ),
    (
        "policy-12",
        "warranty",
        "Repairs",
        "We repair zips, seams and buckles on our own-brand gear free of charge within the warranty and at cost afterwards.",
    ),
    (
        "policy-13",
        "pricing",
        "Price match",
        "We match a lower price from an authorised retailer for the same item in stock, within 7 days of your purchase.",
    ),
    (
        "policy-14",
        "returns",
        "Refund timing",
        "Refunds are issued within 5 working days of the return reaching our warehouse. Your bank may take a further 3-5 days to show it.",
    ),
    (
        "policy-15",
        "loyalty",
        "Trail Club loyalty points",
        "Members earn one point per euro spent. 200 points give a 10 EUR voucher. Points expire after 24 months without a purchase.",
    ),
    (
        "policy-16",
        "privacy",
        "Your data",
        "We keep order data for 7 years for tax reasons. You can ask for a copy of your data or for your account to be deleted at any time.",
    ),
    (
        "policy-17",
        "stores",
        "Click and collect",
        "Order online and collect in store from the next day. Bring the collection email and an ID. Parcels are held for 10 days.",
    ),
    (
        "finance-1",
        "payments",
        "Payment methods",
        "We accept Visa, Mastercard, American Express, PayPal, Apple Pay and bank transfer.",
    ),
    (
        "finance-2",
        "payments",
        "Buy now, pay later",
        "Klarna lets you pay in three instalments (BNPL) with no interest. Klarna runs a credit check when you choose it.",
    ),
    (
        "finance-3",
        "refunds",
        "Where refunds go",
        "Refunds always go back to the original payment method. Refunds for gift card payments are issued as a new gift card.",
    ),
    (
        "finance-4",
        "invoices",
        "Invoices and VAT receipts",
        "A VAT invoice is attached to the dispatch email. Business customers can add a VAT number at checkout to receive a reverse-charge invoice.",
    ),
    (
        "finance-5",
        "payments",
        "Failed payments",
        "If your payment fails, the order is held for 24 hours. Check the card details or try another payment method.",
    ),
    (
        "finance-6",
        "payments",
        "Currencies",
        "Prices are in EUR. Cards in other currencies are charged in EUR and converted by your bank.",
    ),
    (
        "finance-7",
        "giftcards",
        "Gift cards",
        "Gift cards are valid for 3 years and can be used online and in store. Check the balance on the gift card page.",
    ),
    (
        "finance-8",
        "refunds",
        "Chargebacks",
        "If you open a chargeback with your bank, we pause the return until the bank closes the case.",
    ),
    (
        "hr-1",
        "leave",
        "Paid time off (PTO)",
        "Full-time employees get 28 days of paid time off a year, plus public holidays. Part-time staff get PTO pro rata.",
    ),
    (
        "hr-2",
        "leave",
        "Booking leave",
        "Book PTO in the HR portal at least two weeks ahead. Your manager approves it within five working days.",
    ),
    (
        "hr-3",
        "leave",
        "Sick leave",
        "Report sickness to your manager before your shift starts. From the fourth day a doctor's note is needed.",
    ),
    (
        "hr-4",
        "leave",
        "Parental leave",
        "Parents get 16 weeks of paid parental leave, which can be taken in up to three blocks before the child turns two.",
    ),
    (
        "hr-5",
        "pay",
        "Payroll dates",
        "Salaries are paid on the 25th of each month, or the working day before if the 25th is a weekend or holiday.",
    ),
    (
        "hr-6",
        "expenses",
        "Expense claims",
        "Submit expense claims with receipts in the HR portal within 30 days. Approved claims are paid with the next salary.",
    ),
    (
        "hr-7",
        "benefits",
        "Staff discount",
        "Employees get 30% off full-price items and 10% off sale items, online and in store, with their staff card.",
    ),
    (
        "hr-8",
        "work",
        "Remote work",
        "Office staff can work remotely up to two days a week by agreement with their manager. Store staff work on site.",
    ),
]

# (intent, the answer's chunk ids, ways people type it); an empty answer: the corpus has none.
INTENTS = [
    (
        "return window",
        ["policy-1"],
        [
            "return policy",
            "how many days to return",
            "retrun policy",
            "return within 30 days",
            "can i return worn shoes",
        ],
    ),
    (
        "send a return",
        ["policy-2"],
        [
            "how to return an item",
            "return label",
            "RMA number",
            "where do i get a return label",
            "return parcel post office",
        ],
    ),
    (
        "sale returns",
        ["policy-3"],
        ["return sale item", "final sale return", "can i return a gift card"],
    ),
    ("exchange", ["policy-4"], ["exchange size", "swap for a different colour", "exchnage jacket"]),
    (
        "shipping time",
        ["policy-5"],
        [
            "delivery time",
            "how long does shipping take",
            "shiping time",
            "express delivery",
            "free shipping",
        ],
    ),
    (
        "international",
        ["policy-6"],
        ["ship to uk", "do you ship to switzerland", "import duties", "customs fees norway"],
    ),
    (
        "tracking",
        ["policy-7"],
        [
            "track my order",
            "tracking number",
            "where is my parcel",
            "ETA of my order",
            "order status for jane.doe@example.com",
        ],
    ),
    (
        "damaged",
        ["policy-8", "policy-14"],
        ["parcel damaged", "item arrived broken", "package never arrived", "missing parcel"],
    ),
    ("cancel", ["policy-9"], ["cancel order", "cancel my order", "cancell order"]),
    ("address", ["policy-10"], ["change delivery address", "wrong address on order"]),
    (
        "warranty",
        ["policy-11", "policy-12"],
        ["warranty tent", "jacket zip broke", "repair backpack", "warrenty"],
    ),
    ("price match", ["policy-13"], ["price match", "cheaper elsewhere"]),
    (
        "refund time",
        ["policy-14", "finance-3"],
        [
            "when will i get my refund",
            "refund status",
            "refund not received",
            "refnd",
            "how long do refunds take",
        ],
    ),
    ("loyalty", ["policy-15"], ["trail club points", "loyalty points expire", "voucher points"]),
    ("privacy", ["policy-16"], ["delete my account", "GDPR data request", "what data do you keep"]),
    ("collect", ["policy-17"], ["click and collect", "pick up in store"]),
    ("payment methods", ["finance-1"], ["payment methods", "do you take amex", "pay with paypal"]),
    ("bnpl", ["finance-2"], ["klarna", "BNPL", "pay in instalments", "pay later"]),
    (
        "vat invoice",
        ["finance-4"],
        ["VAT invoice", "invoice for my order", "VAT number", "reverse charge invoice"],
    ),
    ("failed payment", ["finance-5"], ["payment failed", "card declined"]),
    ("gift card", ["finance-7"], ["gift card balance", "giftcard expiry"]),
    (
        "pto",
        ["hr-1", "hr-2"],
        ["PTO", "vacation days", "how many holidays do i get", "vacaton days", "book leave"],
    ),
    ("sick", ["hr-3"], ["sick leave", "doctors note"]),
    ("parental", ["hr-4"], ["parental leave", "maternity leave"]),
    ("payroll", ["hr-5"], ["payday", "when is payroll", "salary date"]),
    ("expenses", ["hr-6"], ["expense claim", "reimburse receipts"]),
    ("staff discount", ["hr-7"], ["staff discount", "employee discount"]),
    ("remote", ["hr-8"], ["work from home", "WFH policy", "remote work"]),
    # Not answered by the corpus: zero results or no good click.
    ("student discount", [], ["student discount", "unidays"]),
    ("opening hours", [], ["black friday opening hours", "store opening hours"]),
    ("pension", [], ["pension contributions", "401k match"]),
]
FOLLOW_UPS = [
    "and for sale items?",
    "what about express?",
    "and in store?",
    "how long does that take?",
]
ALL_IDS = [c[0] for c in CHUNKS]


def _results(rng: random.Random, answer: list[str], zero: bool) -> list[str]:
    if zero:
        return []
    shown = rng.sample([i for i in ALL_IDS if i not in answer], 9)
    for chunk_id in answer:
        if rng.random() < 0.8:
            shown.insert(rng.choice([0, 0, 1, 2, 4, 7]), chunk_id)
    return shown[:10]


def search_events(rng: random.Random, days: int = 10, sessions_per_day: int = 110) -> list[dict]:
    events = []
    for day in range(days):
        for s in range(sessions_per_day):
            start = START + timedelta(days=day, seconds=rng.randint(0, 14 * 3600))
            session = f"s{day:02d}{s:03d}"
            user = f"u{rng.randint(1, 400):04d}"
            intent, answer, phrasings = rng.choice(INTENTS)
            t = start
            for _step in range(rng.choice([1, 1, 1, 2, 2, 3])):
                query = rng.choice(phrasings)
                zero = not answer and rng.random() < 0.7
                shown = _results(rng, answer, zero)
                hits = [i for i in shown[:5] if i in answer]
                clicks = hits[:1] if hits and rng.random() < 0.75 else []
                if not clicks and shown and rng.random() < 0.2:
                    clicks = [shown[rng.randint(0, min(4, len(shown) - 1))]]
                event = {
                    "event_id": f"ev-{len(events) + 1:06d}",
                    "ts": t.isoformat() + "Z",
                    "session_id": session,
                    "user_id": user,
                    "query": query,
                    "result_ids": shown,
                    "num_results": len(shown),
                    "clicked_ids": clicks,
                }
                if not clicks and rng.random() < 0.1:
                    event["feedback"] = "negative"
                events.append(event)
                t += timedelta(seconds=rng.randint(8, 90))
                if clicks:
                    if rng.random() < 0.08:  # a follow-up that only makes sense in context
                        events.append(
                            {
                                **event,
                                "event_id": f"ev-{len(events) + 1:06d}",
                                "ts": t.isoformat() + "Z",
                                "query": rng.choice(FOLLOW_UPS),
                                "result_ids": _results(rng, [], False),
                                "clicked_ids": [],
                            }
                        )
                    break
    events.sort(key=lambda e: (e["ts"], e["event_id"]))
    return events


_GREETINGS = ["Hi team,", "Hello,", "Dear Northwind,", "Hey there!", ""]
_SIGNOFFS = ["Thanks,\n{name}", "Best regards,\n{name}", "Cheers\n{name}\nSent from my iPhone", ""]
_NAMES = ["Jana Novak", "Tom Berg", "Aisha Khan", "Luca Rossi", "Mia Schulz", "Sam Okafor"]
_TICKETS = [
    (
        "Refund not received",
        "I sent back my jacket two weeks ago. When will I get my refund? The order was paid with my card {card}.",
    ),
    (
        "Wrong size delivered",
        "I ordered boots in 42 and got 44. Can I swap them for the right size?",
    ),
    (
        "Parcel missing",
        "My tracking says delivered but nothing arrived. What should I do now? You can call me on {phone}.",
    ),
    (
        "Invoice with VAT number",
        "We are a company and need a VAT invoice. How do I add our VAT number to order {order}?",
    ),
    (
        "Change address",
        "I moved last week. Can you change the delivery address on my order {order}? My email is {email}.",
    ),
    (
        "Klarna question",
        "Does choosing Klarna affect my credit score? I want to pay in three parts.",
    ),
    ("Student discount?", "Do you offer a student discount? I could not find it on the site."),
    (
        "Tent pole broke",
        "The pole of my tent snapped on the second trip. Is this covered by the warranty?",
    ),
    (
        "Bank transfer refund",
        "I paid by bank transfer. Where will my refund go? My IBAN is {iban}.",
    ),
    (
        "Cancel my order please",
        "I ordered the wrong colour an hour ago, please cancel it. Is that still possible?",
    ),
]


def tickets(rng: random.Random, n: int = 60) -> dict:
    out = []
    for i in range(n):
        subject, body = rng.choice(_TICKETS)
        name = rng.choice(_NAMES)
        body = body.format(
            card=rng.choice(["4111 1111 1111 1111", "5500-0000-0000-0004", "4111 1111 1111 1112"]),
            phone=rng.choice(["+44 20 7946 0958", "+49 30 1234567", "(020) 7946 0958"]),
            order=f"NW-{rng.randint(100000, 999999)}",
            email=f"{name.split()[0].lower()}.{rng.randint(1, 99)}@example.com",
            iban=rng.choice(["GB82 WEST 1234 5698 7654 32", "DE89370400440532013000"]),
        )
        parts = [rng.choice(_GREETINGS), body, rng.choice(_SIGNOFFS).format(name=name)]
        if rng.random() < 0.3:
            parts.append("On Mon, 16 Nov 2026 Northwind Care wrote:\n> Thanks for contacting us.")
        created = START + timedelta(days=rng.randint(0, 9), seconds=rng.randint(0, 36000))
        out.append(
            {
                "id": 5000 + i,
                "created_at": created.isoformat() + "Z",
                "subject": subject,
                "description": "\n\n".join(p for p in parts if p),
                "requester_id": 90000 + rng.randint(1, 300),
                "status": rng.choice(["new", "open", "pending", "solved"]),
                "tags": rng.sample(["refund", "shipping", "billing", "warranty", "web"], 2),
                "comments": [
                    {"author_id": 1, "public": True, "body": "Thanks, we are looking into it."}
                ],
            }
        )
    return {"tickets": out, "count": len(out), "next_page": None}


_CHATS = [
    (
        "what is the return window?",
        "You can return most items within 30 days of delivery.",
        "and for sale items?",
        "Sale items can be returned within 14 days.",
    ),
    (
        "do you ship to norway?",
        "Yes, we ship to Norway; import duties may apply.",
        "how long does that take?",
        "I'm not sure, I don't have that information.",
    ),
    ("is there a student discount?", "I don't know of a student discount, sorry.", None, None),
    ("when is payday?", "Salaries are paid on the 25th of each month.", None, None),
    (
        "my refund is late, order NW-123456, email me at kim@example.org",
        "Refunds are issued within 5 working days of the return reaching us.",
        "it's been 3 weeks",
        "I'm not able to find that order.",
    ),
]


def chat(rng: random.Random, n: int = 40) -> list[dict]:
    turns = []
    for c in range(n):
        q1, a1, q2, a2 = rng.choice(_CHATS)
        t = START + timedelta(days=rng.randint(0, 9), seconds=rng.randint(0, 36000))
        conv = f"chat-{c + 1:04d}"
        for turn, (role, text) in enumerate(
            [("user", q1), ("assistant", a1), ("user", q2), ("assistant", a2)]
        ):
            if text is None:
                break
            row = {
                "conversation_id": conv,
                "turn": turn,
                "role": role,
                "text": text,
                "ts": (t + timedelta(seconds=20 * turn)).isoformat() + "Z",
            }
            if role == "assistant" and ("not" in text or "don't" in text) and rng.random() < 0.6:
                row["feedback"] = "thumbs_down"
            turns.append(row)
    return turns


def _jsonl(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def generate(out: Path = OUT, seed: int = SEED) -> list[Path]:
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    corpus = [
        {
            "id": cid,
            "doc_id": doc,
            "title": title,
            "text": text,
            "url": f"https://help.northwind.example/{doc}#{cid}",
            "section": cid.split("-")[0],
        }
        for cid, doc, title, text in CHUNKS
    ]
    events = search_events(rng)
    week1_end = (START + timedelta(days=7)).isoformat()
    week2_start = (START + timedelta(days=4)).isoformat()
    files = {
        "corpus.jsonl": corpus,
        "searchlog_week1.jsonl": [e for e in events if e["ts"] < week1_end],
        "searchlog_week2.jsonl": [e for e in events if e["ts"] >= week2_start],
        "chat.jsonl": chat(rng),
    }
    written = []
    for name, rows in files.items():
        _jsonl(out / name, rows)
        written.append(out / name)
    # Week 2 comes from a newer logger with a few rows ingest must reject, with the reason.
    with (out / "searchlog_week2.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"event_id": "ev-bad-1", "ts": "last tuesday", "query": "returns"}\n')
        handle.write('{"event_id": "ev-bad-2", "ts": "2026-11-26T10:00:00Z", "query": ""}\n')
        handle.write('{"event_id": "ev-bad-3", "ts": "2026-11-26T10:00:05Z", "query": "retu\n')
    path = out / "tickets.json"
    path.write_text(json.dumps(tickets(rng), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    written.append(path)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    for path in generate(args.out, args.seed):
        print(f"{path}  {path.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
