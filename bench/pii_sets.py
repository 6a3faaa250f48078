"""Writes the labelled PII sets bench_pii.py scores redaction on (tests/fixtures/pii_*.jsonl).

Each line: ``{"text", "spans": [[start, end, TYPE], ...], "group"}``. The values are written by
hand in each type's national formats and put into sentences; look-alikes (ISBNs, order numbers,
barcodes, timestamps, versions, C++ names, UUIDs, prices, dates, coordinates) have no span.
``tuning`` is the set the rules were tuned on; ``heldout`` has other values and sentences and
was not looked at while tuning. Run: ``.venv/bin/python bench/pii_sets.py`` (deterministic).
"""

from __future__ import annotations

import json
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"

TUNING = {
    "PHONE": [
        "(415) 555-2671",
        "415-555-2671",
        "415.555.2671",
        "+1 415 555 2671",
        "1-800-555-0199",
        "+1 (212) 555-0187",
        "020 7946 0958",
        "+44 20 7946 0958",
        "+44 7911 123456",
        "07911 123456",
        "0161 496 0000",
        "030 12345678",
        "+49 30 12345678",
        "0049 89 1234567",
        "089/1234567",
        "0151 23456789",
        "+49 151 23456789",
        "06 12 34 56 78",
        "01 23 45 67 89",
        "+33 6 12 34 56 78",
        "+33 (0)1 23 45 67 89",
        "06.12.34.56.78",
        "98765 43210",
        "+91 98765 43210",
        "+91-9876543210",
        "022 2345 6789",
        "+81 3-1234-5678",
        "+61 2 9876 5432",
        "+34 912 345 678",
        "+39 06 1234 5678",
        "+55 11 91234-5678",
        "+31 20 123 4567",
    ],
    "PHONE_BARE": ["4155552671", "0612345678", "9876543210", "07911123456", "03012345678"],
    "EMAIL": [
        "jane.doe@example.com",
        "j.smith+orders@mail.example.co.uk",
        "anna@bücher.example",
        "josé.garcía@correo.example.es",
        "MAX.MUSTERMANN@FIRMA.EXAMPLE.DE",
        "priya_k@example.in",
        "o'brien@example.ie",
        "user@xn--bcher-kva.example",
        "m.dupont@orange.example.fr",
    ],
    "CARD": [
        "4111 1111 1111 1111",
        "4012-8888-8888-1881",
        "5500 0000 0000 0004",
        "5105105105105100",
        "2223 0000 4841 0010",
        "3782 822463 10005",
        "371449635398431",
        "6011 1111 1111 1117",
        "3530 1113 3330 0000",
        "3056 9309 0259 04",
        "4000056655665556",
    ],
    "IBAN": [
        "GB82 WEST 1234 5698 7654 32",
        "DE89 3704 0044 0532 0130 00",
        "FR14 2004 1010 0505 0001 3M02 606",
        "ES91 2100 0418 4502 0005 1332",
        "NL91ABNA0417164300",
        "BE68 5390 0754 7034",
        "IT60 X054 2811 1010 0000 0123 456",
        "CH93 0076 2011 6238 5295 7",
        "de89370400440532013000",
        "gb82 west 1234 5698 7654 32",
    ],
    "IPV4": ["192.168.1.20", "10.0.0.1", "203.0.113.45", "8.8.8.8", "172.16.254.1"],
    "IPV6": [
        "2001:db8::1",
        "2001:0db8:85a3:0000:0000:8a2e:0370:7334",
        "fe80::1ff:fe23:4567:890a",
        "::ffff:192.0.2.128",
        "2001:DB8:0:0:8:800:200C:417A",
        "::1",
    ],
    "HANDLE": ["@support_team", "@jane_doe", "@AcmeHelp"],
    # Added with SSN, NINO, SECRET and the URL-encoded email (tuning only: the held-out set was
    # written before any tuning, and these were written with the rules).
    "EMAIL_URL": ["jane%40example.net", "jane.doe%2Bnews%40mail.example.org"],
    "SSN": ["123-45-6789", "078-05-1120", "219-09-9999"],
    "NINO": ["AB 12 34 56 C", "CE123456D"],
    "SECRET": [
        "AKIAIOSFODNN7EXAMPLE",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJqYW5lIn0.abcDEF123_-xyz",
        "ghp_1234567890abcdefghijABCDEFGHIJ123456",
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    ],
    "SECRET_AFTER": ["9f8e7d6c5b4a39281706f5e4d3c2b1a0", "tok_4f9a8b7c6d5e4f3a2b1c"],
}
TUNING_TEMPLATES = {
    "PHONE": [
        "please call me back on {}",
        "appelez-moi au {} svp",
        "meine Nummer: {}",
        "reach our office at {} before 5pm",
        "{} is my mobile",
        "tel {} (evenings)",
    ],
    "PHONE_BARE": ["call me at {}", "mon portable {}", "Handy {} bitte", "mobile no {}"],
    "EMAIL": [
        "send the invoice to {}",
        "écrivez à {} merci",
        "Kontakt: {}.",
        "my email is <{}>",
    ],
    "CARD": ["charged twice on card {}", "Karte {} abgelehnt", "carte {} refusée"],
    "IBAN": ["refund to {} please", "IBAN: {}", "virement sur {} svp"],
    "IPV4": ["login failed from {}", "blocked ip {}:8080", "server {} is down"],
    "IPV6": ["login from {} blocked", "host [{}]:443 unreachable", "source address {}"],
    "HANDLE": ["thanks {} for the help", "{} my parcel is late", "cc {}"],
    "EMAIL_URL": ["login?user={}&next=/", "https://x.example/reset?email={}"],
    "SSN": ["my ssn {} please", "SSN: {}", "{} is on the form"],
    "NINO": ["NI number {}", "nino={}&step=2", "{} on my payslip"],
    "SECRET": ["key {} denied", "why does {} fail", 'config "token": "{}",'],
    "SECRET_AFTER": ["Authorization: Bearer {}", "api_key={}", "password: {} fails"],
}
TUNING_LOOKALIKES = [
    "ISBN 0306406152",
    "isbn 0-306-40615-2",
    "ISBN 978-0-306-40615-7",
    "book 9780306406157",
    "order 0012345678 not arrived",
    "Bestellung 0098765432",
    "commande n° 0612345678 annulée",
    "order #1234567890",
    "EAN 4006381333931",
    "barcode 5901234123457",
    "upc 036000291452",
    "scan 012345678905",
    "id 00000000-0000-0000-0000-000000000000",
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    "Wed Oct 10 20:19:24 +0000 2017",
    "created_at: Thu Apr 06 15:24:15 +0000 2017",
    "2017-10-20 10:30:00",
    "10/20/2017 14:05",
    "20.10.2017",
    "version 1.2.3.4",
    "v10.0.19041.1",
    "build 2.31.0",
    "Face::Detect failed",
    "std::vector<int> crash",
    "boost::asio::ip::tcp",
    "Dead::Beef",
    "price $1,299.00",
    "costs € 12 345,67",
    "1 299 000 euros",
    "coordinates 48.8566, 2.3522",
    "lat 40.7128 lon -74.0060",
    "ratio 16:9 display",
    "John 3:16",
    "meeting at 10:30",
    "score 3-1 at 90:00",
    "room 1204 floor 12",
    "zip 94103",
    "75008 Paris",
    "SKU-12345678",
    "tracking 1Z999AA10123456784",
    "card 4111 1111 1111 1112",
    "iban GB82 WEST 1234 5698 7654 33",
    "ip 999.1.1.1",
    "256.256.256.256",
    "MAC 00:1A:2B:3C:4D:5E",
    "sha 3f786850e387550fdab836ed7e6dc881de23001b",
    "population 1 234 567",
    "invoice 2023-000123",
    "case 00123456",
    "part no. 0-123-456-789-0",
    "pay 12.50 for 3 items",
    "call of duty 2",
    "iPhone 15 pro 256gb",
    "RTX 4090 24GB",
    "unix time 1508444364",
    "timestamp 1700000000000",
    "phone case for galaxy s23",
    "1990-2020 statistics",
    "pages 1234-5678",
    "serial 4111111111111111",
    "room 000-12-3456",
    "part 123-45-678",
    "AB123456 is my order",
    "token expired after login",
    "password: forgotten",
    "primary key: user_id",
    "sk-ii-facial-treatment-essence-230ml",
    "bearer authentication-required-error",
    "basic information about accounts",
    "meet (at) noon",
    "100%40 off",
]
HELDOUT = {
    "PHONE": [
        "(646) 555-0142",
        "312-555-0198",
        "+1 202 555 0173",
        "1 (888) 555-0101",
        "0113 496 0123",
        "+44 113 496 0123",
        "07700 900461",
        "+44 7700 900461",
        "040 98765432",
        "+49 40 98765432",
        "0711/2345678",
        "0170 1234567",
        "0049 170 1234567",
        "04 78 12 34 56",
        "+33 4 78 12 34 56",
        "07 81 23 45 67",
        "+33 (0)7 81 23 45 67",
        "81234 56789",
        "+91 81234 56789",
        "080 2345 6789",
        "+91 80 2345 6789",
        "+86 10 1234 5678",
        "+7 495 123-45-67",
        "+27 21 123 4567",
        "+52 55 1234 5678",
        "+353 1 234 5678",
        "+46 8 123 456 78",
    ],
    "PHONE_BARE": ["6465550142", "0478123456", "8123456789", "04098765432"],
    "EMAIL": [
        "p.nguyen@example.org",
        "support+ticket42@help.example.com",
        "müller@straße.example",
        "zoë.smith@example.net",
        "RAJ.PATEL@EXAMPLE.CO.IN",
        "first_last@sub.domain.example",
        "x-y.z@example.travel",
    ],
    "CARD": [
        "4242 4242 4242 4242",
        "5555-5555-5555-4444",
        "378282246310005",
        "6011000990139424",
        "3566 0020 2036 0505",
        "2720 9900 0000 0007",  # (first written ...0005, which fails Luhn: no card)
        "36227206271667",
    ],
    "IBAN": [
        "AT61 1904 3002 3457 3201",
        "PL61 1090 1014 0000 0712 1981 2874",
        "SE45 5000 0000 0583 9825 7466",
        "ie29aibk93115212345678",
        "NO93 8601 1117 947",
        "FR76 3000 6000 0112 3456 7890 189",
        "DE44 5001 0517 5407 3249 31",
    ],
    "IPV4": ["198.51.100.7", "100.64.0.1", "1.1.1.1", "192.0.2.255"],
    "IPV6": [
        "2001:db8:85a3::8a2e:370:7334",
        "fe80::a00:27ff:fe4e:66a1",
        "::ffff:10.0.0.1",
        "2606:4700:4700::1111",
        "FE80::1",
    ],
    "HANDLE": ["@help_desk", "@MariaG"],
    # Added later, for the types that came after the set was written (SSN, NINO, SECRET):
    # values and sentences as forms, tickets and pasted config write them, by someone who had
    # read the rules (not blind), before the change that followed them.
    "SSN": ["536-22-8817", "401-86-3390", "212-67-4403", "611 48 2207", "287659014"],
    "NINO": ["JG 10 37 35 B", "SN432891D", "PX 10 45 36 A", "yk 48 62 19 a", "WP 75 08 21 C"],
    "SECRET": [
        "AKIAJ4ZQ7XH2MPL3RT6B",
        "ghp_R8x2Kq9LmN4vB7cT1zW5yH3jF6dS0aE2pQ8u",
        "github_pat_11AJKQ3NI0dGx7YbQ2vR5s_Kp8mW3nT6yL9cB2xF5hJ8kQ1wE4rT7yU0iO3pA6sD9fG2hJ5kL8zX1cV4",
        "xoxb-2048169382-5514372890123-Zk8pQ3rT7vX1yB4nM6cW9eLa",
        "sk-proj-Xb3kQ9mZ7vT2pR8wL4nY6cH1dF5gJ0sA-_eU3iO7tK2qW9zM4xB8vT3BlbkFJqW8eR5tY2uI9oP1aS4dF7g",
        "sk_live_51HqLyjWDarjtT1zdp7dcXbQ9sP2m",
        "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
        "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJzdWIiOiI4ODEyIiwiZXhwIjoxNzAwMDAwMDAwfQ.Qm9n",
    ],
    "SECRET_AFTER": [
        "Summer2024!",
        "8d7f6e5a4b3c2d1e0f9a8b7c6d5e4f3a",
        "3Qz8~vLp_Kx2.Ny7Rm4-Tw9Hb",
    ],
}
HELDOUT_TEMPLATES = {
    "PHONE": [
        "you can text {} anytime",
        "merci de rappeler le {}",
        "erreichbar unter {}",
        "number changed to {}, please update",
        "{} — ask for Sam",
    ],
    "PHONE_BARE": ["whatsapp {}", "numéro {}", "Telefon {}", "ph {}"],
    "EMAIL": ["reply to {} thanks", "E-Mail an {} gesendet", "mail: {} (work)"],
    "CARD": ["my card {} was declined", "refund on {} please"],
    "IBAN": ["bank account {} for the refund", "Kontoverbindung {}"],
    "IPV4": ["requests from {} time out", "whitelist {} please"],
    "IPV6": ["client {} rejected", "ping {} fails"],
    "HANDLE": ["{} any update?", "hello {} my order"],
    "SSN": [
        "SSN {} for the tax form",
        "employee ssn: {}, dob 04/12/1985",
        "update my social security number to {}",
        "ss# {} wrong on paystub",
    ],
    "NINO": ["National Insurance number {}", "my NI no is {} thanks", "NINO: {}"],
    "SECRET": [
        "is {} still valid?",
        "export TOKEN={}",
        "curl -H 'X-Api-Key: {}' https://api.example.com/v1",
        "leaked {} in a public repo",
    ],
    "SECRET_AFTER": [
        "db_password={}",
        "Authorization: Bearer {}",
        '"client_secret": "{}",',
    ],
}
HELDOUT_LOOKALIKES = [
    "ISBN-10 0-19-852663-6",
    "isbn 0198526636",
    "ISBN 978-3-16-148410-0",
    "order 0044123456",
    "Auftrag 0151234567 storniert",
    "ref 0033612345678",
    "EAN 7622210449283",
    "upc 012345678905",
    "nil uuid 00000000-0000-0000-0000-000000000000",
    "tweet created Mon Jan 01 00:00:00 +0000 2018",
    "deadline 2024-12-31",
    "born 31.12.1990",
    "12/31/2024 11:59 PM",
    "version 4.19.0.2",
    "Qt::AlignLeft not working",
    "cv::Mat to numpy",
    "ns::Cafe::Bad",
    "€1.499,00",
    "costs 2 499 990 rupees",
    "GPS 51.5074, -0.1278",
    "1.3521° N, 103.8198° E",
    "aspect 21:9",
    "Psalm 23:4",
    "halftime 45:00",
    "zip 10115 Berlin",
    "PO box 12345",
    "SKU 00012345678905",
    "card ending 1111",
    "iban DE89 3704 0044 0532 0130 01",
    "ip 300.1.2.3",
    "route 10.0.0",
    "MAC aa:bb:cc:dd:ee:ff",
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "galaxy s24 ultra 512gb",
    "model 2110-0001 spare part",
    "rank 1 of 1234567",
    "flight LH 400 at 10:35",
    "epoch 1700000000",
    "serial no 0-306-40615-2",
    # Look-alikes of the later types, and of order numbers, ZIP+4, ISBNs, versions and ids.
    "order 114-5829301-7745123 never arrived",
    "ship to Austin, TX 78701-4512",
    "zip+4 94103-1234",
    "ISBN 979-10-90636-07-1",
    "ISBN 0-14-044913-1 paperback",
    "chrome 120.0.6099.109 crash",
    "windows 10.0.22631.2861 update fails",
    "node v18.17.1 npm error",
    "request id 3fa85f64-5717-4562-b3fc-2c963f66afa6",
    "uuid 550e8400-e29b-41d4-a716-446655440000 not found",
    "git sha a1b2c3d4e5f60718293a4b5c6d7e8f9012345678",
    "fixed in 4e1d2c7",
    "2024-03-15T08:30:00Z timeout",
    "due 15/03/2024",
    "March 15, 2024 statement",
    "case 2024-01-0042 escalated",
    "what is a bearer token",
    "api key not working",
    "forgot password for my account",
    "AKIA prefix meaning aws",
    "how to rotate ghp_ tokens",
    "private key: where is it stored",
    "ssn format xxx-xx-xxxx",
    "national insurance number lost",
    "postcode SW1A 1AA",
    "flight BA2490 delayed",
    "invoice INV-2024-000981",
    "tracking 9400 1000 0000 0000 0000 00",
]


