"""Vendor the Guard rules of the chosen mappings of AWS's Guard rules registry into ``tools/guard/registry/``.

Reads a local git copy of https://github.com/aws-cloudformation/aws-guard-rules-registry (nothing is downloaded)
and writes every rule file the mappings in ``MAPPINGS`` name, the mappings themselves, the registry's LICENSE and
NOTICE, and ``COMMIT`` (the commit they came from). A refresh is this script over a newer copy, then a review of
``tools/guard/reasons.yaml`` (``python -m tools.cfn_guard`` names every new finding and every stale reason).

Usage: ``python -m tools.guard.vendor REGISTRY_GIT_DIR [--commit REF]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REGISTRY = HERE / "registry"
MAPPINGS = (
    "rule_set_nist800_53rev5.json",
    "rule_set_cis_aws_benchmark_level_1.json",
    "rule_set_cis_aws_benchmark_level_2.json",
    "rule_set_wa-Security-Pillar.json",
)
"""NIST 800-53 rev 5, the CIS AWS benchmark (both levels) and the Well-Architected security pillar."""
KEPT = ("LICENSE", "NOTICE")
README = """# AWS Guard rules registry (vendored)

The rule files of https://github.com/aws-cloudformation/aws-guard-rules-registry at commit {commit} that its
mappings {mappings} list (`mappings/`), under the registry's LICENSE and NOTICE (Apache-2.0). Do not edit: refresh
with `python -m tools.guard.vendor REGISTRY_GIT_DIR [--commit REF]` (a local git copy of the registry), then
review `tools/guard/reasons.yaml` with `make guard`.
"""


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(git_dir), *args], capture_output=True, text=True, check=True, encoding="utf-8"
    ).stdout


def rule_paths(mapping: dict[str, Any]) -> list[str]:
    """The rule files a registry mapping lists (``guardFilePath`` of each entry)."""
    return [entry["guardFilePath"] for entry in mapping.get("mappings", [])]


def vendor(git_dir: Path, commit: str = "HEAD", out: Path = REGISTRY) -> int:
    """Replace ``out`` with the rules of ``MAPPINGS`` at ``commit`` of ``git_dir``; returns how many rule files."""
    sha = _git(git_dir, "rev-parse", "--short", commit).strip()
    rules: set[str] = set()
    mappings: dict[str, str] = {}
    for name in MAPPINGS:
        text = _git(git_dir, "show", f"{commit}:mappings/{name}")
        mappings[name] = text
        rules.update(rule_paths(json.loads(text)))
    if out.exists():
        shutil.rmtree(out)
    for path in sorted(rules):
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_git(git_dir, "show", f"{commit}:{path}"), encoding="utf-8")
    for name, text in mappings.items():
        (out / "mappings").mkdir(parents=True, exist_ok=True)
        (out / "mappings" / name).write_text(text, encoding="utf-8")
    for name in KEPT:
        (out / name).write_text(_git(git_dir, "show", f"{commit}:{name}"), encoding="utf-8")
    (out / "COMMIT").write_text(sha + "\n", encoding="utf-8")
    (out / "README.md").write_text(README.format(commit=sha, mappings=", ".join(MAPPINGS)), encoding="utf-8")
    return len(rules)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("git_dir", type=Path, help="a git copy of aws-cloudformation/aws-guard-rules-registry")
    parser.add_argument("--commit", default="HEAD", help="the commit to vendor (default: HEAD)")
    args = parser.parse_args(argv)
    count = vendor(args.git_dir, args.commit)
    print(f"{count} rule files of {len(MAPPINGS)} mappings in {REGISTRY.relative_to(HERE.parents[1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
