"""The inference router custom resource through CloudFormation's own sequences (``support.lifecycle``).

Each request is on_event, then is_complete until it answers complete (as the provider framework polls it,
bounded), against a fake SageMaker that holds routers with their status transitions (``Creating`` ->
``InService``, ``Updating`` -> ``InService``, ``Deleting`` -> gone), refuses what the service refuses while a
router changes (``ConflictException``) and a name in use (``ResourceAlreadyExists``), fills in the service's
defaults, and checks every request against botocore's model (``FakeClient``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest
from support.lifecycle import ACCOUNT, REGION, FakeClient, Stack, check, error

pytestmark = pytest.mark.usefixtures("replacement_rollback")
"""Every sequence under both readings of how CloudFormation rolls back a replaced custom resource."""

RESOURCE_TYPE = "Custom::SageMakerInferenceRouter"
EAST = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:inference-component/SageMakerLlm-qwen3-8b"
WEST = "arn:aws:sagemaker:us-west-2:222222222222:inference-component/UsWest2-SageMakerLlm-qwen3-8b"
ASYNC_ENDPOINT = "arn:aws:sagemaker:eu-west-1:222222222222:endpoint/batch-async"
MAX_POLLS = 10
"""is_complete calls per request before a test gives up (the fake settles any change in two describes)."""
SETTLING_DESCRIBES = 2


def router(name: str = "SageMakerLlm-Chat", destinations: tuple[str, ...] = (EAST,), **target: Any) -> dict[str, Any]:
    return {
        "RouterName": name,
        "Tags": [{"Key": "team", "Value": "llm"}],
        "RoutingTargets": [{"Name": "qwen3-8b", "Destinations": [{"ResourceArn": d} for d in destinations], **target}],
    }


class FakeSageMaker:
    """Inference routers as SageMaker keeps them: names unique per account and region (case-insensitively, as
    the lowercase ARNs show), a status that settles a few describes after each change, the service's defaults
    in what it describes, tags by ARN."""

    def __init__(self) -> None:
        self.routers: dict[str, dict[str, Any]] = {}

    # ------------------------------------------------------------------ helpers
    def _get(self, name: str) -> dict[str, Any]:
        found = self.routers.get(name.lower())
        if found is None:
            raise error("ResourceNotFound", f"Inference router {name} not found")
        return found

    def _by_arn(self, arn: str) -> dict[str, Any]:
        for found in self.routers.values():
            if found["arn"] == arn.lower():
                return found
        raise error("ResourceNotFound", f"{arn} not found")

    @staticmethod
    def _as_shown(targets: list[dict[str, Any]]) -> list[dict[str, Any]]:
        shown = copy.deepcopy(targets)
        for target in shown:
            target.setdefault("RoutingPreference", "LocalRegionFirst")
            if "AsyncInferenceConfig" in target:
                target["AsyncInferenceConfig"].setdefault("ClientConfig", {}).setdefault("MaxTimeInBacklogSeconds", 900)
            for destination in target["Destinations"]:
                destination["RoutingStatus"] = "Routable"
        return shown

    def serving(self) -> dict[str, list[dict[str, Any]]]:
        """``{name: the targets it serves}`` of every router InService."""
        return {r["name"]: r["targets"] for r in self.routers.values() if r["status"] == "InService"}

    # ------------------------------------------------------------------ the API
    def CreateInferenceRouter(
        self,
        InferenceRouterName: str,
        RoutingTargets: list[dict[str, Any]],
        ClientToken: str | None = None,
        Tags: list[dict[str, str]] | None = None,
    ) -> dict[str, Any]:
        existing = self.routers.get(InferenceRouterName.lower())
        if existing is not None:
            if ClientToken is not None and existing["token"] == ClientToken:
                return {"InferenceRouterArn": existing["arn"]}
            raise error("ResourceAlreadyExists", f"Inference router {InferenceRouterName} already exists")
        arn = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:inference-router/{InferenceRouterName.lower()}"
        self.routers[InferenceRouterName.lower()] = {
            "name": InferenceRouterName,
            "arn": arn,
            "token": ClientToken,
            "status": "Creating",
            "left": SETTLING_DESCRIBES,
            "targets": [],
            "pending": self._as_shown(RoutingTargets),
            "tags": {t["Key"]: t["Value"] for t in Tags or []},
        }
        return {"InferenceRouterArn": arn}

    def DescribeInferenceRouter(self, InferenceRouterName: str) -> dict[str, Any]:
        found = self._get(InferenceRouterName)
        if found["status"] in ("Creating", "Updating", "Deleting"):
            found["left"] -= 1
            if found["left"] <= 0:
                if found["status"] == "Deleting":
                    del self.routers[InferenceRouterName.lower()]
                    raise error("ResourceNotFound", f"Inference router {InferenceRouterName} not found")
                found["status"], found["targets"] = "InService", found.pop("pending")
        return {
            "InferenceRouterName": found["name"],
            "InferenceRouterArn": found["arn"],
            "Status": found["status"],
            "RoutingTargets": copy.deepcopy(found["targets"]),
        }

    def UpdateInferenceRouter(self, InferenceRouterName: str, RoutingTargets: list[dict[str, Any]]) -> dict[str, Any]:
        found = self._get(InferenceRouterName)
        if found["status"] not in ("InService", "Failed"):
            raise error("ConflictException", f"Inference router {InferenceRouterName} is {found['status']}")
        found.update(status="Updating", left=SETTLING_DESCRIBES, pending=self._as_shown(RoutingTargets))
        return {"InferenceRouterArn": found["arn"]}

    def DeleteInferenceRouter(self, InferenceRouterName: str) -> dict[str, Any]:
        found = self._get(InferenceRouterName)
        if found["status"] not in ("InService", "Failed"):
            raise error("ConflictException", f"Inference router {InferenceRouterName} is {found['status']}")
        found.update(status="Deleting", left=SETTLING_DESCRIBES)
        return {}

    def ListTags(self, ResourceArn: str, NextToken: str | None = None, MaxResults: int | None = None) -> dict[str, Any]:
        return {"Tags": [{"Key": k, "Value": v} for k, v in self._by_arn(ResourceArn)["tags"].items()]}

    def AddTags(self, ResourceArn: str, Tags: list[dict[str, str]]) -> dict[str, Any]:
        self._by_arn(ResourceArn)["tags"].update({t["Key"]: t["Value"] for t in Tags})
        return {"Tags": Tags}

    def DeleteTags(self, ResourceArn: str, TagKeys: list[str]) -> dict[str, Any]:
        tags = self._by_arn(ResourceArn)["tags"]
        for key in TagKeys:
            tags.pop(key, None)
        return {}


class RouterSubject:
    """The router handler as the provider framework runs it: on_event, then is_complete with on_event's answer merged
    into the event, until complete (at most ``MAX_POLLS``); the answer's Data is on_event's and is_complete's."""

    resource_type = RESOURCE_TYPE

    def __init__(self, handler: Any, backend: FakeSageMaker, context: Any) -> None:
        self.handler, self.backend, self.context = handler, backend, context
        self.client = handler._sagemaker.inject(FakeClient("sagemaker", backend))

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        answer = self.handler.on_event(copy.deepcopy(event), self.context)
        physical = answer.get("PhysicalResourceId") or event.get("PhysicalResourceId") or event["RequestId"]
        waiting = {**event, **answer, "PhysicalResourceId": physical}
        data = dict(answer.get("Data") or {})
        for _ in range(MAX_POLLS):
            done = self.handler.is_complete(copy.deepcopy(waiting), self.context)
            if done.get("IsComplete"):
                data.update(done.get("Data") or {})
                return {"PhysicalResourceId": physical, "Data": data}
        raise AssertionError(f"{event['RequestType']} {physical} never completed in {MAX_POLLS} polls")

    def live(self) -> set[str]:
        return {r["name"] for r in self.backend.routers.values()}

    def needs(self, physical_id: str, properties: Mapping[str, Any]) -> set[str]:
        return {physical_id}

    def kept(self, properties: Mapping[str, Any]) -> bool:
        return False


