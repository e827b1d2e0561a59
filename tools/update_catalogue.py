"""The day-two update catalogue: what each routine change to a shipped config does when it deploys.

Usage::

    python -m tools.update_catalogue --markdown      # the table in docs/update-catalogue.md

Each row is one change made to one shipped config (``config/default.yaml``, an example, or
``config/pipeline.yaml``): the edits in config terms, the stack parameter values read at deploy
when the change is one of those (a plan's status, a promoted EAGLE head), and the outcome the
change must have. ``tests/test_update_catalogue.py`` synthesizes the config before and after each
row and holds ``tools.change_report.classify`` (CloudFormation's schemas: create-only and
write-only properties) to the row: the resource types it replaces and nothing else, the
write-only SageMaker properties it sends again, the SageMaker, capacity and run-time parameter
resources it creates and deletes, no run-time value reset, and the free plan instances a
replaced plan-bound endpoint config needs. The same rows print the Markdown table, and a test
keeps ``docs/update-catalogue.md`` equal to it, so the documentation says what the tests hold.

This module is data and plain Python (no CDK import): the table prints in well under a second.
"""
from __future__ import annotations

import copy
import re
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from tools.change_report import StackTemplate

Edit = tuple[Any, ...]
"""``("set", path, value)``, ``("append", path, item)`` or ``("delete", path)``; a path is
``endpoints[0].models[1].adapters`` in the config as merged from its layers."""

PLAN_STATUS = "*/capacity-plans/*chat-p5e-2027q1/status"
"""The status parameter of the example plan, as the endpoint's stack reads it at deploy (a glob: the stack's
name prefix and the library's parameter folder are the library's to choose)."""
DRAFT_HEAD = "*/eagle/SageMakerLlm-qwen3-32b/draft-head"
"""The promoted EAGLE head of the default config's chat model, read at deploy."""
HEAD_RUN_1 = "s3://sagemakerllm-qwen3-32b-eagle-artifacts/jobs/run-1/output/"
HEAD_RUN_2 = "s3://sagemakerllm-qwen3-32b-eagle-artifacts/jobs/run-2/output/"

DEFAULT = "config/default.yaml"
RESERVED = "config/examples/reserved-capacity.yaml"
PIPELINE = "config/pipeline.yaml"

NEW_PLAN: dict[str, Any] = {
    "name": "chat-p5e-2027q1", "instance_type": "ml.p5e.48xlarge", "instance_count": 4, "duration_days": 30,
    "start_after": "2027-01-04T00:00:00Z", "end_before": "2027-03-01T00:00:00Z", "max_upfront_fee_usd": 150000,
    "when_not_active": "on_demand",
}
"""The reserved-capacity example's plan, declared from scratch on the default config."""


def reword_descriptions(assembly: dict[str, "StackTemplate"]) -> None:
    """A library release rewords every resource's `Description` (no config change)."""
    for stack in assembly.values():
        for resource in stack.resources.values():
            properties = resource.get("Properties") or {}
            if isinstance(properties.get("Description"), str):
                properties["Description"] += " (reworded)"


@dataclass(frozen=True)
class Row:
    """One day-two change and the outcome it must have on deploy."""

    change: str
    """What changes, in words."""
    config: str
    """The shipped config it is made to."""
    outcome: str
    """What the deploy does, for the table."""
    edits: tuple[Edit, ...] = ()
    before: tuple[Edit, ...] = ()
    """Edits that make the "before" state, when the shipped config is not it (an older image)."""
    assembly_edit: Callable[[dict[str, "StackTemplate"]], None] | None = None
    """A change made to the synthesized "after" templates instead of the config (a library release)."""
    values_before: dict[str, str] = field(default_factory=dict)
    values_after: dict[str, str] = field(default_factory=dict)
    """Stack parameter values read at deploy (``tools.change_report.at_deploy``), before and after."""
    replaced: frozenset[str] = frozenset()
    """Every resource type the deploy replaces; nothing else may be."""
    resends: frozenset[str] = frozenset()
    """Write-only properties of SageMaker resources an in-place update sends again (``InferenceComponent
    DeploymentConfig``)."""
    created: frozenset[str] = frozenset()
    deleted: frozenset[str] = frozenset()
    """SageMaker, capacity and run-time parameter resource types added / removed."""
    headroom: tuple[int, int] | None = None
    """(free plan instances needed, free plan instances) when a plan-bound endpoint config is replaced."""
    binding: bool = False
    """The endpoint's capacity plan binding (CapacityReservationConfig) changes."""
    resets: frozenset[str] = frozenset()
    """Run-time values the deploy puts back to their template value: none, for every row."""

    @property
    def slug(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.change.lower()).strip("-")[:60]

    @property
    def synthesizes_after(self) -> bool:
        """False when the templates are the config's own (the change is a value read at deploy or a template edit)."""
        return bool(self.edits)


