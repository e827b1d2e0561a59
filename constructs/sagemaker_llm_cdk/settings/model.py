"""Settings of one model served as an inference component (``ModelSpec``): where it comes from (S3 weights or a
JumpStart model), its image and architecture, what one copy needs, and the features it serves (LoRA adapters,
sessions, EAGLE, tool calling, reasoning). The rules between its fields are in ``model_rules``.
"""

from __future__ import annotations

import re
from typing import Annotated, ClassVar, Literal

from pydantic import Field

from ..core.errors import Problem
from ..core.service_model import aws_max, aws_min
from ..core.settings import Settings, field_rule, name_problem, s3_uri_problem
from . import images
from .adapters import AdapterSpec, LoraSettings
from .copies import CopyScaling, InstanceRequirements, Placement
from .eagle import EagleSettings
from .model_rules import ENVIRONMENT_KEY, model_problems
from .sessions import SessionSettings
from .tool_calling import Reasoning, ToolCalling

_ECR_IMAGE = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?/"
    r"(?P<repository>[a-z0-9][a-z0-9._/\-]*)(?::(?P<tag>[\w.\-]{1,128})|@sha256:[a-f0-9]{64})$"
)
_LMI_ALIAS = re.compile(r"^lmi(?::(?P<tag>[\w.\-]{1,128}))?$")

DEFAULT_LMI_TAG = images.DEFAULT_LMI_TAG
"""The Large Model Inference (DJL) container tag used for ``image: lmi`` (see ``images.LMI_IMAGES`` for what it
can do)."""


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
                "The model's name: 1-63 letters, digits and hyphens. Its inference component is named <stack "
                "name>-<name> (cut to 63 characters with a hash when longer), so two stacks of one config in one "
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
                "stacks of one config with a pinned name collide. Changing it (or the stack name) renames the "
                "component, which the change report flags. Default: <stack name>-<name>."
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
    model_data_owner: Annotated[
        str | None,
        Field(
            pattern=r"^\d{12}$",
            description=(
                "source s3: the 12-digit AWS account that owns the weights bucket. The endpoint role reads the weights "
                "only from a bucket that account owns (IAM condition s3:ResourceAccount), so a bucket name someone "
                "else holds is never read. Default: the account the stack deploys to."
            ),
        ),
    ] = None
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
                "source jumpstart: the model's JumpStart version, exactly as locked, e.g. 2.2.1 (no ranges: a change "
                "is a lock-file diff)."
            ),
        ),
    ] = None
    accept_eula: Annotated[
        bool,
        Field(
            description=(
                "source jumpstart: you have read and accept the end-user licence of a gated model (its name and link "
                "are in the lock file and printed at synth). Required for gated models; sets "
                "ModelAccessConfig.AcceptEula on the model and the EAGLE optimization job. Default: false."
            )
        ),
    ] = False
    pretrained_head: Annotated[
        bool | None,
        Field(
            description=(
                "source jumpstart: serve the pre-trained EAGLE head JumpStart publishes for the model (pretrained_head "
                "in the lock file) from day one, through the same serving model as a promoted head; an EAGLE loop then "
                "promotes a trained head only when it beats this one. true: required (an error when the lock holds no "
                "EAGLE head or it cannot be served); false: never. Default: served when the lock holds one and the "
                "model can serve it (LMI image, EAGLE architecture, no LoRA, licence accepted), else a synth warning "
                "says why not."
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
                "The model's Hugging Face architecture (config.json 'architectures'), a Python class name, e.g. "
                "Qwen3ForCausalLM. Needed for EAGLE optimization. Default: unknown."
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
                "A JSON or YAML list of {name, artifact_s3_uri}: a file path (relative to the config) or an s3:// URI "
                "read at synth time. Default: none."
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
                "Reasoning output (LMI images): vLLM returns the model's thinking as reasoning (reasoning_content "
                "before vLLM 0.26), apart from the "
                "answer (OPTION_ENABLE_REASONING, OPTION_REASONING_PARSER). `reasoning: {}` takes the architecture's "
                "documented parser. Default: off."
            )
        ),
    ] = None
    network_isolation: Annotated[
        bool,
        Field(
            description=(
                "EnableNetworkIsolation on the SageMaker model: the container gets no network at all (no internet, no "
                "AWS API calls); SageMaker still mounts the S3 weights, the EAGLE draft head "
                "(AdditionalModelDataSources) and LoRA adapter artifacts, and pulls the ECR image. Set false only for "
                "a container that downloads at run time (e.g. HF_MODEL_ID from the Hugging Face Hub). Create-only: "
                "changing it replaces the model and redeploys its copies. Default: true."
            )
        ),
    ] = True

    _ENV_KEY: ClassVar[re.Pattern[str]] = ENVIRONMENT_KEY

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

    def _rules(self) -> list[Problem]:
        return model_problems(self)
