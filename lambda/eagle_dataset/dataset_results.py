"""Reading what a Distributed Map run left: the ``ResultWriter`` manifest (``manifest.json`` with its
``ResultFiles``) and the result files it names, JSON arrays or JSON lines of child executions. The convert outputs
of the succeeded batches are collected (one per batch id), and the failed or pending batches counted with the
capture objects they held (from each one's ``Input``), so that finalize can tell a complete run from one that
left objects unconverted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError
from dataset_errors import MapRunIncompleteError, ResultsFormatError, access_error
from dataset_streams import OversizedLine, UnreadableData, iter_bounded_lines, iter_json_array

if TYPE_CHECKING:
    from dataset_events import ResultsLocation


def _iter_result_entries(s3: Callable[[], Any], bucket: str, key: str) -> Iterator[Any]:
    body = s3().get_object(Bucket=bucket, Key=key)["Body"]
    try:
        chunks = body.iter_chunks(1 << 20)
        if key.endswith(".jsonl"):
            for line in iter_bounded_lines(chunks, 64 << 20):
                if isinstance(line, OversizedLine):
                    raise ResultsFormatError(f"s3://{bucket}/{key} has a line of {line.size} bytes")
                if isinstance(line, UnreadableData):  # not from raw chunks; for the reader's full contract
                    raise ResultsFormatError(f"s3://{bucket}/{key} cannot be read ({line.reason})")
                if line.strip():
                    yield json.loads(line)
        else:
            yield from iter_json_array(chunks)
    except ValueError as error:
        raise ResultsFormatError(f"s3://{bucket}/{key} is not a Step Functions result file: {error}") from None
    finally:
        body.close()


def _batch_output(entry: Any, where: str) -> dict[str, Any]:
    """One ResultWriter entry (NONE transformation: ``{"Output": "<json>"}``; COMPACT: the output)."""
    output = entry.get("Output") if isinstance(entry, dict) and "Output" in entry else entry
    if isinstance(output, str):
        try:
            output = json.loads(output)
        except ValueError:
            raise ResultsFormatError(f"{where}: an Output is not JSON") from None
    if not isinstance(output, dict) or "batch_id" not in output or not isinstance(output.get("components"), dict):
        raise ResultsFormatError(f"{where}: an entry is not a convert result (no batch_id/components)")
    return output


def _failed_items(entry: Any, where: str) -> int:
    """Capture objects in one FAILED/PENDING child execution (from its ``Input``)."""
    batch = entry.get("Input") if isinstance(entry, dict) else None
    try:
        items = json.loads(batch)["Items"] if isinstance(batch, str) else None
    except (ValueError, KeyError, TypeError):
        items = None
    if not isinstance(items, list):
        raise MapRunIncompleteError(
            f"{where}: a failed batch has no readable Input, so the objects it held cannot be accounted for. "
            "Nothing was published and the watermark was not moved; fix the cause and run again."
        )
    return len(items)


def collect_results(s3: Callable[[], Any], location: ResultsLocation) -> tuple[list[dict[str, Any]], int, int]:
    """ResultWriter manifest -> (convert outputs of succeeded batches, failed batches, objects in them)."""
    try:
        manifest = json.loads(
            s3().get_object(Bucket=location.results_bucket, Key=location.results_manifest_key)["Body"].read()
        )
    except ClientError as error:
        raise access_error(error, f"Reading s3://{location.results_bucket}/{location.results_manifest_key}") from error
    except ValueError:
        raise ResultsFormatError(
            f"s3://{location.results_bucket}/{location.results_manifest_key} is not JSON"
        ) from None
    files = manifest.get("ResultFiles") if isinstance(manifest, dict) else None
    if not isinstance(files, dict):
        raise ResultsFormatError(
            f"s3://{location.results_bucket}/{location.results_manifest_key} has no ResultFiles; pass the "
            "manifest.json that the Distributed Map ResultWriter wrote (ResultWriterDetails.Key)"
        )
    bucket = manifest.get("DestinationBucket") or location.results_bucket

    def entries(status: str) -> Iterator[tuple[Any, str]]:
        for result_file in files.get(status) or []:
            key = result_file.get("Key") if isinstance(result_file, dict) else None
            if not isinstance(key, str):
                raise ResultsFormatError(f"a {status} entry of the result manifest has no Key")
            for entry in _iter_result_entries(s3, bucket, key):
                yield entry, f"s3://{bucket}/{key}"

    outputs: dict[str, dict[str, Any]] = {}
    for entry, where in entries("SUCCEEDED"):
        output = _batch_output(entry, where)
        outputs[output["batch_id"]] = output
    failed_batches = failed_objects = 0
    for status in ("FAILED", "PENDING"):
        for entry, where in entries(status):
            failed_batches += 1
            failed_objects += _failed_items(entry, where)
    return list(outputs.values()), failed_batches, failed_objects
