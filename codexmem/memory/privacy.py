"""What must never be written: private payloads, and credentials in the caller's texts.

Privacy is decided before anything touches the store, so a private note or handoff leaves no
trace at all. Credentials are screened on the raw arguments, before normalization: a token
slugged into a tag or folded by path cleaning no longer looks like one, yet would still be
written. The store's own screen in ``txn.put`` stays the backstop for anything composed later.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from codexmem.errors import CodexmemError, Warnings, invalid_input
from codexmem.memory.text import slug_tag
from codexmem.store.store import Store

PRIVATE = frozenset({"private", "do-not-store", "ephemeral-only"})
"""Private intents and tags, as slugs: ``do_not_store`` and ``do-not-store`` are one value."""
NOT_PRIVATE = frozenset({"", "none", "public", "normal", "default"})
_WRAP = "arguments"


def is_private(privacy_intent: str, tags: Iterable[str] = ()) -> bool:
    """Does the caller ask for nothing to be stored, by ``privacy_intent`` or by a tag?

    An intent that is neither known private nor known ordinary is refused rather than ignored:
    a misspelt ``privat`` must not quietly store what was meant to stay private.
    """
    intent = slug_tag(privacy_intent)
    if intent not in PRIVATE | NOT_PRIVATE:
        raise invalid_input(
            "privacy_intent",
            "must be private, do_not_store or ephemeral_only (nothing is written), or empty, none, public, normal "
            "or default (stored as usual)",
        )
    return intent in PRIVATE or any(slug_tag(tag) in PRIVATE for tag in tags)


def not_stored(what: str, warnings: Warnings, **data: Any) -> dict[str, Any]:
    """The answer to a private write: ``ok`` with the record null and ``suppressed: true``."""
    warnings.add("WARN_PRIVATE_NOT_STORED", f"the {what} is marked private: nothing was written")
    return {what: None, **data, "suppressed": True}


def screen_arguments(store: Store, warnings: Warnings, texts: Mapping[str, Any]) -> dict[str, Any]:
    """``texts`` (argument name -> raw value) with credentials refused or redacted, per the store config.

    A refusal is ERR_SECRET_DETECTED whose ``error.fields`` name the arguments (``content``,
    ``tags[1]``, ``next_steps[0]``) and never echo the secret; redaction leaves
    ``[REDACTED:<kind>]`` and warns WARN_SECRET_REDACTED.
    """
    from codexmem.store.screen import screen

    # Nested one level down: the store's screen skips id-like keys only at the top of a record,
    # and an external_id the caller made up is free text here.
    try:
        wrapped, redacted = screen({_WRAP: dict(texts)}, store.config.privacy.secrets)
    except CodexmemError as exc:
        raise _named_as_arguments(exc) from None
    if redacted:
        names = [path.removeprefix(_WRAP + ".") for path in redacted]
        warnings.add("WARN_SECRET_REDACTED", "credentials were redacted before storing: " + ", ".join(names[:5]))
    clean: dict[str, Any] = wrapped[_WRAP]
    return clean


def _named_as_arguments(exc: CodexmemError) -> CodexmemError:
    prefix = _WRAP + "."
    fields = [{**f, "field": str(f["field"]).removeprefix(prefix)} for f in exc.fields or []]
    return CodexmemError(exc.code, exc.message.replace(prefix, ""), fields=fields, **exc.extra)
