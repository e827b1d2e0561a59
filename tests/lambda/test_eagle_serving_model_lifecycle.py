"""lambda/eagle_serving_model through CloudFormation's own sequences (``support.lifecycle``): a promoted head
served, changed in place, rolled back and deleted; a stack deleted and deployed again while the promotion
parameter, kept, still names the old stack's head; and new base weights, which the old head was not trained on.

The properties are those ``eagle.serving.SpeculativeDecoding`` synthesizes, with the deploy-time values filled
in (``tests/eagle/test_eagle.py`` checks the template's shape). The fake SageMaker refuses, as SageMaker does, a model
whose data its role cannot read.
"""

from __future__ import annotations

import copy
import json
import logging
import re
from collections.abc import Mapping
from typing import Any

import boto3
import pytest
from support.cfn_response import recording_urlopen
from support.lifecycle import ACCOUNT, REGION, FakeClient, Stack, check, error

pytestmark = pytest.mark.usefixtures("replacement_rollback")
"""Every sequence under both readings of how CloudFormation rolls back a replaced custom resource."""

PREFIX = "qwen3-32b-eagle"
WEIGHTS = "s3://my-weights/qwen3-32b/"
NEW_WEIGHTS = "s3://my-weights/qwen3-32b-v2/"
PRETRAINED = "s3://jumpstart-cache-prod-us-east-1/qwen3/eagle3-draft/v1/"
NO_HEAD = "none"
SPECULATIVE = json.dumps(
    {"method": "eagle3", "model": "/opt/ml/additional-model-data-sources/eagle", "num_speculative_tokens": 5},
    separators=(",", ":"),
)


def role(stack: int) -> str:
    return f"arn:aws:iam::{ACCOUNT}:role/SageMakerLlm-{stack}-EndpointRole"


def bucket(stack: int) -> str:
    return f"sagemakerllm-{stack}-artifacts"


def head(stack: int, job: str) -> str:
    return f"s3://{bucket(stack)}/jobs/{job}/draft/"


def source(uri: str) -> dict[str, str]:
    return {"S3Uri": uri, "S3DataType": "S3Prefix", "CompressionType": "None"}


def properties(value: str, *, stack: int = 1, weights: str = WEIGHTS, pretrained: bool = False) -> dict[str, Any]:
    """The serving model's properties when the promotion parameter holds ``value`` (as the construct makes them)."""
    promoted = value != NO_HEAD
    channel = source(value) if promoted else source(PRETRAINED)
    promoted_head: dict[str, Any] = {"S3Uri": value, "ReadablePrefix": f"s3://{bucket(stack)}/jobs/"}
    if pretrained:
        promoted_head["Fallback"] = source(PRETRAINED)
    return {
        "ModelNamePrefix": PREFIX,
        "ExecutionRoleArn": role(stack),
        "PrimaryContainer": {
            "Image": "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.36.0-lmi18.0.0-cu128",
            "ModelDataSource": {"S3DataSource": source(weights)},
            "AdditionalModelDataSources": [{"ChannelName": "eagle", "S3DataSource": channel}],
            "Environment": {"OPTION_MODEL_ID": "/opt/ml/model", "OPTION_SPECULATIVE_CONFIG": SPECULATIVE},
        },
        "PromotedHead": promoted_head,
    }


def template(value: str, **options: Any) -> dict[str, dict[str, Any]]:
    """The stack's serving model: without a pre-trained head it exists only while a head is promoted."""
    if value == NO_HEAD and not options.get("pretrained"):
        return {}
    return {"ServingModel": properties(value, **options)}


