"""Renderers that turn the store into things people read: AGENTS.md and the static site."""
