"""Hostile events for the Lambda handlers: a valid event with each field dropped or given each wrong JSON type.

``mutations(event)`` walks a valid event (objects and the objects inside lists) and yields, for every field,
one ``Mutation`` per replacement in ``REPLACEMENTS``: the field removed, ``None``, a whole number, a negative
one, a fraction, both booleans, an empty string, a very long string, a string of control characters and
non-BMP text, an empty and a non-empty list, an empty and a non-empty object. ``NOT_OBJECTS`` are events
that are no JSON object at all. Tests start from the valid event of a handler's own tests, send every
mutation and check the outcome category (refused with a message naming the field, or accepted when the
mutation leaves a valid event), collecting every wrong outcome before failing, so one run lists them all.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import UnStubbedResponseError
from botocore.stub import Stubber

DROP = object()
"""Replacement that removes the field."""
LONG = "x" * 70_000
"""Longer than any field a handler accepts (and than a CloudFormation reason may be: 4 KB)."""
ODD = "\x00\t\n\u202e\ud800 Ünïcødé \U0001f680" * 3
"""NUL, control characters, a right-to-left override, a lone surrogate (valid JSON: ``"\\ud800"``), non-BMP text."""
REPLACEMENTS: tuple[Any, ...] = (DROP, None, 7, -1, 1.5, True, False, "", LONG, ODD, [], ["x"], {}, {"x": 1})
NOT_OBJECTS: tuple[Any, ...] = (None, [], [{}], "event", 7, 1.5, True)
"""Events that are not a JSON object."""


@dataclass(frozen=True)
class Mutation:
    path: tuple[str | int, ...]
    replacement: Any
    event: Any

    @property
    def field(self) -> str:
        """The last field name of the path (what a message must name)."""
        return next(str(part) for part in reversed(self.path) if isinstance(part, str))

    @property
    def dotted(self) -> str:
        return ".".join(str(part) for part in self.path)

    def __str__(self) -> str:
        shown = "(dropped)" if self.replacement is DROP else repr(self.replacement)[:40]
        return f"{self.dotted} = {shown}"


def paths(value: Any, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Every field path of ``value``: object keys, and the items of lists of objects."""
    found: list[tuple[str | int, ...]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append((*prefix, key))
            found.extend(paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, dict):
                found.append((*prefix, index))
                found.extend(paths(item, (*prefix, index)))
    return found


def changed(event: Any, path: tuple[str | int, ...], replacement: Any) -> Any:
    """A deep copy of ``event`` with the field at ``path`` replaced (``DROP``: removed)."""
    event = copy.deepcopy(event)
    parent = event
    for key in path[:-1]:
        parent = parent[key]
    if replacement is DROP:
        del parent[path[-1]]
    else:
        parent[path[-1]] = copy.deepcopy(replacement)
    return event


def mutations(
    event: dict[str, Any],
    *,
    under: tuple[str | int, ...] = (),
    skip: Callable[[tuple[str | int, ...]], bool] | None = None,
    replacements: Iterable[Any] = REPLACEMENTS,
) -> Iterator[Mutation]:
    """Every field of ``event`` (below ``under`` when given) with every replacement, skipping ``skip(path)``."""
    root: Any = event
    for key in under:
        root = root[key]
    listed = tuple(replacements)
    for path in paths(root, under):
        if skip is not None and skip(path):
            continue
        current = root
        for key in path[len(under) :]:
            current = current[key]
        for replacement in listed:
            if replacement is not DROP and type(replacement) is type(current) and replacement == current:
                continue  # not a change
            yield Mutation(path, replacement, changed(event, path, replacement))


def report(failures: list[str], tried: int) -> str:
    return f"{len(failures)} of {tried} hostile events were handled wrongly:\n" + "\n".join(failures)


def as_json(value: Any) -> str:
    """``value`` as CloudFormation/Step Functions would carry it (surrogate pairs joined), for size checks."""
    return json.dumps(value, ensure_ascii=False)


def stub_clients(module: Any) -> Any:
    """``module`` (a loaded handler) with every client getter (``llm_cdk_shared.clients.client_getter``) behind an
    active Stubber that has nothing queued, so any AWS call is detected; its logger quiet (hundreds of refusals:
    their log records are not what is tested). Once per module object; call it in a test, where the test
    environment's region is set, as the clients are made then."""
    if not getattr(module, "_hostile_stubbed", False):
        for name in dir(module):
            getter = getattr(module, name)
            if name.startswith("_") and hasattr(getter, "inject") and hasattr(getter, "service"):
                Stubber(getter()).activate()
        module.logger.setLevel(logging.CRITICAL)
        module._hostile_stubbed = True
    return module


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """("aws", None) when the handler reached its first AWS call, ("raised", error) or ("ok", result)."""
    try:
        return "ok", call()
    except UnStubbedResponseError:
        return "aws", None
    except Exception as error:  # noqa: BLE001 - the category is what the tests check
        return "raised", error
