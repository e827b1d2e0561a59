"""USD per million output tokens of an EAGLE run: the Price List API through botocore's Stubber (every request
checked against botocore's model), the shipped-table fallback, the capacity-plan rate, and the arithmetic."""

from __future__ import annotations

import json
from typing import Any

import botocore.session
import pytest
from botocore.stub import Stubber
from support.aws_model import assert_valid_request

INSTANCE = "ml.p5e.48xlarge"
REGION = "us-east-1"


@pytest.fixture
def prices(load_handler):
    return load_handler("eagle_job", "job_prices")


@pytest.fixture
def results_module(load_handler):
    return load_handler("eagle_job", "job_results")


@pytest.fixture
def errors(load_handler):
    return load_handler("eagle_job", "job_errors")


def listed(usd: str, *, sku: str = "ABC123", effective: str = "2026-11-01T00:00:00Z") -> str:
    """One PriceList entry as GetProducts returns it (a JSON string)."""
    term, rate = f"{sku}.JRTCKXETXF", f"{sku}.JRTCKXETXF.6YS6EN2CT7"
    return json.dumps(
        {
            "product": {
                "productFamily": "ML Instance",
                "sku": sku,
                "attributes": {
                    "locationType": "AWS Region",
                    "regionCode": REGION,
                    "instanceName": INSTANCE,
                    "platoinstancetype": "Hosting",
                    "usagetype": f"USE1-Host:{INSTANCE}",
                },
            },
            "serviceCode": "AmazonSageMaker",
            "terms": {
                "OnDemand": {
                    term: {
                        "offerTermCode": "JRTCKXETXF",
                        "sku": sku,
                        "effectiveDate": effective,
                        "priceDimensions": {
                            rate: {"rateCode": rate, "unit": "Hrs", "pricePerUnit": {"USD": usd}, "appliesTo": []}
                        },
                        "termAttributes": {},
                    }
                }
            },
            "version": "20261101000000",
            "publicationDate": "2026-11-01T00:00:00Z",
        }
    )


def expected_request(prices) -> dict[str, Any]:
    return {
        "ServiceCode": "AmazonSageMaker",
        "Filters": prices.filters(INSTANCE, REGION),
        "FormatVersion": "aws_v1",
        "MaxResults": 100,
    }


@pytest.fixture
def pricing():
    client = botocore.session.get_session().create_client(
        "pricing", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


ENV = {"PRICE_LIST_LOOKUP": "1", "SHIPPED_HOURLY_USD": "90", "SHIPPED_PRICE_DATE": "2026-12-01"}


def test_filters_ask_for_real_time_inference_in_the_region_itself(prices):
    assert {f["Field"]: f["Value"] for f in prices.filters(INSTANCE, REGION)} == {
        "productFamily": "ML Instance",
        "locationType": "AWS Region",
        "regionCode": REGION,
        "instanceName": INSTANCE,
        "platoinstancetype": "Hosting",
    }
    assert_valid_request("pricing", "GetProducts", expected_request(prices))


def test_price_list_price_is_used_with_its_effective_date(prices, pricing):
    client, stubber = pricing
    assert_valid_request("pricing", "GetProducts", expected_request(prices))
    stubber.add_response(
        "get_products", {"PriceList": [listed("98.32")], "FormatVersion": "aws_v1"}, expected_request(prices)
    )
    asked = []
    price = prices.hourly_price(lambda region: asked.append(region) or client, INSTANCE, REGION, ENV)
    assert asked == ["us-east-1"]
    assert price == {"usd_per_hour": 98.32, "source": "price-list-api 2026-11-01", "note": "on-demand Hosting"}


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ({"error": "AccessDeniedException"}, "GetProducts failed: AccessDeniedException"),
        ({"error": "ThrottlingException"}, "GetProducts failed: ThrottlingException"),
        ({"PriceList": []}, "no hourly on-demand USD price listed"),
        (
            {"PriceList": [listed("98.32", sku="A"), listed("120", sku="B")]},
            "2 listed prices differ (USD 98.32, USD 120); none taken",
        ),
    ],
)
def test_any_price_list_failure_falls_back_to_the_shipped_figure(prices, pricing, answer, reason):
    client, stubber = pricing
    if "error" in answer:
        stubber.add_client_error(
            "get_products", service_error_code=answer["error"], expected_params=expected_request(prices)
        )
    else:
        stubber.add_response("get_products", {**answer, "FormatVersion": "aws_v1"}, expected_request(prices))
    price = prices.hourly_price(lambda _region: client, INSTANCE, REGION, ENV)
    assert price["usd_per_hour"] == 90.0
    assert price["source"] == "shipped-table 2026-12-01"
    assert reason in price["note"] and price["note"].startswith("fallback: ")


