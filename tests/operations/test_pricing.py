"""Price List lookups (pricing GetProducts through Stubber) and the cost table's price section."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from typing import Any

import botocore.session
import pytest
from aws_cdk import App, Environment, Stack
from botocore import xform_name
from botocore.stub import Stubber
from sagemaker_llm_cdk import EndpointOptions, LlmEndpoint, ModelSpec
from sagemaker_llm_cdk.operations.cost import cost_ceiling_table
from sagemaker_llm_cdk.operations.pricing import (
    PRICE_TABLE,
    HourlyPrice,
    PriceList,
    PriceTable,
    on_demand_prices,
    price_lines,
    product_filters,
    shipped_table,
    table_json,
    write_table,
)
from support.aws_model import assert_valid_request

pytestmark = pytest.mark.synth


def product(usd: str, unit: str = "Hrs", **attributes: str) -> str:
    return json.dumps(
        {
            "product": {"attributes": {"instanceName": "ml.g6e.12xlarge", **attributes}},
            "terms": {"OnDemand": {"T": {"priceDimensions": {"D": {"unit": unit, "pricePerUnit": {"USD": usd}}}}}},
        }
    )


def stubbed_pricing(*pages: dict) -> tuple[PriceList, Stubber]:
    client = botocore.session.get_session().create_client(
        "pricing", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    stubber = Stubber(client)
    base = {
        "ServiceCode": "AmazonSageMaker",
        "Filters": product_filters("ml.g6e.12xlarge", "eu-west-1"),
        "FormatVersion": "aws_v1",
        "MaxResults": 100,
    }
    for index, page in enumerate(pages):
        params = {**base, **({"NextToken": f"t{index}"} if index else {})}
        assert_valid_request("pricing", "GetProducts", params)
        stubber.add_response(xform_name("GetProducts"), page, params)
    stubber.activate()
    regions_asked: list[str] = []

    def client_for(region: str):
        regions_asked.append(region)
        return client

    prices = PriceList(client_for=client_for)
    prices.regions_asked = regions_asked  # type: ignore[attr-defined]
    return prices, stubber


def test_filters_name_the_hosting_product():
    assert product_filters("ml.p5e.48xlarge", "us-east-1") == [
        {"Type": "TERM_MATCH", "Field": "productFamily", "Value": "ML Instance"},
        {"Type": "TERM_MATCH", "Field": "locationType", "Value": "AWS Region"},
        {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-east-1"},
        {"Type": "TERM_MATCH", "Field": "instanceName", "Value": "ml.p5e.48xlarge"},
        {"Type": "TERM_MATCH", "Field": "platoinstancetype", "Value": "Hosting"},
    ]


def test_only_hourly_positive_prices_count():
    assert on_demand_prices([product("1.50"), product("0.0000000000"), product("3", unit="GB-Mo"), "not json"]) == [
        (Decimal("1.50"), "USD")
    ]


def test_lookup_pages_and_takes_the_one_exact_product_once():
    outposts = product("14.00", locationType="AWS Outposts", usagetype="EUW1-Host:ml.g6e.12xlarge")
    prices, stubber = stubbed_pricing(
        {"PriceList": [outposts], "NextToken": "t1"},
        {"PriceList": [product("10.4930000000", locationType="AWS Region", regionCode="eu-west-1")]},
    )
    first = prices.hourly("ml.g6e.12xlarge", "eu-west-1")
    assert first.amount == Decimal("10.493")
    assert first.label() == "USD 10.493/h (Price List API, SKU ?; skipped SKU ? (locationType AWS Outposts))"
    assert first.times(720) == "USD 7,554.96"
    assert prices.hourly("ml.g6e.12xlarge", "eu-west-1") is first  # cached: no second call
    stubber.assert_no_pending_responses()
    assert prices.regions_asked == ["us-east-1"]  # type: ignore[attr-defined]


def test_several_matching_prices_are_never_resolved_by_taking_the_highest():
    prices, stubber = stubbed_pricing(
        {"PriceList": [product("10.493"), product("11.00")], "NextToken": "t1"}, {"PriceList": []}
    )
    price = prices.hourly("ml.g6e.12xlarge", "eu-west-1")
    assert price.amount is None
    assert price.label() == (
        "unknown (2 listed prices match at different amounts (SKU ? USD 10.493, SKU ? USD 11); none taken)"
    )
    stubber.assert_no_pending_responses()


def test_no_listed_price_and_api_errors_are_not_looked_up():
    prices, stubber = stubbed_pricing({"PriceList": []})
    assert prices.hourly("ml.g6e.12xlarge", "eu-west-1").label() == (
        "not looked up (no Hosting price listed for ml.g6e.12xlarge in eu-west-1)"
    )
    client = botocore.session.get_session().create_client(
        "pricing", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    failing = Stubber(client)
    failing.add_client_error("get_products", service_error_code="AccessDeniedException", http_status_code=400)
    failing.activate()
    denied = PriceList(client_for=lambda region: client).hourly("ml.g6e.12xlarge", "eu-west-1")
    assert denied.amount is None and denied.label() == "not looked up (GetProducts failed: AccessDeniedException)"


def test_govcloud_is_not_looked_up_without_a_call():
    def no_client(region: str):
        raise AssertionError("no Price List call for GovCloud")

    price = PriceList(client_for=no_client).hourly("ml.g6e.12xlarge", "us-gov-west-1")
    assert price.label() == "not looked up (the Price List API does not serve partition aws-us-gov)"


def test_price_lines_without_a_lookup():
    assert price_lines(
        [("ml.g6e.12xlarge", "us-east-1"), ("ml.g6e.12xlarge", "us-east-1"), ("ml.p5e.48xlarge", None)], None
    ) == [
        "ml.g6e.12xlarge in us-east-1: not looked up (run `make preflight` with credentials)",
        "ml.p5e.48xlarge in any region: not looked up (the stack has no region)",
    ]


def _stack(env: Environment | None) -> App:
    app = App()
    stack = Stack(app, "Priced", env=env)
    endpoint = LlmEndpoint(stack, "Chat", settings=EndpointOptions(instance_type="ml.g6e.12xlarge"))
    endpoint.add_model("Qwen", ModelSpec(name="qwen3-8b", model_data_s3_uri="s3://my-weights/qwen3-8b/"))
    return app


def test_cost_table_prices_from_the_shipped_table_at_synth():
    table = cost_ceiling_table(_stack(None))
    assert table.splitlines()[-2:] == [
        "Prices (per instance-hour):",
        f"- ml.g6e.12xlarge Hosting in any region: unknown (no region's price in the table of {shipped_table().read})",
    ]


def test_cost_table_uses_a_given_lookup_for_a_bound_region():
    prices, stubber = stubbed_pricing({"PriceList": [product("10.493")]})
    table = cost_ceiling_table(_stack(Environment(account="123456789012", region="eu-west-1")), prices=prices)
    assert table.splitlines()[-1] == "- ml.g6e.12xlarge Hosting in eu-west-1: USD 10.493/h (Price List API)"
    assert "USD 7,554.96" in table  # 720 h at the floor (min_instances 1), priced
    stubber.assert_no_pending_responses()


# ----------------------------------------------------------------------- the shipped table
def test_the_shipped_table_covers_every_accepted_type_and_region_with_a_source_and_date():
    from sagemaker_llm_cdk.core import service_model
    from sagemaker_llm_cdk.core.instances import _ACCELERATORS
    from sagemaker_llm_cdk.core.regions import DLC_ACCOUNTS

    table = shipped_table()
    for usage, types in (("Hosting", set(_ACCELERATORS)), ("Training", service_model.optimization_instance_types())):
        for instance_type in types:
            for region in DLC_ACCOUNTS:
                cell = table.cells[(usage, instance_type, region)]
                amount, source, read = cell
                assert amount is None or (amount > 0 and source.startswith("https://") and read), cell
    data = json.loads(PRICE_TABLE.read_text(encoding="utf-8"))
    assert data["currency"] == "USD" and data["read"] == table.read.isoformat() and data["searched"]
    assert set(data["usages"]) == {"Hosting", "Training"}


def test_an_unknown_cell_reads_unknown_and_a_known_one_names_its_date():
    table = PriceTable.from_json(
        {
            "read": "2026-12-01",
            "usages": {
                "Hosting": {
                    "what": "x",
                    "prices": {
                        "ml.g6e.2xlarge": {
                            "us-east-1": {"usd_per_hour": "2.5", "source": "https://example.com", "read": "2026-11-30"},
                            "eu-west-1": None,
                        }
                    },
                }
            },
        }
    )
    assert table.hourly("ml.g6e.2xlarge", "us-east-1").label() == "USD 2.5/h (price table, read 2026-11-30)"
    assert table.hourly("ml.g6e.2xlarge", "eu-west-1").label().startswith("unknown (not found in AWS's published")
    assert (
        table.hourly("ml.p5.48xlarge", "us-east-1")
        .label()
        .startswith("unknown (ml.p5.48xlarge Hosting in us-east-1 is not in the price table")
    )
    assert table.highest("ml.g6e.2xlarge").amount == Decimal("2.5")
    assert table.age_line(date(2026, 12, 31)).startswith(
        "Prices: USD per instance-hour from the price table of 2026-12-01 (30 days old), 1 of 2 figures known"
    )


def test_refresh_rewrites_the_table_from_one_query_per_region_and_usage(tmp_path):
    path = tmp_path / "prices.json"
    write_table(
        table_json(date(2026, 1, 1), types={"Hosting": ["ml.g6e.2xlarge", "ml.g6e.4xlarge"]}, regions=["us-east-1"]),
        path,
    )

    class OneRegion:
        calls: list[tuple[str, str]] = []

        def region_prices(self, region: str, *, usage: str = "Hosting") -> dict[str, Any]:
            self.calls.append((region, usage))
            return {"ml.g6e.2xlarge": HourlyPrice("ml.g6e.2xlarge", region, Decimal("2.24"), "USD", "Price List API")}

    data = table_json(
        date(2026, 12, 1),
        lambda region, usage: OneRegion().region_prices(region, usage=usage),
        previous=PriceTable.load(path),
        types={"Hosting": ["ml.g6e.2xlarge", "ml.g6e.4xlarge"]},
        regions=["us-east-1"],
    )
    write_table(data, path)
    table = PriceTable.load(path)
    assert table.cells[("Hosting", "ml.g6e.2xlarge", "us-east-1")] == (
        Decimal("2.24"),
        "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonSageMaker/current/us-east-1/index.json",
        "2026-12-01",
    )
    assert table.cells[("Hosting", "ml.g6e.4xlarge", "us-east-1")][0] is None
    assert OneRegion.calls == [("us-east-1", "Hosting")]


def test_region_prices_reads_every_instance_in_one_paginated_query():
    client = botocore.session.get_session().create_client(
        "pricing", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    stubber = Stubber(client)
    filters = [
        {"Type": "TERM_MATCH", "Field": "productFamily", "Value": "ML Instance"},
        {"Type": "TERM_MATCH", "Field": "locationType", "Value": "AWS Region"},
        {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "eu-west-1"},
        {"Type": "TERM_MATCH", "Field": "platoinstancetype", "Value": "Hosting"},
    ]
    base = {"ServiceCode": "AmazonSageMaker", "Filters": filters, "FormatVersion": "aws_v1", "MaxResults": 100}
    assert_valid_request("pricing", "GetProducts", base)

    def listed(name: str, usd: str) -> str:
        return json.dumps(
            {
                "product": {"attributes": {"instanceName": name}},
                "terms": {"OnDemand": {"T": {"priceDimensions": {"D": {"unit": "Hrs", "pricePerUnit": {"USD": usd}}}}}},
            }
        )

    stubber.add_response("get_products", {"PriceList": [listed("ml.g6e.2xlarge", "2.5")], "NextToken": "n"}, base)
    stubber.add_response("get_products", {"PriceList": [listed("ml.g6e.4xlarge", "3.5")]}, {**base, "NextToken": "n"})
    stubber.activate()
    found = PriceList(client_for=lambda _region: client).region_prices("eu-west-1")
    assert {name: price.amount for name, price in found.items()} == {
        "ml.g6e.2xlarge": Decimal("2.5"),
        "ml.g6e.4xlarge": Decimal("3.5"),
    }
    stubber.assert_no_pending_responses()
