"""The catalogue's rows: each routine change to a shipped config (``Row``) as its config edits, or the template edits
a construct id change or a library release makes, the stack parameter values read at deploy, and the outcome the
change must have on deploy (``ROWS``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

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
                "AWS::Budgets::Budget",  # the region's own budget (budgets are per stack, so per region)
            }
        ),
    ),
)
