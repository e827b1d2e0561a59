"""Validated settings: the one model behind both the YAML config and the constructs' props.

Every class here is a frozen pydantic model that forbids unknown keys. The config file
(``config/*.yaml``) is parsed into these same classes, and ``config/schema.json`` is
generated from them, so an editor, the app and the library agree on every rule.

Rules that span several fields (``min_instances <= max_instances``) are checked by each
model's ``_rules`` method; they report every problem at once, each with its own field path.
"""
from __future__ import annotations

import re
import weakref
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from . import service_model
from .errors import Problem

RULES_ERROR = "llm_rules"
"""pydantic error type that carries a list of ``Problem`` in its context."""

_S3_URI = re.compile(r"^s3://(?P<bucket>[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9])(?:/(?P<key>.*))?$")
_HF_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")
_ECR_IMAGE = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?/"
    r"(?P<repository>[a-z0-9][a-z0-9._/\-]*)(?::(?P<tag>[\w.\-]{1,128})|@sha256:[a-f0-9]{64})$"
)
_LMI_ALIAS = re.compile(r"^lmi(?::(?P<tag>[\w.\-]{1,128}))?$")
_CONTENT_TYPE = re.compile(r"^[a-zA-Z0-9*][a-zA-Z0-9.*+\-]*/[a-zA-Z0-9*][a-zA-Z0-9.*+\-]*$")

DEFAULT_LMI_TAG = "0.35.0-lmi17.0.0-cu128"
"""The Large Model Inference (DJL) container tag used for ``image: lmi``. LMI 17: vLLM async mode by default, which stateful sessions (sticky routing) need."""


# Instance families whose instances come with local NVMe storage: SageMaker uses it for
# the model and refuses VolumeSizeInGB for them.
_NVME_FAMILIES = frozenset(
    {"p4d", "p4de", "p5", "p5e", "p5en", "p6", "p6e", "g4dn", "g5", "g6", "g6e", "g7e", "trn1", "trn1n", "trn2", "m5d", "c5d", "r5d"}
)


