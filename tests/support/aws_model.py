"""Check AWS requests against botocore's service model beyond what ``Stubber`` checks.

``botocore.stub.Stubber`` validates request *shapes* (required members, types) but not
enum values, string/list lengths, numeric ranges or patterns. ``assert_valid_request``
walks the operation's input shape and checks those constraints too, so a handler test
fails when the handler would send a request the real service rejects.
"""

from __future__ import annotations

import functools

try:  # botocore's patterns use \p{L}-style classes that only the regex package understands
    import regex as re
except ImportError:  # pragma: no cover
    import re  # type: ignore[no-redef]
from typing import Any

import botocore.session
from botocore.model import ListShape, MapShape, Shape, StructureShape


@functools.cache
def _service_model(service: str):
    return botocore.session.get_session().get_service_model(service)


def request_problems(service: str, operation: str, params: dict[str, Any]) -> list[str]:
    """Every constraint violation of ``params`` for ``service.operation``, as readable lines."""
    shape = _service_model(service).operation_model(operation).input_shape
    problems: list[str] = []
    if shape is not None:
        _check(shape, params, operation, problems)
    return problems


def assert_valid_request(service: str, operation: str, params: dict[str, Any]) -> None:
    problems = request_problems(service, operation, params)
    assert not problems, "invalid request:\n" + "\n".join(problems)


def _check(shape: Shape, value: Any, path: str, problems: list[str]) -> None:
    meta = shape.metadata
    if isinstance(shape, StructureShape):
        if not isinstance(value, dict):
            problems.append(f"{path}: expected a structure, got {type(value).__name__}")
            return
        for name in shape.required_members:
            if name not in value:
                problems.append(f"{path}.{name}: required member missing")
        for name, member_value in value.items():
            if name not in shape.members:
                problems.append(f"{path}.{name}: unknown member")
                continue
            _check(shape.members[name], member_value, f"{path}.{name}", problems)
        return
    if isinstance(shape, ListShape):
        if not isinstance(value, list):
            problems.append(f"{path}: expected a list, got {type(value).__name__}")
            return
        _check_length(meta, len(value), path, problems)
        for index, item in enumerate(value):
            _check(shape.member, item, f"{path}[{index}]", problems)
        return
    if isinstance(shape, MapShape):
        if not isinstance(value, dict):
            problems.append(f"{path}: expected a map, got {type(value).__name__}")
            return
        _check_length(meta, len(value), path, problems)
        for key, item in value.items():
            _check(shape.key, key, f"{path}<key {key!r}>", problems)
            _check(shape.value, item, f"{path}[{key!r}]", problems)
        return
    if shape.type_name == "string":
        if not isinstance(value, str):
            problems.append(f"{path}: expected a string, got {type(value).__name__}")
            return
        enum = shape.enum
        if enum and value not in enum:
            problems.append(f"{path}: {value!r} is not one of {sorted(enum)}")
        _check_length(meta, len(value), path, problems)
        pattern = meta.get("pattern")
        if pattern and not re.fullmatch(_python_pattern(pattern), value):
            problems.append(f"{path}: {value!r} does not match pattern {pattern}")
        return
    if shape.type_name in ("integer", "long", "float", "double"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            problems.append(f"{path}: expected a number, got {type(value).__name__}")
            return
        if "min" in meta and value < meta["min"]:
            problems.append(f"{path}: {value} is below the minimum {meta['min']}")
        if "max" in meta and value > meta["max"]:
            problems.append(f"{path}: {value} is above the maximum {meta['max']}")


def _check_length(meta: dict[str, Any], length: int, path: str, problems: list[str]) -> None:
    if "min" in meta and length < meta["min"]:
        problems.append(f"{path}: length {length} is below the minimum {meta['min']}")
    if "max" in meta and length > meta["max"]:
        problems.append(f"{path}: length {length} is above the maximum {meta['max']}")


def _python_pattern(pattern: str) -> str:
    """botocore's patterns are Java regexes: ``\\z`` is Python's ``\\Z``; ``\\p{...}`` needs ``regex``."""
    return pattern.replace(r"\z", r"\Z")


def create_runs_table(dynamodb: Any, name: str) -> None:
    """The EAGLE runs table as ``EagleOptimization`` declares it (model_name hash key, run_id range key), in moto."""
    dynamodb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "model_name", "KeyType": "HASH"}, {"AttributeName": "run_id", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "model_name", "AttributeType": "S"},
            {"AttributeName": "run_id", "AttributeType": "S"},
        ],
    )