class FakeSageMaker:
    """Models, and the optimization jobs whose heads they may serve; S3 data a role may read, per role."""

    def __init__(self) -> None:
        self.models: dict[str, dict[str, Any]] = {}
        self.jobs: dict[str, dict[str, Any]] = {}
        self.readable: dict[str, tuple[str, ...]] = {}
        self.stored: set[str] = {WEIGHTS, NEW_WEIGHTS, PRETRAINED}

    def allow(self, stack: int) -> None:
        """The grants stack ``stack``'s endpoint role has: the weights, the pre-trained head, its own heads."""
        self.readable[role(stack)] = (WEIGHTS, NEW_WEIGHTS, PRETRAINED, f"s3://{bucket(stack)}/jobs/")

    def train(self, stack: int, job: str, weights: str = WEIGHTS) -> str:
        """A completed optimization job of stack ``stack`` on ``weights``; the head's URI."""
        output = f"s3://{bucket(stack)}/jobs/{job}/"
        self.jobs[job] = {
            "OptimizationJobName": job,
            "OptimizationJobStatus": "COMPLETED",
            "ModelSource": {"S3": {"S3Uri": weights}},
            "OutputConfig": {"S3OutputLocation": output},
        }
        self.stored.add(head(stack, job))
        return head(stack, job)

    # ------------------------------------------------------------------ SageMaker
    def DescribeModel(self, ModelName: str) -> dict[str, Any]:
        if ModelName not in self.models:
            raise error("ValidationException", f'Could not find model "{ModelName}".')
        return {"ModelName": ModelName, "ModelArn": self._arn(ModelName), "CreationTime": "2026-12-02T00:00:00Z"}

    def CreateModel(self, **request: Any) -> dict[str, Any]:
        name = request["ModelName"]
        if name in self.models:
            raise error("ValidationException", f'Cannot create already existing model "{self._arn(name)}".')
        container = request["PrimaryContainer"]
        uris = [container["ModelDataSource"]["S3DataSource"]["S3Uri"]] + [
            s["S3DataSource"]["S3Uri"] for s in container.get("AdditionalModelDataSources", [])
        ]
        for uri in uris:
            readable = self.readable.get(request["ExecutionRoleArn"], ())
            if uri not in self.stored or not uri.startswith(readable):
                raise error(
                    "ValidationException",
                    f"Could not access model data at {uri}. Please ensure that the "
                    "role exists and that its permissions allow access to the data.",
                )
        self.models[name] = copy.deepcopy(request)
        return {"ModelArn": self._arn(name)}

    def DeleteModel(self, ModelName: str) -> dict[str, Any]:
        if ModelName not in self.models:
            raise error("ValidationException", f'Could not find model "{ModelName}".')
        del self.models[ModelName]
        return {}

    def DescribeOptimizationJob(self, OptimizationJobName: str) -> dict[str, Any]:
        if OptimizationJobName not in self.jobs:
            raise error("ResourceNotFound", f"Optimization job {OptimizationJobName} does not exist.")
        return self.jobs[OptimizationJobName]

    @staticmethod
    def _arn(name: str) -> str:
        return f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:model/{name}"


class ServingModels:
    """The ``Custom::EagleServingModel`` subject: the handler, answering on its ResponseURL, and the fake SageMaker."""

    resource_type = "Custom::EagleServingModel"

    def __init__(self, module: Any, sagemaker: FakeSageMaker, context: Any) -> None:
        self.module = module
        self.sagemaker = sagemaker
        self.context = context

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        self.module.handler(event, self.context)
        answer = self.module.sent.pop()
        if answer["Status"] != "SUCCESS":
            raise RuntimeError(answer["Reason"])
        return answer

    def live(self) -> set[str]:
        return set(self.sagemaker.models)

    def needs(self, physical_id: str, properties: Mapping[str, Any]) -> set[str]:
        return {physical_id} if re.fullmatch(re.escape(PREFIX) + r"-[0-9a-f]{12}", physical_id) else set()

    def kept(self, properties: Mapping[str, Any]) -> bool:
        return False

    def served(self, stack: Stack) -> tuple[str, str | None, str]:
        """What the stack's serving model runs: its weights, its draft head (None) and its speculative option."""
        container = self.sagemaker.models[stack.resources["ServingModel"].physical_id]["PrimaryContainer"]
        heads = [
            s["S3DataSource"]["S3Uri"]
            for s in container.get("AdditionalModelDataSources", [])
            if s["ChannelName"] == "eagle"
        ]
        assert len(heads) <= 1, container
        return (
            container["ModelDataSource"]["S3DataSource"]["S3Uri"],
            heads[0] if heads else None,
            container.get("Environment", {}).get("OPTION_SPECULATIVE_CONFIG", "-"),
        )


def deployed(
    stack: Stack, resources: Mapping[str, Mapping[str, Any]], *, status: str, fail_after: bool = False
) -> None:
    """Deploy ``resources`` (``fail_after``: another resource of the stack fails) and hold the stack to the rules."""
    stack.deploy(resources, fail_after=fail_after)
    check(stack, status=status)


class _SageMakerClient(FakeClient):
    """The fake with the real client's ``meta``: the handler checks its CreateModel request against that model."""

    meta = boto3.client("sagemaker", region_name=REGION).meta


