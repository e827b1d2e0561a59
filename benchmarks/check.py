"""Wall time of the pull-request check, ``make check``, warm, phase by phase, in one call.

Usage: ``python benchmarks/check.py [--runs 1] [--no-sequential] [-- MAKE_ARGS ...]``

Warm means what a second ``make check`` on a developer's machine or a CI runner with its caches
restored has: the virtualenvs and ``node_modules`` set up, the Lambda package cache
(``bundling``) and mypy's cache filled. One unmeasured ``make check`` fills them first.

Then, ``--runs`` times, in turn:

* ``make check`` as it is: one synth (``synth-app``: ``cdk synth``, cdk-nag inside, CDK's built-in
  validator off), then cfn-lint, checkov, mypy and ruff over that ``cdk.out`` (ruff: the sources) in parallel;
* the sequential form it replaced (unless ``--no-sequential``): ``make synth CFN_VALIDATE=1`` (the
  synth with CDK's built-in validator, then cfn-lint), then ``make checkov``, then ``make typecheck``;
* each phase alone: ``make synth-app``, ``make lint-templates``, ``make checkov``, ``make typecheck``,
  ``make lint-python`` (cfn-lint and checkov over the ``cdk.out`` the synth just wrote).

Prints the medians, the ratio of ``make check`` to the sequential form (median of the per-round
ratios) and how the parallel part compares with the sum of its phases. Target: ``make check``
warm at most 120 s on 2 cores. Every command must succeed; the benchmark stops at the first failure.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL = 120.0
PHASES = ("synth-app", "lint-templates", "checkov", "typecheck", "lint-python")


def make(*targets: str, extra: list[str]) -> float:
    start = time.perf_counter()
    result = subprocess.run(
        ["make", "--no-print-directory", *targets, *extra], cwd=ROOT, capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - start
    if result.returncode:
        sys.exit(f"make {' '.join(targets)} failed ({result.returncode}):\n{(result.stdout + result.stderr)[-4000:]}")
    return elapsed


def sequential(extra: list[str]) -> float:
    return make("synth", "CFN_VALIDATE=1", extra=extra) + make("checkov", extra=extra) + make("typecheck", extra=extra)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--no-sequential", action="store_true", help="skip the sequential form it replaced")
    parser.add_argument("make_args", nargs="*", help="passed to every make call (e.g. CONFIG=config/dev.yaml)")
    args = parser.parse_args()
    extra = list(args.make_args)
    print("warm-up: make check (fills the Lambda package and mypy caches)", flush=True)
    make("check", extra=extra)
    checks: list[float] = []
    olds: list[float] = []
    phases: dict[str, list[float]] = {p: [] for p in PHASES}
    for round_ in range(1, args.runs + 1):
        checks.append(make("check", extra=extra))
        line = f"round {round_}: make check {checks[-1]:6.1f} s"
        if not args.no_sequential:
            olds.append(sequential(extra))
            line += f"; sequential (validator + synth, cfn-lint, checkov, mypy) {olds[-1]:6.1f} s"
        for phase in PHASES:
            phases[phase].append(make(phase, extra=extra))
        print(line + "; phases " + ", ".join(f"{p} {phases[p][-1]:.1f} s" for p in PHASES), flush=True)
    median = statistics.median(checks)
    print(
        f"make check warm: median {median:.1f} s (min {min(checks):.1f}, max {max(checks):.1f}); goal <= {GOAL:.0f} s"
    )
    for phase in PHASES:
        values = phases[phase]
        print(f"  {phase:<15} alone: median {statistics.median(values):6.1f} s")
    tools = sum(statistics.median(phases[p]) for p in PHASES[1:])
    print(
        f"  tools (cfn-lint + checkov + mypy + ruff) one after another {tools:.1f} s; in make check they run in "
        f"parallel after the synth: {median - statistics.median(phases['synth-app']):.1f} s"
    )
    if olds:
        ratios = [c / o for c, o in zip(checks, olds, strict=True)]
        print(
            f"sequential form it replaced: median {statistics.median(olds):.1f} s; make check / sequential: median "
            f"{statistics.median(ratios):.2f}x (min {min(ratios):.2f}, max {max(ratios):.2f})"
        )


if __name__ == "__main__":
    main()
