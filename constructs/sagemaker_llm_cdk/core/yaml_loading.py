"""YAML reading the config loader and the adapter manifests share: duplicate keys refused, syntax errors located.

In ``core`` so that a feature (``adapters.manifest``) reads YAML as the config does without importing ``config``.
"""

from __future__ import annotations

from typing import Any

import yaml


class UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping instead of keeping the last."""


def _construct_mapping(loader: UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    mapping: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = _hashable_key(loader, key_node, deep)
        if key in mapping:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} is given twice in one mapping", key_node.start_mark
            )
        mapping[key] = loader.construct_object(value_node, deep=deep)
    return mapping


def _hashable_key(loader: yaml.SafeLoader, key_node: yaml.Node, deep: bool) -> Any:
    key = loader.construct_object(key_node, deep=deep)
    try:
        hash(key)
    except TypeError:
        raise yaml.constructor.ConstructorError(
            None, None, "a mapping key that is a list or mapping", key_node.start_mark
        ) from None
    return key


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def yaml_error_position(error: yaml.YAMLError) -> tuple[str, str]:
    """Where a YAML syntax error is (``line L, column C``, 1-based) and what it is, for a ``Problem``."""
    mark = getattr(error, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
    return where, getattr(error, "problem", None) or str(error)