@pytest.fixture
def subject(load_handler, monkeypatch, lambda_context, caplog) -> ServingModels:
    module = load_handler("eagle_serving_model")
    # Powertools keeps one logger per service name for the process: an earlier test may have left its level above
    # INFO, so the tests that read what the handler logged set it themselves.
    caplog.set_level(logging.INFO, logger=module.logger.name)
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(
        module.urllib.request, "urlopen", recording_urlopen(sent, lambda request: request.get_method() == "PUT")
    )
    module.sent = sent
    sagemaker = FakeSageMaker()
    sagemaker.allow(1)
    module._sagemaker.inject(_SageMakerClient("sagemaker", sagemaker))
    return ServingModels(module, sagemaker, lambda_context)


@pytest.mark.parametrize("pretrained", [False, True], ids=["no-pretrained-head", "pretrained-head"])
def test_a_head_is_served_changed_rolled_back_and_deleted(subject, pretrained):
    sagemaker = subject.sagemaker
    stack = Stack(subject)
    deployed(stack, template(NO_HEAD, pretrained=pretrained), status="CREATE_COMPLETE")
    first = sagemaker.train(1, "eagle-qwen3-32b-0123456789ab")
    deployed(stack, template(first, pretrained=pretrained), status="UPDATE_COMPLETE")  # without one: created now
    assert subject.served(stack) == (WEIGHTS, first, SPECULATIVE)
    serving_first = stack.resources["ServingModel"].physical_id

    second = sagemaker.train(1, "eagle-qwen3-32b-ba9876543210")
    deployed(stack, template(second, pretrained=pretrained), status="UPDATE_COMPLETE")
    assert subject.served(stack) == (WEIGHTS, second, SPECULATIVE)
    assert serving_first not in sagemaker.models, "the cleanup deleted the model of the first head"

    # Another resource of the stack fails: the rollback returns to the second head, the third's model goes.
    third = sagemaker.train(1, "eagle-qwen3-32b-aaaaaaaaaaaa")
    deployed(stack, template(third, pretrained=pretrained), fail_after=True, status="UPDATE_ROLLBACK_COMPLETE")
    assert subject.served(stack) == (WEIGHTS, second, SPECULATIVE)
    assert len(sagemaker.models) == 1

    stack.delete()
    check(stack, status="DELETE_COMPLETE")
    assert sagemaker.models == {}


@pytest.mark.parametrize("pretrained", [False, True], ids=["no-pretrained-head", "pretrained-head"])
def test_a_stack_deployed_again_does_not_serve_the_head_its_kept_parameter_names(subject, pretrained, caplog):
    """removal: retain keeps the promotion parameter when the stack is deleted; the new stack's bucket is another,
    which its endpoint role may read, and the old head is not in it: the create must succeed without that head."""
    sagemaker = subject.sagemaker
    stack = Stack(subject)
    old_head = sagemaker.train(1, "eagle-qwen3-32b-0123456789ab")
    deployed(stack, template(old_head, pretrained=pretrained), status="CREATE_COMPLETE")
    stack.delete()
    check(stack, status="DELETE_COMPLETE")

    sagemaker.allow(2)  # the new stack: a new role, granted its own new bucket only
    deployed(stack, template(old_head, stack=2, pretrained=pretrained), status="CREATE_COMPLETE")
    fallback = (PRETRAINED, SPECULATIVE) if pretrained else (None, "-")
    assert subject.served(stack) == (WEIGHTS, *fallback)
    assert f"promoted draft head {old_head} not served: it is not under s3://{bucket(2)}/jobs/" in caplog.text

    # The next promotion of the new stack is served; withdrawing it is a plain update (or delete) again.
    new_head = sagemaker.train(2, "eagle-qwen3-32b-0123456789ab")
    deployed(stack, template(new_head, stack=2, pretrained=pretrained), status="UPDATE_COMPLETE")
    assert subject.served(stack) == (WEIGHTS, new_head, SPECULATIVE)
    deployed(stack, template(NO_HEAD, stack=2, pretrained=pretrained), status="UPDATE_COMPLETE")
    stack.delete()
    check(stack, status="DELETE_COMPLETE")


