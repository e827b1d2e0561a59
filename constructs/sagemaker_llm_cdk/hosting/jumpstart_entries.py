"""One entry of the JumpStart lock file: a model id and version in one region, as serving needs it.

``JumpStartModel`` holds the container image, the artifacts, the container environment, accelerators and
memory, the licence a person must accept (``Licence``), the speculative-decoding draft JumpStart publishes
for it (``PretrainedHead``) and where the entry came from (``LockSource``: read from JumpStart, or written
from a fixture, which no deploy may use). Each reads itself from the lock (``from_lock``, with every
problem of a malformed entry) and writes itself back (``to_lock``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..core.errors import Problem


def lock_command(model_id: str = "<model id>", version: str = "<version>", region: str = "<region>") -> str:
    return f"make jumpstart-lock MODEL={model_id} VERSION={version} REGION={region}"


FROM_JUMPSTART: Literal["jumpstart"] = "jumpstart"
FROM_FIXTURE: Literal["fixture"] = "fixture"


@dataclass(frozen=True)
class LockSource:
    """Where a lock entry came from: read from JumpStart (``jumpstart``) or written from a fixture (``fixture``)."""

    kind: Literal["jumpstart", "fixture"] = FROM_FIXTURE
    region: str | None = None
    bucket: str | None = None
    key: str | None = None
    """The spec JSON's key in ``bucket`` (``jumpstart``)."""
    read_on: str | None = None
    """The UTC date it was read (``jumpstart``)."""
    digest: str | None = None
    """``sha256:<hex>`` of the spec JSON as read (``jumpstart``)."""
    path: str | None = None
    """The fixture it was written from (``fixture``); None when the entry recorded no source."""

    @property
    def from_jumpstart(self) -> bool:
        return self.kind == FROM_JUMPSTART

    def describe(self) -> str:
        if self.from_jumpstart:
            return f"read from s3://{self.bucket}/{self.key} on {self.read_on} ({self.digest})"
        return f"written from the fixture {self.path}" if self.path else "with no source recorded"

    def to_lock(self) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    @classmethod
    def from_lock(cls, entry: Any, where: str, fix: str) -> tuple[LockSource, list[Problem]]:
        """The source of a lock entry (none recorded: a fixture), or the problems of a malformed one."""
        if entry is None:
            return cls(), []
        if not isinstance(entry, dict):
            return cls(), [Problem(where, entry, "a mapping with kind jumpstart or fixture", fix)]
        kind = entry.get("kind")
        unknown = sorted(set(entry) - {f.name for f in dataclasses.fields(cls)})
        problems = []
        if kind not in (FROM_JUMPSTART, FROM_FIXTURE):
            problems.append(Problem(f"{where}.kind", kind, "jumpstart or fixture", fix))
        if unknown:
            problems.append(Problem(where, ", ".join(unknown), "kind, region, bucket, key, read_on, digest, path", fix))
        if kind == FROM_JUMPSTART:
            missing = [name for name in ("region", "bucket", "key", "read_on", "digest") if not entry.get(name)]
            if missing:
                problems.append(Problem(where, entry, f"a jumpstart source with {', '.join(missing)}", fix))
            elif not re.fullmatch(r"sha256:[0-9a-f]{64}", str(entry["digest"])):
                problems.append(Problem(f"{where}.digest", entry["digest"], "sha256:<64 hex digits>", fix))
        if problems:
            return cls(), problems
        return cls(**{k: str(v) for k, v in entry.items()}), []  # type: ignore[arg-type]


@dataclass(frozen=True)
class Licence:
    """The end-user licence a gated model needs accepted (``accept_eula: true``)."""

    name: str
    url: str


HEAD_KINDS = ("eagle", "draft_model")
_CHANNEL = re.compile(r"^[A-Za-z0-9.\-_]{1,64}$")


