"""The apps in examples/: which library names they need, how to synthesize one, what each must build.

Shared by ``tests/examples/test_examples.py`` (the repository's library) and ``tests/repo/test_wheel.py`` (the
library installed from the wheel in a fresh virtualenv).
"""

from __future__ import annotations

import ast
import filecmp
import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
LAMBDA_ROOT = ROOT / "lambda"

PENDING_EXPORTS: dict[str, str] = {}
"""Public names an example uses that the library may not export yet (and the module they live in).

An example that needs one of these is skipped, naming it, until ``sagemaker_llm_cdk/__init__.py``
exports it; any other name the library does not export fails the test."""


def library_imports(app: Path) -> list[str]:
    """Names an example imports from ``sagemaker_llm_cdk``; examples use only the top-level API."""
    names = []
    for node in ast.walk(ast.parse(app.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sagemaker_llm_cdk"):
            assert node.module == "sagemaker_llm_cdk", (
                f"{app}: import only the public API (from sagemaker_llm_cdk import ...), not {node.module}"
            )
            names.extend(alias.name for alias in node.names)
    return names


def missing_exports(app: Path, exported: set[str]) -> list[str]:
    """Names ``app`` needs that are not exported; fails on any that is not a known pending export."""
    missing = [name for name in library_imports(app) if name not in exported]
    unknown = [name for name in missing if name not in PENDING_EXPORTS]
    assert not unknown, f"{app} imports {unknown}, which sagemaker_llm_cdk does not export"
    return missing


def pending_reason(missing: list[str]) -> str:
    modules = ", ".join(sorted({PENDING_EXPORTS[name] for name in missing}))
    return f"sagemaker_llm_cdk does not export {', '.join(missing)} yet (they are in {modules})"


def child_env(*first_on_path: Path, write_bytecode: bool = False) -> dict[str, str]:
    """Environment for a child Python: ``first_on_path``, then Node 22 from node_modules (jsii); no PYTHONPATH.

    ``write_bytecode`` lets it cache compiled modules (worth it in a throwaway venv installed with ``--no-compile``).
    """
    drop = {"PYTHONPATH", "VIRTUAL_ENV", "CDK_OUTDIR", "CDK_CONTEXT_JSON", "PYTHONHOME"}
    if write_bytecode:
        drop.add("PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    node = ROOT / "node_modules" / ".bin"
    path = [str(p) for p in first_on_path] + ([str(node)] if node.is_dir() else [])
    env["PATH"] = os.pathsep.join([*path, env.get("PATH", "")])
    env["CDK_DISABLE_VERSION_CHECK"] = "1"
    env["CDK_CLI_TELEMETRY"] = "false"
    env["JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION"] = "1"
    return env


@dataclass
class Synth:
    """A synthesized cloud assembly."""

    outdir: Path
    stacks: dict[str, dict[str, Any]]
    seconds: float = 0.0

    def template(self, stack: str) -> dict[str, Any]:
        return self.stacks[stack]

    def handler_folders(self, stack: str) -> set[str]:
        """The ``lambda/<folder>`` of each Python function in ``stack``, found by comparing its code asset
        with the folders in this repository file by file; an asset that matches no folder fails."""
        folders = set()
        for logical_id, function in of_type_items(self.stacks[stack], "AWS::Lambda::Function"):
            key = function["Properties"].get("Code", {}).get("S3Key")
            if not isinstance(key, str) or not key.endswith(".zip"):
                continue
            asset = self.outdir / f"asset.{key[: -len('.zip')]}"
            if not (asset / "index.py").is_file():
                continue  # the CDK's own framework functions (Node.js)
            match = [folder.name for folder in sorted(LAMBDA_ROOT.iterdir()) if same_files(asset, folder)]
            assert match, (
                f"{stack}/{logical_id}: its code asset {asset.name} ({sorted(p.name for p in asset.iterdir())}) "
                "matches no lambda/<folder> of this repository"
            )
            folders.add(match[0])
        return folders


PACKAGED_DATA = {"allowed_components.json"}
"""Data files a construct stages next to a handler's code (the session front door's component list)."""


SHARED_PACKAGE = "llm_cdk_shared"
"""The handlers' shared package (lambda/_shared/llm_cdk_shared), copied into every function's asset."""


def _same_shared_package(asset: Path) -> bool:
    shared = LAMBDA_ROOT / "_shared" / SHARED_PACKAGE
    names = sorted(p.name for p in shared.iterdir() if p.is_file() and not p.name.endswith(".pyc"))
    copied = asset / SHARED_PACKAGE
    if not copied.is_dir() or sorted(p.name for p in copied.iterdir() if p.is_file()) != names:
        return False
    _, mismatch, errors = filecmp.cmpfiles(copied, shared, names, shallow=False)
    return not mismatch and not errors


def same_files(asset: Path, folder: Path) -> bool:
    if not folder.is_dir() or not _same_shared_package(asset):
        return False
    names = sorted(p.name for p in folder.iterdir() if p.name != "__pycache__" and not p.name.endswith(".pyc"))
    extra = sorted(
        p.name
        for p in asset.iterdir()
        if p.name not in names and p.name not in PACKAGED_DATA and p.name != SHARED_PACKAGE
    )
    if not set(names) <= {p.name for p in asset.iterdir()}:
        return False
    # A folder with a requirements.txt ships those packages next to its code (sagemaker_llm_cdk.core.bundling):
    # the asset may hold more, but only installed package folders (and their .dist-info).
    if extra and not (
        (folder / "requirements.txt").is_file()
        and all((asset / name).is_dir() for name in extra)
        and any(name.endswith(".dist-info") for name in extra)
    ):
        return False
    match, mismatch, errors = filecmp.cmpfiles(asset, folder, names, shallow=False)
    return not mismatch and not errors


def synthesize(python: str | Path, app: Path, outdir: Path, *, env: dict[str, str]) -> Synth:
    """Run ``python app.py`` in the app's folder with CDK_OUTDIR set, as a user would without the CLI."""
    import time

    start = time.monotonic()
    result = subprocess.run(
        [str(python), app.name],
        cwd=app.parent,
        env={**env, "CDK_OUTDIR": str(outdir)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    seconds = time.monotonic() - start
    assert result.returncode == 0, f"{app} failed:\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    manifest = json.loads((outdir / "manifest.json").read_text())
    stacks = {
        name: json.loads((outdir / artifact["properties"]["templateFile"]).read_text())
        for name, artifact in manifest["artifacts"].items()
        if artifact["type"] == "aws:cloudformation:stack"
    }
    return Synth(outdir, stacks, seconds)


def read_assembly(outdir: Path, seconds: float = 0.0) -> Synth:
    manifest = json.loads((outdir / "manifest.json").read_text())
    stacks = {
        name: json.loads((outdir / artifact["properties"]["templateFile"]).read_text())
        for name, artifact in manifest["artifacts"].items()
        if artifact["type"] == "aws:cloudformation:stack"
    }
    return Synth(outdir, stacks, seconds)


CLI_CONTEXT = {"aws:cdk:enable-path-metadata": True, "aws:cdk:enable-asset-metadata": True}
"""What ``cdk synth`` adds to every app's context besides ``cdk.json`` (path and asset metadata)."""


def synthesize_in_process(app: Path, outdir: Path, *, context: dict[str, Any]) -> Synth:
    """Run ``app`` (an ``app.py`` that builds ``App()`` and calls ``app.synth()``) in this interpreter, with
    ``context`` as ``cdk synth`` or ``-c`` would pass it and ``outdir`` as its output.

    Saves a fresh Python and jsii runtime per synth (seconds each); the app, its checks (cdk-nag fails
    ``app.synth()``) and the assembly are the same. ``tests/repo/test_wheel.py`` and ``tests/cli/test_cli.py`` keep
    the real CLI runs.
    """
    import runpy
    import sys
    import time

    import aws_cdk

    real_app = aws_cdk.App

    def app_with_context(*args: Any, **kwargs: Any) -> aws_cdk.App:
        kwargs.setdefault("outdir", str(outdir))
        kwargs["context"] = {**context, **(kwargs.get("context") or {})}
        return real_app(*args, **kwargs)

    start = time.monotonic()
    cwd = os.getcwd()
    sys.path.insert(0, str(app.parent))
    aws_cdk.App = app_with_context  # type: ignore[misc]  # what `from aws_cdk import App` in the app gets
    try:
        os.chdir(app.parent)
        runpy.run_path(str(app), run_name="__main__")
    except SystemExit as exit_:  # an app that reports its own errors (this repository's app.py) exits non-zero
        if exit_.code not in (0, None):
            raise AssertionError(
                f"{app} exited with status {exit_.code} (its message is in the captured stderr)"
            ) from None
    finally:
        aws_cdk.App = real_app  # type: ignore[misc]
        os.chdir(cwd)
        sys.path.remove(str(app.parent))
    assert (outdir / "manifest.json").is_file(), f"{app} did not call app.synth()"
    return read_assembly(outdir, time.monotonic() - start)


def synthesize_with_cli(
    app_dir: Path, outdir: Path | None = None, *, env: dict[str, str], context: dict[str, str] | None = None
) -> Synth:
    """``cdk synth`` in ``app_dir`` with the pinned CLI, as a user runs it: the folder's own ``cdk.json``
    gives the app command (``python3 app.py``: the first ``python3`` on ``env``'s PATH) and the feature flags.
    With no ``outdir`` the CLI writes to its default folder, ``cdk.out`` in ``app_dir``, and hands the app that
    path relative, as it does for every user; ``context`` goes in as ``-c key=value``."""
    import time

    cdk = ROOT / "node_modules" / ".bin" / "cdk"
    assert cdk.exists(), "the CDK CLI is not installed: run `make setup` (npm ci installs it from package.json)"
    start = time.monotonic()
    command = [str(cdk), "synth", "--quiet", *(["--output", str(outdir)] if outdir is not None else [])]
    for key, value in (context or {}).items():
        command += ["-c", f"{key}={value}"]
    result = subprocess.run(command, cwd=app_dir, env=env, capture_output=True, text=True, timeout=600)
    seconds = time.monotonic() - start
    assert result.returncode == 0, f"cdk synth in {app_dir} failed:\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    outdir = outdir if outdir is not None else app_dir / "cdk.out"
    manifest = json.loads((outdir / "manifest.json").read_text())
    stacks = {
        name: json.loads((outdir / artifact["properties"]["templateFile"]).read_text())
        for name, artifact in manifest["artifacts"].items()
        if artifact["type"] == "aws:cloudformation:stack"
    }
    return Synth(outdir, stacks, seconds)


def feature_flag_report(outdir: Path) -> dict[str, dict[str, Any]]:
    """Every feature flag CDK knows, with ``userValue`` when the app saw one: the assembly's feature-flag report."""
    manifest = json.loads((outdir / "manifest.json").read_text())
    (report,) = [a for a in manifest["artifacts"].values() if a["type"] == "cdk:feature-flag-report"]
    flags: dict[str, dict[str, Any]] = report["properties"]["flags"]
    return flags


def assert_flags_of_cdk_json(synth: Synth, cdk_json: Path) -> None:
    """The app saw exactly the feature flags ``cdk_json`` sets (CDK's feature-flag report in the assembly)."""
    report = feature_flag_report(synth.outdir)
    in_effect = {flag: info["userValue"] for flag, info in report.items() if "userValue" in info}
    assert in_effect == {k: v for k, v in cdk_json_flags(cdk_json).items() if k in report}, cdk_json
    assert in_effect["@aws-cdk/aws-iam:minimizePolicies"] is True and len(in_effect) > 70, cdk_json


def cdk_json_flags(path: Path) -> dict[str, Any]:
    """The feature flags a ``cdk.json`` sets (its context keys that name a flag, ``@aws-cdk...``)."""
    context = json.loads(path.read_text(encoding="utf-8"))["context"]
    return {k: v for k, v in context.items() if k.startswith("@aws-cdk")}


def of_type_items(template: dict[str, Any], cfn_type: str) -> list[tuple[str, dict[str, Any]]]:
    return [(k, r) for k, r in template["Resources"].items() if r["Type"] == cfn_type]


def of_type(template: dict[str, Any], cfn_type: str) -> list[dict[str, Any]]:
    return [r for _, r in of_type_items(template, cfn_type)]


def component_names(template: dict[str, Any]) -> set[str]:
    return {r["Properties"]["InferenceComponentName"] for r in of_type(template, "AWS::SageMaker::InferenceComponent")}


# ------------------------------------------------------------------ what each example must build
def check_minimal_endpoint(synth: Synth) -> None:
    template = synth.template("MinimalEndpoint")
    assert len(of_type(template, "AWS::SageMaker::Endpoint")) == 1
    assert len(of_type(template, "AWS::SageMaker::EndpointConfig")) == 1
    assert component_names(template) == {"MinimalEndpoint-qwen3-8b"}  # <stack name>-<name>
    assert not of_type(template, "AWS::Lambda::Function")


def check_adapters_and_sessions(synth: Synth) -> None:
    template = synth.template("ChatWithAdapters")
    assert len(of_type(template, "AWS::SageMaker::Endpoint")) == 1
    assert component_names(template) == {
        f"ChatWithAdapters-{n}" for n in ("qwen3-8b", "qwen3-8b-sql", "qwen3-8b-support")
    }
    adapters = [
        r
        for r in of_type(template, "AWS::SageMaker::InferenceComponent")
        if "BaseInferenceComponentName" in r["Properties"]["Specification"]
    ]
    assert [r["Properties"]["Specification"]["BaseInferenceComponentName"] for r in adapters] == [
        "ChatWithAdapters-qwen3-8b"
    ] * 2
    assert [u["Properties"]["AuthType"] for u in of_type(template, "AWS::Lambda::Url")] == ["AWS_IAM"]
    assert len(of_type(template, "AWS::DynamoDB::Table")) == 1
    assert synth.handler_folders("ChatWithAdapters") == {"session_router"}


def check_capacity_plan_endpoint(synth: Synth) -> None:
    template = synth.template("ReservedChat")
    (config,) = of_type(template, "AWS::SageMaker::EndpointConfig")
    (variant,) = config["Properties"]["ProductionVariants"]
    assert variant["CapacityReservationConfig"]["CapacityReservationPreference"] == "capacity-reservations-only"
    (guard,) = of_type(template, "Custom::SageMakerCapacityPlanGuard")  # binds only an Active plan
    assert variant["CapacityReservationConfig"]["MlReservationArn"]["Fn::GetAtt"][1] == "MlReservationArn"
    assert guard["Properties"]["WhenNotActive"] == "fail"
    assert component_names(template) == {"ReservedChat-qwen3-32b", "ReservedChat-qwen3-32b-support"}
    assert synth.handler_folders("ReservedChat") == {"capacity_plan_expiry", "capacity_plan_guard"}
    assert not of_type(template, "Custom::SageMakerCapacityPlan"), "the example binds an existing plan: it buys nothing"


def check_eagle_endpoint(synth: Synth) -> None:
    assert len(of_type(synth.template("EaglePromotions"), "Custom::SageMakerLlmRunTimeParameter")) == 1
    template = synth.template("EagleChat")
    assert component_names(template) == {"EagleChat-qwen3-8b"}
    assert len(of_type(template, "AWS::StepFunctions::StateMachine")) >= 1
    assert {"eagle_dataset", "eagle_job"} <= synth.handler_folders("EagleChat")


def check_private_vpc_endpoint(synth: Synth) -> None:
    template = synth.template("PrivateChat")
    assert not of_type(template, "AWS::EC2::NatGateway") and not of_type(template, "AWS::EC2::InternetGateway")
    (gateway,) = of_type(template, "AWS::EC2::VPCEndpoint")
    assert gateway["Properties"]["VpcEndpointType"] == "Gateway"
    assert "s3" in json.dumps(gateway["Properties"]["ServiceName"])
    (model,) = of_type(template, "AWS::SageMaker::Model")
    assert model["Properties"]["EnableNetworkIsolation"] is True
    assert len(model["Properties"]["VpcConfig"]["Subnets"]) == 2
    (config,) = of_type(template, "AWS::SageMaker::EndpointConfig")
    assert config["Properties"]["VpcConfig"]["Subnets"] == model["Properties"]["VpcConfig"]["Subnets"]
    for route in of_type(template, "AWS::EC2::Route"):
        assert "NatGatewayId" not in route["Properties"] and "GatewayId" not in route["Properties"], route


def check_agent_on_agentcore(synth: Synth) -> None:
    template = synth.template("AgentOnAgentCore")
    (runtime,) = of_type(template, "AWS::BedrockAgentCore::Runtime")
    properties = runtime["Properties"]
    uri = properties["AgentRuntimeArtifact"]["ContainerConfiguration"]["ContainerUri"]["Fn::Join"][1]
    assert {"Ref": "AgentRepository"} in uri and {"Ref": "AgentImageTag"} in uri  # deploy-time parameters
    assert properties["ProtocolConfiguration"] == "HTTP"
    assert properties["EnvironmentVariables"]["COMPONENT_NAME"] == "AgentOnAgentCore-qwen3-8b"
    role = properties["RoleArn"]["Fn::GetAtt"][0]
    policies = [p for p in of_type(template, "AWS::IAM::Policy") if {"Ref": role} in p["Properties"]["Roles"]]
    statements = [s for p in policies for s in p["Properties"]["PolicyDocument"]["Statement"]]
    sagemaker = [
        s
        for s in statements
        if any(
            str(a).startswith("sagemaker:") for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
        )
    ]
    assert len(sagemaker) == 1 and sagemaker[0]["Action"] == "sagemaker:InvokeEndpoint"  # nothing else on SageMaker
    assert len(sagemaker[0]["Resource"]) == 2  # the endpoint and the one inference component
    assert not any("lambda:" in json.dumps(s["Action"]) or s["Action"] == "*" for s in statements)
    # AgentCore Runtime's observability: X-Ray and metrics in its own namespace only
    xray = {"xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules", "xray:GetSamplingTargets"}
    assert xray <= {a for s in statements for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])}
    (metrics,) = [s for s in statements if s["Action"] == "cloudwatch:PutMetricData"]
    assert metrics["Condition"] == {"StringEquals": {"cloudwatch:namespace": "bedrock-agentcore"}}
    (model,) = of_type(template, "AWS::SageMaker::Model")
    environment = model["Properties"]["PrimaryContainer"]["Environment"]
    assert environment["OPTION_TOOL_CALL_PARSER"] == "hermes" and environment["OPTION_REASONING_PARSER"] == "qwen3"
    assert not of_type(template, "AWS::Lambda::Function")


CHECKS: dict[str, Callable[[Synth], None]] = {
    "agent_on_agentcore": check_agent_on_agentcore,
    "minimal_endpoint": check_minimal_endpoint,
    "adapters_and_sessions": check_adapters_and_sessions,
    "capacity_plan_endpoint": check_capacity_plan_endpoint,
    "eagle_endpoint": check_eagle_endpoint,
    "private_vpc_endpoint": check_private_vpc_endpoint,
}


def cli_context(app_dir: Path) -> dict[str, Any]:
    """The context ``cdk synth`` in ``app_dir`` gives its app: the folder's ``cdk.json`` context plus the CLI's own."""
    return {**json.loads((app_dir / "cdk.json").read_text(encoding="utf-8"))["context"], **CLI_CONTEXT}


def main(argv: list[str]) -> None:
    """``python tests/support/examples.py APP_DIR OUTDIR [APP_DIR OUTDIR ...]``: synthesize each app in one
    interpreter (``synthesize_in_process``, the context ``cdk synth`` would give it). tests/repo/test_wheel.py runs
    this with the fresh virtualenv's Python, so the apps import the installed wheel, and nothing of this
    repository but this file (which needs only the standard library and ``aws_cdk``) is on ``sys.path``."""
    if len(argv) % 2 or not argv:
        raise SystemExit("usage: examples.py APP_DIR OUTDIR [APP_DIR OUTDIR ...]")
    for app_dir, outdir in zip(map(Path, argv[::2]), map(Path, argv[1::2]), strict=True):
        synth = synthesize_in_process(app_dir / "app.py", outdir, context=cli_context(app_dir))
        print(f"{app_dir.name}: {synth.seconds:.1f} s", flush=True)


if __name__ == "__main__":
    import sys

    here = Path(__file__).resolve().parent  # off the path: the apps see the installed library and aws_cdk only
    sys.path[:] = [p for p in sys.path if not p or Path(p).resolve() != here]
    main(sys.argv[1:])
