"""JumpStart models by id and version, resolved offline from a committed lock file.

``python -m sagemaker_llm_cdk.hosting.jumpstart lock --model-id ID --version V --region R`` (``make jumpstart-lock``)
reads JumpStart's published manifest once (the public content bucket ``jumpstart-cache-prod-<region>``:
``models_manifest.json`` and the model's spec JSON it points to, credentials needed) and writes what
serving needs into ``config/jumpstart.lock.yaml``: per region, per model id and version, the container
image, the artifacts, the container environment, accelerators and memory, and the licence a person must
accept. Synth reads only that file, so a JumpStart upgrade shows in a pull request as a lock-file diff.

Pre-trained heads: where the model's spec publishes a speculative-decoding source
(``hosting_additional_data_sources.speculative_decoding``, at the top level or in the spec's default
inference config, e.g. ``lmi-optimized``), the lock records it as ``pretrained_head``: channel, artifact
version, the S3 location resolved into its bucket (``provider`` JumpStart gated -> the private bucket,
JumpStart ungated -> the content bucket, none -> SageMaker's draft-model bucket
``sagemaker-sd-models-prod-<region>``, as the SageMaker Python SDK resolves it), its own licence when
gated, and ``kind``: ``eagle`` when the channel or key names EAGLE (served through
``OPTION_SPECULATIVE_CONFIG``), else ``draft_model`` (a separate small LLM, recorded, never served as
an EAGLE head). See ``pretrained_head``.

Provenance: every entry records its ``source``: ``jumpstart`` (the region, bucket and spec key it was read
from, the date and a sha256 digest of the spec) or ``fixture`` (written from a test fixture, or with no
source recorded). A fixture entry serves tests and synth, but the stack that uses it carries a template
rule that fails any deploy (``cdk deploy`` or ``make deploy``) with the command that refreshes the entry
from JumpStart, and preflight reports it as a blocker: its image, artifacts or head may not exist.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import hashlib
import json
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import yaml

from ..core.errors import ConfigurationError, Problem

LOCK_FILE_NAME = "jumpstart.lock.yaml"
LOCK_VERSION = 1
MANIFEST_KEY = "models_manifest.json"
"""``JUMPSTART_DEFAULT_MANIFEST_FILE_S3_KEY`` of the SageMaker Python SDK."""


def content_bucket(region: str) -> str:
    """JumpStart's public content bucket of ``region`` (the SDK's ``get_jumpstart_content_bucket``)."""
    return f"jumpstart-cache-prod-{region}"


def gated_bucket(region: str) -> str:
    """Where JumpStart keeps the artifacts of gated models (``get_jumpstart_gated_content_bucket``)."""
    return f"jumpstart-private-cache-prod-{region}"


def draft_model_bucket(region: str) -> str:
    """Where SageMaker keeps the draft models it provides (the SDK's ``neo_content_bucket``)."""
    return f"sagemaker-sd-models-prod-{region}"


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


class JumpStartLock:
    """The parsed lock file: ``regions.<region>.<model id>.<version>`` -> ``JumpStartModel``."""

    def __init__(self, entries: Mapping[tuple[str, str, str], JumpStartModel], *, path: str = LOCK_FILE_NAME) -> None:
        self.entries = dict(entries)
        self.path = path

    # ------------------------------------------------------------------ reading
    @classmethod
    def load(cls, path: str | Path) -> JumpStartLock:
        """Read a lock file; a missing file is an empty lock (every lookup then says how to write it)."""
        path = Path(path)
        if not path.exists():
            return cls({}, path=str(path))
        try:
            data = (
                yaml.load(
                    path.read_text(encoding="utf-8"),  # noqa: S506 - a safe loader (libyaml's when present)
                    Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader),
                )
                or {}
            )
        except yaml.YAMLError as error:
            raise ConfigurationError(
                [
                    Problem(
                        "",
                        str(error).splitlines()[0],
                        "a lock file written by `make jumpstart-lock`",
                        f"restore {path} from git or write it again",
                    )
                ],
                source=str(path),
            ) from None
        return cls.parse(data, path=str(path))

    @classmethod
    def parse(cls, data: Any, *, path: str = LOCK_FILE_NAME) -> JumpStartLock:
        problems: list[Problem] = []
        entries: dict[tuple[str, str, str], JumpStartModel] = {}
        if not isinstance(data, dict) or data.get("lock_version") != LOCK_VERSION:
            raise ConfigurationError(
                [
                    Problem(
                        "lock_version",
                        data.get("lock_version") if isinstance(data, dict) else data,
                        f"{LOCK_VERSION}",
                        "write the lock again with " + lock_command(),
                    )
                ],
                source=path,
            )
        regions = data.get("regions") or {}
        if not isinstance(regions, dict):
            raise ConfigurationError(
                [
                    Problem(
                        "regions",
                        regions,
                        "a mapping region -> model id -> version -> entry",
                        "write the lock again with " + lock_command(),
                    )
                ],
                source=path,
            )
        for region, models in regions.items():
            if not isinstance(models, dict):
                problems.append(
                    Problem(
                        f"regions.{region}",
                        models,
                        "a mapping model id -> version -> entry",
                        "write the lock again with " + lock_command(region=str(region)),
                    )
                )
                continue
            for model_id, versions in models.items():
                if not isinstance(versions, dict):
                    problems.append(
                        Problem(
                            f"regions.{region}.{model_id}",
                            versions,
                            "a mapping version -> entry",
                            "write the lock again with " + lock_command(model_id, region=str(region)),
                        )
                    )
                    continue
                for version, entry in versions.items():
                    where = f"regions.{region}.{model_id}.{version}"
                    head = None
                    if isinstance(entry, dict) and entry.get("pretrained_head") is not None:
                        head, head_problems = PretrainedHead.from_lock(
                            entry["pretrained_head"],
                            f"{where}.pretrained_head",
                            "write it again: " + lock_command(str(model_id), str(version), str(region)),
                        )
                        if head_problems:
                            problems.extend(head_problems)
                            continue
                    source, source_problems = LockSource.from_lock(
                        entry.get("source") if isinstance(entry, dict) else None,
                        f"{where}.source",
                        "write it again: " + lock_command(str(model_id), str(version), str(region)),
                    )
                    if source_problems:
                        problems.extend(source_problems)
                        continue
                    try:
                        licence = entry.get("licence")
                        entries[(str(region), str(model_id), str(version))] = JumpStartModel(
                            model_id=str(model_id),
                            version=str(version),
                            region=str(region),
                            image_uri=str(entry["image_uri"]),
                            artifact_s3_uri=str(entry["artifact_s3_uri"]),
                            environment={str(k): str(v) for k, v in (entry.get("environment") or {}).items()},
                            accelerators=entry.get("accelerators"),
                            min_memory_mb=entry.get("min_memory_mb"),
                            default_instance_type=entry.get("default_instance_type"),
                            supported_instance_types=tuple(entry.get("supported_instance_types") or ()),
                            licence=Licence(str(licence["name"]), str(licence["url"])) if licence else None,
                            pretrained_head=head,
                            inference_config=entry.get("inference_config"),
                            source=source,
                        )
                    except (KeyError, TypeError, AttributeError) as error:
                        problems.append(
                            Problem(
                                where,
                                entry,
                                "image_uri, artifact_s3_uri, environment, licence",
                                f"write it again: {lock_command(model_id, version, region)} ({error})",
                            )
                        )
        if problems:
            raise ConfigurationError(problems, source=path)
        return cls(entries, path=path)

    def find(self, model_id: str, version: str, region: str) -> JumpStartModel | None:
        return self.entries.get((region, model_id, version))

    def problem(self, field_path: str, model_id: str, version: str, region: str | None) -> Problem | None:
        """None when the lock holds ``model_id`` ``version`` in ``region``, else the one clear problem."""
        command = lock_command(model_id, version, region or "<region>")
        if region is None:
            held = sorted({r for r, m, _ in self.entries if m == model_id})
            return Problem(
                field_path,
                f"{model_id} {version}",
                "a JumpStart model in a stack bound to a region (its "
                "image and artifacts are per region); " + self._holds(model_id),
                "set target.region in the config (or env=Environment(region=...) on the stack)"
                + (f", one of {', '.join(held)}" if held else f", then run {command}"),
            )
        if self.find(model_id, version, region) is not None:
            return None
        return Problem(
            field_path,
            f"{model_id} {version} in {region}",
            f"a model id, version and region that {self.path} holds; " + self._holds(model_id),
            f"run {command} and commit {self.path}",
        )

    def _holds(self, model_id: str) -> str:
        held = sorted(f"{m} {v} in {r}" for r, m, v in self.entries if m == model_id)
        if held:
            return "it holds " + ", ".join(held)
        ids = sorted({m for _, m, _ in self.entries})
        return "it holds no version of this id" + (f" (ids held: {', '.join(ids)})" if ids else " (it is empty)")

    # ------------------------------------------------------------------ writing
    def with_entry(self, model: JumpStartModel) -> JumpStartLock:
        entries = dict(self.entries)
        entries[(model.region, model.model_id, model.version)] = model
        return JumpStartLock(entries, path=self.path)

    def dump(self, header: str = "") -> str:
        regions: dict[str, dict[str, dict[str, Any]]] = {}
        for (region, model_id, version), model in sorted(self.entries.items()):
            regions.setdefault(region, {}).setdefault(model_id, {})[version] = model.to_lock()
        head = header or (
            "# Written by `make jumpstart-lock` from JumpStart's published manifest; do not edit by hand.\n"
            "# Synth reads only this file: a JumpStart upgrade is a diff here.\n"
        )
        return head + yaml.safe_dump(
            {"lock_version": LOCK_VERSION, "regions": regions}, sort_keys=True, default_flow_style=False
        )