IC = "AWS::SageMaker::InferenceComponent"
ENDPOINT_CONFIG = "AWS::SageMaker::EndpointConfig"
MODEL = "AWS::SageMaker::Model"
IC_RESENDS = frozenset({"InferenceComponent DeploymentConfig", "InferenceComponent Specification.DataCacheConfig"})
"""What every in-place update of one of the library's model components sends again: its rollout policy and data
cache setting (both write-only, both the template's own; no copy count, which autoscaling owns)."""
REDEPLOY = "the endpoint moves to a new endpoint config (blue/green: new instances, then traffic, then the old ones go)"

ROWS: tuple[Row, ...] = (
    Row("Tags: one tag added", DEFAULT,
        "Tags update in place on every taggable resource; run-time values keep what functions wrote.",
        edits=(("set", "tags.team", "ml-platform"),), resends=IC_RESENDS),
    Row("Description: every resource's description reworded (a library release)", DEFAULT,
        "Descriptions update in place, except where CloudFormation makes them create-only: the artifact-read "
        "managed policy and the SDK layer version are replaced (the functions move to the new layer version).",
        assembly_edit=reword_descriptions,
        replaced=frozenset({"AWS::IAM::ManagedPolicy", "AWS::Lambda::LayerVersion"})),
    Row("Image: LMI 18 (CUDA 12.8) to LMI 28 (CUDA 13.0) on every model", DEFAULT,
        "The models are replaced (new container) and the endpoint config too (the CUDA 13 AMI, "
        "InferenceAmiVersion): " + REDEPLOY + "; the components follow in place.",
        before=(("set", "endpoints[0].models[0].image", "lmi:0.36.0-lmi18.0.0-cu128"),
                ("set", "endpoints[0].models[1].image", "lmi:0.36.0-lmi18.0.0-cu128")),
        edits=(("set", "endpoints[0].models[0].image", "lmi"), ("set", "endpoints[0].models[1].image", "lmi")),
        replaced=frozenset({ENDPOINT_CONFIG, MODEL}), resends=IC_RESENDS),
    Row("Instance type", DEFAULT, "The endpoint config is replaced: " + REDEPLOY + ".",
        edits=(("set", "endpoints[0].instance_type", "ml.p5.48xlarge"),), replaced=frozenset({ENDPOINT_CONFIG})),
    Row("Model added", DEFAULT,
        "A model and its inference component are created on the running instances; nothing else changes.",
        edits=(("append", "endpoints[0].models", {
            "name": "qwen3-8b", "architecture": "Qwen3ForCausalLM", "model_data_s3_uri": "s3://my-llm-weights/qwen3-8b/",
            "image": "lmi", "accelerators": 1, "min_memory_mb": 32768}),),
        created=frozenset({MODEL, IC})),
    Row("Model removed (with its adapters)", DEFAULT,
        "Its inference component, model, scaling and adapters' nested stack are deleted; the endpoint keeps running.",
        edits=(("delete", "endpoints[0].models[1]"),), deleted=frozenset({MODEL, IC})),
    Row("Adapter added", DEFAULT, "One adapter inference component is created; nothing is replaced.",
        edits=(("append", "endpoints[0].models[1].adapters", {
            "name": "qwen3-32b-summaries", "artifact_s3_uri": "s3://my-llm-adapters/qwen3-32b/summaries.tar.gz"}),),
        created=frozenset({IC})),
    Row("Adapter removed", DEFAULT, "One adapter inference component is deleted; nothing is replaced.",
        edits=(("delete", "endpoints[0].models[1].adapters[1]"),), deleted=frozenset({IC})),
    Row("Copies: min 1 -> 2, max 4 -> 6", DEFAULT,
        "The scalable target's range and the component's rolling batch (sized from the copy range) update in "
        "place; the component carries no copy count, so autoscaling's count stays.",
        edits=(("set", "endpoints[0].models[0].copies.min_copies", 2),
               ("set", "endpoints[0].models[0].copies.max_copies", 6)), resends=IC_RESENDS),
    Row("Instance scaling: min 1 -> 2 on a capacity plan", RESERVED,
        "The endpoint config is replaced: " + REDEPLOY + ", on the plan: the second fleet needs 2 free plan "
        "instances (2 of 4 are held).",
        edits=(("set", "endpoints[0].scaling.min_instances", 2),),
        values_before={PLAN_STATUS: "Active"}, values_after={PLAN_STATUS: "Active"},
        replaced=frozenset({ENDPOINT_CONFIG}), headroom=(2, 2)),
    Row("Routing strategy: LEAST_OUTSTANDING_REQUESTS -> RANDOM", DEFAULT,
        "The endpoint config is replaced: " + REDEPLOY + ".",
        edits=(("set", "endpoints[0].routing.strategy", "RANDOM"),), replaced=frozenset({ENDPOINT_CONFIG})),
    Row("Data capture: sampling 20% -> 50%", DEFAULT, "The endpoint config is replaced: " + REDEPLOY + ".",
        edits=(("set", "endpoints[0].data_capture.sampling_percentage", 50),), replaced=frozenset({ENDPOINT_CONFIG})),
    Row("Sessions on (the LoRA model)", DEFAULT,
        "The model is replaced (its environment turns sessions on) and its component moves to it in place, copy "
        "by copy; the session front door (function URL, table, key) is created.",
        edits=(("set", "endpoints[0].models[1].sessions", {"expiration_seconds": 1200}),),
        replaced=frozenset({MODEL}), resends=IC_RESENDS),
    Row("Monitoring e-mail", DEFAULT, "An SNS e-mail subscription is created (the owner confirms it).",
        edits=(("set", "monitoring.email", "llm-oncall@example.com"),)),
    Row("Capacity plan bound (declared and bound on the default config)", DEFAULT,
        "The capacity stack is created (it buys only with -c purchase=chat-p5e-2027q1) and, once the plan is "
        "Active, the endpoint config is replaced onto it: the new fleet needs 2 free plan instances of 4.",
        edits=(("set", "capacity_plans", [NEW_PLAN]), ("set", "endpoints[0].capacity_plan", "chat-p5e-2027q1")),
        values_before={PLAN_STATUS: "Active"}, values_after={PLAN_STATUS: "Active"},
        replaced=frozenset({ENDPOINT_CONFIG}), headroom=(2, 4), binding=True,
        created=frozenset({"Custom::SageMakerCapacityPlan", "Custom::SageMakerCapacityPlanGuard",
                           "Custom::SageMakerLlmRunTimeParameter"})),
    Row("Capacity plan renewed (extension declared)", RESERVED,
        "The plan's extension resource is created; it buys only with -c extend=chat-p5e-2027q1. The endpoint "
        "config is not touched.",
        edits=(("set", "capacity_plans[0].extension",
                {"until": "2027-04-01T00:00:00Z", "max_upfront_fee_usd": 150000}),),
        values_before={PLAN_STATUS: "Active"}, values_after={PLAN_STATUS: "Active"},
        created=frozenset({"Custom::SageMakerCapacityPlanExtension"})),
    Row("Capacity plan removed from the endpoint (back to on-demand)", RESERVED,
        "The endpoint config is replaced without the binding: the new fleet runs on on-demand capacity (no plan "
        "instances needed) and the plan's are released; the plan itself stays, paid.",
        edits=(("delete", "endpoints[0].capacity_plan"),),
        values_before={PLAN_STATUS: "Active"}, values_after={PLAN_STATUS: "Active"},
        replaced=frozenset({ENDPOINT_CONFIG}), binding=True,
        deleted=frozenset({"Custom::SageMakerCapacityPlanGuard"})),
    Row("Plan Active -> Expired (its status at the next deploy)", RESERVED,
        "No template change: the deploy reads the status, leaves CapacityReservationConfig out and replaces the "
        "endpoint config onto on-demand capacity.",
        values_before={PLAN_STATUS: "Active"}, values_after={PLAN_STATUS: "Expired"},
        replaced=frozenset({ENDPOINT_CONFIG}), binding=True),
    Row("EAGLE head promoted (the draft-head parameter's value at deploy)", DEFAULT,
        "No template change: the deploy reads the head, creates its serving model and moves the chat model's "
        "component to it in place, copy by copy.",
        values_before={DRAFT_HEAD: "none"}, values_after={DRAFT_HEAD: HEAD_RUN_2},
        resends=IC_RESENDS, created=frozenset({"Custom::EagleServingModel"})),
    Row("EAGLE head rolled back (an earlier head's prefix at deploy)", DEFAULT,
        "No template change: the serving model custom resource updates to the earlier head; the component "
        "follows the model it names.",
        values_before={DRAFT_HEAD: HEAD_RUN_2}, values_after={DRAFT_HEAD: HEAD_RUN_1}),
    Row("removal: retain -> destroy", DEFAULT,
        "Deletion policies change (no resource update) and the bucket-emptying custom resources are created; "
        "run-time parameters keep their values (their Removal setting only decides what `cdk destroy` deletes).",
        edits=(("set", "removal", "destroy"),)),
    Row("Pipeline: a production region added (eu-west-1)", PIPELINE,
        "The pipeline updates in place (a stage and a replication bucket's stack); the new region's stacks are "
        "created; the existing stages' stacks do not change. The region needs its own plan before its first deploy.",
        edits=(("append", "waves[1].stages", {"name": "ProdEuWest1", "config": "config/prod.yaml",
                                              "account": "222222222222", "region": "eu-west-1"}),),
        created=frozenset({ENDPOINT_CONFIG, "AWS::SageMaker::Endpoint", MODEL, IC,
                           "Custom::SageMakerCapacityPlanGuard", "Custom::SageMakerDeploymentCheck"})),
)


