"""Many adapters on one base: batches in nested stacks, below CloudFormation's 500-resource limit.

``add_adapters`` puts adapters, in the order given, into nested ``AdapterStack`` s under the
base model: the first ``max_per_stack`` into ``Adapters1``, the next into ``Adapters2`` and so
on. The base's own stack gains one resource per nested stack (plus one artifact-read policy
per ~100 adapters on the endpoint), so it never fills up with adapters.

An adapter's stack follows from its position only, never from how full the base's stack
happens to be: adding resources elsewhere never moves an adapter. Moving one would fail to
deploy, because CloudFormation creates the new component before it deletes the old one and
the name is still taken. Keep the list append-only: add new adapters at the end; removing or
reordering adapters before the end shifts later ones into neighbouring stacks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from aws_cdk import CfnResource, NestedStack, Stack

from constructs import Construct, IConstruct

from ..core.errors import ConfigurationError, Problem, keyword_problems
from ..core.validation import problems_from
from ..hosting.component_base import name_taken_problem
from ..settings.adapters import AdapterSpec
from .lora_adapter import ARTIFACT_URL_MAX, LoraAdapter, base_problems

if TYPE_CHECKING:
    from ..hosting.model_component import ModelComponent

STACK_RESOURCE_LIMIT = 500
"""CloudFormation's limit of resources in one stack (nested stacks count separately)."""

DEFAULT_MAX_PER_STACK = 400
"""Adapters per nested stack by default: one resource each, with room for what you add."""


class AdapterStack(NestedStack):
    """A nested stack holding a batch of LoRA adapters of one base model.

    It deploys with its parent stack (one ``cdk deploy``); the endpoint name reaches it as a
    stack parameter, and CloudFormation creates it after the base model and the adapters'
    read permissions. ``add_adapters`` creates and fills these; create one yourself (with ``settings``) to group
    adapters by hand.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        base: ModelComponent,
        settings: Iterable[AdapterSpec | Mapping[str, Any]] = (),
        description: str | None = None,
        **unknown: Any,
    ) -> None:
        """
        :param base: the model the adapters run on; it needs ``spec.lora``.
        :param settings: the adapters it holds (``AdapterSpec`` each, or a mapping of its fields), created in
            this order. Default: none (``add_adapters`` fills it).
        :param description: Default: names the base model.
        """
        if unknown:
            raise ConfigurationError(
                keyword_problems(
                    unknown,
                    takes=("base", "settings", "description"),
                    renamed={"specs": ("settings", "AdapterSpec items")},
                ),
                source=f"{scope.node.path}/{id}",
            )
        super().__init__(scope, id, description=description or f"LoRA adapters of {base.component_name}")
        self.base = base
        self._adapters: list[LoraAdapter] = []
        for spec in settings:
            self._add(spec)

    def _add(self, spec: AdapterSpec | Mapping[str, Any]) -> LoraAdapter:
        """Create one adapter in this stack; its construct id is the adapter's name."""
        name = spec.name if isinstance(spec, AdapterSpec) else str(spec.get("name"))
        adapter = LoraAdapter(self, name, base=self.base, settings=spec)
        self._adapters.append(adapter)
        return adapter

    @property
    def adapters(self) -> tuple[LoraAdapter, ...]:
        return tuple(self._adapters)


class AdapterBatches:
    """The nested stacks `add_adapters` fills for one base model, and the batch size they were filled with."""

    def __init__(self, max_per_stack: int) -> None:
        self.max_per_stack = max_per_stack
        self.stacks: list[AdapterStack] = []


def adapter_stacks(base: ModelComponent) -> tuple[AdapterStack, ...]:
    """The nested stacks ``add_adapters`` created for ``base``, in order."""
    batches = cast("AdapterBatches | None", base.adapter_batches)
    return tuple(batches.stacks) if batches else ()


