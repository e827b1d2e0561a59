"""Cold import of each Lambda handler (``lambda/<name>/index.py``) against ``import boto3`` alone, in one call.

Usage: ``python benchmarks/cold_start.py [--runs 5] [--assembly cdk.out] [NAME ...]``

What a cold start pays before the handler runs is the import of its module: each run is a fresh
interpreter (``python -X importtime -c 'import index'`` with the function's staged asset folder (the handler
folder plus the shared ``llm_cdk_shared`` package) first on ``sys.path``, as the Lambda runtime loads it) with
the environment variables the function gets: read from the synthesized templates in ``--assembly`` when there
(the function whose ``POWERTOOLS_SERVICE_NAME`` is the folder's name; tokens become placeholders), else the
variables ``functions.python_function`` always sets. The baseline, ``python -X importtime -c 'import boto3'``,
runs in turn with every handler (A B A B ...), so drift on a shared machine hits both alike.

Printed per function: the median CPU time of the import (user + system time of the process from just
before ``import index`` to just after it: the interpreter's start-up excluded, and waiting for a shared
machine's cores not counted, so it is the steadiest figure), its ratio to ``import boto3`` (median of
the per-pair ratios, their range, and the ratio of the fastest runs), the same for wall time, and the
heaviest top-level modules the handler imports beyond boto3's. Target: each handler's import at most 1.5x
``import boto3``.

Then, so that work moved from the import to the first call shows, the same for **import + the first event**: a
third fresh process per round imports the handler and answers the event its function gets most
(``benchmarks/first_events.py``: e.g. ``is_complete`` polling for deployment_check, ``POST /invoke`` in a session
for session_router), with every AWS call answered by ``botocore.stub.Stubber`` on the handler's own clients (no
network; the clients are made inside the timed part, as on a real first call; queuing the answers is not timed).
Printed per function: its median CPU time from the start of ``import index`` to the answer, the ratio to
``import boto3`` of the same round (median, range), the wall time and its ratio, the CPU ms of it the
handler's getters spent making boto3 clients (loading the service models: what any handler pays on its
first call to a service), and the modules the event loaded beyond those of the import (the heaviest new
packages, ``-X importtime`` own time summed by package). ``--import-only``
skips this part.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

from sagemaker_llm_cdk.core._assets import staged_handler

sys.path.insert(0, str(Path(__file__).resolve().parent))
import first_events  # the scenarios, beside this file

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = Path(__file__).resolve().parent
LAMBDA = ROOT / "lambda"
GOAL = 1.5
_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)")


def handlers(names: list[str]) -> list[str]:
    found = sorted(p.parent.name for p in LAMBDA.glob("*/index.py"))
    unknown = sorted(set(names) - set(found))
    if unknown:
        sys.exit(f"no lambda/<name>/index.py for {', '.join(unknown)}; there are: {', '.join(found)}")
    return [n for n in found if not names or n in names]


def placeholder(value: object) -> str:
    return value if isinstance(value, str) else "placeholder"


def function_environments(assembly: Path) -> dict[str, dict[str, str]]:
    """``folder -> environment`` of each function in the assembly's templates (by POWERTOOLS_SERVICE_NAME)."""
    found: dict[str, dict[str, str]] = {}
    for template in sorted(assembly.glob("*.template.json")) if assembly.is_dir() else []:
        for resource in json.loads(template.read_text()).get("Resources", {}).values():
            if resource.get("Type") != "AWS::Lambda::Function":
                continue
            variables = (resource.get("Properties", {}).get("Environment") or {}).get("Variables") or {}
            name = variables.get("POWERTOOLS_SERVICE_NAME")
            if isinstance(name, str) and name not in found:
                found[name] = {k: placeholder(v) for k, v in variables.items()}
    return found


