"""Release hygiene: the security policy and contribution guide, dependency updates, the project URLs' one
placeholder, and the aws-cdk-lib floor with its reason."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import sagemaker_llm_cdk
import yaml

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
PLACEHOLDER = "my-org"


def test_security_policy_says_how_to_report_privately_and_which_versions_get_fixes():
    text = (ROOT / "SECURITY.md").read_text(encoding="utf-8")
    assert "## Reporting a vulnerability" in text and "## Supported versions" in text
    assert "Report a vulnerability" in text and "never in a public issue" in text
    major, minor = sagemaker_llm_cdk.__version__.split(".")[:2]
    assert f"| {major}.{minor}.x (latest) | yes |" in text, "the supported-versions table names the current minor"


def test_contributing_names_the_loop_the_docs_and_security():
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    for needle in ("make setup", "make test", "make check", "make reference", "make links", "SECURITY.md"):
        assert needle in text, needle


def test_dependabot_updates_pip_npm_and_actions_weekly_in_groups():
    config = yaml.safe_load((ROOT / ".github" / "dependabot.yml").read_text(encoding="utf-8"))
    assert config["version"] == 2
    updates = {(u["package-ecosystem"], u["directory"]): u for u in config["updates"]}
    assert {("pip", "/"), ("npm", "/"), ("github-actions", "/"), ("pip", "/clients")} <= set(updates)
    for update in updates.values():
        assert update["schedule"]["interval"] == "weekly" and update.get("groups"), update


def test_the_project_urls_have_one_marked_placeholder_and_the_files_here_refer_to_it():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    urls = PROJECT["urls"]
    assert all(url.startswith("https://") for url in urls.values())
    assert "PLACEHOLDER OWNER" in text.split("[project.urls]", 1)[1].split("\n[", 1)[0]
    pages = [str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")]
    for path in (
        "SECURITY.md",
        "CONTRIBUTING.md",
        "clients/pyproject.toml",
        "clients/README.md",
        "README.md",
        "constructs/README.md",
        "examples/README.md",
        *pages,
    ):
        assert PLACEHOLDER not in (ROOT / path).read_text(encoding="utf-8"), f"{path} repeats the placeholder"


def test_the_aws_cdk_lib_floor_is_stated_with_its_reason_and_the_pin_is_above_it():
    (spec,) = [d for d in PROJECT["dependencies"] if d.startswith("aws-cdk-lib")]
    floor = re.search(r">=([\d.]+)", spec).group(1)
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    comment = text[: text.index(f'"{spec}"')].rsplit("dependencies = [", 1)[1]
    assert f"{floor} is the oldest aws-cdk-lib with every CloudFormation (L1)" in comment
    pinned = re.search(r"^aws-cdk-lib==([\d.]+)$", (ROOT / "requirements.txt").read_text(encoding="utf-8"), re.M).group(
        1
    )
    assert tuple(map(int, pinned.split("."))) >= tuple(map(int, floor.split("."))), "the pin is below the floor"
