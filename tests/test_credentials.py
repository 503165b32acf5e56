"""Credential scanner: full recall on the corpus, zero false positives, redaction that holds.

The corpus (``secrets_corpus.py``) builds every credential at run time from a seeded RNG, so
the repository never contains a realistic secret literal.
"""

from __future__ import annotations

import itertools
import time

import pytest
import secrets_corpus as corpus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codexmem.credentials import SecretFinding, find_secrets, redact, shannon_entropy

KINDS = {
    "aws_access_key",
    "aws_secret_key",
    "github_token",
    "slack_token",
    "openai_key",
    "generic_api_key",
    "jwt",
    "private_key",
    "url_password",
    "env_secret",
    "google_api_key",
    "stripe_key",
    "password",
    "connection_string",
}

SAMPLES = corpus.samples()
CASES = corpus.cases()
LOOKALIKES = corpus.lookalikes()


def _expected(case: corpus.Case) -> SecretFinding:
    start = case.text.index(case.secret)
    return SecretFinding(case.kind, start, start + len(case.secret))


def _case_id(case: corpus.Case) -> str:
    return f"{case.kind}-{case.shape}"


# ------------------------------------------------------------------------------ the corpus


def test_corpus_is_big_enough_and_covers_every_kind() -> None:
    assert len(SAMPLES) >= 40
    assert {s.kind for s in SAMPLES} == KINDS
    assert all(sum(s.kind == k for s in SAMPLES) >= 4 for k in KINDS)
    assert len(LOOKALIKES) >= 60
    assert len({c.shape for c in CASES}) >= 5
    # every sample really is embedded in its cases
    assert all(c.secret in c.text for c in CASES)


def test_corpus_is_deterministic() -> None:
    assert corpus.samples() == SAMPLES
    assert corpus.lookalikes() == LOOKALIKES


# ---------------------------------------------------------------------------------- recall


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_every_credential_is_found_with_its_kind(case: corpus.Case) -> None:
    assert find_secrets(case.text) == [_expected(case)]


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_redact_replaces_exactly_the_secret(case: corpus.Case) -> None:
    out, kinds = redact(case.text)
    assert kinds == [case.kind]
    assert case.secret not in out
    assert out == case.text.replace(case.secret, f"[REDACTED:{case.kind}]")
    for line in case.secret.splitlines():  # no fragment of a multi-line key survives
        if len(line.strip()) >= 16:
            assert line.strip() not in out


def test_all_cases_in_one_document() -> None:
    """Many secrets in one text: each found once, sorted, non-overlapping, all redacted."""
    sep = "\n\n---\n\n"
    doc = sep.join(c.text for c in CASES)
    found = find_secrets(doc)
    assert [f.kind for f in found] == [c.kind for c in CASES]
    assert all(a.end <= b.start for a, b in itertools.pairwise(found))
    out, kinds = redact(doc)
    assert set(kinds) == KINDS
    assert all(c.secret not in out for c in CASES)
    assert find_secrets(out) == []


# ------------------------------------------------------------------------ false positives


@pytest.mark.parametrize("text", LOOKALIKES)
def test_lookalike_is_not_flagged(text: str) -> None:
    assert find_secrets(text) == []
    assert redact(text) == (text, [])


def test_lookalikes_in_one_note_are_untouched() -> None:
    note = "\n".join(LOOKALIKES)
    assert find_secrets(note) == []
    assert redact(note) == (note, [])


def test_detection_and_false_positive_rates() -> None:
    detected = sum(find_secrets(c.text) == [_expected(c)] for c in CASES)
    flagged = sum(bool(find_secrets(t)) for t in LOOKALIKES)
    recall = detected / len(CASES)
    fp_rate = flagged / len(LOOKALIKES)
    print(
        f"\nsecret scanner: {len(SAMPLES)} credentials in {len(CASES)} embeddings, "
        f"{len(LOOKALIKES)} look-alikes -> detection rate {recall:.1%} ({detected}/{len(CASES)}), "
        f"false-positive rate {fp_rate:.1%} ({flagged}/{len(LOOKALIKES)})"
    )
    assert recall == 1.0
    assert fp_rate == 0.0


# ------------------------------------------------------------------------- focused checks


def test_redact_reports_kinds_once_in_order_of_appearance() -> None:
    gh = [c for c in CASES if c.kind == "github_token" and c.shape == "alone"]
    jwt = next(c for c in CASES if c.kind == "jwt" and c.shape == "alone")
    text = f"first {gh[0].secret}, then {jwt.secret}, then {gh[1].secret}."
    out, kinds = redact(text)
    assert kinds == ["github_token", "jwt"]
    assert out == "first [REDACTED:github_token], then [REDACTED:jwt], then [REDACTED:github_token]."


