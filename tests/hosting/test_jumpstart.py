"""JumpStart models: the lock writer (Stubber on S3), lock lookups and their errors, ``source: jumpstart`` rules,
the model's template (image, artifacts, ModelAccessConfig), the EAGLE job payload, and the example configs."""

from __future__ import annotations

import io
import json
from datetime import UTC
from pathlib import Path

import boto3
import pytest
import yaml
from aws_cdk import App, Environment, Stack
from aws_cdk.assertions import Match, Template
from botocore.stub import Stubber
from sagemaker_llm_cdk import ConfigurationError, EndpointOptions, LlmEndpoint, ModelSpec, load_config
from sagemaker_llm_cdk.hosting.jumpstart import (
    JumpStartLock,
    SpecError,
    fetch_model,
    find_lock,
    main,
    model_from_spec,
)

from stacks import LlmPlatformStack, attach_checks

pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "jumpstart"
LOCK = ROOT / "config" / "jumpstart.lock.yaml"
LLAMA, LLAMA_VERSION = "meta-textgeneration-llama-3-1-8b-instruct", "2.2.1"
QWEN, QWEN_VERSION = "huggingface-llm-qwen2-5-7b-instruct", "1.2.0"


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def s3_stubbed(*responses: tuple[str, dict]) -> tuple[object, Stubber]:
    s3 = boto3.client("s3", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stubber = Stubber(s3)  # Stubber checks each request against botocore's S3 model
    for key, body in responses:
        stubber.add_response(
            "get_object",
            {"Body": io.BytesIO(json.dumps(body).encode())},
            {"Bucket": "jumpstart-cache-prod-us-east-1", "Key": key},
        )
    return s3, stubber


# ---------------------------------------------------------------------- lock writer
def test_lock_command_reads_manifest_then_spec_and_writes_the_lock(tmp_path, capsys):
    manifest = fixture("manifest.json")
    s3, stubber = s3_stubbed(
        ("models_manifest.json", manifest), (manifest[1]["spec_key"], fixture("llama-3-1-8b-instruct-2.2.1.json"))
    )
    lock_file = tmp_path / "config" / "jumpstart.lock.yaml"
    with stubber:
        code = main(
            [
                "lock",
                "--model-id",
                LLAMA,
                "--version",
                LLAMA_VERSION,
                "--region",
                "us-east-1",
                "--lock-file",
                str(lock_file),
            ],
            s3=s3,
        )
        stubber.assert_no_pending_responses()
    assert code == 0
    assert "gated: licence llama3_1Eula" in capsys.readouterr().err
    entry = yaml.safe_load(lock_file.read_text())["regions"]["us-east-1"][LLAMA][LLAMA_VERSION]
    assert entry["image_uri"] == "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.36.0-lmi28.0.0-cu130"
    # gated: the private bucket, and the prepacked (ready to serve) artifacts before the plain ones
    assert entry["artifact_s3_uri"] == (
        "s3://jumpstart-private-cache-prod-us-east-1/meta-textgeneration/"
        "meta-textgeneration-llama-3-1-8b-instruct/artifacts/inference-prepack/v2.0.0/"
    )
    assert entry["environment"]["HF_MODEL_ID"] == "/opt/ml/model"
    assert entry["environment"]["ENDPOINT_SERVER_TIMEOUT"] == "3600"
    assert "MODEL_CACHE_ROOT" not in entry["environment"]  # scope algorithm: not the container's
    assert (entry["accelerators"], entry["min_memory_mb"]) == (1, 16384)
    assert entry["licence"] == {
        "name": "llama3_1Eula",
        "url": "https://jumpstart-cache-prod-us-east-1.s3.us-east-1.amazonaws.com/fmhMetadata/eula/llama3_1Eula.txt",
    }
    # a second run adds to the lock instead of replacing it
    s3, stubber = s3_stubbed(
        ("models_manifest.json", manifest), (manifest[0]["spec_key"], fixture("qwen2-5-7b-instruct-1.2.0.json"))
    )
    with stubber:
        assert (
            main(
                [
                    "lock",
                    "--model-id",
                    QWEN,
                    "--version",
                    QWEN_VERSION,
                    "--region",
                    "us-east-1",
                    "--lock-file",
                    str(lock_file),
                ],
                s3=s3,
            )
            == 0
        )
    lock = JumpStartLock.load(lock_file)
    assert lock.find(LLAMA, LLAMA_VERSION, "us-east-1") is not None
    qwen = lock.find(QWEN, QWEN_VERSION, "us-east-1")
    assert qwen is not None and not qwen.gated
    assert qwen.artifact_s3_uri.startswith("s3://jumpstart-cache-prod-us-east-1/huggingface-llm/")


def test_lock_command_names_published_versions_for_an_unknown_version(tmp_path, capsys):
    s3, stubber = s3_stubbed(("models_manifest.json", fixture("manifest.json")))
    with stubber:
        code = main(
            [
                "lock",
                "--model-id",
                LLAMA,
                "--version",
                "9.9.9",
                "--region",
                "us-east-1",
                "--lock-file",
                str(tmp_path / "lock.yaml"),
            ],
            s3=s3,
        )
    assert code == 1
    assert "published versions: 2.1.0, 2.2.1" in capsys.readouterr().err
    assert not (tmp_path / "lock.yaml").exists()


def test_spec_without_a_hosting_image_is_refused():
    spec = fixture("qwen2-5-7b-instruct-1.2.0.json")
    del spec["hosting_ecr_uri"]
    with pytest.raises(SpecError, match="names no hosting image for us-east-1"):
        model_from_spec(spec, region="us-east-1")


def test_variant_image_is_resolved_per_region():
    model = model_from_spec(fixture("llama-3-1-8b-instruct-2.2.1.json"), region="us-west-2")
    assert model.image_uri.startswith("763104351884.dkr.ecr.us-west-2.amazonaws.com/djl-inference:")
    assert model.artifact_s3_uri.startswith("s3://jumpstart-private-cache-prod-us-west-2/")


def test_fetch_model_stubbed_reads_spec_key_from_manifest():
    manifest = fixture("manifest.json")
    s3, stubber = s3_stubbed(
        ("models_manifest.json", manifest), (manifest[0]["spec_key"], fixture("qwen2-5-7b-instruct-1.2.0.json"))
    )
    with stubber:
        model = fetch_model(s3, model_id=QWEN, version=QWEN_VERSION, region="us-east-1")
    assert model.environment["OPTION_MAX_MODEL_LEN"] == "32768"


# ---------------------------------------------------------------------- lock lookups
def committed_lock() -> JumpStartLock:
    return JumpStartLock.load(LOCK)


def test_committed_lock_says_each_entry_was_written_from_a_fixture_that_exists():
    lock = committed_lock()
    assert lock.find(LLAMA, LLAMA_VERSION, "us-east-1").gated
    assert lock.entries
    for model in lock.entries.values():
        assert model.source.kind == "fixture" and not model.source.from_jumpstart
        assert (ROOT / model.source.path).is_file(), model.source.path
        assert model.deploy_refusal() == (
            f"JumpStart lock entry {model.model_id} {model.version} in {model.region} was written from the fixture "
            f"{model.source.path}, not read from JumpStart: its image, artifacts or pre-trained head may not exist. "
            f"Run make jumpstart-lock MODEL={model.model_id} VERSION={model.version} REGION={model.region} with AWS "
            "credentials, commit the lock file and deploy again."
        )


def test_the_lock_writer_records_where_and_when_it_read_the_spec_and_its_digest(tmp_path):
    manifest = fixture("manifest.json")
    raw = json.dumps(fixture("qwen2-5-7b-instruct-1.2.0.json")).encode()  # what s3_stubbed serves
    s3, stubber = s3_stubbed(
        ("models_manifest.json", manifest), (manifest[0]["spec_key"], fixture("qwen2-5-7b-instruct-1.2.0.json"))
    )
    lock_file = tmp_path / "lock.yaml"
    with stubber:
        assert (
            main(
                [
                    "lock",
                    "--model-id",
                    QWEN,
                    "--version",
                    QWEN_VERSION,
                    "--region",
                    "us-east-1",
                    "--lock-file",
                    str(lock_file),
                ],
                s3=s3,
            )
            == 0
        )
    import hashlib
    from datetime import datetime

    source = yaml.safe_load(lock_file.read_text())["regions"]["us-east-1"][QWEN][QWEN_VERSION]["source"]
    assert source == {
        "kind": "jumpstart",
        "region": "us-east-1",
        "bucket": "jumpstart-cache-prod-us-east-1",
        "key": manifest[0]["spec_key"],
        "read_on": datetime.now(UTC).date().isoformat(),
        "digest": "sha256:" + hashlib.sha256(raw).hexdigest(),
    }
    model = JumpStartLock.load(lock_file).find(QWEN, QWEN_VERSION, "us-east-1")
    assert model.source.from_jumpstart and model.deploy_refusal() is None


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({"kind": "copied"}, r"source.kind: got 'copied'; allowed: jumpstart or fixture"),
        (
            {"kind": "jumpstart", "region": "us-east-1"},
            r"allowed: a jumpstart source with bucket, key, read_on, digest",
        ),
        (
            {"kind": "jumpstart", "region": "r", "bucket": "b", "key": "k", "read_on": "2026-12-01", "digest": "md5:1"},
            r"source.digest: got 'md5:1'; allowed: sha256:<64 hex digits>",
        ),
        (
            {"kind": "fixture", "url": "x"},
            r"source: got 'url'; allowed: kind, region, bucket, key, read_on, digest, path",
        ),
        ("fixture", r"source: got 'fixture'; allowed: a mapping with kind jumpstart or fixture"),
    ],
    ids=["kind", "incomplete", "digest", "unknown key", "not a mapping"],
)
def test_a_malformed_source_is_one_clear_problem_with_the_command(tmp_path, source, message):
    data = yaml.safe_load(LOCK.read_text())
    data["regions"]["us-east-1"][QWEN][QWEN_VERSION]["source"] = source
    path = tmp_path / "jumpstart.lock.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigurationError, match=message) as raised:
        JumpStartLock.load(path)
    assert f"make jumpstart-lock MODEL={QWEN} VERSION={QWEN_VERSION} REGION=us-east-1" in str(raised.value)


