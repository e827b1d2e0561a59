"""Pure logic for the EAGLE optimization job Lambdas: naming, request building, results parsing, decisions.

Nothing here calls AWS; ``index.py`` does the I/O and passes plain data in. Every function is
deterministic so a retried Step Functions state computes the same job name, request and record.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from llm_cdk_shared.env import Environment

# --------------------------------------------------------------------------------------------
# Errors. Step Functions Retry/Catch match the class name (the Lambda "errorType").
# --------------------------------------------------------------------------------------------


class EagleJobError(Exception):
    """Base class for errors raised on purpose by the EAGLE job Lambdas."""


class InvalidEventError(EagleJobError):
    """The event does not have the documented shape."""


class ConfigurationError(EagleJobError):
    """An environment variable of the function is missing or invalid (a deployment problem)."""


class UnsupportedArchitectureError(EagleJobError):
    """The model architecture has no EAGLE support in SageMaker optimization jobs."""


class UnsupportedModelSourceError(EagleJobError):
    """The model location is not an S3 URI (for example a Hugging Face Hub id)."""


class UnsupportedInstanceTypeError(EagleJobError):
    """The deployment instance type is not accepted by CreateOptimizationJob."""


class DatasetMissingError(EagleJobError):
    """No object exists under the training data S3 URI."""


class EmptyDatasetError(EagleJobError):
    """The dataset builder reported zero records."""


class ResourceLimitExceededError(EagleJobError):
    """SageMaker refused the job because an account quota is used up; retry later or raise the quota."""


class OptimizationJobConflictError(EagleJobError):
    """A job with the derived name exists but was created from different inputs."""


class WatermarkConflictError(EagleJobError):
    """The capture watermark is not where this run's plan found it: another run moved or holds it."""


class JobNotTerminalError(EagleJobError):
    """``record`` was called before the optimization job reached a terminal status."""


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

TERMINAL_STATUSES = frozenset({"COMPLETED", "FAILED", "STOPPED"})


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
# Capture watermark claims (the value format is the dataset builder's, ``lambda/eagle_dataset``)
# --------------------------------------------------------------------------------------------

EMPTY_WATERMARK = '{"v":1,"after":{}}'
"""The dataset builder's watermark with nothing consumed yet (what the parameter is created with)."""
CLAIM_EXPIRY_SECONDS = 900
"""A claim older than this was written by an invocation that has ended: Lambda runs 900 s at most."""


@dataclass(frozen=True)
class WatermarkClaim:
    """``start``'s note in the watermark parameter while it creates a job: the window ``previous`` -> ``value``
    belongs to job ``job`` of run ``run_id`` once that job exists, and to nobody if it never does."""

    job: str
    run_id: str
    claimed_at: str
    previous: str | None
    value: str


def claim_value(claim: WatermarkClaim) -> str:
    """The parameter value holding ``claim``: compact JSON ``{"v": 1, "claim": {...}}``, keys in a fixed order."""
    return json.dumps(
        {
            "v": 1,
            "claim": {
                "job": claim.job,
                "run_id": claim.run_id,
                "claimed_at": claim.claimed_at,
                "previous": claim.previous,
                "value": claim.value,
            },
        },
        separators=(",", ":"),
    )


def decode_claim(value: str | None) -> WatermarkClaim | None:
    """The claim a parameter value holds, or None for a plain watermark (or anything else)."""
    if not value or not value.startswith('{"v":1,"claim":'):
        return None
    try:
        claim = json.loads(value)["claim"]
        fields = {name: claim[name] for name in ("job", "run_id", "claimed_at", "value")}
        previous = claim["previous"]
    except (ValueError, KeyError, TypeError):
        return None
    if not all(isinstance(item, str) for item in fields.values()) or not isinstance(previous, (str, type(None))):
        return None
    return WatermarkClaim(previous=previous, **fields)


def tag_value(value: str) -> str:
    """Make ``value`` a valid SageMaker tag value: letters, numbers, spaces and ``_.:/=+-@``; max 256."""
    allowed = "_.:/=+-@"
    cleaned = "".join(ch if ch in allowed or unicodedata.category(ch)[0] in "LNZ" else "_" for ch in value)
    return cleaned[:256]


@dataclass(frozen=True)
class StartSettings:
    """Deployment settings of the ``start`` function (from its environment)."""

    role_arn: str
    output_s3_uri: str
    max_runtime_seconds: int
    kms_key_arn: str | None = None
    subnet_ids: tuple[str, ...] = ()
    security_group_ids: tuple[str, ...] = ()
    training_plan_arns: tuple[str, ...] = ()