class Settings(BaseModel):
    """Base of every settings model: frozen, unknown keys refused, rules run after fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    def _rules(self) -> list[Problem]:
        return []

    @model_validator(mode="after")
    def _check_rules(self) -> "Settings":
        problems = self._rules()
        if problems:
            raise PydanticCustomError(
                RULES_ERROR,
                "{count} rule(s) broken",
                {"count": len(problems), "problems": problems},
            )
        _VALIDATED[id(self)] = self
        return self


_VALIDATED: "weakref.WeakValueDictionary[int, Settings]" = weakref.WeakValueDictionary()
"""Settings instances that came out of pydantic validation (not ``model_construct``)."""


def was_validated(settings: Settings) -> bool:
    """Whether ``settings`` passed validation with every rule; it is frozen, so it still holds."""
    return _VALIDATED.get(id(settings)) is settings


def field_rule(check: Any) -> AfterValidator:
    """A single-field rule: ``check(value)`` returns a ``Problem`` (path "") or None.

    Field rules run with pydantic's own checks, so they are reported together with problems
    elsewhere in the config, not only once everything else is valid.
    """

    def _validate(value: Any) -> Any:
        if value is None:
            return value
        problem = check(value)
        if problem is not None:
            raise PydanticCustomError(RULES_ERROR, "{count} rule(s) broken", {"count": 1, "problems": [problem]})
        return value

    return AfterValidator(_validate)


def s3_uri_problem(field: str, value: str, *, want: Literal["prefix", "tar.gz", "any"] = "any") -> Problem | None:
    """A problem when ``value`` is not an S3 URI of the wanted kind, else None."""
    match = _S3_URI.match(value)
    if not match:
        if _HF_ID.match(value):
            return Problem(field, value, "an s3:// URI; Hugging Face Hub ids are not accepted",
                           "copy the model's files to S3 (for example with `huggingface-cli download` then "
                           "`aws s3 sync`) and give s3://bucket/prefix/")
        return Problem(field, value, "an S3 URI like s3://my-bucket/path/ (lowercase bucket name, 3-63 characters)",
                       "write the location as s3://<bucket>/<key>")
    key = match.group("key") or ""
    if want == "prefix" and not key.endswith("/") and not key.endswith(".tar.gz"):
        return Problem(field, value, "an S3 prefix ending in '/' (uncompressed files) or an object ending in '.tar.gz'",
                       f"write {value}/ if it is a folder")
    if want == "tar.gz" and not key.endswith(".tar.gz"):
        return Problem(field, value, "an S3 object ending in '.tar.gz' with the files at the archive root",
                       "package the files with `tar -czf adapter.tar.gz -C dir .` and give its s3:// URI")
    return None


def name_problem(field: str, value: str, shape: str = "InferenceComponentName") -> Problem | None:
    max_len, pattern = service_model.name_rule(shape)
    if len(value) > max_len or len(value) < 1 or not pattern.fullmatch(value):
        return Problem(field, value,
                       f"1-{max_len} characters: letters, digits and hyphens, starting and ending with a letter or digit",
                       "shorten the name or replace other characters (such as '_' or '.') with '-'")
    return None


def instance_type_problem(field: str, value: str, allowed: frozenset[str], what: str) -> Problem | None:
    if value in allowed:
        return None
    near = service_model.close_matches(value, allowed)
    hint = f"did you mean {', '.join(near)}?" if near else "see the instance types SageMaker lists for " + what
    return Problem(field, value, f"an instance type SageMaker accepts for {what} (ml.<family>.<size>)", hint)


def _image_problem(value: str) -> Problem | None:
    if _LMI_ALIAS.match(value) or _ECR_IMAGE.match(value):
        return None
    return Problem("", value, "'lmi', 'lmi:<tag>' or an ECR image URI <account>.dkr.ecr.<region>.amazonaws.com/<repo>:<tag>",
                   "push the image to ECR and give its full URI")


def _ami_problem(value: str) -> Problem | None:
    if value in service_model.inference_ami_versions():
        return None
    return Problem("", value, "one of " + ", ".join(sorted(service_model.inference_ami_versions())),
                   "pick a listed version or leave it out")


def has_local_nvme(instance_type: str) -> bool:
    parts = instance_type.split(".")
    return len(parts) == 3 and parts[1] in _NVME_FAMILIES


class InstanceScaling(Settings):
    """How many instances the endpoint may run (SageMaker managed instance scaling)."""

    min_instances: Annotated[int, Field(ge=0, le=1000, description=(
        "Fewest instances. 0 lets the endpoint scale to zero when no model copy is running "
        "(some regions refuse 0). Default: 1."))] = 1
    max_instances: Annotated[int, Field(ge=1, le=1000, description="Most instances. Default: 1.")] = 1
    initial_instances: Annotated[int | None, Field(ge=1, le=1000, description=(
        "Instances at creation. Default: min_instances, or 1 when min_instances is 0."))] = None

    @property
    def initial(self) -> int:
        return self.initial_instances if self.initial_instances is not None else max(1, self.min_instances)

    def _rules(self) -> list[Problem]:
        problems = []
        if self.min_instances > self.max_instances:
            problems.append(Problem("min_instances", self.min_instances,
                                    f"at most max_instances ({self.max_instances})",
                                    "lower min_instances or raise max_instances"))
        if self.initial_instances is not None and not (
            max(1, self.min_instances) <= self.initial_instances <= self.max_instances
        ):
            problems.append(Problem("initial_instances", self.initial_instances,
                                    f"between {max(1, self.min_instances)} and max_instances ({self.max_instances})",
                                    "leave it out to start at min_instances"))
        return problems


RoutingStrategyName = Literal["LEAST_OUTSTANDING_REQUESTS", "RANDOM", "PREFIX_AWARE"]


class Routing(Settings):
    """How the endpoint spreads requests over instances.

    Default: ``LEAST_OUTSTANDING_REQUESTS`` (load-aware: each request goes to the least busy
    instance). Session-aware routing for multi-turn chat is per request, not set here.
    """

    strategy: Annotated[RoutingStrategyName, Field(description=(
        "LEAST_OUTSTANDING_REQUESTS (load-aware), RANDOM, or PREFIX_AWARE (reuses a cached prompt "
        "prefix; needs prefix_length and concurrency_threshold)."))] = "LEAST_OUTSTANDING_REQUESTS"
    prefix_length: Annotated[int | None, Field(ge=1024, le=65536, description=(
        "PREFIX_AWARE only: tokens of the prompt prefix used for routing, 1024-65536."))] = None
    concurrency_threshold: Annotated[int | None, Field(ge=1, le=1024, description=(
        "PREFIX_AWARE only: outstanding requests on an instance above which routing falls back to "
        "load-aware, 1-1024."))] = None

    @classmethod
    def least_outstanding_requests(cls) -> "Routing":
        return cls(strategy="LEAST_OUTSTANDING_REQUESTS")

    @classmethod
    def random(cls) -> "Routing":
        return cls(strategy="RANDOM")

    @classmethod
    def prefix_aware(cls, *, prefix_length: int, concurrency_threshold: int) -> "Routing":
        return cls(strategy="PREFIX_AWARE", prefix_length=prefix_length, concurrency_threshold=concurrency_threshold)

    def _rules(self) -> list[Problem]:
        problems = []
        if self.strategy == "PREFIX_AWARE":
            for field in ("prefix_length", "concurrency_threshold"):
                if getattr(self, field) is None:
                    problems.append(Problem(field, None, "required with strategy PREFIX_AWARE",
                                            f"set {field} (prefix_length 1024-65536, concurrency_threshold 1-1024)"))
        else:
            for field in ("prefix_length", "concurrency_threshold"):
                if getattr(self, field) is not None:
                    problems.append(Problem(field, getattr(self, field),
                                            f"only with strategy PREFIX_AWARE (strategy is {self.strategy})",
                                            f"remove {field} or set strategy: PREFIX_AWARE"))
        return problems


class DataCapture(Settings):
    """Endpoint Data Capture: requests and responses written to a KMS-encrypted bucket.

    It feeds the EAGLE loop with real traffic. Default: on, 10% of requests, JSON payloads
    stored as JSON (not base64).
    """

    enabled: Annotated[bool, Field(description="Capture traffic at all. Default: true.")] = True
    sampling_percentage: Annotated[int, Field(ge=1, le=100, description="Share of requests captured, 1-100. Default: 10.")] = 10
    capture_input: Annotated[bool, Field(description="Capture requests. Default: true.")] = True
    capture_output: Annotated[bool, Field(description="Capture responses. Default: true.")] = True
    json_content_types: Annotated[tuple[str, ...], Field(max_length=10, description=(
        "Content types stored as JSON text instead of base64. Default: application/json."))] = ("application/json",)

    def _rules(self) -> list[Problem]:
        problems = []
        if self.enabled and not (self.capture_input or self.capture_output):
            problems.append(Problem("capture_input", False, "capture_input or capture_output true when enabled",
                                    "turn one on, or set enabled: false"))
        for index, content_type in enumerate(self.json_content_types):
            if not _CONTENT_TYPE.match(content_type) or len(content_type) > 256:
                problems.append(Problem(f"json_content_types[{index}]", content_type, "a MIME type like application/json",
                                        "write type/subtype"))
        return problems


class CopyScaling(Settings):
    """How many copies of a model run, scaled on concurrent requests per copy.

    Default: exactly one copy, no autoscaling. With ``max_copies`` above ``min_copies`` a
    target-tracking policy keeps concurrent requests per copy near the target (high-resolution,
    10-second metric). With ``min_copies: 0`` the model scales to zero when idle, and a
    step policy brings one copy back when a request finds no capacity.
    """

    min_copies: Annotated[int, Field(ge=0, le=1000, description="Fewest copies; 0 scales to zero when idle. Default: 1.")] = 1
    max_copies: Annotated[int, Field(ge=1, le=1000, description="Most copies. Default: 1.")] = 1
    target_concurrent_requests_per_copy: Annotated[float, Field(gt=0, le=10000, description=(
        "Target tracking value for concurrent requests per copy. Default: 4."))] = 4.0
    scale_in_cooldown_seconds: Annotated[int, Field(ge=0, le=86400, description="Default: 300.")] = 300
    scale_out_cooldown_seconds: Annotated[int, Field(ge=0, le=86400, description="Default: 60.")] = 60

    @property
    def initial(self) -> int:
        """Copies at creation: an inference component cannot be created with 0 copies."""
        return max(1, self.min_copies)

    @property
    def autoscaled(self) -> bool:
        return self.max_copies > self.min_copies or self.min_copies == 0

    def _rules(self) -> list[Problem]:
        if self.min_copies > self.max_copies:
            return [Problem("min_copies", self.min_copies, f"at most max_copies ({self.max_copies})",
                            "lower min_copies or raise max_copies")]
        return []


class LoraSettings(Settings):
    """Serve many LoRA adapters on one base model, loaded on demand.

    Adapters stay in S3 until a request names one; up to ``max_gpu_adapters`` stay on the
    GPU, the least used move to CPU memory (up to ``max_cpu_adapters``), the rest to local
    disk. For the LMI container these set OPTION_ENABLE_LORA, OPTION_MAX_LORAS and
    OPTION_MAX_CPU_LORAS.
    """

    max_gpu_adapters: Annotated[int, Field(ge=1, le=256, description="Adapters kept on the GPU. Default: 4.")] = 4
    max_cpu_adapters: Annotated[int, Field(ge=1, le=4096, description=(
        "Adapters kept in CPU memory, at least max_gpu_adapters. Default: 16."))] = 16
    max_rank: Annotated[int | None, Field(ge=1, le=512, description="Highest adapter rank served. Default: the container's.")] = None

    def _rules(self) -> list[Problem]:
        if self.max_cpu_adapters < self.max_gpu_adapters:
            return [Problem("max_cpu_adapters", self.max_cpu_adapters,
                            f"at least max_gpu_adapters ({self.max_gpu_adapters}): adapters leave the GPU for CPU memory",
                            "raise max_cpu_adapters or lower max_gpu_adapters")]
        return []


class AdapterSpec(Settings):
    """A LoRA adapter served on a base model as its own inference component."""

    name: Annotated[str, field_rule(lambda v: name_problem("", v)), Field(description=(
        "The adapter's inference component name (clients pass it as InferenceComponentName): 1-63 letters, "
        "digits and hyphens."))]
    artifact_s3_uri: Annotated[str, field_rule(lambda v: s3_uri_problem("", v, want="tar.gz")), Field(description="s3://bucket/adapter.tar.gz with the adapter files at the archive root.")]

    def _rules(self) -> list[Problem]:
        return []


class SessionSettings(Settings):
    """Session-aware (sticky) routing for multi-turn chat, with a front door that keeps the books.

    Turns on stateful sessions in the container (LMI: OPTION_ENABLE_STATEFUL_SESSIONS,
    OPTION_SESSIONS_EXPIRATION) and adds an HTTPS front door (IAM auth) that maps a caller's
    conversation id to a SageMaker session id.
    """

    expiration_seconds: Annotated[int, Field(ge=60, le=86400, description=(
        "Idle seconds after which a session expires. Default: 1200 (the LMI default)."))] = 1200
    max_body_bytes: Annotated[int, Field(ge=1024, le=6 * 1024 * 1024, description=(
        "Largest request body the front door accepts. Default: 1 MiB."))] = 1024 * 1024


EAGLE_ARCHITECTURES: dict[str, str] = {
    "LlamaForCausalLM": "EAGLE3",
    "Qwen3ForCausalLM": "EAGLE3",
    "Qwen3MoeForCausalLM": "EAGLE3",
    "Qwen2ForCausalLM": "EAGLE3",
    "GptOssForCausalLM": "EAGLE3",
    "Qwen3NextForCausalLM": "EAGLE2",
}
"""Architectures SageMaker's EAGLE optimization supports, and the EAGLE version each uses."""

