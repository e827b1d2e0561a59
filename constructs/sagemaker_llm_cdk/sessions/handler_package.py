"""The session front door's Lambda code: the handler folder plus the list of components it serves.

The served component names go into a file packaged next to the handler (``ALLOWED_COMPONENTS_FILE``), not into
the function's environment: the list grows with the adapters, and Lambda allows 4 KB of environment in all.
The package is staged once per distinct content, so its asset hash changes exactly when the handler or the list
of names does.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from aws_cdk import aws_lambda as lambda_

from ..core._assets import staged_handler

HANDLER_FOLDER = "session_router"

ALLOWED_COMPONENTS_FILE = "allowed_components.json"
"""The served component names, packaged next to the handler (``{"components": [...]}``): a list that grows
with the adapters never goes into the function's environment (Lambda allows 4 KB in all)."""


def handler_code(names: Sequence[str]) -> lambda_.Code:
    """The handler folder plus ALLOWED_COMPONENTS_FILE, staged once per distinct content.

    The staging folder is named by the hash of what it holds, so repeated synths reuse it and the asset
    hash changes exactly when the handler or the list of names does.
    """
    source = Path(staged_handler(HANDLER_FOLDER))  # the handler folder plus the shared package llm_cdk_shared
    listing = json.dumps({"components": list(names)}, indent=0).encode()
    digest = hashlib.sha256(listing)
    files = sorted(
        p
        for p in source.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc" and p.name != ALLOWED_COMPONENTS_FILE
    )
    for path in files:
        digest.update(str(path.relative_to(source)).encode() + b"\0" + path.read_bytes())
    staged = Path(tempfile.gettempdir()) / f"sagemaker-llm-cdk-{HANDLER_FOLDER}-{digest.hexdigest()[:24]}"
    if not (staged / ALLOWED_COMPONENTS_FILE).is_file():
        work = Path(tempfile.mkdtemp(prefix=staged.name + "-", dir=staged.parent))
        for path in files:
            target = work / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        (work / ALLOWED_COMPONENTS_FILE).write_bytes(listing)
        try:
            os.replace(work, staged)  # atomic: a concurrent synth either sees all of it or stages its own
        except OSError:
            shutil.rmtree(work, ignore_errors=True)  # another synth staged the same content first
    return lambda_.Code.from_asset(str(staged))
