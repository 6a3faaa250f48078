"""Finding PII in one text: the candidates a regex finds, kept only when a validator agrees.

A regex alone cannot tell a phone number from an ISBN, an order number or a timestamp's ``+0000
2017``, nor a card from an EAN barcode, nor an IPv6 address from ``Face::Detect``. So each type is
matched on token boundaries and then validated: emails by shape (IDN domains allowed, a quoted
local part too, an @ with a space beside it when the local part is no word; also URL-encoded,
``jane%40example.net``, twice in a nested URL, ``%2540``, or as UTF-8 bytes, ``j%C3%BCrgen``; and
spelled ``jane [at] example [dot] com``), IPv6/IPv4 by ``ipaddress``, IBANs by ISO 7064 mod 97 and
their country's length, cards by Luhn *and* an issuer's prefix and length (both in groups, also
wrapped onto a second line), US SSNs by the SSA's ranges (``ddd-dd-dddd``, other layouts, dots too,
only after "SSN"), UK NI numbers by HMRC's prefixes (in capitals, or after "NI number"), the
configured regions' national identity numbers by python-stdnum's checks (``<NATIONAL_ID>``; a CPF
or a Chinese resident id after its name in any region), phone numbers by Google's libphonenumber
metadata (``phonenumbers``): valid for one of the configured regions, or for any country when
written with ``+``, ``%2B``, ``00`` or in a ``wa.me/`` link; an extension (``ext. 12``) goes with
its number; a ZIP+4 code is none, nor a date and its time (``07.12.2026 14:30``). A bare run of
digits (``4155552671``) is only a phone next to a word that says so (tel, call, Handy-Nr., appelez,
телефон, 电话, ...); a word such as order says not. Credentials (``<SECRET>``) are the formats that
carry their issuer's prefix (AWS key ids, JWTs, GitHub, GitLab, npm, Hugging Face, Slack, Stripe,
SendGrid, OpenAI-style and Google keys, Telegram bot tokens), the path of a Slack or Discord
webhook, the token after "Bearer", base64 "user:password" after "Basic", and the value after a name
such as ``api_key=`` or ``password:``; each must hold a digit, as generated keys do. A PEM private
key block is one ``<SECRET>``, and so is the password of a URL's user (a connection string,
``postgres://app:<SECRET>@db/prod``), the user and host kept.

This runs in Python, so the SQL side (``redact.py``) sends it only the texts that a cheap RE2
test (``CANDIDATE``) finds a candidate in: most queries never leave DuckDB. Both engines call
``redact`` (DuckDB through an Arrow UDF, Spark through a pandas UDF), so they agree by
construction.
"""

from __future__ import annotations

import ipaddress
import re
from functools import cache, lru_cache

DEFAULT_REGIONS = ("US", "GB", "DE", "FR", "IN")

# The literal starts of the credentials SECRET, _BEARER, _BASIC and _NAMED_SECRET find.
SECRET_MARKS = (
    r"AKIA|ASIA|ABIA|ACCA|eyJ|gh[pousr]_|github_pat_|xox[abposr]-|sk-|_live_|_test_|AIza"
    r"|glpat-|npm_|hf_|SG\.|[0-9]:AA|hooks\.slack\.com/|/api/webhooks/"
    r"|shp[acps][atsc]_|do[por]_v1_|xapp-|pypi-|ya29\.|ATATT3|sq0|dapi|PMAK-|lin_api_|ntn_"
    r"|gsk_|r8_|pplx-|xai-|whsec_|key-[a-f0-9]"
    r"|(?i:basic)\s+[A-Za-z0-9+/]{4,}[0-9+/=]"
    r"|(?i:bearer\s|(?:key|secret|token|passw(?:or)?d|pwd)[\"']?\s*[:=])"
    r"|(?i:\b(?:passw(?:or)?d|pwd)\s+(?:is|was)\s)"
    r"|-----BEGIN [A-Z0-9 ]*PRIVATE KEY"
    # a header's credential, curl's user, a short name, a key said in prose, a password in words
    # of other languages (RE2 reads \b as ASCII's: none before those)
    r"|(?i:authorization|\s(?:-u|--user)[\s=]|(?:pass|sig|signature)[\"']?\s*[:=])"
    r"|(?i:(?:key|token|secret)\s+(?:is|was)\s)"
    r"|(?i:(?:key|secret|token|passw(?:or)?d|pwd|pass|sig|signature)%(?:25)?3D)"
    r"|(?i:passwort|kennwort|mot de passe|mdp|contrase|senha|wachtwoord|has[lł]o|parola"
    r"|l[oö]senord|salasana|пароль|密码|パスワード)"
)
# The zero of each run of ten decimal digits past ASCII (Unicode category Nd, as Python 3.11's
# unicodedata lists them; a test checks the list against it): scanning every code point at
# import took 0.1 s of each command.
_DIGIT_ZEROS = (
    0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6,
    0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90,
    0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0,
    0xFF10, 0x104A0, 0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0,
    0x11650, 0x116C0, 0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x16A60, 0x16AC0,
    0x16B50, 0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E140, 0x1E2F0, 0x1E950, 0x1FBF0,
)  # fmt: skip
_OTHER_DIGITS = tuple((chr(zero + d), d) for zero in _DIGIT_ZEROS for d in range(10))


def _ranges(zeros: tuple[int, ...]) -> str:
    """An RE2 character class body of the ten digits from each of ``zeros``."""
    return "".join(f"\\x{{{z:04X}}}-\\x{{{z + 9:04X}}}" for z in zeros)


# RE2 (DuckDB) and Python read this the same: whether a text may hold anything below. A run of
# 7+ digits (phones, cards, IBANs, SSNs), a dotted quad, an @, hex around two colons, and the
# literal starts of the rest; a plain word such as "key" or "token" alone is not enough.
CANDIDATE = (
    r"@|[0-9](?:[ ./()\-\x{00A0}\x{2010}-\x{2013}\x{2007}\x{2009}\x{202F}"
    r"\x{00AD}\x{200B}-\x{200F}\x{2060}\x{FEFF}]{0,3}[0-9]){6,}"
    r"|[0-9]\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]"
    r"|[0-9A-Fa-f]:[0-9A-Fa-f]{0,4}:|::[0-9A-Fa-f]"
    # URL-encoded @ and +, "[at]", a UK NI number, a credential's literal start
    r"|%(?:25)?40|%2[Bb][0-9]|(?i:[\[({]\s*at\s*[\])}])"
    r"|[A-Za-z]{2} ?[0-9]{2} ?[0-9]{2} ?[0-9]{2} ?[A-Da-d]"
    # an Indian PAN, an Italian codice fiscale (too few digits in a row for the test above)
    r"|[A-Za-z]{5}[0-9]{4}[A-Za-z]|[A-Z]{6}[0-9LMNP-V]{2}[A-Z]"
    # a fullwidth digit, + or @ (typed with a CJK input method): find() reads them as ASCII
    r"|[\x{FF10}-\x{FF19}\x{FF0B}\x{FF20}]"
    # a digit of another script (find() reads it as ASCII too); an address spelled in words
    + "|["
    + _ranges(_DIGIT_ZEROS)
    + "]"
    + r"|(?i:\sat\s+[a-z0-9-]+\s+dot\s)"
    # a JSON escape (``\u0040``, ``\u00fc``): JSON text is read decoded (``_redact_json``)
    + r"|\\u[0-9A-Fa-f]{4}|&#(?:64|[xX]40);"
    + r"|"
    + SECRET_MARKS
)


def _python(pattern: str) -> re.Pattern:
    """An RE2 pattern in Python's re, which spells RE2's backslash-x{…} as the character."""
    return re.compile(re.sub(r"\\x\{([0-9A-F]{4,5})\}", lambda m: chr(int(m[1], 16)), pattern))


