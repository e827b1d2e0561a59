"""``CapacityPlanGuard``: an endpoint binds a capacity plan only while the plan is Active.

A plan is usable by an endpoint only while it is Active, and an endpoint config bound to a plan
that is not gets no instances: the deploy waits for the endpoint's create timeout and rolls back.
The guard is a custom resource that runs ``DescribeTrainingPlan`` (seconds) before the endpoint
config is created or replaced:

* the endpoint config reads ``MlReservationArn`` from the guard, so CloudFormation runs the
  guard first, and the ARN is the one SageMaker returns (no cross-stack export);
* the guard's properties carry the endpoint config as rendered (``inputs_of``: a digest of every
  create-only property of ``AWS::SageMaker::EndpointConfig``, overrides included, and each value
  only CloudFormation knows, such as the role's ARN, as itself), so any change that replaces the
  endpoint config runs the guard again; the template stays deterministic (no timestamps);
* ``when_not_active: fail`` (default): a plan that is not Active fails the deploy with its
  status, start and end and what to do, before the endpoint config changes;
* ``when_not_active: on_demand``: the endpoint's stack reads the plan's status parameter
  (``/sagemaker-llm/state/capacity-plans/<plan>/status``, read from SageMaker when the plan's stack deploys
  and written daily by the plan's check; no deploy resets it) at deploy
  time; while it is not ``Active`` a CloudFormation condition leaves ``CapacityReservationConfig``
  out, so the endpoint runs on on-demand capacity, and the first deploy after it is binds the
  plan (and a deploy after the plan ends moves the endpoint back to on-demand). CloudFormation
  conditions cannot read a custom resource's output, hence the parameter.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import jsii
from aws_cdk import (
    CfnCondition,
    CfnParameter,
    CfnResource,
    CustomResource,
    Duration,
    Fn,
    IAnyProducer,
    IResolveContext,
    Lazy,
    Stack,
)
from aws_cdk import aws_iam as iam

from constructs import Construct

from ..core.functions import provider_framework, python_function
from ..core.nag import acknowledge_resource
from ..core.run_time_state import STATE_PREFIX

if TYPE_CHECKING:
    from .capacity_plan import CapacityPlan

RESOURCE_TYPE = "Custom::SageMakerCapacityPlanGuard"
ENDPOINT_CONFIG_CREATE_ONLY = (
    "AsyncInferenceConfig",
    "DataCaptureConfig",
    "EnableNetworkIsolation",
    "EndpointConfigName",
    "ExecutionRoleArn",
    "ExplainerConfig",
    "KmsKeyId",
    "MetricsConfig",
    "ProductionVariants",
    "ShadowProductionVariants",
    "VpcConfig",
)
"""The properties CloudFormation's schema of ``AWS::SageMaker::EndpointConfig`` marks create-only (cfn-lint's
copy, every region: ``createOnlyProperties``; a test keeps this list equal to it): a change of any of them
replaces the endpoint config. Only ``Tags`` is updatable."""
DEPLOY_TIME_VALUE = "<value>"
"""Key of the placeholder ``inputs_of`` leaves in the digested properties for a value CloudFormation resolves."""
GUARD_REFERENCE = "<the capacity guard's MlReservationArn>"
"""What ``inputs_of`` digests in place of the config's reference to the guard (passing it would be a cycle)."""


STATUS_PARAMETER_PREFIX = f"{STATE_PREFIX}/capacity-plans/"
"""SSM parameters ``<prefix><plan>/status`` hold each plan's status (``when_not_active: on_demand``)."""


def status_parameter_name(plan_name: str) -> str:
    """The SSM parameter that holds ``plan_name``'s status for ``when_not_active: on_demand``."""
    return f"{STATUS_PARAMETER_PREFIX}{plan_name}/status"