def environment(name: str, templates: dict[str, dict[str, str]]) -> dict[str, str]:
    """A Lambda-like environment for ``name``: region, function name, no credentials lookups, its variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "POWERTOOLS_"))}
    env.update(
        {
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_LAMBDA_FUNCTION_NAME": name,
            "AWS_EXECUTION_ENV": "AWS_Lambda_python3.13",
            "AWS_EC2_METADATA_DISABLED": "true",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    env.update(templates.get(name) or {"POWERTOOLS_SERVICE_NAME": name, "POWERTOOLS_METRICS_NAMESPACE": "SageMakerLlm"})
    return env


def _modules(stderr: str, skip: str | None = None, column: int = 2) -> dict[str, int]:
    """Each module's cumulative µs (``column`` 1: its own µs) from ``-X importtime`` output; ``skip``: a module
    left out with all it imported."""
    lines = [(len(m.group(3)), m.group(4), int(m.group(column))) for m in map(_LINE.match, stderr.splitlines()) if m]
    skipped: set[int] = set()
    for at, (depth, name, _) in enumerate(lines):
        if name == skip:  # its imports are the lines just before it, indented deeper
            skipped.add(at)
            before = at - 1
            while before >= 0 and lines[before][0] > depth:
                skipped.add(before)
                before -= 1
    modules: dict[str, int] = {}
    for at, (_, name, cumulative) in enumerate(lines):
        if at not in skipped:
            modules[name] = max(modules.get(name, 0), cumulative)
    return modules


def run(module: str, cwd: Path, env: dict[str, str]) -> tuple[float, float, dict[str, int]]:
    """CPU seconds and wall seconds of ``import module`` (everything it imports; the interpreter's start-up not
    included) and each module's cumulative µs from ``-X importtime``, of one fresh process."""
    statement = (
        f"import sys, time; sys.path.insert(0, '.'); c, w = time.process_time(), time.perf_counter(); "
        f"import {module}; print(time.process_time() - c, time.perf_counter() - w)"
    )
    command = [sys.executable, "-X", "importtime", "-c", statement]
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if result.returncode:
        sys.exit(f"import {module} in {cwd} failed:\n{result.stderr[-3000:]}")
    cpu, wall = (float(x) for x in result.stdout.split()[-2:])
    return cpu, wall, _modules(result.stderr)


def first_event_environment(name: str, env: dict[str, str]) -> dict[str, str]:
    """``env`` with the variables ``name``'s scenario needs (``first_events.ENVIRONMENTS``; empty = unset)."""
    merged = dict(env)
    for key, value in first_events.ENVIRONMENTS.get(name, {}).items():
        if value:
            merged[key] = value
        else:
            merged.pop(key, None)
    return merged


def run_first_event(name: str, cwd: Path, env: dict[str, str]) -> tuple[float, float, dict[str, int], str, float]:
    """CPU and wall seconds from the start of ``import index`` to the answer of ``name``'s first event (one fresh
    process, ``-X importtime`` as for the import alone), each module's own µs (the benchmark's own
    ``first_events`` left out), what the event was, and the CPU seconds of it spent making the clients."""
    statement = (
        "import sys, time; sys.path.insert(0, '.'); c, w = time.process_time(), time.perf_counter(); "
        "import index; p = time.process_time(), time.perf_counter(); "
        f"sys.path.append({str(BENCHMARKS)!r}); import first_events; "
        f"print(first_events.first_call({name!r}, index, c, w, p))"
    )
    command = [sys.executable, "-X", "importtime", "-c", statement]
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if result.returncode:
        sys.exit(f"the first event of {name} in {cwd} failed:\n{result.stderr[-3000:]}")
    found = json.loads(result.stdout.strip().splitlines()[-1])
    return (
        float(found["cpu"]),
        float(found["wall"]),
        _modules(result.stderr, "first_events", column=1),
        str(found["what"]),
        float(found["clients_cpu"]),
    )