def test_an_entry_without_a_source_is_treated_as_a_fixture(tmp_path):
    data = yaml.safe_load(LOCK.read_text())
    del data["regions"]["us-east-1"][QWEN][QWEN_VERSION]["source"]
    path = tmp_path / "jumpstart.lock.yaml"
    path.write_text(yaml.safe_dump(data))
    model = JumpStartLock.load(path).find(QWEN, QWEN_VERSION, "us-east-1")
    assert "was with no source recorded, not read from JumpStart" in model.deploy_refusal()


@pytest.mark.parametrize(
    ("model_id", "version", "region", "message"),
    [
        ("meta-textgeneration-llama-9", "1.0.0", "us-east-1", r"it holds no version of this id \(ids held: "),
        (LLAMA, "2.1.0", "us-east-1", rf"it holds {LLAMA} 2.2.1 in us-east-1, {LLAMA} 2.2.1 in us-west-2"),
        (LLAMA, LLAMA_VERSION, "eu-west-1", rf"run make jumpstart-lock MODEL={LLAMA} VERSION=2.2.1 REGION=eu-west-1"),
        (LLAMA, LLAMA_VERSION, None, r"set target.region in the config .*one of us-east-1, us-west-2"),
    ],
)
def test_lock_lookup_errors_name_value_holdings_and_command(model_id, version, region, message):
    problem = committed_lock().problem("models[0].model_id", model_id, version, region)
    assert problem is not None
    assert problem.line().startswith("models[0].model_id: got ")
    assert pytest.importorskip("re").search(message, problem.line())


