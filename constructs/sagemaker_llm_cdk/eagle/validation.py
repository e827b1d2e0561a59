"""What an ``EagleOptimization`` is given, checked before anything is built.

The settings, the model's architecture and instance type, the stack it is created in, the dataset source and its
turn log, the capacity it runs on, the promotion parameter and the pre-trained head are all checked here, and
every problem found is reported in one ``ConfigurationError``, in a fixed order. What the checks resolve on the
way (the settings as validated, the job's instance type, the training plan ARNs, the promotion parameter's name,
the pre-trained head) is handed back in ``CheckedInputs`` for the construct to build with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aws_cdk import Stack
from aws_cdk import aws_ssm as ssm

from ..core import service_model
from ..core.errors import ConfigurationError, Problem
from ..core.run_time_state import RunTimeParameter
from ..core.settings import instance_type_problem, validated
from ..hosting.speculative_decoding import literal_parameter_name
from ..settings.eagle import EAGLE_ARCHITECTURES, EagleSettings

if TYPE_CHECKING:
    from ..hosting.model_component import ModelComponent
    from ..sessions.turn_log import TurnLog
    from .optimization import EagleOptimization


@dataclass(frozen=True)
class CheckedInputs:
    """What the checks resolved: everything ``EagleOptimization`` builds from besides its own arguments."""

    settings: EagleSettings
    job_instance_type: str
    plan_arns: list[str]
    promotion_name: str
    pretrained: Any  # the component's SpeculativeDecoding, when it serves a pre-trained head; else None
    pretrained_head: Any
    reasoning_tags: tuple[str, str] | None = None
    """The think tags a captured reply's reasoning is written back inside (``settings.dataset.reasoning``)."""


def check_inputs(
    eagle: EagleOptimization,
    *,
    component: ModelComponent,
    settings: EagleSettings | Mapping[str, Any] | None,
    promotion_parameter: ssm.IStringParameter | RunTimeParameter | None,
    capacity_plan: Any | None,
    turn_log: TurnLog | None,
) -> CheckedInputs:
    """Check every input of ``eagle``; raise one ``ConfigurationError`` with all the problems found."""
    where = eagle.node.path
    spec = component.spec
    problems: list[Problem] = []
    try:  # settings problems are reported together with the rest
        checked = validated(
            EagleSettings, settings if settings is not None else spec.eagle or EagleSettings(), where=where
        )
        settings_ok = True
    except ConfigurationError as error:
        problems.extend(problem.under("settings") for problem in error.problems)
        checked, settings_ok = EagleSettings(), False  # the checks below that read settings are skipped
    stack = Stack.of(eagle)
    job_instance_type = checked.job_instance_type or component.endpoint.instance_type
    problems.extend(_placement_problems(stack, component, checked, settings_ok, job_instance_type))
    dataset = checked.dataset
    if settings_ok and dataset.source == "capture" and component.endpoint.data_capture_bucket is None:
        problems.append(
            Problem(
                "settings.dataset.source",
                "capture",
                "s3 or builtin while the endpoint's data capture is off",
                "turn data_capture on for the endpoint, or train on your own dataset "
                "(source: s3, s3_uri: s3://bucket/prefix/)",
            )
        )
    capacity_plan = _usable_capacity_plan(capacity_plan, checked, settings_ok, problems)
    problems.extend(_turn_log_problems(turn_log, dataset.source, settings_ok))
    plan_arns = _plan_arns(stack, capacity_plan, checked, settings_ok)
    plan_type = getattr(capacity_plan, "instance_type", None) if capacity_plan else None
    if settings_ok and capacity_plan is not None and plan_type is not None and plan_type != job_instance_type:
        problems.append(
            Problem(
                "capacity_plan",
                plan_type,
                f"a plan for {job_instance_type}, the job's instance type",
                "set job_instance_type to the plan's instance type or pass another plan",
            )
        )
    promotion_name = promotion_parameter_name(eagle, promotion_parameter, component, problems)
    pretrained = getattr(component, "speculative_decoding", None)
    pretrained_head = pretrained.pretrained_head if pretrained is not None else None
    if settings_ok and checked.pretrained_head_speedup is not None and pretrained_head is None:
        problems.append(
            Problem(
                "settings.pretrained_head_speedup",
                checked.pretrained_head_speedup,
                "only on a model that serves a pre-trained EAGLE head (a JumpStart model whose "
                "lock entry has one, pretrained_head not false)",
                "remove pretrained_head_speedup: the first promoted head is compared with the "
                "base model and speedup_threshold",
            )
        )
    reasoning_tags = _reasoning_tags(component, dataset, settings_ok, problems)
    if problems:
        raise ConfigurationError(problems, source=where)
    return CheckedInputs(
        settings=checked,
        job_instance_type=job_instance_type,
        plan_arns=plan_arns,
        promotion_name=promotion_name,
        pretrained=pretrained,
        pretrained_head=pretrained_head,
        reasoning_tags=reasoning_tags,
    )


