"""Where an EAGLE loop's training set comes from, and the functions that build or check it.

With ``dataset.source`` ``capture`` or ``front_door`` the loop builds the training set itself from the records the
model served: the endpoint's Data Capture or the session front door's turn log. Three functions plan, convert and
finalize it under ``datasets/`` of the artifacts bucket, reading the records under their own key and writing with
the artifacts key. On an endpoint that serves other models or adapters a capture record must name its inference
component to be kept, which is said at synth. With ``s3`` or ``builtin`` the user's dataset is used as it is and
one function checks its format on a sample.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import jsii
from aws_cdk import Annotations, Duration, IStableStringProducer, Lazy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3

from ..core import grants
from ..core.functions import python_function
from ..core.tree import at_synth
from .job_role import bucket_and_prefix, grant_read_prefix
from .layout import DATASETS, MAP_RESULTS

if TYPE_CHECKING:
    from .optimization import EagleOptimization


def builds_dataset(source: str) -> bool:
    """True when the loop builds the training set itself (captured traffic or the front door's turns)."""
    return source in ("capture", "front_door")


def dataset_location(eagle: EagleOptimization) -> tuple[str, str]:
    """The bucket and the key prefix the optimization job reads its training set from."""
    dataset = eagle.settings.dataset
    if builds_dataset(dataset.source):
        return eagle.artifacts_bucket.bucket_name, f"{DATASETS}/"
    return bucket_and_prefix(dataset.s3_uri or "")


def add_validate_function(eagle: EagleOptimization, dataset_bucket: str, dataset_prefix: str) -> lambda_.Function:
    """The function that checks the format of the user's dataset on a sample, allowed to read only its prefix."""
    function = python_function(
        eagle,
        "ValidateFunction",
        folder="eagle_dataset",
        handler="index.validate_user_dataset",
        description=f"Checks the format of the EAGLE dataset of {eagle.model_name} on a sample",
        timeout=Duration.minutes(2),
        memory_size=512,
    )
    grant_read_prefix(
        eagle,
        function,
        "Dataset",
        dataset_bucket,
        dataset_prefix,
        reason="The dataset's format is checked on a sample of the JSONL files under its prefix; read-only.",
    )
    return function


def add_capture_functions(eagle: EagleOptimization) -> None:
    """The plan, convert and finalize functions over the captured records, with their grants.

    Sets ``capture_bucket``, ``capture_prefix`` and ``source_key`` (the records' key, if any) on ``eagle``."""
    endpoint = eagle.component.endpoint
    # The records the loop reads: the endpoint's Data Capture, or the front door's turn log (Firehose).
    if eagle.turn_log is not None:
        capture_bucket: s3.IBucket = eagle.turn_log.bucket
        eagle.capture_prefix = eagle.turn_log.prefix
        eagle.source_key = eagle.turn_log.bucket.encryption_key
    else:
        assert endpoint.data_capture_bucket is not None
        capture_bucket = endpoint.data_capture_bucket
        eagle.capture_prefix = f"data-capture/{endpoint.endpoint_name}/"
        eagle.source_key = endpoint.key
    eagle.capture_bucket = capture_bucket

    # The training set is written under the artifacts key, named on every write: the job role may
    # decrypt with it (UseArtifactsKey), and the job never needs the endpoint's capture key.
    written_with = {"DATASET_KMS_KEY_ARN": eagle.key.key_arn}
    eagle.plan_function = python_function(
        eagle,
        "PlanFunction",
        folder="eagle_dataset",
        handler="index.plan",
        description=f"Lists new Data Capture objects of {eagle.model_name} for its EAGLE dataset",
        environment=written_with,
        timeout=Duration.minutes(15),
        memory_size=1024,
    )
    eagle.convert_function = python_function(
        eagle,
        "ConvertFunction",
        folder="eagle_dataset",
        handler="index.convert",
        description=f"Converts captured requests of {eagle.model_name} into chat-completions JSONL",
        environment={
            **written_with,
            "UNNAMED_RECORDS_COMPONENT": Lazy.string(_Produce(lambda: unnamed_records_component(eagle))),
            **({"REASONING_TAGS": "|".join(eagle.reasoning_tags)} if eagle.reasoning_tags else {}),
        },
        timeout=Duration.minutes(15),
        memory_size=1024,
    )
    if eagle.settings.dataset.source == "capture":  # once the endpoint's models and adapters are all in the tree
        at_synth(eagle, lambda: note_unattributed(eagle))
    eagle.finalize_function = python_function(
        eagle,
        "FinalizeFunction",
        folder="eagle_dataset",
        handler="index.finalize",
        description=f"Writes the EAGLE dataset summary and manifests of {eagle.model_name}",
        environment=written_with,
        timeout=Duration.minutes(10),
        memory_size=1024,
    )
    _grant_capture_functions(eagle, eagle.plan_function, eagle.convert_function, eagle.finalize_function)


def _grant_capture_functions(
    eagle: EagleOptimization, plan: lambda_.Function, convert: lambda_.Function, finalize: lambda_.Function
) -> None:
    """Plan lists the records, convert reads them, all three write ``datasets/``; finalize reads the map results."""
    capture_bucket = eagle.capture_bucket
    datasets = eagle.artifacts_bucket.arn_for_objects(f"{DATASETS}/*")
    capture_objects = capture_bucket.arn_for_objects(f"{eagle.capture_prefix}*")
    plan_role, convert_role, finalize_role = (f.role for f in (plan, convert, finalize))
    assert plan_role and convert_role and finalize_role
    plan_role.add_to_principal_policy(
        iam.PolicyStatement(
            sid="ListCaptures",
            actions=["s3:ListBucket"],
            resources=[capture_bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [f"{eagle.capture_prefix}*"]}},
        )
    )
    grants.grant(
        convert_role,
        sid="ReadCaptures",
        actions=["s3:GetObject"],
        resources=[capture_objects],
        reason="Data Capture writes one object per capture file under data-capture/<endpoint>/; read-only "
        "GetObject under this endpoint's folder only.",
    )
    if eagle.source_key is not None:
        convert_role.add_to_principal_policy(
            iam.PolicyStatement(sid="DecryptCaptures", actions=["kms:Decrypt"], resources=[eagle.source_key.key_arn])
        )
    for role in (plan_role, convert_role, finalize_role):
        grants.grant(
            role,
            sid="WriteDataset",
            actions=["s3:PutObject", "s3:AbortMultipartUpload"],
            resources=[datasets],
            reason="The dataset builder writes the plan, shards, manifests and summary of each run under "
            "datasets/<run id>/, a name made at run time; PutObject only, only under datasets/.",
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="UseArtifactsKey", actions=["kms:Decrypt", "kms:GenerateDataKey"], resources=[eagle.key.key_arn]
            )
        )
    grants.grant(
        finalize_role,
        sid="ReadMapResults",
        actions=["s3:GetObject"],
        resources=[eagle.artifacts_bucket.arn_for_objects(f"{MAP_RESULTS}/*")],
        reason="Step Functions writes the Distributed Map's result files under map-results/<map run id>/; read-only.",
    )
    eagle.watermark_parameter.grant_read(plan_role)


