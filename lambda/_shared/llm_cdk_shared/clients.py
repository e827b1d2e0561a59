"""boto3 clients made once per function instance, with the retries and user agent every function uses.

A handler declares a getter per service at module level and calls it where it needs the client::

    _sagemaker = clients.client_getter("sagemaker")
    _sagemaker().describe_endpoint(EndpointName=name)

The client is made on the first call (nothing at import: cold start pays only for what is used) and
kept for the life of the getter. Tests wrap the real client in ``botocore.stub.Stubber`` (the request is
checked against the service model), or hand one in with ``getter.inject(client)``; ``cache_clear()``
makes the next call build a new one. Each getter caches on its own, so a handler module loaded afresh
gets fresh clients.
"""

from __future__ import annotations

import os
import re
from typing import Any

import boto3
from botocore.config import Config

USER_AGENT_APPID = "sagemaker-llm-cdk"
"""``app/sagemaker-llm-cdk`` in every request's User-Agent: CloudTrail's userAgent names the library."""
DEFAULT_RETRIES: dict[str, Any] = {"mode": "adaptive", "max_attempts": 8}
"""Throttling and transient errors are retried by botocore; adaptive mode adds client-side rate limiting
(``max_attempts`` 8 retries: 9 attempts in all)."""
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def client_config(*, retries: dict[str, Any] | None = None, **options: Any) -> Config:
    """The botocore ``Config`` of every client: ``retries`` (default ``DEFAULT_RETRIES``), the user agent
    (``app/sagemaker-llm-cdk`` plus ``function/<POWERTOOLS_SERVICE_NAME>``), and any other ``Config``
    options (timeouts) given."""
    function = _UNSAFE.sub("-", os.environ.get("POWERTOOLS_SERVICE_NAME", "").strip())[:64] or "unknown"
    return Config(
        retries=dict(retries or DEFAULT_RETRIES),
        user_agent_appid=USER_AGENT_APPID,
        user_agent_extra=f"function/{function}",
        **options,
    )


class ClientGetter:
    """Returns the same boto3 client for ``service`` on every call, made on the first."""

    def __init__(self, service: str, *, retries: dict[str, Any] | None = None, **options: Any) -> None:
        self.service = service
        self._retries = retries
        self._options = options
        self._client: Any = None

    def __call__(self) -> Any:
        if self._client is None:
            self._client = boto3.client(self.service, config=client_config(retries=self._retries, **self._options))
        return self._client

    def inject(self, client: Any) -> Any:
        """Use ``client`` from now on (tests: a client with a Stubber, or a fake); returns it."""
        self._client = client
        return client

    def cache_clear(self) -> None:
        """Forget the client; the next call makes a new one."""
        self._client = None

    def __repr__(self) -> str:
        return f"ClientGetter({self.service!r})"


def client_getter(service: str, *, retries: dict[str, Any] | None = None, **options: Any) -> ClientGetter:
    """A getter of the cached client for ``service``; ``retries`` and ``options`` as for ``client_config``."""
    return ClientGetter(service, retries=retries, **options)
