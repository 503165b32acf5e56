"""Deterministic corpus for the credential-scanner tests.

Credential samples are assembled at run time from a seeded :class:`random.Random` and from
prefix fragments, so no realistic-looking secret literal is ever stored in the repository (a
secret scanner or a reviewer would rightly flag one). Look-alikes are harmless by definition and
are mostly written out, with hashes and ids derived at run time too.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid
from dataclasses import dataclass

SEED = 20240601

UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
DIGITS = string.digits
ALNUM = UPPER + LOWER + DIGITS
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

# Prefixes are split so that not even a prefix+body pattern appears as one literal.
P_AKIA, P_ASIA = "AK" + "IA", "AS" + "IA"
P_GH = "g" + "h"
P_GH_PAT = "github" + "_pat_"
P_XOX = "xo" + "x"
P_SK = "s" + "k-"
P_AIZA = "AI" + "za"
P_LIVE = "_li" + "ve_"
PEM_DASHES = "-" * 5


@dataclass(frozen=True)
class Sample:
    """One credential value and how it should be reported."""

    kind: str
    value: str


@dataclass(frozen=True)
class Case:
    """A credential embedded in text; ``secret`` must be exactly the reported span."""

    kind: str
    shape: str
    text: str
    secret: str


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def s(self, alphabet: str, n: int) -> str:
        """Random string that mixes character classes (as real credentials do)."""
        while True:
            v = "".join(self.rng.choice(alphabet) for _ in range(n))
            classes = sum(any(c in cls for c in v) for cls in (UPPER, LOWER, DIGITS))
            if classes >= min(2, sum(any(c in cls for c in alphabet) for cls in (UPPER, LOWER, DIGITS))):
                return v

    def b64url(self, data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    def bytes(self, n: int) -> bytes:
        return self.rng.randbytes(n)


def _pem_lines(g: _Gen, label: str, nbytes: int, headers: tuple[str, ...] = ()) -> list[str]:
    kind = f"{label} PRIVATE KEY" if label else "PRIVATE KEY"
    body = base64.b64encode(g.bytes(nbytes)).decode()
    lines = [f"{PEM_DASHES}BEGIN {kind}{PEM_DASHES}", *headers]
    if headers:
        lines.append("")
    lines += [body[i : i + 64] for i in range(0, len(body), 64)]
    lines.append(f"{PEM_DASHES}END {kind}{PEM_DASHES}")
    return lines


def _pgp_lines(g: _Gen) -> list[str]:
    kind = "PGP PRIVATE KEY BLOCK"
    body = base64.b64encode(g.bytes(300)).decode()
    crc = base64.b64encode(g.bytes(3)).decode()
    return [
        f"{PEM_DASHES}BEGIN {kind}{PEM_DASHES}",
        "",
        *[body[i : i + 64] for i in range(0, len(body), 64)],
        "=" + crc,
        f"{PEM_DASHES}END {kind}{PEM_DASHES}",
    ]


def _jwt(g: _Gen, alg: str, sig_bytes: int) -> str:
    header = {"alg": alg, "typ": "JWT"}
    payload = {
        "sub": str(g.rng.randint(10**6, 10**9)),
        "name": g.rng.choice(["Ada Lovelace", "Grace Hopper", "Alan Turing"]),
        "iat": g.rng.randint(1_600_000_000, 1_800_000_000),
        "scope": "repo:read",
    }
    parts = [json.dumps(header, separators=(",", ":")), json.dumps(payload, separators=(",", ":"))]
    return ".".join([*(g.b64url(p.encode()) for p in parts), g.b64url(g.bytes(sig_bytes))])


def samples(seed: int = SEED) -> list[Sample]:
    """At least four samples of every kind, all deterministic for ``seed``."""
    g = _Gen(seed)
    out: list[Sample] = []
    add = out.append
    for prefix in (P_AKIA, P_AKIA, P_AKIA, P_ASIA):
        add(Sample("aws_access_key", prefix + g.s(UPPER + DIGITS, 16)))
    for _ in range(4):
        add(Sample("aws_secret_key", g.s(B64, 40)))
    for letter in "pousr":
        add(Sample("github_token", f"{P_GH}{letter}_" + g.s(ALNUM, 36)))
    add(Sample("github_token", P_GH_PAT + g.s(ALNUM, 22) + "_" + g.s(ALNUM, 59)))
    for letter in "bpars":
        token = f"{P_XOX}{letter}-" + "-".join([g.s(DIGITS, 12), g.s(DIGITS, 13), g.s(ALNUM, 24)])
        add(Sample("slack_token", token))
    for _ in range(2):
        hook = f"https://hooks.slack.com/services/T{g.s(UPPER + DIGITS, 10)}/B{g.s(UPPER + DIGITS, 10)}/"
        add(Sample("slack_token", hook + g.s(ALNUM, 24)))
    add(Sample("openai_key", P_SK + g.s(ALNUM, 48)))
    add(Sample("openai_key", P_SK + "proj-" + g.s(B64URL, 74) + g.s(ALNUM, 2)))
    add(Sample("openai_key", P_SK + "proj-" + g.s(ALNUM, 64)))
    add(Sample("openai_key", P_SK + "svcacct-" + g.s(B64URL, 60) + g.s(ALNUM, 2)))
    for _ in range(4):
        add(Sample("google_api_key", P_AIZA + g.s(ALNUM, 2) + g.s(B64URL, 31) + g.s(ALNUM, 2)))
    for prefix in ("sk", "sk", "rk", "rk"):
        add(Sample("stripe_key", prefix + P_LIVE + g.s(ALNUM, g.rng.choice([24, 34, 99]))))
    add(Sample("jwt", _jwt(g, "HS256", 32)))
    add(Sample("jwt", _jwt(g, "HS512", 64)))
    add(Sample("jwt", _jwt(g, "RS256", 256)))
    add(Sample("jwt", _jwt(g, "ES256", 64)))
    add(Sample("private_key", "\n".join(_pem_lines(g, "RSA", 600))))
    add(Sample("private_key", "\n".join(_pem_lines(g, "EC", 120))))
    add(Sample("private_key", "\n".join(_pem_lines(g, "OPENSSH", 400))))
    add(Sample("private_key", "\n".join(_pem_lines(g, "", 640))))
    add(Sample("private_key", "\n".join(_pem_lines(g, "ENCRYPTED", 700))))
    dek = ("Proc-Type: 4,ENCRYPTED", "DEK-Info: AES-128-CBC," + g.s("0123456789ABCDEF", 32))
    add(Sample("private_key", "\n".join(_pem_lines(g, "RSA", 600, dek))))
    add(Sample("private_key", "\n".join(_pgp_lines(g))))
    for _ in range(5):
        add(Sample("url_password", g.s(ALNUM, g.rng.randint(12, 24)) + g.rng.choice(["", "!", "%21", "-", "~"])))
    for _ in range(3):
        add(Sample("env_secret", g.s(ALNUM, g.rng.randint(10, 30)) + g.rng.choice(["", "!", "#", "%"])))
    add(Sample("env_secret", "hunter" + g.s(DIGITS, 3) + "!"))
    add(Sample("env_secret", "Tr0ub4dor" + g.s(DIGITS, 2)))
    for _ in range(6):
        add(Sample("generic_api_key", g.s(ALNUM + "-_", g.rng.randint(20, 44))))
    for _ in range(4):  # short tokens: 8 to 15 characters under a secret, token or api_key name
        add(Sample("generic_api_key", g.s(ALNUM, g.rng.randint(8, 15))))
    words = ["hunter", "sunshine", "dragon", "monkey", "football", "letmein", "shadow", "summer"]
    for _ in range(6):  # passwords people choose: words and digits, which no entropy test catches
        first, second = g.rng.sample(words, 2)
        add(Sample("password", first + g.s(DIGITS, g.rng.randint(1, 4)) + second))
    for _ in range(5):  # a connection string's password may be short: the other keys say what it is
        add(Sample("connection_string", g.s(ALNUM + "!#%*-_", g.rng.randint(6, 20))))
    add(Sample("generic_api_key", g.s(LOWER + DIGITS, 32)))
    add(Sample("generic_api_key", g.s("0123456789abcdef", 48)))
    return out


# ------------------------------------------------------------------------------ embedding

_INTROS = (
    "While debugging the deploy I pasted this by mistake:",
    "Note to self -- the staging config currently uses",
    "Handoff: the integration test needs",
    "From the incident channel, 14:05 UTC:",
)

_ENV_NAMES = {
    "aws_access_key": "AWS_ACCESS_KEY_ID",
    "github_token": "GITHUB_TOKEN",
    "slack_token": "SLACK_BOT_TOKEN",
    "openai_key": "OPENAI_API_KEY",
    "google_api_key": "GOOGLE_API_KEY",
    "stripe_key": "STRIPE_SECRET_KEY",
    "jwt": "SESSION_TOKEN",
}
_YAML_NAMES = {
    "aws_access_key": "access_key_id",
    "github_token": "token",
    "slack_token": "bot_token",
    "openai_key": "api_key",
    "google_api_key": "maps_api_key",
    "stripe_key": "stripe_secret",
    "jwt": "id_token",
}


def _shaped_cases(s: Sample, i: int) -> list[Case]:
    v, k = s.value, s.kind
    intro = _INTROS[i % len(_INTROS)]
    cases = [
        Case(k, "alone", v, v),
        Case(k, "sentence", f"{intro} {v} -- rotate it before Friday.", v),
        Case(k, "env", f"# .env.staging\n{_ENV_NAMES[k]}={v}\nLOG_LEVEL=debug\n", v),
        Case(k, "yaml", f"service:\n  name: billing\n  {_YAML_NAMES[k]}: {v}\n  retries: 3\n", v),
        Case(k, "json", json.dumps({"name": "billing", _YAML_NAMES[k]: v, "retries": 3}), v),
        Case(k, "markdown", f"Run this:\n\n```bash\ncurl -H 'X-Auth: {v}' https://api.internal.test/v2/ping\n```\n", v),
    ]
    if not v.startswith("https://"):
        cases.append(Case(k, "url", f"Webhook target: https://api.internal.test/v1/events?access_token={v}&page=2", v))
    return cases


def _aws_secret_cases(s: Sample) -> list[Case]:
    v, k = s.value, s.kind
    return [
        Case(k, "ini", f"[default]\nregion = eu-west-1\naws_secret_access_key = {v}\n", v),
        Case(k, "env", f"AWS_REGION=eu-west-1\nAWS_SECRET_ACCESS_KEY={v}\n", v),
        Case(k, "yaml", f"aws:\n  region: eu-west-1\n  secret_access_key: {v}\n", v),
        Case(k, "json", json.dumps({"AccessKeyId": "see-vault", "SecretAccessKey": v}), v),
        Case(k, "python", f'session = boto3.Session(aws_secret_access_key="{v}")', v),
    ]


def _private_key_cases(s: Sample, i: int) -> list[Case]:
    v, k = s.value, s.kind
    lines = v.split("\n")
    indented = "\n".join("    " + line if line else "" for line in lines)
    escaped = "\\n".join(lines)
    first_body = next(n for n, line in enumerate(lines) if n and len(line) >= 16 and ":" not in line)
    truncated = "\n".join(lines[: first_body + 2])  # header plus two base64 lines, no END
    return [
        Case(k, "alone", v, v),
        Case(k, "prose", f"{_INTROS[i % len(_INTROS)]}\n\n{v}\n\nThat key is for the staging bastion.", v),
        Case(k, "json", '{"type": "service_account", "private_key": "' + escaped + '\\n", "client_id": "1"}', escaped),
        Case(k, "yaml", f"tls:\n  key: |\n{indented}\n  cert_path: /etc/ssl/cert.pem\n", indented.lstrip()),
        Case(k, "markdown", f"```\n{v}\n```\n", v),
        Case(k, "truncated", f"the paste got cut off:\n{truncated}\n\nanyway, moving on.", truncated),
    ]


def _url_password_cases(s: Sample, i: int) -> list[Case]:
    v, k = s.value, s.kind
    user, scheme, host = [
        ("app", "postgres", "db.internal:5432/app"),
        ("", "redis", "cache.internal:6379/0"),
        ("deploy", "https", "git.internal.test/org/repo.git"),
        ("svc_reader", "mysql", "10.0.3.7:3306/reports"),
        ("guest", "amqp", "mq.internal/vhost"),
    ][i % 5]
    url = f"{scheme}://{user}:{v}@{host}"
    return [
        Case(k, "alone", url, v),
        Case(k, "sentence", f"Connect with {url} (read-only replica).", v),
        Case(k, "env", f"DATABASE_URL={url}\n", v),
        Case(k, "yaml", f"datasource:\n  url: {url}\n", v),
        Case(k, "json", json.dumps({"dsn": url, "pool": 5}), v),
    ]


def _env_secret_cases(s: Sample, i: int) -> list[Case]:
    v, k = s.value, s.kind
    name = ["DB_PASSWORD", "SESSION_SECRET", "PAYMENTS_API_KEY", "SMTP_PASS", "INTERNAL_SERVICE_TOKEN"][i % 5]
    return [
        Case(k, "line", f"{name}={v}", v),
        Case(k, "export", f"export {name}={v}\n", v),
        Case(k, "block", f"# local dev\nPORT=8080\n{name}={v}\nDEBUG=true\n", v),
        Case(k, "quoted", f'{name}="{v}"\n', v),
        Case(k, "compose", f"services:\n  web:\n    environment:\n      - {name}={v}\n", v),
    ]


def _generic_cases(s: Sample, i: int) -> list[Case]:
    v, k = s.value, s.kind
    name = ["api_key", "secret", "token", "password", "client_secret", "auth_token", "apiKey", "access_token"][i % 8]
    return [
        Case(k, "python", f'{name} = "{v}"', v),
        Case(k, "yaml", f"auth:\n  {name}: {v}\n  timeout: 30\n", v),
        Case(k, "json", json.dumps({"endpoint": "/v1/items", name: v}), v),
        Case(k, "query", f"GET https://api.internal.test/v1/items?{name}={v}&limit=10", v),
        Case(k, "cli", f"mytool sync --{name.replace('_', '-')}={v} --verbose", v),
        Case(k, "annotated", f"    {name}: str = '{v}'", v),
        Case(k, "bearer", f"curl -H 'Authorization: Bearer {v}' https://api.internal.test/", v),
    ]


def _short_generic_cases(s: Sample, i: int) -> list[Case]:
    v, k = s.value, s.kind
    name = ["secret", "api_key", "token", "client_secret"][i % 4]
    return [
        Case(k, "yaml", f"service:\n  {name}: {v}\n  timeout: 30\n", v),
        Case(k, "assignment", f"{name}={v}", v),
        Case(k, "json", json.dumps({"endpoint": "/v1/items", name: v}), v),
        Case(k, "python", f'{name} = "{v}"', v),
    ]


def _password_cases(s: Sample, i: int) -> list[Case]:
    v, k = s.value, s.kind
    return [
        Case(k, "prose", f"db {['password', 'passwd', 'pwd'][i % 3]}={v}", v),
        Case(k, "yaml", f"database:\n  user: app\n  password: {v}\n  pool: 5\n", v),
        Case(k, "json", json.dumps({"user": "app", "password": v}), v),
        Case(k, "python", f'password = "{v}"', v),
        Case(k, "ini", f"[client]\nuser = app\npasswd = {v}\n", v),
        Case(k, "cli", f"mysql -u app --password={v} reports", v),
        Case(k, "note", f"{_INTROS[i % len(_INTROS)]} the admin login, pwd: {v} (rotate it)", v),
        Case(k, "passphrase", f"ssh key passphrase: {v}", v),
    ]


def _connection_string_cases(s: Sample, i: int) -> list[Case]:
    v, k = s.value, s.kind
    return [
        Case(k, "ado", f"Server=db.internal;Database=app;User Id=app;Password={v};", v),
        Case(k, "odbc", f"Driver={{ODBC Driver 18}};Server=tcp:db,1433;Uid=sa;Pwd={v};Encrypt=yes", v),
        Case(k, "libpq", f"host=db.internal port=5432 dbname=app user=app password={v} sslmode=require", v),
        Case(k, "jdbc", f"jdbc:sqlserver://db:1433;databaseName=app;user=sa;password={v};", v),
        Case(
            k,
            "appsettings",
            json.dumps({"ConnectionStrings": {"Default": f"Server=db;Database=app;User Id=app;Password={v};"}}),
            v,
        ),
    ]


def cases(seed: int = SEED) -> list[Case]:
    """Every sample embedded in several realistic shapes."""
    out: list[Case] = []
    counters: dict[str, int] = {}
    for s in samples(seed):
        i = counters[s.kind] = counters.get(s.kind, -1) + 1
        if s.kind == "aws_secret_key":
            out += _aws_secret_cases(s)
        elif s.kind == "private_key":
            out += _private_key_cases(s, i)
        elif s.kind == "url_password":
            out += _url_password_cases(s, i)
        elif s.kind == "env_secret":
            out += _env_secret_cases(s, i)
        elif s.kind == "generic_api_key" and len(s.value) < 16:
            out += _short_generic_cases(s, i)
        elif s.kind == "generic_api_key":
            out += _generic_cases(s, i)
        elif s.kind == "password":
            out += _password_cases(s, i)
        elif s.kind == "connection_string":
            out += _connection_string_cases(s, i)
        else:
            out += _shaped_cases(s, i)
    return out


# ----------------------------------------------------------------------------- look-alikes


def lookalikes(seed: int = SEED) -> list[str]:
    """Texts that contain nothing secret and must never be flagged."""
    g = _Gen(seed + 1)
    words = [f"note {n}" for n in range(6)]
    md5 = [hashlib.md5(w.encode(), usedforsecurity=False).hexdigest() for w in words]
    sha1 = [hashlib.sha1(w.encode(), usedforsecurity=False).hexdigest() for w in words]
    sha256 = [hashlib.sha256(w.encode()).hexdigest() for w in words]
    sha512_b64 = base64.b64encode(hashlib.sha512(b"left-pad").digest()).decode()
    uuids = [str(uuid.UUID(bytes=g.bytes(16), version=4)) for _ in range(4)]
    ulids = ["01" + "".join(g.rng.choice(CROCKFORD) for _ in range(24)) for _ in range(6)]
    b64_text = base64.b64encode(b"The deploy finished at noon and every check passed.").decode()
    b64_json = base64.b64encode(b'{"page": 2, "size": 50}').decode()
    header_only = f"{PEM_DASHES}BEGIN RSA PRIVATE KEY{PEM_DASHES}"
    public_key = "\n".join(
        [
            f"{PEM_DASHES}BEGIN PUBLIC KEY{PEM_DASHES}",
            *[base64.b64encode(g.bytes(48)).decode() for _ in range(4)],
            f"{PEM_DASHES}END PUBLIC KEY{PEM_DASHES}",
        ]
    )
    ssh_pub = "ssh-ed25519 " + base64.b64encode(b"\x00\x00\x00\x0bssh-ed25519" + g.bytes(36)).decode()
    doc_key = P_AKIA + "IOSFODNN7" + "EXAMPLE"
    return [
        # hashes, digests, commit ids
        md5[0],
        f"sha1 of the blob is {sha1[0]}",
        f"checksum={sha256[0]}",
        f"sha256:{sha256[1]}",
        f"image: ghcr.io/org/app@sha256:{sha256[2]}",
        f'etag: "{md5[1]}"',
        f"secret = {sha256[3]}",
        f"api_key_checksum: {sha256[4]}",
        f"token={sha1[1]}",
        f'"integrity": "sha512-{sha512_b64}"',
        f"SESSION_TOKEN_SHA={sha1[2]}",
        f"fixed in commit {sha1[3][:7]}, see also {sha1[4]}",
        f"git checkout {sha1[5][:12]} && git log -1",
        f"token: {md5[2]}",
        f"DEPLOY_KEY={md5[3]}",
        f"password: sha256:{sha256[5]}",
        # uuids and ulid ids
        uuids[0],
        f"request_id={uuids[1]}",
        f"token: {uuids[2]}",
        f"API_KEY_ID={uuids[3]}",
        f"see note_{ulids[0]} and sess_{ulids[1]}",
        f"token=sess_{ulids[2]}",
        f'{{"id": "item_{ulids[3]}", "session_token": "sess_{ulids[4]}"}}',
        f"handoff_{ulids[5]} supersedes evt_{ulids[0]}",
        # base64 of ordinary text
        f"The fixture payload is {b64_text} (decodes to a status line).",
        f"cursor: {b64_json}",
        f"data:text/plain;base64,{b64_text}",
        # versions, dates, paths
        "Upgraded to v1.2.3 then 2.0.0-rc.1; python 3.11.7 on node 20.11.1.",
        "TOKEN_VERSION=2",
        "released 2024-06-01T12:30:45Z, window 09:00-17:00",
        "private_key_path: /etc/ssl/private/server.key",
        "SSH_KEY=~/.ssh/id_ed25519",
        "See src/codexmem/secrets.py and ~/.aws/credentials for the layout.",
        "C:\\Users\\dev\\AppData\\Local\\token_cache.json",
        # URLs without credentials
        "https://github.com/org/repo/pull/42#discussion_r123",
        "ssh://git@github.com/org/repo.git",
        "git@github.com:org/repo.git",
        "postgres://db.internal:5432/app",
        "postgres://user:@db.internal:5432/app",
        "redis://:@cache.internal:6379",
        "http://localhost:8080/@admin/settings",
        "https://alice@example.com/path?q=1",
        "https://api.example.com/v1/items?page_token=&limit=10",
        "postgres://${DB_USER}:${DB_PASSWORD}@${DB_HOST}/app",
        "mysql://root:password@localhost/test",
        "https://user:****@example.com/",
        # ordinary key = value
        "sort_key=created_at",
        "primary_key=id",
        "token=EOF",
        "partition_key: tenant_id",
        'cache_key = "user_profile_v2_backup"',
        "SORT_KEY=created_at",
        "PRIMARY_KEY=id",
        "max_tokens=4096",
        "token_type: bearer",
        "password_min_length=12",
        "next_page_token: NextPageTokenValue",
        'secret_name = "prod/payments/stripe"',
        "token = get_token_from_cache(user)",
        "CACHE_KEY=user_profile_v2",
        "ENCRYPTION_KEY_PATH=/run/secrets/enc.key",
        "idempotency_key=import-2024-06-01-batch-7",
        # placeholders and references
        "API_KEY=${API_KEY}",
        "api_key: <your-key>",
        "password: changeme",
        'token = os.environ["GITHUB_TOKEN"]',
        'api_key = os.getenv("OPENAI_API_KEY")',
        "api_key=xxx",
        "DB_PASSWORD=",
        "deploy_key: ${{ secrets.DEPLOY_KEY }}",
        "password=********",
        "client_secret: your_client_secret_here",
        "token: {{ vault_token }}",
        "const apiKey = process.env.API_KEY;",
        "AWS_SECRET_ACCESS_KEY=$(aws configure get aws_secret_access_key)",
        f"AWS_ACCESS_KEY_ID={P_AKIA}XXXXXXXXXXXXXXXX",
        f"The docs use {doc_key} as the sample access key id.",
        f"token: {P_GH}p_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        f"{P_SK}...abcd (truncated in the dashboard)",
        'password = "$2b$12$' + "".join(g.rng.choice(ALNUM + "./") for _ in range(53)) + '"',
        "SECRET_KEY=insecure",
        "ADMIN_PASSWORD=true",
        # CSS, prose, near-misses of token shapes
        "color: #1e90ff; background: #ff00aa; --token-color: #a1b2c3;",
        "The password reset flow emails a one-time link.",
        "Pass the api_key parameter in the query string, never the body.",
        "Rotate the secret every 90 days; the token expires after an hour.",
        "Token: see the vault entry for staging.",
        "Send a Bearer token in the Authorization header.",
        "Authorization: Bearer ${ACCESS_TOKEN}",
        "We use sk-learn style names and scikit-learn itself.",
        "branch sk-some-long-hyphenated-feature-branch-name merged",
        "eyJhbGciOiJIUzI1NiJ9 is just the header of an example",
        f"the {header_only} line marks a key file; never commit one",
        public_key,
        f"authorized_keys entry: {ssh_pub} ci@runner",
        "xoxo-gossip-girl and xoxb- are not tokens",
        "arn:aws:iam::123456789012:role/deploy",
        "Contact alice@example.com or bob+ops@example.org",
        "[REDACTED:github_token] was removed from this note",
        # code that merely mentions secret-ish names
        'MSG_WRONG_PASSWORD = "Wrong password, try again"',
        "credentials = service_account.Credentials.from_service_account_file(key_path)",
        "if (t.prevToken == null || t.prevToken == `;`) { return; }",
        "onresumptiontoken: options2?.onresumptiontoken",
        "X25519PrivateKey = rust_openssl.hpke.MLKEM768X25519PrivateKey",
        "APP_SECRET=@Microsoft.KeyVault(SecretUri=https://kv.vault.azure.net/secrets/app)",
        # what a password, secret or token assignment is not (issue 18: each of these must pass)
        "password=${DB_PASSWORD}",
        "password: <your password>",
        'api_key = os.environ["API_KEY"]',
        '"password": "********"',
        "the password field needs 8 or more characters",
        "password: Optional[str] = None",
        "password: SecretStr",
        "password: PasswordField",
        "password = get_password(user)",
        "password = PasswordHasher()",
        "password = self._password",
        "password = db_password",
        "password: process.env.DB_PASSWORD",
        "password: '{{ .Values.db.password }}'",
        "password: !vault |",
        "password: incorrect",
        "Password: Expired",
        "the password: see 1Password",
        "old_password: hunter2",
        "password_min_length: 12",
        "password_hash = bcrypt.hashpw(password, salt)",
        "if password == confirm_password:",
        "reset_password: /api/v1/users/reset",
        "passwd:         files systemd",
        "pwd = os.getcwd()",
        "PWD=/home/runner/work/app",
        "pwd: ${{ github.workspace }}",
        "api_key: required",
        "api_key = settings.OPENAI_API_KEY",
        "token = request.headers.get('Authorization')",
        "token: NPM_TOKEN",
        "secret: db-credentials",
        "secretName: tls-secret",
        "Server=db.internal;Database=app;Integrated Security=true;",
        "Server=db;Database=app;User Id=app;Password=;",
        "host=db port=5432 dbname=app user=app password=$PGPASSWORD",
        "Password must contain a digit; pwd reuse is blocked.",
    ]


def filler_note(size: int = 6000) -> str:
    """A realistic ~``size``-character memory note (look-alikes, prose, code), for timing."""
    parts: list[str] = []
    lk = lookalikes()
    i = 0
    while sum(len(p) + 1 for p in parts) < size:
        parts.append(lk[i % len(lk)])
        parts.append(_INTROS[i % len(_INTROS)] + " The retry loop now backs off exponentially.")
        i += 1
    return "\n".join(parts)[:size]
