"""The deployment config: loading, every validation rule, the JSON Schema, and the app's error output."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sagemaker_llm_cdk import ConfigurationError, load_config
from sagemaker_llm_cdk.config.loading import json_schema
from support.configs import DEFAULT, ROOT, base, endpoint, lora_model, model, problems


def test_default_config_is_valid():
    config = load_config(DEFAULT)
    (chat,) = config.endpoints
    assert chat.instance_type == "ml.p5e.48xlarge"
    assert chat.models[0].name == "qwen3-32b"
    assert chat.models[0].model_data_s3_uri.startswith("s3://")
    assert chat.models[0].is_lmi
    assert config.target.account is None and config.target.region is None


@pytest.mark.parametrize(
    "data, expected",
    [
        # unknown keys, with a suggestion
        (
            endpoint(instance_typ="ml.g5.xlarge"),
            "endpoints[0].instance_typ: got 'ml.g5.xlarge'; allowed: known keys only: ",
        ),
        (endpoint(instance_typ="ml.g5.xlarge"), "fix: did you mean 'instance_type'?"),
        (
            dict(base(), colour="blue"),
            "colour: got 'blue'; allowed: known keys only: budget, capacity_plans, checks, endpoints, monitoring, "
            "removal, routers, stack_name, tags, target",
        ),
        # wrong types
        (
            endpoint(scaling={"min_instances": "two"}),
            "endpoints[0].scaling.min_instances: got 'two'; allowed: a whole number",
        ),
        (model(cache_weights="maybe"), "endpoints[0].models[0].cache_weights: got 'maybe'; allowed: true or false"),
        (endpoint(models="qwen"), "endpoints[0].models: got 'qwen'; allowed: a list"),
        # instance types not in SageMaker's list
        (
            endpoint(instance_type="ml.p5e.huge"),
            "endpoints[0].instance_type: got 'ml.p5e.huge'; allowed: an instance type SageMaker accepts for endpoints",
        ),
        (endpoint(instance_type="p5e.48xlarge"), "did you mean ml.p5e.48xlarge"),
        # min > max and counts out of range
        (
            endpoint(scaling={"min_instances": 3, "max_instances": 2}),
            "endpoints[0].scaling.min_instances: got 3; allowed: at most max_instances (2); fix: lower min_instances "
            "or raise max_instances",
        ),
        (endpoint(scaling={"max_instances": 0}), "endpoints[0].scaling.max_instances: got 0; allowed: at least 1"),
        (
            endpoint(scaling={"min_instances": 1, "max_instances": 2, "initial_instances": 5}),
            "endpoints[0].scaling.initial_instances: got 5; allowed: between 1 and max_instances (2)",
        ),
        (
            model(copies={"min_copies": 5, "max_copies": 1}),
            "endpoints[0].models[0].copies.min_copies: got 5; allowed: at most max_copies (1)",
        ),
        (model(accelerators=100), "endpoints[0].models[0].accelerators: got 100; allowed: at most 64"),
        (
            endpoint(data_capture={"sampling_percentage": 0}),
            "endpoints[0].data_capture.sampling_percentage: got 0; allowed: at least 1",
        ),
        (
            endpoint(data_capture={"sampling_percentage": 101}),
            "endpoints[0].data_capture.sampling_percentage: got 101; allowed: at most 100",
        ),
        (
            endpoint(data_capture={"capture_input": False, "capture_output": False}),
            "endpoints[0].data_capture.capture_input: got False; allowed: capture_input or capture_output true when "
            "enabled",
        ),
        (
            endpoint(data_capture={"json_content_types": ["json"]}),
            "endpoints[0].data_capture.json_content_types[0]: got 'json'; allowed: a MIME type",
        ),
        # bad S3 URIs
        (
            model(model_data_s3_uri="s3://UPPER/x/"),
            "endpoints[0].models[0].model_data_s3_uri: got 's3://UPPER/x/'; allowed: an S3 URI like",
        ),
        (model(model_data_s3_uri="Qwen/Qwen3-32B"), "allowed: an s3:// URI; Hugging Face Hub ids are not accepted"),
        (model(model_data_s3_uri="s3://bucket/qwen"), "fix: write s3://bucket/qwen/ if it is a folder"),
        # names over SageMaker limits or with invalid characters
        (model(name="q" * 64), "endpoints[0].models[0].name: got '" + "q" * 64 + "'; allowed: 1-63 characters"),
        (
            model(name="qwen_3"),
            "endpoints[0].models[0].name: got 'qwen_3'; allowed: 1-63 characters: letters, digits and hyphens",
        ),
        (model(name="-qwen"), "endpoints[0].models[0].name: got '-qwen'"),
        (endpoint(name="chat endpoint"), "endpoints[0].name: got 'chat endpoint'; allowed: 1-63 letters and digits"),
        (endpoint(endpoint_name="chat_prod"), "endpoints[0].endpoint_name: got 'chat_prod'; allowed: 1-63 characters"),
        (dict(base(), stack_name="1stack"), "stack_name: got '1stack'; allowed: 1-128 letters, digits and hyphens"),
        # prefix-aware routing
        (
            endpoint(routing={"strategy": "PREFIX_AWARE", "prefix_length": 512, "concurrency_threshold": 8}),
            "endpoints[0].routing.prefix_length: got 512; allowed: at least 1024",
        ),
        (
            endpoint(routing={"strategy": "PREFIX_AWARE", "prefix_length": 2048, "concurrency_threshold": 2000}),
            "endpoints[0].routing.concurrency_threshold: got 2000; allowed: at most 1024",
        ),
        (
            endpoint(routing={"strategy": "PREFIX_AWARE"}),
            "endpoints[0].routing.prefix_length: got None; allowed: required with strategy PREFIX_AWARE",
        ),
        (
            endpoint(routing={"prefix_length": 2048}),
            "endpoints[0].routing.prefix_length: got 2048; allowed: only with strategy PREFIX_AWARE (strategy is "
            "LEAST_OUTSTANDING_REQUESTS)",
        ),
        (
            endpoint(routing={"strategy": "ROUND_ROBIN"}),
            "endpoints[0].routing.strategy: got 'ROUND_ROBIN'; allowed: one of 'LEAST_OUTSTANDING_REQUESTS', 'RANDOM' "
            "or 'PREFIX_AWARE'",
        ),
        # other endpoint rules
        (
            endpoint(inference_ami_version="newest"),
            "endpoints[0].inference_ami_version: got 'newest'; allowed: one of al2-ami-sagemaker-inference-gpu-2",
        ),
        (endpoint(volume_size_gb=100), "endpoints[0].volume_size_gb: got 100; allowed: nothing for ml.p5e.48xlarge"),
        (
            endpoint(
                vpc={"vpc_id": "vpc-1", "subnet_ids": ["subnet-0abc12345def67890"], "security_group_ids": ["sg-12"]}
            ),
            "endpoints[0].vpc.vpc_id: got 'vpc-1'",
        ),
        (
            endpoint(
                vpc={
                    "vpc_id": "vpc-0abc12345def67890",
                    "subnet_ids": ["net-1"],
                    "security_group_ids": ["sg-0abc12345def67890"],
                }
            ),
            "endpoints[0].vpc.subnet_ids[0]: got 'net-1'; allowed: a subnet id",
        ),
        (endpoint(models=[]), "endpoints[0].models: got []; allowed: at least 1 item(s)"),
        (dict(base(), target={"account": "12345"}), "target.account: got '12345'"),
        (model(environment={"1X": "a"}), "endpoints[0].models[0].environment.1X: got '1X'; allowed: a variable name"),
        # adapters, sessions and EAGLE on a model
        (
            lora_model(lora=None),
            "endpoints[0].models[1].adapters: got ['qwen3-32b-support', 'qwen3-32b-sql']; allowed: adapters only on a "
            "model with lora settings",
        ),
        (
            lora_model(lora={"max_gpu_adapters": 4, "max_cpu_adapters": 16}),
            "endpoints[0].models[1].lora.max_rank: got None; allowed: one of 1, 8, 16, 32, 64, 128, 256, 320, 512 when "
            "adapters are declared",
        ),
        (
            lora_model(lora={"max_rank": 24}),
            "endpoints[0].models[1].lora.max_rank: got 24; allowed: one of 1, 8, 16, 32, 64, 128, 256, 320, 512 (the "
            "ranks vLLM accepts); fix: use 32",
        ),
        (
            lora_model(lora={"max_rank": 1024}),
            "endpoints[0].models[1].lora.max_rank: got 1024; allowed: one of 1, 8, 16",
        ),
        (
            lora_model(adapters=[{"name": "qwen3-32b-lora", "artifact_s3_uri": "s3://a-b/x.tar.gz"}]),
            "endpoints[0].models[1].adapters[0].name: got 'qwen3-32b-lora'; allowed: a name not used by the base model",
        ),
        (
            lora_model(adapters=[{"name": "a1", "artifact_s3_uri": "s3://a-b/x.zip"}]),
            "endpoints[0].models[1].adapters[0].artifact_s3_uri: got 's3://a-b/x.zip'; allowed: an S3 object ending in "
            "'.tar.gz'",
        ),
        (
            lora_model(lora={"max_gpu_adapters": 8, "max_cpu_adapters": 4, "max_rank": 16}),
            "endpoints[0].models[1].lora.max_cpu_adapters: got 4; allowed: at least max_gpu_adapters (8)",
        ),
        (
            model(architecture=None),
            "endpoints[0].models[0].architecture: got None; allowed: the model's architecture when eagle is set",
        ),
        (
            model(architecture="MistralForCausalLM"),
            "endpoints[0].models[0].architecture: got 'MistralForCausalLM'; allowed: for EAGLE: LlamaForCausalLM",
        ),
        (
            model(architecture="Qwen3 ForCausalLM"),
            "endpoints[0].models[0].architecture: got 'Qwen3 ForCausalLM'; allowed: a Hugging Face architecture class "
            "name (letters, digits and _, at most 128 characters), e.g. Qwen3ForCausalLM; fix: copy the first entry of "
            "'architectures' from the model's config.json",
        ),
        (
            model(architecture=""),
            "endpoints[0].models[0].architecture: got ''; allowed: a Hugging Face architecture class name",
        ),
        (
            model(architecture="Q" * 129),
            "allowed: a Hugging Face architecture class name (letters, digits and _, at most 128 characters)",
        ),
        (
            model(eagle={"dataset": {"source": "capture", "s3_uri": "s3://a-b/data/"}}),
            "endpoints[0].models[0].eagle.dataset.s3_uri: got 's3://a-b/data/'; allowed: only with source s3 or "
            "builtin",
        ),
        (
            model(eagle={"dataset": {"source": "builtin", "s3_uri": "s3://a-b/data/", "builtin_name": "imagenet"}}),
            "endpoints[0].models[0].eagle.dataset.builtin_name: got 'imagenet'; allowed: one of gsm8k, magicoder, "
            "opencodeinstruct",
        ),
        (
            model(eagle={"dataset": {"source": "s3", "s3_uri": "s3://a-b/data/", "builtin_name": "gsm8k"}}),
            "endpoints[0].models[0].eagle.dataset.builtin_name: got 'gsm8k'; allowed: only with source builtin",
        ),
        (
            model(eagle={"dataset": {"source": "s3"}}),
            "endpoints[0].models[0].eagle.dataset.s3_uri: got None; allowed: an s3:// prefix with source s3",
        ),
        (
            model(eagle={"schedule": "weekly"}),
            "endpoints[0].models[0].eagle.schedule: got 'weekly'; allowed: rate(value unit)",
        ),
        (model(eagle={"schedule": "cron(0 3 * * SUN)"}), "got 'cron(0 3 * * SUN)'; allowed: rate(value unit)"),
        (
            model(eagle={"job_instance_type": "ml.t3.medium"}),
            "endpoints[0].models[0].eagle.job_instance_type: got 'ml.t3.medium'; allowed: an instance type SageMaker "
            "accepts for optimization jobs",
        ),
        (
            model(sessions={"expiration_seconds": 10}),
            "endpoints[0].models[0].sessions.expiration_seconds: got 10; allowed: at least 60",
        ),
        (
            endpoint(
                vpc={
                    "vpc_id": "vpc-0abc12345def67890",
                    "subnet_ids": ["subnet-0abc12345def67890"],
                    "security_group_ids": ["sg-12"],
                }
            ),
            "endpoints[0].vpc.security_group_ids[0]: got 'sg-12'; allowed: a security group id",
        ),
        (
            dict(base(), checks={"nag_warning_packs": ["hipaa"]}),
            "checks.nag_warning_packs[0]: got 'hipaa'; allowed: one of 'nist-800-53-r5' or 'serverless'",
        ),
        (
            model(image="docker.io/vllm/vllm-openai"),
            "endpoints[0].models[0].image: got 'docker.io/vllm/vllm-openai'; allowed: 'lmi', 'lmi:<tag>' or an ECR "
            "image URI",
        ),
    ],
)
def test_each_rule_has_a_clear_message(data, expected):
    lines = problems(data)
    assert any(expected in line for line in lines), "\n".join(lines)
    for line in lines:
        assert "; allowed: " in line and "; fix: " in line and ": got " in line


def test_missing_required_fields():
    data = base()
    del data["endpoints"][0]["models"][0]["model_data_s3_uri"]
    del data["endpoints"][0]["instance_type"]
    lines = problems(data)
    assert (
        "endpoints[0].instance_type: got nothing (the field is missing); allowed: a value (this field is required); "
        "fix: add instance_type" in lines
    )
    assert any(line.startswith("endpoints[0].models[0].model_data_s3_uri: got nothing") for line in lines)


def test_duplicate_names():
    data = base()
    first = data["endpoints"][0]
    first["models"].append(dict(first["models"][0]))
    second = json.loads(json.dumps(first))
    second["models"] = [second["models"][0]]
    data["endpoints"].append(second)
    lines = problems(data)
    assert any(
        line.startswith(
            "endpoints[0].models[2].name: got 'qwen3-32b'; allowed: a name not used by endpoints[0].models[0].name"
        )
        for line in lines
    )
    assert any(
        line.startswith("endpoints[1].name: got 'Chat'; allowed: a name not used by endpoints[0]") for line in lines
    )
    assert any(
        line.startswith(
            "endpoints[1].models[0].name: got 'qwen3-32b'; allowed: a name not used by endpoints[0].models[0].name"
        )
        for line in lines
    )


def test_all_problems_are_reported_at_once():
    data = base()
    ep = data["endpoints"][0]
    ep["instance_type"] = "ml.nope"
    ep["scaling"] = {"min_instances": 4, "max_instances": 2}
    ep["routing"] = {"strategy": "PREFIX_AWARE"}
    ep["models"][0]["name"] = "bad_name"
    ep["models"][0]["model_data_s3_uri"] = "http://x"
    ep["surprise"] = True
    lines = problems(data)
    assert len(lines) >= 7, lines
    fields = {line.split(":")[0] for line in lines}
    assert {
        "endpoints[0].instance_type",
        "endpoints[0].scaling.min_instances",
        "endpoints[0].routing.prefix_length",
        "endpoints[0].routing.concurrency_threshold",
        "endpoints[0].models[0].name",
        "endpoints[0].models[0].model_data_s3_uri",
        "endpoints[0].surprise",
    } <= fields


def test_yaml_errors_and_duplicate_keys(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("endpoints:\n  - name: Chat\n    instance_type: [oops\n")
    with pytest.raises(
        ConfigurationError, match=r"line \d+, column \d+: got .*allowed: valid YAML; fix: fix the syntax"
    ):
        load_config(broken)
    twice = tmp_path / "twice.yaml"
    twice.write_text("stack_name: A\nstack_name: B\nendpoints: []\n")
    with pytest.raises(ConfigurationError, match=r"key 'stack_name' is given twice"):
        load_config(twice)


def test_missing_file_and_empty_file(tmp_path):
    with pytest.raises(
        ConfigurationError, match=r"allowed: a readable YAML file; fix: check the path .*-c config=PATH"
    ):
        load_config(tmp_path / "nope.yaml")
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(
        ConfigurationError, match=r"\(top level\): got nothing .*allowed: a mapping with at least 'endpoints'"
    ):
        load_config(empty)


def test_published_schema_is_current():
    published = json.loads((ROOT / "config" / "schema.json").read_text())
    assert published == json.loads(json.dumps(json_schema())), "run `make schema` and commit config/schema.json"


def test_schema_describes_the_config():
    schema = json_schema()
    assert schema["additionalProperties"] is False
    model = schema["$defs"]["ModelSpec"]
    assert model["additionalProperties"] is False
    assert "NVMe" in model["properties"]["cache_weights"]["description"]
    assert model["properties"]["accelerators"]["maximum"] == 64


def _run_app(tmp_path: Path, config_text: str) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "config.yaml"
    config.write_text(textwrap.dedent(config_text))
    env = dict(
        os.environ,
        CDK_OUTDIR=str(tmp_path / "out"),
        CDK_CONTEXT_JSON=json.dumps({"config": str(config)}),
        JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION="1",
    )
    return subprocess.run(
        [sys.executable, str(ROOT / "app.py")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.synth
def test_app_prints_every_problem_without_traceback(tmp_path):
    result = _run_app(
        tmp_path,
        """\
        endpoints:
          - name: Chat
            instance_type: ml.p5e.48xlarg
            scaling: {min_instances: 3, max_instances: 1}
            models:
              - name: qwen_3
                model_data_s3_uri: Qwen/Qwen3-32B
        """,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip().startswith("- ")]
    assert len(lines) == 4, result.stderr
    assert "error: 4 problem(s) in" in result.stderr
    assert "endpoints[0].instance_type: got 'ml.p5e.48xlarg'" in result.stderr


def test_pinned_physical_names_used_twice_are_reported():
    from sagemaker_llm_cdk import parse_config

    with pytest.raises(
        ConfigurationError,
        match=re.escape(
            "endpoints[1].models[0].physical_name: got 'chat'; allowed: a name not used by "
            "endpoints[0].models[0].physical_name"
        ),
    ):
        parse_config(
            {
                "endpoints": [
                    {
                        "name": "A",
                        "instance_type": "ml.g6e.12xlarge",
                        "models": [{"name": "a", "physical_name": "chat", "model_data_s3_uri": "s3://my-weights/a/"}],
                    },
                    {
                        "name": "B",
                        "instance_type": "ml.g6e.12xlarge",
                        "models": [{"name": "b", "physical_name": "chat", "model_data_s3_uri": "s3://my-weights/b/"}],
                    },
                ]
            }
        )