_CANDIDATE = _python(CANDIDATE)
# For an ASCII text (most queries: str.isascii is a flag CPython keeps), the test without the
# classes of characters past ASCII; the other scripts' digits cost a quarter of the test.
_CANDIDATE_ASCII = _python(
    CANDIDATE.replace("|[" + _ranges(_DIGIT_ZEROS) + "]", "").replace(
        r"|[\x{FF10}-\x{FF19}\x{FF0B}\x{FF20}]", ""
    )
)
# Read as ASCII, one character for one so that spans stay the text's: the fullwidth forms
# (U+FF01-FF5E, "０９０-１２３４", "jane＠example.com"), the ideographic space, the no-break space
# of text copied from a web page ("4111 1111 1111 1111"), and the figure, thin and narrow
# no-break spaces of French typography ("06 12 34 56 78" written with U+202F).
_FOLD = {
    **{c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)},
    **{c: " " for c in (0x00A0, 0x3000, 0x2007, 0x2009, 0x202F)},
    # Digits of other scripts (Arabic-Indic "٠٧٩١١", Persian, Devanagari, mathematical bold):
    # phonenumbers, Luhn and mod 97 read them as the digits they are.
    **{ord(c): ord("0") + int(d) for c, d in _OTHER_DIGITS},
}
# Characters that show nothing, typed or pasted inside an address or a number to slip past a
# filter ("john\u200b@example.com"): a soft hyphen, the zero-width space, joiners and marks,
# the word joiner and its kin, a BOM. They are looked through, and the span keeps them.
INVISIBLE = "\u00ad\u180e\u200b-\u200f\u2060-\u2064\ufeff"
_INVISIBLE = re.compile(f"[{INVISIBLE}]")
# An @ written as JSON's or JavaScript's escape, or as HTML's entity, in a text that is no JSON
# document (a payload pasted into a ticket, a JSON line cut short): read as the @ it is.
_ESCAPED_AT = r"\\u0040|&#(?:64|[xX]40);"
_HIDDEN = re.compile(f"[{INVISIBLE}]|{_ESCAPED_AT}")

# ASCII word characters bound the digit-based types, as RE2's \b did: "é4111…" is a card.
_W = r"A-Za-z0-9_"
# The last label is letters, so a hyphen and a number after it end the address: an id made of
# an address and a time (alice@example.com-1700000000).
_DOMAIN = r"(?:[^\W_](?:[\w-]*[^\W_])?\.)+(?:[^\W\d_]{2,}|xn--[a-z0-9-]+)(?![\w]|-[^\W\d_])"
EMAIL = re.compile(r"(?<![\w.%+'-])[\w.%+'-]*\w@" + _DOMAIN, re.IGNORECASE)
# A quoted local part (RFC 5322), as a mail client's address book writes one: "jane doe"@….
EMAIL_QUOTED = re.compile(r'"[^"\r\n\\]{1,64}"@' + _DOMAIN, re.IGNORECASE)
# An @ with a space beside it, as a phone keyboard's completion types one ("jane.doe @gmail.com"),
# if the local part is no word: it holds a dot, a digit, _ or + ("meet jane @ home.com" is prose).
EMAIL_SPACED = re.compile(r"(?<![\w.%+'-])([\w.%+'-]*\w)(?: @ ?|@ )" + _DOMAIN, re.IGNORECASE)
_NOT_A_WORD = re.compile(r"[._+0-9]")
IPV6 = re.compile(
    rf"(?<![{_W}:.])(?:[0-9a-f]{{0,4}}:){{2,7}}(?:[0-9a-f]{{1,4}}|(?:\d{{1,3}}\.){{3}}\d{{1,3}})?"
    # a colon after it that ends the sentence's clause ("from 2a02:…:4c01: can you") is prose
    rf"(?:%[{_W}.]+)?(?![{_W}]|:[{_W}:]|\.\d)",
    re.IGNORECASE,
)
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
IPV4 = re.compile(rf"(?<![{_W}.])(?:{_OCTET}\.){{3}}{_OCTET}(?![{_W}]|\.\d)")
# A line break where a ticket's body or a chat client wrapped a card or an IBAN.
_WRAP = r"[ \t]*\r?\n[ \t]*"
# Groups of four joined by a space or a hyphen; the last one or two may be shorter ("… 814 P2",
# as a form splits Brazil's 29): iban_ok's length per country decides where it ends.
IBAN = re.compile(
    rf"(?<![{_W}])[a-z]{{2}}[ -]?\d{{2}}(?:(?:[ -]|{_WRAP})?[a-z0-9]{{4}}){{2,7}}"
    rf"(?:[ -]?[a-z0-9]{{1,4}}){{0,2}}(?![{_W}])",
    re.IGNORECASE,
)
# A card's digits, in groups joined by a space or a dash, or wrapped onto the next line by a chat
# client or a form ("4111 1111\n1111 1111": then every group must be whole, see card_ok).
CARD = re.compile(rf"(?<![{_W}+.-])\d(?:(?:[ .-]|[ -]?{_WRAP})?\d){{12,18}}(?![{_W}]|[.-]\d)")
# Digit groups joined by one separator, by a bracket ("+33 (0)1 23", "(415) 555-2671"), or by
# a spaced slash as German numbers were written ("030 / 123 456").
_JOIN = r"(?: ?\(|\) ?| / |[ .\-/\u2010-\u2013])"
# A "+" may come URL-encoded (phone=%2B447911123456), or in brackets: "(+44 7911 123456)" is
# the number after the bracket, where "(415) 555" is one from the bracket.
_PLUS = r"(?:\+|%2B) ?"
# Not digits a dash joins to a word: an order's or a project's code ("ORD-2024-884213").
PHONE = re.compile(
    rf"(?:(?<![{_W}+(])(?<![{_W}]-)(?:{_PLUS}|\()?|(?<=\(){_PLUS})\d+(?:{_JOIN}\d+)*"
    rf"(?![{_W}]|[.,]\d)",
    re.IGNORECASE,
)
# Not an npm scope ("@types/node"): a handle is followed by no slash.
HANDLE = re.compile(r"(?<![\w@.])@[A-Za-z0-9_]{1,30}(?![A-Za-z0-9_/])")
# Decorators, annotations and CSS at-rules that a ticket about code quotes ("@Override",
# "@dataclass", "@media"): no person's handle (lowercase).
CODE_AT_WORDS = frozenset(
    [
        "override",
        "dataclass",
        "property",
        "staticmethod",
        "classmethod",
        "abstractmethod",
        "cached_property",
        "functools",
        "lru_cache",
        "media",
        "import",
        "keyframes",
        "supports",
        "charset",
        "namespace",
        "font",
        "layer",
        "apply",
        "tailwind",
        "container",
        "mixin",
        "include",
        "extend",
        "use",
        "forward",
        "input",
        "output",
        "component",
        "injectable",
        "directive",
        "pipe",
        "ngmodule",
        "hostlistener",
        "viewchild",
        "test",
        "before",
        "after",
        "beforeeach",
        "aftereach",
        "beforeall",
        "afterall",
        "autowired",
        "service",
        "controller",
        "restcontroller",
        "repository",
        "entity",
        "table",
        "column",
        "transactional",
        "configuration",
        "value",
        "deprecated",
        "suppresswarnings",
        "nullable",
        "nonnull",
        "notnull",
        "functionalinterface",
        "param",
        "params",
        "return",
        "returns",
        "throws",
        "see",
        "since",
        "author",
        "version",
        "todo",
        "fixme",
        "typedef",
        "template",
        "pytest",
        "fixture",
        "app",
        "route",
        "get",
        "post",
        "put",
        "patch",
        "delete",
        "requestmapping",
        "getmapping",
        "postmapping",
        "jsonproperty",
        "builder",
        "data",
        "getter",
        "setter",
        "slf4j",
    ]
)
# "%40" is an @ in a URL's query string, "%2540" one in a URL encoded into another's ("next=
# %2Faccount%3Femail%3Djane%2540example.com"); a letter beyond ASCII is its UTF-8 bytes
# encoded ("j%C3%BCrgen"). The address starts after an encoded = & / : (a byte below %80).
# "jane [at] example [dot] com" is written so on purpose.
_PCT = r"%[89A-F][0-9A-F]"
_PCT_LETTER = rf"(?:[^\W_]|{_PCT})"
EMAIL_URL = re.compile(
    rf"(?:(?<![\w.%+'-])|(?<=%[0-7][0-9A-F]))(?:[\w.+'-]|%2B|{_PCT})*?(?:\w|{_PCT})%(?:25)?40"
    rf"(?:{_PCT_LETTER}(?:(?:[\w-]|{_PCT})*{_PCT_LETTER})?\.)+(?:[^\W\d_]|{_PCT}){{2,}}"
    r"(?![\w-])",
    re.IGNORECASE,
)
# An address in words ("john.doe at example dot com"): a top-level domain people write so, and
# a name before "at" that is no word of a sentence ("look at google dot com").
_WORDS_AT = re.compile(r"\sat\s+[a-z0-9-]+\s+dot\s", re.IGNORECASE)
EMAIL_WORDS = re.compile(
    r"(?<![\w.+-])([\w.+-]*\w)\s+(?:at|AT)\s+(?:[^\W_][\w-]*\s+(?:dot|DOT)\s+)+"
    r"(?:com|org|net|edu|gov|mil|int|info|biz|io|co|me|uk|us|ca|au|de|fr|es|it|nl|be|ch|at"
    r"|se|no|dk|fi|pl|ie|pt|br|mx|ar|in|jp|cn|ru|nz|za)(?![\w-])",
    re.IGNORECASE,
)
_PROSE_BEFORE_AT = frozenset(
    [
        "look",
        "looks",
        "looked",
        "looking",
        "arrive",
        "arrives",
        "arrived",
        "stay",
        "stays",
        "stayed",
        "meet",
        "meets",
        "met",
        "live",
        "lives",
        "lived",
        "work",
        "works",
        "worked",
        "working",
        "be",
        "is",
        "are",
        "was",
        "were",
        "am",
        "been",
        "being",
        "me",
        "us",
        "you",
        "him",
        "her",
        "them",
        "it",
        "we",
        "i",
        "they",
        "he",
        "she",
        "this",
        "that",
        "here",
        "there",
        "only",
        "even",
        "just",
        "not",
        "now",
        "and",
        "or",
        "but",
        "then",
        "available",
        "located",
        "found",
        "find",
        "check",
        "checked",
        "visit",
        "visited",
        "shop",
        "shopped",
        "buy",
        "bought",
        "sell",
        "sold",
        "sign",
        "signed",
        "log",
        "logged",
        "hosted",
        "online",
        "people",
        "someone",
        "anyone",
        "everyone",
        "nobody",
        "one",
        "all",
        "search",
        "searched",
        "click",
        "clicked",
        "go",
        "went",
        "going",
        "get",
        "got",
    ]
)
# Where an address's domain is a file's name ("image@2x.png", retina assets) and an scp-style
# remote ("git@github.com:acme/app.git"): no one's address.
_FILE_SUFFIXES = frozenset(
    [
        "png",
        "jpg",
        "jpeg",
        "gif",
        "svg",
        "webp",
        "bmp",
        "ico",
        "tif",
        "tiff",
        "pdf",
        "js",
        "mjs",
        "css",
        "scss",
        "json",
        "html",
        "htm",
        "txt",
        "csv",
        "tsv",
        "xml",
        "yaml",
        "yml",
        "gz",
        "tgz",
        "tar",
        "mp3",
        "mp4",
        "wav",
        "mov",
        "avi",
        "woff",
        "woff2",
        "ttf",
        "otf",
    ]
)
# An scp-style remote is a version-control host's user ("git@github.com:acme/app.git"); any
# other address before a colon is an address ("jane@gmail.com:hunter22", a leaked login list).
_REMOTE_USERS = frozenset(["git", "hg", "svn", "gitlab", "bitbucket"])
_REMOTE_AFTER = re.compile(r":[\w~./-]")