def test_specific_kind_wins_over_generic_assignment() -> None:
    stripe = next(s.value for s in SAMPLES if s.kind == "stripe_key")
    assert [f.kind for f in find_secrets(f'api_key = "{stripe}"')] == ["stripe_key"]
    assert [f.kind for f in find_secrets(f"STRIPE_SECRET_KEY={stripe}")] == ["stripe_key"]


def test_span_is_the_value_not_the_line() -> None:
    value = next(s.value for s in SAMPLES if s.kind == "generic_api_key")
    text = f'    client_secret = "{value}"  # rotate monthly'
    (finding,) = find_secrets(text)
    assert text[finding.start : finding.end] == value


def test_env_values_follow_dotenv_rules() -> None:
    """``NAME=value`` is a .env line (any literal is a password); ``NAME = "..."`` is code."""
    phrase = "correct horse battery " + "staple"
    assert [f.kind for f in find_secrets(f'DB_PASSWORD="{phrase}"')] == ["env_secret"]
    assert find_secrets(f'ERROR_PASSWORD = "{phrase}"') == []
    assert find_secrets("DB_PASSWORD=${DB_PASSWORD}") == []
    assert find_secrets("SESSION_SECRET=/run/secrets/session") == []


def test_redaction_markers_are_inert() -> None:
    for kind in sorted(KINDS):
        marker = f"[REDACTED:{kind}]"
        for text in (marker, f"api_key={marker}", f"DB_PASSWORD={marker}", f"https://u:{marker}@h/"):
            assert find_secrets(text) == []


def test_shannon_entropy() -> None:
    assert shannon_entropy("") == 0.0
    assert shannon_entropy("aaaa") == 0.0
    assert shannon_entropy("abcd") == pytest.approx(2.0)
    assert shannon_entropy("0123456789abcdef") == pytest.approx(4.0)


@pytest.mark.parametrize(
    "text",
    [
        "a" * 200_000,
        "=" * 100_000,
        "token=" * 20_000,
        ("-" * 5 + "BEGIN PRIVATE KEY" + "-" * 5 + "\n") * 5_000,
        "eyJ" + "a" * 100_000 + "." + "b" * 100_000,
        "https://" + "u:" * 50_000,
        "Aa1_" * 50_000,
    ],
    ids=["letters", "equals", "assignments", "pem-headers", "jwt-like", "url-colons", "identifier-ish"],
)
def test_pathological_inputs_stay_linear(text: str) -> None:
    started = time.perf_counter()
    find_secrets(text)
    assert time.perf_counter() - started < 2.0


def test_scanning_a_note_is_fast() -> None:
    """A regression guard only (generous bound); the real budget is well under 1 ms."""
    note = corpus.filler_note(6000)
    assert len(note) == 6000
    best = min(_timed(note) for _ in range(20))
    assert best < 0.005


def _timed(text: str) -> float:
    started = time.perf_counter()
    find_secrets(text)
    return time.perf_counter() - started


# ------------------------------------------------------------------------------ properties

_SECRET_TEXTS = [c.text for c in CASES]
_pieces = st.lists(
    st.one_of(st.sampled_from(_SECRET_TEXTS), st.sampled_from(LOOKALIKES), st.text(max_size=40)),
    max_size=8,
)
_glue = st.sampled_from(["", " ", "\n", "\n\n", "=", ": ", '"', "'", "/", "@", ":", "_", "-"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=_pieces, glue=st.lists(_glue, min_size=8, max_size=8))
def test_redacted_output_never_contains_a_finding(pieces: list[str], glue: list[str]) -> None:
    text = "".join(p + g for p, g in zip(pieces, glue, strict=False))
    out, kinds = redact(text)
    assert find_secrets(out) == []
    assert redact(out) == (out, [])
    assert set(kinds) <= KINDS
    assert bool(kinds) == bool(find_secrets(text))


@settings(max_examples=200, deadline=None)
@given(picked=st.lists(st.sampled_from(CASES), min_size=1, max_size=5), noise=st.lists(st.text(max_size=40)))
def test_embedded_credentials_never_survive_redaction(picked: list[corpus.Case], noise: list[str]) -> None:
    parts = [c.text for c in picked] + noise
    text = "\n\n".join(parts)
    out, _kinds = redact(text)
    for case in picked:
        assert case.secret not in out


@settings(max_examples=500, deadline=None)
@given(st.text())
def test_find_secrets_never_raises_and_returns_valid_spans(text: str) -> None:
    found = find_secrets(text)
    for f in found:
        assert f.kind in KINDS
        assert 0 <= f.start < f.end <= len(text)
    assert all(a.end <= b.start for a, b in itertools.pairwise(found))
    out, _ = redact(text)
    assert find_secrets(out) == []
