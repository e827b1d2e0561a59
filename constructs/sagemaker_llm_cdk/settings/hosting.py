"""Settings of an endpoint and the models it hosts: instance scaling, routing, data capture, copies, placement,
the model itself, VPC placement and instance pools.
"""

from __future__ import annotations

import re
from typing import Annotated, ClassVar, Literal

from pydantic import Field

from .adapters import AdapterSpec, LoraSettings, lora_environment, max_rank_missing
from ..core import service_model
from ..core.errors import MISSING, Problem
from ..core.service_model import aws_max, aws_min
from ..core.settings import Settings, field_rule, instance_type_problem, name_problem, s3_uri_problem, unless_failed
from .eagle import EAGLE_ARCHITECTURES, EagleSettings
from .sessions import SessionSettings
from . import images
from .tool_calling import Reasoning, ToolCalling, tool_calling_problems, tool_environment

_ECR_IMAGE = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?/"
    r"(?P<repository>[a-z0-9][a-z0-9._/\-]*)(?::(?P<tag>[\w.\-]{1,128})|@sha256:[a-f0-9]{64})$"
)
_LMI_ALIAS = re.compile(r"^lmi(?::(?P<tag>[\w.\-]{1,128}))?$")
_CONTENT_TYPE = re.compile(r"^[a-zA-Z0-9*][a-zA-Z0-9.*+\-]*/[a-zA-Z0-9*][a-zA-Z0-9.*+\-]*$")

DEFAULT_LMI_TAG = images.DEFAULT_LMI_TAG
"""The Large Model Inference (DJL) container tag used for ``image: lmi`` (see ``images.LMI_IMAGES`` for what it can do)."""


# Instance families whose instances come with local NVMe storage: SageMaker uses it for
# the model and refuses VolumeSizeInGB for them.
_NVME_FAMILIES = frozenset(
    {
        "p4d",
        "p4de",
        "p5",
        "p5e",
        "p5en",
        "p6",
        "p6e",
        "g4dn",
        "g5",
        "g6",
        "g6e",
        "g7e",
        "trn1",
        "trn1n",
        "trn2",
        "m5d",
        "c5d",
        "r5d",
    }
)


def _image_problem(value: str) -> Problem | None:
    if _LMI_ALIAS.match(value) or _ECR_IMAGE.match(value):
        return None
    return Problem(
        "",
        value,
        "'lmi', 'lmi:<tag>' or an ECR image URI <account>.dkr.ecr.<region>.amazonaws.com/<repo>:<tag>",
        "push the image to ECR and give its full URI",
    )


_ARCHITECTURE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def _architecture_problem(value: str) -> Problem | None:
    if _ARCHITECTURE.fullmatch(value):
        return None
    return Problem(
        "",
        value,
        "a Hugging Face architecture class name (letters, digits and _, at most 128 characters), e.g. Qwen3ForCausalLM",
        "copy the first entry of 'architectures' from the model's config.json",
    )


def _ami_problem(value: str) -> Problem | None:
    if value in service_model.inference_ami_versions():
        return None
    return Problem(
        "",
        value,
        "one of " + ", ".join(sorted(service_model.inference_ami_versions())),
        "pick a listed version or leave it out",
    )


def has_local_nvme(instance_type: str) -> bool:
    parts = instance_type.split(".")
    return len(parts) == 3 and parts[1] in _NVME_FAMILIES


class InstanceScaling(Settings):
    """How many instances the endpoint may run (SageMaker managed instance scaling)."""

    min_instances: Annotated[
        int,
        Field(
            ge=0,
            le=1000,
            description=(
                "Fewest instances. 0 lets the endpoint scale to zero when no model copy is running "
                "(some regions refuse 0). Default: 1."
            ),
        ),
    ] = 1
    max_instances: Annotated[int, Field(ge=1, le=1000, description="Most instances. Default: 1.")] = 1
    initial_instances: Annotated[
        int | None,
        Field(
            ge=1, le=1000, description=("Instances at creation. Default: min_instances, or 1 when min_instances is 0.")
        ),
    ] = None

    @property
    def initial(self) -> int:
        return self.initial_instances if self.initial_instances is not None else max(1, self.min_instances)

    def _rules(self) -> list[Problem]:
        problems = []
        if self.min_instances > self.max_instances:
            problems.append(
                Problem(
                    "min_instances",
                    self.min_instances,
                    f"at most max_instances ({self.max_instances})",
                    "lower min_instances or raise max_instances",
                )
            )
        if self.initial_instances is not None and not (
            max(1, self.min_instances) <= self.initial_instances <= self.max_instances
        ):
            problems.append(
                Problem(
                    "initial_instances",
                    self.initial_instances,
                    f"between {max(1, self.min_instances)} and max_instances ({self.max_instances})",
                    "leave it out to start at min_instances",
                )
            )
        return problems


RoutingStrategyName = Literal["LEAST_OUTSTANDING_REQUESTS", "RANDOM", "PREFIX_AWARE"]


