"""The static site of a store: data loaded once, pages planned, written incrementally, indexed by Pagefind."""

from codexmem.render.site.build import BuildReport, build_site

__all__ = ["BuildReport", "build_site"]
