"""Validated settings: the one model behind both the YAML config and the constructs' props.

Every class here is a frozen pydantic model that forbids unknown keys. The config file
(``config/*.yaml``) is parsed into these same classes, and ``config/schema.json`` is
generated from them, so an editor, the app and the library agree on every rule.

Rules that span several fields (``min_instances <= max_instances``) are checked by each
model's ``_rules`` method; they report every problem at once, each with its own field path.
"""
from __future__ import annotations

import re
import weakref
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from . import images, service_model
from .errors import MISSING, ConfigurationError, Problem
from .schedule_expression import schedule_problem

RULES_ERROR = "llm_rules"
"""pydantic error type that carries a list of ``Problem`` in its context."""

_S3_URI = re.compile(r"^s3://(?P<bucket>[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9])(?:/(?P<key>.*))?$")
_HF_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")
_ECR_IMAGE = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?/"
    r"(?P<repository>[a-z0-9][a-z0-9._/\-]*)(?::(?P<tag>[\w.\-]{1,128})|@sha256:[a-f0-9]{64})$"
)
_LMI_ALIAS = re.compile(r"^lmi(?::(?P<tag>[\w.\-]{1,128}))?$")
_TRAINING_PLAN = re.compile(
    r"(?:arn:aws[a-z-]*:sagemaker:[a-z]{2}(?:-[a-z]+)+-\d:\d{12}:training-plan/)?(?=.{1,64}$)[a-zA-Z0-9](?:-*[a-zA-Z0-9])*")
_CONTENT_TYPE = re.compile(r"^[a-zA-Z0-9*][a-zA-Z0-9.*+\-]*/[a-zA-Z0-9*][a-zA-Z0-9.*+\-]*$")

DEFAULT_LMI_TAG = images.DEFAULT_LMI_TAG
"""The Large Model Inference (DJL) container tag used for ``image: lmi`` (see ``images.LMI_IMAGES`` for what it can do)."""


# Instance families whose instances come with local NVMe storage: SageMaker uses it for
# the model and refuses VolumeSizeInGB for them.
_NVME_FAMILIES = frozenset(
    {"p4d", "p4de", "p5", "p5e", "p5en", "p6", "p6e", "g4dn", "g5", "g6", "g6e", "g7e", "trn1", "trn1n", "trn2", "m5d", "c5d", "r5d"}
)


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
    def _check_rules(self) -> "Settings":
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
        try:
            return handler(data)
        except ValidationError as error:
            if not isinstance(data, dict) or not any(item["loc"] for item in error.errors(include_url=False)):
                raise  # not a mapping, or only this model's own rules failed: nothing more to find
            from .validation import problems_from

            known = problems_from(error, cls)
            lines = {p.line() for p in known}
            extra = [p for p in _partial_rules(cls, data, error) if p.line() not in lines]
            if not extra:
                raise
            problems = [*known, *extra]
            raise PydanticCustomError(RULES_ERROR, "{count} rule(s) broken",
                                      {"count": len(problems), "problems": problems}) from None


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


