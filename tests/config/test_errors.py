"""Every problem in one round, in the user's terms: library settings, config files and the app."""

from __future__ import annotations

import textwrap

import pytest
from pydantic import ValidationError
from sagemaker_llm_cdk import ConfigurationError, CopyScaling, ModelSpec
from sagemaker_llm_cdk.core.errors import Problem


def test_a_settings_model_built_in_code_raises_the_same_lines_not_a_pydantic_error():
    with pytest.raises(ConfigurationError) as caught:
        ModelSpec(name="qwen_3", model_data_s3_uri="Qwen/Qwen3-32B", copies={"min_copies": 5, "max_copies": 1})
    error = caught.value
    assert not isinstance(error, ValidationError)
    assert str(error).startswith("3 problem(s) in ModelSpec:\n")
    assert [p.path for p in error.problems] == ["name", "model_data_s3_uri", "copies.min_copies"]
    assert error.problems[1].line() == (
        "model_data_s3_uri: got 'Qwen/Qwen3-32B'; allowed: an s3:// URI; Hugging Face Hub ids are not accepted; "
        "fix: copy the model's files to S3 (for example with `huggingface-cli download` then `aws s3 sync`) and give "
        "s3://bucket/prefix/"
    )


def test_a_nested_model_built_alone_names_its_own_fields():
    with pytest.raises(
        ConfigurationError,
        match=r"1 problem\(s\) in CopyScaling:\n  - min_copies: got 5; allowed: at "
        r"most max_copies \(1\); fix: lower min_copies or raise max_copies",
    ):
        CopyScaling(min_copies=5, max_copies=1)


# ------------------------------------------------------------------ one round, in config terms
import copy  # noqa: E402
from pathlib import Path  # noqa: E402

import yaml  # noqa: E402
from sagemaker_llm_cdk import parse_config  # noqa: E402

pytestmark = pytest.mark.synth

DEFAULT = yaml.safe_load((Path(__file__).resolve().parents[2] / "config" / "default.yaml").read_text())


def _config(change) -> dict:
    data = copy.deepcopy(DEFAULT)
    change(data)
    return data


def _lines(data) -> list[str]:
    with pytest.raises(ConfigurationError) as caught:
        parse_config(data, source="config/x.yaml")
    assert caught.value.source == "config/x.yaml"
    assert str(caught.value).startswith(f"{len(caught.value.problems)} problem(s) in config/x.yaml:")
    return [p.line() for p in caught.value.problems]


def _everything_at_once(data: dict) -> None:
    chat = data["endpoints"][0]
    chat["capacity_plan"] = "nope"  # cross-object: plan reference
    chat["scaling"]["min_instances"] = 5  # endpoint cross-field
    chat["models"][0]["eagle"]["speedup_threshold"] = 0.5  # a field of model 0 fails ...
    chat["models"][0]["lora"] = {"max_rank": 16}  # ... and its cross-field rule still runs
    chat["models"][1]["model_data_s3_uri"] = "http://x"  # a field of model 1 fails ...
    chat["models"][1]["lora"]["max_rank"] = None  # ... and its adapters still need max_rank
    chat["models"][1]["accelerators"] = 16  # stack-build rule: GPUs per instance


def test_every_problem_comes_in_one_round_even_when_fields_fail():
    lines = _lines(_config(_everything_at_once))
    fields = [line.split(": got")[0] for line in lines]
    assert fields == [
        "endpoints[0].scaling.min_instances",
        "endpoints[0].models[0].eagle.speedup_threshold",
        "endpoints[0].models[0].eagle",
        "endpoints[0].models[1].model_data_s3_uri",
        "endpoints[0].models[1].lora.max_rank",
        "endpoints[0].models[1].accelerators",
        "endpoints[0].capacity_plan",
    ], lines
    assert (
        "endpoints[0].capacity_plan: got 'nope'; allowed: the name of a plan in capacity_plans: none declared"
        in lines[-1]
    )