def _words_email_ok(m: re.Match) -> bool:
    """An address in words is one when its name is no word of a sentence and holds a dot, a
    digit, _ or + ("john.doe at example dot com"), or "AT" and "DOT" are written in capitals:
    "jobs at amazon dot com" and "the crash at the dot com bubble" are prose."""
    local = m.group(1)
    if local.lower() in _PROSE_BEFORE_AT:
        return False
    capitals = " AT " in m.group() and " DOT " in m.group()
    return capitals or bool(_NOT_A_WORD.search(local))


def _email_ok(text: str, m: re.Match) -> bool:
    """Whether an address ``EMAIL`` found is a person's: not a file's name, not a remote."""
    if m.group().rsplit(".", 1)[-1].lower() in _FILE_SUFFIXES:
        return False
    local = m.group().split("@", 1)[0].lower()
    return not (local in _REMOTE_USERS and _REMOTE_AFTER.match(text, m.end()))


_AT, _DOT = r"\s*[\[({]\s*at\s*[\])}]\s*", r"(?:\s*[\[({]\s*dot\s*[\])}]\s*|\.)"
_SPELLED_AT = re.compile(r"[\[({]\s*at\s*[\])}]", re.IGNORECASE)
EMAIL_SPELLED = re.compile(
    rf"(?<![\w.+-])[\w.+-]*\w{_AT}(?:[^\W_][\w-]*{_DOT})+[^\W\d_]{{2,}}(?![\w-])",
    re.IGNORECASE,
)
# A US SSN written ddd-dd-dddd, or any way beside a word that names it; valid ranges only.
SSN = re.compile(rf"(?<![{_W}-])(\d{{3}})([-. ]?)(\d{{2}})\2(\d{{4}})(?![{_W}]|-\d)")
_SSN_WORDS = re.compile(
    r"\b(?:ssn|ss#|social security(?: number| no\.?)?)(?:\W+(?:is|was|number|no|nr|#|to))?\W{0,3}$",
    re.IGNORECASE,
)
# A UK National Insurance number: two letters of HMRC's (neither D, F, I, Q, U, V; no O second;
# never BG, GB, KN, NK, NT, TN, ZZ), six digits, a suffix A-D. In capitals, or any case beside a
# word that names it: "aa081600a" is a file name in a URL.
_NINO_WORDS = re.compile(r"\b(?:ni|nino|nin|insurance)(?:\W+(?:number|no|nr|is|#))*\W{0,3}$", re.I)
NINO = re.compile(
    rf"(?<![{_W}])(?!BG|GB|KN|NK|NT|TN|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"
    rf"( ?)\d{{2}}\1\d{{2}}\1\d{{2}}\1[A-D](?![{_W}])",
    re.IGNORECASE,
)
# National identity numbers of the configured regions (``[ingest] pii_regions``), each checked by
# python-stdnum (check digits, structure): (stdnum module, pattern, names). A layout distinctive
# with its check (a spaced Aadhaar, a PAN, a NIR's 15 digits with a key mod 97, a DNI's letter)
# counts anywhere; one that other numbers share (eleven or nine bare digits, a check of one in
# ten or eleven) only after one of ``names``, within the 40 characters before it.
_ID_NAME_TAIL = r"(?:\W+(?:is|es|est|ist|é|number|no|nr|num|nummer|numero|numéro|#))*\W{0,3}$"
_NATIONAL_IDS: dict[str, tuple[tuple[str, str, str | None], ...]] = {
    "IN": (
        ("in_.aadhaar", r"[2-9]\d{3}([ -])\d{4}\1\d{4}", None),
        ("in_.aadhaar", r"[2-9]\d{11}", r"aadhaar|aadhar|uid|uidai"),
        ("in_.pan", r"[A-Z]{3}[ABCFGHJLPT][A-Z]\d{4}[A-Z]", None),
        ("in_.pan", r"(?i:[a-z]{3}[abcfghjlpt][a-z]\d{4}[a-z])", r"pan(?: card)?"),
    ),
    "DE": (
        ("de.idnr", r"[1-9]\d(?: ?\d{3}){3}",
         r"steuer-?id(?:nr)?|steuer-?identifikationsnummer|identifikationsnummer|idnr|tin"),
    ),
    "FR": (
        ("fr.nir", r"[12] ?\d{2} ?(?:0[1-9]|1[0-2]|[2-9]\d) ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}",
         None),
    ),
    "ES": (
        ("es.dni", r"\d{8}-?[A-Z]", None),
        ("es.nie", r"[XYZ]-?\d{7}-?[A-Z]", None),
        # typed in lower case or with dots ("dni 12.345.678-z"): named
        ("es.dni", r"(?i:(?:\d{8}|\d{1,2}\.\d{3}\.\d{3})-?[a-z])", r"dni|nif"),
        ("es.nie", r"(?i:[xyz]-?\d{7}-?[a-z])", r"nie|nif"),
    ),
    "NL": (("nl.bsn", r"\d{9}|\d{4}\.\d{2}\.\d{3}", r"bsn|burgerservicenummer|sofi(?:nummer)?"),),
    "IT": (
        ("it.codicefiscale",
         r"[A-Z]{6}[0-9LMNP-V]{2}[A-EHLMPR-T][0-9LMNP-V]{2}[A-Z][0-9LMNP-V]{3}[A-Z]", None),
    ),
    "BR": (
        ("br.cpf", r"\d{3}\.\d{3}\.\d{3}-\d{2}", None),
        ("br.cpf", r"\d{11}", r"cpf"),
    ),
    "CA": (("ca.sin", r"\d{3}([ -]?)\d{3}\1\d{3}", r"sin|social insurance|nas"),),
    "AU": (("au.tfn", r"\d{3} ?\d{3} ?\d{2,3}", r"tfn|tax file"),),
    "CN": (("cn.ric", r"\d{17}[\dX]", None),),
}  # fmt: skip
# Ids named by a word that only their country uses ("CPF", "身份证"), which count whatever the
# regions: a CPF was taken for a phone, and a resident id of 18 digits kept, where BR or CN was
# not configured.
_NAMED_ANYWHERE = (
    ("br.cpf", r"\d{3}\.?\d{3}\.?\d{3}-?\d{2}", r"cpf"),
    ("cn.ric", r"\d{17}[\dXx]", r"(?:居民)?身份证(?:号码?)?是?"),
)


