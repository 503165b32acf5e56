"""The store config, ``codexmem.yaml``: the system, its projects and their relations, policies."""

from __future__ import annotations

import functools
import re
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field

from codexmem.models.base import ProjectId, StrictModel, SystemId

MAX_NAME = 200
"""A project's or system's name, as init and the config accept it."""


class Relation(StrictModel):
    project: str
    relation_type: str = Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")
    store: str | None = None
    """Another store holding the project, as a path relative to this store's folder."""


class ProjectDecl(StrictModel):
    id: ProjectId
    name: str = Field(min_length=1, max_length=MAX_NAME)
    system: str | None = None
    remotes: list[str] = Field(default_factory=list)
    roots: list[str] = Field(default_factory=list)
    """Work trees of the project, as paths relative to the store's folder (``..`` for its own repository)."""
    relations: list[Relation] = Field(default_factory=list)
    preferred_tags: list[str] = Field(default_factory=list)


class SystemDecl(StrictModel):
    id: SystemId
    name: str = Field(min_length=1, max_length=MAX_NAME)


class PrivacyConfig(StrictModel):
    secrets: Literal["refuse", "redact"] = "refuse"


class SessionConfig(StrictModel):
    idle_recovery_minutes: int = Field(default=120, ge=1, le=60 * 24 * 30)


class EventsConfig(StrictModel):
    author_email: bool = False
    """Record the author's git ``user.email`` in each event. Off by default: events are committed
    and published on the site, so an address is shared only when the store asks for it."""


class SiteConfig(StrictModel):
    base_url: str | None = None
    title: str | None = None


_URL_UNSAFE = re.compile(r"[\s\"'<>`\\{}|^]")
BASE_URL_EXAMPLE = "https://org.github.io/repo/"


def base_url_problem(url: str) -> tuple[str | None, str]:
    """What is wrong with a site's address (None: nothing), and the address as an error may show it.

    An http(s) URL with a host and nothing else the feed would publish or break on (credentials,
    a query, a fragment, spaces, quotes), since every link of the feed is this text with a path
    appended. Checked where it is used (``codexmem site``) and where it is committed (``check``);
    not by the config's model, so a bad address never stops the server from starting.
    """
    if _URL_UNSAFE.search(url) or not url.isprintable():
        return "must not hold spaces, control characters, quotes or angle brackets (percent-encode them)", url
    if not url.startswith(("https://", "http://")):
        return "must start with https:// or http://", url
    parts = urlsplit(url)
    if not parts.hostname:
        return "has no host", url
    if "@" in parts.netloc:  # nor does the error show the credentials
        shown = url.replace(parts.netloc, "***@" + parts.netloc.rpartition("@")[2], 1)
        return "must not carry a user name or password (the feed publishes it)", shown
    if "?" in url or "#" in url:
        return "must not carry a query (?) or fragment (#)", url
    try:
        parts.port  # noqa: B018 - urlsplit checks the port only when asked for it
    except ValueError:
        return "has a port outside 0..65535", url
    return None, url


STORE_FORMAT = 2
"""Format 2: merge-safe record files, events with values and authors (``codexmem migrate`` brings format 1 up)."""


class StoreConfig(StrictModel):
    format: int
    system: SystemDecl | None = None
    projects: list[ProjectDecl] = Field(default_factory=list)
    privacy: PrivacyConfig = Field(default_factory=PrivacyConfig)
    sessions: SessionConfig = Field(default_factory=SessionConfig)
    events: EventsConfig = Field(default_factory=EventsConfig)
    site: SiteConfig = Field(default_factory=SiteConfig)

    def project(self, project_id: str) -> ProjectDecl | None:
        return self._projects_by_id.get(project_id)

    @functools.cached_property
    def _projects_by_id(self) -> dict[str, ProjectDecl]:
        """Made once: a relation is looked up per search, and 1,000 relations scanned the list each."""
        return {p.id: p for p in reversed(self.projects)}  # the first declaration of an id wins, as before