@dataclass(frozen=True)
class PretrainedHead:
    """A speculative-decoding draft JumpStart publishes for a model (``pretrained_head`` in the lock)."""

    channel_name: str
    s3_uri: str
    s3_data_type: str = "S3Prefix"
    compression_type: str = "None"
    artifact_version: str | None = None
    kind: str = "eagle"
    """``eagle`` (an EAGLE head, served through OPTION_SPECULATIVE_CONFIG) or ``draft_model`` (a small LLM)."""
    licence: Licence | None = None
    """Its own licence when JumpStart gates it (``ModelAccessConfig.AcceptEula`` on its channel)."""

    @property
    def gated(self) -> bool:
        return self.licence is not None or self.s3_uri.startswith("s3://jumpstart-private-cache-prod-")

    def to_lock(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "channel_name": self.channel_name,
            "s3_uri": self.s3_uri,
            "s3_data_type": self.s3_data_type,
            "compression_type": self.compression_type,
            "kind": self.kind,
        }
        if self.artifact_version:
            entry["artifact_version"] = self.artifact_version
        entry["licence"] = {"name": self.licence.name, "url": self.licence.url} if self.licence else None
        return entry

    @classmethod
    def from_lock(cls, entry: Any, where: str, fix: str) -> tuple[PretrainedHead | None, list[Problem]]:
        """The head of a lock entry, or every problem of a malformed one (field, value, what is allowed)."""
        if not isinstance(entry, dict):
            return None, [
                Problem(
                    where,
                    entry,
                    "a mapping with channel_name, s3_uri, s3_data_type, compression_type, "
                    "kind, licence (or null: JumpStart publishes no head)",
                    fix,
                )
            ]
        problems: list[Problem] = []
        checks: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
            (
                "channel_name",
                lambda v: isinstance(v, str) and _CHANNEL.match(v) is not None,
                "1-64 letters, digits, '.', '-', '_' (AdditionalModelDataSource.ChannelName)",
            ),
            (
                "s3_uri",
                lambda v: isinstance(v, str) and re.match(r"^s3://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]/.+", v) is not None,
                "an s3://bucket/key URI",
            ),
            ("s3_data_type", lambda v: v in ("S3Prefix", "S3Object"), "S3Prefix or S3Object"),
            ("compression_type", lambda v: v in ("None", "Gzip"), "None or Gzip"),
            ("kind", lambda v: v in HEAD_KINDS, " or ".join(HEAD_KINDS)),
        )
        for name, ok, allowed in checks:
            if not ok(entry.get(name)):
                problems.append(Problem(f"{where}.{name}", entry.get(name, "<missing>"), allowed, fix))
        if (
            entry.get("s3_data_type") == "S3Prefix"
            and isinstance(entry.get("s3_uri"), str)
            and not entry["s3_uri"].endswith("/")
        ):
            problems.append(Problem(f"{where}.s3_uri", entry["s3_uri"], "a prefix ending in '/' with S3Prefix", fix))
        licence = entry.get("licence")
        if licence is not None and not (
            isinstance(licence, dict) and isinstance(licence.get("name"), str) and isinstance(licence.get("url"), str)
        ):
            problems.append(Problem(f"{where}.licence", licence, "null or {name, url}", fix))
        version = entry.get("artifact_version")
        if version is not None and not isinstance(version, (str, int, float)):
            problems.append(Problem(f"{where}.artifact_version", version, "a version string", fix))
        if problems:
            return None, problems
        return cls(
            channel_name=entry["channel_name"],
            s3_uri=entry["s3_uri"],
            s3_data_type=entry["s3_data_type"],
            compression_type=entry["compression_type"],
            kind=entry["kind"],
            artifact_version=str(version) if version is not None else None,
            licence=Licence(licence["name"], licence["url"]) if licence else None,
        ), []


@dataclass(frozen=True)
class JumpStartModel:
    """What the lock holds for one model id and version in one region."""

    model_id: str
    version: str
    region: str
    image_uri: str
    artifact_s3_uri: str
    environment: Mapping[str, str] = field(default_factory=dict)
    accelerators: int | None = None
    min_memory_mb: int | None = None
    default_instance_type: str | None = None
    supported_instance_types: tuple[str, ...] = ()
    licence: Licence | None = None
    pretrained_head: PretrainedHead | None = None
    """The speculative-decoding draft JumpStart publishes for the model, if any."""
    inference_config: str | None = None
    """The spec's default inference config the entry was resolved with (e.g. lmi-optimized), if it has configs."""
    source: LockSource = field(default_factory=LockSource)
    """Where the entry came from; only an entry read from JumpStart may be deployed."""

    def deploy_refusal(self) -> str | None:
        """Why a deploy must not use this entry (it does not come from JumpStart), or None."""
        if self.source.from_jumpstart:
            return None
        return (
            f"JumpStart lock entry {self.model_id} {self.version} in {self.region} was {self.source.describe()}, "
            "not read from JumpStart: its image, artifacts or pre-trained head may not exist. Run "
            f"{lock_command(self.model_id, self.version, self.region)} with AWS credentials, commit the lock file "
            "and deploy again."
        )

    @property
    def gated(self) -> bool:
        """Whether serving or optimizing it needs ``ModelAccessConfig.AcceptEula``."""
        return self.licence is not None

    def to_lock(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "image_uri": self.image_uri,
            "artifact_s3_uri": self.artifact_s3_uri,
            "environment": dict(self.environment),
        }
        if self.accelerators is not None:
            entry["accelerators"] = self.accelerators
        if self.min_memory_mb is not None:
            entry["min_memory_mb"] = self.min_memory_mb
        if self.default_instance_type:
            entry["default_instance_type"] = self.default_instance_type
        if self.supported_instance_types:
            entry["supported_instance_types"] = list(self.supported_instance_types)
        entry["licence"] = {"name": self.licence.name, "url": self.licence.url} if self.licence else None
        if self.inference_config:
            entry["inference_config"] = self.inference_config
        entry["pretrained_head"] = self.pretrained_head.to_lock() if self.pretrained_head else None
        entry["source"] = self.source.to_lock()
        return entry