def settings_from_env(env: Mapping[str, str]) -> StartSettings:
    """Read and check the ``start`` environment; every problem is reported at once."""
    environment = Environment(env)
    role_arn = environment.text(
        "ROLE_ARN", required=True, allowed="the ARN of the IAM role the optimization job assumes"
    )
    output = environment.text("OUTPUT_S3_URI", required=True, prefix="s3://", allowed="an s3:// prefix for job outputs")
    runtime = environment.integer("MAX_RUNTIME_SECONDS", minimum=1)
    subnets = tuple(environment.csv("SUBNET_IDS"))
    groups = tuple(environment.csv("SECURITY_GROUP_IDS"))
    if bool(subnets) != bool(groups):
        environment.add(
            "SUBNET_IDS",
            ",".join(subnets) or None,
            "set together with SECURITY_GROUP_IDS (VpcConfig needs both) or both left empty",
            "set both SUBNET_IDS and SECURITY_GROUP_IDS, or neither",
        )
    if len(subnets) > 16:
        environment.add(
            "SUBNET_IDS", f"{len(subnets)} subnets", "1-16 subnets (CreateOptimizationJob)", "name at most 16 subnets"
        )
    if len(groups) > 5:
        environment.add(
            "SECURITY_GROUP_IDS",
            f"{len(groups)} groups",
            "1-5 security groups (CreateOptimizationJob)",
            "name at most 5 security groups",
        )
    plans = tuple(environment.csv("TRAINING_PLAN_ARNS"))
    if len(plans) > 1:
        environment.add(
            "TRAINING_PLAN_ARNS",
            f"{len(plans)} ARNs",
            "at most 1 training plan (CreateOptimizationJob)",
            "name one training plan ARN",
        )
    environment.check(ConfigurationError, "invalid function configuration")
    return StartSettings(
        role_arn=role_arn,
        output_s3_uri=output,
        max_runtime_seconds=runtime,
        kms_key_arn=environment.raw("KMS_KEY_ARN") or None,
        subnet_ids=subnets,
        security_group_ids=groups,
        training_plan_arns=plans,
    )


def job_output_uri(settings: StartSettings, name: str) -> str:
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


# --------------------------------------------------------------------------------------------
# Results parsing
# --------------------------------------------------------------------------------------------
#
# The layout of ``<output>/results/`` is not documented. The AWS launch post for EAGLE jobs
# ("Amazon SageMaker AI introduces EAGLE based adaptive speculative decoding", Nov 2025) says every
# job "automatically produce[s] benchmark results" and shows them as rows per configuration
# ("No EAGLE", "Base EAGLE", "Trained EAGLE") and concurrency with TTFT/TPOT/ITL (ms), request
# throughput and output throughput (tokens/sec). Those are the metrics of vLLM/SGLang
# ``benchmark_serving`` result JSON (``output_throughput``, ``mean_ttft_ms``, ``max_concurrency``...).
# So the parser accepts any JSON/JSONL whose objects carry a throughput number and can be assigned
# to the base (no speculative decoding) or the optimized (trained EAGLE) side by a label value,
# an enclosing key or the file name. It never guesses numbers: anything it cannot pair is reported
# as unparsed together with the files it saw.

#: Throughput keys (normalised: lowercase, non-alphanumerics -> "_"), best first. Base and optimized
#: are compared on the first key present on every paired row.
THROUGHPUT_KEYS: tuple[str, ...] = (
    "output_throughput",
    "output_token_throughput",
    "output_throughput_tokens_sec",
    "output_throughput_tokens_per_sec",
    "output_throughput_tokens_per_second",
    "output_token_throughput_tok_s",
    "output_tokens_per_second",
    "output_tokens_per_sec",
    "output_tps",
    "tokens_per_second",
    "tokens_per_sec",
    "throughput_tokens_per_second",
    "throughput_tokens_sec",
    "token_throughput",
    "throughput",
    "total_token_throughput",
    "total_throughput",
)

#: Latency keys recorded (not used for the decision), normalised name -> canonical name.
LATENCY_KEYS: dict[str, str] = {
    "mean_ttft_ms": "ttft_ms",
    "ttft_ms": "ttft_ms",
    "time_to_first_token_ms": "ttft_ms",
    "mean_tpot_ms": "tpot_ms",
    "tpot_ms": "tpot_ms",
    "time_per_output_token_ms": "tpot_ms",
    "mean_itl_ms": "itl_ms",
    "itl_ms": "itl_ms",
    "inter_token_latency_ms": "itl_ms",
    "mean_e2el_ms": "e2e_latency_ms",
    "mean_e2e_latency_ms": "e2e_latency_ms",
    "e2e_latency_ms": "e2e_latency_ms",
    "latency_ms": "e2e_latency_ms",
}