def note_unattributed(eagle: EagleOptimization) -> None:
    """Say at synth when captured records may never train this model: on an endpoint that serves other models or
    adapters, a capture record must name its inference component to be kept, and AWS does not document that
    Data Capture records of inference-component endpoints do. The front door's turn log names the model."""
    if unnamed_records_component(eagle):
        return
    message = (
        f"{eagle.model_name} trains its EAGLE head on Data Capture of an endpoint that serves other models or "
        "adapters: a record that names no inference component is kept apart, never trained on, and AWS does "
        "not document that capture records name the component, so runs may find no records to train on. "
        "Fix: set eagle.dataset.source: front_door (the session front door's turn log names the model; the "
        "model needs sessions), or serve this model on an endpoint of its own."
    )
    Annotations.of(eagle).add_info(message)
    print(f"warning: {eagle.node.path}: {message}", file=sys.stderr)


def unnamed_records_component(eagle: EagleOptimization) -> str:
    """Who a capture record that names no component belongs to: this model only when the endpoint
    serves nothing else (one model, no LoRA), read at synth so models added later count. Else ""
    and such records are kept apart (AWS does not document that IC capture records name the component)."""
    endpoint = eagle.component.endpoint
    alone = len(endpoint.models) == 1 and endpoint.models[0] is eagle.component and eagle.component.spec.lora is None
    return eagle.model_name if alone else ""


@jsii.implements(IStableStringProducer)
class _Produce:
    """A string CDK asks for at synth (``Lazy.string``), after every construct of the app exists."""

    def __init__(self, produce: Callable[[], str]) -> None:
        self._produce = produce

    def produce(self) -> str:
        return self._produce()
