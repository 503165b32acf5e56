"""Fixtures shared by many test modules; helpers to import live in the ``*_fixtures.py`` modules."""

from __future__ import annotations

from pathlib import Path

import pytest
from memory_fixtures import WEB_REMOTE, make_repo, shared_store


@pytest.fixture
def anyio_backend() -> str:
    """The MCP client's async tests run on asyncio."""
    return "asyncio"


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """A shared store (no project of its own) in a fresh temporary folder."""
    return shared_store(tmp_path / "store")


@pytest.fixture
def web(tmp_path: Path) -> Path:
    """A real git checkout of the seed's order-web repository."""
    return make_repo(tmp_path / "work" / "order-web", remote=WEB_REMOTE)
