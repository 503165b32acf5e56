"""Memory's part of ``codexmem check``: what sessions, notes, handoffs and imports say of each other.

Plain functions over what the store's check could read (:class:`~codexmem.store.check.StoreScan`),
composed with the others by codexmem/check.py.
"""

from __future__ import annotations

from codexmem.store.check import Finding, StoreScan
from codexmem.store.layout import CONFIG_FILE, HANDOFF, IMPORT, NOTE, SESSION


def reference_findings(scan: StoreScan) -> list[Finding]:
    """Sessions that exist, scopes that agree, and references to notes that exist."""
    config = scan.config
    found: list[Finding] = []
    if config is None:
        return found
    declared = {p.id for p in config.projects}
    for kind in (SESSION, NOTE, HANDOFF, IMPORT):
        for rel, data in scan.of_kind(kind):
            if kind is not SESSION:
                session = scan.get(SESSION, data["session_id"])
                if session is None:
                    found.append(Finding(rel, "error", f"session_id {data['session_id']} does not exist"))
                elif session["scope"] != data["scope"]:
                    message = f"scope does not match the scope of its session {data['session_id']}"
                    found.append(Finding(rel, "error", message))
            if declared:
                project = data["scope"]["project_id"]
                decl = config.project(project)
                if decl is not None and decl.system and decl.system != data["scope"]["system_id"]:
                    message = f"scope.system_id does not match the system of {project} in {CONFIG_FILE}"
                    found.append(Finding(rel, "error", message))
            if kind is NOTE and data.get("superseded_by") and scan.get(NOTE, data["superseded_by"]) is None:
                found.append(Finding(rel, "error", f"superseded_by {data['superseded_by']} does not exist"))
            if kind is HANDOFF:
                for note_id in data.get("related_note_ids", []):
                    if scan.get(NOTE, note_id) is None:
                        found.append(Finding(rel, "warning", f"related note {note_id} does not exist"))
            memory_id = data.get("durable_memory_id") if kind is IMPORT else None
            if memory_id and scan.get(NOTE, memory_id) is None:
                found.append(Finding(rel, "error", f"durable_memory_id {memory_id} does not exist"))
    for decl in config.projects:
        for relation in decl.relations:
            if relation.store is None and config.project(relation.project) is None:
                message = f"{decl.id} relates to {relation.project}, which is not declared here"
                found.append(Finding(CONFIG_FILE, "warning", message))
    return found
