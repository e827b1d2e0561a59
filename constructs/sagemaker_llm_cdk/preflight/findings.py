"""Preflight findings: one line each (severity, what, why, fix), a summary line and the exit code."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

Severity = Literal["blocker", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("blocker", "warning", "info")


@dataclass(frozen=True)
class Finding:
    """One thing preflight found: how bad, what, why it matters, and what to do.

    ``check`` names the check that found it (``region.resource-types``); ``subject`` the config
    path or resource it is about (``endpoints[0]``, ``capacity_plans[0]``), when there is one.
    """

    severity: Severity
    check: str
    what: str
    why: str
    fix: str
    subject: str = ""

    def line(self) -> str:
        where = f"{self.subject}: " if self.subject else ""
        head = f"{self.severity.upper():<7} [{self.check}] {where}{self.what}"
        if self.severity == "info" and self.fix == _NOTHING:
            return head if self.why == _FOR_REVIEWER else f"{head}; why: {self.why}"
        return f"{head}; why: {self.why}; fix: {self.fix}"


_NOTHING = "nothing to do"
_FOR_REVIEWER = "for the reviewer"


def blocker(check: str, what: str, why: str, fix: str, subject: str = "") -> Finding:
    return Finding("blocker", check, what, why, fix, subject)


def warning(check: str, what: str, why: str, fix: str, subject: str = "") -> Finding:
    return Finding("warning", check, what, why, fix, subject)


def info(check: str, what: str, why: str = _FOR_REVIEWER, fix: str = _NOTHING, subject: str = "") -> Finding:
    return Finding("info", check, what, why, fix, subject)


def format_findings(
    findings: Sequence[Finding], *, source: str = "", region: str | None = None, live: bool = False
) -> str:
    """The findings, blockers first, one line each, then a summary line."""
    order = {s: i for i, s in enumerate(SEVERITIES)}
    lines = [f.line() for f in sorted(findings, key=lambda f: order[f.severity])]
    lines.append(summary_line(findings, source=source, region=region, live=live))
    return "\n".join(lines)


def summary_line(
    findings: Sequence[Finding], *, source: str = "", region: str | None = None, live: bool = False
) -> str:
    counts = {s: sum(1 for f in findings if f.severity == s) for s in SEVERITIES}
    head = "preflight" + (f" of {source}" if source else "") + f" for {region or 'no region'}"
    head += " (live checks ran)" if live else " (offline)"
    if counts["blocker"]:
        verdict = "the deploy would fail: fix the blockers first"
    elif live:
        verdict = "no blocker found"
    else:
        verdict = (
            "no blocker found by the offline checks; the live checks (plan status, quotas, names, S3 data, layers, "
            "prices) did not run: run with read-only AWS credentials before a deploy"
        )
    return f"{head}: {counts['blocker']} blocker(s), {counts['warning']} warning(s), {counts['info']} info; {verdict}"


def exit_code(findings: Iterable[Finding]) -> int:
    """1 when any finding is a blocker, else 0 (2 is the CLI's code for a bad config or arguments)."""
    return 1 if any(f.severity == "blocker" for f in findings) else 0
