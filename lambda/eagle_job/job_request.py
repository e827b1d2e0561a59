"""The CreateOptimizationJob request ``start`` sends: what it trains on and where everything goes.

Which architectures SageMaker trains EAGLE heads for (and which EAGLE generation), which model locations a job
accepts, S3 URIs, the job's deterministic name, its tags and the request itself. Everything here is pure and
deterministic, so a retried Step Functions state computes the same name and request and finds the job it made.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from typing import Any

from job_errors import InvalidEventError, UnsupportedArchitectureError, UnsupportedModelSourceError
from job_settings import StartSettings

# --------------------------------------------------------------------------------------------
# Architectures and model source
# --------------------------------------------------------------------------------------------

#: Architectures SageMaker trains EAGLE heads for, and the EAGLE generation it trains.
EAGLE_VERSION_BY_ARCHITECTURE: dict[str, str] = {
    "LlamaForCausalLM": "eagle3",
    "Qwen3ForCausalLM": "eagle3",
    "Qwen3MoeForCausalLM": "eagle3",
    "Qwen2ForCausalLM": "eagle3",
    "GptOssForCausalLM": "eagle3",
    "Qwen3NextForCausalLM": "eagle2",
}


def eagle_version_for(architecture: str) -> str:
    """``"eagle3"`` or ``"eagle2"`` for a supported architecture, else ``UnsupportedArchitectureError``."""
    try:
        return EAGLE_VERSION_BY_ARCHITECTURE[architecture]
    except KeyError:
        supported = ", ".join(
            f"{name} (EAGLE {version[-1]})" for name, version in EAGLE_VERSION_BY_ARCHITECTURE.items()
        )
        raise UnsupportedArchitectureError(
            f"architecture {architecture!r} is not supported by SageMaker EAGLE optimization jobs. "
            f"Supported architectures (the 'architectures' entry of the model's config.json): {supported}. "
            "Use a model with one of these architectures; names are case-sensitive."
        ) from None


_HF_ID = re.compile(r"^(hf://|https?://huggingface\.co/)?[A-Za-z0-9][\w.-]*/[\w.-]+$")


def check_model_source(model_s3_uri: str) -> None:
    """Accept ``s3://bucket/prefix`` only; explain why Hugging Face Hub ids are refused."""
    if model_s3_uri.startswith("s3://"):
        parse_s3_uri(model_s3_uri, what="model_s3_uri")
        return
    if _HF_ID.match(model_s3_uri.strip()):
        raise UnsupportedModelSourceError(
            f"model_s3_uri {model_s3_uri!r} looks like a Hugging Face Hub id. SageMaker optimization jobs "
            "do not download from the Hub: the model weights (config.json, tokenizer files, *.safetensors) "
            "must be uploaded to S3 first. Copy the model to s3://<bucket>/<prefix>/ and pass that URI."
        )
    raise UnsupportedModelSourceError(
        f"model_s3_uri {model_s3_uri!r} is not an S3 URI. Pass the S3 prefix holding the model weights, "
        "for example s3://my-bucket/models/qwen3-32b/."
    )


def parse_s3_uri(uri: str, *, what: str = "S3 URI") -> tuple[str, str]:
    """Split ``s3://bucket/key`` into ``(bucket, key)``; the key may be empty."""
    match = re.fullmatch(r"s3://([a-z0-9][a-z0-9.\-]{1,61}[a-z0-9])(?:/(.*))?", uri or "", re.DOTALL)
    if not match:
        raise InvalidEventError(
            f"{what} {uri!r} is not a valid S3 URI; expected s3://<bucket>/<prefix> with a lowercase bucket name."
        )
    return match.group(1), match.group(2) or ""


def join_s3(base: str, *parts: str) -> str:
    """Join an S3 URI prefix and path segments with single slashes (no trailing slash added)."""
    out = base.rstrip("/")
    for part in parts:
        out = f"{out}/{part.strip('/')}"
    return out


# --------------------------------------------------------------------------------------------
# Job naming
# --------------------------------------------------------------------------------------------

