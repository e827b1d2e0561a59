"""The front door's configuration: its environment variables, read and checked in one go (``read_settings``).

A problem in the environment is a deployment problem, not the caller's: every problem found is reported at once
in one ConfigurationError (answered 500 Misconfigured). The components a caller may choose are
ALLOWED_COMPONENTS plus the names in ``allowed_components.json``, packaged next to the handler by the construct
(so the list may hold thousands of adapters without meeting Lambda's 4 KB environment limit).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

from llm_cdk_shared import env

INVOKE_BODY_MAX_BYTES = 6_291_456  # InvokeEndpoint Body max (botocore's sagemaker-runtime 2017-05-13 model)
DEFAULT_MAX_BODY_BYTES = 1_048_576
DEFAULT_SESSION_TTL_SECONDS = 1200
COMPONENT_NAME_RE = re.compile(r"^[a-zA-Z0-9]([\-a-zA-Z0-9]*[a-zA-Z0-9])?$")  # InferenceComponentName
COMPONENT_NAME_MAX = 63
ENDPOINT_NAME_RE = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9])*$")
ALLOWED_COMPONENTS_FILE = "allowed_components.json"  # {"components": [...]}, packaged by the construct
OWNER_MODES = ("session", "role", "cognito_identity")
IDENTITY_POOL_RE = re.compile(
    r"^[a-z]{2}(-[a-z]+)+-[0-9]:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
)


class ConfigurationError(RuntimeError):
    """The function's environment is wrong (a deployment problem, not the caller's)."""


@dataclass(frozen=True)
class Settings:
    endpoint_name: str
    table_name: str
    session_ttl_seconds: int
    default_component: str
    allowed_components: tuple[str, ...]
    max_body_bytes: int
    owner_mode: str = "session"
    identity_pools: tuple[str, ...] = ()


def packaged_components(path: str, problems: list[str]) -> list[str]:
    """Component names from ``path``, the ALLOWED_COMPONENTS_FILE next to the handler (written by the construct)."""
    if not os.path.isfile(path):
        return []
    try:
        with open(path, encoding="utf-8") as handle:
            names = json.load(handle)["components"]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise TypeError("components is not a list of strings")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        problems.append(f"{ALLOWED_COMPONENTS_FILE} is unreadable ({type(exc).__name__}); redeploy the front door")
        return []
    return [n.strip() for n in names if n.strip()]


def read_settings(packaged_path: str) -> Settings:
    """Read and validate the environment (and the component list at ``packaged_path``); every problem is
    reported in one error."""
    environment = env.Environment()
    endpoint = environment.raw("ENDPOINT_NAME")
    if not endpoint or len(endpoint) > 63 or not ENDPOINT_NAME_RE.fullmatch(endpoint):
        environment.add(
            "ENDPOINT_NAME",
            endpoint,
            "a SageMaker endpoint name (1-63 chars, [a-zA-Z0-9-], no leading/trailing hyphen)",
        )
    table = environment.text("SESSIONS_TABLE", required=True, allowed="the DynamoDB table name")
    default = environment.text("DEFAULT_COMPONENT", required=True, allowed="the base inference component name")
    allowed_raw = environment.csv("ALLOWED_COMPONENTS")
    allowed_raw.extend(packaged_components(packaged_path, environment.problems))
    allowed = tuple(dict.fromkeys([default, *allowed_raw])) if default else tuple(dict.fromkeys(allowed_raw))
    for name in allowed:
        if len(name) > COMPONENT_NAME_MAX or not COMPONENT_NAME_RE.fullmatch(name):
            environment.add(
                "DEFAULT_COMPONENT/ALLOWED_COMPONENTS",
                name,
                "inference component names (1-63 chars, [a-zA-Z0-9-], no leading/trailing hyphen)",
            )
    ttl = environment.integer("SESSION_TTL_SECONDS", DEFAULT_SESSION_TTL_SECONDS, minimum=1, maximum=7 * 24 * 3600)
    max_body = environment.integer("MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES, minimum=1, maximum=INVOKE_BODY_MAX_BYTES)
    owner_mode = environment.text("OWNER_MODE", default="session", choices=OWNER_MODES) or "session"
    pools = tuple(environment.csv("IDENTITY_POOLS"))
    for pool in pools:
        if not IDENTITY_POOL_RE.fullmatch(pool):
            environment.add("IDENTITY_POOLS", pool, "Cognito identity pool ids <region>:<GUID>")
    if owner_mode == "cognito_identity" and not pools:
        environment.add("IDENTITY_POOLS", "", "at least one identity pool id with OWNER_MODE=cognito_identity")
    environment.check(ConfigurationError, "session router misconfigured")
    return Settings(endpoint, table, ttl, default, allowed, max_body, owner_mode, pools)
