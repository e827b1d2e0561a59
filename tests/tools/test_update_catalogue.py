"""The day-two update catalogue (tools/update_catalogue/) holds: each routine change, synthesized before and
after from a shipped config, does on deploy what its row says, as the change report's lifecycle analysis decides
it (CloudFormation's schemas and its order: every create first, the cleanup's deletes last).

For every row the analysis (``update_catalogue.analyse``) must match the row: whether it deploys in one step and,
if not, which resource types fail; for a one-step row the resource types replaced (nothing else), the write-only
SageMaker properties re-sent, the SageMaker, capacity, router, budget and run-time parameter resources created and
deleted, no run-time value reset or overwritten, and the plan headroom of a replaced plan-bound endpoint config
(respected). ``docs/update-catalogue.md`` is the table printed from these analyses. A tag change on every shipped
config resets nothing, replaces nothing and leaves the plan binding alone.

Synths are few: each (config, edits) is synthesized once for the module and shared (a row whose change is a value
read at deploy, or an edit of the templates, synthesizes nothing more), each in this interpreter without the
checks ``app.py`` attaches (``tools/assemblies.py``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.assemblies import ROOT

from tools import update_catalogue
from tools.change_report import Outcome, StackTemplate, classify
from tools.update_catalogue import ROWS, Edit, Result, Row, analyse, apply

pytestmark = pytest.mark.synth

KEY_TYPES = ("AWS::SageMaker::", "Custom::SageMaker", "Custom::Eagle", "AWS::SSM::", "AWS::Budgets::")
"""The resource types whose creation and deletion a row names: SageMaker's, the capacity plan's, the router's,
the EAGLE serving model, the run-time parameters, budgets (the table also counts scaling and alarms)."""
SHIPPED = [
    ROOT / "config" / "default.yaml",
    ROOT / "config" / "dev.yaml",
    ROOT / "config" / "prod.yaml",
    *sorted((ROOT / "config" / "examples").glob("*.yaml")),
]


class Assemblies:
    """Cloud assemblies of shipped configs with edits, each synthesized once for the module, and each row's
    analysis, made once."""

    def __init__(self, folder: Path) -> None:
        self.synth = update_catalogue.synthesizer(folder)
        self.analysed: dict[str, Result] = {}

    def of(self, config: str, edits: tuple[Edit, ...] = ()) -> dict[str, StackTemplate]:
        """The assembly of ``config`` with ``edits`` made, freshly loaded (a caller may change it)."""
        return self.synth(config, edits)

    def result(self, row: Row) -> Result:
        if row.slug not in self.analysed:
            self.analysed[row.slug] = analyse(row, self.synth)
        return self.analysed[row.slug]


@pytest.fixture(scope="module")
def assemblies(tmp_path_factory: pytest.TempPathFactory) -> Assemblies:
    return Assemblies(tmp_path_factory.mktemp("catalogue"))


@dataclass
class Derived:
    """What the classification says a row does, in the row's terms."""

    replaced: set[str]
    resends: set[str]
    created: set[str]
    deleted: set[str]
    resets: set[str]
    overwrites: set[str]
    headroom: list[tuple[int, int | None, bool | None]]
    binding: bool

    @classmethod
    def of(cls, outcomes: list[Outcome]) -> Derived:
        return cls(
            replaced={o.resource_type for o in outcomes if o.action == "replace"},
            resends={
                f"{o.resource_type.rsplit('::', 1)[1]} {p}"
                for o in outcomes
                if o.action == "update" and o.resource_type.startswith("AWS::SageMaker::")
                for p in o.resends
            },
            created={o.resource_type for o in outcomes if o.action == "add" and o.resource_type.startswith(KEY_TYPES)},
            deleted={
                o.resource_type for o in outcomes if o.action == "remove" and o.resource_type.startswith(KEY_TYPES)
            },
            resets={o.run_time.shown for o in outcomes if o.resets and o.run_time is not None},
            overwrites={f"{o.display} {p}" for o in outcomes for p in o.overwrites},
            headroom=[(o.headroom.needed, o.headroom.free, o.headroom.respected) for o in outcomes if o.headroom],
            binding=any(o.binding_changes for o in outcomes),
        )


