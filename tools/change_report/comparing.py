"""The comparison of two loaded assemblies (``compare``): the resource and output changes of every stack, the outcome
of every resource, the headline and the cost delta in one ``Report``; ``classify`` returns its per-resource outcomes
alone."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tools.change_report.cost import CostSide, cost_delta
from tools.change_report.deploy_values import at_deploy
from tools.change_report.headlines import _headlines
from tools.change_report.outcomes import Outcome, _outcomes
from tools.change_report.records import Report, ResourceChange
from tools.change_report.resource_changes import _cascade, _change, _modification, _output_changes, _pair_renames
from tools.change_report.resource_types import IGNORED_TYPES
from tools.change_report.retaken_names import name_clashes

if TYPE_CHECKING:
    from tools.change_report.assembly import StackTemplate
    from tools.change_report.prices import PriceBook


def compare(
    base: dict[str, StackTemplate],
    head: dict[str, StackTemplate],
    *,
    base_label: str = "base",
    head_label: str = "head",
    base_values: dict[str, str] | None = None,
    head_values: dict[str, str] | None = None,
    base_cost: CostSide | None = None,
    head_cost: CostSide | None = None,
    prices: PriceBook | Mapping[str, Any] | Path | None = None,
) -> Report:
    """Compare two loaded assemblies (``load_assembly``), each as it deploys with its stack parameter values
    (``at_deploy``; none given: parameters stay references), and their cost models (``load_cost``; none: the cost
    is read from the templates, ``cost_delta``), priced by ``prices`` when given."""
    base, head = at_deploy(base, base_values), at_deploy(head, head_values)
    order = list(head) + [k for k in base if k not in head]
    stacks = [head.get(k) or base[k] for k in order]
    changes: list[ResourceChange] = []
    removed: list[ResourceChange] = []
    added: list[ResourceChange] = []
    for key in order:
        old = {
            k: v for k, v in (base[key].resources if key in base else {}).items() if v.get("Type") not in IGNORED_TYPES
        }
        new = {
            k: v for k, v in (head[key].resources if key in head else {}).items() if v.get("Type") not in IGNORED_TYPES
        }
        stack = head.get(key) or base[key]
        for logical_id in new:
            if logical_id not in old:
                added.append(_change("added", stack, logical_id, None, new[logical_id]))
            else:
                change = _modification(stack, logical_id, old[logical_id], new[logical_id])
                if change is not None:
                    changes.append(change)
        for logical_id in old:
            if logical_id not in new:
                removed.append(_change("removed", base.get(key) or stack, logical_id, old[logical_id], None))
    renamed = _pair_renames(removed, added)
    new_ids = {(p.stack.key, p.logical_id) for p in renamed}
    old_ids = {(p.old_stack.key, p.old_logical_id) for p in renamed if p.old_stack is not None}
    changes += renamed
    changes += [c for c in added if (c.stack.key, c.logical_id) not in new_ids]
    changes += [c for c in removed if (c.stack.key, c.logical_id) not in old_ids]
    _cascade(base, head, changes)
    outputs = [o for key in order for o in _output_changes(base.get(key), head.get(key))]
    report = Report(base_label, head_label, stacks, sorted(changes, key=_sort_key(order)), [], outputs)
    report.outcomes = _outcomes(base, head, report)
    report.headlines = _headlines(report, head) + name_clashes(base, head, report.changes)
    report.cost = cost_delta(base, head, base_cost, head_cost, prices)
    return report


def _sort_key(order: list[str]) -> Any:
    rank = {"renamed": 0, "modified": 1, "added": 2, "removed": 3}
    return lambda c: (order.index(c.stack.key), not c.replacement, rank[c.kind], c.logical_id)


def classify(
    base: dict[str, StackTemplate],
    head: dict[str, StackTemplate],
    *,
    base_values: dict[str, str] | None = None,
    head_values: dict[str, str] | None = None,
) -> list[Outcome]:
    """What every resource of ``base`` and ``head`` (``load_assembly``) undergoes when ``head`` deploys over
    ``base``: unchanged, updated in place, replaced, added or removed, with the write-only properties an update
    re-sends, the run-time values it resets or keeps, and the capacity a replaced plan-bound endpoint config needs.

    ``base_values`` / ``head_values``: stack parameter values at each deploy (``at_deploy``), e.g.
    ``{"/sagemaker-llm/capacity-plans/<plan>/status": "Active"}``. The report prints the same outcomes."""
    return compare(base, head, base_values=base_values, head_values=head_values).outcomes
