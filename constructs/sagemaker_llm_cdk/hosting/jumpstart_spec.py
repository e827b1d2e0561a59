"""Reading JumpStart's published spec of a model into a lock entry (what ``make jumpstart-lock`` runs).

``fetch_model`` reads ``models_manifest.json`` and the model's spec JSON from JumpStart's public content
bucket of a region; ``model_from_spec`` turns a spec into a ``JumpStartModel`` the way the SageMaker
Python SDK deploys it: its default inference config applied (``default_config``), the image, artifacts,
environment and licence resolved into their buckets, and its speculative-decoding source, if any, as the
entry's pre-trained head (``head_from_spec``). A spec that lacks something serving needs is a ``SpecError``.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .jumpstart_entries import FROM_JUMPSTART, JumpStartModel, Licence, LockSource, PretrainedHead

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