def _partial_rules(cls: type["Settings"], data: dict[str, Any], error: ValidationError) -> list[Problem]:
    """The problems ``cls._rules`` finds on the fields of ``data`` that passed; failed ones are ``FAILED``
    (a failed item of a list of models stays, with only its own failed fields ``FAILED``)."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a rule that dumps a partial model gets serializer warnings for FAILED
            partial = _partial_instance(cls, data, _failures(error))
            return partial._rules() if partial is not FAILED else []
    except (_FieldFailed, TypeError, ValidationError):
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
    return [loc for loc in locs if loc and not any(len(other) > len(loc) and other[:len(loc)] == loc for other in locs)]


def _path_parts(path: str) -> tuple[Any, ...]:
    """``copies.max_copies`` -> ("copies", "max_copies"); ``adapters[0].name`` -> ("adapters", 0, "name")."""
    parts: list[Any] = []
    for token in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        parts.append(int(token[1:-1]) if token.startswith("[") else token)
    return tuple(parts)


def _partial_instance(cls: type["Settings"], data: Any, locs: list[tuple[Any, ...]]) -> Any:
    """``cls`` built from ``data`` without validation: fields that passed are validated alone, failed ones are
    ``FAILED``, and a failed list of models keeps its items, each partial in turn."""
    if not isinstance(data, dict) or any(len(loc) == 0 for loc in locs):
        return FAILED
    failed = {loc[0] for loc in locs}
    values: dict[str, Any] = {}
    for name, field in cls.model_fields.items():
        key = name if name in data else (field.alias if field.alias and field.alias in data else None)
        if key is None:
            values[name] = FAILED if field.is_required() else field.get_default(call_default_factory=True)
        elif name not in failed:
            values[name] = _adapter(cls, name).validate_python(data[key])
        else:
            values[name] = _partly_valid(field.annotation, data[key], [loc[1:] for loc in locs if loc[0] == name])
    return cls.model_construct(**values)


def _partly_valid(annotation: Any, raw: Any, locs: list[tuple[Any, ...]]) -> Any:
    """A nested model or list of models, partial where it failed; anything else that failed is ``FAILED``."""
    args = (annotation, *getattr(annotation, "__args__", ()))
    model = next((a for a in args if isinstance(a, type) and issubclass(a, Settings)), None)
    if model is not None and isinstance(raw, dict):
        return _partial_instance(model, raw, locs)
    item = next((a for a in getattr(annotation, "__args__", ()) if isinstance(a, type) and issubclass(a, Settings)), None)
    if item is None or not isinstance(raw, (list, tuple)) or any(not loc or not isinstance(loc[0], int) for loc in locs):
        return FAILED
    adapter = _item_adapter(item)
    return tuple(_partial_instance(item, value, [loc[1:] for loc in locs if loc[0] == i])
                 if any(loc[0] == i for loc in locs) else adapter.validate_python(value)
                 for i, value in enumerate(raw))


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
    from .validation import problems_from

    return ConfigurationError(problems_from(error, model), source=model.__name__)


_VALIDATED: "weakref.WeakValueDictionary[int, Settings]" = weakref.WeakValueDictionary()
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


def s3_uri_problem(field: str, value: str, *, want: Literal["prefix", "tar.gz", "any"] = "any") -> Problem | None:
    """A problem when ``value`` is not an S3 URI of the wanted kind, else None."""
    match = _S3_URI.match(value)
    if not match:
        if _HF_ID.match(value):
            return Problem(field, value, "an s3:// URI; Hugging Face Hub ids are not accepted",
                           "copy the model's files to S3 (for example with `huggingface-cli download` then "
                           "`aws s3 sync`) and give s3://bucket/prefix/")
        return Problem(field, value, "an S3 URI like s3://my-bucket/path/ (lowercase bucket name, 3-63 characters)",
                       "write the location as s3://<bucket>/<key>")
    key = match.group("key") or ""
    if want == "prefix" and not key.endswith("/") and not key.endswith(".tar.gz"):
        return Problem(field, value, "an S3 prefix ending in '/' (uncompressed files) or an object ending in '.tar.gz'",
                       f"write {value}/ if it is a folder")
    if want == "tar.gz" and not key.endswith(".tar.gz"):
        return Problem(field, value, "an S3 object ending in '.tar.gz' with the files at the archive root",
                       "package the files with `tar -czf adapter.tar.gz -C dir .` and give its s3:// URI")
    return None


def name_problem(field: str, value: str, shape: str = "InferenceComponentName") -> Problem | None:
    max_len, pattern = service_model.name_rule(shape)
    if len(value) > max_len or len(value) < 1 or not pattern.fullmatch(value):
        return Problem(field, value,
                       f"1-{max_len} characters: letters, digits and hyphens, starting and ending with a letter or digit",
                       "shorten the name or replace other characters (such as '_' or '.') with '-'")
    return None


def instance_type_problem(field: str, value: str, allowed: frozenset[str], what: str) -> Problem | None:
    if value in allowed:
        return None
    near = service_model.close_matches(value, allowed)
    hint = f"did you mean {', '.join(near)}?" if near else "see the instance types SageMaker lists for " + what
    return Problem(field, value, f"an instance type SageMaker accepts for {what} (ml.<family>.<size>)", hint)


def _image_problem(value: str) -> Problem | None:
    if _LMI_ALIAS.match(value) or _ECR_IMAGE.match(value):
        return None
    return Problem("", value, "'lmi', 'lmi:<tag>' or an ECR image URI <account>.dkr.ecr.<region>.amazonaws.com/<repo>:<tag>",
                   "push the image to ECR and give its full URI")


def _ami_problem(value: str) -> Problem | None:
    if value in service_model.inference_ami_versions():
        return None
    return Problem("", value, "one of " + ", ".join(sorted(service_model.inference_ami_versions())),
                   "pick a listed version or leave it out")


def has_local_nvme(instance_type: str) -> bool:
    parts = instance_type.split(".")
    return len(parts) == 3 and parts[1] in _NVME_FAMILIES


class InstanceScaling(Settings):
    """How many instances the endpoint may run (SageMaker managed instance scaling)."""

    min_instances: Annotated[int, Field(ge=0, le=1000, description=(
        "Fewest instances. 0 lets the endpoint scale to zero when no model copy is running "
        "(some regions refuse 0). Default: 1."))] = 1
    max_instances: Annotated[int, Field(ge=1, le=1000, description="Most instances. Default: 1.")] = 1
    initial_instances: Annotated[int | None, Field(ge=1, le=1000, description=(
        "Instances at creation. Default: min_instances, or 1 when min_instances is 0."))] = None

    @property
    def initial(self) -> int:
        return self.initial_instances if self.initial_instances is not None else max(1, self.min_instances)

    def _rules(self) -> list[Problem]:
        problems = []
        if self.min_instances > self.max_instances:
            problems.append(Problem("min_instances", self.min_instances,
                                    f"at most max_instances ({self.max_instances})",
                                    "lower min_instances or raise max_instances"))
        if self.initial_instances is not None and not (
            max(1, self.min_instances) <= self.initial_instances <= self.max_instances
        ):
            problems.append(Problem("initial_instances", self.initial_instances,
                                    f"between {max(1, self.min_instances)} and max_instances ({self.max_instances})",
                                    "leave it out to start at min_instances"))
        return problems


RoutingStrategyName = Literal["LEAST_OUTSTANDING_REQUESTS", "RANDOM", "PREFIX_AWARE"]


class Routing(Settings):
    """How the endpoint spreads requests over instances.

    Default: ``LEAST_OUTSTANDING_REQUESTS`` (load-aware: each request goes to the least busy
    instance). Session-aware routing for multi-turn chat is per request, not set here.

    ``PREFIX_AWARE`` routes requests that start alike to the instance that already holds that
    prefix in its cache. SageMaker compares the first ``prefix_length`` *bytes of the request
    body* (for InvokeEndpoint; *characters of the messages* for the OpenAI-compatible API), not
    tokens: a token is roughly 3-4 bytes of English text, so 4096 covers about 1,000-1,300 tokens
    of a shared system prompt.
    """

    strategy: Annotated[RoutingStrategyName, Field(description=(
        "LEAST_OUTSTANDING_REQUESTS (load-aware), RANDOM, or PREFIX_AWARE (reuses a cached prompt "
        "prefix; needs prefix_length and concurrency_threshold)."))] = "LEAST_OUTSTANDING_REQUESTS"
    prefix_length: Annotated[int | None, Field(ge=1024, le=65536, description=(
        "PREFIX_AWARE only: how much of the start of each request is compared for routing, in bytes of the "
        "request body (characters of the messages for the OpenAI-compatible API), not tokens; 1024-65536."))] = None
    concurrency_threshold: Annotated[int | None, Field(ge=1, le=1024, description=(
        "PREFIX_AWARE only: outstanding requests on an instance above which routing falls back to "
        "load-aware, 1-1024."))] = None

    @classmethod
    def least_outstanding_requests(cls) -> "Routing":
        return cls(strategy="LEAST_OUTSTANDING_REQUESTS")

    @classmethod
    def random(cls) -> "Routing":
        return cls(strategy="RANDOM")

    @classmethod
    def prefix_aware(cls, *, prefix_length: int, concurrency_threshold: int) -> "Routing":
        """Prefix-aware routing on the first ``prefix_length`` bytes of the request body (characters of the
        messages for the OpenAI-compatible API; not tokens), 1024-65536, falling back to load-aware above
        ``concurrency_threshold`` outstanding requests per instance, 1-1024."""
        return cls(strategy="PREFIX_AWARE", prefix_length=prefix_length, concurrency_threshold=concurrency_threshold)

    def _rules(self) -> list[Problem]:
        problems = []
        if self.strategy == "PREFIX_AWARE":
            for field in ("prefix_length", "concurrency_threshold"):
                if getattr(self, field) is None:
                    problems.append(Problem(field, None, "required with strategy PREFIX_AWARE",
                                            f"set {field} (prefix_length 1024-65536, concurrency_threshold 1-1024)"))
        else:
            for field in ("prefix_length", "concurrency_threshold"):
                if getattr(self, field) is not None:
                    problems.append(Problem(field, getattr(self, field),
                                            f"only with strategy PREFIX_AWARE (strategy is {self.strategy})",
                                            f"remove {field} or set strategy: PREFIX_AWARE"))
        return problems


class DataCapture(Settings):
    """Endpoint Data Capture: requests and responses written to a KMS-encrypted bucket.

    It feeds the EAGLE loop with real traffic. Default: on, 10% of requests, JSON payloads
    stored as JSON (not base64).
    """

    enabled: Annotated[bool, Field(description="Capture traffic at all. Default: true.")] = True
    sampling_percentage: Annotated[int, Field(ge=1, le=100, description="Share of requests captured, 1-100. Default: 10.")] = 10
    capture_input: Annotated[bool, Field(description="Capture requests. Default: true.")] = True
    capture_output: Annotated[bool, Field(description="Capture responses. Default: true.")] = True
    json_content_types: Annotated[tuple[str, ...], Field(max_length=10, description=(
        "Content types stored as JSON text instead of base64. Default: application/json."))] = ("application/json",)
    retention_days: Annotated[int, Field(ge=1, le=3650, description=(
        "Days a captured request/response (user prompts and model completions) is kept before it expires; then it "
        "stays 7 more days as a noncurrent version and is gone. Longer than the EAGLE schedule, so every run sees "
        "the traffic since the last one. Default: 30."))] = 30

    def _rules(self) -> list[Problem]:
        problems = []
        if self.enabled and not (self.capture_input or self.capture_output):
            problems.append(Problem("capture_input", False, "capture_input or capture_output true when enabled",
                                    "turn one on, or set enabled: false"))
        for index, content_type in enumerate(self.json_content_types):
            if not _CONTENT_TYPE.match(content_type) or len(content_type) > 256:
                problems.append(Problem(f"json_content_types[{index}]", content_type, "a MIME type like application/json",
                                        "write type/subtype"))
        return problems


class CopyScaling(Settings):
    """How many copies of a model run, scaled on concurrent requests per copy.

    Default: exactly one copy, no autoscaling. With ``max_copies`` above ``min_copies`` a
    target-tracking policy keeps concurrent requests per copy near the target (high-resolution,
    10-second metric). With ``min_copies: 0`` the model scales to zero when idle, and a
    step policy brings one copy back when a request finds no capacity.
    """

    min_copies: Annotated[int, Field(ge=0, le=1000, description="Fewest copies; 0 scales to zero when idle. Default: 1.")] = 1
    max_copies: Annotated[int, Field(ge=1, le=1000, description="Most copies. Default: 1.")] = 1
    target_concurrent_requests_per_copy: Annotated[float, Field(gt=0, le=10000, description=(
        "Target tracking value for concurrent requests per copy. Default: 4."))] = 4.0
    scale_in_cooldown_seconds: Annotated[int, Field(ge=0, le=86400, description="Default: 300.")] = 300
    scale_out_cooldown_seconds: Annotated[int, Field(ge=0, le=86400, description="Default: 60.")] = 60
    pin_copy_count: Annotated[bool, Field(description=(
        "Autoscaled models only: also write RuntimeConfig.CopyCount (min_copies, at least 1) into the template. "
        "CloudFormation then sets the copy count back to it on every update of the component (a new image, a "
        "promoted draft head), whatever autoscaling had scaled to. Default: false: the template leaves the copy "
        "count to autoscaling, which starts the component at min_copies."))] = False

    @property
    def initial(self) -> int:
        """Copies at creation: an inference component cannot be created with 0 copies."""
        return max(1, self.min_copies)

    @property
    def autoscaled(self) -> bool:
        return self.max_copies > self.min_copies or self.min_copies == 0

    @property
    def template_copy_count(self) -> int | None:
        """``RuntimeConfig.CopyCount`` for the template, or None to leave ``RuntimeConfig`` out.

        ``CopyCount`` is write-only in CloudFormation and its update handler calls
        ``UpdateInferenceComponentRuntimeConfig``: a count in the template resets an autoscaled
        component on every update (the ``DesiredCount`` problem of ECS services). So when
        autoscaling manages the count, the template does not carry one (unless ``pin_copy_count``).
        """
        if self.autoscaled and not self.pin_copy_count:
            return None
        return self.initial

    def _rules(self) -> list[Problem]:
        problems = []
        if self.min_copies > self.max_copies:
            problems.append(Problem("min_copies", self.min_copies, f"at most max_copies ({self.max_copies})",
                                    "lower min_copies or raise max_copies"))
        if self.pin_copy_count and not self.autoscaled:
            problems.append(Problem("pin_copy_count", True,
                                    "only for autoscaled models (a fixed count is always in the template)",
                                    "remove pin_copy_count"))
        return problems


class Placement(Settings):
    """Where SageMaker places a model's copies as they are added and removed (``SchedulingConfig``).

    Default: ``SPREAD`` over instances, balanced across Availability Zones (``PERMISSIVE``, at
    most one copy of difference), so losing one zone leaves copies running in the others.
    CloudFormation requires the zone balance whenever a placement is given, so it is always set.
    """

    strategy: Annotated[Literal["SPREAD", "BINPACK"], Field(description=(
        "SPREAD (copies spread over instances: one instance or zone lost takes the fewest copies) or BINPACK "
        "(copies packed onto few instances: frees whole instances to scale in, at the cost of resilience). "
        "Within each zone when zones are balanced. Default: SPREAD."))] = "SPREAD"
    max_zone_imbalance: Annotated[int, Field(ge=0, le=100, description=(
        "Most copies by which any two Availability Zones may differ (AvailabilityZoneBalance.MaxImbalance, 0-100); "
        "applies when the endpoint has instances in two or more zones. The balance is PERMISSIVE, the one mode "
        "SageMaker offers: copies are still placed when capacity cannot be balanced. Default: 1."))] = 1

    @classmethod
    def spread(cls, *, max_zone_imbalance: int = 1) -> "Placement":
        return cls(strategy="SPREAD", max_zone_imbalance=max_zone_imbalance)

    @classmethod
    def binpack(cls, *, max_zone_imbalance: int = 1) -> "Placement":
        return cls(strategy="BINPACK", max_zone_imbalance=max_zone_imbalance)


LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""Values vLLM accepts for ``max_lora_rank`` (``vllm/config/lora.py`` ``MaxLoRARanks``, vLLM 0.26)."""
LMI_DEFAULT_LORA_RANK = 16
"""LMI's (vLLM's) ``OPTION_MAX_LORA_RANK`` when it is not set."""


