"""Synth-time checks attached to the app: the library's checks (``sagemaker_llm_cdk.checks``) with this team's
warning packs, and the synth log's report of them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import App, Stage
from cdk_nag import NagPack, NIST80053R5Checks, ServerlessChecks
from sagemaker_llm_cdk import FAIL_SYNTH_CONTEXT, WarningsOnly, apply_checks, apply_checks_to_stage

WARNING_PACKS: Mapping[str, Callable[..., NagPack]] = {
    "nist-800-53-r5": NIST80053R5Checks,
    "serverless": ServerlessChecks,
}
"""cdk-nag packs that may be added on top of AwsSolutions; they report warnings and never fail the synth."""
WARNING_PACK_PLUGINS: Mapping[str, str] = {
    "nist-800-53-r5": "NIST.800.53.R5",
    "serverless": "Serverless",
}
"""The validation plugin name (``NagPack.name``) of each pack in ``WARNING_PACKS``: ``report_checks`` reports
every finding of these plugins as a warning."""

__all__ = [
    "FAIL_SYNTH_CONTEXT",
    "WARNING_PACKS",
    "WarningsOnly",
    "attach_checks",
    "attach_stage_checks",
    "report_checks",
]


def _allowed(packs: Sequence[str]) -> None:
    unknown = sorted({p for p in packs if p not in WARNING_PACKS})
    if unknown:
        raise ValueError(f"unknown cdk-nag pack(s) {', '.join(unknown)}; allowed: {', '.join(WARNING_PACKS)}")


def attach_checks(app: App, *, extra_packs: Sequence[str] = ()) -> None:
    """The library's checks (``sagemaker_llm_cdk.checks.apply``: AwsSolutions, the policy guard, the library's
    checkov reasons) on the app and every Stage in it, with each pack in ``extra_packs`` as warnings only.

    When the app reports the checks itself (``FAIL_SYNTH_CONTEXT`` false, then ``report_checks`` after
    ``app.synth()``, as ``app.py`` does), the extra packs are added as they are and ``report_checks`` reports
    their findings as warnings; otherwise each is wrapped in ``WarningsOnly``, so CDK sees only warnings.
    A Stage with a ``nag_warning_packs`` attribute (``stacks.pipeline.LlmPlatformStage``, from its config) also
    gets those packs as warnings.

    :param extra_packs: names from ``WARNING_PACKS``: ``nist-800-53-r5``, ``serverless``.
    """
    stages = [c for c in app.node.find_all() if isinstance(c, Stage) and c is not app]  # no round trip per construct
    _allowed([*extra_packs, *(p for s in stages for p in getattr(s, "nag_warning_packs", ()))])
    for stage in stages:
        attach_stage_checks(
            stage, extra_packs=[p for p in getattr(stage, "nag_warning_packs", ()) if p not in extra_packs]
        )
    apply_checks(app, warning_packs=extra_packs)


def attach_stage_checks(stage: Stage, *, extra_packs: Sequence[str] = ()) -> None:
    """The checks of one Stage: its ``extra_packs`` as warnings, the library's checkov reasons, the policy guard
    (``sagemaker_llm_cdk.checks.apply_to_stage``). Call it in the Stage's constructor when something synthesizes
    the stage early (``stacks.pipeline.LlmPlatformStage`` does). Calling it twice on a stage adds nothing."""
    _allowed(extra_packs)
    apply_checks_to_stage(stage, warning_packs=extra_packs)


# ----------------------------------------------------------------------------- the synth log and the PR summary
# FAIL_SYNTH_CONTEXT (from sagemaker_llm_cdk.checks): app.py sets it false so the synth log shows one summary
# instead of every finding, and fails the synth itself (report_checks).
VALIDATION_REPORT = "validation-report.json"
"""CDK's validation report in the cloud assembly: every plugin's findings, acknowledged ones included."""
FINDINGS_JSON = "nag-findings.json"
FINDINGS_MD = "nag-findings.md"
SUMMARY_MD = "synth-summary.md"
"""Files ``report_checks`` writes into the cloud assembly; ``make synth`` copies them to reports/ and appends
``synth-summary.md`` (findings summary and cost table) to the GitHub step summary when it is set."""


@dataclass(frozen=True)
class RuleTally:
    """Findings of one rule of one pack: how many constructs it flags, acknowledged or not."""

    pack: str
    rule: str
    severity: str
    open: int
    acknowledged: int

    @property
    def fails(self) -> bool:
        return self.open > 0 and self.severity in ("error", "fatal")


def _rule(name: str) -> str:
    """``AwsSolutions-IAM5[Resource::*]`` -> ``AwsSolutions-IAM5``: findings of a granular rule count under it."""
    return name.split("[", 1)[0]


def tally_findings(report: Mapping[str, Any]) -> list[RuleTally]:
    """Per pack and rule (in report order): open and acknowledged findings, from CDK's validation report."""
    counts: dict[tuple[str, str], list[Any]] = {}
    for plugin in report.get("pluginReports", []):
        pack = plugin.get("pluginName", "?")
        for key, index in (("violations", 0), ("suppressedViolations", 1)):
            for violation in plugin.get(key, []):
                entry = counts.setdefault((pack, _rule(violation.get("ruleName", "?"))), [0, 0, set()])
                entry[index] += max(1, len(violation.get("violatingConstructs", [])))
                entry[2].add(violation.get("severity", "warning"))
    order = ("fatal", "error", "warning", "info")
    return [
        RuleTally(pack, rule, next((s for s in order if s in c[2]), sorted(c[2])[0]), c[0], c[1])
        for (pack, rule), c in counts.items()
    ]


