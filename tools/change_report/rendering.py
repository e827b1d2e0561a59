"""The report as text or GitHub-flavoured Markdown: what keeps the deploy from succeeding in one step first, then the
cost, the headline and each stack's changed resources and outputs with their properties, notes and outcomes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tools.change_report.cost_text import COST_TITLE, cost_lines
from tools.change_report.outcomes import HANDLER_UPDATES
from tools.change_report.resource_types import is_custom
from tools.change_report.value_text import _pair, _short

if TYPE_CHECKING:
    from tools.change_report.records import PropertyChange, Report, ResourceChange


BLOCKED_TITLE = "DOES NOT DEPLOY IN ONE STEP"
_HEADLINE_TITLES = {
    "redeploy": "Endpoint redeploys",
    "money": "Capacity plans (money)",
    "fails": "Will fail to deploy",
    "runtime": "Run-time values reset",
    "headroom": "Capacity headroom",
}

_OUTPUT_MARK = {"added": "+", "removed": "-", "modified": "~"}


def blocked_lines(report: Report) -> list[str]:
    """The report's first lines when the deploy would fail: each reason with what to do instead, text or Markdown."""
    fails = [h for h in report.headlines if h.category == "fails"]
    if not fails:
        return []
    return [f"{BLOCKED_TITLE}: {len(fails)} reason{'s' if len(fails) != 1 else ''} the deploy fails and rolls back"] + [
        f"{h.stack}: {h.text}" for h in fails
    ]


def render_text(report: Report) -> str:
    out = [f"Change report: {report.base_label} -> {report.head_label}"]
    blocked = blocked_lines(report)
    if blocked:
        out += [f"!! {blocked[0]}:"] + [f"  !! {line}" for line in blocked[1:]]
    if report.cost is not None:
        source, per_line, totals = cost_lines(report.cost)
        out += ["", f"{COST_TITLE}, {source}:"] + [f"  {line}" for line in per_line + totals]
    out += ["", "Headline:"]
    rest = [h for h in report.headlines if h.category != "fails"]
    if rest:
        out += [f"  !! {_HEADLINE_TITLES[h.category]}: {h.stack}: {h.text}" for h in rest]
    if blocked:
        out.append(f"  !! {_HEADLINE_TITLES['fails']}: {len(blocked) - 1} reason(s), first in this report")
    if not report.headlines:
        out.append("  no endpoint redeploy, no capacity plan change")
    unchanged = []
    for stack in report.stacks:
        changes, outputs = report.for_stack(stack), report.outputs_for(stack)
        if not changes and not outputs:
            unchanged.append(stack.title)
            continue
        out += [
            "",
            f"Stack {stack.title}: {_counts(changes)}" + (f", {len(outputs)} output(s) changed" if outputs else ""),
        ]
        for change in changes:
            mark = {"added": "+", "removed": "-", "renamed": "~", "modified": "~"}[change.kind]
            out.append(f"  {mark} {change.resource_type} {change.display}: {_verdict(change)}")
            out += [f"      {_property_text(p)}" for p in change.properties]
            out += [f"      note: {n}" for n in change.notes]
            out += [f"      {line}" for line in _outcome_lines(report, change)]
        for output in outputs:
            out.append(f"  {_OUTPUT_MARK[output.kind]} Output {output.name}: {output.kind}")
            out += [f"      {_property_text(p)}" for p in output.properties]
    if unchanged:
        out += ["", "No changes: " + ", ".join(unchanged)]
    return "\n".join(out) + "\n"