def _lora_rank_problem(value: Any) -> Problem | None:
    if isinstance(value, int) and not isinstance(value, bool) and value in LORA_RANKS:
        return None
    higher = [r for r in LORA_RANKS if isinstance(value, int) and r >= value]
    return Problem("", value, "one of " + ", ".join(map(str, LORA_RANKS)) + " (the ranks vLLM accepts)",
                   f"use {higher[0]}, the smallest accepted rank at least {value}" if higher
                   else "use the smallest listed value at least your adapters' highest rank")


class LoraSettings(Settings):
    """Serve many LoRA adapters on one base model, loaded on demand.

    Adapters stay in S3 until a request names one; up to ``max_gpu_adapters`` stay on the
    GPU, the least used move to CPU memory (up to ``max_cpu_adapters``), the rest to local
    disk. For the LMI container these set OPTION_ENABLE_LORA, OPTION_MAX_LORAS and
    OPTION_MAX_CPU_LORAS.
    """

    max_gpu_adapters: Annotated[int, Field(ge=1, le=256, description="Adapters kept on the GPU. Default: 4.")] = 4
    max_cpu_adapters: Annotated[int, Field(ge=1, le=4096, description=(
        "Adapters kept in CPU memory, at least max_gpu_adapters. Default: 16."))] = 16
    max_rank: Annotated[int | None, field_rule(_lora_rank_problem), Field(
        json_schema_extra={"enum": [*LORA_RANKS, None]}, description=(
            "Highest LoRA rank (r in each adapter's adapter_config.json) the container accepts: OPTION_MAX_LORA_RANK, "
            "one of " + ", ".join(map(str, LORA_RANKS)) + " (vLLM's values). Adapters of a higher rank fail to load, "
            "and the container reserves GPU memory for this rank, so pick the smallest at least your highest. "
            "Required when adapters are declared; without adapters, default: the container's (16)."))] = None

    def _rules(self) -> list[Problem]:
        if self.max_cpu_adapters < self.max_gpu_adapters:
            return [Problem("max_cpu_adapters", self.max_cpu_adapters,
                            f"at least max_gpu_adapters ({self.max_gpu_adapters}): adapters leave the GPU for CPU memory",
                            "raise max_cpu_adapters or lower max_gpu_adapters")]
        return []


