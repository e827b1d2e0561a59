"""The Markdown table of ``docs/update-catalogue.md``: one line per row, with the change, its edits and the
explanation from the row and the outcome columns (one step, updated, replaced, created or deleted, re-sent, plan
headroom) printed from the analysis."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tools.update_catalogue.rows import ROWS, Edit, Row

if TYPE_CHECKING:
    from tools.update_catalogue.analysis import Result


def _edit_text(edit: Edit) -> str:
    if edit[0] == "delete":
        return f"delete `{edit[1]}`"
    value = edit[2]
    shown = value.get("name", "...") if isinstance(value, dict) and "name" in value else value
    return f"`{edit[1]}` {'+=' if edit[0] == 'append' else '='} `{shown}`"


def _how(row: Row) -> str:
    parts = [f"from {_edit_text(e)}" for e in row.before] + [_edit_text(e) for e in row.edits]
    parts += [
        f"`{k}`: `{row.values_before.get(k, '?')}` -> `{v}` at deploy"
        for k, v in row.values_after.items()
        if row.values_before.get(k) != v
    ]
    if row.assembly_edit is not None:
        parts.append((row.assembly_edit.__doc__ or row.assembly_edit.__name__).strip().rstrip("."))
    if row.lifecycle == "redeploy":
        parts.append("`cdk destroy`, then `cdk deploy`")
    return "<br>".join(parts) or "(none)"


KEY_TYPES = (
    "AWS::SageMaker::",
    "Custom::SageMaker",
    "Custom::Eagle",
    "AWS::SSM::",
    "AWS::Budgets::",
    "AWS::ApplicationAutoScaling::",
    "AWS::CloudWatch::Alarm",
)
"""The resource types whose creation and deletion a row names (the rest are counted): SageMaker's, the capacity
plan's, the router's, the EAGLE serving model, the run-time parameters, budgets, scaling and alarms."""


def _type(resource_type: str) -> str:
    return resource_type.split("::", 1)[1] if "::" in resource_type else resource_type


def _names(types: frozenset[str]) -> str:
    return ", ".join(f"`{_type(t)}`" for t in sorted(types)) or "nothing"


def _counted(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} `{_type(t)}`" if n > 1 else f"`{_type(t)}`" for t, n in sorted(counts.items()))


def _made(counts: dict[str, int], sign: str) -> str:
    key = {t: n for t, n in counts.items() if t.startswith(KEY_TYPES)}
    others = sum(n for t, n in counts.items() if t not in key)
    if not counts:
        return ""
    shown = sign + _counted(key) if key else sign
    return shown + (f"{' and ' if key else ''}{others} other{'s' if others != 1 else ''}" if others else "")


def _one_step(result: Result) -> str:
    if result.one_step:
        return "yes"
    why: dict[tuple[str, str], int] = {}
    for blocker in result.blockers:
        key = (blocker.reason or "fails", blocker.resource_type)
        why[key] = why.get(key, 0) + 1
    reasons = [f"{reason}: {_counted({kind: n})}" for (reason, kind), n in sorted(why.items())]
    reasons += (
        [f"retained with a fixed name: {len(result.again.blockers)}"] if result.again and result.again.blockers else []
    )
    return "**no**: " + "; ".join(reasons)


def _columns(result: Result) -> tuple[str, str, str, str, str]:
    """(updated in place, replaced, created / deleted, re-sent, plan headroom) as the analysis says."""
    if result.again is not None:
        again = result.again
        kept = [f"retained: {_counted(again.retained)}"] if again.retained else ["retained: nothing"]
        kept.append(f"run-time values kept: {len(again.values_kept) or 'none'}")
        kept.append(f"fresh: {sum(again.fresh.values())}")
        return "-", "-", "<br>".join(kept), "-", "-"
    updated = sum(result.count("update").values())
    attributes = sum(result.count("no update").values())
    shown = str(updated) + (f" (+{attributes} attributes only)" if attributes else "")
    made = [m for m in (_made(result.count("add"), "+"), _made(result.count("remove"), "-")) if m]
    resends = sorted(
        {
            f"{_type(o.resource_type).rsplit('::', 1)[-1]} {p}"
            for o in result.outcomes
            if o.action == "update" and o.resource_type.startswith("AWS::SageMaker::")
            for p in o.resends
        }
    )
    room = [o.headroom for o in result.outcomes if o.headroom is not None]
    headroom = "; ".join(f"needs {h.needed}, {h.free} free" for h in room)
    if any(o.binding_changes for o in result.outcomes):
        headroom = "; ".join(p for p in (headroom, "binding changes") if p)
    return (
        shown,
        _counted(result.count("replace")) or "nothing",
        "<br>".join(made) or "nothing",
        ", ".join(f"`{r}`" for r in resends) or "nothing",
        headroom or "-",
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(found: dict[str, Result], rows: tuple[Row, ...] = ROWS) -> str:
    """The table "what each change does on deploy", one line per row: the outcome columns from ``found``
    (``results``), the change, its edits and the explanation from the row."""
    out = [
        "# Day-two updates: what each change does on deploy",
        "",
        "Generated by `python -m tools.update_catalogue --markdown` (it synthesizes every row) from the rows in",
        "`tools/update_catalogue/rows.py` and the change report's lifecycle analysis (`tools/change_report/`:",
        "CloudFormation's schemas from cfn-lint and its order: every create first, then the updates, the",
        "cleanup's deletes last). `tests/tools/test_update_catalogue.py` holds the analysis to each row and keeps this",
        "file equal to the generated one. *One step*: whether the deploy succeeds as one change (**no**: why it",
        "fails and rolls back; the two-step way is in "
        "[troubleshooting](troubleshooting.md#a-deploy-that-fails-on-a-name));",
        "*Updated* the resources updated in place (and those whose attributes alone change, no update);",
        "*Replaced* every resource the deploy replaces (nothing else is); *Re-sent* the write-only SageMaker",
        "properties an in-place update sends again with the template's value; *Plan headroom* the free plan",
        "instances a replaced plan-bound endpoint config needs and has.",
        "No row resets a value written at run time (a plan's status, a promoted EAGLE head, the dataset watermark).",
        "",
        "| Change | Config | How | One step | What happens on deploy | Updated | Replaced | Created / deleted "
        "| Re-sent (write-only) | Plan headroom |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        result = found[row.slug]
        updated, replaced, made, resends, headroom = _columns(result)
        out.append(
            f"| {_cell(row.change)} | `{row.config}` | {_cell(_how(row))} | {_cell(_one_step(result))} | "
            f"{_cell(row.outcome)} | {updated} | {replaced} | {made} | {resends} | {headroom} |"
        )
    return "\n".join(out) + "\n"
