"""The deployment check through CloudFormation's own sequences (``support.lifecycle``).

The check fails a deployment SageMaker rolled back silently; it must never fail, nor wait out its timeout in,
CloudFormation's rollback of an update (the rollback moves the endpoint back itself), or the stack ends in
``UPDATE_ROLLBACK_FAILED``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import pytest
from support.lifecycle import ACCOUNT, REGION, CloudFormationBackend, FakeClient, Stack, check, error

pytestmark = pytest.mark.usefixtures("replacement_rollback")  # under both readings of a replacement's rollback
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
RESOURCE_TYPE = "Custom::SageMakerDeploymentCheck"
ENDPOINT = "SageMakerLlm-Chat"
MAX_POLLS = 60  # the construct's defaults: a 30 minute total timeout, polled every 30 seconds
SETTLING = 2  # describes an endpoint or component answers Updating before it settles


def props(config: str = "Config-1", model: str = "Model-1", endpoint: str = ENDPOINT) -> dict[str, Any]:
    return {
        "EndpointName": endpoint,
        "EndpointConfigName": config,
        "Components": [{"Name": "qwen", "ModelName": model}],
    }


class FakeEndpoints:
    """SageMaker's endpoints and inference components as the stack's other resources leave them.

    ``move_to`` is what CloudFormation's endpoint resource does before the check runs: the endpoint is
    ``Updating`` for a few describes, then ``InService`` on the new config, or (``rolled_back``) on the old one,
    as SageMaker's auto rollback leaves it. Statuses as botocore's model names them.
    """

    def __init__(self) -> None:
        self.endpoints: dict[str, dict[str, Any]] = {ENDPOINT: {"config": "Config-1", "status": "InService"}}
        self.components: dict[str, dict[str, Any]] = {
            "qwen": {"endpoint": ENDPOINT, "model": "Model-1", "status": "InService"}
        }

    def move_to(
        self, config: str, *, endpoint: str = ENDPOINT, rolled_back: bool = False, settling: int = SETTLING
    ) -> None:
        found = self.endpoints.setdefault(endpoint, {"config": config, "status": "Creating"})
        found.update(
            status="Updating" if found["status"] == "InService" else found["status"],
            left=settling,
            pending=config,
            final=found["config"] if rolled_back else config,
        )

    def fail(self, endpoint: str = ENDPOINT) -> None:
        self.endpoints[endpoint].update(status="Failed", left=0)

    def DescribeEndpoint(self, EndpointName: str) -> dict[str, Any]:  # noqa: N802,N803 - the API's names
        found = self.endpoints.get(EndpointName)
        if found is None:
            raise error("ValidationException", f"Could not find endpoint {EndpointName}.")
        if found["status"] in ("Creating", "Updating"):
            if found["left"] > 0:
                found["left"] -= 1
            else:
                found.update(status="InService", config=found["final"])
        answer = {
            "EndpointName": EndpointName,
            "EndpointArn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:endpoint/" + EndpointName.lower(),
            "EndpointConfigName": found["config"],
            "EndpointStatus": found["status"],
            "CreationTime": NOW,
            "LastModifiedTime": NOW,
        }
        if found["status"] == "Updating":
            answer["PendingDeploymentSummary"] = {"EndpointConfigName": found["pending"]}
        if found["status"] == "Failed":
            answer["FailureReason"] = "the new fleet did not start"
        return answer

    def DescribeInferenceComponent(self, InferenceComponentName: str) -> dict[str, Any]:  # noqa: N802,N803
        found = self.components.get(InferenceComponentName)
        if found is None:
            raise error("ValidationException", f"Could not find inference component {InferenceComponentName}.")
        return {
            "InferenceComponentName": InferenceComponentName,
            "EndpointName": found["endpoint"],
            "InferenceComponentArn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:inference-component/"
            + InferenceComponentName,
            "InferenceComponentStatus": found["status"],
            "EndpointArn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:endpoint/" + found["endpoint"].lower(),
            "Specification": {"ModelName": found["model"]},
            "CreationTime": NOW,
            "LastModifiedTime": NOW,
        }


class CheckSubject:
    """The check as the provider framework runs it: on_event, then is_complete with on_event's answer merged into
    the event, every query interval until complete; past the total timeout the framework answers FAILED."""

    resource_type = RESOURCE_TYPE

    def __init__(self, handler: Any, sagemaker: FakeEndpoints, context: Any) -> None:
        self.handler, self.context = handler, context
        self.on_rollback: Callable[[], None] | None = None
        self.cloudformation = CloudFormationBackend()
        self.sagemaker = handler._sagemaker.inject(FakeClient("sagemaker", sagemaker))
        self.stacks = handler._cloudformation.inject(FakeClient("cloudformation", self.cloudformation))

    def stack(self, **kwargs: Any) -> Stack:
        stack = Stack(self, **kwargs)
        self.cloudformation.stacks.append(stack)
        return stack

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        rolling_back = any(
            s.stack_id == event["StackId"] and s.status == "UPDATE_ROLLBACK_IN_PROGRESS"
            for s in self.cloudformation.stacks
        )
        if rolling_back and self.on_rollback is not None:
            self.on_rollback()  # what the rollback of the stack's other resources did to the endpoint by now
        answer = self.handler.on_event(copy.deepcopy(event), self.context)
        physical = answer.get("PhysicalResourceId") or event.get("PhysicalResourceId") or event["RequestId"]
        waiting = {**event, **answer, "PhysicalResourceId": physical}
        for _ in range(MAX_POLLS):
            done = self.handler.is_complete(copy.deepcopy(waiting), self.context)
            if done.get("IsComplete"):
                return {
                    "PhysicalResourceId": physical,
                    "Data": {**(answer.get("Data") or {}), **(done.get("Data") or {})},
                }
        raise TimeoutError("Operation timed out")

    def live(self) -> set[str]:
        return set()  # the check makes nothing

    def needs(self, physical_id: str, properties: Mapping[str, Any]) -> set[str]:
        return set()

    def kept(self, properties: Mapping[str, Any]) -> bool:
        return False

    def describes(self) -> int:
        return sum(1 for name, _ in self.sagemaker.calls if name == "DescribeEndpoint")


@pytest.fixture
def sagemaker() -> FakeEndpoints:
    return FakeEndpoints()


@pytest.fixture
def subject(load_handler, sagemaker, lambda_context) -> CheckSubject:
    return CheckSubject(load_handler("deployment_check"), sagemaker, lambda_context)


def test_create_update_in_place_replacement_rename_and_delete(subject, sagemaker):
    stack = subject.stack()
    assert stack.deploy({"Check": props()}) == "CREATE_COMPLETE"
    assert stack.resources["Check"].physical_id == f"deployment-check/{ENDPOINT}"

    sagemaker.move_to("Config-2")
    assert stack.deploy({"Check": props("Config-2")}) == "UPDATE_COMPLETE"
    assert sagemaker.endpoints[ENDPOINT]["status"] == "InService"  # it waited for the update to settle
    assert [call for call in subject.stacks.calls] == [("DescribeStacks", {"StackName": stack.stack_id})]

    sagemaker.move_to("Config-3", endpoint="SageMakerLlm-Chat2")  # a new endpoint name: a new physical id
    sagemaker.components["qwen"]["endpoint"] = "SageMakerLlm-Chat2"
    assert stack.deploy({"Check": props("Config-3", endpoint="SageMakerLlm-Chat2")}) == "UPDATE_COMPLETE"
    assert stack.log[-1] == f"cleanup Delete Check deployment-check/{ENDPOINT}"

    assert stack.deploy({"Renamed": props("Config-3", endpoint="SageMakerLlm-Chat2")}) == "UPDATE_COMPLETE"
    assert stack.log[-1] == "cleanup Delete Check deployment-check/SageMakerLlm-Chat2"
    check(stack, status="UPDATE_COMPLETE")

    assert stack.delete() == "DELETE_COMPLETE"
    check(stack, status="DELETE_COMPLETE")
    first = stack.stack_id
    assert stack.deploy({"Renamed": props("Config-3", endpoint="SageMakerLlm-Chat2")}) == "CREATE_COMPLETE"
    check(stack, status="CREATE_COMPLETE")
    assert stack.stack_id != first


def test_a_silent_rollback_fails_the_update_and_its_rollback_completes(subject, sagemaker):
    stack = subject.stack()
    stack.deploy({"Check": props()})

    sagemaker.move_to("Config-2", rolled_back=True)
    assert stack.deploy({"Check": props("Config-2")}) == "UPDATE_ROLLBACK_COMPLETE"

    check(stack, status="UPDATE_ROLLBACK_COMPLETE")
    assert [(f.phase, f.request_type) for f in stack.failures] == [("update", "Update")]
    assert "on endpoint config Config-1, not Config-2" in stack.failures[0].error
    assert stack.log[-1] == f"rollback Update Check deployment-check/{ENDPOINT}"
    assert stack.resources["Check"].properties == props()


def moved_back_slowly(sagemaker: FakeEndpoints) -> None:
    sagemaker.move_to("Config-2", settling=MAX_POLLS * 2)  # longer than the check's total timeout


def failed(sagemaker: FakeEndpoints) -> None:
    sagemaker.fail()  # the rollback's own endpoint update failed


def not_moved_yet(sagemaker: FakeEndpoints) -> None:
    """The check's rollback runs before the endpoint's: InService on the config the update brought."""


@pytest.mark.parametrize("rollback", [moved_back_slowly, failed, not_moved_yet])
def test_a_rollback_completes_at_once_whatever_the_endpoint_is_doing(subject, sagemaker, rollback):
    stack = subject.stack()
    stack.deploy({"Check": props()})
    sagemaker.move_to("Config-2")
    stack.deploy({"Check": props("Config-2")})
    sagemaker.move_to("Config-3")
    subject.on_rollback = lambda: rollback(sagemaker)
    described = subject.describes()

    # another resource fails after the check passed on Config-3
    status = stack.deploy({"Check": props("Config-3")}, fail_after=True)

    assert status == "UPDATE_ROLLBACK_COMPLETE", stack.failures
    check(stack, status="UPDATE_ROLLBACK_COMPLETE")
    assert stack.log[-1] == f"rollback Update Check deployment-check/{ENDPOINT}"
    assert stack.resources["Check"].properties == props("Config-2")
    assert subject.describes() == described + SETTLING + 1  # the forward check only: the rollback reads no endpoint


def test_a_check_that_cannot_read_the_stack_status_checks_as_usual(subject, sagemaker):
    stack = subject.stack()
    stack.deploy({"Check": props()})
    subject.cloudformation.stacks.clear()  # DescribeStacks answers ValidationError

    sagemaker.move_to("Config-2", rolled_back=True)
    assert stack.deploy({"Check": props("Config-2")}) == "UPDATE_ROLLBACK_COMPLETE"
    assert "on endpoint config Config-1, not Config-2" in stack.failures[0].error
