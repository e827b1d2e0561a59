"""Run cfn-lint on every synthesized template and print a readable summary.

A template of an environment-agnostic stack is checked for the regions the app targets (``--regions``); a
template whose stack the cloud assembly binds to a region (``aws://<account>/<region>``: a pipeline stage, a
bound config) is checked for that region only, where it deploys, whether or not it is one of those.
Exit status 1 when any template has an error; warnings and informational findings are
printed but do not fail. Usage: ``python -m tools.lint_templates cdk.out``.
"""

from __future__ import annotations

import functools
import json
import sys
from collections import Counter
from pathlib import Path

from cfnlint.config import ConfigMixIn, ManualArgs
from cfnlint.decode.decode import decode_str
from cfnlint.rules import Match, Rules
from cfnlint.runner import Runner, run_template_by_data

DEFAULT_REGIONS = ("us-east-1", "us-east-2", "us-west-2", "eu-west-1", "ap-northeast-1")
"""Regions where SageMaker AI offers inference components and capacity plans today."""
IGNORED = ("W3005",)
"""W3005 (a DependsOn also implied by a GetAtt): CDK's Lambda Function adds an explicit
DependsOn on its role and the role's policy; harmless, and not ours to change."""
INTENDED = (("W8003", "Rules/JumpStartLockNotFromJumpStart"),)
"""(rule, path prefix) findings that are the point: the rule that refuses a deploy of a JumpStart lock entry not
read from JumpStart always fails (``hosting.model_component.refuse_deploy_of``); cfn-lint rightly says so."""


def _intended(match: Match) -> bool:
    path = getattr(match, "path_string", None) or ""
    return any(match.rule.id == rule and path.startswith(prefix) for rule, prefix in INTENDED)


def bound_regions(folder: Path) -> dict[Path, str]:
    """The region of every template whose stack the cloud assembly (and its nested stage assemblies) binds to one."""
    bound: dict[Path, str] = {}
    for manifest in folder.rglob("manifest.json"):
        try:
            artifacts = json.loads(manifest.read_text(encoding="utf-8")).get("artifacts", {})
        except (OSError, ValueError):
            continue  # not a cloud assembly manifest: its templates are linted for every region
        for artifact in artifacts.values():
            if artifact.get("type") != "aws:cloudformation:stack":
                continue
            region = str(artifact.get("environment", "")).rsplit("/", 1)[-1]
            if not region or region == "unknown-region":
                continue
            files = [artifact.get("properties", {}).get("templateFile")]
            for dependency in artifact.get("dependencies", []):  # its nested stacks' templates are its assets
                assets = artifacts.get(dependency, {})
                if assets.get("type") == "cdk:asset-manifest":
                    files += _nested_templates(manifest.parent / assets.get("properties", {}).get("file", ""))
            for template in filter(None, files):
                bound[(manifest.parent / template).resolve()] = region
    return bound


def _nested_templates(asset_manifest: Path) -> list[str]:
    try:
        entries = json.loads(asset_manifest.read_text(encoding="utf-8")).get("files", {}).values()
    except (OSError, ValueError):
        return []
    return [
        str(entry["source"]["path"])
        for entry in entries
        if str(entry.get("source", {}).get("path", "")).endswith(".template.json")
    ]


@functools.cache
def _rules() -> Rules:
    """cfn-lint's rules, loaded once per process. ``cfnlint.api.lint()`` builds a new Runner for each template,
    which imports and instantiates every rule again (about 0.5 s of CPU each time, most of a small template's lint);
    one collection serves every template and region, as it does for the files of one ``cfn-lint`` command: which
    rules run (``ignore_checks``) and for which regions comes from the config passed with each template."""
    return Runner(ConfigMixIn()).rules


def lint(text: str, config: ManualArgs) -> list[Match]:
    """What ``cfnlint.api.lint(text, config=config)`` does, with the rules loaded once (``_rules``)."""
    template, errors = decode_str(text)
    if errors:
        return list(errors)
    if template is None:
        return []
    return list(run_template_by_data(template, ConfigMixIn(**config), _rules()))


def lint_folder(folder: Path, regions: tuple[str, ...] = DEFAULT_REGIONS) -> int:
    templates = sorted(folder.rglob("*.template.json"))  # pipeline stages nest their assemblies
    if not templates:
        print(f"cfn-lint: no templates in {folder}; run `make synth` first", file=sys.stderr)
        return 1
    bound = bound_regions(folder)
    counts: Counter[str] = Counter()
    for template in templates:
        where = [bound[template.resolve()]] if template.resolve() in bound else list(regions)
        matches = lint(
            template.read_text(encoding="utf-8"), config=ManualArgs(regions=where, ignore_checks=list(IGNORED))
        )
        for match in matches:
            if _intended(match):
                continue
            level = match.rule.severity.lower()
            counts[level] += 1
            where = getattr(match, "path_string", None) or f"line {match.linenumber}"  # a decode error has no path
            print(f"{level.upper():7} {template.name}: {match.rule.id} {where}: {match.message}")
    errors = counts.get("error", 0)
    in_own = sum(1 for template in templates if template.resolve() in bound)
    print(
        f"cfn-lint: {len(templates)} template(s) ({len(templates) - in_own} for {', '.join(regions)}; {in_own} bound, "
        f"each for its own region), {errors} error(s), {counts.get('warning', 0)} warning(s), "
        f"{counts.get('informational', 0)} informational"
    )
    return 1 if errors else 0


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("folder", nargs="?", default="cdk.out")
    parser.add_argument("--regions", default=",".join(DEFAULT_REGIONS), help="comma-separated regions to lint for")
    args = parser.parse_args()
    sys.exit(lint_folder(Path(args.folder), tuple(r for r in args.regions.split(",") if r)))
