"""A stand-in for ``urllib.request.urlopen`` where a handler answers CloudFormation on the ResponseURL itself."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


class EmptyResponse:
    """What the presigned S3 PUT returns: a context manager with an empty body."""

    def __enter__(self) -> EmptyResponse:
        return self

    def __exit__(self, *args: Any) -> None:
        return None

    def read(self) -> bytes:
        return b""


def recording_urlopen(
    answers: list[dict[str, Any]], check: Callable[[Any], bool]
) -> Callable[[Any, float], EmptyResponse]:
    """An ``urlopen`` that asserts ``check(request)`` (the PUT to the expected URL) and records each JSON answer."""

    def urlopen(request: Any, timeout: float) -> EmptyResponse:
        assert check(request), (request.get_method(), request.full_url)
        answers.append(json.loads(request.data))
        return EmptyResponse()

    return urlopen
