"""The container images the library knows: what each LMI image can do, the AMI it needs, where it lives.

One table (``LMI_IMAGES``) says, for each supported Large Model Inference (DJL Serving + vLLM)
image, whether it serves LoRA adapters, stateful sessions, speculative decoding (EAGLE heads
through ``OPTION_SPECULATIVE_CONFIG``) and LoRA together with speculative decoding, which CUDA
it is built for and which ``InferenceAmiVersion`` it needs. The rules in ``settings`` and
``model_component`` read it; nothing else decides what an image can do.

Sources: the LMI release notes (djl-serving ``serving/docs/lmi/release_notes.md``), the AWS
Deep Learning Containers image list, botocore's ``ProductionVariantInferenceAmiVersion`` (driver
and CUDA of each AMI) and vLLM's feature matrix, which marks LoRA with speculative decoding as
unsupported in every release up to 0.26.

Accounts: the LMI image is published by the Deep Learning Containers registry of each region
(``DLC_ACCOUNTS``; 763104351884 in most of the aws partition, other accounts in opt-in regions,
China and GovCloud). The Powertools layer is published by 017000801446 in the aws partition
(``POWERTOOLS_LAYER_ACCOUNTS``). A region or partition missing from these tables is refused with
a clear error rather than guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..core import regions
from ..core.errors import Problem

LMI_ACCOUNT = "763104351884"
"""AWS Deep Learning Containers account that publishes the LMI image in most regions of the aws partition;
the account of each region is in ``DLC_ACCOUNTS`` (``accounts.lmi_account``)."""
LMI_REPOSITORY = "djl-inference"

CUDA13_AMI = "al2023-ami-sagemaker-inference-gpu-4-1"
"""The only InferenceAmiVersion with a CUDA 13 driver (NVIDIA 580, CUDA 13.0; botocore 1.44)."""

AMI_CUDA: dict[str, str] = {
    "al2-ami-sagemaker-inference-gpu-2": "12.2",
    "al2-ami-sagemaker-inference-gpu-2-1": "12.2",
    "al2-ami-sagemaker-inference-gpu-3-1": "12.4",
    CUDA13_AMI: "13.0",
}
"""Highest CUDA each GPU InferenceAmiVersion's driver runs (botocore's documentation of the enum)."""


@dataclass(frozen=True)
class LmiImage:
    """What one LMI image can do. ``tag`` is the djl-inference tag, e.g. ``0.36.0-lmi28.0.0-cu130``."""

    tag: str
    vllm: str
    cuda: str
    lora: bool
    """Dynamic LoRA adapters (OPTION_ENABLE_LORA) in the default (async) mode."""
    stateful_sessions: bool
    """Session-aware routing (OPTION_ENABLE_STATEFUL_SESSIONS) in the default (async) mode."""
    speculative_decoding: bool
    """Serves an EAGLE draft head through OPTION_SPECULATIVE_CONFIG."""
    lora_with_speculative_decoding: bool
    """LoRA adapters and speculative decoding on one model."""
    required_ami: str | None
    """The InferenceAmiVersion the endpoint must run, or None when SageMaker's default AMI serves it."""

    @property
    def lmi(self) -> int:
        return _lmi_major(self.tag) or 0


LMI_IMAGES: dict[str, LmiImage] = {
    image.tag: image
    for image in (
        LmiImage(
            "0.34.0-lmi16.0.0-cu128",
            vllm="0.10.2",
            cuda="12.8",
            lora=True,
            stateful_sessions=True,
            speculative_decoding=False,
            lora_with_speculative_decoding=False,
            required_ami=None,
        ),
        LmiImage(
            "0.35.0-lmi17.0.0-cu128",
            vllm="0.11.1",
            cuda="12.8",
            lora=True,
            stateful_sessions=True,
            speculative_decoding=True,
            lora_with_speculative_decoding=False,
            required_ami=None,
        ),
        LmiImage(
            "0.36.0-lmi18.0.0-cu128",
            vllm="0.12.0",
            cuda="12.8",
            lora=True,
            stateful_sessions=True,
            speculative_decoding=True,
            lora_with_speculative_decoding=False,
            required_ami=None,
        ),
        LmiImage(
            "0.36.0-lmi28.0.0-cu130",
            vllm="0.26",
            cuda="13.0",
            lora=True,
            stateful_sessions=True,
            speculative_decoding=True,
            lora_with_speculative_decoding=False,
            required_ami=CUDA13_AMI,
        ),
    )
}
"""Supported LMI images (newest last). LMI 16 brought LoRA and sticky sessions to async mode, LMI 17 made
async the default and added EAGLE 3; no vLLM release up to 0.26 serves LoRA with speculative decoding."""