class Routing(Settings):
    """How the endpoint spreads requests over instances.

    Default: ``LEAST_OUTSTANDING_REQUESTS`` (load-aware: each request goes to the least busy
    instance). Session-aware routing for multi-turn chat is per request, not set here.

    ``PREFIX_AWARE`` routes requests that start alike to the instance that already holds that
    prefix in its cache. SageMaker compares the first ``prefix_length`` *bytes of the request
    body* (for InvokeEndpoint; *characters of the messages* for the OpenAI-compatible API), not
    tokens: a token is roughly 3-4 bytes of English text, so 4096 covers about 1,000-1,300 tokens
    of a shared system prompt.
    """

    strategy: Annotated[
        RoutingStrategyName,
        Field(
            description=(
                "LEAST_OUTSTANDING_REQUESTS (load-aware), RANDOM, or PREFIX_AWARE (reuses a cached prompt "
                "prefix; needs prefix_length and concurrency_threshold)."
            )
        ),
    ] = "LEAST_OUTSTANDING_REQUESTS"
    prefix_length: Annotated[
        int | None,
        Field(
            ge=aws_min("PrefixAwareRoutingPrefixLength"),
            le=aws_max("PrefixAwareRoutingPrefixLength"),
            description=(
                "PREFIX_AWARE only: how much of the start of each request is compared for routing, in bytes of the "
                "request body (characters of the messages for the OpenAI-compatible API), not tokens; 1024-65536."
            ),
        ),
    ] = None
    concurrency_threshold: Annotated[
        int | None,
        Field(
            ge=aws_min("PrefixAwareRoutingConcurrencyThreshold"),
            le=aws_max("PrefixAwareRoutingConcurrencyThreshold"),
            description=(
                "PREFIX_AWARE only: outstanding requests on an instance above which routing falls back to "
                "load-aware, 1-1024."
            ),
        ),
    ] = None

    @classmethod
    def least_outstanding_requests(cls) -> Routing:
        return cls(strategy="LEAST_OUTSTANDING_REQUESTS")

    @classmethod
    def random(cls) -> Routing:
        return cls(strategy="RANDOM")

    @classmethod
    def prefix_aware(cls, *, prefix_length: int, concurrency_threshold: int) -> Routing:
        """Prefix-aware routing on the first ``prefix_length`` bytes of the request body (characters of the
        messages for the OpenAI-compatible API; not tokens), 1024-65536, falling back to load-aware above
        ``concurrency_threshold`` outstanding requests per instance, 1-1024."""
        return cls(strategy="PREFIX_AWARE", prefix_length=prefix_length, concurrency_threshold=concurrency_threshold)

    def _rules(self) -> list[Problem]:
        problems = []
        if self.strategy == "PREFIX_AWARE":
            for field in ("prefix_length", "concurrency_threshold"):
                if getattr(self, field) is None:
                    problems.append(
                        Problem(
                            field,
                            None,
                            "required with strategy PREFIX_AWARE",
                            f"set {field} (prefix_length 1024-65536, concurrency_threshold 1-1024)",
                        )
                    )
        else:
            for field in ("prefix_length", "concurrency_threshold"):
                if getattr(self, field) is not None:
                    problems.append(
                        Problem(
                            field,
                            getattr(self, field),
                            f"only with strategy PREFIX_AWARE (strategy is {self.strategy})",
                            f"remove {field} or set strategy: PREFIX_AWARE",
                        )
                    )
        return problems


class DataCapture(Settings):
    """Endpoint Data Capture: requests and responses written to a KMS-encrypted bucket.

    It feeds the EAGLE loop with real traffic. Default: on, 10% of requests, JSON payloads
    stored as JSON (not base64).
    """

    enabled: Annotated[bool, Field(description="Capture traffic at all. Default: true.")] = True
    sampling_percentage: Annotated[
        int, Field(ge=1, le=100, description="Share of requests captured, 1-100. Default: 10.")
    ] = 10
    capture_input: Annotated[bool, Field(description="Capture requests. Default: true.")] = True
    capture_output: Annotated[bool, Field(description="Capture responses. Default: true.")] = True
    json_content_types: Annotated[
        tuple[str, ...],
        Field(
            max_length=10,
            description=("Content types stored as JSON text instead of base64. Default: application/json."),
        ),
    ] = ("application/json",)
    retention_days: Annotated[
        int,
        Field(
            ge=1,
            le=3650,
            description=(
                "Days a captured request/response (user prompts and model completions) is kept before it expires; then it "
                "stays 7 more days as a noncurrent version and is gone. Longer than the EAGLE schedule, so every run sees "
                "the traffic since the last one. Default: 30."
            ),
        ),
    ] = 30

    def _rules(self) -> list[Problem]:
        problems = []
        if self.enabled and not (self.capture_input or self.capture_output):
            problems.append(
                Problem(
                    "capture_input",
                    False,
                    "capture_input or capture_output true when enabled",
                    "turn one on, or set enabled: false",
                )
            )
        for index, content_type in enumerate(self.json_content_types):
            if not _CONTENT_TYPE.match(content_type) or len(content_type) > 256:
                problems.append(
                    Problem(
                        f"json_content_types[{index}]",
                        content_type,
                        "a MIME type like application/json",
                        "write type/subtype",
                    )
                )
        return problems