def test_a_failed_field_does_not_invent_problems_from_its_default():
    """min_copies is fine, max_copies fails: the min <= max rule must not run against max's default."""

    def change(data):
        data["endpoints"][0]["models"][0]["copies"] = {"min_copies": 3, "max_copies": "many"}

    lines = _lines(_config(change))
    assert [line.split(": got")[0] for line in lines] == ["endpoints[0].models[0].copies.max_copies"], lines


@pytest.mark.parametrize(
    "change, expected",
    [
        (
            lambda d: d["endpoints"][0]["models"][1].update(accelerators=16),
            "endpoints[0].models[1].accelerators: got 16; allowed: at most 8, the accelerators of one ml.p5e.48xlarge; "
            "fix: lower accelerators or use a larger instance type",
        ),
        (
            lambda d: d["endpoints"][0]["models"][1].update(environment={"OPTION_MAX_LORAS": "99"}),
            "endpoints[0].models[1].environment.OPTION_MAX_LORAS: got '99'; allowed: '4', which the lora settings "
            "give; fix: remove OPTION_MAX_LORAS from environment and set it through lora",
        ),
        (
            lambda d: d["endpoints"][0]["models"][0].update(environment={"OPTION_SESSIONS_EXPIRATION": "60"}),
            "endpoints[0].models[0].environment.OPTION_SESSIONS_EXPIRATION: got '60'; allowed: '1200', which the "
            "sessions settings give",
        ),
        (
            lambda d: d["endpoints"][0]["models"][0].update(environment={"OPTION_SPECULATIVE_CONFIG": "{}"}),
            "endpoints[0].models[0].environment.OPTION_SPECULATIVE_CONFIG: got '{}'; allowed: nothing with eagle",
        ),
        (
            lambda d: (
                d["endpoints"][0].update(data_capture={"enabled": False}),
                d["endpoints"][0]["models"][0]["eagle"]["dataset"].update(source="capture"),
            ),
            "endpoints[0].models[0].eagle.dataset.source: got 'capture'; allowed: s3 or builtin while the endpoint's "
            "data_capture is off (enabled: false)",
        ),
        (
            lambda d: d["endpoints"][0]["models"][0]["eagle"].update(
                use_capacity_plan=True, job_instance_type="ml.g6e.12xlarge"
            ),
            "endpoints[0].models[0].eagle.use_capacity_plan: got True; allowed: false: a capacity plan bought for "
            "endpoints (target endpoint) cannot be given to an optimization job",
        ),
    ],
)
def test_rules_the_stack_would_find_are_found_in_the_config(change, expected):
    lines = _lines(_config(change))
    assert any(expected in line for line in lines), "\n".join(lines)


def test_an_endpoint_type_that_cannot_run_optimization_jobs_needs_a_job_instance_type():
    def change(data):
        data["capacity_plans"] = []
        chat = data["endpoints"][0]
        chat.pop("capacity_plan", None)
        chat["instance_type"] = "ml.c5.2xlarge"
        chat["models"] = [chat["models"][0]]
        chat["models"][0].update(accelerators=1)

    lines = _lines(_config(change))
    assert any(
        line.startswith(
            "endpoints[0].models[0].eagle.job_instance_type: got 'ml.c5.2xlarge'; allowed: an "
            "instance type SageMaker accepts for optimization jobs"
        )
        for line in lines
    ), lines


ONE_MODEL = textwrap.dedent("""\
    endpoints:
      - name: Chat
        instance_type: ml.g6e.12xlarge
        data_capture: {enabled: false}
        models:
          - name: qwen3-8b
            model_data_s3_uri: s3://my-weights/qwen3-8b/
            architecture: Qwen3ForCausalLM
    """)
"""A config with one endpoint and one model, every field valid (tests add or layer the rest)."""