DEPLOY_RULE_PREFIX = "JumpStartLockNotFromJumpStart"
"""Logical ids of the template rules that refuse a deploy of a fixture entry (preflight reads them)."""


def find_lock(start: str | Path) -> Path:
    """The lock file in ``start`` or the nearest folder above it that has one (like a package manager's lock);
    ``start/jumpstart.lock.yaml`` when none has."""
    start = Path(start).resolve()
    for folder in (start, *start.parents):
        candidate = folder / LOCK_FILE_NAME
        if candidate.exists():
            return candidate
    return start / LOCK_FILE_NAME


# ---------------------------------------------------------------------- spec -> lock entry
class SpecError(ValueError):
    """JumpStart's spec of a model lacks something serving needs."""


def model_from_spec(spec: Mapping[str, Any], *, region: str) -> JumpStartModel:
    """The lock entry of one JumpStart model spec (the JSON ``models_manifest.json`` points to) in ``region``.

    Image: ``hosting_ecr_uri``, else the default instance type's variant in ``hosting_instance_type_variants``
    (``regional_aliases`` resolved). Artifacts: ``hosting_prepacked_artifact_key`` (uncompressed, ready to
    serve), else ``hosting_artifact_key``, in the gated bucket when ``gated_bucket`` is true. Environment:
    the ``inference_environment_variables`` of scope ``container``. A spec with ``hosting_eula_key`` is gated.
    A spec with ``inference_configs`` is read through its default (top-ranked) config, as the SageMaker Python
    SDK deploys it; its speculative-decoding source, if any, becomes ``pretrained_head``.
    """
    spec, config_name = default_config(spec)
    model_id, version = str(spec.get("model_id", "")), str(spec.get("version", ""))
    image = spec.get("hosting_ecr_uri") or _variant_image(spec, region)
    if not image:
        raise SpecError(
            f"{model_id} {version}: the spec names no hosting image for {region} (no hosting_ecr_uri "
            "and no hosting_instance_type_variants image; hosting_ecr_specs alone is not resolved)"
        )
    key = spec.get("hosting_prepacked_artifact_key") or spec.get("hosting_artifact_key")
    if not key:
        raise SpecError(f"{model_id} {version}: the spec has no hosting_artifact_key")
    bucket = gated_bucket(region) if spec.get("gated_bucket") else content_bucket(region)
    environment = {
        str(v["name"]): str(v["default"])
        for v in spec.get("inference_environment_variables") or []
        if v.get("scope", "container") == "container" and "default" in v
    }
    needs = spec.get("hosting_resource_requirements") or {}
    eula = spec.get("hosting_eula_key")
    licence = None
    if eula:
        url = f"https://{content_bucket(region)}.s3.{region}.amazonaws.com/{eula}"
        licence = Licence(name=Path(str(eula)).stem, url=url)
    return JumpStartModel(
        model_id=model_id,
        version=version,
        region=region,
        image_uri=str(image),
        artifact_s3_uri=f"s3://{bucket}/{key}",
        environment=environment,
        accelerators=needs.get("num_accelerators"),
        min_memory_mb=needs.get("min_memory_mb"),
        default_instance_type=spec.get("default_inference_instance_type"),
        supported_instance_types=tuple(spec.get("supported_inference_instance_types") or ()),
        licence=licence,
        pretrained_head=head_from_spec(spec, region=region),
        inference_config=config_name,
    )