BUILTIN_DATASETS = ("gsm8k", "magicoder", "opencodeinstruct")


_SCHEDULE = re.compile(r"(rate\(\d+ (minute|minutes|hour|hours|day|days)\)|cron\(.+\)|at\(.+\))")
"""EventBridge Scheduler expressions the EAGLE triggers accept."""


class EagleDataset(Settings):
    """Where the EAGLE head's training data comes from. Default: the endpoint's captured traffic."""

    source: Annotated[Literal["capture", "front_door", "s3", "builtin"], Field(description=(
        "capture (this endpoint's Data Capture), front_door (the turns the model's session front door logs through "
        "Kinesis Data Firehose: independent of Data Capture, every record names its component), s3 (your dataset), "
        "builtin (a named public dataset). Default: capture."))] = "capture"
    s3_uri: Annotated[str | None, Field(description=(
        "source s3: prefix of ShareGPT / OpenAI chat / OpenAI completions JSONL. source builtin: where your copy "
        "of the named dataset is (SageMaker does not document a public location)."))] = None
    builtin_name: Annotated[str | None, Field(description="source builtin: " + ", ".join(BUILTIN_DATASETS) + ".")] = None
    min_new_records: Annotated[int, Field(ge=1, le=100_000_000, description=(
        "source capture or front_door: start a run only when at least this many new records were converted. "
        "Default: 1000."))] = 1000
    records_check: Annotated[str | None, Field(description=(
        "source capture or front_door: EventBridge Scheduler expression of a cheap check that counts the records that "
        "arrived after the watermark (lines; nothing converted, it stops reading at min_new_records) and starts a "
        "run once min_new_records arrived and no run is in progress, e.g. 'rate(1 hour)'. Default: off (runs "
        "start on the schedule or by hand)."))] = None

    def _rules(self) -> list[Problem]:
        problems = []
        if self.source in ("s3", "builtin"):
            if self.s3_uri is None:
                problems.append(Problem("s3_uri", None, f"an s3:// prefix with source {self.source}",
                                        "set s3_uri to the dataset's location"))
            else:
                problem = s3_uri_problem("s3_uri", self.s3_uri, want="prefix")
                if problem:
                    problems.append(problem)
        elif self.s3_uri is not None:
            problems.append(Problem("s3_uri", self.s3_uri, "only with source s3 or builtin", "remove s3_uri"))
        if self.source == "builtin":
            if self.builtin_name not in BUILTIN_DATASETS:
                problems.append(Problem("builtin_name", self.builtin_name, "one of " + ", ".join(BUILTIN_DATASETS),
                                        "pick a listed dataset or use source s3"))
        elif self.builtin_name is not None:
            problems.append(Problem("builtin_name", self.builtin_name, "only with source builtin", "remove builtin_name"))
        if self.records_check is not None:
            if self.source not in ("capture", "front_door"):
                problems.append(Problem("records_check", self.records_check, "only with source capture or front_door "
                                        "(it counts their records)", "remove records_check, or use source capture"))
            elif not _SCHEDULE.fullmatch(self.records_check):
                problems.append(Problem("records_check", self.records_check, "rate(N unit), cron(...) or at(...)",
                                        "write e.g. rate(1 hour) or cron(0 * * * ? *)"))
        return problems


