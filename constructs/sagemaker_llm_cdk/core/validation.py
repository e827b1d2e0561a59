"""Turn pydantic's errors into ``Problem`` lines: field path, value, what is allowed, the fix."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from .errors import MISSING, RULES_ERROR, Problem


def problems_from(error: ValidationError, model: type[BaseModel]) -> list[Problem]:
    problems: list[Problem] = []
    items = error.errors(include_url=False)
    paths = [_path(item["loc"]) for item in items]
    for item, path in zip(items, paths, strict=True):
        if item["type"] == "too_short" and any(other.startswith(path + "[") for other in paths):
            continue  # pydantic also calls a list "too short" when its items failed: the items say why
        if item["type"] == RULES_ERROR:
            problems.extend(p.under(path) for p in item["ctx"]["problems"])
            continue
        problems.append(_problem(item, path, model))
    return problems


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).startswith(("function-after", "function-", "tagged-union")):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out


def _allowed_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Field names of the model that holds the unknown key at ``loc``."""
    current: Any = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        fields = getattr(current, "model_fields", None)
        if not fields or part not in fields:
            return []
        annotation = fields[part].annotation
        current = _model_in(annotation)
        if current is None:
            return []
    fields = getattr(current, "model_fields", None)
    return sorted(fields) if fields else []


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_in(arg)
        if found is not None:
            return found
    return None


_TYPE_WORDS = {
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "text",
    "dict_type": "a mapping of keys to values",
    "list_type": "a list",
    "tuple_type": "a list",
    "model_type": "a mapping of keys to values",
    "model_attributes_type": "a mapping of keys to values",
}


def _problem(item: Mapping[str, Any], path: str, model: type[BaseModel]) -> Problem:
    kind = item["type"]
    value = item.get("input", MISSING)
    ctx = item.get("ctx") or {}
    field = path.rsplit(".", 1)[-1]
    if kind == "extra_forbidden":
        keys = _allowed_keys(model, item["loc"])
        near = difflib.get_close_matches(field, keys, n=1)
        fix = f"did you mean '{near[0]}'?" if near else "remove the key"
        return Problem(path, value, "known keys only: " + (", ".join(keys) if keys else "none here"), fix)
    if kind == "missing":
        return Problem(path, MISSING, "a value (this field is required)", f"add {field}")
    if kind in _TYPE_WORDS:
        return Problem(path, value, _TYPE_WORDS[kind], f"write {field} as {_TYPE_WORDS[kind]}")
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        word = {
            "greater_than_equal": "at least",
            "greater_than": "more than",
            "less_than_equal": "at most",
            "less_than": "less than",
        }[kind]
        bound = next(iter(ctx.values()))
        return Problem(path, value, f"{word} {bound}", f"set {field} to a value {word} {bound}")
    if kind in ("too_short", "too_long"):
        bound = ctx.get("min_length", ctx.get("max_length"))
        word = "at least" if kind == "too_short" else "at most"
        return Problem(path, value, f"{word} {bound} item(s)", f"give {word} {bound} item(s)")
    if kind == "literal_error":
        return Problem(path, value, f"one of {ctx.get('expected')}", "pick one of the listed values")
    return Problem(path, value, item["msg"], f"correct {field}")