def max_rank_missing(field: str) -> Problem:
    """The problem of adapters declared on a model whose ``lora`` has no ``max_rank``."""
    return Problem(field, None, "one of " + ", ".join(map(str, LORA_RANKS)) + " when adapters are declared: the "
                   f"container's default ({LMI_DEFAULT_LORA_RANK}) refuses adapters of a higher rank",
                   "set max_rank to the smallest listed value at least the highest r in your adapters' "
                   "adapter_config.json, e.g. max_rank: 16")


class AdapterSpec(Settings):
    """A LoRA adapter served on a base model as its own inference component."""

    name: Annotated[str, field_rule(lambda v: name_problem("", v)), Field(description=(
        "The adapter's name: its inference component is named <stack name>-<name> (clients pass that as "
        "InferenceComponentName; the stack prints it), unless physical_name pins it. 1-63 letters, digits and "
        "hyphens."))]
    physical_name: Annotated[str | None, field_rule(lambda v: name_problem("", v)), Field(description=(
        "The adapter's exact inference component name, not prefixed: it must be unique in the account and "
        "region, so two stacks of one config collide. Default: <stack name>-<name>."))] = None
    artifact_s3_uri: Annotated[str, field_rule(lambda v: s3_uri_problem("", v, want="tar.gz")), Field(description="s3://bucket/adapter.tar.gz with the adapter files at the archive root.")]

    def _rules(self) -> list[Problem]:
        return []


class SessionSettings(Settings):
    """Session-aware (sticky) routing for multi-turn chat, with a front door that keeps the books.

    Turns on stateful sessions in the container (LMI: OPTION_ENABLE_STATEFUL_SESSIONS,
    OPTION_SESSIONS_EXPIRATION) and adds an HTTPS front door (IAM auth) that maps a caller's
    conversation id to a SageMaker session id.
    """

    expiration_seconds: Annotated[int, Field(ge=60, le=86400, description=(
        "Idle seconds after which a session expires. Default: 1200 (the LMI default)."))] = 1200
    max_body_bytes: Annotated[int, Field(ge=1024, le=6 * 1024 * 1024, description=(
        "Largest request body the front door accepts. Default: 1 MiB."))] = 1024 * 1024
    owner: Annotated[Literal["session", "role"], Field(description=(
        "Who owns a conversation. session: the full signed-in caller (an assumed-role session including its "
        "session name, so each person signed in through one SSO permission set is their own owner; a Cognito "
        "identity by its identity id). role: every session of an assumed role is one owner, for backends whose "
        "session names rotate (a Lambda function or ECS task per request); the backend then keeps its users "
        "apart. Default: session."))] = "session"

    def container_environment(self) -> dict[str, str]:
        """The LMI variables these settings give a served model (what ``SessionFrontDoor`` sets)."""
        return {"OPTION_ENABLE_STATEFUL_SESSIONS": "true", "OPTION_SESSIONS_EXPIRATION": str(self.expiration_seconds)}


EAGLE_ARCHITECTURES: dict[str, str] = {
    "LlamaForCausalLM": "EAGLE3",
    "Qwen3ForCausalLM": "EAGLE3",
    "Qwen3MoeForCausalLM": "EAGLE3",
    "Qwen2ForCausalLM": "EAGLE3",
    "GptOssForCausalLM": "EAGLE3",
    "Qwen3NextForCausalLM": "EAGLE2",
}
"""Architectures SageMaker's EAGLE optimization supports, and the EAGLE version each uses."""

BUILTIN_DATASETS = ("gsm8k", "magicoder", "opencodeinstruct")


"""EventBridge Scheduler expressions the EAGLE triggers accept."""


class EagleDataset(Settings):
    """Where the EAGLE head's training data comes from. Default: the endpoint's captured traffic."""

    source: Annotated[Literal["capture", "front_door", "s3", "builtin"], Field(description=(
        "capture (this endpoint's Data Capture), front_door (the turns the model's session front door logs through "
        "Kinesis Data Firehose: independent of Data Capture, every record names its component), s3 (your dataset), "
        "builtin (a named public dataset). Default: capture."))] = "capture"
    s3_uri: Annotated[str | None, Field(description=(
        "source s3: prefix of ShareGPT / OpenAI chat / OpenAI completions JSONL. source builtin: where your copy "
        "of the named dataset is (SageMaker does not document a public location)."))] = None
    builtin_name: Annotated[str | None, Field(description="source builtin: " + ", ".join(BUILTIN_DATASETS) + ".")] = None
    min_new_records: Annotated[int, Field(ge=1, le=100_000_000, description=(
        "source capture or front_door: start a run only when at least this many new records were converted. "
        "Default: 1000."))] = 1000
    records_check: Annotated[str | None, Field(description=(
        "source capture or front_door: EventBridge Scheduler expression of a cheap check that counts the records that "
        "arrived after the watermark (lines; nothing converted, it stops reading at min_new_records) and starts a "
        "run once min_new_records arrived and no run is in progress, e.g. 'rate(1 hour)'. Default: off (runs "
        "start on the schedule or by hand)."))] = None
    retention_days: Annotated[int, Field(ge=1, le=3650, description=(
        "source capture: days the training sets built from captured traffic (datasets/, map-results/ of the "
        "artifacts bucket) are kept; then 7 more days as noncurrent versions. Draft heads and reports are kept. "
        "Default: 90."))] = 90

    def _rules(self) -> list[Problem]:
        problems = []
        if self.source in ("s3", "builtin"):
            if self.s3_uri is None:
                problems.append(Problem("s3_uri", None, f"an s3:// prefix with source {self.source}",
                                        "set s3_uri to the dataset's location"))
            else:
                problem = s3_uri_problem("s3_uri", self.s3_uri, want="prefix")
                if problem:
                    problems.append(problem)
        elif self.s3_uri is not None:
            problems.append(Problem("s3_uri", self.s3_uri, "only with source s3 or builtin", "remove s3_uri"))
        if self.source == "builtin":
            if self.builtin_name not in BUILTIN_DATASETS:
                problems.append(Problem("builtin_name", self.builtin_name, "one of " + ", ".join(BUILTIN_DATASETS),
                                        "pick a listed dataset or use source s3"))
        elif self.builtin_name is not None:
            problems.append(Problem("builtin_name", self.builtin_name, "only with source builtin", "remove builtin_name"))
        if self.records_check is not None:
            if self.source not in ("capture", "front_door"):
                problems.append(Problem("records_check", self.records_check, "only with source capture or front_door "
                                        "(it counts their records)", "remove records_check, or use source capture"))
            else:  # the same EventBridge Scheduler grammar as eagle.schedule
                problem = schedule_problem("records_check", self.records_check)
                if problem:
                    problems.append(problem)
        return problems


_AIPERF_PARAMETER = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
MAX_BENCHMARK_PARAMETERS = 32