def _explained(outcomes: list[Outcome]) -> str:
    """Every changed resource with what the classification says of it, for a failure message."""
    lines = []
    for o in outcomes:
        if o.changed and (o.action != "update" or o.lines or o.resource_type.startswith(KEY_TYPES)):
            lines.append(f"  {o.action:7} {o.resource_type} {o.stack}/{o.display}")
            lines += [f"            {line}" for line in o.lines if not line.startswith("re-sends")]
    return "\n".join(lines)


def outcomes_of(row: Row, assemblies: Assemblies) -> list[Outcome]:
    return assemblies.result(row).outcomes


def test_the_catalogue_has_at_least_twenty_changes_and_no_row_expects_a_reset() -> None:
    assert len(ROWS) >= 20
    assert len({r.slug for r in ROWS}) == len(ROWS)
    assert not [r.change for r in ROWS if r.resets], "a routine change must never reset a run-time value"
    assert all(r.edits or r.values_after or r.assembly_edit or r.lifecycle == "redeploy" for r in ROWS)
    assert all(r.blocked for r in ROWS if not r.one_step), "a row that does not deploy in one step names what fails"


RENAMES = (
    "endpoint-renamed",
    "model-renamed-the-chat-model",
    "model-renamed-with-its-adapters",
    "component-renamed",
    "adapter-renamed",
    "router-renamed",
    "run-time-parameters-under-a-new-construct-id",
    "budget-under-a-new",
    "router-under-a-new",
)


def test_every_named_thing_has_a_rename_row_and_the_lifecycle_rows_are_there() -> None:
    slugs = [r.slug for r in ROWS]
    for wanted in RENAMES + (
        "removal-retain-destroy",
        "removal-destroy-retain",
        "stack-delete-and-deploy-again",
        "weights-changed",
        "budget-notifications-changed",
        "router-targets-changed",
    ):
        assert any(s.startswith(wanted) for s in slugs), wanted


@pytest.mark.parametrize("row", ROWS, ids=[r.slug for r in ROWS])
def test_each_change_does_on_deploy_what_its_row_says(row: Row, assemblies: Assemblies) -> None:
    result = assemblies.result(row)
    failing = "\n".join(f"  {h.reason}: {h.text}" for h in result.blockers)
    assert result.one_step == row.one_step, f"{row.change}: one step is {result.one_step}\n{failing}"
    if not row.one_step:
        assert {h.resource_type for h in result.blockers} == set(row.blocked), failing
        return
    if row.lifecycle == "redeploy":
        assert result.again is not None and not result.again.blockers
        return
    outcomes = result.outcomes
    derived = Derived.of(outcomes)
    expected = Derived(
        set(row.replaced), set(row.resends), set(row.created), set(row.deleted), set(row.resets), set(), [], row.binding
    )
    found = {
        "replaced": derived.replaced,
        "resends": derived.resends,
        "created": derived.created,
        "deleted": derived.deleted,
        "resets": derived.resets,
        "overwrites": derived.overwrites,
        "binding": derived.binding,
    }
    want = {
        "replaced": expected.replaced,
        "resends": expected.resends,
        "created": expected.created,
        "deleted": expected.deleted,
        "resets": expected.resets,
        "overwrites": expected.overwrites,
        "binding": expected.binding,
    }
    differs = {k: (want[k], found[k]) for k in want if want[k] != found[k]}
    assert not differs, f"{row.change} ({row.config}): expected, classified: {differs}\n{_explained(outcomes)}"
    if row.headroom is None:
        assert not derived.headroom, f"{row.change}: unexpected plan headroom {derived.headroom}"
    else:
        needed, free = row.headroom
        assert derived.headroom == [(needed, free, True)], f"{row.change}: headroom {derived.headroom}"


def test_a_replaced_plan_bound_endpoint_config_says_how_many_free_plan_instances_it_needs(
    assemblies: Assemblies,
) -> None:
    (row,) = [r for r in ROWS if r.headroom == (2, 2)]
    (config,) = [o for o in outcomes_of(row, assemblies) if o.headroom is not None]
    assert any(
        line.startswith("replaces the endpoint config: needs 2 free plan instances") and "2 free, enough" in line
        for line in config.lines
    ), config.lines


