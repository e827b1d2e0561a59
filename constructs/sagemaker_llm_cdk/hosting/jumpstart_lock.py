"""The JumpStart lock file (``config/jumpstart.lock.yaml``): reading it, looking entries up, writing it.

``JumpStartLock`` maps ``regions.<region>.<model id>.<version>`` to a ``JumpStartModel``. ``load`` and
``parse`` refuse a malformed file with every problem and the command that writes it again; ``problem``
says why a lookup finds nothing (no region, or an id, version and region the lock does not hold) and
what it does hold; ``with_entry`` and ``dump`` write it. ``find_lock`` finds the file the way a package
manager finds its lock: in a folder or the nearest one above it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ..core.errors import ConfigurationError, Problem
from .jumpstart_entries import JumpStartModel, Licence, LockSource, PretrainedHead, lock_command

LOCK_FILE_NAME = "jumpstart.lock.yaml"
LOCK_VERSION = 1


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
