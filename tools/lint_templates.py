"""Run cfn-lint on every synthesized template and print a readable summary.

Templates are checked for the regions the app targets (``--regions``).
Exit status 1 when any template has an error; warnings and informational findings are
printed but do not fail. Usage: ``python -m tools.lint_templates cdk.out``.
"""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from cfnlint.api import ManualArgs, lint

DEFAULT_REGIONS = ("us-east-1", "us-east-2", "us-west-2", "eu-west-1", "ap-northeast-1")
"""Regions where SageMaker AI offers inference components and capacity plans today."""
IGNORED = ("W3005",)
"""W3005 (a DependsOn also implied by a GetAtt): CDK's Lambda Function adds an explicit
DependsOn on its role and the role's policy; harmless, and not ours to change."""


def lint_folder(folder: Path, regions: tuple[str, ...] = DEFAULT_REGIONS) -> int:
    templates = sorted(folder.rglob("*.template.json"))  # pipeline stages nest their assemblies
    if not templates:
        print(f"cfn-lint: no templates in {folder}; run `make synth` first", file=sys.stderr)
        return 1
    counts: Counter[str] = Counter()
    for template in templates:
        matches = lint(template.read_text(encoding="utf-8"), config=ManualArgs(regions=list(regions), ignore_checks=list(IGNORED)))
        for match in matches:
            level = match.rule.severity.lower()
            counts[level] += 1
            print(f"{level.upper():7} {template.name}: {match.rule.id} {match.path_string}: {match.message}")
    errors = counts.get("error", 0)
    print(f"cfn-lint: {len(templates)} template(s), {errors} error(s), {counts.get('warning', 0)} warning(s), "
          f"{counts.get('informational', 0)} informational")
    return 1 if errors else 0


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("folder", nargs="?", default="cdk.out")
    parser.add_argument("--regions", default=",".join(DEFAULT_REGIONS), help="comma-separated regions to lint for")
    args = parser.parse_args()
    sys.exit(lint_folder(Path(args.folder), tuple(r for r in args.regions.split(",") if r)))