def test_without_a_shipped_figure_the_price_is_unknown_with_the_reason(prices, pricing):
    client, stubber = pricing
    stubber.add_client_error("get_products", service_error_code="AccessDeniedException")
    price = prices.hourly_price(lambda _region: client, INSTANCE, REGION, {"PRICE_LIST_LOOKUP": "1"})
    assert price == {
        "usd_per_hour": None,
        "source": "shipped-table undated",
        "note": "unknown: GetProducts failed: AccessDeniedException; no shipped figure",
    }


def test_no_lookup_without_the_grant_and_none_in_govcloud(prices):
    def no_call(region: str) -> Any:
        raise AssertionError(f"asked {region}")

    assert "PRICE_LIST_LOOKUP is not 1" in prices.hourly_price(no_call, INSTANCE, REGION, {})["note"]
    gov = prices.hourly_price(no_call, INSTANCE, "us-gov-west-1", ENV)
    assert gov["source"] == "shipped-table 2026-12-01"
    assert "no Price List API serves partition aws-us-gov" in gov["note"]


def test_capacity_plan_rate_wins_and_is_named(prices):
    price = prices.hourly_price(None, INSTANCE, REGION, {**ENV, "CAPACITY_PLAN_HOURLY_USD": "61.5"})
    assert price == {"usd_per_hour": 61.5, "source": "capacity-plan", "note": "the plan's effective hourly rate"}


def test_a_bought_plan_is_priced_at_its_cap_over_its_instance_hours(prices):
    """USD 150,000 for 30 days of 2 instances: 150000 / (30 x 24 x 2) = USD 104.1666.../h, at most."""
    plan = {"CAPACITY_PLAN_MAX_UPFRONT_FEE_USD": "150000", "CAPACITY_PLAN_INSTANCE_HOURS": "1440"}
    price = prices.hourly_price(None, INSTANCE, REGION, {**ENV, **plan})  # no Price List call: None would raise
    assert price["usd_per_hour"] == pytest.approx(150000 / 1440) and price["source"] == "capacity-plan"
    assert price["note"].startswith("at most: the plan's price cap")
    explicit = prices.hourly_price(None, INSTANCE, REGION, {**ENV, **plan, "CAPACITY_PLAN_HOURLY_USD": "61.5"})
    assert explicit["usd_per_hour"] == 61.5  # a rate given outright wins


@pytest.mark.parametrize(
    ("plan", "match"),
    [
        ({"CAPACITY_PLAN_MAX_UPFRONT_FEE_USD": "150000"}, r"go together, the hours a whole number > 0 \(got ''\)"),
        ({"CAPACITY_PLAN_INSTANCE_HOURS": "1440"}, r"go together"),
        ({"CAPACITY_PLAN_MAX_UPFRONT_FEE_USD": "1", "CAPACITY_PLAN_INSTANCE_HOURS": "0"}, r"\(got '0'\)"),
        (
            {"CAPACITY_PLAN_MAX_UPFRONT_FEE_USD": "lots", "CAPACITY_PLAN_INSTANCE_HOURS": "1440"},
            r"CAPACITY_PLAN_MAX_UPFRONT_FEE_USD 'lots' must be USD, the plan's price cap, a number > 0",
        ),
    ],
    ids=["fee-alone", "hours-alone", "zero-hours", "fee-not-a-number"],
)
def test_plan_settings_that_do_not_go_together_are_one_clear_error(prices, plan, match):
    with pytest.raises(Exception, match=match) as raised:
        prices.hourly_price(None, INSTANCE, REGION, plan)
    assert type(raised.value).__name__ == "ConfigurationError"