@pytest.mark.parametrize("pretrained", [False, True], ids=["no-pretrained-head", "pretrained-head"])
def test_new_weights_serve_no_head_trained_on_the_old_ones(subject, pretrained, caplog):
    sagemaker = subject.sagemaker
    stack = Stack(subject)
    trained = sagemaker.train(1, "eagle-qwen3-32b-0123456789ab", weights=WEIGHTS)
    deployed(stack, template(trained, pretrained=pretrained), status="CREATE_COMPLETE")
    assert subject.served(stack) == (WEIGHTS, trained, SPECULATIVE)

    deployed(stack, template(trained, weights=NEW_WEIGHTS, pretrained=pretrained), status="UPDATE_COMPLETE")
    fallback = (PRETRAINED, SPECULATIVE) if pretrained else (None, "-")
    assert subject.served(stack) == (NEW_WEIGHTS, *fallback)
    assert (f"it was trained on the weights {WEIGHTS} and the model now serves {NEW_WEIGHTS}") in caplog.text

    # A failed update back to the old weights rolls back to the new weights' model, which still serves no head.
    deployed(stack, template(trained, pretrained=pretrained), fail_after=True, status="UPDATE_ROLLBACK_COMPLETE")
    assert subject.served(stack) == (NEW_WEIGHTS, *fallback)

    retrained = sagemaker.train(1, "eagle-qwen3-32b-ba9876543210", weights=NEW_WEIGHTS)
    deployed(stack, template(retrained, weights=NEW_WEIGHTS, pretrained=pretrained), status="UPDATE_COMPLETE")
    assert subject.served(stack) == (NEW_WEIGHTS, retrained, SPECULATIVE)
    stack.delete()
    check(stack, status="DELETE_COMPLETE")


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (head(1, "eagle-qwen3-32b-0123456789ab"), "no optimization job eagle-qwen3-32b-0123456789ab in this account"),
        (
            f"s3://{bucket(1)}/jobs/by-hand/draft/",
            "it is not the draft/ folder of one of this stack's optimization jobs",
        ),
        (f"s3://{bucket(1)}/jobs/eagle-a/nested/draft/", "it is not the draft/ folder"),
    ],
)
def test_a_head_no_job_of_this_stack_wrote_is_not_served(subject, value, reason, caplog):
    subject.sagemaker.stored.add(value)
    stack = Stack(subject)
    deployed(stack, template(value), status="CREATE_COMPLETE")
    assert subject.served(stack) == (WEIGHTS, None, "-")
    assert reason in caplog.text
    stack.delete()
    check(stack, status="DELETE_COMPLETE")


def test_a_head_of_a_job_that_did_not_complete_or_wrote_elsewhere_is_not_served(subject, caplog):
    sagemaker = subject.sagemaker
    uri = sagemaker.train(1, "eagle-qwen3-32b-0123456789ab")
    sagemaker.jobs["eagle-qwen3-32b-0123456789ab"]["OptimizationJobStatus"] = "FAILED"
    stack = Stack(subject)
    deployed(stack, template(uri), status="CREATE_COMPLETE")
    assert subject.served(stack)[1] is None and "is FAILED, not COMPLETED" in caplog.text
    sagemaker.jobs["eagle-qwen3-32b-0123456789ab"].update(
        OptimizationJobStatus="COMPLETED", OutputConfig={"S3OutputLocation": "s3://elsewhere/out/"}
    )
    deployed(stack, template(uri, weights=NEW_WEIGHTS), status="UPDATE_COMPLETE")
    assert subject.served(stack)[1] is None and "wrote its head to s3://elsewhere/out/draft/" in caplog.text


@pytest.mark.parametrize(
    ("promoted", "message"),
    [
        ("not an object", "PromotedHead: got 'not an object'; allowed: an object of S3Uri"),
        ({"S3Uri": "s3://b/jobs/j/draft/"}, "PromotedHead: got"),
        (
            {"S3Uri": "s3://b/jobs/j/draft/", "ReadablePrefix": "s3://b/jobs"},
            "PromotedHead.ReadablePrefix: got 's3://b/jobs'",
        ),
        ({"S3Uri": "s3://b/jobs/j/draft/", "ReadablePrefix": "s3://b/jobs/", "Fallback": "x"}, "PromotedHead.Fallback"),
    ],
)
def test_a_malformed_promoted_head_fails_before_any_aws_call(subject, promoted, message):
    bad = properties(head(1, "eagle-qwen3-32b-0123456789ab"))
    bad["PromotedHead"] = promoted
    with pytest.raises(subject.module.PropertiesError, match=re.escape(message)):
        subject.module.promoted_head(bad)
    stack = Stack(subject)
    assert stack.deploy({"ServingModel": bad}) == "ROLLBACK_COMPLETE"
    assert message in stack.failures[0].error
    assert subject.sagemaker.models == {}