class EagleSettings(Settings):
    """EAGLE speculative decoding: train a draft head on real traffic and serve it when it pays off."""

    schedule: Annotated[str | None, Field(description=(
        "EventBridge Scheduler expression, e.g. 'rate(7 days)' or 'cron(0 3 ? * SUN *)'. Default: weekly."))] = "rate(7 days)"
    dataset: Annotated[EagleDataset, Field(description="Training data. Default: captured traffic.")] = EagleDataset()
    job_instance_type: Annotated[str | None, Field(description=(
        "Instance type the optimization job benchmarks on. Default: the endpoint's."))] = None
    max_instance_count: Annotated[int, Field(ge=1, le=64, description="Instances for the job. Default: 1.")] = 1
    max_runtime_hours: Annotated[int, Field(ge=1, le=72, description="Job time limit. Default: 24.")] = 24
    speedup_threshold: Annotated[float, Field(ge=1.0, le=20.0, description=(
        "Promote a trained head only when throughput improves at least this much. Default: 1.5.")) ] = 1.5
    num_speculative_tokens: Annotated[int, Field(ge=1, le=16, description="Draft tokens per step when served. Default: 5.")] = 5
    use_capacity_plan: Annotated[bool, Field(description=(
        "Run optimization jobs on the endpoint's capacity plan (TrainingPlanArns). The jobs then compete with the "
        "endpoint for the plan's instances, and a plan bought for endpoints may be refused. Default: false."))] = False

    def _rules(self) -> list[Problem]:
        problems = []
        if self.job_instance_type is not None:
            problem = instance_type_problem("job_instance_type", self.job_instance_type,
                                            service_model.optimization_instance_types(), "optimization jobs")
            if problem:
                problems.append(problem)
        if self.schedule is not None and not _SCHEDULE.fullmatch(self.schedule):
            problems.append(Problem("schedule", self.schedule, "rate(N unit), cron(...) or at(...)",
                                    "write e.g. rate(7 days) or cron(0 3 ? * SUN *)"))
        return problems


