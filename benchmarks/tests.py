"""Wall time of the test suite as `make test` runs it, its CPU time, and the 15 slowest tests.

Usage: ``python benchmarks/tests.py [--baseline] [--workers 2] [-- extra pytest args]``

Runs ``pytest -n 2 --dist loadfile --no-loadscope-reorder`` (the Makefile's ``test`` target) once with
``--durations=15`` and prints: wall seconds, CPU seconds of pytest and every process it waited for
(Python, node/jsii, cdk, pip, checkov), their ratio (how well the two workers stayed busy: at most the
number of workers), the goal's ratio (issue 15: at most 120 s on 2 cores), and the 15 slowest tests.
CPU seconds move far less than wall seconds when other jobs share the machine: compare those.

``--baseline`` first runs the suite with xdist's default scheduling (``-n 2``, ``--dist load``), in the
same call, so the scheduling's share of the result is visible; it doubles the run time.
Never a timing assert: this prints figures.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
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


def run_suite(workers: int, scheduling: tuple[str, ...], extra: list[str]) -> dict[str, object]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "pytest", "-n", str(workers), *scheduling, "--durations=15", "-q",
                             *extra], cwd=ROOT, env=environment(), capture_output=True, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out = result.stdout
    slowest = [line for line in out.splitlines() if re.match(r"^\d+\.\d+s (call|setup|teardown) ", line)]
    summary = [line for line in out.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    return {"wall": wall, "cpu": cpu, "status": result.returncode, "slowest": slowest[:15],
            "summary": summary[-1].strip("= ") if summary else out[-2000:] + result.stderr[-2000:]}


def report(name: str, figures: dict[str, object], workers: int) -> None:
    wall, cpu = float(figures["wall"]), float(figures["cpu"])  # type: ignore[arg-type]
    print(f"{name}: {figures['summary']}")
    print(f"  wall {wall:.1f} s, CPU {cpu:.1f} s, CPU/wall {cpu / wall:.2f} (at most {workers}), "
          f"wall / goal ({GOAL_SECONDS:.0f} s) {wall / GOAL_SECONDS:.2f}x, CPU/{workers} / goal {cpu / workers / GOAL_SECONDS:.2f}x")
    print("  15 slowest:")
    for line in figures["slowest"]:  # type: ignore[union-attr]
        print(f"    {line}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--baseline", action="store_true", help="also run with xdist's default scheduling first")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    status = 0
    if args.baseline:
        base = run_suite(args.workers, (), args.pytest_args)
        report("default scheduling (-n 2)", base, args.workers)
        status |= int(base["status"])  # type: ignore[call-overload]
    figures = run_suite(args.workers, MAKEFILE_SCHEDULING, args.pytest_args)
    report("make test (-n 2 --dist loadfile --no-loadscope-reorder)", figures, args.workers)
    if args.baseline:
        print(f"wall ratio make test / default scheduling: {float(figures['wall']) / float(base['wall']):.2f}x")  # type: ignore[arg-type]
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return status | int(figures["status"])  # type: ignore[call-overload]


if __name__ == "__main__":
    sys.exit(main())
