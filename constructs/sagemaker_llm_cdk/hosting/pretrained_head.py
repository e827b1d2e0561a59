"""A pre-trained EAGLE head served from day one: which head a model serves before any promotion.

JumpStart publishes speculative-decoding drafts for some models (``pretrained_head`` in the lock file,
see ``jumpstart``). When the served model's lock entry has an EAGLE head, ``ModelComponent`` serves it at
once through ``speculative_decoding.SpeculativeDecoding``: the same serving model (a custom resource with
the head as the additional model data channel ``eagle`` and ``OPTION_SPECULATIVE_CONFIG``) a promoted head
uses. An EAGLE loop on that model then changes only the *baseline*: while its promotion parameter holds
``none`` the endpoint serves the pre-trained head instead of no head, and its record function promotes a
trained head only when the trained head's measured speedup beats the pre-trained head's (see
``lambda/eagle_job``).

``ModelSpec.pretrained_head``: unset serves the head when it can be served and warns at synth when it cannot
(why, and how to fix it); ``true`` makes every obstacle an error; ``false`` never serves it. What is served is
printed at synth and recorded as construct info.

Training *from* the pre-trained head is not possible: ``CreateOptimizationJob``'s
``ModelSpeculativeDecodingConfig`` has only ``Technique`` and ``TrainingDataSource`` (botocore 1.44), no
initial draft model, so each job trains its head itself; only the promotion compares against it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.errors import ConfigurationError, Problem

if TYPE_CHECKING:
    from .jumpstart import JumpStartModel
    from .model_component import ModelComponent

WARNING_ID = "sagemaker-llm-cdk:pretrained-head"


@dataclass(frozen=True)
class PretrainedHead:
    """A draft head to serve before (and instead of) any promoted head.

    :param s3_uri: where the head is (``s3://bucket/prefix/`` or an object).
    :param s3_data_type: ``S3Prefix`` (default) or ``S3Object``.
    :param compression_type: ``None`` (default) or ``Gzip``.
    :param accept_eula: set ``ModelAccessConfig.AcceptEula`` on its channel (a gated head whose licence was
        accepted). Default: false.
    :param description: where it comes from, for messages (e.g. the JumpStart model id and version).
    :param speedup: its speedup over no speculative decoding, when known (``eagle.pretrained_head_speedup``).
    """

    s3_uri: str
    s3_data_type: str = "S3Prefix"
    compression_type: str = "None"
    accept_eula: bool = False
    description: str = ""
    speedup: float | None = None

    def problems(self, field: str = "pretrained_head") -> list[Problem]:
        from ..core.settings import _S3_URI

        found = []
        if not _S3_URI.match(self.s3_uri or ""):
            found.append(Problem(f"{field}.s3_uri", self.s3_uri, "an s3://bucket/key URI", "give the head's S3 URI"))
        if self.s3_data_type not in ("S3Prefix", "S3Object"):
            found.append(Problem(f"{field}.s3_data_type", self.s3_data_type, "S3Prefix or S3Object", "use S3Prefix"))
        elif self.s3_data_type == "S3Prefix" and not self.s3_uri.endswith("/"):
            found.append(
                Problem(
                    f"{field}.s3_uri",
                    self.s3_uri,
                    "a prefix ending in '/' with S3Prefix",
                    "add the trailing '/', or use S3Object",
                )
            )
        if self.compression_type not in ("None", "Gzip"):
            found.append(Problem(f"{field}.compression_type", self.compression_type, "None or Gzip", "use None"))
        if self.speedup is not None and not self.speedup >= 1.0:
            found.append(
                Problem(f"{field}.speedup", self.speedup, "a measured speedup >= 1", "leave it out if unknown")
            )
        return found

    def s3_data_source(self) -> dict[str, Any]:
        """The channel's ``S3DataSource`` (CreateModel ``AdditionalModelDataSource``)."""
        source: dict[str, Any] = {
            "S3Uri": self.s3_uri,
            "S3DataType": self.s3_data_type,
            "CompressionType": self.compression_type,
        }
        if self.accept_eula:
            source["ModelAccessConfig"] = {"AcceptEula": True}
        return source


def choose(
    component: ModelComponent, model: JumpStartModel, speedup: float | None = None
) -> tuple[PretrainedHead | None, str | None]:
    """The head ``component`` serves from day one (or None) and the synth message saying so, or why not.

    Raises one ``ConfigurationError`` listing every obstacle when ``spec.pretrained_head`` is true."""
    from ..settings.eagle import EAGLE_ARCHITECTURES
    from ..settings.images import lora_with_speculative_problem

    spec = component.spec
    where = f"{model.model_id} {model.version} in {model.region}"
    head = model.pretrained_head
    wanted = spec.pretrained_head
    if head is None:
        if wanted is True:
            raise ConfigurationError(
                [
                    Problem(
                        "pretrained_head",
                        True,
                        f"a model whose lock entry has a pre-trained head; JumpStart publishes none for {where}",
                        "remove pretrained_head (an EAGLE loop trains the first head), or "
                        "write the lock again if JumpStart has added one",
                    )
                ],
                source=component.node.path,
            )
        return None, None
    if wanted is False:
        return None, (
            f"pre-trained {head.kind} head of {where} not served (pretrained_head: false); "
            "the model serves no head until an EAGLE run is promoted"
        )
    obstacles: list[Problem] = []
    if head.kind != "eagle":
        obstacles.append(
            Problem(
                "pretrained_head",
                wanted,
                f"a pre-trained EAGLE head; JumpStart's draft for {where} "
                f"is a {head.kind} (a separate small model, channel {head.channel_name}), which the "
                "EAGLE serving path (OPTION_SPECULATIVE_CONFIG) does not serve",
                "set pretrained_head: false",
            )
        )
    if not spec.is_lmi:
        obstacles.append(
            Problem(
                "pretrained_head",
                wanted,
                f"an LMI image to serve the head; the lock gives {spec.image}",
                "set pretrained_head: false",
            )
        )
    if spec.architecture not in EAGLE_ARCHITECTURES:
        obstacles.append(
            Problem(
                "architecture",
                spec.architecture,
                "one of " + ", ".join(EAGLE_ARCHITECTURES) + " (it picks the head's vLLM method, eagle3 or eagle)",
                "copy 'architectures' from the model's config.json, or set pretrained_head: false",
            )
        )
    lora = lora_with_speculative_problem(spec, field="lora")
    if lora is not None:
        obstacles.append(Problem("lora", "set", lora.allowed, "remove lora, or set pretrained_head: false"))
    if head.gated and not spec.accept_eula:
        licence = f"its licence {head.licence.name} ({head.licence.url})" if head.licence else "its licence"
        obstacles.append(
            Problem(
                "accept_eula",
                spec.accept_eula,
                f"true: the pre-trained head of {where} is gated; {licence} must be accepted by a person",
                "read the licence, then set accept_eula: true, or set pretrained_head: false",
            )
        )
    if "OPTION_SPECULATIVE_CONFIG" in spec.environment:
        obstacles.append(
            Problem(
                "environment.OPTION_SPECULATIVE_CONFIG",
                spec.environment["OPTION_SPECULATIVE_CONFIG"],
                "nothing: the served head sets it",
                "remove it, or set pretrained_head: false",
            )
        )
    if obstacles:
        if wanted is True:
            raise ConfigurationError(obstacles, source=component.node.path)
        reasons = "; ".join(f"{p.path}: {p.allowed}" for p in obstacles)
        return None, f"pre-trained EAGLE head of {where} not served: {reasons} (set pretrained_head: false to silence)"
    served = PretrainedHead(
        s3_uri=head.s3_uri,
        s3_data_type=head.s3_data_type,
        compression_type=head.compression_type,
        accept_eula=head.gated,
        description=f"JumpStart {where}, channel {head.channel_name}"
        + (f" v{head.artifact_version}" if head.artifact_version else ""),
        speedup=speedup,
    )
    gated = (
        f"; gated: licence {head.licence.name} ({head.licence.url}) accepted by accept_eula: true"
        if head.licence
        else ""
    )
    return served, f"serving the pre-trained EAGLE head of {where} from day one: {head.s3_uri}{gated}"


def config_problems(model: dict[str, Any], locked: JumpStartModel | None, path: str) -> list[Problem]:
    """Problems of a raw config model (``source: jumpstart``) about its pre-trained head, with config paths, so
    they come with every other problem of the file: ``pretrained_head: true`` the lock cannot honour, and
    ``eagle.pretrained_head_speedup`` on a model that serves no pre-trained head."""
    from ..settings.eagle import EAGLE_ARCHITECTURES

    if locked is None:
        return []
    head = locked.pretrained_head
    wanted = model.get("pretrained_head")
    where = f"{locked.model_id} {locked.version} in {locked.region}"
    problems: list[Problem] = []
    if wanted is True:
        if head is None:
            problems.append(
                Problem(
                    f"{path}.pretrained_head",
                    True,
                    f"a model whose lock entry has a pre-trained head; JumpStart publishes none for {where}",
                    "remove pretrained_head",
                )
            )
        elif head.kind != "eagle":
            problems.append(
                Problem(
                    f"{path}.pretrained_head",
                    True,
                    f"an EAGLE head; JumpStart's draft for {where} is a {head.kind}",
                    "set pretrained_head: false",
                )
            )
        elif head.gated and model.get("accept_eula") is not True:
            problems.append(
                Problem(
                    f"{path}.accept_eula",
                    model.get("accept_eula", False),
                    f"true: the pre-trained head of {where} is gated"
                    + (f"; its licence {head.licence.name} ({head.licence.url})" if head.licence else ""),
                    "read the licence, then set accept_eula: true, or set pretrained_head: false",
                )
            )
        architecture = model.get("architecture")
        if head is not None and not (isinstance(architecture, str) and architecture in EAGLE_ARCHITECTURES):
            problems.append(
                Problem(
                    f"{path}.architecture",
                    model.get("architecture"),
                    "one of " + ", ".join(EAGLE_ARCHITECTURES) + " to serve the pre-trained head",
                    "copy 'architectures' from the model's config.json, or set pretrained_head: false",
                )
            )
    eagle = model.get("eagle")
    speedup = eagle.get("pretrained_head_speedup") if isinstance(eagle, dict) else None
    if speedup is not None and (wanted is False or head is None or head.kind != "eagle"):
        problems.append(
            Problem(
                f"{path}.eagle.pretrained_head_speedup",
                speedup,
                "only on a model that serves a pre-trained EAGLE head",
                "remove pretrained_head_speedup"
                + ("" if head is None else " or serve the head (pretrained_head not false)"),
            )
        )
    return problems