class EagleBenchmarkSettings(Settings):
    """AI benchmark jobs on the endpoint itself, before and after a promoted head is served.

    Off by default: a benchmark job sends real requests to the endpoint for as long as its workload runs: they
    compete with your users' requests, can scale the endpoint out (more instances billed), and the job itself
    may be billed (its price is not in this library's price list)."""

    enabled: Annotated[bool, Field(description=(
        "Measure the endpoint with a SageMaker AI benchmark job (NVIDIA AIPerf) before and after each promotion. "
        "Each job sends real traffic to the endpoint: it competes with your users' requests, can scale the endpoint "
        "out (more instances billed), and the job may be billed itself. "
        "Default: false."))] = False
    workload: Annotated[Literal["inline", "s3", "front_door"], Field(description=(
        "What the benchmark sends: inline (AIPerf token distributions from parameters), s3 (your requests under "
        "s3_uri, OpenAI chat-completions JSONL) or front_door (the turns the model's session front door logs; needs "
        "dataset.source front_door). Default: inline."))] = "inline"
    s3_uri: Annotated[str | None, Field(description=(
        "workload s3: prefix of your representative requests (the workload config's dataset channel)."))] = None
    parameters: Annotated[dict[str, int | float | str], Field(description=(
        "AIPerf parameters of the workload spec (lower-case names, e.g. prompt_input_tokens_mean, output_tokens_mean, "
        "concurrency, request_count), at most 32. Default: 550 input and 150 output tokens on average."))] = {
        "prompt_input_tokens_mean": 550, "output_tokens_mean": 150}
    max_hours: Annotated[int, Field(ge=1, le=48, description=(
        "Longest a benchmark job may run; then it is stopped (StopAIBenchmarkJob) and the measurement fails. "
        "Default: 4."))] = 4
    deploy_wait_hours: Annotated[int, Field(ge=1, le=2160, description=(
        "How long after a promotion the loop checks (hourly) that the endpoint serves the new head before it "
        "measures it; after that it notifies and stops (start the after measurement by hand). Default: 168."))] = 168
    slowdown_tolerance: Annotated[float, Field(ge=0.0, le=0.5, description=(
        "Alarm when the output-token throughput with the head is below the throughput before times "
        "(1 - slowdown_tolerance). Default: 0.05."))] = 0.05

    def _rules(self) -> list[Problem]:
        problems = []
        if self.workload == "s3":
            if self.s3_uri is None:
                problems.append(Problem("s3_uri", None, "an s3:// prefix with workload s3",
                                        "set s3_uri to the prefix of your representative requests"))
            else:
                problem = s3_uri_problem("s3_uri", self.s3_uri, want="prefix")
                if problem:
                    problems.append(problem)
        elif self.s3_uri is not None:
            problems.append(Problem("s3_uri", self.s3_uri, "only with workload s3", "remove s3_uri or set workload: s3"))
        if len(self.parameters) > MAX_BENCHMARK_PARAMETERS:
            problems.append(Problem("parameters", len(self.parameters), f"at most {MAX_BENCHMARK_PARAMETERS} parameters",
                                    "keep the AIPerf parameters your workload needs"))
        for name, value in self.parameters.items():
            if not _AIPERF_PARAMETER.match(name) or name == "benchmark":
                problems.append(Problem(f"parameters.{name}", name, "a lower-case AIPerf parameter name "
                                        "([a-z][a-z0-9_]*, up to 64 characters; 'benchmark' is set by the library)",
                                        "use AIPerf's parameter names, e.g. output_tokens_mean"))
            elif isinstance(value, bool) or (isinstance(value, (int, float)) and value < 0):
                problems.append(Problem(f"parameters.{name}", value, "a number >= 0 or a string",
                                        "give the AIPerf value, e.g. 150"))
            elif isinstance(value, str) and not 1 <= len(value) <= 256:
                problems.append(Problem(f"parameters.{name}", value, "a string of 1-256 characters",
                                        "give a value of 1-256 characters"))
        return problems


class EagleSettings(Settings):
    """EAGLE speculative decoding: train a draft head on real traffic and serve it when it pays off."""

    schedule: Annotated[str | None, field_rule(lambda v: schedule_problem("", v)), Field(description=(
        "EventBridge Scheduler expression (UTC): rate(value unit) with minute/hour/day for 1 and "
        "minutes/hours/days above; cron(minutes hours day-of-month month day-of-week year), six fields, '?' in "
        "exactly one of the two day fields; or at(yyyy-mm-ddThh:mm:ss) for one run. E.g. 'rate(7 days)' or "
        "'cron(0 3 ? * SUN *)'. null: no schedule (start runs by hand). Default: weekly."))] = "rate(7 days)"
    dataset: Annotated[EagleDataset, Field(description="Training data. Default: captured traffic.")] = EagleDataset()
    job_instance_type: Annotated[str | None, Field(description=(
        "Instance type the optimization job runs and benchmarks on (DeploymentInstanceType). Default: the "
        "endpoint's."))] = None
    max_instance_count: Annotated[int, Field(ge=1, le=64, description=(
        "Instances for the job (MaxInstanceCount). Default: 1."))] = 1
    training_plan: Annotated[str | None, Field(description=(
        "A training plan meant for jobs (its target is training-job, not endpoint), by ARN or name, for the job's "
        "TrainingPlanArns; its instance type must be job_instance_type. A plan bought for endpoints cannot be given "
        "to an optimization job. Default: on-demand capacity."))] = None
    max_runtime_hours: Annotated[int, Field(ge=1, le=72, description="Job time limit. Default: 24.")] = 24
    speedup_threshold: Annotated[float, Field(ge=1.0, le=20.0, description=(
        "Promote a trained head only when throughput improves at least this much. Default: 1.5.")) ] = 1.5
    num_speculative_tokens: Annotated[int, Field(ge=1, le=16, description="Draft tokens per step when served. Default: 5.")] = 5
    use_capacity_plan: Annotated[bool, Field(description=(
        "Refused when true: the endpoint's capacity plan targets endpoints, and SageMaker accepts only a plan for "
        "jobs in TrainingPlanArns. Use training_plan. Default: false."))] = False
    benchmark: Annotated[EagleBenchmarkSettings, Field(description=(
        "AI benchmark jobs on the endpoint before and after each promotion (opt-in: they send real traffic). "
        "Default: off."))] = EagleBenchmarkSettings()

    def _rules(self) -> list[Problem]:
        problems = []
        if self.job_instance_type is not None:
            problem = instance_type_problem("job_instance_type", self.job_instance_type,
                                            service_model.optimization_instance_types(), "optimization jobs")
            if problem:
                problems.append(problem)
        if self.use_capacity_plan:
            problems.append(Problem(
                "use_capacity_plan", True,
                "false: a capacity plan bought for endpoints (target endpoint) cannot be given to an optimization job; "
                "TrainingPlanArns takes only a plan for jobs",
                "remove use_capacity_plan; to run the job on reserved capacity, buy a training plan for training jobs "
                "of job_instance_type and set training_plan to its ARN or name"))
        if self.training_plan is not None and not _TRAINING_PLAN.fullmatch(self.training_plan):
            problems.append(Problem("training_plan", self.training_plan,
                                    "a training plan ARN (arn:aws:sagemaker:<region>:<account>:training-plan/<name>) or "
                                    "a name of 1-64 letters, digits and hyphens",
                                    "copy TrainingPlanArn from `aws sagemaker describe-training-plan`"))
        if self.benchmark.workload == "front_door" and self.dataset.source != "front_door":
            problems.append(Problem("benchmark.workload", "front_door", "front_door only with dataset.source front_door "
                                    "(the workload replays the turns the front door logs)",
                                    "set dataset.source: front_door, or use workload inline or s3"))
        return problems


