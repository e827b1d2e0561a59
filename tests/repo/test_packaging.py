"""What a release publishes: the license, the metadata PyPI shows, and the long description for library users."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_the_license_file_is_the_apache_2_text_the_metadata_names():
    assert PROJECT["license"] == "Apache-2.0" and PROJECT["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text and len(text.splitlines()) == 202


def test_the_metadata_has_urls_classifiers_and_keywords():
    trove = pytest.importorskip("trove_classifiers")
    unknown = [c for c in PROJECT["classifiers"] if c not in trove.classifiers]
    assert not unknown, f"PyPI refuses an upload with unknown classifiers: {unknown}"
    assert not [c for c in PROJECT["classifiers"] if c.startswith("License ::")], (
        "with an SPDX license expression, License classifiers are refused"
    )
    assert {"Framework :: AWS CDK :: 2", "Typing :: Typed", "Programming Language :: Python :: 3.11"} <= set(
        PROJECT["classifiers"]
    )
    assert {"Homepage", "Repository", "Changelog", "Issues"} <= set(PROJECT["urls"])
    assert all(url.startswith("https://") for url in PROJECT["urls"].values())
    assert {"aws-cdk", "sagemaker", "llm"} <= set(PROJECT["keywords"])


def test_the_long_description_is_written_for_library_users():
    assert PROJECT["readme"] == "constructs/README.md", "PyPI's page is not the team's README"
    text = (ROOT / PROJECT["readme"]).read_text(encoding="utf-8")
    assert text.startswith("# sagemaker-llm-cdk\n")
    assert "from sagemaker_llm_cdk import EndpointOptions, LlmEndpoint, ModelSpec" in text
    for team_only in ("make check", "config/default.yaml", "pr-checks", "stacks/"):
        assert team_only not in text, f"{team_only!r} is about this team's repository, not the library"
    assert "git+https://" in text and "make dist" in text, "say how to install before a PyPI release exists"


def test_examples_say_how_to_install_what_exists_today():
    text = (ROOT / "examples" / "README.md").read_text(encoding="utf-8")
    first_install = re.search(r"^pip install .*$", text, re.M).group(0)
    assert "git+https://" in first_install, "the first install line must work before a PyPI release exists"
    assert "make dist" in text and "dist/sagemaker_llm_cdk-" in text


def test_release_workflow_builds_tests_and_publishes_with_trusted_publishing():
    import yaml

    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text(encoding="utf-8"))
    trigger = workflow.get("on", workflow.get(True))
    assert trigger == {"push": {"tags": ["v*"]}}
    assert workflow["permissions"] == {"contents": "read"}, "only the publish job may mint an OIDC token"
    build, publish = workflow["jobs"]["build"], workflow["jobs"]["publish"]
    runs = "\n".join(step.get("run", "") for step in build["steps"])
    assert runs.index("make test") < runs.index("make dist") < runs.index("twine check")
    assert "GITHUB_REF_NAME" in runs and "__version__" in runs, "the tag must name the library's version"
    assert publish["needs"] == "build" and publish["environment"]["name"] == "pypi"
    assert publish["permissions"] == {"id-token": "write"}
    assert [s["uses"] for s in publish["steps"]][-1] == "pypa/gh-action-pypi-publish@release/v1"
    assert not any("password" in s.get("with", {}) for s in publish["steps"]), "trusted publishing: no token"


def test_make_dist_builds_the_sdist_and_the_wheel():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\ndist:", 1)[1].split("\n\n", 1)[0]
    assert "-m build" in recipe