def test_malformed_lock_entry_is_one_clear_error(tmp_path):
    path = tmp_path / "jumpstart.lock.yaml"
    path.write_text("lock_version: 1\nregions:\n  us-east-1:\n    m:\n      '1.0':\n        image_uri: x\n")
    with pytest.raises(ConfigurationError, match=r"regions.us-east-1.m.1.0: .*make jumpstart-lock MODEL=m"):
        JumpStartLock.load(path)


def test_lock_of_another_format_version_is_refused(tmp_path):
    path = tmp_path / "jumpstart.lock.yaml"
    path.write_text("lock_version: 7\nregions: {}\n")
    with pytest.raises(ConfigurationError, match=r"lock_version: got 7; allowed: 1"):
        JumpStartLock.load(path)


def test_find_lock_walks_up_from_the_config_folder():
    assert find_lock(ROOT / "config" / "examples") == LOCK


# ---------------------------------------------------------------------- settings rules
def test_jumpstart_source_refuses_weights_and_image():
    with pytest.raises(ConfigurationError) as error:
        ModelSpec(
            name="m",
            source="jumpstart",
            model_id=LLAMA,
            version=LLAMA_VERSION,
            model_data_s3_uri="s3://my-bucket/m/",
            image="lmi",
        )
    text = str(error.value)
    assert "model_data_s3_uri: got 's3://my-bucket/m/'; allowed: nothing with source: jumpstart" in text
    assert "image: got 'lmi'; allowed: nothing with source: jumpstart" in text


