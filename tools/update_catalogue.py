"""The day-two update catalogue: what each routine change to a shipped config does when it deploys.

Usage::

    python -m tools.update_catalogue --markdown      # the table in docs/update-catalogue.md (synthesizes every row)

Each row is one change made to one shipped config (``config/default.yaml``, an example, or
``config/pipeline.yaml``): the edits in config terms (or to the synthesized templates, for a
construct id change), the stack parameter values read at deploy when the change is one of those
(a plan's status, a promoted EAGLE head), and the outcome the change must have; a row of the
``redeploy`` kind is every stack deleted and deployed again. ``analyse`` runs the change report's
lifecycle analysis on the config synthesized before and after (``tools.change_report.compare``:
CloudFormation's schemas and its order, creates first and the cleanup last; ``redeploy`` for a
stack delete). ``tests/test_update_catalogue.py`` holds the analysis to each row (whether it
deploys in one step and what fails if not, the resource types it replaces and nothing else, the
write-only SageMaker properties it sends again, what it creates and deletes, no run-time value
reset, the plan headroom), and keeps ``docs/update-catalogue.md`` equal to ``markdown(results)``:
the outcome columns are printed from the analysis, so they cannot drift from what it says.

CDK is imported only when a row is synthesized (``tools.assemblies``).
"""

from __future__ import annotations

import copy
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from tools.change_report import Headline, Outcome, Redeploy, StackTemplate

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
    "name": "chat-p5e-2027q1",
    "instance_type": "ml.p5e.48xlarge",
    "instance_count": 4,
    "duration_days": 30,
    "start_after": "2027-01-04T00:00:00Z",
    "end_before": "2027-03-01T00:00:00Z",
    "max_upfront_fee_usd": 150000,
    "when_not_active": "on_demand",
}
"""The reserved-capacity example's plan, declared from scratch on the default config."""


BUDGET: dict[str, Any] = {"max_usd_per_month": 200000, "email": "finance@example.com"}
"""A budget declared on the default config (its ceiling is unknown in USD: no price for ml.p5e.48xlarge yet)."""
ROUTER = "config/examples/router-two-regions.yaml"


def moved(resource_type: str, words: str) -> Callable[[dict[str, StackTemplate]], None]:
    """An edit of the synthesized templates: every ``resource_type`` under a new logical id, as a construct id change
    gives it (the same properties; references to it follow)."""

    def edit(assembly: dict[str, StackTemplate]) -> None:
        import json

        for stack in assembly.values():
            for logical_id in [k for k, r in stack.resources.items() if r.get("Type") == resource_type]:
                text = json.dumps(stack.resources).replace(f'"{logical_id}"', f'"{logical_id}Moved"')
                text = text.replace("${" + logical_id, "${" + logical_id + "Moved")
                stack.resources.clear()
                stack.resources.update(json.loads(text))

    edit.__doc__ = f"{words}: a construct id change gives every `{resource_type}` a new logical id"
    return edit


def reword_descriptions(assembly: dict[str, StackTemplate]) -> None:
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
    assembly_edit: Callable[[dict[str, StackTemplate]], None] | None = None
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
    one_step: bool = True
    """The deploy succeeds as one change; False: it fails and rolls back (the outcome says the two-step way)."""
    blocked: frozenset[str] = frozenset()
    """When not in one step: the resource types whose Create or Update fails (``Headline.resource_type``)."""
    lifecycle: str = "update"
    """``update``: the change deploys over the config; ``redeploy``: every stack deleted and deployed again."""

    @property
    def slug(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.change.lower()).strip("-")[:60]

    @property
    def synthesizes_after(self) -> bool:
        """False when the templates are the config's own (the change is a value read at deploy or a template edit)."""
        return bool(self.edits)


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


IC = "AWS::SageMaker::InferenceComponent"
ENDPOINT_CONFIG = "AWS::SageMaker::EndpointConfig"
MODEL = "AWS::SageMaker::Model"
IC_RESENDS = frozenset({"InferenceComponent DeploymentConfig", "InferenceComponent Specification.DataCacheConfig"})
"""What every in-place update of one of the library's model components sends again: its rollout policy and data
cache setting (both write-only, both the template's own; no copy count, which autoscaling owns)."""
RUN_TIME = "Custom::SageMakerLlmRunTimeParameter"
ROUTER_TYPE = "Custom::SageMakerInferenceRouter"
BUDGET_TYPE = "AWS::Budgets::Budget"
REDEPLOY = "the endpoint moves to a new endpoint config (blue/green: new instances, then traffic, then the old ones go)"