def add_adapters(
    base: ModelComponent,
    specs: Sequence[AdapterSpec | Mapping[str, Any]],
    *,
    max_per_stack: int = DEFAULT_MAX_PER_STACK,
    field: str = "adapters",
) -> tuple[LoraAdapter, ...]:
    """Serve every adapter of ``specs`` on ``base``, in nested stacks of at most ``max_per_stack``.

    Everything is checked before anything is created: each spec, names unique among ``specs``
    and on the endpoint, the base's lora settings, ``max_per_stack``. The problems come in one
    ``ConfigurationError`` with paths like ``adapters[3].name`` (``field`` names the list).
    Calling again continues filling the last stack. Keep ``specs`` append-only (see the module
    documentation): an adapter's stack follows from its position.

    :param max_per_stack: adapters per nested stack, 1-500. Default: 400.
    """
    source = base.node.path if isinstance(base, Construct) else "add_adapters"
    problems = base_problems(base)
    if not 1 <= max_per_stack <= STACK_RESOURCE_LIMIT:
        problems.append(
            Problem(
                "max_per_stack",
                max_per_stack,
                f"1-{STACK_RESOURCE_LIMIT} (CloudFormation's resource limit per stack)",
                "leave it out to use 400",
            )
        )
    earlier = cast("AdapterBatches | None", base.adapter_batches) if not problems else None
    if earlier is not None and earlier.max_per_stack != max_per_stack:
        problems.append(
            Problem(
                "max_per_stack",
                max_per_stack,
                f"{earlier.max_per_stack}, the value an earlier call on this model used",
                "use one max_per_stack for every call on a model; changing it moves adapters",
            )
        )
    base_ok = not base_problems(base)
    checked: list[AdapterSpec] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(specs):
        path = f"{field}[{index}]"
        try:
            spec = raw if isinstance(raw, AdapterSpec) else AdapterSpec.model_validate(dict(raw))
        except Exception as error:  # pydantic ValidationError, or raw not a mapping
            problems.extend(_spec_problems(error, path, raw))
            continue
        if spec.name in seen:
            problems.append(
                Problem(
                    f"{path}.name", spec.name, f"a name not used by {field}[{seen[spec.name]}]", "rename one of the two"
                )
            )
        elif base_ok:
            taken = name_taken_problem(f"{path}.name", spec.name, base.endpoint)
            if taken is not None:
                problems.append(taken)
        if len(spec.artifact_s3_uri) > ARTIFACT_URL_MAX:
            problems.append(
                Problem(
                    f"{path}.artifact_s3_uri",
                    spec.artifact_s3_uri,
                    f"at most {ARTIFACT_URL_MAX} characters",
                    "use a shorter S3 key",
                )
            )
        seen.setdefault(spec.name, index)
        checked.append(spec)
    if problems:
        raise ConfigurationError(problems, source=source)

    batches = cast("AdapterBatches | None", base.adapter_batches)
    if batches is None:
        batches = AdapterBatches(max_per_stack)
        base.adapter_batches = batches
    stacks = batches.stacks
    created: list[LoraAdapter] = []
    for spec in checked:
        if not stacks or len(stacks[-1].adapters) >= max_per_stack:
            stacks.append(AdapterStack(base, f"Adapters{len(stacks) + 1}", base=base))
        created.append(stacks[-1]._add(spec))
    return tuple(created)


def _spec_problems(error: Exception, path: str, raw: Any) -> list[Problem]:
    from pydantic import ValidationError

    if isinstance(error, ValidationError):
        return [p.under(path) for p in problems_from(error, AdapterSpec)]
    return [Problem(path, raw, "a mapping {name, artifact_s3_uri}", "write each adapter as name and artifact_s3_uri")]


def resource_count(stack: Stack) -> int:
    """CloudFormation resources ``stack`` holds now (nested stacks count as one each)."""
    count = 0
    todo: list[IConstruct] = list(stack.node.children)
    while todo:
        node = todo.pop()
        if Stack.is_stack(node):
            continue
        if CfnResource.is_cfn_resource(node):
            count += 1
        todo.extend(node.node.children)
    return count
