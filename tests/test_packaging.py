"""The wheel: it builds, carries the templates and site assets, installs and runs on its own.

The wheel is installed with ``--no-deps`` into a fresh virtual environment that has no codexmem
of its own; the dependencies come from this environment's site-packages through a ``.pth`` line
(a plain path, so the editable install's own ``.pth`` hook is not run there).
"""

from __future__ import annotations

import os
import subprocess
import sysconfig
import zipfile
from pathlib import Path

import pytest
from store_fixtures import PYTHON, REPO_ROOT

from codexmem.errors import CodexmemError
from codexmem.resources import data_dir

EXAMPLE = REPO_ROOT / "store-example"


def _run(args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CODEXMEM_STORE", "PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _shipped(folder: str) -> set[str]:
    """The files of a top-level data folder that a wheel must carry (not dotfiles)."""
    root = REPO_ROOT / folder
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    }


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    done = _run([PYTHON, "-m", "build", "--wheel", "--outdir", str(out), str(REPO_ROOT)], cwd=out)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    [built] = out.glob("codexmem_git-*.whl")
    return built


@pytest.mark.slow
def test_the_wheel_carries_templates_and_site_assets(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in ("templates", "site"):
        shipped = {f"codexmem/_data/{folder}/{rel}" for rel in _shipped(folder)}
        assert shipped <= names, sorted(shipped - names)[:5]
    assert any(n.startswith("codexmem/_data/templates/") for n in names)
    assert any(n.startswith("codexmem/_data/site/") for n in names)
    assert "codexmem/resources.py" in names and "codexmem/store/store.py" in names
    assert "codexmem/mcp/tools_list.json" in names  # served as the tools/list answer
    assert not [n for n in names if n.startswith(("tests/", "store-example/", "scripts/"))]
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "codexmem = codexmem.cli:entry" in zipfile.ZipFile(wheel).read(entry_points).decode()


@pytest.mark.slow
def test_the_installed_wheel_runs_from_a_fresh_venv(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    done = _run([PYTHON, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    vpython = venv / "bin" / "python"
    purelib = _run([str(vpython), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=tmp_path)
    site_packages = Path(purelib.stdout.strip())
    (site_packages / "_codexmem_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    done = _run(
        [
            PYTHON,
            "-m",
            "pip",
            "--python",
            str(vpython),
            "install",
            "--no-deps",
            "--no-index",
            "--disable-pip-version-check",
            str(wheel),
        ],
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    where = _run(
        [
            str(vpython),
            "-c",
            "import codexmem, codexmem.resources as r;"
            " print(codexmem.__file__); print(r.data_dir('templates')); print(r.data_dir('site'))",
        ],
        cwd=tmp_path,
    )
    assert where.returncode == 0, where.stderr
    module, templates, site = where.stdout.splitlines()
    assert module.startswith(str(site_packages)), "the wheel's codexmem must be the one imported"
    assert templates == str(site_packages / "codexmem" / "_data" / "templates")
    assert site == str(site_packages / "codexmem" / "_data" / "site")

    codexmem = str(venv / "bin" / "codexmem")
    done = _run([codexmem, "--help"], cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("usage: codexmem"), done.stderr
    done = _run([codexmem, "check", "--store", str(EXAMPLE)], cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout.splitlines()[-1].startswith(f"check ok: {EXAMPLE}: ")


def test_data_dir_in_the_source_tree() -> None:
    # Editable install: the folders at the top of the repository.
    assert data_dir("templates") == REPO_ROOT / "templates"
    assert data_dir("site") == REPO_ROOT / "site"
    with pytest.raises(CodexmemError, match="missing"):
        data_dir("no-such-folder")