CONCURRENCY_KEYS = ("concurrency", "max_concurrency", "num_concurrent_requests", "concurrent_requests", "batch_size")
LABEL_KEYS = (
    "configuration",
    "config",
    "config_name",
    "name",
    "label",
    "variant",
    "mode",
    "setting",
    "scenario",
    "type",
    "model_type",
    "method",
)

MAX_DEPTH = 12


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(text).lower()).strip("_")


_BASE_RE = re.compile(
    r"(?:^|_)(?:no|without|wo|w_o|non|disabled)_?(?:eagle|spec|speculative|speculation|draft)"
    r"|(?:eagle|spec|speculative|speculation|draft)\w*_(?:disabled|off|false|none)(?:_|$)"
    r"|baseline|vanilla|autoregressive|(?:^|_)base_?model(?:_|$)|(?:^|_)original(?:_|$)"
)
_REFERENCE_RE = re.compile(r"(?:^|_)(?:base|pretrained|pre_trained|default|reference|builtin|built_in)_?eagle")
_OPTIMIZED_RE = re.compile(r"eagle|optimi[sz]ed|speculative|(?:^|_)draft|(?:^|_)spec(?:_|$)|(?:^|_)trained(?:_|$)")
_PLAIN_BASE_RE = re.compile(r"^(?:base|base_\w+|\w+_base)$")


def classify_label(text: str) -> str | None:
    """``"base"`` (no speculative decoding), ``"optimized"`` (trained EAGLE head), ``"reference"``
    (a pre-trained/built-in EAGLE head, recorded only) or ``None`` when the text says nothing."""
    t = _norm(text)
    if not t:
        return None
    if _BASE_RE.search(t):
        return "base"
    if _REFERENCE_RE.search(t):
        return "reference"
    if _OPTIMIZED_RE.search(t):
        return "optimized"
    if _PLAIN_BASE_RE.match(t):
        return "base"
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


@dataclass(frozen=True)
class BenchmarkRow:
    role: str
    concurrency: float | None
    throughput: dict[str, float]  # normalised throughput key -> value (> 0)
    latency: dict[str, float]
    source: str


