"""Credential scanner run on every write, so secrets never land in a git-tracked memory store.

Two families of rules:

* *Shaped* tokens whose format alone identifies them (``AKIA...``, ``ghp_...``, ``xoxb-...``,
  ``sk-...``, ``AIza...``, ``sk_live_...``, JWTs, PEM private keys, ``user:pass@`` in URLs).
* *Contextual* values: the right-hand side of ``api_key=...``, ``secret: ...``,
  ``DB_PASSWORD=...`` and friends. The name alone says nothing about the value, so these must
  also look random (length, character classes, Shannon entropy) and must not be something that
  is known to be harmless: placeholders, hashes, UUIDs, record ids, paths, URLs, identifiers.
* *Passwords*: a value of 8 or more characters assigned to ``password``, ``passwd``, ``pwd`` or
  ``passphrase`` (``db password=hunter2hunter2``) is a password even when it is made of words,
  unless it reads as code (a call, an attribute, a variable or type name), a reference or a
  plain word; in a connection string (``Server=db;User Id=app;Password=...``) any value is.

A memory store is full of hashes, commit ids, ULID record ids and prose, so a false positive
blocks a legitimate write; the contextual rules are therefore deliberately conservative and
the shaped rules do the heavy lifting. Everything is standard library; every regex is compiled
once at import and none can backtrack catastrophically (values are length-bounded).
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass

__all__ = ["SecretFinding", "find_secrets", "redact", "shannon_entropy"]


@dataclass(frozen=True)
class SecretFinding:
    """One detected credential; ``start:end`` covers the secret value itself."""

    kind: str
    start: int
    end: int


# Higher rank wins when two rules claim overlapping text: a shaped token inside ``api_key=...``
# is reported as that token, not as a generic assignment.
_RANK: dict[str, int] = {
    "private_key": 0,
    "jwt": 1,
    "aws_access_key": 2,
    "github_token": 3,
    "slack_token": 4,
    "stripe_key": 5,
    "google_api_key": 6,
    "openai_key": 7,
    "aws_secret_key": 8,
    "url_password": 9,
    "connection_string": 10,
    "env_secret": 11,
    "password": 12,
    "generic_api_key": 13,
}

# Each pass consumes unredacted text and no rule but the PEM one (which wins the first pass) can
# match across a marker, so this terminates long before the bound; the bound is a backstop.
_MAX_REDACT_PASSES = 32

# --------------------------------------------------------------------------- shaped rules

_PEM_HEADER = r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
# The body may not run into another BEGIN: a truncated paste must not swallow the next block.
_PEM_FULL = re.compile(
    _PEM_HEADER + r"(?P<body>(?:(?!-----BEGIN ).)*?)-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----",
    re.DOTALL,
)
# A block pasted without its END line: the header plus the base64 / header lines under it.
_PEM_TRUNCATED = re.compile(
    _PEM_HEADER + r"(?P<body>(?:[ \t]*(?:\r?\n|\\n)[ \t]*(?:[A-Za-z0-9+/=]{16,}|[A-Za-z][A-Za-z-]*: [^\n\\]*)?)+)"
)
_PEM_BODY_RUN = re.compile(r"[A-Za-z0-9+/]{16,}")

# Every shaped rule begins with a literal so the regex engine can jump between occurrences
# with a fast substring search; the "nothing token-like before it" boundary is therefore a
# look-behind placed *after* the literal (a leading look-behind costs ~25x on a 6 KB note).
_JWT = re.compile(r"eyJ(?<![A-Za-z0-9_\-]eyJ)[A-Za-z0-9_\-]{8,}={0,2}\.[A-Za-z0-9_\-]{8,}={0,2}\.[A-Za-z0-9_\-]{10,}")
_AWS_ACCESS = re.compile(r"A(?:KIA|SIA)(?<![A-Za-z0-9]A[KS]IA)[A-Z0-9]{16}(?![A-Za-z0-9])")
_GITHUB = re.compile(r"gh[pousr]_(?<![A-Za-z0-9_]gh[pousr]_)[A-Za-z0-9]{36,251}(?![A-Za-z0-9_])")
_GITHUB_PAT = re.compile(r"github_pat_(?<![A-Za-z0-9_]github_pat_)[A-Za-z0-9_]{22,251}(?![A-Za-z0-9_])")
_SLACK = re.compile(
    r"xox[abprs]-(?<![A-Za-z0-9]xox[abprs]-)[A-Za-z0-9]{1,64}(?:-[A-Za-z0-9]{1,64}){1,6}(?![A-Za-z0-9\-])"
)
_SLACK_WEBHOOK = re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{20,300}")
_STRIPE = re.compile(r"(?<![A-Za-z0-9_])[sr]k_(?:live|test)_[A-Za-z0-9]{16,247}(?![A-Za-z0-9_])")
_GOOGLE = re.compile(r"AIza(?<![A-Za-z0-9_\-]AIza)[A-Za-z0-9_\-]{35}(?![A-Za-z0-9_\-])")
_OPENAI = re.compile(r"sk-(?<![A-Za-z0-9_\-]sk-)[A-Za-z0-9_\-]{20,250}(?![A-Za-z0-9_\-])")
# scheme://user:password@host, anchored on the literal "://".
_URL_CREDS = re.compile(
    r"://(?<=[A-Za-z0-9]://)[^\s:/?#@\[\]\"'<>]{0,128}:(?P<v>[^\s/?#@\[\]\"'<>]{1,256})@(?=[A-Za-z0-9\[])"
)

# ----------------------------------------------------------------------- contextual rules

# ``name <sep> value`` is found separator-first (":" and "=" are rare and literal, so this is
# cheap), then the few characters before the separator are checked for a secret-ish name.
# Comparisons (``==``, ``!=``, ``<=``) are not assignments.
_ASSIGN = re.compile(
    r"(?::=|=>|=(?<![=!<>]=)(?!=)|:)(?=[ \t]*(?:(?P<q>[\"'`])(?P<qv>[^\s\"'`]{1,512})(?P=q)"
    r"|(?P<uv>[^\s\"'`,;&|\\(){}<>\[\]=]{1,512}={0,2})))"
)
_NAME_WINDOW = 64
_NAME_HINTS = ("key", "secret", "token", "pass", "pwd", "credential")
# The name must end right before the separator, allowing a closing quote (JSON/YAML keys) and a
# Python/TypeScript annotation (``token: str = "..."``).
_NAME_TAIL = r"[\"']?(?:[ \t]*:[ \t]*[A-Za-z_][A-Za-z0-9_.\[\], |]{0,40})?[ \t]*\Z"
_AWS_SECRET_NAME = re.compile(
    r"(?i:aws[_\-]?secret[_\-]?(?:access[_\-]?)?key|secret[_\-]?access[_\-]?key)" + _NAME_TAIL
)
_AWS_SECRET_VALUE = re.compile(r"[A-Za-z0-9/+]{40}")
_GENERIC_NAME = re.compile(
    r"(?i:api[_\-]?(?:key|secret|token)|apikey|secret[_\-]?key|access[_\-]?key|private[_\-]?key"
    r"|signing[_\-]?key|encryption[_\-]?key|master[_\-]?key|client[_\-]?secret|auth[_\-]?token"
    r"|access[_\-]?token|refresh[_\-]?token|secret|token|passw(?:or)?d|pwd|passphrase|credentials?)" + _NAME_TAIL
)
_PASSWORD_NAME = re.compile(r"(?i:passw(?:or)?d|pwd|passphrase)" + _NAME_TAIL)
_CONTEXT_MIN = 8
"""Contextual values this long or longer are judged: ``api_key=aB3dE5gH``, ``db password=hunter2hunter2``."""
_ALNUM_RUN = re.compile(r"[A-Za-z0-9]{8,}")
# Unquoted values that read as code or prose rather than as a password.
_TYPE_NAME = re.compile(r"[A-Z][a-z]+(?:[A-Z][a-z0-9]*)+")  # SecretStr, PasswordField
_VARIABLE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")  # db_password, DB_PASSWORD
_PLAIN_WORD = re.compile(r"[A-Za-z][a-z]*|[A-Z]+")  # incorrect, Expired, REQUIRED
# ``Password=...`` inside a connection string: ADO.NET / ODBC / JDBC properties or a libpq DSN.
_CONN_PASSWORD = re.compile(r"(?i)(?<![A-Za-z0-9_])(?:password|pwd)[ \t]*=[ \t]*(?P<v>[^;\s\"'{}]{1,256})")
_CONN_CONTEXT = re.compile(
    r"(?i)(?<![A-Za-z0-9_])(?:server|host|hostname|data source|address|database|databasename|dbname"
    r"|initial catalog|uid|user id|user|username)[ \t]*=[ \t]*[^\s;=]"
)
_CONN_WINDOW = 256
_BEARER = re.compile(r"earer(?<![A-Za-z0-9][Bb]earer)(?<=[Bb]earer)[ \t]+(?P<v>[A-Za-z0-9\-._~+/]{16,512}=*)")
# .env / shell / compose lines: UPPER_CASE_NAME=value at the start of a line.
_ENV = re.compile(
    r"(?m)^[ \t]*(?:-[ \t]+)?(?:export[ \t]+)?(?P<name>[A-Z][A-Z0-9_]{0,80})(?P<sp1>[ \t]*)=(?P<sp2>[ \t]*)"
    r"(?:(?P<q>[\"'])(?P<qv>[^\"'\r\n]{1,512})(?P=q)|(?P<uv>[^\s\"']{1,512}))"
)
_ENV_NAME = re.compile(
    r"(?:^|_)(?P<word>SECRET|PASSWORD|PASSWD|PWD|PASS|PASSPHRASE|CREDENTIALS|TOKEN|KEY|APIKEY)$"
    r"|(?:^|_)SECRET_KEY_BASE$"
)
_ENV_STRONG_WORDS = frozenset({"SECRET", "PASSWORD", "PASSWD", "PWD", "PASS", "PASSPHRASE", "CREDENTIALS"})
_ENV_STRONG_ANYWHERE = re.compile(r"(?:^|_)(?:SECRET|PASSWORD|PASSWD)(?:_|$)")
_ENV_PUBLIC = re.compile(r"PUBLIC|PUBLISHABLE|(?:^|_)PUB_")

# ------------------------------------------------------------------- harmless-value tests

_PLACEHOLDER_WORDS = frozenset(
    {
        "password",
        "passwd",
        "pass",
        "pwd",
        "secret",
        "token",
        "key",
        "apikey",
        "changeme",
        "changeit",
        "placeholder",
        "dummy",
        "example",
        "sample",
        "test",
        "testing",
        "foo",
        "bar",
        "foobar",
        "baz",
        "none",
        "null",
        "nil",
        "true",
        "false",
        "undefined",
        "empty",
        "todo",
        "fixme",
        "tbd",
        "redacted",
        "hidden",
        "secretkey",
        "mypassword",
        "yourpassword",
        "mysecret",
        "yoursecret",
        "mytoken",
        "yourtoken",
        "yourkey",
        "yourapikey",
        "myapikey",
        "notasecret",
        "insecure",
        "required",
        "optional",
        "string",
        "str",
        "env",
        "eof",
    }
)
_PLACEHOLDER_SHAPES = re.compile(
    r"(?i)(?:<[^>]*>?|\{\{.*|\{[^}]*\}|\$.*|%.*%|%\(?\w*\)?s|@[\w.]+\(.*|\*+|\.+|x+|-+|_+|#+|0+)", re.DOTALL
)
# Lower-case fragments that mark documentation values, references to a secret store, and our
# own redaction markers (plain substring tests: much cheaper than one big regex).
_PLACEHOLDER_FRAGMENTS = (
    "xxxx",
    "***",
    "...",
    "example",
    "placeholder",
    "changeme",
    "change_me",
    "change-me",
    "dummy",
    "your_",
    "your-",
    "[redacted:",
    "os.environ",
    "getenv",
    "process.env",
    "environ[",
    "env[",
    "secrets.",
    "vault:",
    "op://",
    "ssm:",
    "arn:aws",
)
_CODE_REF = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*[(\[]")
_DOTTED = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(?:\??\.[A-Za-z_$][A-Za-z0-9_$]*)+")  # a.b, a?.b (JS)
_HASH_PREFIX = re.compile(
    r"(?i)^(?:md5|sha-?1|sha-?224|sha-?256|sha-?384|sha-?512|sha3-\d+|blake2[bs]?|blake3|git)[:=\-]"
)
_HEX = re.compile(r"[0-9a-fA-F]+")
_HASH_HEX_LENGTHS = frozenset({32, 40, 56, 64, 96, 128})
_SRI_B64_LENGTHS = frozenset({44, 64, 88})
_B64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_UUID = re.compile(r"(?i)[\{(]?[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}[\})]?")
_ULID_ID = re.compile(r"(?i)(?:[a-z][a-z0-9]{0,15}_)?[0-7][0-9a-hjkmnp-tv-z]{25}")
# Numbers, dates, times and versions, with an optional pre-release tag: 2024-06-01, v1.2.3-rc1.
_VERSION_OR_NUMBER = re.compile(r"(?i)v?[0-9]+(?:[.\-:/+][0-9]+)*(?:[\-+.][a-z]+[0-9]*(?:\.[0-9]+)*)?")
_PATH_START = re.compile(r"^(?:~|\.{1,2})?/|^[A-Za-z]:\\")
_PATH_SEP = re.compile(r"[/\\]")
# Split identifiers into words: separators, camelCase humps, acronym ends (HTTPServer) and
# letter/digit boundaries (Value1320, utf8mb4).
_SPLIT_PIECES = re.compile(
    r"[_.\-:/\\~@+;=, ]+|(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])"
)
_LETTER_DIGIT_SWITCH = re.compile(r"[A-Za-z](?=[0-9])|[0-9](?=[A-Za-z])")
_WORD_PIECE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_CONSONANT_RUN = re.compile(r"[b-df-hj-np-tv-xzB-DF-HJ-NP-TV-XZ]{5,}")
_VOWEL = re.compile(r"[aeiouyAEIOUY]")
_BOOLEANISH = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null", "nil", "0", "1"})


def shannon_entropy(value: str) -> float:
    """Bits per character of ``value``; random tokens score high, words and hashes of hex lower."""
    if not value:
        return 0.0
    counts: dict[str, int] = {}
    for ch in value:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _is_placeholder(value: str) -> bool:
    """Documentation stand-ins, template/env references and our own redaction markers."""
    lowered = value.lower()
    if lowered.strip("\"'`") in _PLACEHOLDER_WORDS:
        return True
    if len(set(lowered)) <= 2:  # "aaaa", "abab", "1111"
        return True
    if any(fragment in lowered for fragment in _PLACEHOLDER_FRAGMENTS):
        return True
    return bool(_PLACEHOLDER_SHAPES.fullmatch(value) or _CODE_REF.match(value))


def _is_hashlike(value: str) -> bool:
    """Digests, commit ids, UUIDs and record ids: high entropy, but public by nature."""
    stripped = _HASH_PREFIX.sub("", value, count=1)
    prefixed = len(stripped) != len(value)
    if _HEX.fullmatch(stripped):
        n = len(stripped)
        if n in _HASH_HEX_LENGTHS or 7 <= n <= 12 or (prefixed and n >= 7):
            return True
    if prefixed and len(stripped) in _SRI_B64_LENGTHS and _B64.fullmatch(stripped):
        return True
    return bool(_UUID.fullmatch(value) or _ULID_ID.fullmatch(value))


def _is_identifier_like(value: str) -> bool:
    """``created_at``, ``user_profile_v2``, ``NextPageToken``, ``src/app/main.py``.

    Every piece must be a word or a number, letters and digits may alternate only a few times,
    and words must be pronounceable: random letters pile up consonants ("Hdxbfi"), real words
    and short acronyms do not.
    """
    if len(value) >= 12 and _HEX.fullmatch(value) and not value.isalpha() and not value.isdigit():
        return False  # "793fbeeda371646e" is a random hex string, not words
    if len(_LETTER_DIGIT_SWITCH.findall(value)) > 3:  # "utf8mb4" has 3; random "k3j5h2..." many
        return False
    pieces = [p for p in _SPLIT_PIECES.split(value) if p]
    if not pieces:
        return True
    odd = 0  # pieces no word looks like: "Xj", "R", "Hdxbfi"
    for piece in pieces:
        if not _WORD_PIECE.fullmatch(piece):
            return False
        letters = piece.strip("0123456789")
        if not letters:
            continue
        if letters.isupper() and len(letters) <= 5:
            odd += len(letters) == 1  # acronyms (HTTP, XML) need no vowel
        elif _CONSONANT_RUN.search(letters) or not _VOWEL.search(letters):
            if len(letters) >= 5:
                return False  # a long unpronounceable chunk: "ntmpxfrf"
            odd += 1
    return odd <= 1 and sum(len(p) for p in pieces) / len(pieces) >= 2.5


def _is_structural(value: str) -> bool:
    """Values that are known-harmless shapes regardless of the name they are assigned to."""
    if "://" in value or _VERSION_OR_NUMBER.fullmatch(value) or _is_hashlike(value):
        return True
    if _DOTTED.fullmatch(value) and _is_identifier_like(value.split(".", 1)[0].rstrip("?")):
        return True  # a code reference: rust_openssl.hpke.MLKEM768X25519PrivateKey
    if _PATH_START.match(value):
        return all(
            _is_identifier_like(segment) or _VERSION_OR_NUMBER.fullmatch(segment)
            for segment in _PATH_SEP.split(value)
            if segment.strip("~.")
        )
    return _is_identifier_like(value)


def _looks_random(value: str, min_len: int) -> bool:
    """Long enough, several character classes and enough entropy for its length."""
    n = len(value)
    if n < min_len:
        return False
    has_lower = has_upper = has_digit = False
    for ch in value:
        if "a" <= ch <= "z":
            has_lower = True
        elif "A" <= ch <= "Z":
            has_upper = True
        elif "0" <= ch <= "9":
            has_digit = True
    if not ((has_digit and (has_lower or has_upper)) or (has_lower and has_upper)):
        return False
    # A random string of length n over an alphabet of k symbols has entropy close to
    # log2(min(n, k)); demand a fixed share of that ceiling (hex keys have k = 16).
    if _HEX.fullmatch(value):
        return shannon_entropy(value) >= 0.7 * math.log2(min(n, 16))
    k = 36 if not (has_lower and has_upper) else 62
    return shannon_entropy(value) >= min(3.5, 0.75 * math.log2(min(n, k)))


def _secret_value(value: str, min_len: int = 16) -> bool:
    """The contextual test: a non-placeholder, non-structural, random-looking value."""
    return (
        len(value) >= min_len
        and not _is_placeholder(value)
        and not _is_structural(value)
        and _looks_random(value, min_len)
    )


def _classes(value: str) -> int:
    """How many of lower case, upper case and digits ``value`` uses."""
    lower = any("a" <= c <= "z" for c in value)
    upper = any("A" <= c <= "Z" for c in value)
    digit = any("0" <= c <= "9" for c in value)
    return lower + upper + digit


def _mixed(value: str) -> bool:
    """Real shaped tokens are random: at least two of lower / upper / digit."""
    return _classes(value) >= 2


# ---------------------------------------------------------------------------- the scanner

_Candidate = tuple[int, int, int, str]  # (rank, start, end, kind)


def _token_ok(kind: str, token: str) -> bool:
    """Post-checks for shaped tokens: real ones are random, documentation ones are not."""
    lowered = token.lower()
    if any(fragment in lowered for fragment in _PLACEHOLDER_FRAGMENTS):
        return False
    if kind == "slack_token" and not token.startswith("https:"):
        return len(token) >= 20 and any("0" <= c <= "9" for c in token)
    if kind in ("openai_key", "github_token", "google_api_key"):
        return _mixed(token[4:])
    if kind == "stripe_key":
        return _mixed(token[8:])
    return True


_SHAPED: tuple[tuple[re.Pattern[str], str], ...] = (
    (_JWT, "jwt"),
    (_AWS_ACCESS, "aws_access_key"),
    (_GITHUB, "github_token"),
    (_GITHUB_PAT, "github_token"),
    (_SLACK, "slack_token"),
    (_SLACK_WEBHOOK, "slack_token"),
    (_GOOGLE, "google_api_key"),
    (_OPENAI, "openai_key"),
)


def _shaped(text: str, out: list[_Candidate]) -> None:
    """Append candidates for every rule whose format alone identifies a credential."""
    if "PRIVATE KEY" in text:
        full_starts: set[int] = set()
        for m in _PEM_FULL.finditer(text):
            if _PEM_BODY_RUN.search(m.group("body")):
                full_starts.add(m.start())
                out.append((_RANK["private_key"], m.start(), m.end(), "private_key"))
        for m in _PEM_TRUNCATED.finditer(text):
            if m.start() not in full_starts and _PEM_BODY_RUN.search(m.group("body")):
                end = m.end()
                while True:  # do not swallow trailing blank lines / literal "\n"
                    if text[m.start() : end].endswith("\\n"):
                        end -= 2
                    elif end > m.start() and text[end - 1] in " \t\r\n":
                        end -= 1
                    else:
                        break
                out.append((_RANK["private_key"], m.start(), end, "private_key"))
    patterns = _SHAPED
    if "k_live_" in text or "k_test_" in text:  # the Stripe rule cannot start with a literal
        patterns = (*patterns, (_STRIPE, "stripe_key"))
    for pattern, kind in patterns:
        for m in pattern.finditer(text):
            if _token_ok(kind, m.group()):
                out.append((_RANK[kind], m.start(), m.end(), kind))
    for m in _URL_CREDS.finditer(text):
        if not _is_placeholder(m.group("v")):
            out.append((_RANK["url_password"], m.start("v"), m.end("v"), "url_password"))


def _env_lines(text: str, out: list[_Candidate]) -> None:
    """``.env``-style ``UPPER_NAME=value`` lines whose name says secret, password, token or key."""
    for m in _ENV.finditer(text):
        name = m.group("name")
        name_match = _ENV_NAME.search(name)
        if name_match is None or _ENV_PUBLIC.search(name):
            continue
        group = "qv" if m.group("qv") is not None else "uv"
        v = m.group(group)
        if _is_placeholder(v) or v.lower() in _BOOLEANISH:
            continue
        strong = (name_match.group("word") or "SECRET") in _ENV_STRONG_WORDS
        strong = strong or bool(_ENV_STRONG_ANYWHERE.search(name))
        # ``NAME=value`` is a .env line; ``NAME = "..."`` is code, where an uppercase constant
        # ending in PASSWORD is as likely an error message as a password.
        dotenv_literal = not (m.group("sp1") or m.group("sp2"))
        if strong and dotenv_literal:
            # A value under DB_PASSWORD= is a password whatever it looks like -- unless it is a
            # digest, a path or a URL (whose own password, if any, the URL rule reports).
            ok = len(v) >= 4 and "://" not in v and not _is_hashlike(v) and not _PATH_START.match(v)
        else:
            ok = _secret_value(v, min_len=8 if dotenv_literal else 16)
        if ok:
            out.append((_RANK["env_secret"], m.start(group), m.end(group), "env_secret"))


def _aws_secret_ok(value: str) -> bool:
    """40 base64 characters that are not a SHA-1 or a placeholder."""
    if not _AWS_SECRET_VALUE.fullmatch(value) or not _mixed(value):
        return False
    return not _is_placeholder(value) and not _is_hashlike(value)


def _token_like(value: str) -> bool:
    """One unbroken run of lower, upper and digits (``udgK6Hikoqx``): a short token, even where the
    entropy test is unsure; identifiers break their words with ``_``, ``-`` or ``.``."""
    if not (_ALNUM_RUN.fullmatch(value) and _classes(value) == 3):
        return False
    return not (_is_placeholder(value) or _is_hashlike(value) or _TYPE_NAME.fullmatch(value))


def _password_ok(value: str, quoted: bool, after: str) -> bool:
    """A value assigned to a password name: a password, unless it reads as something else."""
    if len(value) < _CONTEXT_MIN or _is_placeholder(value) or value.lower() in _BOOLEANISH:
        return False
    if "://" in value or _is_hashlike(value) or _PATH_START.match(value) or _VERSION_OR_NUMBER.fullmatch(value):
        return False
    if _PLAIN_WORD.fullmatch(value):  # "password: incorrect" is a sentence, not a password
        return False
    if quoted:
        return True
    if after[:1] in ("(", "[", ".") or _DOTTED.fullmatch(value):  # get_password(), settings.PASSWORD
        return False
    return not (_TYPE_NAME.fullmatch(value) or _VARIABLE.fullmatch(value))


def _assignments(text: str, out: list[_Candidate]) -> None:
    """``api_key=...``, ``"secret": "..."``, ``db password=...``, ``aws_secret_access_key = ...``, ``Bearer ...``."""
    for m in _ASSIGN.finditer(text):
        group = "qv" if m.group("qv") is not None else "uv"
        v = m.group(group)
        if len(v) < _CONTEXT_MIN:
            continue
        hi = m.start()
        lo = max(0, hi - _NAME_WINDOW)
        window = text[lo:hi].lower()
        if not any(hint in window for hint in _NAME_HINTS):
            continue
        # Value tests first: they are cheap and reject almost everything in ordinary text.
        span = (m.start(group), m.end(group))
        if _aws_secret_ok(v) and _AWS_SECRET_NAME.search(text, lo, hi):
            out.append((_RANK["aws_secret_key"], *span, "aws_secret_key"))
        elif (_secret_value(v, _CONTEXT_MIN) or _token_like(v)) and _GENERIC_NAME.search(text, lo, hi):
            out.append((_RANK["generic_api_key"], *span, "generic_api_key"))
        elif _password_ok(v, group == "qv", text[span[1] : span[1] + 1]) and _PASSWORD_NAME.search(text, lo, hi):
            out.append((_RANK["password"], *span, "password"))
    for m in _BEARER.finditer(text):
        if _secret_value(m.group("v")):
            out.append((_RANK["generic_api_key"], m.start("v"), m.end("v"), "generic_api_key"))


def _connection_strings(text: str, out: list[_Candidate]) -> None:
    """``Password=`` / ``Pwd=`` among a connection string's other keys: any real value is a password."""
    lowered = text.lower()
    if "pwd" not in lowered and "password" not in lowered:
        return
    for m in _CONN_PASSWORD.finditer(text):
        v = m.group("v")
        if len(v) < 4 or _is_placeholder(v) or v.lower() in _BOOLEANISH or _PATH_START.match(v):
            continue
        # A connection string is one line: its other keys are looked for on the password's line.
        lo = max(text.rfind("\n", 0, m.start()) + 1, m.start() - _CONN_WINDOW)
        end = text.find("\n", m.end())
        hi = min(len(text) if end < 0 else end, m.end() + _CONN_WINDOW)
        if _CONN_CONTEXT.search(text, lo, hi):
            out.append((_RANK["connection_string"], m.start("v"), m.end("v"), "connection_string"))