ROWS: tuple[Row, ...] = (
    Row(
        "Tags: one tag added",
        DEFAULT,
        "Tags update in place on every taggable resource; run-time values keep what functions wrote.",
        edits=(("set", "tags.team", "ml-platform"),),
        resends=IC_RESENDS,
    ),
    Row(
        "Description: every resource's description reworded (a library release)",
        DEFAULT,
        "Descriptions update in place, except where CloudFormation makes them create-only: the artifact-read "
        "managed policy and the SDK layer version are replaced (the functions move to the new layer version).",
        assembly_edit=reword_descriptions,
        replaced=frozenset({"AWS::IAM::ManagedPolicy", "AWS::Lambda::LayerVersion"}),
    ),
    Row(
        "Image: LMI 18 (CUDA 12.8) to LMI 28 (CUDA 13.0) on every model",
        DEFAULT,
        "The models are replaced (new container) and the endpoint config too (the CUDA 13 AMI, "
        "InferenceAmiVersion): " + REDEPLOY + "; the components follow in place.",
        before=(
            ("set", "endpoints[0].models[0].image", "lmi:0.36.0-lmi18.0.0-cu128"),
            ("set", "endpoints[0].models[1].image", "lmi:0.36.0-lmi18.0.0-cu128"),
        ),
        edits=(("set", "endpoints[0].models[0].image", "lmi"), ("set", "endpoints[0].models[1].image", "lmi")),
        replaced=frozenset({ENDPOINT_CONFIG, MODEL}),
        resends=IC_RESENDS,
    ),
    Row(
        "Instance type",
        DEFAULT,
        "The endpoint config is replaced: " + REDEPLOY + ".",
        edits=(("set", "endpoints[0].instance_type", "ml.p5.48xlarge"),),
        replaced=frozenset({ENDPOINT_CONFIG}),
    ),
    Row(
        "Model added",
        DEFAULT,
        "A model and its inference component are created on the running instances; nothing else changes.",
        edits=(
            (
                "append",
                "endpoints[0].models",
                {
                    "name": "qwen3-8b",
                    "architecture": "Qwen3ForCausalLM",
                    "model_data_s3_uri": "s3://my-llm-weights/qwen3-8b/",
                    "image": "lmi",
                    "accelerators": 1,
                    "min_memory_mb": 32768,
                },
            ),
        ),
        created=frozenset({MODEL, IC}),
    ),
    Row(
        "Model removed (with its adapters)",
        DEFAULT,
        "Its inference component, model, scaling and adapters' nested stack are deleted; the endpoint keeps running.",
        edits=(("delete", "endpoints[0].models[1]"),),
        deleted=frozenset({MODEL, IC}),
    ),
    Row(
        "Adapter added",
        DEFAULT,
        "One adapter inference component is created; nothing is replaced.",
        edits=(
            (
                "append",
                "endpoints[0].models[1].adapters",
                {"name": "qwen3-32b-summaries", "artifact_s3_uri": "s3://my-llm-adapters/qwen3-32b/summaries.tar.gz"},
            ),
        ),
        created=frozenset({IC}),
    ),
    Row(
        "Adapter removed",
        DEFAULT,
        "One adapter inference component is deleted; nothing is replaced.",
        edits=(("delete", "endpoints[0].models[1].adapters[1]"),),
        deleted=frozenset({IC}),
    ),
    Row(
        "Copies: min 0 -> 2, max 4 -> 6 (scale-from-zero off)",
        DEFAULT,
        "The scalable target's range and the component's rolling batch (sized from the copy range) update in "
        "place; the component carries no copy count, so autoscaling's count stays. With a minimum above 0 the model "
        "no longer scales to zero: its scale-from-zero step policy and the alarm that drives it are deleted.",
        edits=(
            ("set", "endpoints[0].models[0].copies.min_copies", 2),
            ("set", "endpoints[0].models[0].copies.max_copies", 6),
        ),
        resends=IC_RESENDS,
    ),
    Row(
        "Instance scaling: min 1 -> 2 on a capacity plan",
        RESERVED,
        "The endpoint config is replaced: " + REDEPLOY + ", on the plan: the second fleet needs 2 free plan "
        "instances (2 of 4 are held).",
        edits=(("set", "endpoints[0].scaling.min_instances", 2),),
        values_before={PLAN_STATUS: "Active"},
        values_after={PLAN_STATUS: "Active"},
        replaced=frozenset({ENDPOINT_CONFIG}),
        headroom=(2, 2),
    ),
    Row(
        "Routing strategy: LEAST_OUTSTANDING_REQUESTS -> RANDOM",
        DEFAULT,
        "The endpoint config is replaced: " + REDEPLOY + ".",
        edits=(("set", "endpoints[0].routing.strategy", "RANDOM"),),
        replaced=frozenset({ENDPOINT_CONFIG}),
    ),
    Row(
        "Data capture: sampling 20% -> 50%",
        DEFAULT,
        "The endpoint config is replaced: " + REDEPLOY + ".",
        edits=(("set", "endpoints[0].data_capture.sampling_percentage", 50),),
        replaced=frozenset({ENDPOINT_CONFIG}),
    ),
    Row(
        "Sessions on (the LoRA model)",
        DEFAULT,
        "The model is replaced (its environment turns sessions on) and its component moves to it in place, copy "
        "by copy; the session front door (function URL, table, key) is created.",
        edits=(("set", "endpoints[0].models[1].sessions", {"expiration_seconds": 1200}),),
        replaced=frozenset({MODEL}),
        resends=IC_RESENDS,
    ),
    Row(
        "Monitoring e-mail",
        DEFAULT,
        "An SNS e-mail subscription is created (the owner confirms it).",
        edits=(("set", "monitoring.email", "llm-oncall@example.com"),),
    ),
    Row(
        "Capacity plan bound (declared and bound on the default config)",
        DEFAULT,
        "The capacity stack is created (it buys only with -c purchase=chat-p5e-2027q1) and, once the plan is "
        "Active, the endpoint config is replaced onto it: the new fleet needs 2 free plan instances of 4.",
        edits=(("set", "capacity_plans", [NEW_PLAN]), ("set", "endpoints[0].capacity_plan", "chat-p5e-2027q1")),
        values_before={PLAN_STATUS: "Active"},
        values_after={PLAN_STATUS: "Active"},
        replaced=frozenset({ENDPOINT_CONFIG}),
        headroom=(2, 4),
        binding=True,
        created=frozenset(
            {
                "Custom::SageMakerCapacityPlan",
                "Custom::SageMakerCapacityPlanGuard",
                "Custom::SageMakerLlmRunTimeParameter",
            }
        ),
    ),
    Row(
        "Capacity plan renewed (extension declared)",
        RESERVED,
        "The plan's extension resource is created; it buys only with -c extend=chat-p5e-2027q1. The endpoint "
        "config is not touched.",
        edits=(
            ("set", "capacity_plans[0].extension", {"until": "2027-04-01T00:00:00Z", "max_upfront_fee_usd": 150000}),
        ),
        values_before={PLAN_STATUS: "Active"},
        values_after={PLAN_STATUS: "Active"},
        created=frozenset({"Custom::SageMakerCapacityPlanExtension"}),
    ),
    Row(
        "Capacity plan removed from the endpoint (back to on-demand)",
        RESERVED,
        "The endpoint config is replaced without the binding: the new fleet runs on on-demand capacity (no plan "
        "instances needed) and the plan's are released; the plan itself stays, paid.",
        edits=(("delete", "endpoints[0].capacity_plan"),),
        values_before={PLAN_STATUS: "Active"},
        values_after={PLAN_STATUS: "Active"},
        replaced=frozenset({ENDPOINT_CONFIG}),
        binding=True,
        deleted=frozenset({"Custom::SageMakerCapacityPlanGuard"}),
    ),
    Row(
        "Plan Active -> Expired (its status at the next deploy)",
        RESERVED,
        "No template change: the deploy reads the status, leaves CapacityReservationConfig out and replaces the "
        "endpoint config onto on-demand capacity.",
        values_before={PLAN_STATUS: "Active"},
        values_after={PLAN_STATUS: "Expired"},
        replaced=frozenset({ENDPOINT_CONFIG}),
        binding=True,
    ),
    Row(
        "EAGLE head promoted (the draft-head parameter's value at deploy)",
        DEFAULT,
        "No template change: the deploy reads the head, creates its serving model and moves the chat model's "
        "component to it in place, copy by copy.",
        values_before={DRAFT_HEAD: "none"},
        values_after={DRAFT_HEAD: HEAD_RUN_2},
        resends=IC_RESENDS,
        created=frozenset({"Custom::EagleServingModel"}),
    ),
    Row(
        "EAGLE head rolled back (an earlier head's prefix at deploy)",
        DEFAULT,
        "No template change: the serving model custom resource updates to the earlier head; the component "
        "follows the model it names.",
        values_before={DRAFT_HEAD: HEAD_RUN_2},
        values_after={DRAFT_HEAD: HEAD_RUN_1},
    ),
    Row(
        "removal: retain -> destroy",
        DEFAULT,
        "Deletion policies change (no update of their own) and the bucket-emptying custom resources are created; "
        "the buckets (the emptying tag), the run-time parameters (Removal), the keys and the log groups update in "
        "place; run-time parameters keep their values (Removal only decides what a delete does).",
        edits=(("set", "removal", "destroy"),),
    ),
    Row(
        "removal: destroy -> retain",
        DEFAULT,
        "Deletion policies change back and the bucket-emptying custom resources are deleted (in cleanup, after the "
        "updates); nothing is replaced; run-time parameters keep their values.",
        before=(("set", "removal", "destroy"),),
        edits=(("set", "removal", "retain"),),
    ),
    Row(
        "Stack delete and deploy again (removal: retain)",
        DEFAULT,
        "Every stack is deleted and deployed again under a new stack id: what the retain policies keep stays "
        "(orphaned beside the new resources: buckets with their data, keys, log groups, the session table), the "
        "run-time parameters are found again and keep their values, everything else comes back fresh.",
        lifecycle="redeploy",
    ),
    Row(
        "Stack delete and deploy again (removal: destroy)",
        DEFAULT,
        "Every stack is deleted and deployed again: nothing is retained and the run-time parameters start again "
        "from their initial values (the EAGLE watermark and head included).",
        lifecycle="redeploy",
        edits=(("set", "removal", "destroy"),),
    ),
    Row(
        "Endpoint renamed (Chat -> Assistant)",
        DEFAULT,
        "Does not deploy in one step: the renamed endpoint is a new endpoint (new logical ids), and its components "
        "keep their names (<stack>-<model>, no endpoint in them), which the old endpoint's components hold until "
        "the cleanup: CreateInferenceComponent fails after a whole new endpoint was provisioned. Two steps: deploy "
        "once with the endpoint removed, then with the new name (see troubleshooting).",
        edits=(("set", "endpoints[0].name", "Assistant"),),
        one_step=False,
        blocked=frozenset({IC}),
    ),
    Row(
        "Model renamed (the chat model: qwen3-32b -> qwen3-32b-chat)",
        DEFAULT,
        "A component under the new name is created beside the old one, which is deleted in cleanup; its model, "
        "scaling, alarms, EAGLE loop and session front door move with it; the run-time parameters of the new name "
        "start from the old ones' values (SeedFrom).",
        edits=(("set", "endpoints[0].models[0].name", "qwen3-32b-chat"),),
        replaced=frozenset({"AWS::IAM::Role", "AWS::Logs::LogGroup", "AWS::S3::Bucket", MODEL}),
        created=frozenset({IC, "Custom::EagleServingModel", RUN_TIME}),
        deleted=frozenset({IC, "Custom::EagleServingModel", RUN_TIME}),
    ),
    Row(
        "Model renamed with its adapters (qwen3-32b-lora -> qwen3-32b-base)",
        DEFAULT,
        "Does not deploy in one step: the adapters' nested stack moves with the model (a new logical id), and the "
        "adapters keep their names (<stack>-<adapter>), which the old nested stack's components hold until "
        "cleanup. Two steps: deploy once with the adapters removed, then rename the model with them back.",
        edits=(("set", "endpoints[0].models[1].name", "qwen3-32b-base"),),
        one_step=False,
        blocked=frozenset({IC}),
    ),
    Row(
        "Component renamed in place (physical_name pinned)",
        DEFAULT,
        "Does not deploy in one step: InferenceComponentName changes on the same resource, which SageMaker cannot "
        "rename. Two steps: deploy once with the model removed, then with the pinned name; or rename the model "
        "instead (a new construct id, a new component).",
        edits=(("set", "endpoints[0].models[1].physical_name", "chat-lora-base"),),
        one_step=False,
        blocked=frozenset({IC}),
    ),
    Row(
        "Adapter renamed (qwen3-32b-sql -> qwen3-32b-sql-v2)",
        DEFAULT,
        "The adapter's component is created under its new name and the old one deleted in cleanup.",
        edits=(("set", "endpoints[0].models[1].adapters[1].name", "qwen3-32b-sql-v2"),),
        created=frozenset({IC}),
        deleted=frozenset({IC}),
    ),
    Row(
        "Weights changed (model_data_s3_uri)",
        DEFAULT,
        "The model is replaced (new weights, a generated name) and the component moves to it in place, copy by "
        "copy; the EAGLE loop's reads follow.",
        edits=(("set", "endpoints[0].models[0].model_data_s3_uri", "s3://my-llm-weights/qwen3-32b-v2/"),),
        replaced=frozenset({MODEL}),
        resends=IC_RESENDS,
    ),
    Row(
        "Run-time parameters under a new construct id (same names)",
        DEFAULT,
        "Each parameter resource is created under its new logical id: the handler finds the parameter, keeps its "
        "value and takes it over, so the old resource's Delete in cleanup leaves it.",
        assembly_edit=moved(RUN_TIME, "Run-time parameters moved"),
        replaced=frozenset({RUN_TIME}),
    ),
    Row(
        "Budget notifications changed (the e-mail)",
        DEFAULT,
        "NotificationsWithSubscribers is create-only: the budget is replaced. Its name carries a digest of the "
        "notifications, so the new budget is created under a new name and the old one deleted in cleanup.",
        before=(("set", "budget", BUDGET),),
        edits=(("set", "budget.email", "llm-finance@example.com"),),
        replaced=frozenset({BUDGET_TYPE}),
    ),
    Row(
        "Budget under a new construct id (same name)",
        DEFAULT,
        "Does not deploy in one step: the new budget resource takes the name the old one holds until cleanup "
        "(CreateBudget fails). Two steps: deploy once without the budget, then with it; or keep the construct id.",
        before=(("set", "budget", BUDGET),),
        assembly_edit=moved("AWS::Budgets::Budget", "Budget moved"),
        one_step=False,
        blocked=frozenset({BUDGET_TYPE}),
    ),
    Row(
        "Router renamed (Chat -> Assistant)",
        ROUTER,
        "A router of the new name is created beside the old one (its callers move to the new name), and the old "
        "one deleted in cleanup.",
        edits=(("set", "routers[0].name", "Assistant"),),
        replaced=frozenset({"AWS::IAM::Role", "AWS::Logs::LogGroup"}),
        created=frozenset({ROUTER_TYPE}),
        deleted=frozenset({ROUTER_TYPE}),
    ),
    Row(
        "Router targets changed (a target renamed)",
        ROUTER,
        "The router custom resource updates in place: UpdateInferenceRouter with the complete targets.",
        edits=(("set", "routers[0].targets[0].name", "chat"),),
    ),
    Row(
        "Router under a new construct id (same name)",
        ROUTER,
        "Does not deploy in one step: the new router resource's CreateInferenceRouter finds the name the old one "
        "holds until cleanup. Two steps: deploy once without the router, then with it; or keep the construct id.",
        assembly_edit=moved(ROUTER_TYPE, "Router moved"),
        one_step=False,
        blocked=frozenset({ROUTER_TYPE}),
    ),
    Row(
        "Pipeline: a production region added (eu-west-1)",
        PIPELINE,
        "The pipeline updates in place (a stage and a replication bucket's stack); the new region's stacks are "
        "created; the existing stages' stacks do not change. The region needs its own plan before its first deploy.",
        edits=(
            (
                "append",
                "waves[1].stages",
                {"name": "ProdEuWest1", "config": "config/prod.yaml", "account": "222222222222", "region": "eu-west-1"},
            ),
        ),
        created=frozenset(
            {
                ENDPOINT_CONFIG,
                "AWS::SageMaker::Endpoint",
                MODEL,
                IC,
                "Custom::SageMakerCapacityPlanGuard",
                "Custom::SageMakerDeploymentCheck",
            }
        ),
    ),
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


# ----------------------------------------------------------------------------- the analysis
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


# ----------------------------------------------------------------------------- the table
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
        "`tools/update_catalogue.py` and the change report's lifecycle analysis (`tools/change_report.py`:",
        "CloudFormation's schemas from cfn-lint and its order: every create first, then the updates, the",
        "cleanup's deletes last). `tests/test_update_catalogue.py` holds the analysis to each row and keeps this",
        "file equal to the generated one. *One step*: whether the deploy succeeds as one change (**no**: why it",
        "fails and rolls back; the two-step way is in [troubleshooting](troubleshooting.md#a-deploy-that-fails-on-a-name));",
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


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--markdown", action="store_true", help="print the Markdown table (docs/update-catalogue.md)")
    args = parser.parse_args(argv)
    if not args.markdown:
        parser.error("give --markdown")
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="update-catalogue-") as folder:
        sys.stdout.write(markdown(results(synthesizer(Path(folder)))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