@dataclass
class ResultsSummary:
    """Outcome of reading ``<output>/results/``."""

    status: str  # "parsed" | "results_unparsed"
    files: list[str] = field(default_factory=list)
    reason: str | None = None
    throughput_metric: str | None = None
    base_throughput: float | None = None
    optimized_throughput: float | None = None
    speedup: float | None = None
    concurrency: float | None = None
    base_latency: dict[str, float] = field(default_factory=dict)
    optimized_latency: dict[str, float] = field(default_factory=dict)
    per_concurrency: list[dict[str, Any]] = field(default_factory=list)
    reference_rows: int = 0
    reference_throughput: float | None = None
    reference_speedup: float | None = None
    """The pre-trained (reference) EAGLE head's speedup over base in the same benchmark: the lowest over the
    concurrency levels both measured, as for the trained head; None when the job reported no such rows."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "files": list(self.files),
            "reason": self.reason,
            "throughput_metric": self.throughput_metric,
            "base_throughput": self.base_throughput,
            "optimized_throughput": self.optimized_throughput,
            "speedup": self.speedup,
            "concurrency": self.concurrency,
            "base_latency": dict(self.base_latency),
            "optimized_latency": dict(self.optimized_latency),
            "per_concurrency": [dict(item) for item in self.per_concurrency],
            "reference_rows": self.reference_rows,
            "reference_throughput": self.reference_throughput,
            "reference_speedup": self.reference_speedup,
        }


def _row_from_dict(node: Mapping[str, Any], role: str | None, source: str) -> BenchmarkRow | None:
    normalised = {_norm(k): v for k, v in node.items() if isinstance(k, str)}
    throughput = {}
    for key in THROUGHPUT_KEYS:
        value = _number(normalised.get(key))
        if value is not None and value > 0:
            throughput[key] = value
    if not throughput or role is None:
        return None
    latency: dict[str, float] = {}
    for key, canonical in LATENCY_KEYS.items():
        value = _number(normalised.get(key))
        if value is not None and value >= 0 and canonical not in latency:
            latency[canonical] = value
    concurrency = None
    for key in CONCURRENCY_KEYS:
        value = _number(normalised.get(key))
        if value is not None and value > 0:
            concurrency = value
            break
    return BenchmarkRow(role=role, concurrency=concurrency, throughput=throughput, latency=latency, source=source)


def _own_label_role(node: Mapping[str, Any]) -> str | None:
    for key, value in node.items():
        if isinstance(key, str) and _norm(key) in LABEL_KEYS and isinstance(value, str):
            role = classify_label(value)
            if role:
                return role
    # boolean flags such as {"speculative_decoding": false} / {"eagle": true}
    for key, value in node.items():
        if isinstance(key, str) and isinstance(value, bool):
            role = classify_label(key)
            if role == "optimized":
                return "optimized" if value else "base"
    return None


# longest first, so "eagle_total_token_throughput" is read as total_token_throughput, not token_throughput
_WIDE_METRICS = tuple(sorted({*THROUGHPUT_KEYS, *LATENCY_KEYS, *CONCURRENCY_KEYS}, key=lambda m: (-len(m), m)))


def _wide_rows(node: Mapping[Any, Any], source: str) -> list[BenchmarkRow]:
    """Rows from one flat object such as ``{"baseline_output_throughput": 90, "eagle_output_throughput": 210}``."""
    grouped: dict[str, dict[str, Any]] = {}
    for key, value in node.items():
        if not isinstance(key, str):
            continue
        nkey = _norm(key)
        for metric in _WIDE_METRICS:
            rest = None
            if nkey.endswith("_" + metric):
                rest = nkey[: -len(metric) - 1]
            elif nkey.startswith(metric + "_"):
                rest = nkey[len(metric) + 1 :]
            if rest:
                role = classify_label(rest)
                if role:
                    grouped.setdefault(role, {}).setdefault(metric, value)
                break
    shared_concurrency = {k: v for k, v in node.items() if isinstance(k, str) and _norm(k) in CONCURRENCY_KEYS}
    rows = []
    for role, values in grouped.items():
        row = _row_from_dict({**shared_concurrency, **values}, role, source)
        if row:
            rows.append(row)
    return rows


def extract_rows(document: Any, source: str) -> list[BenchmarkRow]:
    """All benchmark rows in one parsed JSON document; the file path gives the default role."""
    rows: list[BenchmarkRow] = []
    parts = source.split("/")
    parts[-1] = parts[-1].rsplit(".", 1)[0]
    # the file name first, then the nearest folder: "no_eagle/c8.json", "trained_eagle.json"
    file_role = next((role for role in map(classify_label, reversed(parts)) if role), None)

    def walk(node: Any, inherited: str | None, depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        if isinstance(node, Mapping):
            role = _own_label_role(node) or inherited
            row = _row_from_dict(node, role, source)
            if row:
                rows.append(row)
                return
            wide = _wide_rows(node, source)
            if wide:
                rows.extend(wide)
                return
            for key, child in node.items():
                if isinstance(child, (Mapping, list)):
                    key_role = classify_label(key) if isinstance(key, str) else None
                    walk(child, key_role or role, depth + 1)
        elif isinstance(node, list):
            for item in node:
                walk(item, inherited, depth + 1)

    walk(document, file_role, 0)
    return rows


def _fmt(number: float) -> str:
    return f"{number:g}"


def summarize_results(documents: Sequence[tuple[str, Any]], files: Iterable[str]) -> ResultsSummary:
    """Pair base and optimized benchmark rows and compute ``speedup = optimized / base throughput``.

    Rows are paired per concurrency level. The headline speedup is the *lowest* speedup over the
    concurrency levels both sides measured (the head must help at every measured load); the
    headline throughputs and latencies are those of that level. Without concurrency information
    exactly one row per side is required.
    """
    files = sorted(files)
    ordered = sorted(documents, key=lambda item: item[0])  # stable, so re-recording merges identically
    rows = [row for source, document in ordered for row in extract_rows(document, source)]
    summary = ResultsSummary(status="results_unparsed", files=files)
    summary.reference_rows = sum(1 for row in rows if row.role == "reference")
    base = [row for row in rows if row.role == "base"]
    optimized = [row for row in rows if row.role == "optimized"]
    if not base or not optimized:
        missing = " and ".join(
            name for name, side in (("base (no EAGLE)", base), ("optimized (trained EAGLE)", optimized)) if not side
        )
        summary.reason = f"no {missing} throughput found in {len(documents)} JSON document(s) of {len(files)} file(s)"
        return summary

    def by_level(side: list[BenchmarkRow]) -> dict[float | None, BenchmarkRow] | str:
        """Merge the rows of one side per concurrency level; rows may repeat (summary + detail files)
        but must agree on every throughput number they share."""
        grouped: dict[float | None, list[BenchmarkRow]] = {}
        for row in side:
            grouped.setdefault(row.concurrency, []).append(row)
        merged: dict[float | None, BenchmarkRow] = {}
        for level, level_rows in grouped.items():
            throughput: dict[str, float] = {}
            latency: dict[str, float] = {}
            for row in level_rows:
                for key, value in row.throughput.items():
                    if throughput.setdefault(key, value) != value:
                        where = "without a concurrency" if level is None else f"at concurrency {_fmt(level)}"
                        return (
                            f"conflicting {row.role} {key} values {_fmt(throughput[key])} and {_fmt(value)} "
                            f"{where}; cannot tell which to use"
                        )
                for key, value in row.latency.items():
                    latency.setdefault(key, value)
            first = level_rows[0]
            merged[level] = BenchmarkRow(first.role, level, throughput, latency, first.source)
        return merged

    base_levels = by_level(base)
    optimized_levels = by_level(optimized)
    for problem in (base_levels, optimized_levels):
        if isinstance(problem, str):
            summary.reason = problem
            return summary
    assert isinstance(base_levels, dict) and isinstance(optimized_levels, dict)

    pairs: list[tuple[float | None, BenchmarkRow, BenchmarkRow]] = []
    common = sorted((level for level in base_levels if level is not None and level in optimized_levels), key=float)
    if common:
        pairs = [(level, base_levels[level], optimized_levels[level]) for level in common]
    elif len(base_levels) == 1 and len(optimized_levels) == 1:
        (b_level, b_row), (o_level, o_row) = next(iter(base_levels.items())), next(iter(optimized_levels.items()))
        if b_level is None or o_level is None:
            pairs = [(b_level if b_level is not None else o_level, b_row, o_row)]
    if not pairs:
        summary.reason = (
            "base and optimized rows were measured at different concurrency levels "
            f"(base {sorted(_fmt(l) for l in base_levels if l is not None)}, "
            f"optimized {sorted(_fmt(l) for l in optimized_levels if l is not None)}); nothing to compare"
        )
        return summary

    metric = next(
        (key for key in THROUGHPUT_KEYS if all(key in b.throughput and key in o.throughput for _, b, o in pairs)),
        None,
    )
    if metric is None:
        summary.reason = "base and optimized rows report throughput under different metric names; not comparable"
        return summary

    per_level: list[dict[str, Any]] = []
    for level, b, o in pairs:
        speedup = o.throughput[metric] / b.throughput[metric]
        per_level.append(
            {
                "concurrency": level,
                "base_throughput": b.throughput[metric],
                "optimized_throughput": o.throughput[metric],
                "speedup": round(speedup, 4),
                "base_latency": dict(b.latency),
                "optimized_latency": dict(o.latency),
            }
        )
    worst = min(per_level, key=lambda item: (item["speedup"], item["concurrency"] or 0))
    summary.status = "parsed"
    summary.throughput_metric = metric
    summary.per_concurrency = per_level
    summary.concurrency = worst["concurrency"]
    summary.base_throughput = worst["base_throughput"]
    summary.optimized_throughput = worst["optimized_throughput"]
    summary.speedup = worst["speedup"]
    summary.base_latency = worst["base_latency"]
    summary.optimized_latency = worst["optimized_latency"]
    reference = [row for row in rows if row.role == "reference"]
    if reference:
        reference_levels = by_level(reference)
        if isinstance(reference_levels, dict):
            figures = [
                (
                    reference_levels[level].throughput[metric] / b.throughput[metric],
                    level,
                    reference_levels[level].throughput[metric],
                )
                for level, b, _ in pairs
                if level in reference_levels and metric in reference_levels[level].throughput
            ]
            if not figures and len(reference_levels) == 1 and len(pairs) == 1:
                (only,) = reference_levels.values()
                if metric in only.throughput and (only.concurrency is None or pairs[0][0] is None):
                    figures = [
                        (only.throughput[metric] / pairs[0][1].throughput[metric], pairs[0][0], only.throughput[metric])
                    ]
            if figures:
                speedup, _, throughput = min(figures, key=lambda item: (item[0], item[1] or 0))
                summary.reference_speedup = round(speedup, 4)
                summary.reference_throughput = throughput
    return summary


def parse_json_documents(name: str, body: bytes) -> list[Any]:
    """Parse a ``.json`` file (one document) or ``.jsonl`` file (one per line); bad content -> ``[]``."""
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError:
        return []
    if name.lower().endswith(".jsonl"):
        documents = []
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            try:
                documents.append(json.loads(line))
            except ValueError:
                continue
        return documents
    try:
        return [json.loads(text)]
    except ValueError:
        return []


# --------------------------------------------------------------------------------------------
# Decision
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    promote: bool
    reason: str


@dataclass(frozen=True)
class Incumbent:
    """The head the endpoint serves now: a new head must beat its measured speedup to replace it.

    ``kind``: ``none`` (the base model: only the threshold counts), ``pretrained`` (the pre-trained head
    served from day one) or ``promoted`` (a head an earlier run promoted, or one set by hand).
    ``figures``: its known speedups over the base model, each with where it comes from; the bar is the
    highest. ``required``: without a figure no head replaces it (the pre-trained head)."""

    kind: str = "none"
    s3_uri: str | None = None
    figures: tuple[tuple[str, float], ...] = ()
    required: bool = False
    note: str | None = None

    @property
    def bar(self) -> float | None:
        return max((value for _, value in self.figures), default=None)

    @property
    def bar_source(self) -> str | None:
        if not self.figures:
            return None
        return max(self.figures, key=lambda item: item[1])[0]

    def as_dict(self) -> dict[str, Any]:
        """The comparison basis recorded with the run."""
        return {
            "served_head": self.kind,
            "s3_uri": self.s3_uri,
            "speedup": self.bar,
            "source": self.bar_source,
            "figures": [{"source": source, "speedup": value} for source, value in self.figures],
            "note": self.note,
        }


def pretrained_incumbent(s3_uri: str, results: ResultsSummary | None, configured: float | None) -> Incumbent:
    """The pre-trained head as the incumbent: its figures from this job's benchmark (its own rows) and config."""
    figures: list[tuple[str, float]] = []
    if results is not None and results.reference_speedup is not None:
        figures.append(("job results: pre-trained EAGLE rows", results.reference_speedup))
    if configured is not None:
        figures.append(("eagle.pretrained_head_speedup", configured))
    return Incumbent(kind="pretrained", s3_uri=s3_uri, figures=tuple(figures), required=True)