@cache
def _id_checks(regions: tuple[str, ...]) -> tuple[tuple[re.Pattern, re.Pattern | None, str], ...]:
    """The configured regions' national-id patterns, compiled once per set of regions."""
    out = []
    for module, pattern, names in (
        *(entry for region in regions for entry in _NATIONAL_IDS.get(region, ())),
        *_NAMED_ANYWHERE,
    ):
        found = re.compile(rf"(?<![{_W}]){pattern}(?![{_W}])")
        # no Latin letter before a name ("japan" is no "pan"); Chinese writes its words joined
        before = r"(?<![A-Za-z\u00c0-\u024f])"
        named = re.compile(rf"{before}(?:{names}){_ID_NAME_TAIL}", re.I) if names else None
        out.append((found, named, module))
    return tuple(out)


# Three years in a row ("tax slabs 2023 2024 2025") have an Aadhaar's printed layout, and one
# such list in ten passes its check: years, unless a word names an Aadhaar.
_YEARS = re.compile(r"(?:19|20)\d\d(?:[ -](?:19|20)\d\d)+")
_AADHAAR_WORDS = re.compile(rf"\b(?:aadhaar|aadhar|uidai|uid){_ID_NAME_TAIL}", re.I)


def _national_ids(text: str, regions: tuple[str, ...]):
    """National-id spans of the regions' numbers whose check python-stdnum accepts; not after
    a word that names a parcel's number ("fedex 7749 1234 5678" passes Aadhaar's check), nor a
    list of years where no word names the id."""
    for found, named, module in _id_checks(regions):
        for m in found.finditer(text):
            if named is None and (
                _named(_PARCEL_WORDS, text, m.start())
                or (_YEARS.fullmatch(m.group()) and not _named(_AADHAAR_WORDS, text, m.start()))
            ):
                continue
            if (named is None or _named(named, text, m.start())) and _id_valid(module, m.group()):
                yield m.start(), m.end()


@cache
def _stdnum(module: str):
    import importlib

    return importlib.import_module(f"stdnum.{module}")


def _id_valid(module: str, value: str) -> bool:
    # Dots group the digits ("12.345.678-Z"); some of stdnum's modules keep them, and fail.
    return bool(_stdnum(module).is_valid(value.upper().replace(".", "")))


# Credentials pasted into a query or a ticket: the formats that announce themselves by a
# prefix (AWS key ids, JWTs, GitHub, Slack, Stripe, OpenAI-style and Google API keys), the
# token after "Bearer", and the value after a name such as api_key= or password:.
SECRET = re.compile(
    r"(?<![A-Za-z0-9_])(?:"
    r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"
    r"|gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|sk-(?:proj|ant|svcacct|admin)-[A-Za-z0-9_-]{20,}|sk-[A-Za-z0-9]{20,}"
    r"|AIza[0-9A-Za-z_-]{35}"
    # GitLab, npm and Hugging Face tokens, SendGrid keys, a Telegram bot's token
    r"|glpat-[A-Za-z0-9_-]{20,}|npm_[A-Za-z0-9]{36}|hf_[A-Za-z0-9]{30,}"
    r"|SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}|[0-9]{8,10}:AA[A-Za-z0-9_-]{30,40}"
    # Shopify, DigitalOcean, Slack app, PyPI, Google OAuth, Atlassian, Square, Databricks,
    # Postman, Linear, Notion, and the Groq, Replicate, Perplexity and xAI model APIs' keys
    r"|shp(?:at|ca|pa|ss)_[A-Fa-f0-9]{32}|do[por]_v1_[a-f0-9]{64}|xapp-[0-9]-[A-Za-z0-9-]{20,}"
    r"|pypi-AgE[A-Za-z0-9_-]{50,}|ya29\.[A-Za-z0-9_-]{20,}|ATATT3[A-Za-z0-9_=-]{20,}"
    r"|sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}|dapi[a-f0-9]{32}|PMAK-[a-f0-9]{24}-[a-f0-9]{34}"
    r"|lin_api_[A-Za-z0-9]{40}|ntn_[A-Za-z0-9]{40,}|gsk_[A-Za-z0-9]{48,}|r8_[A-Za-z0-9]{37,}"
    r"|pplx-[A-Za-z0-9]{48,}|xai-[A-Za-z0-9]{60,}"
    # a Stripe webhook's signing secret, a Mailgun key
    r"|whsec_[A-Za-z0-9+/]{24,}|key-[a-f0-9]{32}"
    r")(?![A-Za-z0-9_-])"
)
# A Slack or Discord webhook's URL is its own credential: the path after the service's part.
_WEBHOOK = re.compile(
    r"(?:hooks\.slack\.com/(?:services|workflows|triggers)/|discord(?:app)?\.com/api/webhooks/)"
    r"([A-Za-z0-9_/-]{20,})"
)
# A PEM private key (PKCS#1 and #8, OpenSSH, PGP): the block whole, its lines broken, joined
# by spaces (a search box keeps one line) or written as JSON's "\n" (a service account's
# file); a block cut short ends with its last line of base64.
_PEM_GAP = r"(?:\s|\\[rn])+"
_PEM = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----"
    rf"((?:{_PEM_GAP}(?:[A-Za-z0-9+/]{{16,}}={{0,2}}|(?:Proc-Type|DEK-Info|Comment): [^\r\n\\]*))*)"
    rf"(?:(?:{_PEM_GAP}[A-Za-z0-9+/=]+)?{_PEM_GAP}-----END \1-----)?"
)
# The password of a URL's user ("postgres://app:s3cret@db/prod"): the last @ before the path.
_URL_PASSWORD = re.compile(r"(?i:\b[a-z][a-z0-9+.-]*)://[^\s:/?#@]*:([^\s/?#]+)@(?=[^\s/?#@])")
_BEARER = re.compile(r"(?i:\bbearer)\s+([A-Za-z0-9._~+/-]{16,}=*)(?![A-Za-z0-9._~+/=-])")
_SECRET_HINT = re.compile(SECRET_MARKS)
# HTTP Basic credentials: base64 of "user:password".
_BASIC = re.compile(r"(?i:\bbasic)\s+([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])")
# A name ending in key, secret, token or password; or pass, sig or signature alone or after a
# separator ("DB_PASS", "X-Amz-Signature": not "bypass"), whose value must hold a digit.
_NAMED_SECRET = re.compile(
    r"(?i:\b(?:[a-z_.-]*(?:key|secret|token|passw(?:or)?d|pwd)"
    r"|(?:[a-z_.-]*[_.-])?(?P<short>pass|sig|signature)))[\"']?(\s*[:=]\s*)[\"']?"
    r"([^\s\"'&,;<>]{6,})"
)
# The same in a URL inside another's query string ("next=%2Fa%3Ftoken%3D…%26x%3D1"), its = and
# & encoded once or twice: the name after an encoded ? or &, the value to the next encoded & or #.
_ENCODED_AFTER = "|".join(f"(?<=%{q}3F)|(?<=%{q}26)" for q in ("", "25"))
_NAMED_ENCODED = re.compile(
    rf"(?:{_ENCODED_AFTER}|\b)(?:[a-z_.-]*(?:key|secret|token|passw(?:or)?d|pwd)"
    r"|(?:[a-z_.-]*[_.-])?(?:pass|sig|signature))%(?:25)?3D"
    r"((?:[^\s\"'&,;<>%]|%(?!(?:25)?2[36])(?:25)?[0-9A-F]{2})+)",
    re.IGNORECASE,
)
# A Telegram bot's token in its API's URLs (https://api.telegram.org/bot<token>/sendMessage).
_BOT_URL = re.compile(r"/bot([0-9]{8,10}:AA[A-Za-z0-9_-]{30,40})(?![A-Za-z0-9_-])")
# An HTTP Authorization header's credential, after its scheme whatever it is ("Token",
# "ApiKey", "SSWS"); Bearer and Basic are read above as well. The credential runs to a space, a
# quote or a separator: a password used as one keeps its punctuation ("Summer2024!").
_AUTHORIZATION = re.compile(
    r"(?i:\bauthorization)[\"']?\s*[:=]\s*[\"']?(?:[A-Za-z][A-Za-z0-9-]*\s+)?"
    r"([^\s\"',;<>]{8,})(?![^\s\"',;<>])"
)
# curl's user and password ("curl -u admin:s3cret"): the password, unless a shell variable.
_CURL_USER = re.compile(
    r"(?i:\bcurl\b)[^\n]*?\s(?:-u|--user)(?:\s+|=)[\"']?[^\s:\"']+:(?!\$)([^\s\"'@]+)"
)
# An AWS secret access key (40 characters of base64) pasted beside its key id.
_AWS_PAIR = re.compile(
    r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}[^\n]{1,40}?"
    r"(?<![A-Za-z0-9/+=])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
)
# A key or a token said in prose ("my api key is 9944b0…"): long, letters and digits.
_SAID_KEY = re.compile(
    r"(?i:\b(?:key|token|secret))\s+(?:is|was)\s+[\"']?([A-Za-z0-9._~+/=-]{16,})"
    r"(?![A-Za-z0-9._~+/=-])"
)
# What a password "is" that names how it is kept, not the password ("password is sha256 hashed").
_SCHEMES = frozenset(
    ["sha1", "sha256", "sha512", "md5", "base64", "aes128", "aes256", "wpa2", "wpa3", "utf8",
     "pbkdf2", "argon2", "argon2id", "bcrypt", "scrypt", "rot13", "ntlmv2", "3des"]
)  # fmt: skip
# A password said in prose ("password: Tr0ub4dor&3", "my password is hunter2"): the value runs
# to the next space (a URL's "&" ends the one above), less a closing stop.
# Also written as JSON ('"password": "…"') and in the words of other languages.
_SAID_PASSWORD = re.compile(
    r"(?i:(?<![^\W\d_])(?:passw(?:or)?d|pwd|passwort|kennwort|mot de passe|mdp|contraseña"
    r"|contrasena|senha|wachtwoord|hasło|haslo|parola|lösenord|losenord|salasana|пароль)"
    r"|密码|パスワード)"
    r"(?:[\"']?\s*[:：]\s*|\s+(?:is|was|est|ist|es|é|era|war|était|jest|är|on)\s+)[\"']?"
    r"([^\s\"']{4,}?)[\"'.,;!?)]*(?=\s|$)"
)

