"""The whole deployment config (``AppConfig``): each feature's settings put together, with the rules that span them.

Imports settings (and pure facts) only, never a construct module, so a config can be checked without CDK. The
budget (``budget``), tag rules (``tags``), names across the config (``config_names``) and the fit of a model on its
endpoint (``fit``) have their own modules; their names are importable from here too.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field

from ..core.errors import Problem
from ..core.settings import Settings, identifier_problem, name_problem, unless_failed
from .budget import BudgetSettings as BudgetSettings
from .capacity import CapacityPlanSpec, spec_binding_problems
from .config_names import duplicate_name_problems as duplicate_name_problems
from .config_names import plan_reference_problem as plan_reference_problem
from .config_names import raw_plan_reference_problems as raw_plan_reference_problems
from .endpoint import EndpointOptions, VpcPlacement, pools_with_plan_problem
from .fit import model_fit_problems as model_fit_problems
from .images import ami_problems
from .model import ModelSpec
from .operations import MonitoringSettings
from .routing import RouterSpec, router_problems
from .tags import MAX_TAGS as MAX_TAGS
from .tags import tag_problems as tag_problems

_STACK_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,127}$")


class DeploymentTarget(Settings):
    """Where the stacks deploy. Default: environment-agnostic (account and region from the CLI)."""

    account: Annotated[str | None, Field(pattern=r"^\d{12}$", description="12-digit AWS account id.")] = None
    region: Annotated[
        str | None, Field(pattern=r"^[a-z]{2}(-[a-z]+)+-\d$", description="AWS region, e.g. us-east-1.")
    ] = None


class ChecksSettings(Settings):
    """Synth-time checks. AwsSolutions (cdk-nag) always runs and fails the synth on an unacknowledged finding."""

    nag_warning_packs: Annotated[
        tuple[Literal["nist-800-53-r5", "serverless"], ...],
        Field(description=("Extra cdk-nag packs reported as warnings only. Default: none.")),
    ] = ()


class EndpointSpec(EndpointOptions):
    """One endpoint in the config: its options plus the models it hosts."""

    name: Annotated[
        str,
        Field(
            description=("Logical name: the construct id and, unless endpoint_name is set, part of generated names.")
        ),
    ]
    endpoint_name: Annotated[
        str | None, Field(description=("Physical endpoint name. Default: derived from the stack and endpoint names."))
    ] = None
    vpc: Annotated[VpcPlacement | None, Field(description="Run instances in these subnets. Default: no VPC.")] = None
    models: Annotated[
        tuple[ModelSpec, ...], Field(min_length=1, max_length=50, description="Models hosted as inference components.")
    ]
    capacity_plan: Annotated[
        str | None,
        Field(
            description=(
                "Name of a plan in capacity_plans that this endpoint runs on (capacity-reservations-only), bound only "
                "while the plan is Active (see the plan's when_not_active). Remove it to move the endpoint to "
                "on-demand capacity (the endpoint config is replaced). Default: on-demand capacity."
            )
        ),
    ] = None

    def _rules(self) -> list[Problem]:
        problems: list[Problem] = []
        with unless_failed():
            problems.extend(super()._rules())
        with unless_failed():
            problem = identifier_problem("name", self.name)
            if problem:
                problems.append(problem)
        with unless_failed():
            if self.endpoint_name is not None:
                problem = name_problem("endpoint_name", self.endpoint_name, "EndpointName")
                if problem:
                    problems.append(problem)
        with unless_failed():
            problems.extend(
                ami_problems(
                    [
                        (f"models[{i}].image", m.image) for i, m in enumerate(self.models) if not m.is_jumpstart
                    ],  # a JumpStart model's image: from the lock
                    self.inference_ami_version,
                )
            )
        with unless_failed():
            retention = self.data_capture.retention_days
            for index, model in enumerate(self.models):
                if model.eagle is None or model.eagle.dataset.source != "capture" or not self.data_capture.enabled:
                    continue
                days = _rate_days(model.eagle.schedule)
                if days is not None and days >= retention:
                    problems.append(
                        Problem(
                            "data_capture.retention_days",
                            retention,
                            f"more days than models[{index}].eagle.schedule ({model.eagle.schedule}, "
                            f"every {days:g} days)",
                            "keep captures longer than the EAGLE interval, or run EAGLE more often: captured traffic "
                            "older than retention_days expires before the next run reads it",
                        )
                    )
        with unless_failed():
            for index, model in enumerate(self.models):  # the same for the front door's turn log
                if model.eagle is None or model.eagle.dataset.source != "front_door" or model.sessions is None:
                    continue
                days = _rate_days(model.eagle.schedule)
                kept = model.sessions.turn_log_retention_days
                if days is not None and days >= kept:
                    problems.append(
                        Problem(
                            f"models[{index}].sessions.turn_log_retention_days",
                            kept,
                            f"more days than models[{index}].eagle.schedule ({model.eagle.schedule}, "
                            f"every {days:g} days)",
                            "keep logged turns longer than the EAGLE interval, or run EAGLE more often: turns older "
                            "than turn_log_retention_days expire before the next run reads them",
                        )
                    )
        for index, model in enumerate(self.models):
            with unless_failed():  # a model that failed validation is skipped; its own problems are reported
                problems.extend(p.under(f"models[{index}]") for p in model_fit_problems(model, self))
        return problems


def _rate_days(schedule: str | None) -> float | None:
    """Days between runs of an EventBridge ``rate(N unit)`` expression; None for cron or nothing."""
    match = re.fullmatch(r"rate\((\d+) (minute|minutes|hour|hours|day|days)\)", (schedule or "").strip())
    if not match:
        return None
    per_day = {"minute": 1440, "hour": 24, "day": 1}[match.group(2).rstrip("s")]
    return int(match.group(1)) / per_day


class AppConfig(Settings):
    """A deployment of this team's app: one stack holding the endpoints below."""

    stack_name: Annotated[str, Field(description="CloudFormation stack name. Default: SageMakerLlm.")] = "SageMakerLlm"
    target: Annotated[DeploymentTarget, Field(description="Account and region. Default: from the CLI.")] = (
        DeploymentTarget()
    )
    tags: Annotated[dict[str, str], Field(description="Tags on every resource. Default: none.")] = {}
    endpoints: Annotated[
        tuple[EndpointSpec, ...],
        Field(
            min_length=1,
            max_length=20,
            description="The SageMaker endpoints this config deploys, each with its models; names unique.",
        ),
    ]
    checks: Annotated[ChecksSettings, Field(description="Synth-time checks. Default: AwsSolutions only.")] = (
        ChecksSettings()
    )
    monitoring: Annotated[
        MonitoringSettings,
        Field(
            description=(
                "Dashboards, alarms (one KMS-encrypted topic) and safe rollouts. Default: on, with the defaults listed."
            )
        ),
    ] = MonitoringSettings()
    capacity_plans: Annotated[
        tuple[CapacityPlanSpec, ...],
        Field(
            max_length=20,
            description=(
                "Reserved GPU capacity, in the companion stack <stack_name>Capacity: plans to buy once (price cap "
                "here, consent on the deploy command: -c purchase=<name>) or existing plans, each bound to at most one "
                "endpoint by its capacity_plan. Default: none."
            ),
        ),
    ] = ()
    budget: Annotated[
        BudgetSettings | None,
        Field(
            description=(
                "An AWS Budgets cost budget (USD per month) on this deployment's tagged resources, alerting at ACTUAL "
                "and FORECASTED thresholds. Required when the monthly ceiling is above USD 10,000; the synth refuses a "
                "config whose ceiling is above max_usd_per_month. Default: none."
            )
        ),
    ] = None
    removal: Annotated[
        Literal["retain", "destroy"],
        Field(
            description=(
                "What `cdk destroy` does with data: retain keeps KMS keys, S3 buckets, log groups and the EAGLE runs "
                "table (production: data, keys and audit logs outlive the stack); destroy deletes them with the stack "
                "(buckets emptied first, keys scheduled for deletion after 7 days), for dev and test. A bought "
                "capacity plan is never deleted. Default: retain."
            )
        ),
    ] = "retain"
    routers: Annotated[
        tuple[RouterSpec, ...],
        Field(
            max_length=10,
            description=(
                "Inference routers: one entry point whose routing targets send each request to a model's inference "
                "component in any region and account that deploys this config (the pipeline's stages), or to "
                "endpoints given by ARN. Default: none."
            ),
        ),
    ] = ()

    def _rules(self) -> list[Problem]:
        problems = []
        with unless_failed():
            problems.extend(tag_problems(self.tags))
        with unless_failed():
            if not _STACK_NAME.match(self.stack_name):
                problems.append(
                    Problem(
                        "stack_name",
                        self.stack_name,
                        "1-128 letters, digits and hyphens, starting with a letter",
                        "rename the stack",
                    )
                )
        with unless_failed():  # on a partly valid config, parse_config checks the raw endpoints instead
            problems.extend(duplicate_name_problems([e.model_dump() for e in self.endpoints]))
        problems.extend(self._capacity_plan_problems())
        with unless_failed():
            problems.extend(self._eagle_plan_problems())
        with unless_failed():
            problems.extend(self._budget_problems())
        with unless_failed():
            models = {
                m.name: f"endpoints[{e}].models[{i}]"
                for e, endpoint in enumerate(self.endpoints)
                for i, m in enumerate(endpoint.models)
            }
            problems.extend(router_problems(self.routers, models))
        return problems

    def _budget_problems(self) -> list[Problem]:
        """``budget.tag`` is one of ``tags``. The ceiling within the budget is checked where the cost model is
        (``config.loading.budget_problems``): the settings floor builds no cost model."""
        if self.budget is not None and self.budget.tag is not None and self.budget.tag not in self.tags:
            return [
                Problem(
                    "budget.tag",
                    self.budget.tag,
                    f"a key of tags ({', '.join(self.tags) or 'none'})",
                    "add the tag to tags, or leave budget.tag out",
                )
            ]
        return []

    def _eagle_plan_problems(self) -> list[Problem]:
        """An EAGLE job's ``training_plan`` must not be one of ``capacity_plans``: those are bought for endpoints,
        and SageMaker accepts a plan only for its own target (an optimization job needs a plan for training jobs)."""
        known: dict[str, int] = {}
        for index, plan in enumerate(self.capacity_plans):
            for name in (plan.plan_name, plan.physical_plan_name(self.stack_name), plan.existing_plan_arn):
                if name:
                    known.setdefault(name, index)
        problems = []
        for e_index, endpoint in enumerate(self.endpoints):
            for m_index, model in enumerate(endpoint.models):
                plan_name = model.eagle.training_plan if model.eagle is not None else None
                if plan_name is None:
                    continue
                short = plan_name.rsplit("/", 1)[-1]
                found = known.get(plan_name, known.get(short))
                if found is not None:
                    problems.append(
                        Problem(
                            f"endpoints[{e_index}].models[{m_index}].eagle.training_plan",
                            plan_name,
                            f"a plan bought for training jobs, not capacity_plans[{found}] (bought for endpoints: "
                            "SageMaker refuses it for an optimization job)",
                            "buy a plan whose target is training-job for the job, or remove training_plan to run it "
                            "on demand",
                        )
                    )
        return problems

    def _capacity_plan_problems(self) -> list[Problem]:
        """Each endpoint's capacity_plan names a declared plan, one endpoint per plan, and the endpoint fits it."""
        problems: list[Problem] = []
        plans: dict[str, int] = {}
        physical: dict[str, int] = {}  # TrainingPlanName -> first plan that buys or uses it
        complete = True  # every plan's name is known (none failed validation)
        for p_index, plan in enumerate(self.capacity_plans):
            complete = False
            with unless_failed():
                if plan.plan_name in plans:
                    problems.append(
                        Problem(
                            f"capacity_plans[{p_index}].name",
                            plan.plan_name,
                            f"a name not used by capacity_plans[{plans[plan.plan_name]}]",
                            "declare each plan once",
                        )
                    )
                elif plan.physical_plan_name(self.stack_name) in physical:
                    name = plan.physical_plan_name(self.stack_name)
                    field = "physical_name" if plan.physical_name is not None else "name"
                    problems.append(
                        Problem(
                            f"capacity_plans[{p_index}].{field}",
                            getattr(plan, field),
                            f"a plan whose TrainingPlanName ({name}) is not that of capacity_plans[{physical[name]}]",
                            "pin a different physical_name, or declare the plan once",
                        )
                    )
                plans.setdefault(plan.plan_name, p_index)
                physical.setdefault(plan.physical_plan_name(self.stack_name), p_index)
                complete = True
            if not complete:
                break
        bound: dict[str, int] = {}
        for e_index, endpoint in enumerate(self.endpoints):
            with unless_failed():  # an endpoint that failed validation is checked from the raw config instead
                if endpoint.capacity_plan is None:
                    continue
                path = f"endpoints[{e_index}]"
                if endpoint.capacity_plan not in plans:
                    if complete:
                        problems.append(plan_reference_problem(path, endpoint.capacity_plan, list(plans)))
                    continue
                if endpoint.capacity_plan in bound:
                    problems.append(
                        Problem(
                            f"{path}.capacity_plan",
                            endpoint.capacity_plan,
                            f"a plan no other endpoint uses (endpoints[{bound[endpoint.capacity_plan]}] runs on it)",
                            "declare a separate plan for each endpoint",
                        )
                    )
                bound.setdefault(endpoint.capacity_plan, e_index)
                if endpoint.instance_pools:
                    problems.append(pools_with_plan_problem(f"{path}.capacity_plan"))
                plan = self.capacity_plans[plans[endpoint.capacity_plan]]
                problems.extend(p.under(path) for p in spec_binding_problems(plan, endpoint))
        return problems