def test_jumpstart_source_needs_id_and_version():
    with pytest.raises(ConfigurationError, match=r"version: got nothing .*required with source: jumpstart"):
        ModelSpec(name="m", source="jumpstart", model_id=LLAMA)


def test_s3_source_needs_weights_and_refuses_jumpstart_fields():
    with pytest.raises(ConfigurationError) as error:
        ModelSpec(name="m", model_id=LLAMA, accept_eula=True)
    text = str(error.value)
    assert "model_data_s3_uri: got nothing (the field is missing); allowed: an s3:// prefix" in text
    assert "model_id: got 'meta-textgeneration-llama-3-1-8b-instruct'; allowed: only with source: jumpstart" in text
    assert "accept_eula: got True; allowed: only with source: jumpstart" in text


# ---------------------------------------------------------------------- construct
def llama(**overrides) -> ModelSpec:
    fields = dict(name="llama-3-1-8b", source="jumpstart", model_id=LLAMA, version=LLAMA_VERSION, accept_eula=True)
    fields.update(overrides)
    return ModelSpec(**fields)


def bound_endpoint(region: str = "us-east-1") -> tuple[Stack, LlmEndpoint]:
    stack = Stack(App(), "Test", env=Environment(account="123456789012", region=region))
    return stack, LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g5.12xlarge"))


def test_gated_jumpstart_model_template_has_lock_image_artifacts_and_accepted_eula():
    stack, endpoint = bound_endpoint()
    component = endpoint.add_model("Llama", llama(min_memory_mb=32768), jumpstart_lock=committed_lock())
    template = Template.from_stack(stack)
    template.has_resource_properties(
        "AWS::SageMaker::Model",
        {
            "PrimaryContainer": {
                "Image": "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.36.0-lmi28.0.0-cu130",
                "ModelDataSource": {
                    "S3DataSource": {
                        "S3Uri": "s3://jumpstart-private-cache-prod-us-east-1/meta-textgeneration/"
                        "meta-textgeneration-llama-3-1-8b-instruct/artifacts/inference-prepack/v2.0.0/",
                        "S3DataType": "S3Prefix",
                        "CompressionType": "None",
                        "ModelAccessConfig": {"AcceptEula": True},
                    }
                },
                "Environment": Match.object_like(
                    {
                        "HF_MODEL_ID": "/opt/ml/model",
                        "SAGEMAKER_PROGRAM": "inference.py",
                        "OPTION_TENSOR_PARALLEL_DEGREE": "1",
                    }
                ),
            }
        },
    )
    # the lock's accelerators; the user's memory wins over the lock's 16384
    template.has_resource_properties(
        "AWS::SageMaker::InferenceComponent",
        {
            "Specification": Match.object_like(
                {
                    "ComputeResourceRequirements": {
                        "NumberOfAcceleratorDevicesRequired": 1,
                        "MinMemoryRequiredInMb": 32768,
                    }
                }
            )
        },
    )
    assert component.accepts_eula and component.jumpstart.licence.name == "llama3_1Eula"
    # the endpoint role may read exactly the locked artifacts
    policies = json.dumps(template.find_resources("AWS::IAM::Policy"))
    assert (
        "jumpstart-private-cache-prod-us-east-1/meta-textgeneration/meta-textgeneration-llama-3-1-8b-instruct/"
        "artifacts/inference-prepack/v2.0.0/*"
    ) in policies