# An ISO date anywhere in a run ("2017-10-20 10"), or a whole run that is a day-month-year. The
# year and month are a year's and a month's: "0049-30-123456" is a German number.
_ISO_DATE = re.compile(r"(?<!\d)(?:1[89]|20)\d\d([-/.])(?:0?[1-9]|1[0-2])\1\d{1,2}(?!\d)")
_DATE = re.compile(r"\d{1,2}([-/.])\d{1,2}\1\d{2,4}")
# A date with a four-digit year, day or month first or year first, and its time if one follows:
# written so, its digits run on into the hour ("07.12.2026 14:30") or into a second date
# ("01.01.2026-31.12.2026"), and a part of that run is a valid phone. Its span is taken first.
_DAY = r"(?:0?[1-9]|[12]\d|3[01])"
_DATES = re.compile(
    rf"(?<![{_W}.])(?:{_DAY}([-/.]){_DAY}\1(?:1[89]|20)\d\d"
    rf"|(?:1[89]|20)\d\d([-/.])(?:0?[1-9]|1[0-2])\2{_DAY})"
    rf"(?:[ T]\d{{1,2}}:\d\d(?::\d\d)?)?(?![{_W}]|\.\d)"
)
# A UPS tracking number: 1Z, the shipper's six characters, the service's two, eight digits.
_UPS = re.compile(
    r"(?<![A-Za-z0-9])1Z ?[0-9A-Z]{3} ?[0-9A-Z]{3} ?[0-9A-Z]{2} ?[0-9]{4} ?[0-9]{4}(?![A-Za-z0-9])"
)
# Words before a parcel's number, which a national id's check may pass.
_PARCEL_WORDS = re.compile(
    r"\b(?:fedex|ups|usps|dhl|tnt|tracking|awb|shipment|parcel|package|consignment)"
    r"(?:\W+(?:number|no|nr|id|#|is))*\W{0,3}$",
    re.IGNORECASE,
)
# A US ZIP+4 code ("78701-4512"), which would be a French mobile written without its 0.
_ZIP4 = re.compile(r"\d{5}-\d{4}")
# A phone's extension, which goes with it: "ext. 12", "x 204", "extension 3", RFC 3966's ";ext=".
_EXTENSION = re.compile(
    rf"(?:,? ?(?:ext(?:ension)?\.?|x\.?|poste|durchwahl|dw\.?) ?[:.#]? ?|;ext=)\d{{1,6}}(?![{_W}])",
    re.IGNORECASE,
)
_NANP_LAYOUT = re.compile(r"(?:\+?1[ .-]?)?(?:\(\d{3}\) ?|\d{3}[ .-])\d{3}[ .-]\d{4}")
# A dotted quad right after one of these words is a version ("android 14.0.0.1", "firmware
# 2.1.0.14"), not an address: a product is named by its release in four parts as often as not.
# So is a document's section ("requirement 8.3.6.1", "§ 4.1.2.3"): standards, contracts and
# manuals number theirs so.
_VERSION_WORDS = re.compile(
    r"(?:\b(?:version|ver|release|build|v|android|ios|ipados|macos|osx|windows|linux|ubuntu|"
    r"debian|kernel|chrome|chromium|firefox|safari|edge|opera|firmware|fw|bios|driver|sdk|"
    r"patch|update|upgrade|python|java|php|section|sec|subsection|clause|chapter|ch|paragraph"
    r"|para|article|art|step|requirement|req|appendix|annex|figure|fig)\.?|§)\s*$",
    re.IGNORECASE,
)

# Words that say a nearby run of digits is, or is not, a phone number (lowercase, whole words).
PHONE_WORDS = frozenset(
    [
        "tel",
        "tél",
        "tele",
        "telephone",
        "téléphone",
        "phone",
        "phones",
        "ph",
        "phn",
        "call",
        "calls",
        "calling",
        "called",
        "mobile",
        "mob",
        "cell",
        "cellphone",
        "number",
        "num",
        "no",
        "nr",
        "contact",
        "reach",
        "text",
        "sms",
        "whatsapp",
        "fax",
        "ring",
        "dial",
        "hotline",
        "helpline",
        "landline",
        "appelez",
        "appeler",
        "appelle",
        "appelle-moi",
        "portable",
        "numéro",
        "numero",
        "joindre",
        "joignable",
        "fixe",
        "handy",
        "telefon",
        "telefonnummer",
        "handynummer",
        "rufnummer",
        "nummer",
        "anrufen",
        "ruf",
        "mobil",
        "erreichbar",
        "festnetz",
        "teléfono",
        "telefono",
        "llamar",
        "llame",
        "llámame",
        "móvil",
        "movil",
        "celular",
        "cellulare",
        "chiamare",
        "chiama",
        "chiamami",
        "whatsapp",
        "telefone",
        "ligar",
        "ligue",
        "número",
        "телефон",
        "телефона",
        "тел",
        "номер",
        "мобильный",
        "сотовый",
        "звоните",
        "позвоните",
        "नंबर",
        "नम्बर",
        "फोन",
        "फ़ोन",
        "मोबाइल",
    ]
)
# Chinese and Japanese write no space between words: these say phone inside a longer one
# ("我的电话是", my phone is; "電話番号", phone number; Korean "전화번호" too).
_UNSPACED_PHONE_WORDS = re.compile("电话|電話|手机|手機|携帯|ケータイ|전화|휴대폰|핸드폰")
NOT_PHONE_WORDS = frozenset(
    [
        "isbn",
        "issn",
        "order",
        "orders",
        "invoice",
        "ref",
        "reference",
        "tracking",
        "sku",
        "ean",
        "upc",
        "gtin",
        "serial",
        "id",
        "ticket",
        "case",
        "booking",
        "confirmation",
        "po",
        "barcode",
        "version",
        "build",
        "ver",
        "commande",
        "facture",
        "bestellung",
        "rechnung",
        "auftrag",
        "artikel",
        "article",
        "item",
        "part",
        "model",
        "pedido",
        "factura",
        "iban",
        "card",
        "account",
        "epoch",
        "timestamp",
        "ts",
        # sizes, customs codes, draws and parcels come in groups of digits too
        "size",
        "sizes",
        "hs",
        "hts",
        "tariff",
        "lottery",
        "lotto",
        "fedex",
        "usps",
        "dhl",
        "awb",
        "shipment",
        "parcel",
    ]
)
# A word's letters, and the vowel signs of India's scripts (Devanagari's "नंबर"), which are
# marks, not letters, to Python's \w; their digits are folded to ASCII before this reads them.
_LETTER = r"(?:[^\W\d_]|[\u0900-\u0963\u0970-\u0dff])"
_WORD = re.compile(rf"{_LETTER}+(?:-{_LETTER}+)?")


