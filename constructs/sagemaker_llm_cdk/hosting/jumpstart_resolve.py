"""A ``source: jumpstart`` model spec against the lock: its problems, and the spec with the lock's values.

``spec_problems`` says when the lock does not hold the model id and version in the stack's region, or the
model is gated and its licence not accepted; ``resolve`` returns the spec with the image, artifacts,
environment, accelerators and memory the lock holds (what the user set wins), checked as a spec's own
values are.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import ConfigurationError, Problem
from .jumpstart_entries import JumpStartModel, lock_command
from .jumpstart_lock import JumpStartLock


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
