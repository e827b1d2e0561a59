"""The first event of each function for ``benchmarks/cold_start.py``: what a cold start pays before it answers.

Each scenario is the event a function gets most (one the handler tests use too) with its AWS calls answered by
``botocore.stub.Stubber`` on the handler's own clients (no network; the point is the Python work): the clients
are made by the handler's getters inside the timed part, when the handler first asks for them, as on a real
first call (boto3 loads the service model then), and the request is still validated and serialized by
botocore; only adding the stubbed answers and importing this module (with ``botocore.stub``) are left out
of the time (``Clock.paused``); the CPU time the getters took to make the clients is reported apart as well.
After the call every stubbed answer must have been used and the handler must have answered as the
scenario expects, so a scenario that silently took another path fails the benchmark instead of timing it.

``ENVIRONMENTS`` holds the variables a scenario needs beyond those its function gets in the synthesized
templates (whose tokens the benchmark turns into placeholders) or, without an assembly, at all.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

from botocore.response import StreamingBody  # imported with this module: not timed
from botocore.stub import Stubber

ACCOUNT = "123456789012"
UTC = UTC
NOW = datetime.now(UTC)
PLAN = "chat-p5e-2027q1"
PLAN_ARN = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-plan/{PLAN}"
CALLER = f"arn:aws:iam::{ACCOUNT}:user/chat-app"

ENVIRONMENTS: dict[str, dict[str, str]] = {
    "capacity_plan_expiry": {"TRAINING_PLAN_NAMES": PLAN, "STATUS_PARAMETERS": f"{PLAN}=/llm/capacity/{PLAN}/status"},
    "eagle_dataset": {
        "DATASET_KMS_KEY_ARN": f"arn:aws:kms:us-east-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    },
    "eagle_job": {
        "ROLE_ARN": f"arn:aws:iam::{ACCOUNT}:role/eagle-job",
        "OUTPUT_S3_URI": "s3://eagle-output/jobs",
        "MAX_RUNTIME_SECONDS": "86400",
        "KMS_KEY_ARN": "",
    },
    "session_router": {
        "ENDPOINT_NAME": "chat",
        "SESSIONS_TABLE": "chat-sessions",
        "DEFAULT_COMPONENT": "base",
        "TURN_LOG_STREAM": "",
    },
}
"""Variables each scenario sets over the function's own (an empty value unsets one)."""


class Clock:
    """CPU and wall time since the interpreter's ``import index`` began, less the ``paused`` parts."""

    def __init__(self, cpu: float, wall: float) -> None:
        self.cpu, self.wall = cpu, wall

    @contextmanager
    def paused(self) -> Iterator[None]:
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            yield
        finally:
            self.cpu += time.process_time() - cpu
            self.wall += time.perf_counter() - wall

    def elapsed(self) -> tuple[float, float]:
        return time.process_time() - self.cpu, time.perf_counter() - self.wall


