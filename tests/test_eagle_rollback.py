"""``python -m tools.eagle_rollback``: the promotion parameter back to the previous head or none."""
from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from tools import eagle_rollback

PARAMETER = "/sagemaker-llm/eagle/qwen3-32b/draft-head"
TABLE = "EagleRuns"
HEAD_1 = "s3://eagle-output/jobs/eagle-qwen3-32b-run-1/draft/"
HEAD_2 = "s3://eagle-output/jobs/eagle-qwen3-32b-run-2/draft/"


@pytest.fixture
def aws():
    with mock_aws():
        ssm = boto3.client("ssm", region_name="us-east-1")
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        ddb.create_table(TableName=TABLE, BillingMode="PAY_PER_REQUEST",
                         KeySchema=[{"AttributeName": "model_name", "KeyType": "HASH"},
                                    {"AttributeName": "run_id", "KeyType": "RANGE"}],
                         AttributeDefinitions=[{"AttributeName": "model_name", "AttributeType": "S"},
                                               {"AttributeName": "run_id", "AttributeType": "S"}])
        ssm.put_parameter(Name=PARAMETER, Value=HEAD_2, Type="String")
        for run, head, previous in (("run-1", HEAD_1, "none"), ("run-2", HEAD_2, HEAD_1)):
            ddb.put_item(TableName=TABLE, Item={
                "model_name": {"S": "qwen3-32b"}, "run_id": {"S": run}, "draft_model_s3_uri": {"S": head},
                "decision": {"S": "promoted"}, "previous_head": {"S": previous}, "ended_at": {"S": f"2026-11-{run[-1]}0"}})
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
    assert eagle_rollback.rollback(ssm, ddb, parameter=PARAMETER, table=TABLE, to="none", dry_run=True) == (HEAD_2, "none")
    assert value(ssm) == HEAD_2
    assert eagle_rollback.main(["--parameter", PARAMETER, "--table", TABLE, "--to", "none", "--region", "us-east-1"]) == 0
    assert value(ssm) == "none" and "serves no draft head" in capsys.readouterr().out


def test_a_head_no_run_promoted_is_not_guessed(aws):
    ssm, ddb = aws
    ssm.put_parameter(Name=PARAMETER, Value="s3://elsewhere/draft/", Type="String", Overwrite=True)
    with pytest.raises(LookupError, match="no run in EagleRuns promoted s3://elsewhere/draft/; use --to none"):
        eagle_rollback.rollback(ssm, ddb, parameter=PARAMETER, table=TABLE)
