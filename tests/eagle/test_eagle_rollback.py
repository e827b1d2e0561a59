"""``python -m tools.eagle_rollback``: the promotion parameter back to the previous head or none."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws
from support.aws_model import create_runs_table

from tools import eagle_rollback

PARAMETER = "/sagemaker-llm/state/eagle/qwen3-32b/draft-head"
TABLE = "EagleRuns"
HEAD_1 = "s3://eagle-output/jobs/eagle-qwen3-32b-run-1/draft/"
HEAD_2 = "s3://eagle-output/jobs/eagle-qwen3-32b-run-2/draft/"


@pytest.fixture
def aws():
    with mock_aws():
        ssm = boto3.client("ssm", region_name="us-east-1")
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        create_runs_table(ddb, TABLE)
        ssm.put_parameter(Name=PARAMETER, Value=HEAD_2, Type="String")
        for run, head, previous in (("run-1", HEAD_1, "none"), ("run-2", HEAD_2, HEAD_1)):
            ddb.put_item(
                TableName=TABLE,
                Item={
                    "model_name": {"S": "qwen3-32b"},
                    "run_id": {"S": run},
                    "draft_model_s3_uri": {"S": head},
                    "decision": {"S": "promoted"},
                    "previous_head": {"S": previous},
                    "ended_at": {"S": f"2026-11-{run[-1]}0"},
                },
            )
        yield ssm, ddb


def value(ssm) -> str:
    return ssm.get_parameter(Name=PARAMETER)["Parameter"]["Value"]


def test_rollback_returns_to_the_previous_head_then_to_none(aws, capsys):
    ssm, _ = aws
    assert eagle_rollback.main(["--parameter", PARAMETER, "--table", TABLE, "--region", "us-east-1"]) == 0
    assert value(ssm) == HEAD_1
    assert f"set {PARAMETER}: {HEAD_2} -> {HEAD_1}" in capsys.readouterr().out
    assert eagle_rollback.main(["--parameter", PARAMETER, "--table", TABLE, "--region", "us-east-1"]) == 0
    assert value(ssm) == "none"  # run-1 replaced no head
    assert eagle_rollback.main(["--parameter", PARAMETER, "--table", TABLE, "--region", "us-east-1"]) == 1
    assert "holds no head" in capsys.readouterr().err


def test_rollback_to_none_and_dry_run(aws, capsys):
    ssm, ddb = aws
    assert eagle_rollback.rollback(ssm, ddb, parameter=PARAMETER, table=TABLE, to="none", dry_run=True) == (
        HEAD_2,
        "none",
    )
    assert value(ssm) == HEAD_2
    assert (
        eagle_rollback.main(["--parameter", PARAMETER, "--table", TABLE, "--to", "none", "--region", "us-east-1"]) == 0
    )
    assert value(ssm) == "none" and "serves no draft head" in capsys.readouterr().out


def test_a_head_no_run_promoted_is_not_guessed(aws):
    ssm, ddb = aws
    ssm.put_parameter(Name=PARAMETER, Value="s3://elsewhere/draft/", Type="String", Overwrite=True)
    with pytest.raises(LookupError, match="no run in EagleRuns promoted s3://elsewhere/draft/; use --to none"):
        eagle_rollback.rollback(ssm, ddb, parameter=PARAMETER, table=TABLE)


def test_the_command_a_slower_benchmark_publishes_rolls_the_head_back(aws, capsys):
    """When serving the head measured slower than before, the benchmark check publishes this command (and the
    alarm's description holds it): run as printed, it restores the previous head; the deploy then serves it."""
    import shlex

    from conftest import load_handler_module

    ssm, ddb = aws
    benchmark = load_handler_module("eagle_job", "benchmark")
    ddb.update_item(
        TableName=TABLE,
        Key={"model_name": {"S": "qwen3-32b"}, "run_id": {"S": "run-2"}},
        UpdateExpression="SET benchmark_comparison = :c",
        ExpressionAttributeValues={":c": {"M": {"slower": {"BOOL": True}}}},
    )
    tool, cli = benchmark.rollback_commands(
        parameter=PARAMETER, table=TABLE, region="us-east-1", previous_head=HEAD_1, stack="Platform"
    )
    command, deploy = tool.split(" && ")
    argv = shlex.split(command)
    assert argv[:3] == ["python", "-m", "tools.eagle_rollback"] and deploy == "cdk deploy Platform"
    assert eagle_rollback.main(argv[3:]) == 0
    assert value(ssm) == HEAD_1
    assert "next: cdk deploy the platform stack" in capsys.readouterr().out
    # the AWS CLI form sets the same value
    cli_args = shlex.split(cli.split(" && ")[0])
    assert cli_args[cli_args.index("--name") + 1] == PARAMETER and cli_args[cli_args.index("--value") + 1] == HEAD_1
    _, cli_none = benchmark.rollback_commands(
        parameter=PARAMETER, table=TABLE, region="us-east-1", previous_head=None, stack="Platform"
    )
    assert "--value none " in cli_none