@pytest.fixture
def sagemaker() -> FakeSageMaker:
    return FakeSageMaker()


@pytest.fixture
def subject(load_handler, sagemaker, lambda_context) -> RouterSubject:
    return RouterSubject(load_handler("inference_router"), sagemaker, lambda_context)


def targets_of(sagemaker: FakeSageMaker, name: str) -> list[list[str]]:
    return [[d["ResourceArn"] for d in t["Destinations"]] for t in sagemaker.serving()[name]]


def test_create_then_update_the_targets_in_place(subject, sagemaker):
    stack = Stack(subject)

    assert stack.deploy({"Router": router()}) == "CREATE_COMPLETE"
    check(stack)
    assert targets_of(sagemaker, "SageMakerLlm-Chat") == [[EAST]]
    (owner,) = sagemaker.routers.values()
    assert owner["tags"] == {
        "team": "llm",
        "sagemaker-llm-cdk:stack-id": stack.stack_id,
        "sagemaker-llm-cdk:logical-id": "Router",
    }

    assert stack.deploy({"Router": router(destinations=(EAST, WEST))}) == "UPDATE_COMPLETE"
    check(stack)
    assert targets_of(sagemaker, "SageMakerLlm-Chat") == [[EAST, WEST]]
    assert stack.resources["Router"].physical_id == "SageMakerLlm-Chat"