def failing_findings(report: Mapping[str, Any]) -> list[str]:
    """Every unacknowledged error finding, one block each: rule, construct, what is wrong, how to fix."""
    lines = []
    for plugin in report.get("pluginReports", []):
        for violation in plugin.get("violations", []):
            if violation.get("severity") not in ("error", "fatal"):
                continue
            where = [c.get("constructPath", "?") for c in violation.get("violatingConstructs", [])] or [
                "(no construct)"
            ]
            for path in where:
                text = f"[{plugin.get('pluginName')}] {violation.get('ruleName')}: {path}\n"
                text += f"    {violation.get('description', '')}"
                if violation.get("fix"):
                    text += f"\n    fix: {violation['fix']}"
                if violation.get("severity") == "fatal":  # CDK refuses acknowledgements of fatal findings
                    text += "\n    cannot be acknowledged: change the policy"
                else:
                    rule = f"{plugin.get('pluginName')}::{violation.get('ruleName')}"
                    text += f"\n    acknowledge as: {rule} (with its reason)"
                lines.append(text)
    return lines


def open_counts(tallies: Sequence[RuleTally]) -> str:
    """How many findings are open and what they do: ``12 open (0 fail the synth, 12 warnings), 3 acknowledged``."""
    total = sum(t.open for t in tallies)
    failing = sum(t.open for t in tallies if t.fails)
    acknowledged = sum(t.acknowledged for t in tallies)
    return f"{total} open ({failing} fail the synth, {total - failing} warnings), {acknowledged} acknowledged"


def summary_text(tallies: Sequence[RuleTally]) -> str:
    """The synth log's one summary: a line per pack and rule."""
    if not tallies:
        return "cdk-nag: no findings"
    width = max(len(f"{t.pack} {t.rule}") for t in tallies)
    lines = [f"cdk-nag findings per rule ({open_counts(tallies)}):"]
    for t in tallies:
        verdict = "FAILS the synth" if t.fails else ("open (warning)" if t.open else "all acknowledged")
        lines.append(
            f"  {f'{t.pack} {t.rule}':<{width}}  {t.severity:<7}  open {t.open:>3}  acknowledged {t.acknowledged:>3}"
            f"  {verdict}"
        )
    return "\n".join(lines)


def summary_markdown(tallies: Sequence[RuleTally], *, cost_table: str = "") -> str:
    """The pull request's step summary: the findings table, then the cost ceiling table."""
    out = ["## cdk-nag findings", ""]
    if tallies:
        failing = sum(1 for t in tallies if t.fails)
        out += [
            open_counts(tallies)
            + (f"; **{failing} rule(s) fail the synth**" if failing else "; nothing fails the synth")
            + f". Every finding: `{FINDINGS_MD}` in the run's artifact.",
            "",
            "| Pack | Rule | Severity | Open | Acknowledged |",
            "| --- | --- | --- | ---: | ---: |",
        ]
        out += [
            f"| {t.pack} | `{t.rule}` | {'**' + t.severity + '**' if t.fails else t.severity} | {t.open} | "
            f"{t.acknowledged} |"
            for t in tallies
        ]
    else:
        out.append("No findings.")
    if cost_table:
        out += ["", "## Cost ceiling", "", "```text", cost_table.rstrip(), "```"]
    return "\n".join(out) + "\n"


def findings_markdown(report: Mapping[str, Any]) -> str:
    """Every finding, open and acknowledged (with its reason), per pack and rule: the report file."""
    out = ["# cdk-nag findings", ""]
    for plugin in report.get("pluginReports", []):
        out += [f"## {plugin.get('pluginName')} ({plugin.get('conclusion', '?')})", ""]
        entries = [(v, False) for v in plugin.get("violations", [])] + [
            (v, True) for v in plugin.get("suppressedViolations", [])
        ]
        if not entries:
            out += ["No findings.", ""]
        for violation, acknowledged in entries:
            out.append(
                f"### {violation.get('ruleName')} ({violation.get('severity')}"
                f"{', acknowledged' if acknowledged else ''})"
            )
            out += ["", str(violation.get("description", "")), ""]
            for construct in violation.get("violatingConstructs", []):
                out.append(f"- `{construct.get('constructPath', '?')}`")
            if acknowledged:
                out.append(f"- acknowledged at `{violation.get('acknowledgedAt', '?')}`: {violation.get('reason', '')}")
            out.append("")
    return "\n".join(out)


