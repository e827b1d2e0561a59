"""AWS tag rules for the config's ``tags``: how many a resource takes, the length of keys and values, the
reserved ``aws:`` prefix and the characters AWS accepts.
"""

from __future__ import annotations

from ..core.errors import Problem

MAX_TAGS = 50
"""Tags per resource AWS accepts (SageMaker's ``TagList`` too); the stack adds none of its own to the config's."""
_TAG_SYMBOLS = frozenset("_.:/=+-@")


def _tag_text(text: str) -> bool:
    """Whether ``text`` has only what AWS tags take: letters, digits, spaces (Unicode) and _ . : / = + - @."""
    import unicodedata

    return all(ch.isalnum() or unicodedata.category(ch).startswith("Z") or ch in _TAG_SYMBOLS for ch in text)


def tag_problems(tags: dict[str, str]) -> list[Problem]:
    """AWS tag rules (SageMaker ``TagKey``/``TagValue``): at most 50 tags, keys of 1-128 characters not starting
    with ``aws:`` (reserved), values of at most 256, letters, digits, spaces and ``_ . : / = + - @`` only."""
    problems: list[Problem] = []
    if len(tags) > MAX_TAGS:
        problems.append(
            Problem(
                "tags", f"{len(tags)} tags", f"at most {MAX_TAGS} tags (AWS's limit per resource)", "remove some tags"
            )
        )
    for key, value in tags.items():
        if not 1 <= len(key) <= 128 or not _tag_text(key):
            problems.append(
                Problem(
                    f"tags.{key}",
                    key,
                    "a tag key of 1-128 letters, digits, spaces and _ . : / = + - @",
                    "rename the tag",
                )
            )
        elif key.lower().startswith("aws:"):
            problems.append(
                Problem(f"tags.{key}", key, "a tag key not starting with aws: (reserved for AWS)", "rename the tag")
            )
        if len(value) > 256 or not _tag_text(value):
            problems.append(
                Problem(
                    f"tags.{key}",
                    value,
                    "a tag value of at most 256 letters, digits, spaces and _ . : / = + - @",
                    "shorten the value or replace the other characters",
                )
            )
    return problems