def find_secrets(text: str) -> list[SecretFinding]:
    """All credentials in ``text``, sorted by start and non-overlapping (specific rules win)."""
    candidates: list[_Candidate] = []
    _shaped(text, candidates)
    _env_lines(text, candidates)
    _connection_strings(text, candidates)
    _assignments(text, candidates)
    if not candidates:
        return []
    candidates.sort(key=lambda c: (c[0], c[1], -c[2]))  # best rule first, then longest span
    # Accepted spans never overlap, so kept sorted by start only the neighbours need checking.
    starts: list[int] = []
    taken: list[tuple[int, int, str]] = []
    for _rank, start, end, kind in candidates:
        i = bisect.bisect_right(starts, start)
        if (i and taken[i - 1][1] > start) or (i < len(taken) and taken[i][0] < end):
            continue
        starts.insert(i, start)
        taken.insert(i, (start, end, kind))
    return [SecretFinding(kind, s, e) for s, e, kind in taken]


def _redact_once(text: str, findings: list[SecretFinding]) -> str:
    parts: list[str] = []
    pos = 0
    for f in findings:
        parts.append(text[pos : f.start])
        parts.append(f"[REDACTED:{f.kind}]")
        pos = f.end
    parts.append(text[pos:])
    return "".join(parts)


def redact(text: str) -> tuple[str, list[str]]:
    """Replace each finding with ``[REDACTED:<kind>]``; also return the kinds found, in order.

    Rescans until clean: removing a high-priority token can expose a lower-priority one it was
    shadowing (e.g. the rest of a ``token=...`` value), and the output must never hold a secret.
    """
    kinds: list[str] = []
    for _ in range(_MAX_REDACT_PASSES):
        findings = find_secrets(text)
        if not findings:
            break
        for f in findings:
            if f.kind not in kinds:
                kinds.append(f.kind)
        text = _redact_once(text, findings)
    return text, kinds