#: Spec fields an inference config component may not override (the SDK's ``OVERRIDING_DENY_LIST``).
_DENY_OVERRIDE = frozenset(
    {
        "model_id",
        "url",
        "version",
        "min_sdk_version",
        "deprecated",
        "deprecated_message",
        "deprecate_warn_message",
        "resource_name_base",
        "gated_bucket",
        "training_supported",
        "incremental_training_supported",
    }
)


def default_config(spec: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """``spec`` with its default inference config applied (``inference_config_rankings.overall`` first, else the
    first config by name), and that config's name; the spec unchanged and None when it has no configs."""
    configs = spec.get("inference_configs") or {}
    if not isinstance(configs, dict) or not configs:
        return dict(spec), None
    rankings = ((spec.get("inference_config_rankings") or {}).get("overall") or {}).get("rankings") or sorted(configs)
    name = next((str(n) for n in rankings if n in configs), sorted(configs)[0])
    components = spec.get("inference_config_components") or {}
    resolved = copy.deepcopy(dict(spec))
    for component in (configs[name] or {}).get("component_names") or [name]:
        if component not in components:
            raise SpecError(
                f"{spec.get('model_id')} {spec.get('version')}: inference config {name} names component "
                f"{component}, which inference_config_components does not have"
            )
        _override(resolved, components[component] or {})
    return resolved, name


def _override(base: dict[str, Any], update: Mapping[str, Any]) -> None:
    for key, value in update.items():
        if key in _DENY_OVERRIDE:
            continue
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merged = dict(base[key])
            _override(merged, value)
            base[key] = merged
        else:
            base[key] = copy.deepcopy(value)


def head_from_spec(spec: Mapping[str, Any], *, region: str) -> PretrainedHead | None:
    """The first ``hosting_additional_data_sources.speculative_decoding`` source of a (resolved) spec, its key
    resolved into the bucket its ``provider`` names; None when the spec publishes none."""
    sources = (spec.get("hosting_additional_data_sources") or {}).get("speculative_decoding") or []
    if not sources:
        return None
    source = sources[0]
    what = f"{spec.get('model_id')} {spec.get('version')}: hosting_additional_data_sources.speculative_decoding[0]"
    data = source.get("s3_data_source") if isinstance(source, dict) else None
    if not isinstance(data, dict) or not data.get("s3_uri") or not source.get("channel_name"):
        raise SpecError(f"{what} has no channel_name or s3_data_source.s3_uri: {source!r}")
    provider = source.get("provider") or {}
    eula = source.get("hosting_eula_key") or data.get("hosting_eula_key")
    gated = str(provider.get("classification", "")).lower() == "gated" or bool(eula)
    if str(provider.get("name", "")).lower() == "jumpstart":
        bucket = gated_bucket(region) if gated else content_bucket(region)
    else:
        bucket = draft_model_bucket(region)
    key = str(data["s3_uri"])
    uri = key if key.startswith("s3://") else f"s3://{bucket}/{key.lstrip('/')}"
    data_type = str(data.get("s3_data_type") or "S3Prefix")
    compression = str(data.get("compression_type") or "None")
    if data_type == "S3Prefix" and not uri.endswith("/"):
        uri += "/"
    licence = None
    if eula:
        licence = Licence(
            name=Path(str(eula)).stem, url=f"https://{content_bucket(region)}.s3.{region}.amazonaws.com/{eula}"
        )
    channel = str(source["channel_name"])
    kind = "eagle" if "eagle" in f"{channel} {key}".lower() else "draft_model"
    version = source.get("artifact_version")
    return PretrainedHead(
        channel_name=channel,
        s3_uri=uri,
        s3_data_type=data_type,
        compression_type=compression,
        artifact_version=str(version) if version is not None else None,
        kind=kind,
        licence=licence,
    )


def _variant_image(spec: Mapping[str, Any], region: str) -> str | None:
    variants = spec.get("hosting_instance_type_variants") or {}
    aliases = (variants.get("regional_aliases") or {}).get(region) or {}
    instance = str(spec.get("default_inference_instance_type") or "")
    family = instance.split(".")[1] if instance.count(".") == 2 else ""
    by_type = variants.get("variants") or {}
    for name in (instance, family):
        image = ((by_type.get(name) or {}).get("regional_properties") or {}).get("image_uri")
        if image:
            return str(aliases.get(image[1:], "")) if image.startswith("$") else str(image)
    return None


def fetch_model(s3: Any, *, model_id: str, version: str, region: str) -> JumpStartModel:
    """Read ``models_manifest.json`` and the model's spec from JumpStart's bucket of ``region``."""
    bucket = content_bucket(region)
    manifest = json.loads(s3.get_object(Bucket=bucket, Key=MANIFEST_KEY)["Body"].read())
    matches = [m for m in manifest if m.get("model_id") == model_id and m.get("version") == version]
    if not matches:
        versions = sorted(m.get("version", "") for m in manifest if m.get("model_id") == model_id)
        raise SpecError(
            f"{model_id} {version} is not in s3://{bucket}/{MANIFEST_KEY}; "
            + (f"published versions: {', '.join(versions)}" if versions else "no such model id")
        )
    key = matches[0]["spec_key"]
    raw = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    model = model_from_spec(json.loads(raw), region=region)
    source = LockSource(
        kind=FROM_JUMPSTART,
        region=region,
        bucket=bucket,
        key=key,
        read_on=datetime.now(UTC).date().isoformat(),
        digest="sha256:" + hashlib.sha256(raw).hexdigest(),
    )
    return dataclasses.replace(model, source=source)


def main(argv: list[str] | None = None, *, s3: Any = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sagemaker_llm_cdk.hosting.jumpstart")
    sub = parser.add_subparsers(dest="command", required=True)
    lock = sub.add_parser("lock", help="add or refresh one model id and version in the lock file")
    lock.add_argument("--model-id", required=True)
    lock.add_argument("--version", required=True)
    lock.add_argument("--region", required=True)
    lock.add_argument("--lock-file", default=f"config/{LOCK_FILE_NAME}")
    args = parser.parse_args(argv)
    if s3 is None:
        import boto3

        s3 = boto3.client("s3", region_name=args.region)
    try:
        model = fetch_model(s3, model_id=args.model_id, version=args.version, region=args.region)
    except SpecError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    path = Path(args.lock_file)
    current = JumpStartLock.load(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(current.with_entry(model).dump(), encoding="utf-8")
    gated = f"; gated: licence {model.licence.name} {model.licence.url}" if model.licence else ""
    print(f"locked {model.model_id} {model.version} in {model.region}: {model.image_uri}{gated}", file=sys.stderr)
    head = model.pretrained_head
    if head is not None:
        head_gated = f", gated: licence {head.licence.name} {head.licence.url}" if head.licence else ""
        print(
            f"  pre-trained {head.kind} draft: {head.s3_uri} (channel {head.channel_name}{head_gated})", file=sys.stderr
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())


# ---------------------------------------------------------------------- resolving a ModelSpec
def spec_problems(
    model_id: str, version: str, accept_eula: bool, lock: JumpStartLock, region: str | None, *, path: str = ""
) -> list[Problem]:
    """Problems of one ``source: jumpstart`` model against the lock: not held, or gated and not accepted."""

    def at(name: str) -> str:
        return f"{path}.{name}" if path else name

    problem = lock.problem(at("model_id"), model_id, version, region)
    if problem is not None:
        return [problem]
    assert region is not None
    model = lock.find(model_id, version, region)
    assert model is not None
    if model.licence is not None and accept_eula is not True:
        return [
            Problem(
                at("accept_eula"),
                accept_eula,
                f"true: {model_id} is gated; its licence {model.licence.name} ({model.licence.url}) must be "
                "accepted by a person before SageMaker serves or optimizes it",
                "read the licence, then set accept_eula: true on this model",
            )
        ]
    return []


def resolve(spec: Any, lock: JumpStartLock, region: str | None, *, where: str) -> tuple[Any, JumpStartModel]:
    """``spec`` (a ``ModelSpec`` with ``source: jumpstart``) with image, artifacts, environment, accelerators and
    memory from the lock; what the user set in ``environment``, ``accelerators`` and ``min_memory_mb`` wins.

    Raises one ``ConfigurationError`` when the lock does not hold it or its licence is not accepted."""
    from ..core.settings import _VALIDATED, was_validated

    problems = spec_problems(spec.model_id, spec.version, spec.accept_eula, lock, region)
    if problems:
        raise ConfigurationError(problems, source=where)
    assert region is not None
    model = lock.find(spec.model_id, spec.version, region)
    assert model is not None
    given = spec.model_fields_set
    update: dict[str, Any] = {
        "image": model.image_uri,
        "model_data_s3_uri": model.artifact_s3_uri,
        "environment": {**model.environment, **spec.environment},
    }
    if "accelerators" not in given and model.accelerators is not None:
        update["accelerators"] = model.accelerators
    if "min_memory_mb" not in given and model.min_memory_mb is not None:
        update["min_memory_mb"] = model.min_memory_mb
    resolved = spec.model_copy(update=update)
    from ..core.settings import s3_uri_problem
    from ..settings import images
    from ..settings.hosting import _image_problem

    checks = [
        p
        for p in (_image_problem(model.image_uri), s3_uri_problem("", model.artifact_s3_uri, want="prefix"))
        if p is not None
    ]
    checks = [
        Problem(
            f"model_id ({lock.path} image_uri/artifact_s3_uri)",
            p.value,
            p.allowed,
            f"write the lock again: {lock_command(spec.model_id, spec.version, region)}",
        )
        for p in checks
    ]
    checks.extend(images.capability_problems(resolved))
    if checks:
        raise ConfigurationError(checks, source=where)
    if was_validated(spec):
        _VALIDATED[id(resolved)] = resolved  # every rule held for spec; the lock's values were checked just above
    return resolved, model