@pytest.mark.parametrize("name", ["CAPACITY_PLAN_HOURLY_USD", "SHIPPED_HOURLY_USD"])
@pytest.mark.parametrize("raw", ["abc", "0", "-3", "inf"])
def test_bad_hourly_settings_are_one_clear_configuration_error(prices, errors, name, raw):
    with pytest.raises(Exception, match=rf"{name} '{raw}' must be USD per instance-hour, a number > 0") as raised:
        prices.hourly_price(None, INSTANCE, "us-gov-west-1", {name: raw})
    assert type(raised.value).__name__ == "ConfigurationError"


def test_usd_per_million_output_tokens_hand_computed(prices):
    # USD 98.32/h x 2 instances / (2,000 tokens/s x 3,600 s) x 1e6 = 196.64 / 7.2 = 27.3111...
    assert prices.per_million(98.32, 2, 2000) == 27.3111
    # USD 36/h x 1 / (5,000 tokens/s x 3,600 s) x 1e6 = 2.0 exactly
    assert prices.per_million(36.0, 1, 5000) == 2.0


def summary(results_module, metric: str = "output_throughput"):
    documents = [
        (
            "results/benchmark.json",
            [
                {"configuration": "No EAGLE", "max_concurrency": 1, metric: 100.0},
                {"configuration": "Trained EAGLE", "max_concurrency": 1, metric: 250.0},
                {"configuration": "No EAGLE", "max_concurrency": 8, metric: 500.0},
                {"configuration": "Trained EAGLE", "max_concurrency": 8, metric: 1000.0},
            ],
        )
    ]
    return results_module.summarize_results(documents, ["results/benchmark.json"])


def test_token_costs_per_concurrency_for_base_and_eagle(prices, results_module):
    results = summary(results_module)
    price = {"usd_per_hour": 36.0, "source": "price-list-api 2026-11-01", "note": "on-demand Hosting"}
    cost = prices.token_costs(results, price, instance_type=INSTANCE, instance_count=1)
    # 36 / (100 x 3600) x 1e6 = 100; 36 / (250 x 3600) x 1e6 = 40; at 8: 20 and 10
    assert cost["per_concurrency"] == [
        {"concurrency": 1.0, "base": 100.0, "eagle": 40.0},
        {"concurrency": 8.0, "base": 20.0, "eagle": 10.0},
    ]
    # the headline is the level with the lowest speedup (8: 2.0x), as for the speedup itself
    assert (cost["base"], cost["eagle"], cost["headline_concurrency"]) == (20.0, 10.0, 8.0)
    assert cost["source"] == "price-list-api 2026-11-01" and cost["instance_count"] == 1


def test_total_token_throughput_gives_no_output_token_figure(prices, results_module):
    results = summary(results_module, metric="total_token_throughput")
    price = {"usd_per_hour": 36.0, "source": "capacity-plan", "note": "the plan's effective hourly rate"}
    cost = prices.token_costs(results, price, instance_type=INSTANCE, instance_count=1)
    assert cost["base"] is None and cost["per_concurrency"] == []
    assert "'total_token_throughput' is not output tokens per second" in cost["note"]


def test_plan_bound_endpoint_priced_on_demand_says_so(prices, results_module):
    price = {"usd_per_hour": 36.0, "source": "shipped-table 2026-12-01", "note": "fallback: x"}
    cost = prices.token_costs(summary(results_module), price, instance_type=INSTANCE, instance_count=1, plan_bound=True)
    assert "plan-bound endpoint priced on demand" in cost["note"] and cost["eagle"] == 10.0


# ------------------------------------------------------------------ the record step, end to end (moto + Stubber)
OUT_BUCKET, REPORT_BUCKET, TABLE, PARAMETER = "eagle-output", "eagle-reports", "eagle-runs", "/eagle/qwen/head"


def benchmark(throughput: float) -> dict[str, Any]:
    return {"max_concurrency": 8, "output_throughput": throughput, "total_token_throughput": throughput * 3}


