"""``DeploymentCheck``: fail the deployment when SageMaker silently rolled an endpoint or model update back.

SageMaker's auto rollback (``DeploymentConfig.AutoRollbackConfiguration``) returns an endpoint
or inference component to its previous state and reports it ``InService``; CloudFormation then
records the update as complete although the template's config or model is not what runs. This
custom resource runs after the endpoint and every inference component and compares what runs
with what the template declares; when they differ the stack update fails (and CloudFormation
rolls the template back too), with a message saying what runs instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jsii
from aws_cdk import CustomResource, Duration, IStableAnyProducer, Lazy, Stack
from aws_cdk import aws_iam as iam

from constructs import Construct, IValidation

from ..core.errors import ConfigurationError, Problem
from ..core.functions import python_function
from ..core.grants import acknowledge_waiting_provider
from .waiting_provider import waiting_provider

if TYPE_CHECKING:
    from ..hosting.endpoint import LlmEndpoint
    from ..hosting.model_component import ModelComponent

RESOURCE_TYPE = "Custom::SageMakerDeploymentCheck"
HANDLER_FOLDER = "deployment_check"
MAX_TOTAL_TIMEOUT = Duration.hours(2)
"""The Provider framework's limit on how long is-complete polling may last."""


class DeploymentCheck(Construct):
    """Confirms after each deployment that the endpoint runs the template's endpoint config and models.

    A custom resource (``Custom::SageMakerDeploymentCheck``, child ``Resource``) whose properties
    are the endpoint name, the endpoint config name the template created, and each inference
    component's name and model name, so it runs again on every change to any of them. The
    Provider framework polls ``is_complete`` (``lambda/deployment_check``) every
    ``query_interval`` until the endpoint and components are ``InService`` on what the template
    declares, and fails the resource when they settled on something else (a silent rollback),
    failed, or did not settle within ``total_timeout``. Deleting the resource does nothing, and
    CloudFormation's rollback of an update is not checked (its on-event function reads this
    stack's status to tell it): the stack returns to ``UPDATE_ROLLBACK_COMPLETE``, never
    ``UPDATE_ROLLBACK_FAILED``.

    Create it after the endpoint's last ``add_model``; components added later (LoRA adapters)
    join with ``add_component``. Its functions may only describe this endpoint and these
    components. Escape hatches: ``custom_resource``, ``provider``, ``on_event_function``,
    ``is_complete_function``.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        endpoint: LlmEndpoint,
        query_interval: Duration | None = None,
        total_timeout: Duration | None = None,
    ) -> None:
        """
        :param endpoint: the endpoint to check, with its models.
        :param query_interval: how often the state is read while it settles. Default: 30 seconds.
        :param total_timeout: how long it may take to settle before the deployment fails, at most
            2 hours. Default: 30 minutes.
        """
        super().__init__(scope, id)
        query_interval = query_interval or Duration.seconds(30)
        total_timeout = total_timeout or Duration.minutes(30)
        self._check_durations(query_interval, total_timeout)
        self.endpoint = endpoint
        self._components: list[dict[str, Any]] = []
        self._functions(endpoint)
        framework = waiting_provider(
            self,
            on_event_function=self.on_event_function,
            is_complete_function=self.is_complete_function,
            query_interval=query_interval,
            total_timeout=total_timeout,
            subject=f"the deployment check of {endpoint.node.path}",
        )
        self.framework_roles = framework.framework_roles
        self.waiter_logs = framework.waiter_logs
        self.provider = framework.provider
        self.custom_resource = CustomResource(
            self,
            "Resource",
            service_token=self.provider.service_token,
            resource_type=RESOURCE_TYPE,
            properties={
                "EndpointName": endpoint.endpoint_name,
                "EndpointConfigName": endpoint.cfn_endpoint_config.attr_endpoint_config_name,
                "Components": Lazy.any(_Components(self._components), omit_empty_array=False),
            },
        )
        self.node.default_child = self.custom_resource
        for model in endpoint.models:
            self.add_model(model)
        self.node.add_validation(_AllModelsChecked(self))
        _acknowledge_deployment_check(self)

    def _check_durations(self, query_interval: Duration, total_timeout: Duration) -> None:
        problems = []
        if not 60 <= total_timeout.to_seconds() <= MAX_TOTAL_TIMEOUT.to_seconds():
            problems.append(
                Problem(
                    "total_timeout",
                    f"{total_timeout.to_seconds():g} s",
                    "1 minute to 2 hours",
                    "pass e.g. Duration.minutes(30)",
                )
            )
        if not 5 <= query_interval.to_seconds() <= min(total_timeout.to_seconds(), 3600):
            problems.append(
                Problem(
                    "query_interval",
                    f"{query_interval.to_seconds():g} s",
                    "5 seconds to 1 hour, and at most total_timeout",
                    "pass e.g. Duration.seconds(30)",
                )
            )
        if problems:
            raise ConfigurationError(problems, source=self.node.path)

    def _functions(self, endpoint: LlmEndpoint) -> None:
        """The on-event and is-complete functions, each allowed to read only what its step needs."""
        self.on_event_function = python_function(
            self,
            "OnEvent",
            folder=HANDLER_FOLDER,
            handler="index.on_event",
            description=f"Starts the deployment check of {endpoint.node.path} (custom resource)",
            timeout=Duration.seconds(30),
        )
        self.is_complete_function = python_function(
            self,
            "IsComplete",
            folder=HANDLER_FOLDER,
            handler="index.is_complete",
            description=f"Checks that {endpoint.node.path} runs the deployed config and models (custom resource)",
            timeout=Duration.minutes(1),
        )
        # A rollback is never checked (failing or waiting would leave UPDATE_ROLLBACK_FAILED): on_event tells it by
        # this stack's status, and may read no other stack's.
        self.on_event_function.add_to_role_policy(
            iam.PolicyStatement(
                sid="ReadThisStacksStatus",
                actions=["cloudformation:DescribeStacks"],
                resources=[Stack.of(self).stack_id],
            )
        )
        self.is_complete_function.add_to_role_policy(
            iam.PolicyStatement(
                sid="DescribeThisEndpoint", actions=["sagemaker:DescribeEndpoint"], resources=[endpoint.endpoint_arn]
            )
        )
        self._describe_components = iam.PolicyStatement(
            sid="DescribeTheseComponents", actions=["sagemaker:DescribeInferenceComponent"], resources=[]
        )

    def add_model(self, model: ModelComponent) -> None:
        """Check ``model``'s inference component too: InService, on this endpoint, serving its model."""
        self.add_component(
            model.component_name,
            model.component_arn,
            model_name=model.served_model_name,
            dependency=model.cfn_inference_component,
        )

    def add_component(
        self,
        name: str,
        arn: str,
        *,
        model_name: str | None = None,
        artifact_url: str | None = None,
        dependency: Construct | None = None,
    ) -> None:
        """Check another inference component of this endpoint (e.g. a LoRA adapter).

        :param name: the component's name.
        :param arn: its ARN (the check may describe only the components it is given).
        :param model_name: the model it must serve (``Specification.ModelName``). Default: not compared.
        :param artifact_url: the artifact it must serve (``Specification.Container.ArtifactUrl``, adapters).
            Default: not compared.
        :param dependency: the construct that creates or updates it, so the check runs after it.
        """
        if any(c["Name"] == name for c in self._components):
            raise ConfigurationError(
                [Problem("name", name, "a component this check does not have yet", "add each component once")],
                source=self.node.path,
            )
        entry: dict[str, Any] = {"Name": name}
        if model_name is not None:
            entry["ModelName"] = model_name
        if artifact_url is not None:
            entry["ArtifactUrl"] = artifact_url
        self._components.append(entry)
        self._describe_components.add_resources(arn)
        if len(self._components) == 1:
            self.is_complete_function.add_to_role_policy(self._describe_components)
        if dependency is not None:
            self.custom_resource.node.add_dependency(dependency)


@jsii.implements(IValidation)
class _AllModelsChecked:
    """Fails the synth when a model joined the endpoint after the check was created and not via ``add_model``."""

    def __init__(self, check: DeploymentCheck) -> None:
        self._check = check

    def validate(self) -> list[str]:
        checked = {c["Name"] for c in self._check._components}
        missed = [m.component_name for m in self._check.endpoint.models if m.component_name not in checked]
        if not missed:
            return []
        return [
            f"{self._check.node.path}: models {missed} of {self._check.endpoint.node.path} are not checked; create "
            "the DeploymentCheck after the last add_model, or call check.add_model(model)"
        ]


@jsii.implements(IStableAnyProducer)
class _Components:
    """The components list, rendered at synth so components added after the constructor count."""

    def __init__(self, components: list[dict[str, Any]]) -> None:
        self._components = components

    def produce(self) -> list[dict[str, Any]]:
        return list(self._components)


def _acknowledge_deployment_check(check: Any) -> None:
    """A ``deployment_check.DeploymentCheck`` (Provider framework with an is-complete waiter)."""
    acknowledge_waiting_provider(
        check.provider,
        check.framework_roles,
        (check.on_event_function, check.is_complete_function),
        handler_text="the check's own handler function",
        polled_text="check function",
    )