def test_ungated_jumpstart_model_has_no_model_access_config():
    stack, endpoint = bound_endpoint()
    endpoint.add_model(
        "Qwen",
        ModelSpec(name="qwen", source="jumpstart", model_id=QWEN, version=QWEN_VERSION),
        jumpstart_lock=committed_lock(),
    )
    model = next(iter(Template.from_stack(stack).find_resources("AWS::SageMaker::Model").values()))
    source = model["Properties"]["PrimaryContainer"]["ModelDataSource"]["S3DataSource"]
    assert "ModelAccessConfig" not in source
    assert source["S3Uri"].startswith("s3://jumpstart-cache-prod-us-east-1/")


def test_gated_model_without_acceptance_is_one_clear_error_and_creates_no_model():
    stack, endpoint = bound_endpoint()
    with pytest.raises(ConfigurationError) as error:
        endpoint.add_model("Llama", llama(accept_eula=False), jumpstart_lock=committed_lock())
    assert len(error.value.problems) == 1
    assert error.value.problems[0].line() == (
        f"accept_eula: got False; allowed: true: {LLAMA} is gated; its licence llama3_1Eula (https://jumpstart-cache-"
        "prod-us-east-1.s3.us-east-1.amazonaws.com/fmhMetadata/eula/llama3_1Eula.txt) must be accepted by a person "
        "before SageMaker serves or optimizes it; fix: read the licence, then set accept_eula: true on this model"
    )
    assert Template.from_stack(stack).find_resources("AWS::SageMaker::Model") == {}


def test_region_the_lock_does_not_hold_fails_at_synth():
    _, endpoint = bound_endpoint("eu-west-1")
    with pytest.raises(
        ConfigurationError,
        match=r"got 'meta-textgeneration-llama-3-1-8b-instruct 2.2.1 in eu-west-1'"
        r".*REGION=eu-west-1",
    ):
        endpoint.add_model("Llama", llama(), jumpstart_lock=committed_lock())


def test_environment_agnostic_stack_is_told_to_bind_a_region():
    stack = Stack(App(), "Agnostic")
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g5.12xlarge"))
    with pytest.raises(ConfigurationError, match=r"a JumpStart model in a stack bound to a region"):
        endpoint.add_model("Llama", llama(), jumpstart_lock=committed_lock())


def test_lock_from_context_when_not_passed(tmp_path):
    app = App(context={"sagemaker_llm_cdk:jumpstart_lock": str(tmp_path / "missing.yaml")})
    stack = Stack(app, "Ctx", env=Environment(account="123456789012", region="us-east-1"))
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g5.12xlarge"))
    with pytest.raises(ConfigurationError, match=r"it is empty.*missing.yaml"):
        endpoint.add_model("Llama", llama())


# ---------------------------------------------------------------------- config and examples
def write_config(tmp_path: Path, model: dict, region: str | None = "us-east-1") -> Path:
    (tmp_path / "jumpstart.lock.yaml").write_text(LOCK.read_text())
    config = {"stack_name": "Js", "endpoints": [{"name": "Chat", "instance_type": "ml.g5.12xlarge", "models": [model]}]}
    if region:
        config["target"] = {"region": region}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_config_gated_model_without_acceptance_fails_with_file_and_path(tmp_path):
    path = write_config(tmp_path, {"name": "llama", "source": "jumpstart", "model_id": LLAMA, "version": "2.2.1"})
    with pytest.raises(
        ConfigurationError,
        match=r"1 problem\(s\) in .*config.yaml:\n  - endpoints\[0\].models\[0\]"
        r".accept_eula: got False; allowed: true: .* is gated; its licence llama3_1Eula",
    ):
        load_config(path)


