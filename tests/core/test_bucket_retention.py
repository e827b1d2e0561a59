"""Every bucket the shipped configs create that can hold people's text expires it and lets only named roles read it.

Each shipped config (config/default.yaml, dev.yaml, prod.yaml, config/examples/*.yaml) is synthesized in
this interpreter (``support.assemblies``), and so is default.yaml with the EAGLE dataset taken from the
front door's turn log, the one config shape that creates the turn log. A bucket is a log bucket when another
bucket's server access logs go to it (S3 writes only access logs there, no request text); every other bucket
is written by something that carries people's text (Data Capture, the turn log's Firehose stream, the EAGLE
dataset builder) and must have an expiration lifecycle rule and a bucket policy that denies ``s3:GetObject``
to every principal but named ones.

What each writer puts where is read from the template, not from a list here: the Firehose destinations, the
Data Capture destinations, and every IAM statement allowing ``s3:PutObject`` on a bucket's objects. Each
written prefix must expire, except those in ``KEPT`` (each with why it holds no one's text).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.assemblies import ROOT, config_data, synth_config

pytestmark = pytest.mark.synth

CONFIGS = [
    "default.yaml",
    "dev.yaml",
    "prod.yaml",
    *sorted(f"examples/{p.name}" for p in (ROOT / "config" / "examples").glob("*.yaml")),
]
FRONT_DOOR = "default.yaml+front_door"
KEPT = {
    "jobs/": "the EAGLE optimization job's output: the draft head's weights and the job's own metrics",
    "reports/": "EAGLE run reports: job names, statuses and measured speedups",
    "benchmarks/": "AI benchmark job results: latency and throughput figures of the endpoint",
}
"""Prefixes written into a bucket of people's text that are kept on purpose, and what they hold."""
KNOWN_GAPS: dict[tuple[str, str], str] = {}
"""Written prefixes of people's text that do not expire yet, with where that is decided."""

_ASSEMBLIES: dict[str, dict[str, dict[str, Any]]] = {}


def templates(name: str) -> dict[str, dict[str, Any]]:
    """``{template file: resources}`` of the app synthesized from config ``name`` (once per test session)."""
    if name not in _ASSEMBLIES:
        path = ROOT / "config" / name.split("+")[0]
        data = config_data(path)
        if name == FRONT_DOOR:
            model = data["endpoints"][0]["models"][0]
            model["eagle"]["dataset"] = {"source": "front_door"}
            model.setdefault("sessions", {})
        out = Path(tempfile.mkdtemp(prefix="bucket-retention-"))
        synth_config(data, path.parent, out)
        _ASSEMBLIES[name] = {
            p.name: json.loads(p.read_text(encoding="utf-8")).get("Resources", {}) for p in out.glob("*.template.json")
        }
    return _ASSEMBLIES[name]


def _parts(value: Any) -> list[Any]:
    """The pieces of a ``Fn::Join`` with an empty separator (or the value itself)."""
    if isinstance(value, dict) and "Fn::Join" in value and value["Fn::Join"][0] == "":
        out: list[Any] = []
        for part in value["Fn::Join"][1]:
            out.extend(_parts(part))
        return out
    return [value]


def _bucket_of(part: Any, buckets: set[str]) -> str | None:
    if isinstance(part, dict):
        ref = part.get("Ref") or (part.get("Fn::GetAtt") or [None])[0]
        if ref in buckets:
            return str(ref)
    return None


def _prefix_after(value: Any, buckets: set[str]) -> tuple[str, str] | None:
    """(bucket id, key prefix) of an ARN or URI made of a bucket reference and a literal tail."""
    parts = _parts(value)
    for index, part in enumerate(parts):
        bucket = _bucket_of(part, buckets)
        if bucket is not None:
            tail = "".join(p for p in parts[index + 1 :] if isinstance(p, str))
            return bucket, tail.lstrip("/").split("!{")[0].rstrip("*")
    return None