DEFAULT_LMI_TAG = "0.36.0-lmi28.0.0-cu130"
"""The image ``image: lmi`` runs: the newest LMI (vLLM 0.26), which serves LoRA, stateful sessions and EAGLE
heads (not LoRA and EAGLE on one model). It is built for CUDA 13.0, so its endpoint runs ``CUDA13_AMI``."""

_TAG = re.compile(r"^\d+\.\d+\.\d+-lmi(?P<lmi>\d+)\.[\w.]*?-cu(?P<cuda>\d{3})(?:-v[\d.]+)?$")


def _lmi_major(tag: str) -> int | None:
    match = _TAG.match(tag)
    return int(match.group("lmi")) if match else None


def cuda_of_tag(tag: str) -> str | None:
    """``"13.0"`` for ``...-cu130``; None when the tag names no CUDA version."""
    match = re.search(r"-cu(\d{2})(\d)(?:-|$)", tag)
    return f"{match.group(1)}.{match.group(2)}" if match else None


def required_ami_of_tag(tag: str) -> str | None:
    """The InferenceAmiVersion a djl-inference tag needs: CUDA 13 images need ``CUDA13_AMI``, others none."""
    image = LMI_IMAGES.get(tag)
    if image is not None:
        return image.required_ami
    cuda = cuda_of_tag(tag)
    return CUDA13_AMI if cuda is not None and cuda.startswith("13.") else None


def lmi_image(tag: str | None) -> LmiImage | None:
    """The table's entry for ``tag``; None for a tag the table does not list (or not an LMI image)."""
    return LMI_IMAGES.get(tag) if tag else None


def supported_tags() -> str:
    return ", ".join(LMI_IMAGES)


def tag_of(image: str) -> str | None:
    """The djl-inference tag of a ``ModelSpec.image`` value ('lmi', 'lmi:<tag>' or an ECR URI), else None."""
    if image == "lmi":
        return DEFAULT_LMI_TAG
    if image.startswith("lmi:"):
        return image[len("lmi:") :]
    match = re.match(r"^\d{12}\.dkr\.ecr\.[a-z0-9-]+\.amazonaws\.com(?:\.cn)?/djl-inference:(?P<tag>[\w.\-]+)$", image)
    return match.group("tag") if match else None


# ---------------------------------------------------------------------------- rules


def capability_problems(spec: Any) -> list[Problem]:
    """What ``spec`` (a ``ModelSpec``) asks for that its image cannot do; paths are the model's fields.

    EAGLE, LoRA and the two together are checked against ``LMI_IMAGES`` for LMI images; an LMI tag the
    table does not list is judged by its LMI version (EAGLE heads from LMI 17). A custom image's abilities
    are unknown, so only LoRA with EAGLE is refused (no vLLM release serves both). Stateful sessions are
    checked by ``SessionFrontDoor``, which warns about images that predate them.
    """
    if spec.eagle is None:
        return []
    tag = tag_of(spec.image)
    image = lmi_image(tag) or _derived(tag)
    problems: list[Problem] = []
    if image is None:
        if spec.lora is not None:
            problems.append(_lora_and_eagle(spec, f"{spec.image} (a custom image: capabilities unknown)"))
        return problems
    what = f"{spec.image} ({image.tag}, vLLM {image.vllm})"
    if not image.speculative_decoding:
        problems.append(
            Problem(
                "eagle",
                "set",
                f"an image that serves EAGLE heads (OPTION_SPECULATIVE_CONFIG, from LMI 17); {what} does not",
                "use image: lmi (the default) or remove eagle",
            )
        )
    elif spec.lora is not None and not image.lora_with_speculative_decoding:
        problems.append(_lora_and_eagle(spec, what))
    return problems


