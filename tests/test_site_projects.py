"""Many projects: every page's menu and the home page name the first ones and link to the list of
all (``projects/``), so a page does not grow with the number of projects."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from merge_fixtures import new_repo

from codexmem.render.site import build_site
from codexmem.render.site.build import MENU_PROJECTS
from codexmem.render.site.pages import HOME_PROJECTS

EXTRA = 40


def test_the_menu_and_home_name_the_first_projects_and_link_to_the_list_of_all(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "shop")
    config_path = repo.store_root / "codexmem.yaml"
    config = yaml.safe_load(config_path.read_text())
    system = config["projects"][0]["system"]
    config["projects"] += [{"id": f"proj_pkg_{n:03d}", "name": f"pkg-{n:03d}", "system": system} for n in range(EXTRA)]
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    names = [p["name"] for p in sorted(config["projects"], key=lambda p: p["id"])]  # the site's order: by id
    out = tmp_path / "site"
    build_site(repo.store(), out, search=False)

    home = (out / "index.html").read_text()
    menu = home[home.index('<details class="menu">') : home.index("</details>")]
    assert re.findall(r"<li><a [^>]*>([^<]+)</a></li>", menu) == [*names[:MENU_PROJECTS], f"All {len(names)} projects"]
    assert f"and {len(names) - HOME_PROJECTS} more, in" in home
    start = home.index('<ul class="projects">')
    listed = home[start : home.index("</ul>", start)]
    assert len(re.findall(r"<li>", listed)) == HOME_PROJECTS

    index = out / "projects" / "index.html"
    assert 'aria-current="page">All' in index.read_text()  # the menu marks the list as the current page
    rows = [row for chunk in index.parent.glob("projects-*.json") for row in json.loads(chunk.read_text())["rows"]]
    assert sorted(row[1][0] for row in rows) == sorted(n.lower() for n in names)
    for row in rows:  # every row leads to its project's page
        href = re.search(r'href="([^"]+)"', row[4])
        assert href is not None and (index.parent / href.group(1) / "index.html").resolve().is_file()


def test_the_list_of_projects_is_reached_from_the_menu_and_a_projects_breadcrumb_however_few(tmp_path: Path) -> None:
    """With as few projects as the menu holds, nothing linked to projects/: the menu had no "All"
    entry and a project page's breadcrumb "Projects" was plain text."""
    repo = new_repo(tmp_path / "shop")
    out = tmp_path / "site"
    build_site(repo.store(), out, search=False)
    home = (out / "index.html").read_text()
    menu = home[home.index('<details class="menu">') : home.index("</details>")]
    assert '<li><a href="projects/">All projects</a></li>' in menu
    project = next((out / "projects").glob("proj_*/index.html")).read_text()
    assert '<li><a href="../../projects/">Projects</a></li>' in project