class InstanceRequirements(Settings):
    """What one copy of a model needs on one instance type of an endpoint with ``instance_pools``.

    Each field left out takes the model's own value (``accelerators``, ``min_memory_mb``, ``cpu_cores``).
    """

    instance_type: Annotated[str, Field(description="One of the endpoint's instance_pools types.")]
    accelerators: Annotated[int | None, Field(ge=1, le=64, description=(
        "GPUs per copy on this type. Default: the model's accelerators."))] = None
    min_memory_mb: Annotated[int | None, Field(ge=128, le=4_000_000, description=(
        "Host memory per copy on this type, MB. Default: the model's min_memory_mb."))] = None
    cpu_cores: Annotated[float | None, Field(gt=0, le=1024, description=(
        "CPU cores per copy on this type. Default: the model's cpu_cores."))] = None


_DOWNLOADING_VARIABLES = ("HF_MODEL_ID", "OPTION_MODEL_ID")
"""Container variables that make LMI/TGI download the model when they name a hub id or URL, not a path."""


class ModelSpec(Settings):
    """A model served as an inference component on an ``LlmEndpoint``.

    The weights stay in S3 (uncompressed prefix or ``.tar.gz``); by default the instances
    cache them on local NVMe so a new copy starts fast.
    """

    name: Annotated[str, field_rule(lambda v: name_problem("", v)), Field(description=(
        "The model's name: 1-63 letters, digits and hyphens. Its inference component is named "
        "<stack name>-<name> (cut to 63 characters with a hash when longer), so two stacks of one config in one "
        "account and region do not collide; clients pass that as InferenceComponentName (the stack prints it)."))]
    physical_name: Annotated[str | None, field_rule(lambda v: name_problem("", v)), Field(description=(
        "The exact inference component name, not prefixed. It must be unique in the account and region: two "
        "stacks of one config with a pinned name collide. Changing it (or the stack name) renames the component, "
        "which the change report flags. Default: <stack name>-<name>."))] = None
    source: Annotated[Literal["s3", "jumpstart"], Field(description=(
        "Where the model comes from: s3 (your weights at model_data_s3_uri, served with image) or jumpstart (a "
        "JumpStart model by model_id and version: image, artifacts, environment, accelerators and memory come "
        "from config/jumpstart.lock.yaml, written by `make jumpstart-lock`). Default: s3."))] = "s3"
    model_data_s3_uri: Annotated[str, field_rule(lambda v: s3_uri_problem("", v, want="prefix") if v else None),
                                 Field(description=(
        "source s3: where the weights are: s3://bucket/prefix/ (uncompressed) or s3://bucket/model.tar.gz. "
        "Not with source jumpstart (the lock file gives the artifacts)."))] = ""
    model_id: Annotated[str | None, Field(min_length=1, max_length=256, pattern=r"^[A-Za-z0-9][\w.\-]*$", description=(
        "source jumpstart: the JumpStart model id, e.g. meta-textgeneration-llama-3-1-8b-instruct."))] = None
    version: Annotated[str | None, Field(min_length=1, max_length=64, pattern=r"^[0-9][\w.\-]*$", description=(
        "source jumpstart: the model's JumpStart version, exactly as locked, e.g. 2.2.1 (no ranges: a change is "
        "a lock-file diff)."))] = None
    accept_eula: Annotated[bool, Field(description=(
        "source jumpstart: you have read and accept the end-user licence of a gated model (its name and link are "
        "in the lock file and printed at synth). Required for gated models; sets ModelAccessConfig.AcceptEula "
        "on the model and the EAGLE optimization job. Default: false."))] = False
    image: Annotated[str, field_rule(_image_problem), Field(description=(
        "Container image: 'lmi' (AWS Large Model Inference container, tag " + DEFAULT_LMI_TAG + ", vLLM 0.26: LoRA, "
        "stateful sessions and EAGLE heads, not LoRA and EAGLE on one model; CUDA 13, so its endpoint runs "
        + images.CUDA13_AMI + "), 'lmi:<tag>' (supported: " + images.supported_tags() + "), or a full ECR image "
        "URI. Default: lmi."))] = "lmi"
    architecture: Annotated[str | None, Field(description=(
        "The model's Hugging Face architecture (config.json 'architectures'), e.g. Qwen3ForCausalLM. "
        "Needed for EAGLE optimization. Default: unknown."))] = None
    accelerators: Annotated[int, Field(ge=1, le=64, description="GPUs (or Neuron cores) per copy. Default: 1.")] = 1
    min_memory_mb: Annotated[int, Field(ge=128, le=4_000_000, description="Host memory per copy, MB. Default: 1024.")] = 1024
    cpu_cores: Annotated[float | None, Field(gt=0, le=1024, description="CPU cores per copy. Default: not reserved.")] = None
    copies: Annotated[CopyScaling, Field(description="Copy count and autoscaling. Default: one copy.")] = CopyScaling()
    instance_requirements: Annotated[tuple[InstanceRequirements, ...], Field(max_length=5, description=(
        "Endpoints with instance_pools only: the model's accelerators, memory and CPU on particular pool types "
        "(one InferenceComponent Specifications entry per pool type; types not listed use the model's own "
        "values). Default: the same requirements on every type."))] = ()
    placement: Annotated[Placement, Field(description=(
        "How copies are placed over instances and Availability Zones. Default: SPREAD, zones balanced "
        "(at most one copy apart)."))] = Placement()
    cache_weights: Annotated[bool, Field(description=(
        "Cache model weights and the container image on the instances' NVMe disks so scale-out is fast. "
        "Default: true."))] = True
    model_data_download_timeout_seconds: Annotated[int, Field(ge=60, le=3600, description="Default: 3600.")] = 3600
    container_startup_timeout_seconds: Annotated[int, Field(ge=60, le=3600, description="Default: 3600.")] = 3600
    environment: Annotated[dict[str, str], Field(description="Extra container environment variables. Default: none.")] = {}
    lora: Annotated[LoraSettings | None, Field(description=(
        "Serve LoRA adapters on this model, loaded on demand. Default: off."))] = None
    adapters: Annotated[tuple[AdapterSpec, ...], Field(max_length=1000, description=(
        "LoRA adapters on this model; needs lora. Default: none."))] = ()
    adapters_manifest: Annotated[str | None, Field(description=(
        "A JSON or YAML list of {name, artifact_s3_uri}: a file path (relative to the config) or an s3:// URI read "
        "at synth time. Default: none."))] = None
    sessions: Annotated[SessionSettings | None, Field(description=(
        "Session-aware routing with a front door for multi-turn chat. Default: off (stateless, load-aware)."))] = None
    eagle: Annotated[EagleSettings | None, Field(description=(
        "EAGLE speculative-decoding optimization loop. Default: off."))] = None
    network_isolation: Annotated[bool, Field(description=(
        "EnableNetworkIsolation on the SageMaker model: the container gets no network at all (no internet, no AWS "
        "API calls); SageMaker still mounts the S3 weights, the EAGLE draft head (AdditionalModelDataSources) and "
        "LoRA adapter artifacts, and pulls the ECR image. Set false only for a container that downloads at run time "
        "(e.g. HF_MODEL_ID from the Hugging Face Hub). Create-only: changing it replaces the model and redeploys "
        "its copies. Default: true."))] = True

    _ENV_KEY: ClassVar[re.Pattern[str]] = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]{0,1023}$")

    @property
    def lmi_tag(self) -> str | None:
        match = _LMI_ALIAS.match(self.image)
        if not match:
            return None
        return match.group("tag") or DEFAULT_LMI_TAG

    @property
    def is_lmi(self) -> bool:
        return self.lmi_tag is not None or "djl-inference" in self.image

    @property
    def is_jumpstart(self) -> bool:
        return self.source == "jumpstart"

    def _source_problems(self) -> list[Problem]:
        """One source, fully given: s3 with model_data_s3_uri (and image), or jumpstart with model_id and version."""
        problems: list[Problem] = []
        given = self.model_fields_set
        if self.source == "s3":
            if not self.model_data_s3_uri:
                problems.append(Problem("model_data_s3_uri", MISSING, "an s3:// prefix or .tar.gz with source s3 "
                                        "(the default)", "give model_data_s3_uri, or source: jumpstart with model_id "
                                        "and version"))
            for name in ("model_id", "version"):
                if getattr(self, name) is not None:
                    problems.append(Problem(name, getattr(self, name), "only with source: jumpstart",
                                            f"add source: jumpstart (and remove model_data_s3_uri), or remove {name}"))
            if self.accept_eula:
                problems.append(Problem("accept_eula", True, "only with source: jumpstart (licences of JumpStart "
                                        "models)", "remove accept_eula"))
            return problems
        for name in ("model_id", "version"):
            if getattr(self, name) is None:
                problems.append(Problem(name, MISSING, "required with source: jumpstart",
                                        f"add {name} (see the JumpStart model card, then run `make jumpstart-lock`)"))
        for name in ("model_data_s3_uri", "image"):
            if name in given:
                problems.append(Problem(name, getattr(self, name), "nothing with source: jumpstart (the lock file "
                                        "gives the image and artifacts)",
                                        f"remove {name}, or use source: s3 without model_id and version"))
        return problems

    def _rules(self) -> list[Problem]:
        problems: list[Problem] = []
        with unless_failed():
            problems.extend(self._source_problems())
        with unless_failed():
            if (self.adapters or self.adapters_manifest) and self.lora is None:
                problems.append(Problem("adapters", [a.name for a in self.adapters] or self.adapters_manifest,
                                        "adapters only on a model with lora settings",
                                        "add `lora: {max_gpu_adapters: 4, max_cpu_adapters: 16, max_rank: 16}` to this "
                                        "model"))
            elif (self.adapters or self.adapters_manifest) and self.lora is not None and self.lora.max_rank is None:
                problems.append(max_rank_missing("lora.max_rank"))
        with unless_failed():
            seen: dict[str, int] = {}
            for index, adapter in enumerate(self.adapters):
                if adapter.name == self.name or adapter.name in seen:
                    other = "the base model" if adapter.name == self.name else f"adapters[{seen[adapter.name]}]"
                    problems.append(Problem(f"adapters[{index}].name", adapter.name, f"a name not used by {other}",
                                            "rename the adapter"))
                seen.setdefault(adapter.name, index)
        with unless_failed():
            if self.eagle is not None:
                if self.architecture is None:
                    problems.append(Problem("architecture", None, "the model's architecture when eagle is set: "
                                            + ", ".join(EAGLE_ARCHITECTURES),
                                            "copy 'architectures' from the model's config.json"))
                elif self.architecture not in EAGLE_ARCHITECTURES:
                    problems.append(Problem("architecture", self.architecture,
                                            "for EAGLE: " + ", ".join(EAGLE_ARCHITECTURES),
                                            "remove eagle for this model; SageMaker cannot optimize other architectures"))
                if self.eagle.dataset.source == "front_door" and self.sessions is None:
                    problems.append(Problem("eagle.dataset.source", "front_door", "front_door only on a model with "
                                            "sessions (its session front door writes the turns)",
                                            "add `sessions: {}` to this model, or use source capture"))
        with unless_failed():
            seen_types: set[str] = set()
            for index, requirement in enumerate(self.instance_requirements):
                if requirement.instance_type in seen_types:
                    problems.append(Problem(f"instance_requirements[{index}].instance_type", requirement.instance_type,
                                            "each instance type once", "merge the two entries"))
                seen_types.add(requirement.instance_type)
                if (self.is_lmi and requirement.accelerators is not None
                        and requirement.accelerators != self.accelerators):
                    problems.append(Problem(
                        f"instance_requirements[{index}].accelerators", requirement.accelerators,
                        f"the model's accelerators ({self.accelerators}) for the LMI container: its tensor parallel "
                        "degree (OPTION_TENSOR_PARALLEL_DEGREE) is one value for every instance type",
                        "leave accelerators out here, or serve the model on a separate endpoint"))
        with unless_failed():
            if not self.is_jumpstart:  # a JumpStart model's image is known once resolved from the lock: checked then
                problems.extend(images.capability_problems(self))
        with unless_failed():
            for key in self.environment:
                if not self._ENV_KEY.match(key):
                    problems.append(Problem(f"environment.{key}", key, "a variable name: letters, digits, '_'",
                                            "rename the variable"))
        with unless_failed():
            if self.network_isolation:
                for key in _DOWNLOADING_VARIABLES:
                    value = self.environment.get(key)
                    if value is not None and not value.startswith("/"):
                        problems.append(Problem(
                            f"environment.{key}", value,
                            "a local path (e.g. /opt/ml/model) while network_isolation is on: the container has no network",
                            "serve the weights from model_data_s3_uri, or set network_isolation: false for this model"))
        with unless_failed():
            problems.extend(self._environment_override_problems())
        return problems

    def _environment_override_problems(self) -> list[Problem]:
        """``environment`` entries that the model's features set to another value (LMI images only): the stack
        would refuse them while it builds, so they are found here with everything else."""
        if not self.is_lmi or not self.environment:
            return []
        from .lora_adapter import lora_environment

        needs: dict[str, tuple[str, str]] = {}
        if self.lora is not None:
            needs.update({k: (v, "lora") for k, v in lora_environment(self.lora).items()})
        if self.sessions is not None:
            needs.update({k: (v, "sessions") for k, v in self.sessions.container_environment().items()})
        problems = [Problem(f"environment.{name}", self.environment[name], f"{value!r}, which the {feature} settings give",
                            f"remove {name} from environment and set it through {feature}")
                    for name, (value, feature) in needs.items()
                    if name in self.environment and self.environment[name] != value]
        if self.eagle is not None and "OPTION_SPECULATIVE_CONFIG" in self.environment:
            problems.append(Problem("environment.OPTION_SPECULATIVE_CONFIG", self.environment["OPTION_SPECULATIVE_CONFIG"],
                                    "nothing with eagle: the promoted draft head sets it",
                                    "remove OPTION_SPECULATIVE_CONFIG; eagle.num_speculative_tokens sets the draft length"))
        return problems