def as_warnings(report: Mapping[str, Any]) -> dict[str, Any]:
    """``report`` with every finding of the warning packs (``WARNING_PACK_PLUGINS``) at severity ``warning`` and
    their conclusion ``success``: what ``WarningsOnly`` makes CDK write. A pack that failed to run (conclusion
    ``failure`` without findings, CDK's report of an exception) stays a failure."""
    names = set(WARNING_PACK_PLUGINS.values())

    def demoted(plugin: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(plugin)
        for key in ("violations", "suppressedViolations"):
            if key in out:
                out[key] = [{**v, "severity": "warning"} for v in out[key]]
        if out.get("violations") and out.get("conclusion") == "failure":
            out["conclusion"] = "success"
        return out

    converted = dict(report)
    if "pluginReports" in converted:
        converted["pluginReports"] = [
            demoted(p) if p.get("pluginName") in names else p for p in report["pluginReports"]
        ]
    return converted


def _slim(report: Mapping[str, Any]) -> dict[str, Any]:
    """The report without stack traces (they say nothing about a finding and make it ten times larger)."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("stackTraces", "acknowledgedStackTrace")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    slim: dict[str, Any] = strip(dict(report))
    return slim


def _failures_only(report: Mapping[str, Any]) -> dict[str, Any]:
    """``report`` with only the findings that fail the synth (and every report of a plugin that failed to run)."""
    trimmed = dict(report)
    trimmed["pluginReports"] = [
        plugin
        if plugin.get("conclusion") == "failure" and not plugin.get("violations")
        else {
            **plugin,
            "violations": [v for v in plugin.get("violations", []) if v.get("severity") in ("error", "fatal")],
        }
        for plugin in report.get("pluginReports", [])
    ]
    return trimmed


def report_checks(assembly_dir: str | Path, *, cost_table: str = "", stream: Any = None) -> int:
    """After ``app.synth()`` with ``FAIL_SYNTH_CONTEXT`` false: print the findings summary (and every failing
    finding in full), write ``nag-findings.json``/``.md`` and ``synth-summary.md`` into the assembly, and return
    the exit status: 1 when an error finding is not acknowledged or the report is missing, else 0. The findings
    of the warning packs (``WARNING_PACK_PLUGINS``) are warnings (``as_warnings``), whatever their rule's level."""
    import json
    import sys

    out = stream or sys.stderr
    folder = Path(assembly_dir)
    path = folder / VALIDATION_REPORT
    if not path.is_file():
        print(f"error: {path} was not written: the checks did not run, so the synth is not trusted", file=out)
        return 1
    report = as_warnings(json.loads(path.read_text(encoding="utf-8")))
    tallies = tally_findings(report)
    (folder / FINDINGS_JSON).write_text(json.dumps(_slim(report), indent=2) + "\n", encoding="utf-8")
    (folder / FINDINGS_MD).write_text(findings_markdown(report), encoding="utf-8")
    (folder / SUMMARY_MD).write_text(summary_markdown(tallies, cost_table=cost_table), encoding="utf-8")
    # The CLI prints every finding left in validation-report.json after the synth: leave only what fails there
    # (the whole report is nag-findings.json), so the log holds the summary and the failures, not 500 lines.
    path.write_text(json.dumps(_failures_only(report), indent=2) + "\n", encoding="utf-8")
    print(summary_text(tallies), file=out)
    print(f"Every finding: {folder / FINDINGS_MD} (JSON: {folder / FINDINGS_JSON})", file=out)
    failing = failing_findings(report)
    failed_plugins = [p.get("pluginName") for p in report.get("pluginReports", []) if p.get("conclusion") == "failure"]
    if failing or failed_plugins:
        print(
            f"\nerror: {len(failing)} unacknowledged finding(s) fail the synth "
            f"({', '.join(str(p) for p in failed_plugins) or 'error severity'}); fix each, or acknowledge it with "
            "its reason beside the grant that causes it (grants.grant(..., reason=...), or core/nag.py acknowledge "
            "in the construct that creates it):",
            file=out,
        )
        for block in failing:
            print(block, file=out)
        return 1
    return 0


COST_JSON = "cost-model.json"
"""The cost model the synth writes into the cloud assembly beside ``synth-summary.md`` (``write_cost_model``)."""


def write_cost_model(assembly_dir: str | Path, lines: Sequence[Any]) -> Path:
    """Write ``lines`` (``cost.cost_model(app)``: ``CostLine`` per endpoint, EAGLE loop, benchmark and capacity plan)
    into the assembly as ``cost-model.json``. The change report (``tools/change_report/``) reads it from the base's
    and the head's assembly to say what a pull request costs, without importing CDK."""
    import json

    path = Path(assembly_dir) / COST_JSON
    document = {
        "about": "Cost per 30 days (720 hours) of what this assembly deploys: on-demand hours at the floor and "
        "the ceiling, plan-covered hours, USD per hour (null: unknown) and prepaid plan fees",
        "version": 1,
        "lines": [line.as_dict() for line in lines],
    }
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return path
