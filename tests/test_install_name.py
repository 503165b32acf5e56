"""The name that installs this project (issue 18): PyPI's ``codexmem`` is someone else's program.

The distribution is ``codexmem-git``; the import package and the command stay ``codexmem``. Nothing
in the README or docs/ may tell a person to install a name that gets them something else.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTION = "codexmem-git"
# An install command naming the bare `codexmem` (PyPI's unrelated project), in any installer's words.
WRONG_INSTALL = re.compile(
    r"\b(?:pip3?|pipx|uv pip|uv tool|poetry|pdm)\s+(?:install|add)\s+(?:-\S+\s+)*codexmem(?![\w.-])"
)


def documents() -> dict[str, str]:
    paths = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return {p.relative_to(ROOT).as_posix(): p.read_text("utf-8") for p in paths}


def test_the_distribution_name_is_ours_and_the_command_is_codexmem() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    assert project["name"] == DISTRIBUTION
    assert project["scripts"] == {"codexmem": "codexmem.cli:entry"}
    assert (ROOT / "codexmem" / "__init__.py").is_file()


def test_no_document_offers_a_name_that_installs_something_else() -> None:
    found = {name: WRONG_INSTALL.findall(text) for name, text in documents().items()}
    assert {name: hits for name, hits in found.items() if hits} == {}
    assert WRONG_INSTALL.findall("or: pip install codexmem\npipx install codexmem-git") == ["pip install codexmem"]


def test_the_readme_shows_an_install_that_gets_this_project() -> None:
    readme = documents()["README.md"]
    assert "pip install /path/to/this/repository" in readme
    assert f"`{DISTRIBUTION}`" in readme