# ----------------------------------------------------------------------------- applying edits
def _parts(path: str) -> list[str | int]:
    return [int(p) if p.isdigit() else p for p in re.findall(r"[^.\[\]]+", path)]


def apply(data: dict[str, Any], edits: tuple[Edit, ...]) -> dict[str, Any]:
    """A copy of config ``data`` with ``edits`` made (missing mappings on a ``set`` path are created)."""
    changed = copy.deepcopy(data)
    for edit in edits:
        op, path = edit[0], _parts(edit[1])
        parent: Any = changed
        for part in path[:-1]:
            if isinstance(part, str) and isinstance(parent, dict):
                parent = parent.setdefault(part, {})
            else:
                parent = parent[part]
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


# ----------------------------------------------------------------------------- the table
def _edit_text(edit: Edit) -> str:
    if edit[0] == "delete":
        return f"delete `{edit[1]}`"
    value = edit[2]
    shown = value.get("name", "...") if isinstance(value, dict) and "name" in value else value
    return f"`{edit[1]}` {'+=' if edit[0] == 'append' else '='} `{shown}`"


def _how(row: Row) -> str:
    parts = [f"from {_edit_text(e)}" for e in row.before] + [_edit_text(e) for e in row.edits]
    parts += [f"`{k}`: `{row.values_before.get(k, '?')}` -> `{v}` at deploy" for k, v in row.values_after.items()
              if row.values_before.get(k) != v]
    if row.assembly_edit is not None:
        parts.append((row.assembly_edit.__doc__ or row.assembly_edit.__name__).strip().rstrip("."))
    return "<br>".join(parts) or "(none)"