def test_a_rename_serves_from_the_new_router_and_the_cleanup_deletes_the_old(subject, sagemaker):
    stack = Stack(subject)
    stack.deploy({"Router": router()})

    assert stack.deploy({"Router": router("SageMakerLlm-Chat2", (EAST, WEST))}) == "UPDATE_COMPLETE"

    check(stack)
    assert sagemaker.serving().keys() == {"SageMakerLlm-Chat2"}
    assert targets_of(sagemaker, "SageMakerLlm-Chat2") == [[EAST, WEST]]
    assert "cleanup Delete Router SageMakerLlm-Chat" in stack.log
    assert not stack.failures


def test_a_failed_update_after_a_rename_rolls_back_to_the_old_router_and_its_targets(subject, sagemaker):
    """Under either reading of the rollback (``replacement_rollback``): the replaced router is sent Update with the
    old properties on the new name, which the handler answers with the old router, or the stack returns to it."""
    stack = Stack(subject)
    stack.deploy({"Router": router()})

    status = stack.deploy({"Router": router("SageMakerLlm-Chat2", (EAST, WEST))}, fail_after=True)

    assert status == "UPDATE_ROLLBACK_COMPLETE", stack.failures
    check(stack, status="UPDATE_ROLLBACK_COMPLETE")
    assert stack.resources["Router"].physical_id == "SageMakerLlm-Chat"
    assert sagemaker.serving().keys() == {"SageMakerLlm-Chat"}
    assert targets_of(sagemaker, "SageMakerLlm-Chat") == [[EAST]]
    assert stack.log[-1] == "rollback-cleanup Delete Router SageMakerLlm-Chat2"

    # and the next deploy of the rename goes through
    assert stack.deploy({"Router": router("SageMakerLlm-Chat2", (EAST, WEST))}) == "UPDATE_COMPLETE"
    check(stack)
    assert sagemaker.serving().keys() == {"SageMakerLlm-Chat2"}


def test_a_failed_update_of_the_targets_rolls_back_in_place(subject, sagemaker):
    stack = Stack(subject)
    stack.deploy({"Router": router()})

    assert stack.deploy({"Router": router(destinations=(EAST, WEST))}, fail_after=True) == "UPDATE_ROLLBACK_COMPLETE"

    check(stack, status="UPDATE_ROLLBACK_COMPLETE")
    assert targets_of(sagemaker, "SageMakerLlm-Chat") == [[EAST]]


def test_stack_delete_then_deploy_again_with_a_new_stack_id(subject, sagemaker):
    stack = Stack(subject)
    stack.deploy({"Router": router()})
    first = stack.stack_id

    assert stack.delete() == "DELETE_COMPLETE"
    check(stack, status="DELETE_COMPLETE")
    assert sagemaker.routers == {}

    assert stack.deploy({"Router": router()}) == "CREATE_COMPLETE"
    check(stack)
    assert stack.stack_id != first
    (again,) = sagemaker.routers.values()
    assert again["tags"]["sagemaker-llm-cdk:stack-id"] == stack.stack_id


def test_a_router_another_stack_holds_is_neither_taken_nor_touched(subject, sagemaker):
    theirs = Stack(subject, name="Theirs")
    theirs.deploy({"Router": router("Shared-Chat")})
    held = copy.deepcopy(sagemaker.routers)

    ours = Stack(subject, name="Ours")
    assert ours.deploy({"Router": router("Shared-Chat", (EAST, WEST))}) == "ROLLBACK_COMPLETE"
    check(ours, status="ROLLBACK_COMPLETE")
    assert ours.delete() == "DELETE_COMPLETE"  # CloudFormation updates no stack in ROLLBACK_COMPLETE
    assert ours.deploy({"Router": router("Ours-Chat")}) == "CREATE_COMPLETE"
    # a rename onto their name fails (ours keeps serving) and rolls back cleanly
    assert ours.deploy({"Router": router("Shared-Chat", (EAST, WEST))}) == "UPDATE_ROLLBACK_COMPLETE"
    check(ours, status="UPDATE_ROLLBACK_COMPLETE")
    assert any("this resource did not create it" in f.error for f in ours.failures)

    assert sagemaker.routers["shared-chat"] == held["shared-chat"]
    assert sagemaker.serving().keys() == {"Shared-Chat", "Ours-Chat"}
    check(theirs)


def test_an_async_target_settles_with_the_services_defaults(subject, sagemaker):
    stack = Stack(subject)
    asynchronous = router(
        destinations=(ASYNC_ENDPOINT,),
        AsyncInferenceConfig={
            "OutputConfig": {"S3OutputPath": "s3://router-results/out/", "S3FailurePath": "s3://router-results/failed/"}
        },
    )

    assert stack.deploy({"Router": asynchronous}) == "CREATE_COMPLETE"

    check(stack)
    (target,) = sagemaker.serving()["SageMakerLlm-Chat"]
    assert target["AsyncInferenceConfig"]["ClientConfig"] == {"MaxTimeInBacklogSeconds": 900}
    updates = [name for name, _ in subject.client.calls if name == "UpdateInferenceRouter"]
    assert updates == []