def redact(text: str, regions: tuple[str, ...] = DEFAULT_REGIONS, handles: bool = False) -> str:
    """``text`` with each PII span replaced by its ``<TYPE>`` placeholder; JSON text (a row's
    extra fields, a rejected line) value by value (``_redact_json``)."""
    if text[:1] in ("{", "[") and (as_json := _redact_json(text, regions, handles)) is not None:
        return as_json
    return _redact_plain(text, regions, handles)


def _redact_json(text: str, regions: tuple[str, ...], handles: bool) -> str | None:
    """JSON text redacted in its decoded strings (and numbers, a phone written as one), written
    back as JSON if any held PII; None for text that is no JSON. Read as text, an escape hid an
    address (``jane.doe\u0040example.com``, Python's json.dumps writes every non-ASCII letter
    so), and a span taking the backslash of ``\"`` broke the JSON the store then parsed."""
    import json

    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None

    def plain(written: str, key: str) -> str:
        # read with its key before it, as the text "phone: 4155552671" would be read
        said = f"{key}: " if key else ""
        out = _redact_plain(said + written, regions, handles)
        if out.startswith(said):
            return out[len(said) :]
        return _redact_plain(written, regions, handles)

    def walk(item: object, key: str = "") -> object:
        if isinstance(item, str):
            return plain(item, key)
        if isinstance(item, dict):
            return {walk(k): walk(v, str(k)) for k, v in item.items()}
        if isinstance(item, list):
            return [walk(v, key) for v in item]
        if isinstance(item, int | float) and not isinstance(item, bool):
            written = json.dumps(item)
            out = plain(written, key)
            return item if out == written else out
        return item

    try:
        redacted = walk(value)
    except RecursionError:  # nested past Python's limit: read as text
        return None
    if redacted == value:  # nothing found: the text as written, escapes and spacing kept
        return text
    return json.dumps(redacted, ensure_ascii=False, separators=(",", ":"))


def _redact_plain(text: str, regions: tuple[str, ...], handles: bool) -> str:
    if not (_CANDIDATE_ASCII if text.isascii() else _CANDIDATE).search(text):
        return text
    out, last = [], 0
    for start, end, kind in find(text, regions, handles):
        out.append(text[last:start])
        out.append(f"<{kind}>")
        last = end
    out.append(text[last:])
    return "".join(out)


def find(
    text: str, regions: tuple[str, ...] = DEFAULT_REGIONS, handles: bool = False
) -> list[tuple[int, int, str]]:
    """The PII spans of ``text`` as (start, end, type), in order. Types are tried in turn
    (an email before a handle, an IPv6 before the IPv4 it may end with, a card before a phone);
    a span overlapping one already taken is dropped. Invisible characters (``INVISIBLE``) are
    looked through: a span holds those inside it."""
    if not _HIDDEN.search(text):
        return _find(text, regions, handles)
    # The text as read: invisible characters out, an escaped @ as one "@"; each character read
    # keeps the span it came from.
    seen, starts, ends, last = [], [], [], 0
    for m in _HIDDEN.finditer(text):
        for i in range(last, m.start()):
            seen.append(text[i])
            starts.append(i)
            ends.append(i + 1)
        if not _INVISIBLE.fullmatch(m.group()):
            seen.append("@")
            starts.append(m.start())
            ends.append(m.end())
        last = m.end()
    for i in range(last, len(text)):
        seen.append(text[i])
        starts.append(i)
        ends.append(i + 1)
    found = _find("".join(seen), regions, handles)
    return [(starts[start], ends[end - 1], kind) for start, end, kind in found]


def _find(text: str, regions: tuple[str, ...], handles: bool) -> list[tuple[int, int, str]]:
    taken: list[tuple[int, int, str]] = []
    text = text.translate(_FOLD)

    def add(start: int, end: int, kind: str) -> None:
        if all(end <= s or start >= e for s, e, _ in taken):
            taken.append((start, end, kind))

    # A UPS tracking number ("1Z 999 AA1 01 2345 6784") holds what reads as a French number.
    for m in _UPS.finditer(text):
        add(m.start(), m.end(), "")
    # The rarer forms are looked for only where their mark is (most texts get here for digits).
    # A URL's password before the emails, which would take "s3cret@db.example.com".
    if "://" in text:
        for m in _URL_PASSWORD.finditer(text):
            add(m.start(1), m.end(1), "SECRET")
    if '"@' in text:
        for m in EMAIL_QUOTED.finditer(text):
            add(m.start(), m.end(), "EMAIL")
    for m in EMAIL.finditer(text):
        if _email_ok(text, m):
            add(m.start(), m.end(), "EMAIL")
    if " @" in text or "@ " in text:
        for m in EMAIL_SPACED.finditer(text):
            if _NOT_A_WORD.search(m.group(1)):
                add(m.start(), m.end(), "EMAIL")
    if "%40" in text or "%2540" in text:
        for m in EMAIL_URL.finditer(text):
            add(m.start(), m.end(), "EMAIL")
    if _SPELLED_AT.search(text):
        for m in EMAIL_SPELLED.finditer(text):
            add(m.start(), m.end(), "EMAIL")
    if _WORDS_AT.search(text):
        for m in EMAIL_WORDS.finditer(text):
            if _words_email_ok(m):
                add(m.start(), m.end(), "EMAIL")
    if _SECRET_HINT.search(text):
        for start, end in _secrets(text):
            add(start, end, "SECRET")
    for m in IPV6.finditer(text):
        address, end = m.group(), m.end()
        if address.endswith(":") and not address.endswith("::"):  # prose's colon after it
            address, end = address[:-1], end - 1
        if _ipv6_ok(address):
            add(m.start(), end, "IPV6")
    for m in IPV4.finditer(text):
        if _ipv4_ok(m.group()) and not _VERSION_WORDS.search(text, 0, m.start()):
            add(m.start(), m.end(), "IPV4")
    for start, end in _ibans(text):
        add(start, end, "IBAN")
    for start, end in _cards(text):
        add(start, end, "CARD")
    for m in SSN.finditer(text):
        if _ssn_ok(m) and (m.group(2) == "-" or _named(_SSN_WORDS, text, m.start())):
            add(m.start(), m.end(), "SSN")
    for m in NINO.finditer(text):
        if m.group().isupper() or _named(_NINO_WORDS, text, m.start()):
            add(m.start(), m.end(), "NINO")
    for start, end in _national_ids(text, regions):
        add(start, end, "NATIONAL_ID")
    for m in _DATES.finditer(text):
        add(m.start(), m.end(), "")
    for start, end in _phones(text, regions):
        add(start, end, "PHONE")
    if handles:
        for m in HANDLE.finditer(text):
            if m.group()[1:].lower() not in CODE_AT_WORDS:
                add(m.start(), m.end(), "HANDLE")
    return sorted(span for span in taken if span[2])


def _secrets(text: str):
    """Credential spans: a prefixed key or token whole; after "Bearer" or a name such as
    ``api_key=`` the value alone. Each holds a digit, as generated keys do ("sk-ii-facial-
    treatment-essence" and "bearer authentication-required" are words). A value after
    ``name: `` (a space, as prose writes) needs a letter too: "primary key: user_id" is a
    question, "password: hunter2" is not."""
    for m in SECRET.finditer(text):
        if _has_digit(m.group()):
            yield m.start(), m.end()
    for m in _WEBHOOK.finditer(text):
        if _has_digit(m.group(1)):
            yield m.start(1), m.end(1)
    for m in _PEM.finditer(text):
        # a key's body holds digits; "-----BEGIN PRIVATE KEY----- header meaning" is a question
        if m.group(0).endswith("-----END " + m.group(1) + "-----") or _has_digit(m.group(2)):
            yield m.start(), m.end()
    for m in _BEARER.finditer(text):
        if _has_digit(m.group(1)):
            yield m.start(1), m.end(1)
    for m in _BASIC.finditer(text):
        if _basic_ok(m.group(1)):
            yield m.start(1), m.end(1)
    for m in _SAID_PASSWORD.finditer(text):
        value = m.group(1)
        if (_has_digit(value) and any(c.isalpha() for c in value)
                and value.lower() not in _SCHEMES):  # fmt: skip
            yield m.start(1), m.end(1)
    for m in _NAMED_SECRET.finditer(text):
        value, spaced = m.group(3), m.group(2).strip() != m.group(2)
        if (not spaced and not m.group("short")) or (
            _has_digit(value) and any(c.isalpha() for c in value)
        ):
            yield m.start(3), m.end(3)
    yield from _pasted_secrets(text)


