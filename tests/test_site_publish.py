"""The Pages job of docs/ci.md: its build command, run as the job runs it, gives a site whose links resolve.

The command is read from the workflow in docs/ci.md (so the documentation and the test cannot
drift apart), the runner's base URL is replaced by a sub-path one, and the result is served
under that sub-path by the real server and every link of every page fetched over HTTP.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
import shutil
import subprocess
import sys
import threading
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import yaml

from codexmem.render.site.serve import make_server

REPO = Path(__file__).resolve().parent.parent
BASE_URL = "https://example.github.io/codexmem/"
PREFIX = "/codexmem/"


def job_command() -> list[str]:
    """The "Build the site" step of the workflow in docs/ci.md, split as a shell would."""
    text = (REPO / "docs/ci.md").read_text("utf-8")
    section = text.split("## Publishing the site", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block is not None, "docs/ci.md: no yaml block under '## Publishing the site'"
    workflow = yaml.safe_load(block.group(1))
    steps = workflow["jobs"]["build"]["steps"]
    run = next(s["run"] for s in steps if s.get("name") == "Build the site")
    run = run.replace("${{ steps.pages.outputs.base_url }}/", BASE_URL)
    assert "${{" not in run
    return shlex.split(run)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "src", "action") and value:
                self.links.append(value)


def test_the_pages_job_builds_a_site_whose_links_resolve_under_its_sub_path(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(REPO / "store-example", repo / ".codexmem", ignore=shutil.ignore_patterns(".cache", ".lock"))
    command = job_command()
    assert command[:2] == ["codexmem", "site"]
    codexmem = Path(sys.executable).parent / "codexmem"
    done = subprocess.run([str(codexmem), *command[1:]], cwd=repo, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    site = repo / "_site"
    assert (site / "index.html").is_file() and (site / "pagefind/parts.json").is_file()

    server = make_server(site, port=0, prefix=PREFIX, quiet=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        targets: set[str] = set()
        pages = sorted(site.rglob("*.html"))
        chunks = [p for p in site.rglob("*.json") if "pagefind" not in p.parts]
        sources = [(p, p.read_text("utf-8")) for p in pages]
        sources += [(c.with_name("index.html"), row[4]) for c in chunks for row in json.loads(c.read_text())["rows"]]
        for page, html in sources:
            parser = _Links()
            parser.feed(html)
            page_url = PREFIX + page.relative_to(site).as_posix()
            for link in parser.links:
                if link.startswith(("http://", "https://", "mailto:", "#")):
                    continue
                target = posixpath.normpath(posixpath.join(posixpath.dirname(page_url), link.split("#")[0]))
                targets.add(target + ("/" if link.split("?")[0].endswith("/") else ""))
        feed = ET.fromstring((site / "feed.xml").read_bytes())
        for link in feed.iter("{http://www.w3.org/2005/Atom}link"):
            href = link.get("href", "")
            assert href.startswith(BASE_URL), href  # the feed's links are absolute under the base URL
            targets.add(PREFIX + href.removeprefix(BASE_URL))
        for part in json.loads((site / "pagefind/parts.json").read_text())["parts"]:
            targets.add(f"{PREFIX}pagefind/{part}/pagefind.js")
        assert len(targets) > 300
        broken = []
        for target in sorted(targets):
            assert target.startswith(PREFIX), f"{target} leaves {PREFIX}"
            try:
                with urllib.request.urlopen(origin + target) as response:
                    assert response.status == 200
            except urllib.error.HTTPError as exc:
                broken.append(f"{target}: {exc.code}")
        assert broken == []
    finally:
        server.shutdown()
        server.server_close()


def test_the_workflow_publishes_the_default_branch_to_pages() -> None:
    text = (REPO / "docs/ci.md").read_text("utf-8")
    block = re.search(r"```yaml\n(.*?)```", text, re.S)
    assert block is not None
    workflow = yaml.safe_load(block.group(1))
    assert workflow[True]["push"]["branches"] == ["main"]  # YAML 1.1 reads the key `on` as true
    assert workflow["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    uses = [s.get("uses", "") for s in workflow["jobs"]["build"]["steps"]]
    assert any(u.startswith("actions/upload-pages-artifact@") for u in uses)
    deploy = workflow["jobs"]["deploy"]
    assert deploy["needs"] == "build" and deploy["environment"]["name"] == "github-pages"
    assert deploy["steps"][0]["uses"].startswith("actions/deploy-pages@")