def test_a_value_read_at_deploy_changes_nothing_in_the_templates(assemblies: Assemblies) -> None:
    """The plan's expiry and the EAGLE head's promotion are values read at deploy: the same templates before and
    after; with no values given the classification sees no change at all."""
    for row in [r for r in ROWS if not r.edits and r.values_after]:
        base, head = assemblies.of(row.config), assemblies.of(row.config)
        assert not [o for o in classify(base, head) if o.changed], row.change


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_a_tag_change_on_every_shipped_config_resets_nothing_replaces_nothing_and_keeps_the_binding(
    path: Path, assemblies: Assemblies
) -> None:
    config = str(path.relative_to(ROOT))
    outcomes = classify(assemblies.of(config), assemblies.of(config, (("set", "tags.team", "ml-platform"),)))
    derived = Derived.of(outcomes)
    assert not derived.resets, f"{config}: a tag change resets {derived.resets}\n{_explained(outcomes)}"
    assert not derived.overwrites, f"{config}: a tag change overwrites {derived.overwrites}"
    assert not derived.replaced, f"{config}: a tag change replaces {derived.replaced}\n{_explained(outcomes)}"
    assert not derived.binding and not derived.headroom, f"{config}: a tag change moves the plan binding"
    assert not derived.created and not derived.deleted, (derived.created, derived.deleted)
    assert [o for o in outcomes if o.changed], f"{config}: the tag reached no resource"


def test_docs_update_catalogue_md_is_the_generated_table(assemblies: Assemblies) -> None:
    """The outcome columns are printed from the analysis of every row: the documentation says what it finds."""
    generated = update_catalogue.markdown({r.slug: assemblies.result(r) for r in ROWS})
    committed = (ROOT / "docs" / "update-catalogue.md").read_text(encoding="utf-8")
    assert committed == generated, "run: python -m tools.update_catalogue --markdown > docs/update-catalogue.md"
    assert sum(1 for line in generated.splitlines() if line.startswith("| ") and "`config/" in line) == len(ROWS)


def _line(row_start: str) -> list[str]:
    text = (ROOT / "docs" / "update-catalogue.md").read_text(encoding="utf-8")
    (line,) = [line for line in text.splitlines() if line.startswith(f"| {row_start}")]
    return [cell.strip() for cell in line.strip("|").split(" | ")]


def test_the_table_counts_what_the_analysis_finds(assemblies: Assemblies) -> None:
    """``removal: retain -> destroy`` updates resources in place (the emptying tag, the parameters' Removal): the
    table says how many; the copies row deletes the scale-from-zero policy and its alarm; an endpoint rename does
    not deploy in one step."""
    removal = assemblies.result(next(r for r in ROWS if r.slug == "removal-retain-destroy"))
    updated = sum(removal.count("update").values())
    assert updated > 0 and _line("removal: retain -> destroy")[5].startswith(f"{updated} ")
    copies = next(r for r in ROWS if r.slug.startswith("copies"))
    assert "0 -> 2" in copies.change
    removed = assemblies.result(copies).count("remove")
    assert removed.get("AWS::ApplicationAutoScaling::ScalingPolicy") == 1 and removed.get("AWS::CloudWatch::Alarm")
    assert "-`ApplicationAutoScaling::ScalingPolicy`" in _line("Copies")[7]
    assert _line("Endpoint renamed")[3].startswith("**no**: name re-taken before cleanup")


def test_edits_are_made_to_a_copy() -> None:
    data: dict[str, Any] = {"endpoints": [{"name": "Chat", "models": [{"name": "a"}, {"name": "b"}]}]}
    before = copy.deepcopy(data)
    changed = apply(
        data,
        (
            ("delete", "endpoints[0].models[0]"),
            ("set", "tags.team", "x"),
            ("append", "endpoints[0].models", {"name": "c"}),
        ),
    )
    assert data == before
    assert changed == {"endpoints": [{"name": "Chat", "models": [{"name": "b"}, {"name": "c"}]}], "tags": {"team": "x"}}