class CopyScaling(Settings):
    """How many copies of a model run, scaled on concurrent requests per copy.

    Default: exactly one copy, no autoscaling. With ``max_copies`` above ``min_copies`` a
    target-tracking policy keeps concurrent requests per copy near the target (high-resolution,
    10-second metric). With ``min_copies: 0`` the model scales to zero when idle, and a
    step policy brings one copy back when a request finds no capacity.
    """

    min_copies: Annotated[
        int, Field(ge=0, le=1000, description="Fewest copies; 0 scales to zero when idle. Default: 1.")
    ] = 1
    max_copies: Annotated[int, Field(ge=1, le=1000, description="Most copies. Default: 1.")] = 1
    target_concurrent_requests_per_copy: Annotated[
        float,
        Field(gt=0, le=10000, description=("Target tracking value for concurrent requests per copy. Default: 4.")),
    ] = 4.0
    scale_in_cooldown_seconds: Annotated[int, Field(ge=0, le=86400, description="Default: 300.")] = 300
    scale_out_cooldown_seconds: Annotated[int, Field(ge=0, le=86400, description="Default: 60.")] = 60
    pin_copy_count: Annotated[
        bool,
        Field(
            description=(
                "Autoscaled models only: also write RuntimeConfig.CopyCount (min_copies, at least 1) into the template. "
                "CloudFormation then sets the copy count back to it on every update of the component (a new image, a "
                "promoted draft head), whatever autoscaling had scaled to. Default: false: the template leaves the copy "
                "count to autoscaling, which starts the component at min_copies."
            )
        ),
    ] = False

    @property
    def initial(self) -> int:
        """Copies at creation: an inference component cannot be created with 0 copies."""
        return max(1, self.min_copies)

    @property
    def autoscaled(self) -> bool:
        return self.max_copies > self.min_copies or self.min_copies == 0

    @property
    def template_copy_count(self) -> int | None:
        """``RuntimeConfig.CopyCount`` for the template, or None to leave ``RuntimeConfig`` out.

        ``CopyCount`` is write-only in CloudFormation and its update handler calls
        ``UpdateInferenceComponentRuntimeConfig``: a count in the template resets an autoscaled
        component on every update (the ``DesiredCount`` problem of ECS services). So when
        autoscaling manages the count, the template does not carry one (unless ``pin_copy_count``).
        """
        if self.autoscaled and not self.pin_copy_count:
            return None
        return self.initial

    def _rules(self) -> list[Problem]:
        problems = []
        if self.min_copies > self.max_copies:
            problems.append(
                Problem(
                    "min_copies",
                    self.min_copies,
                    f"at most max_copies ({self.max_copies})",
                    "lower min_copies or raise max_copies",
                )
            )
        if self.pin_copy_count and not self.autoscaled:
            problems.append(
                Problem(
                    "pin_copy_count",
                    True,
                    "only for autoscaled models (a fixed count is always in the template)",
                    "remove pin_copy_count",
                )
            )
        return problems


class Placement(Settings):
    """Where SageMaker places a model's copies as they are added and removed (``SchedulingConfig``).

    Default: ``SPREAD`` over instances, balanced across Availability Zones (``PERMISSIVE``, at
    most one copy of difference), so losing one zone leaves copies running in the others.
    CloudFormation requires the zone balance whenever a placement is given, so it is always set.
    """

    strategy: Annotated[
        Literal["SPREAD", "BINPACK"],
        Field(
            description=(
                "SPREAD (copies spread over instances: one instance or zone lost takes the fewest copies) or BINPACK "
                "(copies packed onto few instances: frees whole instances to scale in, at the cost of resilience). "
                "Within each zone when zones are balanced. Default: SPREAD."
            )
        ),
    ] = "SPREAD"
    max_zone_imbalance: Annotated[
        int,
        Field(
            ge=aws_min("AvailabilityZoneBalanceMaxImbalance"),
            le=aws_max("AvailabilityZoneBalanceMaxImbalance"),
            description=(
                "Most copies by which any two Availability Zones may differ (AvailabilityZoneBalance.MaxImbalance, 0-100); "
                "applies when the endpoint has instances in two or more zones. The balance is PERMISSIVE, the one mode "
                "SageMaker offers: copies are still placed when capacity cannot be balanced. Default: 1."
            ),
        ),
    ] = 1

    @classmethod
    def spread(cls, *, max_zone_imbalance: int = 1) -> Placement:
        return cls(strategy="SPREAD", max_zone_imbalance=max_zone_imbalance)

    @classmethod
    def binpack(cls, *, max_zone_imbalance: int = 1) -> Placement:
        return cls(strategy="BINPACK", max_zone_imbalance=max_zone_imbalance)


class InstanceRequirements(Settings):
    """What one copy of a model needs on one instance type of an endpoint with ``instance_pools``.

    Each field left out takes the model's own value (``accelerators``, ``min_memory_mb``, ``cpu_cores``).
    """

    instance_type: Annotated[str, Field(description="One of the endpoint's instance_pools types.")]
    accelerators: Annotated[
        int | None, Field(ge=1, le=64, description=("GPUs per copy on this type. Default: the model's accelerators."))
    ] = None
    min_memory_mb: Annotated[
        int | None,
        Field(
            ge=128,
            le=4_000_000,
            description=("Host memory per copy on this type, MB. Default: the model's min_memory_mb."),
        ),
    ] = None
    cpu_cores: Annotated[
        float | None,
        Field(
            ge=aws_min("NumberOfCpuCores"),
            le=1024,
            description=("CPU cores per copy on this type, at least 0.25. Default: the model's cpu_cores."),
        ),
    ] = None


_DOWNLOADING_VARIABLES = ("HF_MODEL_ID", "OPTION_MODEL_ID")
"""Container variables that make LMI/TGI download the model when they name a hub id or URL, not a path."""


