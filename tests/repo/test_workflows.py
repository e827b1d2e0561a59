"""The GitHub workflows: current action majors (Node 24), caches keyed on the lock files, the PR summary."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
CURRENT = {
    "actions/checkout": 7,
    "actions/setup-python": 7,
    "actions/setup-node": 7,
    "actions/cache": 6,
    "actions/cache/restore": 6,
    "actions/upload-artifact": 7,
    "actions/download-artifact": 8,
    "actions/upload-pages-artifact": 5,
    "actions/deploy-pages": 5,
}
"""The newest majors, all on the Node.js 24 action runtime (Node 20 actions are deprecated on GitHub's runners)."""


def steps(workflow: str) -> list[dict]:
    data = yaml.safe_load((WORKFLOWS / workflow).read_text(encoding="utf-8"))
    return [step for job in data["jobs"].values() for step in job["steps"]]


def jobs(workflow: str) -> dict[str, dict]:
    return yaml.safe_load((WORKFLOWS / workflow).read_text(encoding="utf-8"))["jobs"]


def test_every_action_is_on_its_current_major():
    for path in sorted(WORKFLOWS.glob("*.yml")):
        for step in steps(path.name):
            if "uses" not in step:
                continue
            action, _, ref = step["uses"].partition("@")
            if action in CURRENT:
                assert ref == f"v{CURRENT[action]}", f"{path.name}: {step['uses']}: use {action}@v{CURRENT[action]}"


def test_pr_check_caches_the_environments_keyed_on_the_lock_files():
    caches = {
        step["with"]["path"]: step["with"]["key"]
        for step in steps("pr-checks.yml")
        if step.get("uses", "").startswith("actions/cache@")
    }
    assert set(caches) == {".venv", "node_modules"}
    for lock in ("requirements.txt", "requirements-dev.txt", "requirements-checkov.txt"):
        assert f"'{lock}'" in caches[".venv"]
    assert "hashFiles('package-lock.json')" in caches["node_modules"]
    restore = next(s for s in steps("pr-checks.yml") if "touch .venv/.installed" in s.get("run", ""))
    assert "cache-hit" in restore["run"], "restored stamps are touched only on a hit, so make does not rebuild"


def test_pr_check_writes_the_change_report_into_the_step_summary_and_uploads_reports():
    run = "\n".join(step.get("run", "") for step in steps("pr-checks.yml"))
    assert "make check" in run and re.search(r"tools\.change_report .*--head-dir cdk\.out", run.replace("\\\n", " "))
    assert "--step-summary" in run and "--head-label" in run
    (upload,) = [s for s in steps("pr-checks.yml") if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert "reports" in upload["with"]["path"] and upload["if"] == "${{ always() }}"


def test_make_synth_does_not_build_the_checkov_environment():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    synth = re.search(r"^synth: (.*)$", makefile, re.M).group(1)
    setup = re.search(r"^synth-setup: (.*)$", makefile, re.M).group(1)
    assert synth.split() == ["synth-setup"] and "CHECKOV" not in setup
    assert re.search(r"^checkov: \$\(CHECKOV_STAMP\)", makefile, re.M)


def test_make_deploy_passes_context_through_and_never_skips_approval_by_default():
    import subprocess

    dry = subprocess.run(
        ["make", "-n", "deploy", "CONFIG=config/dev.yaml", "CONTEXT=-c purchase=chat-p5e-2027q1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    synth = next(line for line in dry.splitlines() if "cdk synth" in line)
    assert "-c config=config/dev.yaml" in synth and "-c purchase=chat-p5e-2027q1" in synth
    deploy = next(line for line in dry.splitlines() if "cdk deploy" in line)
    assert deploy.split() == ["cdk", "deploy", "--app", "cdk.out", "--all"], "deploys exactly the checked cdk.out"
    assert "--require-approval" not in dry
    lines = dry.splitlines()
    checks = [i for i, line in enumerate(lines) if "tools.run_checkov" in line or "tools.cfn_guard" in line]
    preflight = next(i for i, line in enumerate(lines) if "sagemaker_llm_cdk.preflight" in line)
    assert len(checks) == 2 and max(checks) < preflight < lines.index(deploy), "checks, then preflight, then deploy"
    diff = subprocess.run(["make", "-n", "diff"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "cdk diff --app cdk.out" in diff


@pytest.mark.synth
def test_cdk_json_runs_the_app_with_this_checkouts_venv_and_says_so_when_it_is_missing(tmp_path):
    import json
    import shutil
    import subprocess

    app = json.loads((ROOT / "cdk.json").read_text())["app"]
    assert app == "tools/venv-python app.py"
    (tmp_path / "tools").mkdir()
    shutil.copy2(ROOT / "tools" / "venv-python", tmp_path / "tools" / "venv-python")
    missing = subprocess.run(["tools/venv-python", "-c", "print(1)"], cwd=tmp_path, capture_output=True, text=True)
    assert missing.returncode == 1
    assert "error:" in missing.stderr and "make setup" in missing.stderr and "Traceback" not in missing.stderr
    found = subprocess.run(
        [str(ROOT / "tools" / "venv-python"), "-c", "import sys; print(sys.prefix)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(found.stdout.strip()).resolve() == (ROOT / ".venv").resolve()


def test_pr_docs_job_builds_both_references_and_fails_on_drift_and_broken_links():
    docs = jobs("pr-checks.yml")["docs"]
    run = "\n".join(step.get("run", "") for step in docs["steps"])
    assert "make docs" in run and "make links" in run and "tools.build_site" in run
    assert "git diff --exit-code -- docs/config-reference.md" in run
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^docs: .*\breference\b", makefile, re.M), "make docs writes the config reference first"
    assert re.search(r"^links: .*\n\t\$\(BIN\)/python -m tools\.check_links$", makefile, re.M)
    restores = [s for s in docs["steps"] if s.get("uses", "").startswith("actions/cache")]
    assert restores and all(s["uses"].startswith("actions/cache/restore@") for s in restores), (
        "the docs job restores the checks job's caches and never saves a partial .venv"
    )
    keys = {
        s["with"]["path"]: s["with"]["key"]
        for s in steps("pr-checks.yml")
        if s.get("uses", "").startswith("actions/cache")
    }
    checks = {
        s["with"]["path"]: s["with"]["key"]
        for s in jobs("pr-checks.yml")["checks"]["steps"]
        if s.get("uses", "").startswith("actions/cache@")
    }
    assert keys == checks, "the docs job restores exactly what the checks job saves"


def test_release_publishes_the_client_and_ships_the_docs_to_pages():
    release = jobs("release.yml")
    build = "\n".join(step.get("run", "") for step in release["build"]["steps"])
    assert "make dist" in build and "make dist-client" in build and "twine check --strict dist/*" in build
    site = "\n".join(step.get("run", "") for step in release["docs"]["steps"])
    assert "make docs" in site and "make links" in site and "make site" in site
    (upload,) = [s for s in release["docs"]["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact@")]
    assert upload["with"]["path"].rstrip("/") == "site"
    pages = release["pages"]
    assert set(pages["needs"]) == {"publish", "docs"}, "docs ship with a release that published"
    assert pages["permissions"] == {"pages": "write", "id-token": "write"}
    assert pages["environment"]["name"] == "github-pages"
    assert [s["uses"] for s in pages["steps"]] == ["actions/deploy-pages@v5"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "python -m build --wheel --outdir dist clients" in makefile