def _derived(tag: str | None) -> LmiImage | None:
    """Capabilities of an LMI tag the table does not list, from its LMI version; None when not an LMI tag."""
    major = _lmi_major(tag) if tag else None
    if tag is None or major is None:
        return None
    return LmiImage(
        tag,
        vllm="unknown",
        cuda=cuda_of_tag(tag) or "unknown",
        lora=True,
        stateful_sessions=major >= 16,
        speculative_decoding=major >= 17,
        lora_with_speculative_decoding=False,
        required_ami=required_ami_of_tag(tag),
    )


def lora_with_speculative_problem(spec: Any, field: str = "component.spec.lora") -> Problem | None:
    """A problem when ``spec`` has LoRA and its image cannot also serve a draft head (for constructs that add
    speculative decoding to a model whose own ``eagle`` is not set)."""
    if spec.lora is None:
        return None
    tag = tag_of(spec.image)
    image = lmi_image(tag) or _derived(tag)
    if image is not None and image.lora_with_speculative_decoding:
        return None
    what = f"{spec.image} ({image.tag}, vLLM {image.vllm})" if image else f"{spec.image} (capabilities unknown)"
    problem = _lora_and_eagle(spec, what)
    return Problem(
        field,
        "set",
        problem.allowed.replace("eagle on a model without lora", "a model without lora for speculative decoding"),
        problem.fix,
    )


def _lora_and_eagle(spec: Any, what: str) -> Problem:
    return Problem(
        "eagle",
        "set together with lora",
        f"eagle on a model without lora: {what} cannot serve LoRA adapters and speculative decoding on one "
        "model (vLLM's feature matrix marks LoRA with speculative decoding unsupported), so the promoted "
        "head would fail to load",
        f"keep eagle on {spec.name} and move lora and the adapters to a second model on the same weights "
        "(e.g. name: " + f"{spec.name[:58]}-lora), or remove eagle from this model",
    )


def ami_problems(images: list[tuple[str, str]], ami: str | None) -> list[Problem]:
    """Problems of an endpoint whose models run ``images`` ((field path, image) pairs) on ``ami``.

    ``ami`` None means the AMI the images need is used (see ``required_ami``); an explicit AMI must be the
    one every CUDA 13 image needs.
    """
    problems = []
    for field, image in images:
        tag = tag_of(image)
        needed = required_ami_of_tag(tag) if tag else None
        if needed is not None and ami is not None and ami != needed:
            problems.append(
                Problem(
                    "inference_ami_version",
                    ami,
                    f"{needed} for {field} ({image}, tag {tag}): a CUDA {cuda_of_tag(tag or '')} image "
                    f"needs its driver; {ami} has CUDA {AMI_CUDA.get(ami, 'unknown')}",
                    f"set inference_ami_version: {needed}, leave it out (then it is {needed}), or "
                    "choose an image built for the AMI's CUDA",
                )
            )
    return problems


def required_ami(images: list[str]) -> str | None:
    """The InferenceAmiVersion the endpoint needs for ``images``, or None when SageMaker's default serves them."""
    needed = {required_ami_of_tag(tag) for tag in (tag_of(image) for image in images) if tag}
    needed.discard(None)
    return next(iter(needed)) if len(needed) == 1 else None


# --------------------------------------------------------------------- accounts per region


# One table of each, shared with preflight (regions.py is pure data, importable without CDK).
DLC_ACCOUNTS: dict[str, str] = dict(regions.DLC_ACCOUNTS)
"""AWS Deep Learning Containers registry account per region (``regions.DLC_ACCOUNTS``)."""

POWERTOOLS_LAYER_ACCOUNTS: dict[str, str] = dict(regions.POWERTOOLS_ACCOUNTS)
"""Account that publishes the Powertools for AWS Lambda (Python) layer, per partition
(``regions.POWERTOOLS_ACCOUNTS``). Powertools does not publish the pinned layer under a documented account in aws-cn
or aws-us-gov, so those are refused."""