class CapacityPlanGuard(Construct):
    """The Active check ahead of one endpoint's endpoint config (``LlmEndpoint`` makes it; child ``CapacityGuard``).

    Attributes: ``ml_reservation_arn`` (the plan's ARN as SageMaker returns it), ``bound`` (a
    CloudFormation condition, or None when the endpoint always binds), ``custom_resource``,
    ``function``, ``provider``. The guard never buys anything; its role may only describe the plan.
    """

    def __init__(
        self, scope: Construct, id: str, *, plan: CapacityPlan, instance_type: str, max_instances: int
    ) -> None:
        """
        :param plan: the plan the endpoint binds (any stack of the app; referenced by name or ARN, no export).
        :param instance_type: the endpoint's instance type, checked against the plan's at deploy.
        :param max_instances: the most instances the endpoint may run, checked against the plan's count.

        ``watch`` names the endpoint config whose create-only properties the guard carries (it is made after the
        guard, since it reads ``ml_reservation_arn``).
        """
        super().__init__(scope, id)
        stack = Stack.of(self)
        self.plan = plan
        self.when_not_active = plan.spec.when_not_active
        self.update_policy = "BLUE_GREEN"
        """How the endpoint moves to a new config (``set_update_policy``); SageMaker's default without a
        deployment config is blue/green."""
        name = plan.spec.existing_plan_arn or plan.plan_name
        self._rendered: Callable[[], Mapping[str, Any]] | None = None
        self.bound: CfnCondition | None = None
        bound: str = "true"
        if self.when_not_active == "on_demand":
            status = CfnParameter(
                self,
                "PlanStatus",
                type="AWS::SSM::Parameter::Value<String>",
                default=status_parameter_name(plan.plan_name),
                description=f"Status of capacity plan {plan.plan_name}, read at deploy time: the endpoint binds the "
                "plan only while it is Active",
            )
            self.bound = CfnCondition(
                self, "PlanActive", expression=Fn.condition_equals(status.value_as_string, "Active")
            )
            bound = Fn.condition_if(self.bound.logical_id, "true", "false").to_string()

        self.function = python_function(
            self,
            "Check",
            folder="capacity_plan_guard",
            description=f"checks that capacity plan {plan.plan_name} is Active before {scope.node.path} binds it",
            timeout=Duration.minutes(1),
        )
        self.function.add_to_role_policy(
            iam.PolicyStatement(
                sid="DescribeThePlan", actions=["sagemaker:DescribeTrainingPlan"], resources=plan_arns_for(plan, stack)
            )
        )
        # CloudFormation's rollback of an update is never refused (that would end in UPDATE_ROLLBACK_FAILED): the
        # guard tells it by this stack's status, and may read no other stack's.
        self.function.add_to_role_policy(
            iam.PolicyStatement(
                sid="ReadThisStacksStatus", actions=["cloudformation:DescribeStacks"], resources=[stack.stack_id]
            )
        )
        self.provider, self.provider_role = provider_framework(
            self,
            on_event=self.function,
            description=f"Custom resource framework of the capacity guard of {scope.node.path}",
        )
        self.custom_resource = CustomResource(
            self,
            "Resource",
            service_token=self.provider.service_token,
            resource_type=RESOURCE_TYPE,
            properties={
                "PlanName": name,
                "InstanceType": instance_type,
                "MaxInstances": str(max_instances),
                "WhenNotActive": self.when_not_active,
                "Bound": bound,
                "EndpointConfigInputs": Lazy.uncached_any(_ConfigInputs(self)),
                "UpdatePolicy": self.update_policy,
            },
        )
        self.node.default_child = self.custom_resource.node.default_child
        self.ml_reservation_arn = self.custom_resource.get_att_string("MlReservationArn")
        _acknowledge_guard(self)

    def set_update_policy(self, policy: str, *, rolling_batch: Mapping[str, str] | None = None) -> None:
        """Record the endpoint's update policy (BLUE_GREEN, ROLLING or NONE_FITS) for the deploy-time headroom check,
        and with ROLLING its step (``rolling_batch``: the endpoint's ``MaximumBatchSize``, Type and Value), which
        the check counts instead of one instance."""
        self.update_policy = policy
        resource = self.custom_resource.node.default_child
        assert isinstance(resource, CfnResource)
        resource.add_property_override("UpdatePolicy", policy)
        if rolling_batch is not None:
            resource.add_property_override("RollingBatchSize", dict(rolling_batch))
        else:
            resource.add_property_deletion_override("RollingBatchSize")

    def watch(self, rendered: Callable[[], Mapping[str, Any]]) -> None:
        """Carry the endpoint config ``rendered`` returns (its CloudFormation properties, tokens unresolved,
        overrides applied) in ``EndpointConfigInputs``, read when the template is rendered (``inputs_of``)."""
        self._rendered = rendered