def _reasoning_tags(
    component: ModelComponent, dataset: Any, settings_ok: bool, problems: list[Problem]
) -> tuple[str, str] | None:
    """``settings.dataset.reasoning`` resolved against the model's reasoning parser: its think tags (keep, or auto
    with a parser whose tags are known), else None; keep with no such parser is a problem."""
    from ..settings.tool_calling import THINK_TAGS, reasoning_parser

    if not settings_ok or dataset.source != "capture" or dataset.reasoning == "drop":
        return None
    parser = reasoning_parser(component.spec)
    tags = THINK_TAGS.get(parser or "")
    if tags is None and dataset.reasoning == "keep":
        problems.append(
            Problem(
                "settings.dataset.reasoning",
                "keep",
                "a model whose reasoning parser takes the reasoning from known think tags ("
                + ", ".join(sorted(THINK_TAGS))
                + f"); this model runs {'reasoning parser ' + repr(parser) if parser else 'no reasoning parser'}",
                "turn the model's reasoning on with one of those parsers (reasoning: {parser: qwen3}), or set "
                "reasoning: drop",
            )
        )
    return tags


def _placement_problems(
    stack: Stack, component: ModelComponent, settings: EagleSettings, settings_ok: bool, job_instance_type: str
) -> list[Problem]:
    """The model must have an EAGLE architecture, its jobs an instance type that runs them, and the loop must be
    created in the component's stack."""
    problems: list[Problem] = []
    spec = component.spec
    if spec.architecture not in EAGLE_ARCHITECTURES:
        problems.append(
            Problem(
                "component.spec.architecture",
                spec.architecture,
                "one of " + ", ".join(f"{a} ({v})" for a, v in EAGLE_ARCHITECTURES.items()),
                "set the model's architecture (config.json 'architectures'); SageMaker trains "
                "EAGLE heads for these only",
            )
        )
    if settings_ok and settings.job_instance_type is None:
        problem = instance_type_problem(
            "settings.job_instance_type",
            job_instance_type,
            service_model.optimization_instance_types(),
            "optimization jobs",
        )
        if problem:
            problems.append(
                Problem(
                    problem.path,
                    problem.value,
                    problem.allowed,
                    f"the endpoint's instance type cannot run optimization jobs: set job_instance_type ({problem.fix})",
                )
            )
    component_stack = Stack.of(component.cfn_model)
    if stack is not component_stack:
        problems.append(
            Problem(
                "scope",
                stack.node.path,
                f"a construct in the component's stack ({component_stack.node.path})",
                "create EagleOptimization in the stack of the model it optimizes: it rewires "
                "the model's inference component and grants its endpoint role",
            )
        )
    return problems


