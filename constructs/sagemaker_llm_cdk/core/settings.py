"""The settings base: the one model behind both the YAML config and the constructs' props.

Each feature package defines its settings on ``Settings`` here (``hosting.settings``, ``adapters.settings``,
``sessions.settings``, ``eagle.settings``, ``capacity.settings``, ``operations.settings``; the whole config in
``config.settings``). Every such class is a frozen pydantic model that forbids unknown keys. The config file
(``config/*.yaml``) is parsed into these same classes, and ``config/schema.json`` is
generated from them, so an editor, the app and the library agree on every rule.

Rules that span several fields (``min_instances <= max_instances``) are checked by each
model's ``_rules`` method; they report every problem at once, each with its own field path.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from . import service_model
from .errors import RULES_ERROR, ConfigurationError, Problem
from .validation import problems_from

_S3_URI = re.compile(r"^s3://(?P<bucket>[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9])(?:/(?P<key>.*))?$")
_HF_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")


class Settings(BaseModel):
    """Base of every settings model: frozen, unknown keys refused, rules run after fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    def __init__(self, /, **data: Any) -> None:
        """Validate ``data``; every problem is raised at once as one ``ConfigurationError`` (never a raw
        pydantic ``ValidationError``), each line ``field: got V; allowed: ...; fix: ...``.

        ``model_validate`` keeps pydantic's behaviour (a ``ValidationError``); ``validation.validated``
        turns that into the same lines, headed by the file or construct path."""
        try:
            super().__init__(**data)
        except ValidationError as error:
            raise _configuration_error(error, type(self)) from None

    # Not a custom __init__ to pydantic: nested models are validated in place (errors keep their paths)
    # and only a direct call (``ModelSpec(...)``) comes through here.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    def _rules(self) -> list[Problem]:
        return []

    @model_validator(mode="after")
    def _check_rules(self) -> Settings:
        problems = self._rules()
        if problems:
            raise PydanticCustomError(
                RULES_ERROR,
                "{count} rule(s) broken",
                {"count": len(problems), "problems": problems},
            )
        _VALIDATED[id(self)] = self
        return self

    @model_validator(mode="wrap")
    @classmethod
    def _rules_despite_field_errors(cls, data: Any, handler: Any) -> Any:
        """When fields fail, still run this model's rules on the fields that passed, so cross-field and
        cross-object problems come in the same round. A rule that reads a failed field is skipped (the
        field's own problem is reported); see ``unless_failed``."""
        coerced = coercion_problems(cls, data)
        try:
            result = handler(data)
        except ValidationError as error:
            if not isinstance(data, dict) or not (
                coerced or any(item["loc"] for item in error.errors(include_url=False))
            ):
                raise  # not a mapping, or only this model's own rules failed: nothing more to find

            known = problems_from(error, cls)
            lines = {p.line() for p in known}
            paths = {p.path for p in known}  # a field pydantic refused already: its coercion is not news
            extra = [
                p
                for p in [*(c for c in coerced if c.path not in paths), *_partial_rules(cls, data, error)]
                if p.line() not in lines
            ]
            if not extra:
                raise
            problems = [*known, *extra]
            raise PydanticCustomError(
                RULES_ERROR, "{count} rule(s) broken", {"count": len(problems), "problems": problems}
            ) from None
        if coerced:
            raise PydanticCustomError(
                RULES_ERROR, "{count} rule(s) broken", {"count": len(coerced), "problems": coerced}
            )
        return result


_COERCIBLE: dict[type, tuple[tuple[str, str | None, str], ...]] = {}
"""Per model: (field, alias, "number" or "time") of the fields ``coercion_problems`` checks."""


