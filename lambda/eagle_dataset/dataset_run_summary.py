"""Finishing a run's dataset: the convert outputs of its batches added up per component (:func:`tally_results`,
which refuses results that do not account for every planned object or whose counts do not add up), a SageMaker
``ManifestFile`` per component with shards (:func:`write_manifests`), the run's ``summary.json``
(:func:`write_summary`), and finalize's answer (:func:`finalize_output`). Records that named no inference
component are counted as ``unattributed`` and never in any component's training set.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dataset_errors import MapRunIncompleteError, ResultsFormatError
from dataset_keys import join_key
from dataset_objects import encryption

if TYPE_CHECKING:
    from dataset_events import PlanOutput


@dataclass
class RunTally:
    """The convert outputs of a run's succeeded batches, added up, and what its failed batches held."""

    outputs: list[dict[str, Any]]
    failed_batches: int
    failed_objects: int
    objects: int
    """Capture objects read."""
    missing: int
    """Listed capture objects that no longer existed."""
    components: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per component: ``records_in``, ``converted``, ``duplicates``, ``skipped`` (a Counter), ``shards``,
    ``bytes``, and for agent traffic ``tool_calling`` and ``dropped``."""
    totals: dict[str, int] = field(default_factory=lambda: {"records_in": 0, "converted": 0, "duplicates": 0})
    skipped: Counter[str] = field(default_factory=Counter)

    @property
    def complete(self) -> bool:
        """No batch failed: the watermark may move."""
        return self.failed_batches == 0

    @property
    def unattributed(self) -> int:
        # No fallback to "base": records that name no component are the convert step's to attribute
        # (UNNAMED_RECORDS_COMPONENT) or to keep apart, never finalize's to guess.
        return sum(stats["skipped"].get("unattributed_component", 0) for stats in self.components.values())

    def records(self, component: str) -> int:
        return self.components.get(component, {}).get("converted", 0)


@dataclass(frozen=True)
class Manifests:
    """Where each component's training data is: its data prefix and its ``ManifestFile``, as S3 URIs."""

    component_uris: dict[str, str]
    manifest_uris: dict[str, str]


def tally_results(
    plan_output: PlanOutput, outputs: list[dict[str, Any]], failed_batches: int, failed_objects: int
) -> RunTally:
    """The batch outputs added up. Results that do not account for every object the plan listed are a
    ``MapRunIncompleteError``; counts that do not add up are a ``ResultsFormatError``."""
    tally = RunTally(
        outputs=outputs,
        failed_batches=failed_batches,
        failed_objects=failed_objects,
        objects=sum(o.get("objects", 0) for o in outputs),
        missing=sum(o.get("objects_missing", 0) for o in outputs),
    )
    accounted = tally.objects + tally.missing + failed_objects
    if accounted < plan_output.object_count:
        raise MapRunIncompleteError(
            f"The plan listed {plan_output.object_count} capture objects but the batch results account for "
            f"{accounted}. Pass the ResultWriter manifest of this run's Distributed Map; "
            "the watermark was not moved."
        )
    tally.components = _merge_components(outputs)
    for stats in tally.components.values():
        for name in tally.totals:
            tally.totals[name] += stats[name]
        tally.skipped.update(stats["skipped"])
        if stats["records_in"] != stats["converted"] + stats["duplicates"] + sum(stats["skipped"].values()):
            raise ResultsFormatError("batch counts do not add up (records_in != converted + duplicates + skipped)")
    return tally