class VpcPlacement(Settings):
    """Run the endpoint's instances in your VPC, by subnet and security group ids."""

    vpc_id: Annotated[str, Field(pattern=r"^vpc-[0-9a-f]{8,17}$", description="The VPC's id, e.g. vpc-0abc12345def67890.")]
    subnet_ids: Annotated[tuple[str, ...], Field(min_length=1, max_length=16, description=(
        "Subnets the instances run in, e.g. subnet-0abc12345def67890. Give subnets in two or more zones so "
        "copies can be balanced across them."))]
    subnet_availability_zones: Annotated[tuple[str, ...] | None, Field(max_length=16, description=(
        "The zone of each subnet, in the order of subnet_ids (e.g. us-east-1a). Default: not given; nothing in "
        "the stack needs it."))] = None
    security_group_ids: Annotated[tuple[str, ...], Field(min_length=1, max_length=5, description=(
        "Security groups of the instances' network interfaces, e.g. sg-0abc12345def67890."))]

    def _rules(self) -> list[Problem]:
        problems = []
        zones = self.subnet_availability_zones
        if zones is not None:
            if len(zones) != len(self.subnet_ids):
                problems.append(Problem("subnet_availability_zones", list(zones),
                                        f"one zone per subnet ({len(self.subnet_ids)}, in the order of subnet_ids)",
                                        "list the zone of each subnet, or leave subnet_availability_zones out"))
            for i, zone in enumerate(zones):
                if not re.fullmatch(r"[a-z]{2}(-[a-z]+)+-\d[a-z]", zone):
                    problems.append(Problem(f"subnet_availability_zones[{i}]", zone,
                                            "an Availability Zone name like us-east-1a", "copy it from the VPC console"))
        for i, subnet in enumerate(self.subnet_ids):
            if not re.fullmatch(r"subnet-[0-9a-f]{8,17}", subnet):
                problems.append(Problem(f"subnet_ids[{i}]", subnet, "a subnet id like subnet-0abc12345def67890",
                                        "copy the id from the VPC console"))
        for i, group in enumerate(self.security_group_ids):
            if not re.fullmatch(r"sg-[0-9a-f]{8,17}", group):
                problems.append(Problem(f"security_group_ids[{i}]", group, "a security group id like sg-0abc12345def67890",
                                        "copy the id from the VPC console"))
        return problems