class ModelSpec(Settings):
    """A model served as an inference component on an ``LlmEndpoint``.

    The weights stay in S3 (uncompressed prefix or ``.tar.gz``); by default the instances
    cache them on local NVMe so a new copy starts fast.
    """

    name: Annotated[
        str,
        field_rule(lambda v: name_problem("", v)),
        Field(
            description=(
                "The model's name: 1-63 letters, digits and hyphens. Its inference component is named "
                "<stack name>-<name> (cut to 63 characters with a hash when longer), so two stacks of one config in one "
                "account and region do not collide; clients pass that as InferenceComponentName (the stack prints it)."
            )
        ),
    ]
    physical_name: Annotated[
        str | None,
        field_rule(lambda v: name_problem("", v)),
        Field(
            description=(
                "The exact inference component name, not prefixed. It must be unique in the account and region: two "
                "stacks of one config with a pinned name collide. Changing it (or the stack name) renames the component, "
                "which the change report flags. Default: <stack name>-<name>."
            )
        ),
    ] = None
    source: Annotated[
        Literal["s3", "jumpstart"],
        Field(
            description=(
                "Where the model comes from: s3 (your weights at model_data_s3_uri, served with image) or jumpstart (a "
                "JumpStart model by model_id and version: image, artifacts, environment, accelerators and memory come "
                "from config/jumpstart.lock.yaml, written by `make jumpstart-lock`). Default: s3."
            )
        ),
    ] = "s3"
    model_data_s3_uri: Annotated[
        str,
        field_rule(lambda v: s3_uri_problem("", v, want="prefix") if v else None),
        Field(
            description=(
                "source s3: where the weights are: s3://bucket/prefix/ (uncompressed) or s3://bucket/model.tar.gz. "
                "Not with source jumpstart (the lock file gives the artifacts)."
            )
        ),
    ] = ""
    model_id: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=256,
            pattern=r"^[A-Za-z0-9][\w.\-]*$",
            description=("source jumpstart: the JumpStart model id, e.g. meta-textgeneration-llama-3-1-8b-instruct."),
        ),
    ] = None
    version: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=64,
            pattern=r"^[0-9][\w.\-]*$",
            description=(
                "source jumpstart: the model's JumpStart version, exactly as locked, e.g. 2.2.1 (no ranges: a change is "
                "a lock-file diff)."
            ),
        ),
    ] = None
    accept_eula: Annotated[
        bool,
        Field(
            description=(
                "source jumpstart: you have read and accept the end-user licence of a gated model (its name and link are "
                "in the lock file and printed at synth). Required for gated models; sets ModelAccessConfig.AcceptEula "
                "on the model and the EAGLE optimization job. Default: false."
            )
        ),
    ] = False
    pretrained_head: Annotated[
        bool | None,
        Field(
            description=(
                "source jumpstart: serve the pre-trained EAGLE head JumpStart publishes for the model (pretrained_head in "
                "the lock file) from day one, through the same serving model as a promoted head; an EAGLE loop then "
                "promotes a trained head only when it beats this one. true: required (an error when the lock holds no EAGLE "
                "head or it cannot be served); false: never. Default: served when the lock holds one and the model can "
                "serve it (LMI image, EAGLE architecture, no LoRA, licence accepted), else a synth warning says why not."
            )
        ),
    ] = None
    image: Annotated[
        str,
        field_rule(_image_problem),
        Field(
            description=(
                "Container image: 'lmi' (AWS Large Model Inference container, tag "
                + DEFAULT_LMI_TAG
                + ", vLLM 0.26: LoRA, "
                "stateful sessions and EAGLE heads, not LoRA and EAGLE on one model; CUDA 13, so its endpoint runs "
                + images.CUDA13_AMI
                + "), 'lmi:<tag>' (supported: "
                + images.supported_tags()
                + "), or a full ECR image "
                "URI. Default: lmi."
            )
        ),
    ] = "lmi"
    architecture: Annotated[
        str | None,
        field_rule(_architecture_problem),
        Field(
            json_schema_extra={"pattern": "^" + _ARCHITECTURE.pattern + "$"},
            description=(
                "The model's Hugging Face architecture (config.json 'architectures'), a Python class name, e.g. Qwen3ForCausalLM. "
                "Needed for EAGLE optimization. Default: unknown."
            ),
        ),
    ] = None
    accelerators: Annotated[int, Field(ge=1, le=64, description="GPUs (or Neuron cores) per copy. Default: 1.")] = 1
    min_memory_mb: Annotated[
        int, Field(ge=128, le=4_000_000, description="Host memory per copy, MB. Default: 1024.")
    ] = 1024
    cpu_cores: Annotated[
        float | None,
        Field(
            ge=aws_min("NumberOfCpuCores"),
            le=1024,
            description=("CPU cores per copy, at least 0.25. Default: not reserved."),
        ),
    ] = None
    copies: Annotated[CopyScaling, Field(description="Copy count and autoscaling. Default: one copy.")] = CopyScaling()
    instance_requirements: Annotated[
        tuple[InstanceRequirements, ...],
        Field(
            max_length=5,
            description=(
                "Endpoints with instance_pools only: the model's accelerators, memory and CPU on particular pool types "
                "(one InferenceComponent Specifications entry per pool type; types not listed use the model's own "
                "values). Default: the same requirements on every type."
            ),
        ),
    ] = ()
    placement: Annotated[
        Placement,
        Field(
            description=(
                "How copies are placed over instances and Availability Zones. Default: SPREAD, zones balanced "
                "(at most one copy apart)."
            )
        ),
    ] = Placement()
    cache_weights: Annotated[
        bool,
        Field(
            description=(
                "Cache model weights and the container image on the instances' NVMe disks so scale-out is fast. "
                "Default: true."
            )
        ),
    ] = True
    model_data_download_timeout_seconds: Annotated[
        int,
        Field(
            ge=aws_min("ProductionVariantModelDataDownloadTimeoutInSeconds"),
            le=aws_max("ProductionVariantModelDataDownloadTimeoutInSeconds"),
            description="Default: 3600.",
        ),
    ] = 3600
    container_startup_timeout_seconds: Annotated[
        int,
        Field(
            ge=aws_min("ProductionVariantContainerStartupHealthCheckTimeoutInSeconds"),
            le=aws_max("ProductionVariantContainerStartupHealthCheckTimeoutInSeconds"),
            description="Default: 3600.",
        ),
    ] = 3600
    environment: Annotated[
        dict[str, str], Field(description="Extra container environment variables. Default: none.")
    ] = {}
    lora: Annotated[
        LoraSettings | None, Field(description=("Serve LoRA adapters on this model, loaded on demand. Default: off."))
    ] = None
    adapters: Annotated[
        tuple[AdapterSpec, ...],
        Field(max_length=1000, description=("LoRA adapters on this model; needs lora. Default: none.")),
    ] = ()
    adapters_manifest: Annotated[
        str | None,
        Field(
            description=(
                "A JSON or YAML list of {name, artifact_s3_uri}: a file path (relative to the config) or an s3:// URI read "
                "at synth time. Default: none."
            )
        ),
    ] = None
    sessions: Annotated[
        SessionSettings | None,
        Field(
            description=(
                "Session-aware routing with a front door for multi-turn chat. Default: off (stateless, load-aware)."
            )
        ),
    ] = None
    eagle: Annotated[
        EagleSettings | None, Field(description=("EAGLE speculative-decoding optimization loop. Default: off."))
    ] = None
    tools: Annotated[
        ToolCalling | None,
        Field(
            description=(
                "Tool calling for agents (LMI images): vLLM parses the model's tool calls into OpenAI tool_calls "
                "(OPTION_ENABLE_AUTO_TOOL_CHOICE, OPTION_TOOL_CALL_PARSER). `tools: {}` takes the architecture's "
                "documented parser. Default: off."
            )
        ),
    ] = None
    reasoning: Annotated[
        Reasoning | None,
        Field(
            description=(
                "Reasoning output (LMI images): vLLM returns the model's thinking as reasoning_content, apart from the "
                "answer (OPTION_ENABLE_REASONING, OPTION_REASONING_PARSER). `reasoning: {}` takes the architecture's "
                "documented parser. Default: off."
            )
        ),
    ] = None
    network_isolation: Annotated[
        bool,
        Field(
            description=(
                "EnableNetworkIsolation on the SageMaker model: the container gets no network at all (no internet, no AWS "
                "API calls); SageMaker still mounts the S3 weights, the EAGLE draft head (AdditionalModelDataSources) and "
                "LoRA adapter artifacts, and pulls the ECR image. Set false only for a container that downloads at run time "
                "(e.g. HF_MODEL_ID from the Hugging Face Hub). Create-only: changing it replaces the model and redeploys "
                "its copies. Default: true."
            )
        ),
    ] = True

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

    @property
    def is_jumpstart(self) -> bool:
        return self.source == "jumpstart"

    def _source_problems(self) -> list[Problem]:
        """One source, fully given: s3 with model_data_s3_uri (and image), or jumpstart with model_id and version."""
        problems: list[Problem] = []
        given = self.model_fields_set
        if self.source == "s3":
            if not self.model_data_s3_uri:
                problems.append(
                    Problem(
                        "model_data_s3_uri",
                        MISSING,
                        "an s3:// prefix or .tar.gz with source s3 (the default)",
                        "give model_data_s3_uri, or source: jumpstart with model_id and version",
                    )
                )
            for name in ("model_id", "version"):
                if getattr(self, name) is not None:
                    problems.append(
                        Problem(
                            name,
                            getattr(self, name),
                            "only with source: jumpstart",
                            f"add source: jumpstart (and remove model_data_s3_uri), or remove {name}",
                        )
                    )
            if self.accept_eula:
                problems.append(
                    Problem(
                        "accept_eula",
                        True,
                        "only with source: jumpstart (licences of JumpStart models)",
                        "remove accept_eula",
                    )
                )
            if self.pretrained_head is not None:
                problems.append(
                    Problem(
                        "pretrained_head",
                        self.pretrained_head,
                        "only with source: jumpstart (heads JumpStart publishes)",
                        "remove pretrained_head",
                    )
                )
            return problems
        if self.pretrained_head is True and self.lora is not None:
            problems.append(
                Problem(
                    "pretrained_head",
                    True,
                    "not with lora: vLLM cannot serve LoRA adapters and a speculative-decoding head on one model",
                    "remove pretrained_head (or set it false), or serve the adapters on another model",
                )
            )
        if self.pretrained_head is True and "OPTION_SPECULATIVE_CONFIG" in self.environment:
            problems.append(
                Problem(
                    "environment.OPTION_SPECULATIVE_CONFIG",
                    self.environment["OPTION_SPECULATIVE_CONFIG"],
                    "nothing with pretrained_head: the served head sets it",
                    "remove OPTION_SPECULATIVE_CONFIG, or set pretrained_head: false",
                )
            )
        for name in ("model_id", "version"):
            if getattr(self, name) is None:
                problems.append(
                    Problem(
                        name,
                        MISSING,
                        "required with source: jumpstart",
                        f"add {name} (see the JumpStart model card, then run `make jumpstart-lock`)",
                    )
                )
        for name in ("model_data_s3_uri", "image"):
            if name in given:
                problems.append(
                    Problem(
                        name,
                        getattr(self, name),
                        "nothing with source: jumpstart (the lock file gives the image and artifacts)",
                        f"remove {name}, or use source: s3 without model_id and version",
                    )
                )
        return problems

    def _rules(self) -> list[Problem]:
        problems: list[Problem] = []
        with unless_failed():
            problems.extend(self._source_problems())
        with unless_failed():
            if (self.adapters or self.adapters_manifest) and self.lora is None:
                problems.append(
                    Problem(
                        "adapters",
                        [a.name for a in self.adapters] or self.adapters_manifest,
                        "adapters only on a model with lora settings",
                        "add `lora: {max_gpu_adapters: 4, max_cpu_adapters: 16, max_rank: 16}` to this model",
                    )
                )
            elif (self.adapters or self.adapters_manifest) and self.lora is not None and self.lora.max_rank is None:
                problems.append(max_rank_missing("lora.max_rank"))
        with unless_failed():
            seen: dict[str, int] = {}
            for index, adapter in enumerate(self.adapters):
                if adapter.name == self.name or adapter.name in seen:
                    other = "the base model" if adapter.name == self.name else f"adapters[{seen[adapter.name]}]"
                    problems.append(
                        Problem(
                            f"adapters[{index}].name", adapter.name, f"a name not used by {other}", "rename the adapter"
                        )
                    )
                seen.setdefault(adapter.name, index)
        with unless_failed():
            if self.eagle is not None:
                if self.architecture is None:
                    problems.append(
                        Problem(
                            "architecture",
                            None,
                            "the model's architecture when eagle is set: " + ", ".join(EAGLE_ARCHITECTURES),
                            "copy 'architectures' from the model's config.json",
                        )
                    )
                elif self.architecture not in EAGLE_ARCHITECTURES:
                    problems.append(
                        Problem(
                            "architecture",
                            self.architecture,
                            "for EAGLE: " + ", ".join(EAGLE_ARCHITECTURES),
                            "remove eagle for this model; SageMaker cannot optimize other architectures",
                        )
                    )
                if self.eagle.dataset.source == "front_door" and self.sessions is None:
                    problems.append(
                        Problem(
                            "eagle.dataset.source",
                            "front_door",
                            "front_door only on a model with sessions (its session front door writes the turns)",
                            "add `sessions: {}` to this model, or use source capture",
                        )
                    )
        with unless_failed():
            seen_types: set[str] = set()
            for index, requirement in enumerate(self.instance_requirements):
                if requirement.instance_type in seen_types:
                    problems.append(
                        Problem(
                            f"instance_requirements[{index}].instance_type",
                            requirement.instance_type,
                            "each instance type once",
                            "merge the two entries",
                        )
                    )
                seen_types.add(requirement.instance_type)
                if (
                    self.is_lmi
                    and requirement.accelerators is not None
                    and requirement.accelerators != self.accelerators
                ):
                    problems.append(
                        Problem(
                            f"instance_requirements[{index}].accelerators",
                            requirement.accelerators,
                            f"the model's accelerators ({self.accelerators}) for the LMI container: its tensor parallel "
                            "degree (OPTION_TENSOR_PARALLEL_DEGREE) is one value for every instance type",
                            "leave accelerators out here, or serve the model on a separate endpoint",
                        )
                    )
        with unless_failed():
            if not self.is_jumpstart:  # a JumpStart model's image is known once resolved from the lock: checked then
                problems.extend(images.capability_problems(self))
        with unless_failed():
            problems.extend(tool_calling_problems(self, image_known=not self.is_jumpstart))
        with unless_failed():
            for key, setting in self.environment.items():
                if not self._ENV_KEY.match(key):
                    problems.append(
                        Problem(
                            f"environment.{key}", key, "a variable name: letters, digits, '_'", "rename the variable"
                        )
                    )
                if len(setting) > 1024:  # botocore's EnvironmentValue: max 1024
                    problems.append(
                        Problem(
                            f"environment.{key}",
                            setting,
                            "a value of at most 1024 characters",
                            "shorten the value, or pass it in a file under model_data_s3_uri",
                        )
                    )
            if (
                len(self.environment) > 100
            ):  # botocore's EnvironmentMap; ModelComponent checks it with the features' too
                problems.append(
                    Problem(
                        "environment",
                        f"{len(self.environment)} variables",
                        "at most 100 variables (SageMaker's limit; the model's features add more)",
                        "remove some variables",
                    )
                )
        with unless_failed():
            if self.network_isolation:
                for key in _DOWNLOADING_VARIABLES:
                    value = self.environment.get(key)
                    if value is not None and not value.startswith("/"):
                        problems.append(
                            Problem(
                                f"environment.{key}",
                                value,
                                "a local path (e.g. /opt/ml/model) while network_isolation is on: the container has no network",
                                "serve the weights from model_data_s3_uri, or set network_isolation: false for this model",
                            )
                        )
        with unless_failed():
            problems.extend(self._environment_override_problems())
        return problems

    def _environment_override_problems(self) -> list[Problem]:
        """``environment`` entries that the model's features set to another value (LMI images only): the stack
        would refuse them while it builds, so they are found here with everything else."""
        if not self.is_lmi or not self.environment:
            return []
        needs: dict[str, tuple[str, str]] = {}
        if self.lora is not None:
            needs.update({k: (v, "lora") for k, v in lora_environment(self.lora).items()})
        if self.sessions is not None:
            needs.update({k: (v, "sessions") for k, v in self.sessions.container_environment().items()})
        if (
            (self.tools is not None or self.reasoning is not None)
            and not self.is_jumpstart
            and not tool_calling_problems(self)
        ):
            needs.update({k: (v, "tools" if "TOOL" in k else "reasoning") for k, v in tool_environment(self).items()})
        problems = [
            Problem(
                f"environment.{name}",
                self.environment[name],
                f"{value!r}, which the {feature} settings give",
                f"remove {name} from environment and set it through {feature}",
            )
            for name, (value, feature) in needs.items()
            if name in self.environment and self.environment[name] != value
        ]
        if self.eagle is not None and "OPTION_SPECULATIVE_CONFIG" in self.environment:
            problems.append(
                Problem(
                    "environment.OPTION_SPECULATIVE_CONFIG",
                    self.environment["OPTION_SPECULATIVE_CONFIG"],
                    "nothing with eagle: the promoted draft head sets it",
                    "remove OPTION_SPECULATIVE_CONFIG; eagle.num_speculative_tokens sets the draft length",
                )
            )
        return problems


