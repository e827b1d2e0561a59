"""Adapter manifests: a JSON or YAML list of ``{name, artifact_s3_uri}``, in a file or in S3.

A model with hundreds of adapters names them in a manifest instead of the config
(``ModelSpec.adapters_manifest``). Either shape is accepted::

    - {name: support-bot, artifact_s3_uri: s3://adapters/support-bot.tar.gz}

    adapters:
      - {name: support-bot, artifact_s3_uri: s3://adapters/support-bot.tar.gz}

An ``s3://`` manifest is read with boto3 at synth time, with the credentials the CDK CLI
runs with.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..core.errors import MISSING, ConfigurationError, Problem
from ..core.settings import _S3_URI
from ..core.validation import problems_from
from ..core.yaml_loading import UniqueKeyLoader, yaml_error_position
from ..settings.adapters import AdapterSpec

FIELD = "adapters_manifest"

_SHAPE = "a list of {name, artifact_s3_uri}, or a mapping whose only key 'adapters' holds that list"


def load_adapter_manifest(location: str, *, base_dir: Path | str, s3_client: Any = None) -> tuple[AdapterSpec, ...]:
    """The adapters a manifest lists, each validated, or one ``ConfigurationError`` with every problem.

    :param location: a file path (relative paths are under ``base_dir``) or ``s3://bucket/key``.
        ``.json`` files are read as JSON, anything else as YAML (which accepts JSON too).
    :param base_dir: where relative paths start, normally the config file's folder.
    :param s3_client: a boto3 S3 client. Default: ``boto3.client("s3")`` with the ambient
        credentials and region.
    """
    if location.startswith("s3://"):
        text, source = _read_s3(location, s3_client), location
    else:
        path = Path(location)
        if not path.is_absolute():
            path = Path(base_dir) / path
        source = str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or str(error)
            raise ConfigurationError(
                [
                    Problem(
                        FIELD,
                        location,
                        f"a readable JSON or YAML file (looked for {path}: {reason})",
                        "check the path; a relative path starts at the config file's folder",
                    )
                ],
                source=source,
            ) from None
    data = _parse(text, source, json_only=source.lower().endswith(".json"))
    return adapters_from(data, source=source)


def adapters_from(data: Any, *, source: str) -> tuple[AdapterSpec, ...]:
    """Validate manifest content (already parsed); paths look like ``adapters_manifest[3].name``."""
    items = data
    if isinstance(data, dict):
        unknown = sorted(str(key) for key in data if key != "adapters")
        if unknown or "adapters" not in data:
            raise ConfigurationError(
                [
                    Problem(
                        FIELD,
                        sorted(str(k) for k in data),
                        _SHAPE,
                        "put the adapters under 'adapters:' and remove other keys" if unknown else "add 'adapters:'",
                    )
                ],
                source=source,
            )
        items = data["adapters"]
    if not isinstance(items, list):
        raise ConfigurationError(
            [
                Problem(
                    FIELD,
                    type(items).__name__ if items is not None else MISSING,
                    _SHAPE,
                    "write one '- {name: ..., artifact_s3_uri: ...}' line per adapter",
                )
            ],
            source=source,
        )
    problems: list[Problem] = []
    adapters: list[AdapterSpec] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        path = f"{FIELD}[{index}]"
        if not isinstance(item, dict):
            problems.append(
                Problem(
                    path, item, "a mapping {name, artifact_s3_uri}", "write the adapter as name and artifact_s3_uri"
                )
            )
            continue
        try:
            adapter = AdapterSpec.model_validate(item)
        except ValidationError as error:
            problems.extend(p.under(path) for p in problems_from(error, AdapterSpec))
            continue
        if adapter.name in seen:
            problems.append(
                Problem(
                    f"{path}.name",
                    adapter.name,
                    f"a name not used by {FIELD}[{seen[adapter.name]}]",
                    "rename one of the two",
                )
            )
        seen.setdefault(adapter.name, index)
        adapters.append(adapter)
    if problems:
        raise ConfigurationError(problems, source=source)
    return tuple(adapters)


def _read_s3(location: str, client: Any) -> str:
    match = _S3_URI.match(location)
    key = match.group("key") if match else None
    if not match or not key or key.endswith("/"):
        raise ConfigurationError(
            [
                Problem(
                    FIELD,
                    location,
                    "s3://bucket/key of one object (a JSON or YAML file)",
                    "write the full object key, e.g. s3://my-bucket/adapters.yaml",
                )
            ],
            source=location,
        )
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        if client is None:
            import boto3

            client = boto3.client("s3")
        body: bytes = client.get_object(Bucket=match.group("bucket"), Key=key)["Body"].read()
        return body.decode("utf-8")
    except (BotoCoreError, ClientError, UnicodeDecodeError) as error:
        raise ConfigurationError(
            [
                Problem(
                    FIELD,
                    location,
                    f"an S3 object this synth can read (AWS said: {_aws_error(error)})",
                    "download it (`aws s3 cp " + location + " adapters.yaml`) and point adapters_manifest at the "
                    "file, or synth with credentials that may read it",
                )
            ],
            source=location,
        ) from None


def _aws_error(error: Exception) -> str:
    from botocore.exceptions import ClientError

    if isinstance(error, ClientError):
        info = error.response.get("Error", {})
        return f"{info.get('Code', 'error')}: {info.get('Message') or error}"
    return f"{type(error).__name__}: {error}"


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} is given twice")
        out[key] = value
    return out


def _parse(text: str, source: str, *, json_only: bool) -> Any:
    if json_only:
        try:
            return json.loads(text, object_pairs_hook=_unique_pairs)
        except json.JSONDecodeError as error:
            where, problem = f"line {error.lineno}, column {error.colno}", error.msg
        except ValueError as error:
            where, problem = "(whole file)", str(error)
        raise ConfigurationError(
            [Problem(f"{FIELD} ({where})", problem, "valid JSON", "fix the syntax there")], source=source
        )
    try:
        return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as error:
        where, problem = yaml_error_position(error)
        raise ConfigurationError(
            [Problem(f"{FIELD} ({where})", problem, "valid YAML", "fix the syntax there")], source=source
        ) from None