def _usable_capacity_plan(
    capacity_plan: Any | None, settings: EagleSettings, settings_ok: bool, problems: list[Problem]
) -> Any | None:
    """``capacity_plan`` when jobs may run on it; a ``CapacityPlan`` (bought for endpoints) is refused (None)."""
    from ..capacity.capacity_plan import CapacityPlan

    if isinstance(capacity_plan, CapacityPlan):
        problems.append(
            Problem(
                "capacity_plan",
                capacity_plan.plan_name,
                "a training plan meant for jobs (target training-job); capacity plans target "
                "endpoints and SageMaker refuses them in an optimization job's TrainingPlanArns",
                "leave capacity_plan out (on-demand), or pass a plan bought for training jobs "
                "(settings.training_plan: <ARN or name>)",
            )
        )
        capacity_plan = None
    if capacity_plan is not None and settings_ok and settings.training_plan is not None:
        problems.append(
            Problem(
                "settings.training_plan",
                settings.training_plan,
                "either settings.training_plan or capacity_plan, not both",
                "keep one of the two",
            )
        )
    return capacity_plan


def _turn_log_problems(turn_log: TurnLog | None, source: str, settings_ok: bool) -> list[Problem]:
    """A front door's turn log is given exactly when the dataset source is ``front_door``."""
    problems: list[Problem] = []
    if settings_ok and source == "front_door" and turn_log is None:
        problems.append(
            Problem(
                "turn_log",
                None,
                "a TurnLog with dataset source front_door",
                "create TurnLog(stack, 'Turns'), pass it as turn_log and call "
                "front_door.log_turns(turn_log) on the model's SessionFrontDoor",
            )
        )
    if turn_log is not None and source != "front_door":
        problems.append(
            Problem(
                "turn_log",
                turn_log.node.path,
                "only with dataset source front_door",
                "set dataset.source to front_door or remove turn_log",
            )
        )
    return problems


def _plan_arns(stack: Stack, capacity_plan: Any | None, settings: EagleSettings, settings_ok: bool) -> list[str]:
    """The training plans the job runs on: ``settings.training_plan`` (ARN or name), else the capacity plan's."""
    plan_arns: list[str] = list(getattr(capacity_plan, "training_plan_arns", []) or []) if capacity_plan else []
    if settings_ok and settings.training_plan is not None:
        plan_arns = [
            settings.training_plan
            if settings.training_plan.startswith("arn:")
            else stack.format_arn(service="sagemaker", resource="training-plan", resource_name=settings.training_plan)
        ]
    return plan_arns


def promotion_parameter_name(
    eagle: EagleOptimization,
    parameter: ssm.IStringParameter | RunTimeParameter | None,
    component: ModelComponent,
    problems: list[Problem],
) -> str:
    """The promotion parameter's fixed name; "" with a problem added when there is none or it cannot be used."""
    component_stack = Stack.of(component.cfn_model)
    if parameter is None:
        problems.append(
            Problem(
                "promotion_parameter",
                None,
                "an SSM parameter in a stack deployed before " + component_stack.stack_name + ": CloudFormation reads "
                "it (AWS::SSM::Parameter::Value) before it creates anything in that stack, so it cannot be created "
                "in the same stack",
                f"add a companion stack, e.g. promotions = Stack(app, '{component_stack.stack_name}EaglePromotion', "
                f"env=...); head = PromotionParameter(promotions, '{eagle.node.id}Head', model_name="
                f"'{component.component_name}'); then pass promotion_parameter=head.parameter",
            )
        )
        return ""
    if Stack.of(parameter) is component_stack and not _imported(parameter):
        problems.append(
            Problem(
                "promotion_parameter",
                parameter.node.path,
                f"a parameter created in a stack other than {component_stack.stack_name} (the component's stack), "
                "deployed before it",
                "create PromotionParameter in a companion stack (Stack(app, '...EaglePromotion')) and pass its "
                ".parameter; this stack then depends on the companion stack",
            )
        )
    name = literal_parameter_name(parameter)
    if name is None:
        problems.append(
            Problem(
                "promotion_parameter",
                parameter.node.path,
                "a parameter with a fixed name (the stack reads it by name)",
                "use PromotionParameter, or give the StringParameter a parameter_name",
            )
        )
        return ""
    return name


def _imported(parameter: ssm.IStringParameter | RunTimeParameter) -> bool:
    """True for ``StringParameter.from_*`` references (no resource of their own in any stack)."""
    return not isinstance(parameter, RunTimeParameter) and not isinstance(
        parameter.node.default_child, ssm.CfnParameter
    )