class VpcPlacement(Settings):
    """Run the endpoint's instances in your VPC, by subnet and security group ids."""

    vpc_id: Annotated[
        str, Field(pattern=r"^vpc-[0-9a-f]{8,17}$", description="The VPC's id, e.g. vpc-0abc12345def67890.")
    ]
    subnet_ids: Annotated[
        tuple[str, ...],
        Field(
            min_length=1,
            max_length=16,
            description=(
                "Subnets the instances run in, e.g. subnet-0abc12345def67890. Give subnets in two or more zones so "
                "copies can be balanced across them."
            ),
        ),
    ]
    subnet_availability_zones: Annotated[
        tuple[str, ...] | None,
        Field(
            max_length=16,
            description=(
                "The zone of each subnet, in the order of subnet_ids (e.g. us-east-1a). Default: not given; nothing in "
                "the stack needs it."
            ),
        ),
    ] = None
    security_group_ids: Annotated[
        tuple[str, ...],
        Field(
            min_length=1,
            max_length=5,
            description=("Security groups of the instances' network interfaces, e.g. sg-0abc12345def67890."),
        ),
    ]

    def _rules(self) -> list[Problem]:
        problems = []
        zones = self.subnet_availability_zones
        if zones is not None:
            if len(zones) != len(self.subnet_ids):
                problems.append(
                    Problem(
                        "subnet_availability_zones",
                        list(zones),
                        f"one zone per subnet ({len(self.subnet_ids)}, in the order of subnet_ids)",
                        "list the zone of each subnet, or leave subnet_availability_zones out",
                    )
                )
            for i, zone in enumerate(zones):
                if not re.fullmatch(r"[a-z]{2}(-[a-z]+)+-\d[a-z]", zone):
                    problems.append(
                        Problem(
                            f"subnet_availability_zones[{i}]",
                            zone,
                            "an Availability Zone name like us-east-1a",
                            "copy it from the VPC console",
                        )
                    )
        for i, subnet in enumerate(self.subnet_ids):
            if not re.fullmatch(r"subnet-[0-9a-f]{8,17}", subnet):
                problems.append(
                    Problem(
                        f"subnet_ids[{i}]",
                        subnet,
                        "a subnet id like subnet-0abc12345def67890",
                        "copy the id from the VPC console",
                    )
                )
        for i, group in enumerate(self.security_group_ids):
            if not re.fullmatch(r"sg-[0-9a-f]{8,17}", group):
                problems.append(
                    Problem(
                        f"security_group_ids[{i}]",
                        group,
                        "a security group id like sg-0abc12345def67890",
                        "copy the id from the VPC console",
                    )
                )
        return problems