def _pasted_secrets(text: str):
    """A header's credential, curl's password, an AWS secret beside its key id, a key said in
    prose, a named value in an encoded URL and a bot's token in its URL: each holds a digit (an
    AWS secret letters of both cases too)."""
    for rx in (_AUTHORIZATION, _SAID_KEY):
        for m in rx.finditer(text):
            if _has_digit(m.group(1)) and any(c.isalpha() for c in m.group(1)):
                yield m.start(1), m.end(1)
    for m in _CURL_USER.finditer(text):
        yield m.start(1), m.end(1)
    for m in _NAMED_ENCODED.finditer(text):
        value = m.group(1)
        if len(value) >= 6 and _has_digit(value) and any(c.isalpha() for c in value):
            yield m.start(1), m.end(1)
    for m in _BOT_URL.finditer(text):
        yield m.start(1), m.end(1)
    for m in _AWS_PAIR.finditer(text):
        key = m.group(1)
        if _has_digit(key) and not key.isupper() and not key.islower():
            yield m.start(1), m.end(1)


def _cards(text: str):
    """Card number spans. A run that fails the card's checks may have taken a number before the
    card ("Nov 2 4111 1111 1111 1111", "#1 4111 …"): the run is tried again from each later
    group, so the card after it is found."""
    for m in CARD.finditer(text):
        if card_ok(m.group()):
            yield m.start(), m.end()
            continue
        for gap in re.finditer(r"[ .-]+", m.group()):
            inner = CARD.match(text, m.start() + gap.end(), m.end())
            if inner and inner.end() == m.end() and card_ok(inner.group()):
                yield inner.start(), inner.end()
                break


