"""Where the files that ship beside the code live: Jinja templates and static site assets.

A wheel carries them inside the package (``codexmem/_data/<name>``, see pyproject's
force-include); an editable install reads them from the repository's top level.
"""

from __future__ import annotations

from pathlib import Path

from codexmem.errors import CodexmemError

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The folder ``name`` (``templates``, ``site``) from the wheel, else from the source tree."""
    bundled = _PACKAGE / "_data" / name
    if bundled.is_dir():
        return bundled
    source = _PACKAGE.parent / name
    if source.is_dir():
        return source
    raise CodexmemError(
        "ERR_INVALID_STATE",
        f"codexmem's {name}/ files are missing (looked in {bundled} and {source}): reinstall codexmem",
    )