class InstancePool(Settings):
    """One instance type of a heterogeneous endpoint (``ProductionVariant.InstancePools``)."""

    instance_type: Annotated[
        str,
        field_rule(lambda v: instance_type_problem("", v, service_model.endpoint_instance_types(), "endpoints")),
        Field(description="SageMaker instance type."),
    ]
    priority: Annotated[
        int,
        Field(
            ge=aws_min("InstancePoolPriority"),
            le=aws_max("InstancePoolPriority"),
            description=(
                "1 (tried first) to 5: SageMaker falls back to the next priority when a type has no capacity."
            ),
        ),
    ]


class EndpointOptions(Settings):
    """Settings of an ``LlmEndpoint`` other than the models it hosts."""

    instance_type: Annotated[
        str,
        field_rule(lambda v: instance_type_problem("", v, service_model.endpoint_instance_types(), "endpoints")),
        Field(description="SageMaker instance type, e.g. ml.p5e.48xlarge."),
    ]
    scaling: Annotated[InstanceScaling, Field(description="Instance count range. Default: exactly one instance.")] = (
        InstanceScaling()
    )
    routing: Annotated[Routing, Field(description="Request routing. Default: least outstanding requests.")] = Routing()
    data_capture: Annotated[DataCapture, Field(description="Traffic capture. Default: on, 10%, JSON.")] = DataCapture()
    inference_ami_version: Annotated[
        str | None,
        field_rule(_ami_problem),
        Field(
            description=(
                "Inference AMI (driver/CUDA) version, e.g. al2-ami-sagemaker-inference-gpu-3-1. A CUDA 13 image (such as the "
                "default LMI image) needs " + images.CUDA13_AMI + ". Default: the AMI the models' images need, else "
                "SageMaker's."
            )
        ),
    ] = None
    volume_size_gb: Annotated[
        int | None,
        Field(
            ge=aws_min("ProductionVariantVolumeSizeInGB"),
            le=aws_max("ProductionVariantVolumeSizeInGB"),
            description=(
                "EBS volume per instance, GB. Only for instance types without local NVMe storage. Default: SageMaker's."
            ),
        ),
    ] = None
    instance_provision_timeout_seconds: Annotated[
        int | None,
        Field(
            ge=aws_min("VariantInstanceProvisionTimeoutInSeconds"),
            le=aws_max("VariantInstanceProvisionTimeoutInSeconds"),
            description="How long SageMaker waits for instances (with instance_pools: over all pools), 300-3600 seconds. "
            "Default: SageMaker's.",
        ),
    ] = None
    instance_pools: Annotated[
        tuple[InstancePool, ...],
        Field(
            max_length=5,
            description=(
                "Heterogeneous capacity: 2-5 instance types with priorities; SageMaker provisions the first that has "
                "capacity, at creation and when scaling. instance_type must be the priority-1 type. Every model is "
                "checked against every type. Not with a capacity plan. Default: instance_type only."
            ),
        ),
    ] = ()

    @property
    def instance_types(self) -> tuple[str, ...]:
        """Every instance type the endpoint may run on: its pools by priority, or ``instance_type``."""
        if not self.instance_pools:
            return (self.instance_type,)
        return tuple(p.instance_type for p in sorted(self.instance_pools, key=lambda p: p.priority))

    def _rules(self) -> list[Problem]:
        problems: list[Problem] = []
        for instance_type in dict.fromkeys((self.instance_type, *self.instance_types)):
            if self.volume_size_gb is not None and has_local_nvme(instance_type):
                problems.append(
                    Problem(
                        "volume_size_gb",
                        self.volume_size_gb,
                        f"nothing for {instance_type}: it has local NVMe storage that SageMaker uses instead",
                        "remove volume_size_gb",
                    )
                )
                break
        problems.extend(self._pool_problems())
        return problems

    def _pool_problems(self) -> list[Problem]:
        pools = self.instance_pools
        if not pools:
            return []
        problems: list[Problem] = []
        if len(pools) < 2:
            problems.append(
                Problem(
                    "instance_pools",
                    [p.instance_type for p in pools],
                    "2-5 pools (an inference component needs a specification for at least two types)",
                    "add a fallback type, or remove instance_pools and use instance_type alone",
                )
            )
        types: dict[str, int] = {}
        priorities: dict[int, int] = {}
        for index, pool in enumerate(pools):
            if pool.instance_type in types:
                problems.append(
                    Problem(
                        f"instance_pools[{index}].instance_type",
                        pool.instance_type,
                        f"a type not used by instance_pools[{types[pool.instance_type]}]",
                        "list each instance type once",
                    )
                )
            types.setdefault(pool.instance_type, index)
            if pool.priority in priorities:
                problems.append(
                    Problem(
                        f"instance_pools[{index}].priority",
                        pool.priority,
                        f"a priority not used by instance_pools[{priorities[pool.priority]}]",
                        "give each pool its own priority, 1 first",
                    )
                )
            priorities.setdefault(pool.priority, index)
        first = min(pools, key=lambda p: p.priority)
        if self.instance_type != first.instance_type:
            problems.append(
                Problem(
                    "instance_type",
                    self.instance_type,
                    f"the priority-1 pool's type ({first.instance_type}) when instance_pools is set",
                    f"set instance_type: {first.instance_type}",
                )
            )
        if len({has_local_nvme(p.instance_type) for p in pools}) > 1:
            problems.append(
                Problem(
                    "instance_pools",
                    [p.instance_type for p in pools],
                    "types that all have local NVMe storage, or none: the endpoint's volume key "
                    "(KmsKeyId) is refused for NVMe types and needed for the others",
                    "pick pool types of one kind",
                )
            )
        return problems