class Stubs:
    """Answers for the handler's clients: ``ok(module, "_sagemaker", operation, response)`` / ``error(...)`` queue
    one answer for the client of the getter ``module._sagemaker``. The getter is wrapped so that the client is
    still made by the handler, when it first calls for it (timed, in the handler's own order: a client made
    early would, for one, make a later lazy import walk a bigger heap); the answers are added to it then,
    untimed."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.answers: dict[tuple[int, str], list[tuple[str, str, Any]]] = {}
        self.stubbers: list[Any] = []
        self.clients_cpu = 0.0
        """CPU seconds the getters took to make the clients (part of the timed work; printed apart)."""

    def _queue(self, module: Any, getter: str, kind: str, operation: str, answer: Any) -> None:
        key = (id(module), getter)
        if key not in self.answers:
            self.answers[key] = []
            self._wrap(module, getter, self.answers[key])
        self.answers[key].append((kind, operation, answer))

    def _wrap(self, module: Any, name: str, answers: list[tuple[str, str, Any]]) -> None:
        original = getattr(module, name)
        made: list[Any] = []

        def getter() -> Any:
            if made:
                return made[0]
            cpu = time.process_time()
            client = original()  # the handler's own getter makes its client: timed
            self.clients_cpu += time.process_time() - cpu
            with self.clock.paused():
                stubber = Stubber(client)
                for kind, operation, answer in answers:
                    if kind == "ok":
                        stubber.add_response(operation, answer)
                    else:
                        stubber.add_client_error(
                            operation, service_error_code=answer[0], service_message=answer[1], http_status_code=400
                        )
                stubber.activate()
                self.stubbers.append(stubber)
                made.append(client)
            return client

        setattr(module, name, getter)

    def ok(self, module: Any, getter: str, operation: str, response: dict[str, Any]) -> None:
        self._queue(module, getter, "ok", operation, response)

    def error(self, module: Any, getter: str, operation: str, code: str, message: str = "") -> None:
        self._queue(module, getter, "error", operation, (code, message or code))

    def check(self) -> None:
        """Every getter was called and every answer used."""
        if len(self.stubbers) != len(self.answers):
            raise AssertionError(f"{len(self.answers) - len(self.stubbers)} stubbed client(s) never made")
        for stubber in self.stubbers:
            stubber.assert_no_pending_responses()


def _body(data: bytes) -> Any:
    return StreamingBody(io.BytesIO(data), len(data))


def _custom_resource(request: str, resource_type: str, properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "RequestType": request,
        "ResponseURL": "https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com/x",
        "StackId": f"arn:aws:cloudformation:us-east-1:{ACCOUNT}:stack/llm/guid",
        "RequestId": "req-1",
        "LogicalResourceId": "Resource",
        "ResourceType": resource_type,
        "ResourceProperties": {"ServiceToken": f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:provider", **properties},
        **extra,
    }


def _plan(
    status: str = "Active", start: datetime = NOW - timedelta(days=5), days: int = 30, count: int = 2, in_use: int = 0
) -> dict[str, Any]:
    return {
        "TrainingPlanArn": PLAN_ARN,
        "TrainingPlanName": PLAN,
        "Status": status,
        "StartTime": start,
        "EndTime": start + timedelta(days=days),
        "DurationHours": days * 24,
        "DurationMinutes": 0,
        "UpfrontFee": "80000.00",
        "CurrencyCode": "USD",
        "TotalInstanceCount": count,
        "TargetResources": ["endpoint"],
        "InUseInstanceCount": in_use,
        "AvailableInstanceCount": count - in_use,
        "ReservedCapacitySummaries": [
            {
                "ReservedCapacityArn": f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:reserved-capacity/rc-1234567890",
                "InstanceType": "ml.p5e.48xlarge",
                "TotalInstanceCount": count,
                "Status": status,
            }
        ],
    }


# ------------------------------------------------------------------------------------------- scenarios
# Each returns (what, entry point, event, check of the answer).


def capacity_plan(index: Any, stubs: Stubs) -> tuple[str, str, Any, Callable[[Any], bool]]:
    start = NOW + timedelta(days=3)
    stubs.error(index, "_sagemaker", "describe_training_plan", "ResourceNotFound", f"Training plan {PLAN} not found")
    capacity = {
        "InstanceType": "ml.p5e.48xlarge",
        "InstanceCount": 2,
        "AvailabilityZone": "us-east-1a",
        "DurationHours": 7 * 24,
        "DurationMinutes": 0,
        "StartTime": start,
        "EndTime": start + timedelta(days=7),
    }
    stubs.ok(
        index,
        "_sagemaker",
        "search_training_plan_offerings",
        {
            "TrainingPlanOfferings": [
                {
                    "TrainingPlanOfferingId": f"tpo-{i}",
                    "TargetResources": ["endpoint"],
                    "DurationHours": 7 * 24,
                    "DurationMinutes": 0,
                    "UpfrontFee": fee,
                    "CurrencyCode": "USD",
                    "ReservedCapacityOfferings": [capacity],
                }
                for i, fee in enumerate(("150000.00", "95000.00", "80000.00"))
            ]
        },
    )
    stubs.ok(index, "_sagemaker", "create_training_plan", {"TrainingPlanArn": PLAN_ARN})
    stubs.ok(index, "_sagemaker", "describe_training_plan", _plan("Pending", start, 7))
    event = _custom_resource(
        "Create",
        "Custom::SageMakerCapacityPlan",
        {
            "PlanName": PLAN,
            "InstanceType": "ml.p5e.48xlarge",
            "InstanceCount": "2",
            "DurationDays": "7",
            "MaxUpfrontFeeUsd": "100000",
            "Purchase": "approved",
        },
    )
    return "Create: buy the cheapest offering", "handler", event, lambda out: out["PhysicalResourceId"] == PLAN_ARN


def capacity_plan_expiry(index: Any, stubs: Stubs) -> tuple[str, str, Any, Callable[[Any], bool]]:
    stubs.ok(index, "_sagemaker", "describe_training_plan", _plan())
    stubs.ok(
        index,
        "_ssm",
        "get_parameter",
        {"Parameter": {"Name": f"/llm/capacity/{PLAN}/status", "Type": "String", "Value": "Active", "Version": 3}},
    )
    return (
        "daily schedule: one plan, status unchanged",
        "handler",
        {"version": "0", "detail-type": "Scheduled Event", "source": "aws.scheduler", "detail": {}},
        lambda out: out["plans"][0]["Status"] == "Active",
    )


def capacity_plan_guard(index: Any, stubs: Stubs) -> tuple[str, str, Any, Callable[[Any], bool]]:
    stubs.ok(index, "_sagemaker", "describe_training_plan", _plan())
    event = _custom_resource(
        "Create",
        "Custom::SageMakerCapacityPlanGuard",
        {
            "PlanName": PLAN,
            "InstanceType": "ml.p5e.48xlarge",
            "MaxInstances": "2",
            "WhenNotActive": "fail",
            "Bound": "true",
            "EndpointConfigInputs": ["sha256:abc", f"arn:aws:iam::{ACCOUNT}:role/endpoint"],
            "UpdatePolicy": "BLUE_GREEN",
        },
    )
    return "Create: plan Active", "handler", event, lambda out: out["Data"]["Status"] == "Active"


def deployment_check(index: Any, stubs: Stubs) -> tuple[str, str, Any, Callable[[Any], bool]]:
    arn = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:"
    stubs.ok(
        index,
        "_sagemaker",
        "describe_endpoint",
        {
            "EndpointName": "chat",
            "EndpointArn": arn + "endpoint/chat",
            "EndpointConfigName": "chat-config-2",
            "EndpointStatus": "InService",
            "CreationTime": NOW,
            "LastModifiedTime": NOW,
        },
    )
    stubs.ok(
        index,
        "_sagemaker",
        "describe_inference_component",
        {
            "InferenceComponentName": "qwen3-8b",
            "InferenceComponentArn": arn + "inference-component/qwen3-8b",
            "EndpointName": "chat",
            "EndpointArn": arn + "endpoint/chat",
            "VariantName": "AllTraffic",
            "Specification": {"ModelName": "qwen3-8b-model-2"},
            "InferenceComponentStatus": "InService",
            "CreationTime": NOW,
            "LastModifiedTime": NOW,
        },
    )
    event = _custom_resource(
        "Update",
        "Custom::SageMakerDeploymentCheck",
        {
            "EndpointName": "chat",
            "EndpointConfigName": "chat-config-2",
            "Components": [{"Name": "qwen3-8b", "ModelName": "qwen3-8b-model-2"}],
        },
        PhysicalResourceId="deployment-check/chat",
    )
    return "is_complete: all InService", "is_complete", event, lambda out: out["IsComplete"] is True


def _capture_line(i: int) -> bytes:
    request = {
        "model": "qwen3",
        "messages": [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": f"Question {i}: how do tides work?"},
        ],
        "max_tokens": 256,
    }
    response = {
        "id": f"chatcmpl-{i}",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": f"Answer {i}: the moon's pull. " * 8},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 60, "total_tokens": 80},
    }
    return json.dumps(
        {
            "captureData": {
                "endpointInput": {
                    "observedContentType": "application/json",
                    "mode": "INPUT",
                    "data": json.dumps(request),
                    "encoding": "JSON",
                },
                "endpointOutput": {
                    "observedContentType": "application/json",
                    "mode": "OUTPUT",
                    "data": json.dumps(response),
                    "encoding": "JSON",
                },
            },
            "eventMetadata": {
                "eventId": f"0c5c7a32-6e0f-4a55-8a8e-{i:012d}",
                "inferenceTime": "2026-11-30T10:15:02Z",
                "inferenceComponentName": "qwen3-8b",
            },
            "eventVersion": "0",
        }
    ).encode()


def eagle_dataset(index: Any, stubs: Stubs) -> tuple[str, str, Any, Callable[[Any], bool]]:
    keys = [f"datacapture/chat/AllTraffic/2026/11/30/10/capture-{n}.jsonl" for n in range(2)]
    for n, _ in enumerate(keys):
        data = b"\n".join(_capture_line(n * 100 + i) for i in range(50)) + b"\n"
        stubs.ok(index, "_s3", "get_object", {"Body": _body(data), "ContentLength": len(data)})
    stubs.ok(index, "_s3", "put_object", {"ETag": '"abc"'})
    event = {
        "Items": [{"key": key} for key in keys],
        "BatchInput": {
            "capture_bucket": "capture-bucket",
            "capture_prefix": "datacapture/",
            "output_bucket": "output-bucket",
            "output_prefix": "eagle",
            "run_id": "run-2026-11-30",
            "source": "capture",
        },
    }
    return "convert: 2 capture objects, 100 records", "convert", event, lambda out: out["converted"] == 100


def eagle_job(index: Any, stubs: Stubs) -> tuple[str, str, Any, Callable[[Any], bool]]:
    stubs.ok(index, "_s3", "list_objects_v2", {"KeyCount": 1, "Contents": [{"Key": "datasets/run-1/part-0000.jsonl"}]})
    stubs.ok(
        index,
        "_sagemaker",
        "create_optimization_job",
        {"OptimizationJobArn": f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:optimization-job/eagle-qwen3-32b"},
    )
    event = {
        "model_name": "qwen3-32b",
        "model_s3_uri": "s3://eagle-models/qwen3-32b/",
        "architecture": "Qwen3ForCausalLM",
        "deployment_instance_type": "ml.p5e.48xlarge",
        "max_instance_count": 1,
        "training_data": {"s3_uri": "s3://eagle-data/datasets/run-1/", "s3_data_type": "S3Prefix"},
        "run_id": "run-2026-11-30",
        "dataset_summary": {"records": 1200, "format": "openai-chat"},
    }
    return "start: create the optimization job", "start", event, lambda out: out["job_arn"].endswith("eagle-qwen3-32b")


def eagle_serving_model(index: Any, stubs: Stubs) -> tuple[str, str, Any, Callable[[Any], bool]]:
    with stubs.clock.paused():
        sent: list[bytes] = []

        class _Answer:
            def __enter__(self) -> _Answer:
                return self

            def __exit__(self, *args: Any) -> None:
                return None

            def read(self) -> bytes:
                return b""

        def urlopen(request: Any, timeout: float) -> _Answer:  # CloudFormation's presigned URL, not called
            sent.append(request.data)
            return _Answer()

        index.urllib.request.urlopen = urlopen
    stubs.error(index, "_sagemaker", "describe_model", "ValidationException", "Could not find model.")
    stubs.ok(
        index,
        "_sagemaker",
        "create_model",
        {"ModelArn": f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:model/qwen3-32b-eagle"},
    )
    container = {
        "Image": "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.33.0-lmi15.0.0-cu128",
        "ModelDataSource": {
            "S3DataSource": {"S3Uri": "s3://weights/qwen3-32b/", "S3DataType": "S3Prefix", "CompressionType": "None"}
        },
        "AdditionalModelDataSources": [
            {
                "ChannelName": "eagle",
                "S3DataSource": {
                    "S3Uri": "s3://eagle-artifacts/jobs/eagle-qwen3-32b/draft/",
                    "S3DataType": "S3Prefix",
                    "CompressionType": "None",
                },
            }
        ],
        "Environment": {
            "OPTION_MODEL_ID": "/opt/ml/model",
            "OPTION_SPECULATIVE_CONFIG": json.dumps(
                {
                    "method": "eagle3",
                    "model": "/opt/ml/additional-model-data-sources/eagle",
                    "num_speculative_tokens": 5,
                }
            ),
        },
    }
    event = _custom_resource(
        "Create",
        "AWS::CloudFormation::CustomResource",
        {
            "ModelNamePrefix": "qwen3-32b-eagle",
            "ExecutionRoleArn": f"arn:aws:iam::{ACCOUNT}:role/endpoint-role",
            "PrimaryContainer": container,
        },
    )
    return (
        "Create: the serving model",
        "handler",
        event,
        lambda out: len(sent) == 1 and json.loads(sent[0])["Status"] == "SUCCESS",
    )


def session_router(index: Any, stubs: Stubs) -> tuple[str, str, Any, Callable[[Any], bool]]:
    expires = int(time.time()) + 600
    stubs.ok(
        index,
        "_dynamodb",
        "get_item",
        {
            "Item": {
                "conversation_id": {"S": "c" * 32},
                "session_id": {"S": "sess-1"},
                "component": {"S": "base"},
                "expires_at": {"N": str(expires)},
                "owner": {"S": CALLER},
                "created_at": {"N": str(expires - 900)},
                "updated_at": {"N": str(expires - 900)},
            }
        },
    )
    reply = json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "The moon's pull."}, "finish_reason": "stop"}
            ],
        }
    )
    stubs.ok(
        index,
        "_sagemaker_runtime",
        "invoke_endpoint",
        {"Body": _body(reply.encode()), "ContentType": "application/json"},
    )
    body = json.dumps(
        {
            "conversation_id": "c" * 32,
            "body": {"messages": [{"role": "user", "content": "How do tides work?"}], "max_tokens": 256},
        }
    )
    event = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": "/invoke",
        "rawQueryString": "",
        "headers": {"content-type": "application/json", "host": "abc123.lambda-url.us-east-1.on.aws"},
        "requestContext": {
            "accountId": ACCOUNT,
            "apiId": "abc123",
            "domainName": "abc123.lambda-url.us-east-1.on.aws",
            "domainPrefix": "abc123",
            "requestId": "r-1",
            "routeKey": "$default",
            "stage": "$default",
            "time": "30/Nov/2026:10:15:02 +0000",
            "timeEpoch": 1796033702000,
            "http": {
                "method": "POST",
                "path": "/invoke",
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.9",
                "userAgent": "chat-app",
            },
            "authorizer": {
                "iam": {
                    "accessKey": "ASIAEXAMPLEKEY000001",
                    "accountId": ACCOUNT,
                    "callerId": "AIDAEXAMPLEUSERID0001",
                    "cognitoIdentity": None,
                    "principalOrgId": "o-exampleorg1",
                    "userArn": CALLER,
                    "userId": "AIDAEXAMPLEUSERID0001",
                }
            },
        },
        "body": body,
        "isBase64Encoded": False,
    }
    return "POST /invoke: a turn in a session", "handler", event, lambda out: out["statusCode"] == 200


SCENARIOS: dict[str, Callable[[Any, Stubs], tuple[str, str, Any, Callable[[Any], bool]]]] = {
    name: globals()[name]
    for name in (
        "capacity_plan",
        "capacity_plan_expiry",
        "capacity_plan_guard",
        "deployment_check",
        "eagle_dataset",
        "eagle_job",
        "eagle_serving_model",
        "session_router",
    )
}


def first_call(name: str, index: Any, cpu: float, wall: float, since: tuple[float, float]) -> str:
    """Run ``name``'s scenario on the imported ``index``: JSON of the CPU and wall seconds from the start of
    ``import index`` (``cpu``, ``wall``) to the answer, less what only the benchmark does (``since``: when this
    module's import began; the stubs' set-up)."""
    clock = Clock(cpu, wall)
    clock.cpu += time.process_time() - since[0]  # importing this module: not the function's work
    clock.wall += time.perf_counter() - since[1]
    stubs = Stubs(clock)
    what, entry, event, answered = SCENARIOS[name](index, stubs)
    with clock.paused():
        context = SimpleNamespace(
            function_name=name,
            memory_limit_in_mb=1024,
            aws_request_id="r-1",
            invoked_function_arn=f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:{name}",
            log_group_name=f"/aws/lambda/{name}",
            log_stream_name="2026/11/30/[$LATEST]abc",
            get_remaining_time_in_millis=lambda: 300_000,
        )
    answer = getattr(index, entry)(event, context)
    cpu_s, wall_s = clock.elapsed()
    stubs.check()
    if not answered(answer):
        raise AssertionError(f"{name}: {what} answered {answer!r}")
    return json.dumps({"what": what, "cpu": cpu_s, "wall": wall_s, "clients_cpu": stubs.clients_cpu})
