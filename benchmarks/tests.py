"""Wall time of the test suite as `make test` runs it, its CPU time, and the 15 slowest tests.

Usage: ``python benchmarks/tests.py [--baseline] [--by-module] [--workers 2] [-- extra pytest args]``

Runs ``pytest -n 2 --dist loadfile --no-loadscope-reorder`` (the Makefile's ``test`` target) once with
``--durations=15`` and prints: wall seconds, CPU seconds of pytest and every process it waited for
(Python, node/jsii, cdk, pip, checkov), their ratio (how well the two workers stayed busy: at most the
number of workers), the target's ratio (at most 120 s on 2 cores), and the 15 slowest tests.
CPU seconds move far less than wall seconds when other jobs share the machine: compare those.

``--by-module`` also measures every test's CPU seconds (``benchmarks/cpu_per_test.py``: the worker, its
children and the jsii kernel) and prints them summed by module, longest first: the order ``SLOW_FIRST`` in
``tests/conftest.py`` should follow.

``--baseline`` first runs the suite with xdist's default scheduling (``-n 2``, ``--dist load``), in the
same call, so the scheduling's share of the result is visible; it doubles the run time.

``--relay`` first runs the suite with jsii's relay process (``LLM_CDK_TESTS_JSII_RELAY=1``: each worker's
jsii kernel behind ``bin/jsii-runtime.js``, as jsii starts it), then as ``make test`` runs it (the kernel
without the relay, ``tests/support/jsii_kernel.py``), and prints the ratios; it doubles the run time.
Never a timing assert: this prints figures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_SECONDS = 120.0
MAKEFILE_SCHEDULING = ("--dist", "loadfile", "--no-loadscope-reorder")


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(ROOT / "node_modules" / ".bin"), str(Path(sys.executable).parent), env["PATH"]])
    env["CDK_DISABLE_VERSION_CHECK"] = "1"
    env["CDK_CLI_TELEMETRY"] = "false"
    return env


def run_suite(
    workers: int, scheduling: tuple[str, ...], extra: list[str], *, by_module: str = "", relay: bool = False
) -> dict[str, object]:
    env = environment()
    if relay:
        env["LLM_CDK_TESTS_JSII_RELAY"] = "1"
    if by_module:  # the plugin is imported by each xdist worker from benchmarks/
        env["CPU_PER_TEST_DIR"] = by_module
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "benchmarks"), *filter(None, [env.get("PYTHONPATH")])])
        extra = ["-p", "cpu_per_test", *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", str(workers), *scheduling, "--durations=15", "-q", *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out = result.stdout
    slowest = [line for line in out.splitlines() if re.match(r"^\d+\.\d+s (call|setup|teardown) ", line)]
    summary = [line for line in out.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    return {
        "wall": wall,
        "cpu": cpu,
        "status": result.returncode,
        "slowest": slowest[:15],
        "summary": summary[-1].strip("= ") if summary else out[-2000:] + result.stderr[-2000:],
    }


def report(name: str, figures: dict[str, object], workers: int) -> None:
    wall, cpu = float(figures["wall"]), float(figures["cpu"])  # type: ignore[arg-type]
    print(f"{name}: {figures['summary']}")
    print(
        f"  wall {wall:.1f} s, CPU {cpu:.1f} s, CPU/wall {cpu / wall:.2f} (at most {workers}), "
        f"wall / goal ({GOAL_SECONDS:.0f} s) {wall / GOAL_SECONDS:.2f}x, CPU/{workers} / goal "
        f"{cpu / workers / GOAL_SECONDS:.2f}x"
    )
    print("  15 slowest:")
    for line in figures["slowest"]:  # type: ignore[union-attr]
        print(f"    {line}")


def by_module_report(folder: str, top: int = 30) -> None:
    per_module: dict[str, float] = {}
    tests = 0
    for path in Path(folder).glob("cpu-*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            module = row["id"].split("::", 1)[0]
            per_module[module] = per_module.get(module, 0.0) + row["cpu"]
            tests += 1
    total = sum(per_module.values())
    print(
        f"  CPU by module ({tests} tests, {total:.1f} s in tests; the rest is start-up and collection), longest first:"
    )
    for module, seconds in sorted(per_module.items(), key=lambda kv: -kv[1])[:top]:
        print(f"    {seconds:7.1f} s  {seconds / total:5.1%}  {module}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--baseline", action="store_true", help="also run with xdist's default scheduling first")
    parser.add_argument("--by-module", action="store_true", help="also print each test module's CPU seconds")
    parser.add_argument("--relay", action="store_true", help="also run with jsii's relay process first")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    status = 0
    if args.baseline:
        base = run_suite(args.workers, (), args.pytest_args)
        report("default scheduling (-n 2)", base, args.workers)
        status |= int(base["status"])  # type: ignore[call-overload]
    if args.relay:
        relayed = run_suite(args.workers, MAKEFILE_SCHEDULING, args.pytest_args, relay=True)
        report("make test with jsii's relay process (LLM_CDK_TESTS_JSII_RELAY=1)", relayed, args.workers)
        status |= int(relayed["status"])  # type: ignore[call-overload]
    with tempfile.TemporaryDirectory() as folder:
        figures = run_suite(
            args.workers, MAKEFILE_SCHEDULING, args.pytest_args, by_module=folder if args.by_module else ""
        )
        report("make test (-n 2 --dist loadfile --no-loadscope-reorder)", figures, args.workers)
        if args.by_module:
            by_module_report(folder)
    if args.baseline:
        print(f"wall ratio make test / default scheduling: {float(figures['wall']) / float(base['wall']):.2f}x")  # type: ignore[arg-type]
    if args.relay:
        print(
            "make test / with the relay: wall {:.2f}x, CPU {:.2f}x".format(
                float(figures["wall"]) / float(relayed["wall"]), float(figures["cpu"]) / float(relayed["cpu"])
            )
        )  # type: ignore[arg-type]
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return status | int(figures["status"])  # type: ignore[call-overload]


if __name__ == "__main__":
    sys.exit(main())