#: OptimizationJobName (shape EntityName) in botocore 1.44: length 1-63 and this pattern.
JOB_NAME_PATTERN = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")
JOB_NAME_MAX = 63
JOB_NAME_PREFIX = "eagle"
_HASH_CHARS = 12  # 48 bits of SHA-256


def job_name(*, model_name: str, model_s3_uri: str, dataset_s3_uri: str, instance_type: str, run_id: str) -> str:
    """Deterministic, valid OptimizationJobName: ``eagle-<model slug>-<12 hex of sha256(inputs)>``.

    The same inputs always give the same name, so a retried ``start`` finds the job it already
    created (``ResourceInUse``) instead of launching a second one. The slug only aids reading;
    uniqueness comes from the hash of all five inputs.
    """
    digest = hashlib.sha256(
        json.dumps([model_name, model_s3_uri, dataset_s3_uri, instance_type, run_id], ensure_ascii=True).encode()
    ).hexdigest()[:_HASH_CHARS]
    slug = re.sub(r"[^a-z0-9]+", "-", model_name.lower()).strip("-")
    room = JOB_NAME_MAX - len(JOB_NAME_PREFIX) - len(digest) - 2
    slug = slug[:room].strip("-")
    return "-".join(part for part in (JOB_NAME_PREFIX, slug, digest) if part)


# --------------------------------------------------------------------------------------------
# The request
# --------------------------------------------------------------------------------------------


def tag_value(value: str) -> str:
    """Make ``value`` a valid SageMaker tag value: letters, numbers, spaces and ``_.:/=+-@``; max 256."""
    allowed = "_.:/=+-@"
    cleaned = "".join(ch if ch in allowed or unicodedata.category(ch)[0] in "LNZ" else "_" for ch in value)
    return cleaned[:256]


def job_output_uri(settings: StartSettings, name: str) -> str:
    """Where job ``name`` writes: ``<OUTPUT_S3_URI>/<name>/``."""
    return join_s3(settings.output_s3_uri, name) + "/"


def build_create_request(
    *,
    name: str,
    settings: StartSettings,
    model_s3_uri: str,
    instance_type: str,
    max_instance_count: int,
    training_data_uri: str,
    training_data_type: str,
    model_name: str,
    run_id: str,
    accept_eula: bool = False,
) -> dict[str, Any]:
    """The CreateOptimizationJob request. VpcConfig, KmsKeyId and TrainingPlanArns only when configured;
    ``ModelSource.S3.ModelAccessConfig.AcceptEula`` only for a gated model whose licence was accepted."""
    output_config: dict[str, Any] = {"S3OutputLocation": job_output_uri(settings, name)}
    if settings.kms_key_arn:
        output_config["KmsKeyId"] = settings.kms_key_arn
    request: dict[str, Any] = {
        "OptimizationJobName": name,
        "RoleArn": settings.role_arn,
        "ModelSource": {"S3": {"S3Uri": model_s3_uri}},
        "DeploymentInstanceType": instance_type,
        "MaxInstanceCount": max_instance_count,
        "OptimizationConfigs": [
            {
                "ModelSpeculativeDecodingConfig": {
                    "Technique": "EAGLE",
                    "TrainingDataSource": {"S3Uri": training_data_uri, "S3DataType": training_data_type},
                }
            }
        ],
        "OutputConfig": output_config,
        "StoppingCondition": {"MaxRuntimeInSeconds": settings.max_runtime_seconds},
        "Tags": [
            {"Key": "eagle:run-id", "Value": tag_value(run_id)},
            {"Key": "eagle:model-name", "Value": tag_value(model_name)},
        ],
    }
    if accept_eula:
        request["ModelSource"]["S3"]["ModelAccessConfig"] = {"AcceptEula": True}
    if settings.subnet_ids:
        request["VpcConfig"] = {
            "Subnets": list(settings.subnet_ids),
            "SecurityGroupIds": list(settings.security_group_ids),
        }
    if settings.training_plan_arns:
        request["TrainingPlanArns"] = list(settings.training_plan_arns)
    return request