def test_the_app_prints_stack_rules_in_config_terms_without_a_traceback(tmp_path):
    import json
    import os
    import subprocess
    import sys
    import textwrap

    root = Path(__file__).resolve().parents[2]
    config = tmp_path / "x.yaml"
    config.write_text(
        ONE_MODEL
        + textwrap.indent(
            textwrap.dedent("""\
        accelerators: 8
        copies: {min_copies: 1, max_copies: "two"}
        eagle: {}
        """),
            " " * 8,
        )
    )
    env = dict(
        os.environ,
        CDK_OUTDIR=str(tmp_path / "out"),
        CDK_CONTEXT_JSON=json.dumps({"config": str(config)}),
        JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION="1",
    )
    result = subprocess.run(
        [sys.executable, str(root / "app.py")], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"error: 3 problem(s) in {config}:" in result.stderr, result.stderr
    for line in (
        "endpoints[0].models[0].copies.max_copies: got 'two'",
        "endpoints[0].models[0].accelerators: got 8; allowed: at most 4, the accelerators of one ml.g6e.12xlarge",
        "endpoints[0].models[0].eagle.dataset.source: got 'capture'; allowed: s3 or builtin",
    ):
        assert line in result.stderr, result.stderr


def test_the_config_rule_knows_the_variables_the_front_door_sets():
    from sagemaker_llm_cdk import SessionSettings
    from sagemaker_llm_cdk.sessions import front_door as session_front_door

    settings = SessionSettings(expiration_seconds=600)
    assert settings.container_environment() == session_front_door._session_variables(settings)


# ------------------------------------------------------------------ problems found while building, in config terms
def _problem(path: str) -> Problem:
    return Problem(path, 1, "something else", "change it")


def test_a_construct_problem_with_a_field_of_its_spec_is_placed_under_the_config_item():
    from sagemaker_llm_cdk import ModelSpec
    from sagemaker_llm_cdk.config.loading import config_item

    spec = ModelSpec(name="m", model_data_s3_uri="s3://my-weights/m/")
    with pytest.raises(ConfigurationError) as raised, config_item("endpoints[1].models[2]", spec):
        raise ConfigurationError(
            [
                _problem("environment"),
                _problem("component.spec.architecture"),
                _problem("copies.max_copies"),
                _problem("endpoints[0].instance_type"),
                _problem("component.node"),
                _problem(""),
            ],
            source="Stack/Chat/m",
        )
    error = raised.value
    assert error.config_item == "endpoints[1].models[2]" and error.source == "Stack/Chat/m"
    assert [p.path for p in error.problems] == [
        "endpoints[1].models[2].environment",
        "endpoints[1].models[2].architecture",
        "endpoints[1].models[2].copies.max_copies",
        "endpoints[0].instance_type",  # names the config already
        "component.node",
        "",
    ]  # not a field of the model: kept as the construct said it
    assert [(p.value, p.allowed, p.fix) for p in error.problems] == [(1, "something else", "change it")] * 6


def test_an_inner_config_items_error_passes_the_outer_item_as_it_is():
    from sagemaker_llm_cdk import EndpointSpec, ModelSpec
    from sagemaker_llm_cdk.config.loading import config_item

    model = ModelSpec(name="m", model_data_s3_uri="s3://my-weights/m/")
    endpoint = EndpointSpec(name="Chat", instance_type="ml.g6e.12xlarge", models=[model])
    with (
        pytest.raises(ConfigurationError) as raised,
        config_item("endpoints[0]", endpoint),
        config_item("endpoints[0].models[0]", model),
    ):
        raise ConfigurationError([_problem("name")])  # a field both specs have
    assert [p.path for p in raised.value.problems] == ["endpoints[0].models[0].name"]
    with (
        pytest.raises(ValueError, match="^not a configuration error$"),  # other errors are not touched
        config_item("endpoints[0]", endpoint),
    ):
        raise ValueError("not a configuration error")


def _environment_config(tmp_path: Path) -> Path:
    """A config layered over another whose model sets 95 variables: 6 more from its features pass SageMaker's 100."""
    (tmp_path / "base.yaml").write_text(ONE_MODEL)
    variables = "".join(f"          VAR_{i}: x\n" for i in range(95))
    (tmp_path / "x.yaml").write_text(
        "extends: base.yaml\nendpoints:\n  - name: Chat\n    models:\n"
        "      - name: qwen3-8b\n        lora: {max_gpu_adapters: 2, max_cpu_adapters: 8, max_rank: 16}\n"
        "        environment:\n" + variables
    )
    return tmp_path / "x.yaml"


ENVIRONMENT_LINE = (
    "endpoints[0].models[0].environment: got '101 variables (95 configured, 6 set by features, the last "
    "OPTION_MAX_LORA_RANK)'; allowed: at most 100 variables in the container (SageMaker's limit); fix: "
    "remove variables from environment"
)


@pytest.mark.parametrize("env", ["agnostic", "bound"])
def test_a_limit_found_while_building_names_the_config_path_and_its_line(tmp_path, env):
    from aws_cdk import App, Environment
    from sagemaker_llm_cdk import load_config
    from sagemaker_llm_cdk.config.loading import locate_problems

    from stacks import LlmPlatformStack

    path = _environment_config(tmp_path)
    config = load_config(path)  # every config rule passes: only the built container has 101 variables
    environment = Environment(account="111111111111", region="us-west-2") if env == "bound" else None
    with pytest.raises(ConfigurationError) as raised:
        LlmPlatformStack(App(), "S", config=config, config_dir=tmp_path, env=environment)
    (problem,) = raised.value.problems
    assert problem.line() == ENVIRONMENT_LINE
    (located,) = locate_problems(path, raised.value.problems)
    assert located.where == f"{path} line 8"  # x.yaml's environment mapping, where the variables are written
    assert located.line() == ENVIRONMENT_LINE


def test_the_app_prints_a_problem_found_while_building_with_its_file_and_line(tmp_path, capsys):
    from support.examples import synthesize_in_process

    path = _environment_config(tmp_path)
    root = Path(__file__).resolve().parents[2]
    with pytest.raises(AssertionError, match="exited with status 1"):  # app.py, as `cdk synth -c config=...` runs it
        synthesize_in_process(root / "app.py", tmp_path / "out", context={"config": str(path)})
    assert capsys.readouterr().err.splitlines() == [
        f"error: 1 problem(s) in {path} (found while building SageMakerLlm/Chat/qwen3-8b):",
        f"  - {ENVIRONMENT_LINE}; where: {path} line 8",
    ]


def test_a_failed_field_does_not_make_the_partial_rules_see_defaults_as_given():
    """With one field of a JumpStart model wrong, the other rules still run on what passed; the defaults of
    model_data_s3_uri and image are not "given" there (they were reported as "nothing with source: jumpstart")."""
    from sagemaker_llm_cdk import parse_config

    data = {
        "endpoints": [
            {
                "name": "Chat",
                "instance_type": "ml.g6e.2xlarge",
                "data_capture": {"enabled": False},
                "models": [
                    {
                        "name": "gpt-oss-20b",
                        "source": "jumpstart",
                        "model_id": "openai-reasoning-gpt-oss-20b",
                        "version": "1.0.0",
                        "copies": {"max_copies": "two"},
                    }
                ],
            }
        ]
    }
    with pytest.raises(ConfigurationError) as raised:
        parse_config(data)
    assert [p.path for p in raised.value.problems] == ["endpoints[0].models[0].copies.max_copies"]
    data["endpoints"][0]["models"][0]["image"] = "lmi"  # written: the rule still says so, with the failed field
    with pytest.raises(ConfigurationError) as raised:
        parse_config(data)
    assert [p.path for p in raised.value.problems] == [
        "endpoints[0].models[0].copies.max_copies",
        "endpoints[0].models[0].image",
    ]
