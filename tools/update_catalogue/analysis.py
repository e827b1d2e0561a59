"""The analysis of a row: its config synthesized before and after with the row's edits applied (``apply``,
``synthesizer``) and compared by the change report's lifecycle analysis in CloudFormation's order (``analyse``), or
for a ``redeploy`` row the stack delete and the deploy again; ``Result`` is what the analysis says."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tools.update_catalogue.rows import PIPELINE, ROWS, Edit, Row

if TYPE_CHECKING:
    from pathlib import Path

    from tools.change_report import Headline, Outcome, Redeploy, StackTemplate


@dataclass
class Result:
    """What the change report's analysis says a row does on deploy (``analyse``)."""

    outcomes: list[Outcome] = field(default_factory=list)
    blockers: list[Headline] = field(default_factory=list)
    """The ways the deploy fails (``Headline`` of category ``fails``)."""
    again: Redeploy | None = None
    """For a ``redeploy`` row: what the stack delete keeps and what comes back fresh."""

    @property
    def one_step(self) -> bool:
        return not self.blockers and not (self.again is not None and self.again.blockers)

    def count(self, action: str) -> dict[str, int]:
        """Resource type -> how many resources undergo ``action`` (``update``, ``replace``, ``add``, ``remove``)."""
        found: dict[str, int] = {}
        for outcome in self.outcomes:
            if outcome.action == action:
                found[outcome.resource_type] = found.get(outcome.resource_type, 0) + 1
        return dict(sorted(found.items()))


def _parts(path: str) -> list[str | int]:
    return [int(p) if p.isdigit() else p for p in re.findall(r"[^.\[\]]+", path)]


def apply(data: dict[str, Any], edits: tuple[Edit, ...]) -> dict[str, Any]:
    """A copy of config ``data`` with ``edits`` made (missing mappings on a ``set`` path are created)."""
    changed = copy.deepcopy(data)
    for edit in edits:
        op, path = edit[0], _parts(edit[1])
        parent: Any = changed
        for part in path[:-1]:
            parent = parent.setdefault(part, {}) if isinstance(part, str) and isinstance(parent, dict) else parent[part]
        last = path[-1]
        if op == "set":
            parent[last] = copy.deepcopy(edit[2])
        elif op == "append":
            parent[last].append(copy.deepcopy(edit[2]))
        elif op == "delete":
            del parent[last]
        else:
            raise ValueError(f"unknown edit {op!r}")
    return changed


Synth = Callable[[str, tuple[Edit, ...]], dict[str, "StackTemplate"]]
"""A config (repository-relative) and edits -> its synthesized assembly, freshly loaded (a caller may change it)."""


def analyse(row: Row, synth: Synth) -> Result:
    """What the change report's lifecycle analysis says ``row`` does: the config before and after compared in
    CloudFormation's order (``compare``), or for a ``redeploy`` row the stack delete and the deploy again."""
    from tools.change_report import compare, redeploy

    if row.lifecycle == "redeploy":
        return Result(again=redeploy(synth(row.config, row.before + row.edits)))
    base = synth(row.config, row.before)
    head = synth(row.config, row.before + row.edits)
    if row.assembly_edit is not None:
        row.assembly_edit(head)
    report = compare(base, head, base_values=row.values_before or None, head_values=row.values_after or None)
    return Result(report.outcomes, [h for h in report.headlines if h.category == "fails"])


def synthesizer(folder: Path) -> Synth:
    """A ``Synth`` that synthesizes each (config, edits) once into ``folder`` (``tools.assemblies``)."""
    import json

    from tools.assemblies import ROOT, config_data, pipeline_data, synth_config, synth_pipeline
    from tools.change_report import load_assembly

    done: dict[str, Path] = {}

    def synth(config: str, edits: tuple[Edit, ...]) -> dict[str, StackTemplate]:
        key = json.dumps([config, edits], sort_keys=True, default=str)
        if key not in done:
            outdir = folder / f"a{len(done)}"
            path = ROOT / config
            if config == PIPELINE:
                synth_pipeline(apply(pipeline_data(path), edits), outdir)
            else:
                synth_config(apply(config_data(path), edits), path.parent, outdir)
            done[key] = outdir
        return load_assembly(done[key])

    return synth


def results(synth: Synth, rows: tuple[Row, ...] = ROWS) -> dict[str, Result]:
    """Row slug -> its analysis, for every row."""
    return {row.slug: analyse(row, synth) for row in rows}