class InstancePool(Settings):
    """One instance type of a heterogeneous endpoint (``ProductionVariant.InstancePools``)."""

    instance_type: Annotated[str, field_rule(lambda v: instance_type_problem(
        "", v, service_model.endpoint_instance_types(), "endpoints")), Field(description="SageMaker instance type.")]
    priority: Annotated[int, Field(ge=1, le=5, description=(
        "1 (tried first) to 5: SageMaker falls back to the next priority when a type has no capacity."))]


class EndpointOptions(Settings):
    """Settings of an ``LlmEndpoint`` other than the models it hosts."""

    instance_type: Annotated[str, field_rule(lambda v: instance_type_problem(
        "", v, service_model.endpoint_instance_types(), "endpoints")), Field(description="SageMaker instance type, e.g. ml.p5e.48xlarge.")]
    scaling: Annotated[InstanceScaling, Field(description="Instance count range. Default: exactly one instance.")] = InstanceScaling()
    routing: Annotated[Routing, Field(description="Request routing. Default: least outstanding requests.")] = Routing()
    data_capture: Annotated[DataCapture, Field(description="Traffic capture. Default: on, 10%, JSON.")] = DataCapture()
    inference_ami_version: Annotated[str | None, field_rule(_ami_problem), Field(description=(
        "Inference AMI (driver/CUDA) version, e.g. al2-ami-sagemaker-inference-gpu-3-1. A CUDA 13 image (such as the "
        "default LMI image) needs " + images.CUDA13_AMI + ". Default: the AMI the models' images need, else "
        "SageMaker's."))] = None
    volume_size_gb: Annotated[int | None, Field(ge=1, le=512, description=(
        "EBS volume per instance, GB. Only for instance types without local NVMe storage. Default: SageMaker's."))] = None
    instance_provision_timeout_seconds: Annotated[int | None, Field(ge=1800, le=10800, description=(
        "How long SageMaker waits for instances (with instance_pools: over all pools, at most 3600). "
        "Default: SageMaker's."))] = None
    instance_pools: Annotated[tuple[InstancePool, ...], Field(max_length=5, description=(
        "Heterogeneous capacity: 2-5 instance types with priorities; SageMaker provisions the first that has "
        "capacity, at creation and when scaling. instance_type must be the priority-1 type. Every model is "
        "checked against every type. Not with a capacity plan. Default: instance_type only."))] = ()

    @property
    def instance_types(self) -> tuple[str, ...]:
        """Every instance type the endpoint may run on: its pools by priority, or ``instance_type``."""
        if not self.instance_pools:
            return (self.instance_type,)
        return tuple(p.instance_type for p in sorted(self.instance_pools, key=lambda p: p.priority))

    def _rules(self) -> list[Problem]:
        problems: list[Problem] = []
        for instance_type in dict.fromkeys((self.instance_type, *self.instance_types)):
            if self.volume_size_gb is not None and has_local_nvme(instance_type):
                problems.append(Problem("volume_size_gb", self.volume_size_gb,
                                        f"nothing for {instance_type}: it has local NVMe storage that SageMaker uses instead",
                                        "remove volume_size_gb"))
                break
        problems.extend(self._pool_problems())
        return problems

    def _pool_problems(self) -> list[Problem]:
        pools = self.instance_pools
        if not pools:
            return []
        problems: list[Problem] = []
        if len(pools) < 2:
            problems.append(Problem("instance_pools", [p.instance_type for p in pools],
                                    "2-5 pools (an inference component needs a specification for at least two types)",
                                    "add a fallback type, or remove instance_pools and use instance_type alone"))
        types: dict[str, int] = {}
        priorities: dict[int, int] = {}
        for index, pool in enumerate(pools):
            if pool.instance_type in types:
                problems.append(Problem(f"instance_pools[{index}].instance_type", pool.instance_type,
                                        f"a type not used by instance_pools[{types[pool.instance_type]}]",
                                        "list each instance type once"))
            types.setdefault(pool.instance_type, index)
            if pool.priority in priorities:
                problems.append(Problem(f"instance_pools[{index}].priority", pool.priority,
                                        f"a priority not used by instance_pools[{priorities[pool.priority]}]",
                                        "give each pool its own priority, 1 first"))
            priorities.setdefault(pool.priority, index)
        first = min(pools, key=lambda p: p.priority)
        if self.instance_type != first.instance_type:
            problems.append(Problem("instance_type", self.instance_type,
                                    f"the priority-1 pool's type ({first.instance_type}) when instance_pools is set",
                                    f"set instance_type: {first.instance_type}"))
        if len({has_local_nvme(p.instance_type) for p in pools}) > 1:
            problems.append(Problem("instance_pools", [p.instance_type for p in pools],
                                    "types that all have local NVMe storage, or none: the endpoint's volume key "
                                    "(KmsKeyId) is refused for NVMe types and needed for the others",
                                    "pick pool types of one kind"))
        if self.instance_provision_timeout_seconds is not None and self.instance_provision_timeout_seconds > 3600:
            problems.append(Problem("instance_provision_timeout_seconds", self.instance_provision_timeout_seconds,
                                    "at most 3600 with instance_pools (the budget for trying every pool)",
                                    "lower it to 3600 or less"))
        return problems
