"""JumpStart models by id and version, resolved offline from a committed lock file.

``python -m sagemaker_llm_cdk.hosting.jumpstart lock --model-id ID --version V --region R`` (``make jumpstart-lock``)
reads JumpStart's published manifest once (the public content bucket ``jumpstart-cache-prod-<region>``:
``models_manifest.json`` and the model's spec JSON it points to, credentials needed) and writes what
serving needs into ``config/jumpstart.lock.yaml``: per region, per model id and version, the container
image, the artifacts, the container environment, accelerators and memory, and the licence a person must
accept. Synth reads only that file, so a JumpStart upgrade shows in a pull request as a lock-file diff.

Pre-trained heads: where the model's spec publishes a speculative-decoding source
(``hosting_additional_data_sources.speculative_decoding``, at the top level or in the spec's default
inference config, e.g. ``lmi-optimized``), the lock records it as ``pretrained_head``: channel, artifact
version, the S3 location resolved into its bucket (``provider`` JumpStart gated -> the private bucket,
JumpStart ungated -> the content bucket, none -> SageMaker's draft-model bucket
``sagemaker-sd-models-prod-<region>``, as the SageMaker Python SDK resolves it), its own licence when
gated, and ``kind``: ``eagle`` when the channel or key names EAGLE (served through
``OPTION_SPECULATIVE_CONFIG``), else ``draft_model`` (a separate small LLM, recorded, never served as
an EAGLE head). See ``pretrained_head``.

Provenance: every entry records its ``source``: ``jumpstart`` (the region, bucket and spec key it was read
from, the date and a sha256 digest of the spec) or ``fixture`` (written from a test fixture, or with no
source recorded). A fixture entry serves tests and synth, but the stack that uses it carries a template
rule that fails any deploy (``cdk deploy`` or ``make deploy``) with the command that refreshes the entry
from JumpStart, and preflight reports it as a blocker: its image, artifacts or head may not exist.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .jumpstart_entries import FROM_FIXTURE as FROM_FIXTURE
from .jumpstart_entries import FROM_JUMPSTART as FROM_JUMPSTART
from .jumpstart_entries import HEAD_KINDS as HEAD_KINDS
from .jumpstart_entries import JumpStartModel as JumpStartModel
from .jumpstart_entries import Licence as Licence
from .jumpstart_entries import LockSource as LockSource
from .jumpstart_entries import PretrainedHead as PretrainedHead
from .jumpstart_entries import lock_command as lock_command
from .jumpstart_lock import DEPLOY_RULE_PREFIX as DEPLOY_RULE_PREFIX
from .jumpstart_lock import LOCK_FILE_NAME, JumpStartLock
from .jumpstart_lock import LOCK_VERSION as LOCK_VERSION
from .jumpstart_lock import find_lock as find_lock
from .jumpstart_resolve import resolve as resolve
from .jumpstart_resolve import spec_problems as spec_problems
from .jumpstart_spec import MANIFEST_KEY as MANIFEST_KEY
from .jumpstart_spec import SpecError, fetch_model
from .jumpstart_spec import content_bucket as content_bucket
from .jumpstart_spec import default_config as default_config
from .jumpstart_spec import draft_model_bucket as draft_model_bucket
from .jumpstart_spec import gated_bucket as gated_bucket
from .jumpstart_spec import head_from_spec as head_from_spec
from .jumpstart_spec import model_from_spec as model_from_spec

__all__ = [
    "DEPLOY_RULE_PREFIX",
    "FROM_FIXTURE",
    "FROM_JUMPSTART",
    "HEAD_KINDS",
    "LOCK_FILE_NAME",
    "LOCK_VERSION",
    "MANIFEST_KEY",
    "JumpStartLock",
    "JumpStartModel",
    "Licence",
    "LockSource",
    "PretrainedHead",
    "SpecError",
    "content_bucket",
    "default_config",
    "draft_model_bucket",
    "fetch_model",
    "find_lock",
    "gated_bucket",
    "head_from_spec",
    "lock_command",
    "main",
    "model_from_spec",
    "resolve",
    "spec_problems",
]


def main(argv: list[str] | None = None, *, s3: Any = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sagemaker_llm_cdk.hosting.jumpstart")
    sub = parser.add_subparsers(dest="command", required=True)
    lock = sub.add_parser("lock", help="add or refresh one model id and version in the lock file")
    lock.add_argument("--model-id", required=True)
    lock.add_argument("--version", required=True)
    lock.add_argument("--region", required=True)
    lock.add_argument("--lock-file", default=f"config/{LOCK_FILE_NAME}")
    args = parser.parse_args(argv)
    if s3 is None:
        import boto3

        s3 = boto3.client("s3", region_name=args.region)
    try:
        model = fetch_model(s3, model_id=args.model_id, version=args.version, region=args.region)
    except SpecError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    path = Path(args.lock_file)
    current = JumpStartLock.load(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(current.with_entry(model).dump(), encoding="utf-8")
    gated = f"; gated: licence {model.licence.name} {model.licence.url}" if model.licence else ""
    print(f"locked {model.model_id} {model.version} in {model.region}: {model.image_uri}{gated}", file=sys.stderr)
    head = model.pretrained_head
    if head is not None:
        head_gated = f", gated: licence {head.licence.name} {head.licence.url}" if head.licence else ""
        print(
            f"  pre-trained {head.kind} draft: {head.s3_uri} (channel {head.channel_name}{head_gated})", file=sys.stderr
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
