"""``codexmem check``: the whole store judged the way CI should see it.

One composition of every check: the store's (layout, files, events), records' (items against
their schemas) and memory's (references between sessions, notes, handoffs and imports). The CLI
and the server both come here, so no check covers less than another. Errors fail the run;
warnings (an interrupted write's leftovers, a version without its event) are printed but pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from codexmem.memory.checks import file_path_findings, reference_findings
from codexmem.records.checks import item_findings
from codexmem.store.check import Finding, scan_store
from codexmem.store.gitsetup import driver_problem, events_left_out


@dataclass
class CheckResult:
    findings: list[Finding]
    counts: dict[str, int]

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.level == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.level == "warning"]


def check_store(root: Path) -> CheckResult:
    """Every finding about the store at ``root``, sorted by path."""
    scan = scan_store(root)
    findings = list(scan.findings)
    if scan.config is not None:
        findings += item_findings(scan)
        findings += reference_findings(scan)
        findings += file_path_findings(scan)
    broken = driver_problem(root)
    if broken is not None:  # not the store's fault, but this clone's next merge may drop edits
        findings.append(Finding(".git/config", "warning", broken))
    for rel in events_left_out(root):
        message = (
            "not added to git, though the records it records are committed (`git commit -a` leaves new files "
            "out): `git add` it and commit, or the pull request carries changes without their events"
        )
        findings.append(Finding(rel, "warning", message))
    return CheckResult(sorted(findings), scan.counts)


__all__ = ["CheckResult", "Finding", "check_store"]