def _basic_ok(token: str) -> bool:
    """Whether ``token`` is base64 of printable "user:password" ("basic dGVzdA" is not)."""
    import base64
    import binascii

    try:
        plain = base64.b64decode(token + "=" * (-len(token) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    return ":" in plain and plain.isprintable()


def _named(words: re.Pattern, text: str, start: int) -> bool:
    """Whether ``words`` name what starts at ``start``: looked for in the 40 characters before
    it, so a long text with many numbers is not read again for each."""
    return bool(words.search(text, max(0, start - 40), start))


def _has_digit(s: str) -> bool:
    return any(c.isdigit() for c in s)


def _ssn_ok(m: re.Match) -> bool:
    # The SSA never issues area 000, 666 or 900-999, group 00 or serial 0000.
    area, group, serial = m.group(1), m.group(3), m.group(4)
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def _ipv4_ok(s: str) -> bool:
    """Whether a dotted quad may be someone's address: any but this machine's (127.0.0.1,
    0.0.0.0). A private one (10.0.0.12) names a person's machine inside a company, and
    examples of a public one are written in the ranges kept for documentation (203.0.113.45)."""
    ip = ipaddress.IPv4Address(s)
    return not (ip.is_loopback or ip.is_unspecified)


def _ipv6_ok(s: str) -> bool:
    # A real address has a decimal digit somewhere: "Dead::Beef" and "a::b" are C++ names.
    if not _has_digit(s):
        return False
    try:
        ipaddress.IPv6Address(s.split("%")[0])
    except ValueError:
        return False
    return True


def _ibans(text: str):
    """IBAN spans whose mod 97 holds. The pattern may have taken a following 4-character word
    ("... 7034 from"): drop whole trailing groups until the check holds."""
    for m in IBAN.finditer(text):
        s = m.group()
        while len(_IBAN_GAPS.sub("", s)) >= 15:
            if iban_ok(s):
                yield m.start(), m.start() + len(s)
                break
            cut = max(s.rfind(" "), s.rfind("\n"), s.rfind("-"))
            if cut < 0:
                break
            s = s[:cut].rstrip()


_IBAN_GAPS = re.compile(r"[\s-]")


def iban_ok(s: str) -> bool:
    c = _IBAN_GAPS.sub("", s).upper()
    # ASCII only: IGNORECASE lets [a-z] match the Turkish İ and the Kelvin sign, which
    # upper() keeps and base 36 cannot read.
    if not 15 <= len(c) <= 34 or not c.isascii() or not c.isalnum():
        return False
    # Mod 97 and the country's own length and layout (python-stdnum's registry): a cut-off
    # prefix passes mod 97 one time in 97 ("BR15 0000 0000 0000" of a longer one). Not the
    # national check digits some countries add: mod 97 is check enough, and examples lack them.
    return bool(_stdnum("iban").is_valid(c, check_country=False))


def card_ok(s: str) -> bool:
    groups = re.findall(r"\d+", s)
    d = "".join(groups)
    # Wrapped onto another line, a card's groups stay whole (4 digits; Amex 6 and 5; a last
    # 3): a column of short numbers is a list.
    if "\n" in s and min(len(g) for g in groups) < 3:
        return False
    # Dotted, only in a card's own groups ("4111.1111.1111.1111"): 3.14159265358979 is a number.
    if "." in s and not re.fullmatch(r"\d{4}(?:\.\d{4}){2,3}(?:\.\d{1,3})?|\d{4}\.\d{6}\.\d{5}", s):
        return False
    return 13 <= len(d) <= 19 and len(set(d)) > 1 and _issuer_ok(d) and _luhn(d)


def _luhn(d: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(d)):
        n = int(ch) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0


# Maestro's own ranges; its 13-digit numbers share lengths with EAN-13 barcodes.
_MAESTRO = ("5018", "5020", "5038", "5893", "6304", "6759", "6761", "6762", "6763")


def _issuer_ok(d: str) -> bool:
    """A known issuer's prefix and length (IIN ranges). EAN-13 and UPC-12 barcodes pass Luhn
    one time in ten; 13-digit Visas are retired, so a 13-digit "4…" is a barcode."""
    n, p2, p3, p4, p6 = len(d), int(d[:2]), int(d[:3]), int(d[:4]), int(d[:6])
    if d.startswith(_MAESTRO):
        return 12 <= n <= 19
    checks = (
        (d[0] == "4", n in (16, 19)),  # Visa
        (51 <= p2 <= 55 or 2221 <= p4 <= 2720, n == 16),  # Mastercard
        (p2 in (34, 37), n == 15),  # American Express
        (p4 == 6011 or 644 <= p3 <= 649 or p2 == 65 or 622126 <= p6 <= 622925, 16 <= n <= 19),
        (3528 <= p4 <= 3589, 16 <= n <= 19),  # JCB
        (300 <= p3 <= 305 or p2 in (36, 38, 39) or p4 == 3095, 14 <= n <= 19),  # Diners
        (p2 == 62, 16 <= n <= 19),  # UnionPay
    )
    return any(prefix and length for prefix, length in checks)


def _phones(text: str, regions: tuple[str, ...]):
    for m in PHONE.finditer(text):
        s, shift = m.group(), 0
        # Checked as the international number it is; the span stays the text's.
        if s[:3].upper() == "%2B":
            s, shift = "+" + s[3:], 2
        elif text[max(0, m.start() - 6) : m.start()].lower() == "wa.me/" and s.isdigit():
            s, shift = "+" + s, -1  # a WhatsApp link's number has no +
        span = _phone_span(text, m.start(), s, regions)
        if span:
            end = span[1] + shift
            ext = _EXTENSION.match(text, end)
            yield span[0], ext.end() if ext else end


def _phone_span(text: str, start: int, s: str, regions: tuple[str, ...]):
    """The phone number within a run of digit groups, if any: the whole run, else the run less
    trailing or leading groups ("020 7946 0958 2 times", "room 12 06 12 34 56 78")."""
    if sum(c.isdigit() for c in s) < 7:
        return None
    groups = [m.span() for m in re.finditer(r"\d+", s)]
    for drop_end in range(min(len(groups), 4)):
        hi = groups[len(groups) - 1 - drop_end][1]
        for drop_start in range(min(len(groups) - drop_end, 3)):
            if drop_start and s.startswith("+"):
                break
            lo = groups[drop_start][0] if drop_start else 0
            lo -= 1 if lo and s[lo - 1] == "(" else 0
            sub = s[lo:hi]
            whole = not drop_start and not drop_end
            if sum(c.isdigit() for c in sub) >= 7 and is_phone(
                text, start + lo, sub, regions, whole
            ):
                # Groups left before a number written as its region writes one are apart from
                # it ("room 12 06 12 34 56 78"); before one written otherwise they may be its
                # own digits ("2 84 05 73 157 087 49", a NIR with a wrong key): the run goes.
                if drop_start and not _written_as_phone(sub, regions):
                    lo = 0
                return start + lo, start + hi
    return None


def is_phone(text: str, start: int, s: str, regions: tuple[str, ...], whole: bool = True) -> bool:
    """Whether ``s`` (found at ``start`` of ``text``) is a phone number: see the module's
    docstring for the rules. A word that says otherwise ("order", "card") does not outweigh a
    number written as phones are (``_written_as_phone``) and ``whole``: the run of digit groups
    it was found in, none left out."""
    digits = "".join(c for c in s if c.isdigit())
    if not 7 <= len(digits) <= 15 or _DATE.fullmatch(s) or _ISO_DATE.search(s):
        return False
    international = s.startswith("+") or (s.startswith("00") and not s.startswith("000"))
    context = _context(text, start, start + len(s))
    if international:
        number = "+" + digits[2:] if s.startswith("00") else s
        return _valid_anywhere(number) or (
            (context is True or _international_groups(number) == _groups(s))
            and _possible_anywhere(number)
        )
    if context is False and not (whole and _written_as_phone(s, regions)):
        return False
    if not _plausible_layout(s, regions):
        return False
    if context is not True and _ZIP4.fullmatch(s):
        return False
    separated = not s.isdigit()
    if not separated and context is not True:
        return False  # a bare run of digits: an order number as often as a phone
    if any(_valid_in(s, region) for region in regions):
        return True
    nanp = _NANP_LAYOUT.fullmatch(s) or (context is True and len(digits) == 10)
    return bool(nanp) and any(_possible_in(s, r) for r in regions if _calling_code(r) == 1)


def _written_as_phone(s: str, regions: tuple[str, ...]) -> bool:
    """Whether ``s`` is written as a phone number and nothing else: valid in one of the regions,
    and in one region's own groups with its trunk prefix ("07911 123456", "030 12345678",
    "(415) 555-2671", as libphonenumber formats a national number). "04 12 23 35 41 49" is
    valid in Germany, written as Germany writes none."""
    if s.isdigit() or not any(_valid_in(s, r) for r in regions):
        return False
    groups = _groups(s)
    bare = s.lstrip("(")
    return any(
        (_calling_code(r) == 1 or bare.startswith(_national_prefix(r) or "\0"))
        and _national_groups(s, r) == groups
        for r in regions
    )


@lru_cache(maxsize=4096)
def _national_groups(s: str, region: str) -> tuple[int, ...] | None:
    """The digit groups of ``s`` as libphonenumber writes it in ``region``, if possible there."""
    import phonenumbers

    number = _parse(s, region)
    if number is None or not phonenumbers.is_possible_number(number):
        return None
    return _groups(phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.NATIONAL))


def _plausible_layout(s: str, regions: tuple[str, ...]) -> bool:
    """Groups as phone numbers are written: no single-digit last group ("0-306-40615-2", an
    ISBN) and a single-digit first group only as NANP's 1 or a trunk prefix written apart as
    its region writes it ("8 (495) 123-45-67" in Russia; "0-123-456-789" is a part number)."""
    groups = re.findall(r"\d+", s)
    if len(groups) > 1 and len(groups[-1]) == 1:
        return False
    if len(groups) > 1 and len(groups[0]) == 1 and groups[0] != "1":
        return _written_as_phone(s, regions)
    return True


# Words that say "number" whoever's it is: "order number", "phone number". The word before
# tells (``_context``).
_NUMBER_WORDS = frozenset(
    ["number", "numbers", "no", "num", "nr", "nummer", "numero", "número", "номер", "नंबर", "नम्बर"]
)
# A compound names its number by its head: "Handy-Nr.", "Mobilnummer" a phone's, "Bestell-Nr."
# an order's.
_NUMBER_SUFFIX = re.compile(r"-?(?:nr|nummer)$|-(?:no|num|number)$")


def _context(text: str, start: int, end: int) -> bool | None:
    """True if the nearest word before ``start`` (within 40 characters) says phone, False if
    it says order/ISBN/..., else None. A word that only says "number" goes by the word before
    it ("order number" is an order's). The word after counts when nothing comes before: the
    first three words after ``end`` ("9876543210 is my mobile", "… is my order number")."""
    before = [w.lower() for w in _WORD.findall(text, max(0, start - 40), start)]
    for i in range(len(before) - 1, -1, -1):
        said = _says(before, i)
        if said is not None:
            return said
    after = [w.lower() for w in _WORD.findall(text, end, end + 30)[:3]]
    for i in range(len(after)):
        said = _says(after, i)
        if said is not None:
            return said
    return None


def _says(words: list[str], i: int) -> bool | None:
    """Whether ``words[i]`` says phone (True), something else (False), or neither (None)."""
    word = _NUMBER_SUFFIX.sub("", words[i]) or words[i]
    if _UNSPACED_PHONE_WORDS.search(word):
        return True
    if word in _NUMBER_WORDS and i > 0 and words[i - 1] in NOT_PHONE_WORDS:
        return False
    if word in PHONE_WORDS:
        return True
    if word in NOT_PHONE_WORDS:
        return False
    return None


@lru_cache(maxsize=4096)
def _valid_in(s: str, region: str) -> bool:
    number = _parse(s, region)
    if number is None:
        return False
    import phonenumbers

    if not phonenumbers.is_valid_number_for_region(number, region):
        return False
    if _calling_code(region) == 1:
        return True
    # Written without the trunk 0 ("1299000"), only a mobile is a phone (India's "98765 43210").
    prefix = _national_prefix(region)
    if not prefix or s.lstrip("(").startswith(prefix):
        return True
    kind = phonenumbers.number_type(number)
    return kind in (phonenumbers.PhoneNumberType.MOBILE,
                    phonenumbers.PhoneNumberType.FIXED_LINE_OR_MOBILE)  # fmt: skip


@lru_cache(maxsize=4096)
def _possible_in(s: str, region: str) -> bool:
    import phonenumbers

    number = _parse(s, region)
    return number is not None and phonenumbers.is_possible_number(number)


def _valid_anywhere(s: str) -> bool:
    import phonenumbers

    number = _parse(s, None)
    return number is not None and phonenumbers.is_valid_number(number)


def _groups(s: str) -> tuple[int, ...]:
    """The lengths of the digit groups of a number as written."""
    return tuple(len(g) for g in re.findall(r"\d+", s))


@lru_cache(maxsize=4096)
def _international_groups(s: str) -> tuple[int, ...] | None:
    """The digit groups of ``+…`` as libphonenumber writes it: a number kept for fiction
    ("+44 7700 900123") is no valid one, yet written in its country's groups it is a phone."""
    import phonenumbers

    number = _parse(s, None)
    if number is None:
        return None
    return _groups(phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.INTERNATIONAL))


def _possible_anywhere(s: str) -> bool:
    import phonenumbers

    number = _parse(s, None)
    return number is not None and phonenumbers.is_possible_number(number)


def _parse(s: str, region: str | None):
    import phonenumbers

    try:
        return phonenumbers.parse(s, region)
    except phonenumbers.NumberParseException:
        return None


@cache
def _calling_code(region: str) -> int:
    import phonenumbers

    return phonenumbers.country_code_for_region(region)


@cache
def _national_prefix(region: str) -> str | None:
    import phonenumbers

    meta = phonenumbers.PhoneMetadata.metadata_for_region(region)
    return meta.national_prefix if meta else None


def check_regions(regions: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Region codes as phonenumbers knows them (``FR``, ``IN``), upper-cased; else ValueError."""
    import phonenumbers

    out = tuple(str(r).strip().upper() for r in regions)
    unknown = [r for r in out if r not in phonenumbers.SUPPORTED_REGIONS]
    if unknown or not out:
        raise ValueError(
            f"unknown phone region(s) {', '.join(unknown) or '(none given)'}: "
            "two-letter ISO codes such as US, GB, DE, FR, IN"
        )
    return out