def _names(types: frozenset[str]) -> str:
    return ", ".join(f"`{t.split('::', 1)[1]}`" for t in sorted(types)) or "nothing"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(rows: tuple[Row, ...] = ROWS) -> str:
    """The table "what each change does on deploy", one line per row."""
    out = ["# Day-two updates: what each change does on deploy", "",
           "Generated by `python -m tools.update_catalogue --markdown` from the rows in `tools/update_catalogue.py`;",
           "`tests/test_update_catalogue.py` synthesizes each change and holds the change report's classification",
           "(`tools.change_report.classify`, CloudFormation's schemas from cfn-lint) to it, and keeps this file equal",
           "to the generated one. *Replaced* lists every resource type the deploy replaces (nothing else is);",
           "*Re-sent* the write-only SageMaker properties an in-place update sends again with the template's value;",
           "*Plan headroom* the free plan instances a replaced plan-bound endpoint config needs and has.",
           "No row resets a value written at run time (a plan's status, a promoted EAGLE head, the dataset watermark).",
           "",
           "| Change | Config | How | What happens on deploy | Replaced | Re-sent (write-only) | Created / deleted "
           "| Plan headroom |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        made = [f"+{_names(row.created)}"] if row.created else []
        made += [f"-{_names(row.deleted)}"] if row.deleted else []
        headroom = f"needs {row.headroom[0]}, {row.headroom[1]} free" if row.headroom else (
            "binding changes" if row.binding else "")
        if row.headroom and row.binding:
            headroom += "; binding changes"
        resends = ", ".join(f"`{r}`" for r in sorted(row.resends)) or "nothing"
        out.append(f"| {_cell(row.change)} | `{row.config}` | {_cell(_how(row))} | {_cell(row.outcome)} | "
                   f"{_names(row.replaced)} | {resends} | {'<br>'.join(made) or 'nothing'} | {headroom or '-'} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--markdown", action="store_true", help="print the Markdown table (docs/update-catalogue.md)")
    args = parser.parse_args(argv)
    if not args.markdown:
        parser.error("give --markdown")
    sys.stdout.write(markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