def record_event() -> dict[str, Any]:
    name = "eagle-qwen3-32b-run-1"
    output = f"s3://{OUT_BUCKET}/jobs/{name}/"
    arn = f"arn:aws:sagemaker:us-east-1:111122223333:optimization-job/{name}"
    return {
        "model_name": "qwen3-32b",
        "model_s3_uri": "s3://eagle-models/qwen3-32b/",
        "architecture": "Qwen3ForCausalLM",
        "deployment_instance_type": INSTANCE,
        "max_instance_count": 2,
        "training_data": {"s3_uri": "s3://eagle-data/datasets/run-1/", "s3_data_type": "S3Prefix"},
        "run_id": "run-1",
        "dataset_summary": {"records": 1200},
        "job_name": name,
        "job_arn": arn,
        "eagle_version": "eagle3",
        "output_s3_uri": output,
        "started_at": "2026-11-30T08:00:00Z",
        "draft_model_s3_uri": f"{output}draft/",
        "results_s3_uri": f"{output}results/",
        "job": {
            "OptimizationJobArn": arn,
            "OptimizationJobStatus": "COMPLETED",
            "CreationTime": "2026-11-30T08:00:00Z",
            "OptimizationStartTime": "2026-11-30T08:02:00Z",
            "OptimizationEndTime": "2026-11-30T14:00:00Z",
            "LastModifiedTime": "2026-11-30T14:00:00Z",
            "OptimizationJobName": name,
        },
    }


def test_run_record_and_metrics_carry_usd_per_million_output_tokens(load_handler, monkeypatch, lambda_context, capsys):
    import boto3
    from moto import mock_aws
    from support.aws_model import create_runs_table

    for name, value in {
        "RUNS_TABLE": TABLE,
        "REPORT_S3_URI": f"s3://{REPORT_BUCKET}/eagle",
        "PROMOTION_PARAMETER": PARAMETER,
        "SPEEDUP_THRESHOLD": "1.5",
        "AWS_REGION": REGION,
        **ENV,
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        for bucket in (OUT_BUCKET, REPORT_BUCKET):
            s3.create_bucket(Bucket=bucket)
        create_runs_table(boto3.client("dynamodb", region_name=REGION), TABLE)
        boto3.client("ssm", region_name=REGION).put_parameter(Name=PARAMETER, Value="none", Type="String")
        prefix = "jobs/eagle-qwen3-32b-run-1/"
        s3.put_object(Bucket=OUT_BUCKET, Key=f"{prefix}draft/model.safetensors", Body=b"w")
        for name, throughput in (("baseline.json", 500.0), ("trained_eagle.json", 1000.0)):
            s3.put_object(Bucket=OUT_BUCKET, Key=f"{prefix}results/{name}", Body=json.dumps(benchmark(throughput)))

        handler = load_handler("eagle_job")
        client = handler._pricing["us-east-1"]()
        stubber = Stubber(client)
        prices = load_handler("eagle_job", "job_prices")
        stubber.add_response(
            "get_products", {"PriceList": [listed("36")], "FormatVersion": "aws_v1"}, expected_request(prices)
        )
        with stubber:
            item = handler.record(record_event(), lambda_context)
        stubber.assert_no_pending_responses()

    cost = item["usd_per_million_output_tokens"]
    # USD 36/h x 2 instances / (500 tokens/s x 3600) x 1e6 = 40; with EAGLE (1000 tokens/s): 20
    assert (cost["base"], cost["eagle"], cost["source"]) == (40.0, 20.0, "price-list-api 2026-11-01")
    assert cost["per_concurrency"] == [{"concurrency": 8.0, "base": 40.0, "eagle": 20.0}]
    assert item["decision"] == "promoted"
    (emf,) = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    assert emf["EagleBaseUsdPerMillionOutputTokens"] == [40.0] and emf["EagleUsdPerMillionOutputTokens"] == [20.0]


def test_only_output_token_metrics_are_priced(prices):
    assert "output_throughput" in prices.OUTPUT_METRICS and "output_tps" in prices.OUTPUT_METRICS
    assert not {"total_token_throughput", "throughput", "tokens_per_second"} & prices.OUTPUT_METRICS