def _merge_components(outputs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The per-component counts and shards of every batch output, added up per component."""
    components: dict[str, dict[str, Any]] = {}
    for output in outputs:
        for name, stats in output["components"].items():
            merged = components.setdefault(
                name, {"records_in": 0, "converted": 0, "duplicates": 0, "skipped": Counter(), "shards": [], "bytes": 0}
            )
            for field_name in ("records_in", "converted", "duplicates", "bytes"):
                merged[field_name] += int(stats.get(field_name, 0))
            merged["skipped"].update(stats.get("skipped", {}))
            merged["shards"] += stats.get("shards", [])
            if stats.get("tool_calling") or stats.get("dropped"):  # agent traffic (dataset_agents.DROPPED_PARTS)
                merged["tool_calling"] = merged.get("tool_calling", 0) + int(stats.get("tool_calling", 0))
                merged.setdefault("dropped", Counter()).update(stats.get("dropped", {}))
    return components


def _run_prefix(plan_output: PlanOutput) -> str:
    return join_key(plan_output.output_prefix, plan_output.run_id)


def write_manifests(s3: Callable[[], Any], plan_output: PlanOutput, components: dict[str, dict[str, Any]]) -> Manifests:
    """A ``ManifestFile`` (``[{"prefix": <data prefix>}, <shard>...]``) per component that has shards."""
    bucket = plan_output.output_bucket
    run_prefix = _run_prefix(plan_output)
    component_uris: dict[str, str] = {}
    manifest_uris: dict[str, str] = {}
    for name, stats in sorted(components.items()):
        if not stats["shards"]:
            continue
        prefix_uri = f"s3://{bucket}/{join_key(run_prefix, 'data', name)}/"
        manifest_key = join_key(run_prefix, "manifests", f"{name}.json")
        body = json.dumps([{"prefix": prefix_uri}, *sorted(stats["shards"])]).encode("utf-8")
        s3().put_object(Bucket=bucket, Key=manifest_key, Body=body, ContentType="application/json", **encryption())
        component_uris[name] = prefix_uri
        manifest_uris[name] = f"s3://{bucket}/{manifest_key}"
    return Manifests(component_uris=component_uris, manifest_uris=manifest_uris)


def write_summary(
    s3: Callable[[], Any],
    plan_output: PlanOutput,
    tally: RunTally,
    manifests: Manifests,
    target: str,
    *,
    created_at: str,
) -> str:
    """Write the run's ``summary.json`` (counts per component, what was skipped and why, the watermark); its key."""
    summary_key = join_key(_run_prefix(plan_output), "summary.json")
    summary = _summary_document(plan_output, tally, manifests, target, created_at)
    s3().put_object(
        Bucket=plan_output.output_bucket,
        Key=summary_key,
        Body=json.dumps(summary, indent=1).encode("utf-8"),
        ContentType="application/json",
        **encryption(),
    )
    return summary_key


def _summary_document(
    plan_output: PlanOutput, tally: RunTally, manifests: Manifests, target: str, created_at: str
) -> dict[str, Any]:
    records = tally.records(target)
    return {
        "run_id": plan_output.run_id,
        "created_at": created_at,
        "capture": {"bucket": plan_output.capture_bucket, "prefix": plan_output.capture_prefix},
        "objects": tally.objects,
        "objects_missing": tally.missing,
        "batches": len(tally.outputs),
        **tally.totals,
        "skipped": dict(sorted(tally.skipped.items())),
        "unattributed": tally.unattributed,
        "unattributed_note": "records that name no inference component (AWS does not document that Data Capture "
        "records of inference-component endpoints do); counted, never used for training",
        **agent_totals(tally.components),
        "components": {
            name: {
                **{k: v for k, v in stats.items() if k not in ("shards", "skipped", "dropped")},
                "skipped": dict(sorted(stats["skipped"].items())),
                **({"dropped": dict(sorted(stats["dropped"].items()))} if "dropped" in stats else {}),
                "shard_count": len(stats["shards"]),
                "s3_uri": manifests.component_uris.get(name),
                "manifest_s3_uri": manifests.manifest_uris.get(name),
            }
            for name, stats in sorted(tally.components.items())
        },
        "dedup_scope": "exact duplicates are removed within each Distributed Map batch and component, "
        "not across batches or runs",
        "dedup_saturated_batches": sum(1 for o in tally.outputs if o.get("dedup_saturated")),
        "target_component": target,
        "requested_component": target,
        "empty": records == 0,
        "complete": tally.complete,
        "failed_batches": tally.failed_batches,
        "failed_objects": tally.failed_objects,
        "watermark": {"parameter": plan_output.watermark_parameter, "new_watermark": plan_output.new_watermark},
    }


def agent_totals(components: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``tool_calling`` (records written with tool calls or tool results) and ``dropped`` (what those records
    leave out: the request's tool definitions, the model's reasoning) over all components; nothing when the
    run saw no agent traffic, so other summaries keep their shape."""
    agent = [stats for stats in components.values() if "tool_calling" in stats]
    if not agent:
        return {}
    dropped: Counter[str] = Counter()
    for stats in agent:
        dropped.update(stats.get("dropped", {}))
    return {
        "tool_calling": sum(stats["tool_calling"] for stats in agent),
        "dropped": dict(sorted(dropped.items())),
        "dropped_note": "tool-calling turns are written as OpenAI chat messages (assistant tool_calls, tool "
        "results); the request's tool definitions and the model's reasoning have no field in "
        "the format the optimization job documents, so they are left out and counted here",
    }


def empty_reason(plan_output: PlanOutput, tally: RunTally, target: str, manifests: Manifests) -> str:
    """Why the run has no training records for ``target`` (``""`` when it has some)."""
    if tally.records(target):
        return ""
    totals, skipped, unattributed = tally.totals, tally.skipped, tally.unattributed
    return (
        f"No training records for component '{target}' in run {plan_output.run_id}: {plan_output.object_count} "
        f"capture objects, {totals['records_in']} lines, {totals['converted']} converted in all components, skipped "
        f"{dict(skipped) or 'none'}. Capture more traffic, or set target_component to one of "
        f"{sorted(manifests.component_uris) or 'none'}."
        + (
            f" {unattributed} records named no inference component and were kept apart (unattributed_component): "
            "they may be adapter traffic, so they never train a component's head."
            if unattributed
            else ""
        )
    )


def finalize_output(
    plan_output: PlanOutput,
    tally: RunTally,
    manifests: Manifests,
    target: str,
    summary_key: str,
    watermark_commit: dict[str, Any] | None,
) -> dict[str, Any]:
    """Finalize's answer: where the training data of ``target`` is, how much there is, and whether and where
    the watermark moves."""
    bucket = plan_output.output_bucket
    records = tally.records(target)
    return {
        "training_data_s3_uri": f"s3://{bucket}/{join_key(_run_prefix(plan_output), 'data', target)}/",
        "s3_data_type": "S3Prefix",
        "manifest_s3_uri": manifests.manifest_uris.get(target),
        "records": records,
        "empty": records == 0,
        "reason": empty_reason(plan_output, tally, target, manifests),
        "component": target,
        "requested_component": target,
        "complete": tally.complete,
        "failed_batches": tally.failed_batches,
        "summary_key": summary_key,
        "summary_s3_uri": f"s3://{bucket}/{summary_key}",
        "component_uris": manifests.component_uris,
        "component_records": {name: stats["converted"] for name, stats in sorted(tally.components.items())},
        "unattributed": tally.unattributed,
        "skipped": dict(sorted(tally.skipped.items())),
        "watermark_commit": watermark_commit,
    }