def _kinds(annotation: Any) -> frozenset[Any]:
    """The scalar types a field's annotation admits (``int | None`` -> {int, NoneType}); empty for containers."""
    import types
    import typing

    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _kinds(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return frozenset().union(*(_kinds(arg) for arg in typing.get_args(annotation)))
    if origin is Literal:
        return frozenset(type(arg) for arg in typing.get_args(annotation))
    return frozenset({annotation}) if isinstance(annotation, type) and origin is None else frozenset()


def _coercible(cls: type[BaseModel]) -> tuple[tuple[str, str | None, str], ...]:
    from datetime import datetime
    from decimal import Decimal

    found = _COERCIBLE.get(cls)
    if found is None:
        fields = []
        for name, field in cls.model_fields.items():
            kinds = _kinds(field.annotation)
            numbers = kinds & {int, float, Decimal}
            if numbers and bool not in kinds:
                fields.append((name, field.alias, "number"))
            elif datetime in kinds and not numbers:
                fields.append((name, field.alias, "time"))
        found = _COERCIBLE[cls] = tuple(fields)
    return found


def coercion_problems(cls: type[BaseModel], data: Any) -> list[Problem]:
    """Values pydantic would turn into something else without a word: true/false where a number goes (true
    would be 1), a number where a time goes (seconds since 1970). Refused, as the user meant something else."""
    if not isinstance(data, dict):
        return []
    problems: list[Problem] = []
    for name, alias, kind in _coercible(cls):
        key = name if name in data else alias if alias and alias in data else None
        if key is None:
            continue
        value = data[key]
        if kind == "number" and isinstance(value, bool):
            problems.append(Problem(key, value, "a number, not true or false", f"write {key} as a number"))
        elif kind == "time" and isinstance(value, (int, float)):  # bool is an int too: refused as well
            problems.append(
                Problem(
                    key,
                    value,
                    "an ISO-8601 time with a time zone, e.g. 2026-01-15T00:00:00Z",
                    f"write {key} as a time, not a number",
                )
            )
    return problems


class _FieldFailed(Exception):
    """A rule read a field whose value failed validation."""


class _Failed:
    """Stands for a field that failed validation while the rules of the rest run: any use raises
    ``_FieldFailed``, which ``unless_failed`` turns into skipping that rule."""

    __slots__ = ()

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise _FieldFailed()

    __getattr__ = __bool__ = __len__ = __iter__ = __contains__ = __getitem__ = _fail
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __hash__ = __format__ = __str__ = _fail

    def __repr__(self) -> str:
        return "<failed>"


FAILED: Any = _Failed()


class unless_failed:  # noqa: N801 - used like contextlib.suppress
    """``with unless_failed(): ...`` runs one rule and skips it when it reads a field that failed validation.

    Rules are written once, for valid values; when some fields fail, ``Settings`` runs the rules on the
    rest with the failed fields replaced by ``FAILED``, and each rule block that touches one is skipped.
    """

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> bool:
        return kind is not None and issubclass(kind, (_FieldFailed, TypeError))


_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9]{0,62}")


def identifier_problem(field: str, value: str) -> Problem | None:
    """A config name that becomes a construct id and part of physical names (an endpoint's, a router's): 1-63
    letters and digits, starting with a letter; None when ``value`` is one."""
    if _IDENTIFIER.fullmatch(value):
        return None
    return Problem(
        field, value, "1-63 letters and digits, starting with a letter", "remove spaces, hyphens and other characters"
    )


def _partial_rules(cls: type[Settings], data: dict[str, Any], error: ValidationError) -> list[Problem]:
    """The problems ``cls._rules`` finds on the fields of ``data`` that passed (see ``_on_partial``)."""
    return _on_partial(cls, data, error, lambda partial: partial._rules())