def pools_with_plan_problem(field: str = "capacity_plan") -> Problem:
    """Instance pools and a capacity plan together: refused, AWS documents no such combination."""
    return Problem(
        field,
        "a capacity plan with instance_pools",
        "one or the other: a plan reserves one instance type (capacity-reservations-only launches only "
        "into it), and AWS does not document how instance pools use CapacityReservationConfig",
        "remove instance_pools to run on the plan, or unbind the plan to fall back across types",
    )


def requirements_on(spec: ModelSpec, instance_type: str) -> tuple[int, int, float | None]:
    """(accelerators, min memory MB, CPU cores) one copy of ``spec`` needs on ``instance_type``."""
    override = next((r for r in spec.instance_requirements if r.instance_type == instance_type), None)
    if override is None:
        return spec.accelerators, spec.min_memory_mb, spec.cpu_cores
    return (
        override.accelerators or spec.accelerators,
        override.min_memory_mb or spec.min_memory_mb,
        override.cpu_cores if override.cpu_cores is not None else spec.cpu_cores,
    )


def fit_problems(spec: ModelSpec, options: EndpointOptions) -> list[Problem]:
    """What keeps one model from fitting its endpoint: the image's AMI, ``instance_requirements`` naming a type the
    endpoint does not run, EAGLE with instance pools, and accelerators or memory one instance of each type lacks.

    Pure settings (no construct), so a config checks it with every other problem in one round and the construct
    checks the same. Paths are the model's own fields: a requirement that comes from ``instance_requirements[i]``
    is named there; the model's ``accelerators``/``min_memory_mb`` are named as themselves, with the pool type.
    """
    from ..core.instances import accelerators_of, memory_mb_of

    problems = list(images.ami_problems([("image", spec.image)], options.inference_ami_version))
    pool_types = set(options.instance_types) if options.instance_pools else set()
    for index, requirement in enumerate(spec.instance_requirements):
        if requirement.instance_type not in pool_types:
            problems.append(
                Problem(
                    f"instance_requirements[{index}].instance_type",
                    requirement.instance_type,
                    "one of the endpoint's instance_pools types: "
                    + (", ".join(sorted(pool_types)) or "the endpoint has no pools"),
                    "list a pool type, or remove the entry",
                )
            )
    if options.instance_pools and spec.eagle is not None:
        problems.append(
            Problem(
                "eagle",
                "set",
                "no EAGLE on an endpoint with instance_pools: the promoted head is "
                "served by swapping Specification.ModelName, which a per-instance-type specification "
                "list does not have; nor is it documented which pool type the optimization job should "
                "benchmark",
                "remove eagle, or serve this model on an endpoint with one instance type",
            )
        )
    for instance_type in options.instance_types:
        accelerators, memory, _ = requirements_on(spec, instance_type)
        at = next((i for i, r in enumerate(spec.instance_requirements) if r.instance_type == instance_type), None)
        override = spec.instance_requirements[at] if at is not None else None
        on = f" (on pool type {instance_type})" if options.instance_pools else ""
        for field, needed, held, what in (
            ("accelerators", accelerators, accelerators_of(instance_type), "accelerators"),
            ("min_memory_mb", memory, memory_mb_of(instance_type), "memory"),
        ):
            if held is None or needed <= held:
                continue
            own = override is not None and getattr(override, field) is not None
            unit = " in MB" if field == "min_memory_mb" else ""
            problems.append(
                Problem(
                    f"instance_requirements[{at}].{field}" if own else field,
                    needed,
                    f"at most {held}, the {what} of one {instance_type}{unit}{'' if own else on}",
                    "lower it or use a larger instance type"
                    if own
                    else f"lower {field} or use a larger instance type"
                    + (f" (or set instance_requirements for {instance_type})" if options.instance_pools else ""),
                )
            )
    return problems