def new_packages(own: dict[str, int], before: dict[str, int]) -> list[tuple[int, str]]:
    """The µs of the modules in ``own`` (each module's own µs) and not in ``before``, summed by package, heaviest
    first: a package by its top-level name (``pydantic``), or by its first two parts when the top level was
    already loaded (``aws_lambda_powertools.event_handler``). Own times, so nothing is counted twice."""
    totals: dict[str, int] = {}
    for module, us in own.items():
        if module in before:
            continue
        parts = module.split(".")
        package = parts[0] if parts[0] not in before else ".".join(parts[:2])
        totals[package] = totals.get(package, 0) + us
    return sorted(((us, m) for m, us in totals.items()), reverse=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="handler folders (default: every lambda/<name>/index.py)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--assembly",
        type=Path,
        default=ROOT / "cdk.out",
        help="cloud assembly to read each function's environment from (default cdk.out)",
    )
    parser.add_argument("--heaviest", type=int, default=4, help="modules listed per handler beyond boto3's")
    parser.add_argument("--import-only", action="store_true", help="skip import + first event")
    args = parser.parse_args()
    templates = function_environments(args.assembly)
    names = handlers(args.names)
    source = f"environment from {args.assembly}" if templates else "default environment (no assembly)"
    print(f"{len(names)} handlers, {args.runs} runs each against `import boto3` in turn; {source}")
    print(
        f"{'function':<22} {'cpu ms':>7} {'boto3':>6} {'ratio':>6} {'range':>11} {'min/min':>7} {'wall ms':>7} "
        f"{'boto3':>6} {'ratio':>6}  heaviest beyond boto3 (-X importtime cumulative ms)"
    )
    worst = first_worst = 0.0
    first_lines: list[str] = []
    for name in names:
        env = environment(name, templates)
        first_env = first_event_environment(name, env)
        folder = Path(staged_handler(name))  # the asset as deployed: the handler folder plus llm_cdk_shared
        run("index", folder, env), run("boto3", folder, env)  # warm the file cache
        if not args.import_only:
            run_first_event(name, folder, first_env)
        handler, baseline, ratios = [], [], []
        first: list[tuple[float, float, dict[str, int], str, float]] = []
        modules: dict[str, int] = {}
        boto: dict[str, int] = {}
        for _ in range(args.runs):
            h = run("index", folder, env)
            b = run("boto3", folder, env)
            handler.append(h), baseline.append(b), ratios.append(h[0] / b[0])
            modules, boto = h[2], b[2]
            if not args.import_only:
                first.append(run_first_event(name, folder, first_env))
        extra = sorted(
            ((us, m) for m, us in modules.items() if m not in boto and "." not in m and m != "index"), reverse=True
        )[: args.heaviest]
        ratio = statistics.median(ratios)
        worst = max(worst, ratio)
        wall_ratio = statistics.median(h[1] / b[1] for h, b in zip(handler, baseline, strict=True))
        print(
            f"{name:<22} {statistics.median(h[0] for h in handler) * 1000:7.0f} "
            f"{statistics.median(b[0] for b in baseline) * 1000:6.0f} {ratio:5.2f}x "
            f"{min(ratios):5.2f}-{max(ratios):<5.2f} {min(h[0] for h in handler) / min(b[0] for b in baseline):6.2f}x "
            f"{statistics.median(h[1] for h in handler) * 1000:7.0f} "
            f"{statistics.median(b[1] for b in baseline) * 1000:6.0f} {wall_ratio:5.2f}x  "
            + ", ".join(f"{m} {us / 1000:.0f}" for us, m in extra),
            flush=True,
        )
        if first:
            first_ratios = [f[0] / b[0] for f, b in zip(first, baseline, strict=True)]
            first_worst = max(first_worst, statistics.median(first_ratios))
            loaded = new_packages(first[-1][2], modules)[: args.heaviest]
            first_lines.append(
                f"{name:<22} {first[-1][3][:42]:<42} {statistics.median(f[0] for f in first) * 1000:7.0f} "
                f"{statistics.median(b[0] for b in baseline) * 1000:6.0f} {statistics.median(first_ratios):5.2f}x "
                f"{min(first_ratios):5.2f}-{max(first_ratios):<5.2f} "
                f"{statistics.median(f[1] for f in first) * 1000:7.0f} "
                f"{statistics.median(f[1] / b[1] for f, b in zip(first, baseline, strict=True)):5.2f}x "
                f"{statistics.median(f[4] for f in first) * 1000:7.0f}  "
                + (", ".join(f"{m} {us / 1000:.0f}" for us, m in loaded) or "nothing")
            )
    print(f"highest ratio {worst:.2f}x; goal <= {GOAL}x for every handler")
    if first_lines:
        print(
            "\nimport + first event (benchmarks/first_events.py; AWS answered by Stubber, no network), CPU ratio to "
            "`import boto3` of the same rounds"
        )
        print(
            f"{'function':<22} {'event':<42} {'cpu ms':>7} {'boto3':>6} {'ratio':>6} {'range':>11} {'wall ms':>7} "
            f"{'ratio':>6} {'clients':>7}  loaded by the event beyond the import (-X importtime own ms by package)"
        )
        print("\n".join(first_lines))
        print(
            f"highest ratio {first_worst:.2f}x (import + first event; no goal: it shows what moved to the first call)"
        )


if __name__ == "__main__":
    main()