def written(resources: dict[str, Any], buckets: set[str]) -> Iterator[tuple[str, str, str]]:
    """(bucket id, key prefix, writer) of everything the template lets write into its buckets."""
    for name, resource in resources.items():
        kind, props = resource["Type"], resource.get("Properties", {})
        if kind == "AWS::KinesisFirehose::DeliveryStream":
            destination = props.get("ExtendedS3DestinationConfiguration") or {}
            bucket = _bucket_of(destination.get("BucketARN"), buckets)
            if bucket is not None:
                for key in ("Prefix", "ErrorOutputPrefix"):
                    yield bucket, str(destination.get(key, "")).split("!{")[0], f"{name} (Firehose {key})"
        elif kind == "AWS::SageMaker::EndpointConfig":
            found = _prefix_after((props.get("DataCaptureConfig") or {}).get("DestinationS3Uri"), buckets)
            if found is not None:
                yield found[0], found[1], f"{name} (Data Capture)"
        elif kind == "AWS::IAM::Policy":
            statements = props["PolicyDocument"]["Statement"]
            # A Deny of PutObject on NotResource <bucket>/<prefix>* keeps the policy's writes to that prefix.
            only: dict[str, str] = {}
            for statement in statements:
                if statement["Effect"] == "Deny" and _puts(statement) and "NotResource" in statement:
                    found = _prefix_after(statement["NotResource"], buckets)
                    if found is not None:
                        only[found[0]] = found[1]
            for statement in statements:
                if statement["Effect"] != "Allow" or not _puts(statement):
                    continue
                targets = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
                for target in targets:
                    found = _prefix_after(target, buckets)
                    if found is not None:
                        bucket, prefix = found
                        if bucket in only and only[bucket].startswith(prefix):
                            prefix = only[bucket]
                        yield bucket, prefix, f"{name} ({statement.get('Sid', 'PutObject')})"


def _puts(statement: dict[str, Any]) -> bool:
    actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
    return any(a in ("s3:PutObject", "s3:PutObject*", "s3:*", "*") for a in actions)


def text_buckets(resources: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """The buckets of one template that can hold people's text, and its log buckets."""
    buckets = {k: v for k, v in resources.items() if v["Type"] == "AWS::S3::Bucket"}
    logs = {
        v["Properties"]["LoggingConfiguration"]["DestinationBucketName"]["Ref"]
        for v in buckets.values()
        if "LoggingConfiguration" in v.get("Properties", {})
    }
    return {k: v for k, v in buckets.items() if k not in logs}, logs


def expiring_prefixes(bucket: dict[str, Any]) -> list[str]:
    rules = bucket.get("Properties", {}).get("LifecycleConfiguration", {}).get("Rules", [])
    return [r.get("Prefix", "") for r in rules if r.get("Status") == "Enabled" and r.get("ExpirationInDays")]


def denies_reads(resources: dict[str, Any], bucket_id: str) -> bool:
    for resource in resources.values():
        if resource["Type"] == "AWS::S3::BucketPolicy" and resource["Properties"]["Bucket"] == {"Ref": bucket_id}:
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
                actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                if (
                    statement["Effect"] == "Deny"
                    and statement.get("Principal") in ({"AWS": "*"}, "*")
                    and "s3:GetObject" in actions
                    and "Condition" in statement
                ):
                    return True
    return False


@pytest.mark.parametrize("config", [*CONFIGS, FRONT_DOOR])
def test_every_bucket_of_peoples_text_expires_and_denies_reads(config):
    problems = []
    seen = 0
    for template, resources in templates(config).items():
        buckets, _ = text_buckets(resources)
        for bucket_id, bucket in buckets.items():
            seen += 1
            if not expiring_prefixes(bucket):
                problems.append(f"{template} {bucket_id}: no lifecycle rule expires its objects")
            if not denies_reads(resources, bucket_id):
                problems.append(f"{template} {bucket_id}: its policy denies s3:GetObject to no one")
    assert seen, f"{config} synthesized no bucket of people's text: the enumeration found nothing to check"
    assert not problems, "\n".join(problems)


def test_the_front_door_variant_has_the_turn_log_bucket():
    resources = [r for t in templates(FRONT_DOOR).values() for r in t.values()]
    assert any(r["Type"] == "AWS::KinesisFirehose::DeliveryStream" for r in resources)


def _prefix_cases() -> list[Any]:
    cases = []
    for config in [*CONFIGS, FRONT_DOOR]:
        marks = [pytest.mark.xfail(strict=True, reason=reason) for (c, _), reason in KNOWN_GAPS.items() if c == config]
        cases.append(pytest.param(config, marks=marks, id=config))
    return cases


@pytest.mark.parametrize("config", _prefix_cases())
def test_every_prefix_a_writer_puts_peoples_text_under_expires(config):
    problems, checked = [], 0
    for template, resources in templates(config).items():
        buckets, logs = text_buckets(resources)
        for bucket_id, prefix, writer in written(resources, set(buckets) | logs):
            assert bucket_id not in logs, f"{template}: {writer} writes into log bucket {bucket_id}"
            checked += 1
            if any(prefix.startswith(kept) for kept in KEPT):
                continue
            if not any(prefix.startswith(rule) for rule in expiring_prefixes(buckets[bucket_id])):
                problems.append(
                    f"{template} {bucket_id}: {writer} writes under {prefix or '(every key)'}, "
                    "which no lifecycle rule expires"
                )
    assert checked, f"{config}: no writer into its buckets found: the enumeration read nothing"
    assert not problems, "\n".join(problems)