class ModelSpec(Settings):
    """A model served as an inference component on an ``LlmEndpoint``.

    The weights stay in S3 (uncompressed prefix or ``.tar.gz``); by default the instances
    cache them on local NVMe so a new copy starts fast.
    """

    name: Annotated[str, field_rule(lambda v: name_problem("", v)), Field(description=(
        "The inference component's name, as clients pass it in InferenceComponentName: 1-63 letters, digits "
        "and hyphens, unique in the account and region."))]
    model_data_s3_uri: Annotated[str, field_rule(lambda v: s3_uri_problem("", v, want="prefix")), Field(description=(
        "Where the weights are: s3://bucket/prefix/ (uncompressed) or s3://bucket/model.tar.gz."))]
    image: Annotated[str, field_rule(_image_problem), Field(description=(
        "Container image: 'lmi' (AWS Large Model Inference container, tag " + DEFAULT_LMI_TAG + "), "
        "'lmi:<tag>', or a full ECR image URI. Default: lmi."))] = "lmi"
    architecture: Annotated[str | None, Field(description=(
        "The model's Hugging Face architecture (config.json 'architectures'), e.g. Qwen3ForCausalLM. "
        "Needed for EAGLE optimization. Default: unknown."))] = None
    accelerators: Annotated[int, Field(ge=1, le=64, description="GPUs (or Neuron cores) per copy. Default: 1.")] = 1
    min_memory_mb: Annotated[int, Field(ge=128, le=4_000_000, description="Host memory per copy, MB. Default: 1024.")] = 1024
    cpu_cores: Annotated[float | None, Field(gt=0, le=1024, description="CPU cores per copy. Default: not reserved.")] = None
    copies: Annotated[CopyScaling, Field(description="Copy count and autoscaling. Default: one copy.")] = CopyScaling()
    cache_weights: Annotated[bool, Field(description=(
        "Cache model weights and the container image on the instances' NVMe disks so scale-out is fast. "
        "Default: true."))] = True
    model_data_download_timeout_seconds: Annotated[int, Field(ge=60, le=3600, description="Default: 3600.")] = 3600
    container_startup_timeout_seconds: Annotated[int, Field(ge=60, le=3600, description="Default: 3600.")] = 3600
    environment: Annotated[dict[str, str], Field(description="Extra container environment variables. Default: none.")] = {}
    lora: Annotated[LoraSettings | None, Field(description=(
        "Serve LoRA adapters on this model, loaded on demand. Default: off."))] = None
    adapters: Annotated[tuple[AdapterSpec, ...], Field(max_length=1000, description=(
        "LoRA adapters on this model; needs lora. Default: none."))] = ()
    adapters_manifest: Annotated[str | None, Field(description=(
        "A JSON or YAML list of {name, artifact_s3_uri}: a file path (relative to the config) or an s3:// URI read "
        "at synth time. Default: none."))] = None
    sessions: Annotated[SessionSettings | None, Field(description=(
        "Session-aware routing with a front door for multi-turn chat. Default: off (stateless, load-aware)."))] = None
    eagle: Annotated[EagleSettings | None, Field(description=(
        "EAGLE speculative-decoding optimization loop. Default: off."))] = None

    _ENV_KEY: ClassVar[re.Pattern[str]] = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]{0,1023}$")

    @property
    def lmi_tag(self) -> str | None:
        match = _LMI_ALIAS.match(self.image)
        if not match:
            return None
        return match.group("tag") or DEFAULT_LMI_TAG

    @property
    def is_lmi(self) -> bool:
        return self.lmi_tag is not None or "djl-inference" in self.image

    def _rules(self) -> list[Problem]:
        problems: list[Problem] = []
        if (self.adapters or self.adapters_manifest) and self.lora is None:
            problems.append(Problem("adapters", [a.name for a in self.adapters] or self.adapters_manifest,
                                    "adapters only on a model with lora settings",
                                    "add `lora: {max_gpu_adapters: 4, max_cpu_adapters: 16}` to this model"))
        seen: dict[str, int] = {}
        for index, adapter in enumerate(self.adapters):
            if adapter.name == self.name or adapter.name in seen:
                other = "the base model" if adapter.name == self.name else f"adapters[{seen[adapter.name]}]"
                problems.append(Problem(f"adapters[{index}].name", adapter.name, f"a name not used by {other}",
                                        "rename the adapter"))
            seen.setdefault(adapter.name, index)
        if self.eagle is not None:
            if self.architecture is None:
                problems.append(Problem("architecture", None, "the model's architecture when eagle is set: "
                                        + ", ".join(EAGLE_ARCHITECTURES), "copy 'architectures' from the model's config.json"))
            elif self.architecture not in EAGLE_ARCHITECTURES:
                problems.append(Problem("architecture", self.architecture, "for EAGLE: " + ", ".join(EAGLE_ARCHITECTURES),
                                        "remove eagle for this model; SageMaker cannot optimize other architectures"))
            if self.eagle.dataset.source == "front_door" and self.sessions is None:
                problems.append(Problem("eagle.dataset.source", "front_door", "front_door only on a model with "
                                        "sessions (its session front door writes the turns)",
                                        "add `sessions: {}` to this model, or use source capture"))
        for key in self.environment:
            if not self._ENV_KEY.match(key):
                problems.append(Problem(f"environment.{key}", key, "a variable name: letters, digits, '_'",
                                        "rename the variable"))
        return problems