def _on_partial(
    cls: type[Settings], data: Any, error: ValidationError, rule: Callable[[Any], list[Problem]]
) -> list[Problem]:
    """The problems ``rule`` finds on ``cls`` built from the fields of ``data`` that passed; failed ones are
    ``FAILED`` (a failed item of a list of models stays, with only its own failed fields ``FAILED``), and a rule
    that reads one is skipped."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a rule that dumps a partial model gets serializer warnings for FAILED
            partial = _partial_instance(cls, data, _failures(error))
            return rule(partial) if partial is not FAILED else []
    except (_FieldFailed, TypeError, ValidationError):
        return []


def outside_rule(cls: type[Settings], data: Any, rule: Callable[[Any], list[Problem]]) -> list[Problem]:
    """The problems ``rule`` finds on ``data`` as ``cls``, a rule kept outside the model (one that needs more
    than settings, as the budget rule needs the cost model). On data that fails validation the rule runs on the
    fields that passed, like the model's own rules, so its problem comes in the same round; a rule that reads a
    failed field is skipped."""
    try:
        instance: Any = cls.model_validate(dict(data)) if isinstance(data, Mapping) else data
    except ValidationError as error:
        return _on_partial(cls, data, error, rule)
    with unless_failed():
        return rule(instance)
    return []


def _failures(error: ValidationError) -> list[tuple[Any, ...]]:
    """The failed locations of ``error``; a rules error of a nested model adds the paths of its problems."""
    locs: list[tuple[Any, ...]] = []
    for item in error.errors(include_url=False):
        loc = tuple(part for part in item["loc"] if not str(part).startswith(("function-", "tagged-union")))
        if item["type"] == RULES_ERROR and loc:
            locs.extend(loc + _path_parts(p.path) for p in item["ctx"]["problems"])
        else:
            locs.append(loc)
    # pydantic also calls a list "too short" when its items failed: the items' own locations say where
    return [
        loc for loc in locs if loc and not any(len(other) > len(loc) and other[: len(loc)] == loc for other in locs)
    ]


def _path_parts(path: str) -> tuple[Any, ...]:
    """``copies.max_copies`` -> ("copies", "max_copies"); ``adapters[0].name`` -> ("adapters", 0, "name")."""
    parts: list[Any] = []
    for token in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        parts.append(int(token[1:-1]) if token.startswith("[") else token)
    return tuple(parts)


def _partial_instance(cls: type[Settings], data: Any, locs: list[tuple[Any, ...]]) -> Any:
    """``cls`` built from ``data`` without validation: fields that passed are validated alone, failed ones are
    ``FAILED``, and a failed list of models keeps its items, each partial in turn."""
    if not isinstance(data, dict) or any(len(loc) == 0 for loc in locs):
        return FAILED
    failed = {loc[0] for loc in locs}
    values: dict[str, Any] = {}
    given: set[str] = set()
    for name, field in cls.model_fields.items():
        key = name if name in data else (field.alias if field.alias and field.alias in data else None)
        if key is None:
            values[name] = FAILED if field.is_required() else field.get_default(call_default_factory=True)
            continue
        given.add(name)
        if name not in failed:
            values[name] = _adapter(cls, name).validate_python(data[key])
        else:
            values[name] = _partly_valid(field.annotation, data[key], [loc[1:] for loc in locs if loc[0] == name])
    # model_fields_set as validation would leave it: what the data gave, not every default (a rule that asks
    # "was this field given?", as "not with source: jumpstart" does, must not see a default as written)
    return cls.model_construct(_fields_set=given, **values)


def _partly_valid(annotation: Any, raw: Any, locs: list[tuple[Any, ...]]) -> Any:
    """A nested model or list of models, partial where it failed; anything else that failed is ``FAILED``."""
    args = (annotation, *getattr(annotation, "__args__", ()))
    model = next((a for a in args if isinstance(a, type) and issubclass(a, Settings)), None)
    if model is not None and isinstance(raw, dict):
        return _partial_instance(model, raw, locs)
    item = next(
        (a for a in getattr(annotation, "__args__", ()) if isinstance(a, type) and issubclass(a, Settings)), None
    )
    if (
        item is None
        or not isinstance(raw, (list, tuple))
        or any(not loc or not isinstance(loc[0], int) for loc in locs)
    ):
        return FAILED
    adapter = _item_adapter(item)
    return tuple(
        _partial_instance(item, value, [loc[1:] for loc in locs if loc[0] == i])
        if any(loc[0] == i for loc in locs)
        else adapter.validate_python(value)
        for i, value in enumerate(raw)
    )


_ADAPTERS: dict[tuple[type, str], Any] = {}


def _adapter(cls: type[BaseModel], name: str) -> Any:
    from pydantic import TypeAdapter

    key = (cls, name)
    if key not in _ADAPTERS:
        field = cls.model_fields[name]
        annotation: Any = field.annotation
        _ADAPTERS[key] = TypeAdapter(Annotated[(annotation, *field.metadata)] if field.metadata else annotation)
    return _ADAPTERS[key]


def _item_adapter(model: type[BaseModel]) -> Any:
    from pydantic import TypeAdapter

    key = (model, "")
    if key not in _ADAPTERS:
        _ADAPTERS[key] = TypeAdapter(model)
    return _ADAPTERS[key]


def _configuration_error(error: ValidationError, model: type[BaseModel]) -> ConfigurationError:

    return ConfigurationError(problems_from(error, model), source=model.__name__)


_VALIDATED: weakref.WeakValueDictionary[int, Settings] = weakref.WeakValueDictionary()
"""Settings instances that came out of pydantic validation (not ``model_construct``)."""


def was_validated(settings: Settings) -> bool:
    """Whether ``settings`` passed validation with every rule; it is frozen, so it still holds."""
    return _VALIDATED.get(id(settings)) is settings


def field_rule(check: Any) -> AfterValidator:
    """A single-field rule: ``check(value)`` returns a ``Problem`` (path "") or None.

    Field rules run with pydantic's own checks, so they are reported together with problems
    elsewhere in the config, not only once everything else is valid.
    """

    def _validate(value: Any) -> Any:
        if value is None:
            return value
        problem = check(value)
        if problem is not None:
            raise PydanticCustomError(RULES_ERROR, "{count} rule(s) broken", {"count": 1, "problems": [problem]})
        return value

    return AfterValidator(_validate)


MAX_S3_URI = 1024
"""Longest S3 URI SageMaker takes (botocore's ``S3Uri``/``S3ModelUri``: max 1024)."""


def s3_uri_problem(field: str, value: str, *, want: Literal["prefix", "tar.gz", "any"] = "any") -> Problem | None:
    """A problem when ``value`` is not an S3 URI of the wanted kind, else None."""
    if len(value) > MAX_S3_URI:
        return Problem(
            field,
            value,
            f"an S3 URI of at most {MAX_S3_URI} characters (SageMaker's S3Uri)",
            "use a shorter prefix or object key",
        )
    match = _S3_URI.match(value)
    if not match:
        if _HF_ID.match(value):
            return Problem(
                field,
                value,
                "an s3:// URI; Hugging Face Hub ids are not accepted",
                "copy the model's files to S3 (for example with `huggingface-cli download` then "
                "`aws s3 sync`) and give s3://bucket/prefix/",
            )
        return Problem(
            field,
            value,
            "an S3 URI like s3://my-bucket/path/ (lowercase bucket name, 3-63 characters)",
            "write the location as s3://<bucket>/<key>",
        )
    key = match.group("key") or ""
    if want == "prefix" and not key.endswith("/") and not key.endswith(".tar.gz"):
        return Problem(
            field,
            value,
            "an S3 prefix ending in '/' (uncompressed files) or an object ending in '.tar.gz'",
            f"write {value}/ if it is a folder",
        )
    if want == "tar.gz" and not key.endswith(".tar.gz"):
        return Problem(
            field,
            value,
            "an S3 object ending in '.tar.gz' with the files at the archive root",
            "package the files with `tar -czf adapter.tar.gz -C dir .` and give its s3:// URI",
        )
    return None


def name_problem(field: str, value: str, shape: str = "InferenceComponentName") -> Problem | None:
    max_len, pattern = service_model.name_rule(shape)
    if len(value) > max_len or len(value) < 1 or not pattern.fullmatch(value):
        return Problem(
            field,
            value,
            f"1-{max_len} characters: letters, digits and hyphens, starting and ending with a letter or digit",
            "shorten the name or replace other characters (such as '_' or '.') with '-'",
        )
    return None


def instance_type_problem(field: str, value: str, allowed: frozenset[str], what: str) -> Problem | None:
    if value in allowed:
        return None
    near = service_model.close_matches(value, allowed)
    hint = f"did you mean {', '.join(near)}?" if near else "see the instance types SageMaker lists for " + what
    return Problem(field, value, f"an instance type SageMaker accepts for {what} (ml.<family>.<size>)", hint)


M = TypeVar("M", bound=BaseModel)


def validated(model: type[M], data: Mapping[str, Any] | M, *, where: str) -> M:
    """``model`` validated from ``data``, or one ``ConfigurationError`` with every problem.

    ``where`` names the file or construct path the data came from; it heads the message.
    """
    if isinstance(data, model):
        if isinstance(data, Settings) and was_validated(data):
            return data  # validated when it was made, and frozen since: checking again finds nothing new
        data = data.model_dump(exclude_unset=True)
    try:
        return model.model_validate(dict(data))
    except ValidationError as error:
        raise ConfigurationError(problems_from(error, model), source=where) from None