def test_config_lock_problems_come_with_other_problems(tmp_path):
    path = write_config(
        tmp_path, {"name": "llama", "source": "jumpstart", "model_id": LLAMA, "version": "3.0.0", "accelerators": 0}
    )
    with pytest.raises(ConfigurationError) as error:
        load_config(path)
    lines = [p.line() for p in error.value.problems]
    assert any(line.startswith("endpoints[0].models[0].accelerators: got 0") for line in lines)
    assert any(
        "endpoints[0].models[0].model_id: got 'meta-textgeneration-llama-3-1-8b-instruct 3.0.0 in us-east-1'" in line
        for line in lines
    )


def test_config_without_region_names_target_region(tmp_path):
    path = write_config(
        tmp_path,
        {"name": "llama", "source": "jumpstart", "model_id": LLAMA, "version": "2.2.1", "accept_eula": True},
        region=None,
    )
    with pytest.raises(ConfigurationError, match=r"fix: set target.region in the config"):
        load_config(path)


EXAMPLES = sorted((ROOT / "config" / "examples").glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_config_synthesizes_from_the_committed_lock(path, tmp_path):
    config = load_config(path)
    # as the CLI synthesizes: cdk.json's feature flags (they decide, e.g., how a region-bound stack writes ARNs)
    context = {**json.loads((ROOT / "cdk.json").read_text()).get("context", {}), "aws:cdk:enable-path-metadata": True}
    app = App(outdir=str(tmp_path), context=context)
    env = Environment(account=config.target.account, region=config.target.region)
    stack = LlmPlatformStack(app, config.stack_name, config=config, config_dir=path.parent, env=env)
    attach_checks(app)
    app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    failures = [v for plugin in report.get("pluginReports", []) for v in plugin.get("violations", [])]
    assert failures == [], json.dumps(failures, indent=1)[:3000]  # cdk-nag: every finding acknowledged
    template = Template.from_stack(stack)
    assert template.find_resources("AWS::SageMaker::InferenceComponent")
    assert template.find_resources("AWS::StepFunctions::StateMachine")  # every example runs the EAGLE loop
    rules = {k: v for k, v in template.to_json().get("Rules", {}).items() if k.startswith("JumpStartLockNotFrom")}
    if config.endpoints[0].models[0].source == "jumpstart":  # the committed lock holds fixtures only
        (rule,) = rules.values()
        (assertion,) = rule["Assertions"]
        assert assertion["Assert"] == {"Fn::Equals": ["fixture", "jumpstart"]}  # always false: every deploy fails
        assert assertion["AssertDescription"].startswith("JumpStart lock entry openai-reasoning-gpt-oss-20b 1.0.0")
        assert "not deployable as shipped" in path.read_text().lower()
    else:
        assert rules == {}


def gated_eagle_config(tmp_path: Path) -> Path:
    """A gated JumpStart model with an EAGLE loop (the example's way 2, with Llama's licence)."""
    return write_config(
        tmp_path,
        {
            "name": "llama-3-1-8b",
            "source": "jumpstart",
            "model_id": LLAMA,
            "version": LLAMA_VERSION,
            "accept_eula": True,
            "architecture": "LlamaForCausalLM",
            "min_memory_mb": 32768,
            "eagle": {"dataset": {"source": "capture"}},
        },
    )


@pytest.fixture(scope="module")
def gated_eagle_template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    """The platform stack of ``gated_eagle_config`` bound to us-east-1, built once for the tests that read it."""
    path = gated_eagle_config(tmp_path_factory.mktemp("gated-eagle"))
    config = load_config(path)
    stack = LlmPlatformStack(
        App(), config.stack_name, config=config, config_dir=path.parent, env=Environment(region="us-east-1")
    )
    return Template.from_stack(stack)


def test_gated_jumpstart_model_passes_accepted_licence_to_the_eagle_job(gated_eagle_template):
    template = gated_eagle_template
    machines = template.find_resources("AWS::StepFunctions::StateMachine").values()
    (definition,) = [
        json.dumps(m["Properties"]["DefinitionString"])
        for m in machines
        if "StartJob" in json.dumps(m["Properties"]["DefinitionString"])
    ]
    assert '\\"accept_eula\\":true' in definition
    assert "jumpstart-private-cache-prod-us-east-1/meta-textgeneration" in definition


def test_three_ways_are_documented_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    for example in EXAMPLES:
        assert f"config/examples/{example.name}" in readme


def test_promoted_head_serving_model_accepts_the_licence_too(gated_eagle_template):
    template = gated_eagle_template
    template.has_resource_properties(
        "Custom::EagleServingModel",
        {
            "PrimaryContainer": Match.object_like(
                {"ModelDataSource": {"S3DataSource": Match.object_like({"ModelAccessConfig": {"AcceptEula": True}})}}
            )
        },
    )


def test_licence_is_printed_at_synth(capsys):
    _, endpoint = bound_endpoint()
    endpoint.add_model("Llama", llama(), jumpstart_lock=committed_lock())
    assert (
        "licence llama3_1Eula (https://jumpstart-cache-prod-us-east-1.s3.us-east-1.amazonaws.com/fmhMetadata/eula/"
        "llama3_1Eula.txt) accepted by accept_eula: true"
    ) in capsys.readouterr().err


def test_config_lock_accelerators_beyond_the_instance_are_a_config_problem(tmp_path):
    lock = yaml.safe_load(LOCK.read_text())
    lock["regions"]["us-east-1"][QWEN][QWEN_VERSION]["accelerators"] = 8
    path = write_config(tmp_path, {"name": "qwen", "source": "jumpstart", "model_id": QWEN, "version": QWEN_VERSION})
    (tmp_path / "jumpstart.lock.yaml").write_text(yaml.safe_dump(lock))
    with pytest.raises(
        ConfigurationError,
        match=r"endpoints\[0\].models\[0\].accelerators: got '8 \(from .*\)'; "
        r"allowed: at most 4, the accelerators of one ml.g5.12xlarge; fix: use a larger instance type "
        r"\(JumpStart lists: ml.g5.2xlarge",
    ):
        load_config(path)


def test_instance_type_jumpstart_does_not_list_is_a_synth_warning():
    stack = Stack(App(), "Warn", env=Environment(account="123456789012", region="us-east-1"))
    endpoint = LlmEndpoint(stack, "Endpoint", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    endpoint.add_model(
        "Qwen",
        ModelSpec(name="qwen", source="jumpstart", model_id=QWEN, version=QWEN_VERSION),
        jumpstart_lock=committed_lock(),
    )
    from aws_cdk.assertions import Annotations

    warnings = Annotations.from_stack(stack).find_warning(
        "*",
        Match.string_like_regexp(
            "JumpStart lists ml.g5.2xlarge, ml.g5.12xlarge, ml.g6e.2xlarge for huggingface-llm-qwen2-5-7b-instruct"
        ),
    )
    assert len(warnings) == 1


def test_lock_with_lists_where_mappings_belong_is_one_clear_error_per_place(tmp_path):
    path = tmp_path / "jumpstart.lock.yaml"
    path.write_text("lock_version: 1\nregions:\n  us-east-1: [a]\n  us-west-2:\n    m: [1]\n")
    with pytest.raises(ConfigurationError) as error:
        JumpStartLock.load(path)
    lines = [p.line() for p in error.value.problems]
    assert lines[0].startswith("regions.us-east-1: got ['a']; allowed: a mapping model id -> version -> entry")
    assert lines[1].startswith(
        "regions.us-west-2.m: got [1]; allowed: a mapping version -> entry; fix: write the "
        "lock again with make jumpstart-lock MODEL=m"
    )
