"""The test process's jsii kernel without jsii's relay process: one Node process per pytest worker instead of two.

jsii's Python runtime starts ``node bin/jsii-runtime.js``, a relay that spawns the kernel (``lib/program.js``)
as its child and copies every API message between the two pipes (stdin and stdout of the relay, fd 3 of the
kernel). In the synth-heavy test modules the relay cost about 16% of the CPU (3.3 of 24.7 s in
test_eagle + test_monitoring: a wake-up, a read and a write per message on each side). ``JSII_RUNTIME``
(read by jsii's process provider) names the script Node runs instead: ``jsii_kernel.js`` runs the same kernel
in that process, with fd 3 mapped onto stdin/stdout and console output in the relay's envelope, so what Python
sees is byte for byte what the relay sends.

Only the test process itself uses it (the variables are set while its kernel starts, then restored), so
every ``cdk synth``, app and example subprocess of the tests runs jsii as users do. It relies on two details
of jsii 1.x's kernel; where either is missing, the tests use jsii's own runtime and say why.
``LLM_CDK_TESTS_JSII_RELAY=1`` does so on request.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.resources
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

RELAY_SWITCH = "LLM_CDK_TESTS_JSII_RELAY"
SCRIPT = Path(__file__).with_name("jsii_kernel.js")
ASSUMED = {
    "readFD:3,writeFD:3": "the kernel talks over fd 3",
    'process.execArgv.includes("--preserve-symlinks")': "the kernel links cached packages under --preserve-symlinks",
}
"""Text of jsii's lib/program.js that jsii_kernel.js relies on, and why."""


def unsupported_reason() -> str | None:
    """Why the kernel cannot run without the relay here, or None when it can."""
    if os.environ.get(RELAY_SWITCH, "") not in ("", "0"):
        return f"{RELAY_SWITCH} is set"
    if os.environ.get("JSII_RUNTIME") or os.environ.get("JSII_NODE"):
        return "JSII_RUNTIME or JSII_NODE is set already"
    import jsii
    import jsii._embedded.jsii as embedded

    if not jsii.__version__.startswith("1."):
        return f"jsii {jsii.__version__} is not jsii 1.x"
    program = next((res for res, name in embedded.EMBEDDED_FILES.items() if name == "lib/program.js"), None)
    if program is None:
        return "jsii ships no lib/program.js"
    text = importlib.resources.files(embedded).joinpath(program).read_text(encoding="utf-8")
    missing = [why for needle, why in ASSUMED.items() if needle not in text]
    return f"jsii {jsii.__version__}'s kernel changed ({'; '.join(missing)} no longer holds)" if missing else None


def _extract() -> Path:
    """jsii's embedded runtime files under their real names (lib/program.js and its worker), with the script."""
    import jsii._embedded.jsii as embedded

    folder = Path(tempfile.mkdtemp(prefix="llm-cdk-tests-jsii-runtime-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)  # registered first, so it runs after jsii's stop
    for resource, name in embedded.EMBEDDED_FILES.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(importlib.resources.files(embedded).joinpath(resource).read_bytes())
    shutil.copyfile(SCRIPT, folder / SCRIPT.name)
    return folder


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def start() -> str | None:
    """Start this process's jsii kernel (by importing aws_cdk) without the relay where it can; return why not."""
    reason = unsupported_reason()
    if reason is not None:
        if not reason.startswith(RELAY_SWITCH):  # asked for: nothing to say
            warnings.warn(f"the tests run jsii's relay process: {reason}", stacklevel=2)
        import aws_cdk  # noqa: F401  # the kernel starts with the first assembly

        return reason
    folder = _extract()
    with _environment({"JSII_RUNTIME": str(folder / SCRIPT.name), "NODE_PRESERVE_SYMLINKS": "1"}):
        import aws_cdk  # noqa: F401  # the kernel starts with the first assembly, under these variables
    return None
