"""Memory's part of ``codexmem check``: what sessions, notes, handoffs and imports say of each other.

Plain functions over what the store's check could read (:class:`~codexmem.store.check.StoreScan`),
composed with the others by codexmem/check.py.
"""

from __future__ import annotations

from codexmem.memory.anchors import HeadTree, anchor_root, head_tree
from codexmem.store.check import Finding, Level, StoreScan
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
                    found.append(
                        Finding(rel, "error", f"session_id {data['session_id']} does not exist: {_GONE_SESSION}")
                    )
                elif session["scope"] != data["scope"]:
                    message = f"scope does not match the scope of its session {data['session_id']}"
                    found.append(Finding(rel, "error", message))
            if declared:
                project = data["scope"]["project_id"]
                decl = config.project(project)
                if decl is not None and decl.system and decl.system != data["scope"]["system_id"]:
                    message = f"scope.system_id does not match the system of {project} in {CONFIG_FILE}"
                    found.append(Finding(rel, "error", message))
            if kind is NOTE and data.get("superseded_by"):
                found += _note_reference(scan, rel, "superseded_by", data["superseded_by"], data["note_id"])
            if kind is HANDOFF and data.get("status") != "retracted":  # a retracted one is served to no one
                for note_id in data.get("related_note_ids", []):
                    found += _note_reference(scan, rel, "related_note_ids", note_id, data["handoff_id"])
            memory_id = data.get("durable_memory_id") if kind is IMPORT else None
            if memory_id:
                found += _note_reference(scan, rel, "durable_memory_id", memory_id, "")
    for decl in config.projects:
        for relation in decl.relations:
            if relation.store is None and config.project(relation.project) is None:
                message = f"{decl.id} relates to {relation.project}, which is not declared here"
                found.append(Finding(CONFIG_FILE, "warning", message))
    return found


_GONE_SESSION = (
    "restore the session's file from git (`git checkout REV -- PATH`, REV the last commit that has it), "
    "then run `codexmem resolve`"
)
_RETRACTED_FIX = {
    "superseded_by": "nothing an agent sees replaces this note now: retract it too (`codexmem retract {rid} "
    "--reason TEXT`) if it is wrong as well, else leave it",
    "related_note_ids": "agents reading this handoff will not be shown that note: retract the handoff too "
    "(`codexmem retract {rid} --reason TEXT`) if it rests on the note, else leave it",
    "durable_memory_id": "the imported memory is no longer served: nothing to fix if the retraction was meant",
}


_MISSING_FIX = {
    "superseded_by": "the note that replaced this one is gone (a revert removes the notes its pull request "
    "added): in this file set `status: active` and delete the superseded_by line, or name a note that is "
    "there, then run `codexmem resolve`",
    "related_note_ids": "delete that id from related_note_ids in this file, then run `codexmem resolve`",
    "durable_memory_id": "delete the durable_memory_id line in this file, or name a note that is there, then run "
    "`codexmem resolve`",
}


def _note_reference(scan: StoreScan, rel: str, field: str, note_id: str, rid: str) -> list[Finding]:
    """A reference to a note that is gone (an error, but a warning from a handoff) or retracted (a
    warning that names the fix: CI passes right after a person retracts a note)."""
    target = scan.get(NOTE, note_id)
    if target is None:
        level: Level = "warning" if field == "related_note_ids" else "error"
        return [Finding(rel, level, f"{field}: note {note_id} does not exist: {_MISSING_FIX[field]}")]
    if target.get("status") == "retracted":
        why = f" ({target['status_reason']})" if target.get("status_reason") else ""
        fix = _RETRACTED_FIX[field].format(rid=rid)
        return [Finding(rel, "warning", f"{field}: note {note_id} was retracted{why}: {fix}")]
    return []


def file_path_findings(scan: StoreScan) -> list[Finding]:
    """Notes naming a file their project's repository does not hold at HEAD, and did not hold when
    the note was saved (a file gone since is ``codexmem stale``'s news, not a mistake). Only for a
    project whose work tree this store can see; one tree listing per project."""
    found: list[Finding] = []
    if scan.config is None:
        return found
    trees: dict[str, HeadTree | None] = {}
    for rel, data in scan.of_kind(NOTE):
        if data.get("status") == "retracted" or not data.get("file_paths"):
            continue
        project = data["scope"]["project_id"]
        if project not in trees:
            root = anchor_root(scan.config, scan.root, project)
            trees[project] = head_tree(root) if root is not None else None
        tree = trees[project]
        if tree is None:
            continue
        anchored = (data.get("anchor") or {}).get("files", {})
        for i, path in enumerate(data["file_paths"]):
            if path not in anchored and not tree.has(path):
                message = (
                    f"file_paths[{i}]: {path} is not in the repository at HEAD ({tree.commit[:12]}): correct the "
                    "path in the file, then run `codexmem resolve`"
                )
                found.append(Finding(rel, "warning", message))
    return found
