"""JumpStart models by id and version, resolved offline from a committed lock file.

``python -m sagemaker_llm_cdk.hosting.jumpstart lock --model-id ID --version V --region R`` (``make jumpstart-lock``)
reads JumpStart's published manifest once (the public content bucket ``jumpstart-cache-prod-<region>``:
``models_manifest.json`` and the model's spec JSON it points to, credentials needed) and writes what
serving needs into ``config/jumpstart.lock.yaml``: per region, per model id and version, the container
image, the artifacts, the container environment, accelerators and memory, and the licence a person must
accept. Synth reads only that file, so a JumpStart upgrade shows in a pull request as a lock-file diff.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

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


def lock_command(model_id: str = "<model id>", version: str = "<version>", region: str = "<region>") -> str:
    return f"make jumpstart-lock MODEL={model_id} VERSION={version} REGION={region}"


@dataclass(frozen=True)
class Licence:
    """The end-user licence a gated model needs accepted (``accept_eula: true``)."""

    name: str
    url: str


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

    @property
    def gated(self) -> bool:
        """Whether serving or optimizing it needs ``ModelAccessConfig.AcceptEula``."""
        return self.licence is not None

    def to_lock(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"image_uri": self.image_uri, "artifact_s3_uri": self.artifact_s3_uri,
                                 "environment": dict(self.environment)}
        if self.accelerators is not None:
            entry["accelerators"] = self.accelerators
        if self.min_memory_mb is not None:
            entry["min_memory_mb"] = self.min_memory_mb
        if self.default_instance_type:
            entry["default_instance_type"] = self.default_instance_type
        if self.supported_instance_types:
            entry["supported_instance_types"] = list(self.supported_instance_types)
        entry["licence"] = {"name": self.licence.name, "url": self.licence.url} if self.licence else None
        return entry


class JumpStartLock:
    """The parsed lock file: ``regions.<region>.<model id>.<version>`` -> ``JumpStartModel``."""

    def __init__(self, entries: Mapping[tuple[str, str, str], JumpStartModel], *, path: str = LOCK_FILE_NAME) -> None:
        self.entries = dict(entries)
        self.path = path

    # ------------------------------------------------------------------ reading
    @classmethod
    def load(cls, path: str | Path) -> "JumpStartLock":
        """Read a lock file; a missing file is an empty lock (every lookup then says how to write it)."""
        path = Path(path)
        if not path.exists():
            return cls({}, path=str(path))
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as error:
            raise ConfigurationError([Problem("", str(error).splitlines()[0], "a lock file written by "
                                              "`make jumpstart-lock`", f"restore {path} from git or write it again")],
                                     source=str(path)) from None
        return cls.parse(data, path=str(path))

    @classmethod
    def parse(cls, data: Any, *, path: str = LOCK_FILE_NAME) -> "JumpStartLock":
        problems: list[Problem] = []
        entries: dict[tuple[str, str, str], JumpStartModel] = {}
        if not isinstance(data, dict) or data.get("lock_version") != LOCK_VERSION:
            raise ConfigurationError([Problem("lock_version", data.get("lock_version") if isinstance(data, dict)
                                              else data, f"{LOCK_VERSION}", "write the lock again with "
                                              + lock_command())], source=path)
        regions = data.get("regions") or {}
        if not isinstance(regions, dict):
            raise ConfigurationError([Problem("regions", regions, "a mapping region -> model id -> version -> entry",
                                              "write the lock again with " + lock_command())], source=path)
        for region, models in regions.items():
            if not isinstance(models, dict):
                problems.append(Problem(f"regions.{region}", models, "a mapping model id -> version -> entry",
                                        "write the lock again with " + lock_command(region=str(region))))
                continue
            for model_id, versions in models.items():
                if not isinstance(versions, dict):
                    problems.append(Problem(f"regions.{region}.{model_id}", versions, "a mapping version -> entry",
                                            "write the lock again with " + lock_command(model_id, region=str(region))))
                    continue
                for version, entry in versions.items():
                    where = f"regions.{region}.{model_id}.{version}"
                    try:
                        licence = entry.get("licence")
                        entries[(str(region), str(model_id), str(version))] = JumpStartModel(
                            model_id=str(model_id), version=str(version), region=str(region),
                            image_uri=str(entry["image_uri"]), artifact_s3_uri=str(entry["artifact_s3_uri"]),
                            environment={str(k): str(v) for k, v in (entry.get("environment") or {}).items()},
                            accelerators=entry.get("accelerators"), min_memory_mb=entry.get("min_memory_mb"),
                            default_instance_type=entry.get("default_instance_type"),
                            supported_instance_types=tuple(entry.get("supported_instance_types") or ()),
                            licence=Licence(str(licence["name"]), str(licence["url"])) if licence else None,
                        )
                    except (KeyError, TypeError, AttributeError) as error:
                        problems.append(Problem(where, entry, "image_uri, artifact_s3_uri, environment, licence",
                                                f"write it again: {lock_command(model_id, version, region)} ({error})"))
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
            return Problem(field_path, f"{model_id} {version}", "a JumpStart model in a stack bound to a region (its "
                           "image and artifacts are per region); " + self._holds(model_id),
                           "set target.region in the config (or env=Environment(region=...) on the stack)"
                           + (f", one of {', '.join(held)}" if held else f", then run {command}"))
        if self.find(model_id, version, region) is not None:
            return None
        return Problem(field_path, f"{model_id} {version} in {region}",
                       f"a model id, version and region that {self.path} holds; " + self._holds(model_id),
                       f"run {command} and commit {self.path}")

    def _holds(self, model_id: str) -> str:
        held = sorted(f"{m} {v} in {r}" for r, m, v in self.entries if m == model_id)
        if held:
            return "it holds " + ", ".join(held)
        ids = sorted({m for _, m, _ in self.entries})
        return "it holds no version of this id" + (f" (ids held: {', '.join(ids)})" if ids else " (it is empty)")

    # ------------------------------------------------------------------ writing
    def with_entry(self, model: JumpStartModel) -> "JumpStartLock":
        entries = dict(self.entries)
        entries[(model.region, model.model_id, model.version)] = model
        return JumpStartLock(entries, path=self.path)

    def dump(self, header: str = "") -> str:
        regions: dict[str, dict[str, dict[str, Any]]] = {}
        for (region, model_id, version), model in sorted(self.entries.items()):
            regions.setdefault(region, {}).setdefault(model_id, {})[version] = model.to_lock()
        head = header or ("# Written by `make jumpstart-lock` from JumpStart's published manifest; do not edit by hand.\n"
                          "# Synth reads only this file: a JumpStart upgrade is a diff here.\n")
        return head + yaml.safe_dump({"lock_version": LOCK_VERSION, "regions": regions}, sort_keys=True,
                                     default_flow_style=False)


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
    """
    model_id, version = str(spec.get("model_id", "")), str(spec.get("version", ""))
    image = spec.get("hosting_ecr_uri") or _variant_image(spec, region)
    if not image:
        raise SpecError(f"{model_id} {version}: the spec names no hosting image for {region} (no hosting_ecr_uri "
                        "and no hosting_instance_type_variants image; hosting_ecr_specs alone is not resolved)")
    key = spec.get("hosting_prepacked_artifact_key") or spec.get("hosting_artifact_key")
    if not key:
        raise SpecError(f"{model_id} {version}: the spec has no hosting_artifact_key")
    bucket = gated_bucket(region) if spec.get("gated_bucket") else content_bucket(region)
    environment = {str(v["name"]): str(v["default"]) for v in spec.get("inference_environment_variables") or []
                   if v.get("scope", "container") == "container" and "default" in v}
    needs = spec.get("hosting_resource_requirements") or {}
    eula = spec.get("hosting_eula_key")
    licence = None
    if eula:
        url = f"https://{content_bucket(region)}.s3.{region}.amazonaws.com/{eula}"
        licence = Licence(name=Path(str(eula)).stem, url=url)
    return JumpStartModel(
        model_id=model_id, version=version, region=region, image_uri=str(image), artifact_s3_uri=f"s3://{bucket}/{key}",
        environment=environment, accelerators=needs.get("num_accelerators"), min_memory_mb=needs.get("min_memory_mb"),
        default_instance_type=spec.get("default_inference_instance_type"),
        supported_instance_types=tuple(spec.get("supported_inference_instance_types") or ()), licence=licence,
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
        raise SpecError(f"{model_id} {version} is not in s3://{bucket}/{MANIFEST_KEY}; "
                        + (f"published versions: {', '.join(versions)}" if versions else "no such model id"))
    spec = json.loads(s3.get_object(Bucket=bucket, Key=matches[0]["spec_key"])["Body"].read())
    return model_from_spec(spec, region=region)


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
    return 0


if __name__ == "__main__":
    sys.exit(main())


# ---------------------------------------------------------------------- resolving a ModelSpec
def spec_problems(model_id: str, version: str, accept_eula: bool, lock: JumpStartLock, region: str | None,
                  *, path: str = "") -> list[Problem]:
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
        return [Problem(at("accept_eula"), accept_eula,
                        f"true: {model_id} is gated; its licence {model.licence.name} ({model.licence.url}) must be "
                        "accepted by a person before SageMaker serves or optimizes it",
                        "read the licence, then set accept_eula: true on this model")]
    return []


def resolve(spec: Any, lock: JumpStartLock, region: str | None, *, where: str) -> tuple[Any, JumpStartModel]:
    """``spec`` (a ``ModelSpec`` with ``source: jumpstart``) with image, artifacts, environment, accelerators and
    memory from the lock; what the user set in ``environment``, ``accelerators`` and ``min_memory_mb`` wins.

    Raises one ``ConfigurationError`` when the lock does not hold it or its licence is not accepted."""
    from ..core.settings import was_validated, _VALIDATED

    problems = spec_problems(spec.model_id, spec.version, spec.accept_eula, lock, region)
    if problems:
        raise ConfigurationError(problems, source=where)
    assert region is not None
    model = lock.find(spec.model_id, spec.version, region)
    assert model is not None
    given = spec.model_fields_set
    update: dict[str, Any] = {"image": model.image_uri, "model_data_s3_uri": model.artifact_s3_uri,
                              "environment": {**model.environment, **spec.environment}}
    if "accelerators" not in given and model.accelerators is not None:
        update["accelerators"] = model.accelerators
    if "min_memory_mb" not in given and model.min_memory_mb is not None:
        update["min_memory_mb"] = model.min_memory_mb
    resolved = spec.model_copy(update=update)
    from . import images
    from .settings import _image_problem
    from ..core.settings import s3_uri_problem

    checks = [p for p in (_image_problem(model.image_uri), s3_uri_problem("", model.artifact_s3_uri, want="prefix"))
              if p is not None]
    checks = [Problem(f"model_id ({lock.path} image_uri/artifact_s3_uri)", p.value, p.allowed,
                      f"write the lock again: {lock_command(spec.model_id, spec.version, region)}") for p in checks]
    checks.extend(images.capability_problems(resolved))
    if checks:
        raise ConfigurationError(checks, source=where)
    if was_validated(spec):
        _VALIDATED[id(resolved)] = resolved  # every rule held for spec; the lock's values were checked just above
    return resolved, model