class VpcPlacement(Settings):
    """Run the endpoint's instances in your VPC, by subnet and security group ids."""

    vpc_id: Annotated[str, Field(pattern=r"^vpc-[0-9a-f]{8,17}$", description="The VPC's id, e.g. vpc-0abc12345def67890.")]
    subnet_ids: Annotated[tuple[str, ...], Field(min_length=1, max_length=16)]
    security_group_ids: Annotated[tuple[str, ...], Field(min_length=1, max_length=5)]

    def _rules(self) -> list[Problem]:
        problems = []
        for i, subnet in enumerate(self.subnet_ids):
            if not re.fullmatch(r"subnet-[0-9a-f]{8,17}", subnet):
                problems.append(Problem(f"subnet_ids[{i}]", subnet, "a subnet id like subnet-0abc12345def67890",
                                        "copy the id from the VPC console"))
        for i, group in enumerate(self.security_group_ids):
            if not re.fullmatch(r"sg-[0-9a-f]{8,17}", group):
                problems.append(Problem(f"security_group_ids[{i}]", group, "a security group id like sg-0abc12345def67890",
                                        "copy the id from the VPC console"))
        return problems


class EndpointOptions(Settings):
    """Settings of an ``LlmEndpoint`` other than the models it hosts."""

    instance_type: Annotated[str, field_rule(lambda v: instance_type_problem(
        "", v, service_model.endpoint_instance_types(), "endpoints")), Field(description="SageMaker instance type, e.g. ml.p5e.48xlarge.")]
    scaling: Annotated[InstanceScaling, Field(description="Instance count range. Default: exactly one instance.")] = InstanceScaling()
    routing: Annotated[Routing, Field(description="Request routing. Default: least outstanding requests.")] = Routing()
    data_capture: Annotated[DataCapture, Field(description="Traffic capture. Default: on, 10%, JSON.")] = DataCapture()
    inference_ami_version: Annotated[str | None, field_rule(_ami_problem), Field(description=(
        "Inference AMI (driver/CUDA) version, e.g. al2-ami-sagemaker-inference-gpu-3-1. Default: SageMaker's."))] = None
    volume_size_gb: Annotated[int | None, Field(ge=1, le=512, description=(
        "EBS volume per instance, GB. Only for instance types without local NVMe storage. Default: SageMaker's."))] = None
    instance_provision_timeout_seconds: Annotated[int | None, Field(ge=1800, le=10800, description=(
        "How long SageMaker waits for instances. Default: SageMaker's."))] = None

    def _rules(self) -> list[Problem]:
        problems: list[Problem] = []
        if self.volume_size_gb is not None and has_local_nvme(self.instance_type):
            problems.append(Problem("volume_size_gb", self.volume_size_gb,
                                    f"nothing for {self.instance_type}: it has local NVMe storage that SageMaker uses instead",
                                    "remove volume_size_gb"))
        return problems