# Groups that are written another way but are of a type already named.
_KIND = {"PHONE_BARE": "PHONE", "EMAIL_URL": "EMAIL", "SECRET_AFTER": "SECRET"}


def _lines(values: dict, templates: dict, lookalikes: list[str]) -> list[dict]:
    out = []
    for group, vals in values.items():
        kind = _KIND.get(group, group)
        tpls = templates[group]
        for i, value in enumerate(vals):
            for j in range(3 if len(tpls) >= 3 else len(tpls)):
                template = tpls[(i + j) % len(tpls)]
                start = template.index("{}")
                text = template.format(value)
                out.append(
                    {"text": text, "spans": [[start, start + len(value), kind]], "group": group}
                )
    out += [{"text": t, "spans": [], "group": "lookalike"} for t in lookalikes]
    return out


def main() -> None:
    for name, parts in (
        ("tuning", (TUNING, TUNING_TEMPLATES, TUNING_LOOKALIKES)),
        ("heldout", (HELDOUT, HELDOUT_TEMPLATES, HELDOUT_LOOKALIKES)),
    ):
        lines = _lines(*parts)
        path = FIXTURES / f"pii_{name}.jsonl"
        path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
        print(f"{path}: {len(lines)} lines")


if __name__ == "__main__":
    main()