@jsii.implements(IAnyProducer)
class _ConfigInputs:
    """``EndpointConfigInputs`` of a guard, computed when the template is rendered: the models an endpoint
    hosts (and so its InferenceAmiVersion) are added after the guard."""

    def __init__(self, guard: CapacityPlanGuard) -> None:
        self._guard = guard

    def produce(self, context: IResolveContext) -> Any:
        if self._guard._rendered is None:
            raise ValueError(
                f"{self._guard.node.path}: watch(endpoint config) was not called; the guard cannot tell "
                "when the endpoint config is replaced"
            )
        resource = self._guard.custom_resource.node.default_child
        assert isinstance(resource, CfnResource)
        return inputs_of(
            context.resolve(self._guard._rendered()), guard_logical_id=context.resolve(resource.logical_id)
        )


def plan_arns_for(plan: CapacityPlan, stack: Stack) -> list[str]:
    """The exact ARNs the guard may describe: the given ARN, or the name's ARN (and its lowercase form)."""
    if plan.spec.existing_plan_arn is not None:
        return [plan.spec.existing_plan_arn]
    names = [plan.plan_name] + ([plan.plan_name.lower()] if plan.plan_name.lower() != plan.plan_name else [])
    return [stack.format_arn(service="sagemaker", resource="training-plan", resource_name=n) for n in names]


def inputs_of(properties: Mapping[str, Any], *, guard_logical_id: str) -> list[Any]:
    """What CloudFormation compares for an endpoint config's resolved ``properties``: a digest, then each
    deploy-time value as itself.

    Only ``ENDPOINT_CONFIG_CREATE_ONLY`` properties count (a tag change does not replace the config). A value
    only CloudFormation knows (``Ref``, ``Fn::GetAtt``, ``Fn::Join`` of them, ...) is passed through, once, and
    the digest holds its position, so a replaced role or key changes the guard's properties as CloudFormation
    resolves them. ``Fn::If`` is digested with its condition's name and both branches (the guard's ``Bound``
    carries its own condition's value). The config's reference to the guard itself (``MlReservationArn``) is
    digested as ``GUARD_REFERENCE``: passing it would make the guard depend on itself.
    """
    passed: list[Any] = []
    seen: dict[str, int] = {}

    def walk(value: Any) -> Any:
        if isinstance(value, list):
            return [walk(item) for item in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, body),) = value.items()
            if key == "Fn::GetAtt" and isinstance(body, list) and body[:1] == [guard_logical_id]:
                return GUARD_REFERENCE
            if key == "Fn::If" and isinstance(body, list) and len(body) == 3:
                return {"Fn::If": [body[0], walk(body[1]), walk(body[2])]}
            if value == {"Ref": "AWS::NoValue"}:
                return value
            if key == "Ref" or key.startswith("Fn::"):
                text = json.dumps(value, sort_keys=True)
                if text not in seen:
                    seen[text] = len(passed)
                    passed.append(value)
                return {DEPLOY_TIME_VALUE: seen[text]}
        return {key: walk(item) for key, item in value.items()}

    digested = walk({key: properties[key] for key in ENDPOINT_CONFIG_CREATE_ONLY if key in properties})
    digest = hashlib.sha256(json.dumps(digested, sort_keys=True, default=str).encode()).hexdigest()
    return [f"sha256:{digest}", *passed]


def _acknowledge_guard(guard: Any) -> None:
    """A ``capacity_guard.CapacityPlanGuard``: its custom resource framework invokes only its own check."""
    acknowledge_resource(
        guard.provider_role,
        f"{guard.function.function_arn}:*",
        "The custom resource framework invokes the capacity guard's own check function; lambda:InvokeFunction on "
        "that one function and its versions (the ':*' qualifier), nothing else.",
        actions=["lambda:InvokeFunction"],
    )