def decide(
    *,
    status: str,
    failure_reason: str | None,
    results: ResultsSummary | None,
    threshold: float,
    results_uri: str,
    incumbent: Incumbent | None = None,
) -> Decision:
    """Whether the run's draft head may be promoted, and why (or why not): at least ``threshold`` over the base
    model, and better than the ``incumbent`` head's measured speedup (strictly: a tie keeps the served head)."""
    if status != "COMPLETED":
        return Decision(False, f"job {status}: {failure_reason or 'no failure reason given'}")
    if results is None or results.status != "parsed" or results.speedup is None:
        why = results.reason if results else "results not read"
        listed = ", ".join(results.files[:20]) if results and results.files else "none"
        return Decision(False, f"results unparsed under {results_uri}: {why} (files: {listed})")
    speedup = results.speedup
    if speedup < threshold:
        return Decision(False, f"speedup below threshold: {_fmt(speedup)}x < {_fmt(threshold)}x")
    passed = f"speedup {_fmt(speedup)}x >= threshold {_fmt(threshold)}x"
    if incumbent is None or incumbent.kind == "none":
        return Decision(True, passed)
    bar = incumbent.bar
    head = f"the served {incumbent.kind} head"
    if bar is None:
        if incumbent.required:
            return Decision(
                False,
                f"{passed}, but {head}'s speedup is unknown (the job's results have no pre-trained "
                "EAGLE rows and eagle.pretrained_head_speedup is not set), so this head cannot be "
                "shown to beat it; set eagle.pretrained_head_speedup to its measured speedup",
            )
        return Decision(True, f"{passed}; {head} has no recorded speedup ({incumbent.note or 'unknown'})")
    if speedup <= bar:
        return Decision(
            False, f"{passed}, but it does not beat {head}: {_fmt(speedup)}x <= {_fmt(bar)}x ({incumbent.bar_source})"
        )
    return Decision(True, f"{passed} and beats {head}: {_fmt(speedup)}x > {_fmt(bar)}x ({incumbent.bar_source})")