def render_markdown(report: Report) -> str:
    out = [f"## Change report: `{report.base_label}` → `{report.head_label}`", ""]
    blocked = blocked_lines(report)
    if blocked:
        out += [f"### ⛔ {_cell(blocked[0])}", ""] + [f"- {_cell(line)}" for line in blocked[1:]] + [""]
    if report.cost is not None:
        source, per_line, totals = cost_lines(report.cost)
        out += [f"### {COST_TITLE}", "", f"_{_cell(source[0].upper() + source[1:])}._", ""]
        out += [f"- {_cell(line)}" for line in per_line]
        out += [f"- **{_cell(line).replace(': ', ':** ', 1)}" for line in totals]
        out.append("")
    if report.headlines:
        out.append("### ⚠️ Headline")
        out += [
            f"- **{_HEADLINE_TITLES[h.category]}** (`{h.stack}`): {_cell(h.text)}"
            for h in report.headlines
            if h.category != "fails"
        ]
        if blocked:
            out.append(f"- **{_HEADLINE_TITLES['fails']}**: {len(blocked) - 1} reason(s), first in this report")
    else:
        out.append("**Headline:** no endpoint redeploy, no capacity plan change.")
    unchanged = []
    for stack in report.stacks:
        changes, outputs = report.for_stack(stack), report.outputs_for(stack)
        if not changes and not outputs:
            unchanged.append(f"`{stack.title}`")
            continue
        out += [
            "",
            f"### Stack `{stack.title}`: {_counts(changes)}"
            + (f", {len(outputs)} output(s) changed" if outputs else ""),
            "",
            "| Change | Resource | Type | Details |",
            "| --- | --- | --- | --- |",
        ]
        for change in changes:
            verdict = _verdict(change)
            verdict = f"**{verdict}**" if change.replacement else verdict
            details = [f"`{_cell(_property_text(p))}`" for p in change.properties] + [_cell(n) for n in change.notes]
            details += [
                f"**{_cell(line)}**" if line.startswith(("resets ", "overwrites ", "a new parameter ")) else _cell(line)
                for line in _outcome_lines(report, change)
            ]
            out.append(f"| {verdict} | `{_cell(change.display)}` | `{change.resource_type}` | {'<br>'.join(details)} |")
        for output in outputs:
            details = [f"`{_cell(_property_text(p))}`" for p in output.properties]
            out.append(f"| output {output.kind} | `{_cell(output.name)}` | Output | {'<br>'.join(details)} |")
    if unchanged:
        out += ["", "No changes: " + ", ".join(unchanged)]
    return "\n".join(out) + "\n"


def _property_text(p: PropertyChange) -> str:
    if p.via:
        text = f"{p.path}: from {p.via}, " + (
            "a parameter whose value changes" if p.via_parameter else "which is replaced"
        )
    elif p.items:
        parts = [f"-{_short(v)}" for v in p.old] + [f"+{_short(v)}" for v in p.new]
        text = f"{p.path}: " + ", ".join(parts) if parts else f"{p.path}: reordered"
    else:
        before, after = _pair(p.old, p.new)
        text = f"{p.path}: {before} -> {after}"
    return text + (" [create-only]" if p.create_only else "")


def _verdict(change: ResourceChange) -> str:
    if change.kind in ("added", "removed"):
        return change.kind
    if change.replacement:
        return "REPLACEMENT"
    if is_custom(change.resource_type):
        known = HANDLER_UPDATES.get(change.resource_type)
        return f"update ({known})" if known else "update (the custom resource handler decides)"
    if all(p.path.startswith("(") for p in change.properties):
        return "no update (attributes or metadata only)"
    return "update in place"


def _outcome_lines(report: Report, change: ResourceChange) -> list[str]:
    """What the change does to run-time values, write-only properties and plan capacity (``Outcome.lines``)."""
    outcome = report.outcome_of(change)
    return outcome.lines if outcome is not None else []


def _counts(changes: list[ResourceChange]) -> str:
    count = {k: sum(1 for c in changes if c.kind == k) for k in ("added", "removed", "modified", "renamed")}
    replaced = sum(1 for c in changes if c.replacement)
    text = f"{count['added']} added, {count['removed']} removed, {count['modified'] + count['renamed']} modified"
    return text + (f" ({replaced} replacement{'s' if replaced != 1 else ''})" if replaced else "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
