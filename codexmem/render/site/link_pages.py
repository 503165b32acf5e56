"""Long lists of links on pages of their own, so a page stays small however much links to it.

A session that wrote 3,000 notes listed every one under "Linked from" (a 703 KB page), and a file
named by 3,000 notes listed them all (701 KB). A page now shows at most ``GROUP_SHOWN`` links of
each group; when a group has more, every link to the record is listed on ``<page>/links/<n>/``
pages of ``PAGE_LINKS`` each, in the same order (group, then id), and the group says how many
more there are and where.
"""

from __future__ import annotations

from typing import Any

from codexmem.render.site.data import Rec
from codexmem.render.site.pieces import beside

TEMPLATE = "links.html"
GROUP_SHOWN = 50
PAGE_LINKS = 500
"""Links on one page of the full list: at most about 400 bytes each, so a page stays near 200 KB."""


def link_pages(path: str, context: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Move the links of the page at ``path`` past ``GROUP_SHOWN`` a group to pages of their own
    (``TEMPLATE``): the path and context of each (none when every group is short)."""
    groups: list[Rec] | None = context.get("backlinks")
    if not groups or all(len(g["refs"]) <= GROUP_SHOWN for g in groups):
        return []
    folder = path.removesuffix("index.html")
    flat = [(g["group"], ref) for g in groups for ref in g["refs"]]
    total = len(flat)
    pages = (total + PAGE_LINKS - 1) // PAGE_LINKS
    shown: list[Rec] = []
    position = 0
    for g in groups:
        more = len(g["refs"]) - GROUP_SHOWN
        entry = {"group": g["group"], "refs": g["refs"][:GROUP_SHOWN]}
        if more > 0:
            # The page that holds the first link not shown here.
            entry["more"] = {"count": more, "url": f"{folder}links/{(position + GROUP_SHOWN) // PAGE_LINKS + 1}/"}
        shown.append(entry)
        position += len(g["refs"])
    context["backlinks"] = shown
    out = []
    for n in range(1, pages + 1):
        start, end = (n - 1) * PAGE_LINKS, min(n * PAGE_LINKS, total)
        page_groups: list[Rec] = []
        for group, ref in flat[start:end]:
            if not page_groups or page_groups[-1]["group"] != group:
                page_groups.append({"group": group, "refs": []})
            page_groups[-1]["refs"].append(ref)
        page = {
            **beside(context, folder, f"Links to {context['title']}, {start + 1:,} to {end:,} of {total:,}"),
            "backlinks": page_groups,
            "first": start + 1,
            "last": end,
            "total": total,
            "previous": f"{folder}links/{n - 1}/" if n > 1 else None,
            "next": f"{folder}links/{n + 1}/" if n < pages else None,
        }
        out.append((f"{folder}links/{n}/index.html", page))
    return out
