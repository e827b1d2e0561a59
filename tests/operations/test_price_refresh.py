"""``make prices`` (``pricing.refresh`` and its command line) against Stubber-driven, AWS-shaped GetProducts pages:
one partition per call, per-region errors kept as unknown with the reason, GovCloud read from the commercial
list, Outposts products skipped, several matches never settled by taking the highest, one line without
credentials."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore.exceptions import EndpointConnectionError, NoCredentialsError
from botocore.stub import Stubber
from sagemaker_llm_cdk.operations.pricing import (
    ListedProduct,
    NothingRefreshed,
    PriceList,
    PriceTable,
    RefreshRefused,
    caller_partition,
    main,
    pick_price,
    refresh,
    refresh_plan,
    region_filters,
    table_json,
    write_table,
)
from support.aws_model import assert_valid_request

REGIONS = ["cn-north-1", "eu-west-1", "us-east-1", "us-gov-west-1"]
TYPES = {"Hosting": ["ml.g6e.2xlarge", "ml.p5e.48xlarge"], "Training": ["ml.p5e.48xlarge"]}
TODAY = date(2026, 12, 15)
PREFIX = {"us-east-1": "USE1", "eu-west-1": "EU", "us-gov-west-1": "UGW1"}
OFFER = "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonSageMaker/current/{}/index.json"


def listed(
    name: str,
    region: str,
    usd: str,
    *,
    usage: str = "Hosting",
    sku: str,
    location: str = "AWS Region",
    usagetype: str | None = None,
    currency: str = "USD",
) -> str:
    """One ``PriceList`` entry as GetProducts returns it (a JSON string), with AWS's offer-term and rate codes."""
    term, rate = f"{sku}.JRTCKXETXF", f"{sku}.JRTCKXETXF.6YS6EN2CT7"
    kind = "Host" if usage == "Hosting" else "Train"
    return json.dumps(
        {
            "product": {
                "productFamily": "ML Instance",
                "sku": sku,
                "attributes": {
                    "servicecode": "AmazonSageMaker",
                    "locationType": location,
                    "regionCode": region,
                    "instanceName": name,
                    "platoinstancetype": usage,
                    "component": usage,
                    "usagetype": usagetype or f"{PREFIX.get(region, 'X')}-{kind}:{name}",
                    "operation": "RunInstance",
                },
            },
            "serviceCode": "AmazonSageMaker",
            "terms": {
                "OnDemand": {
                    term: {
                        "offerTermCode": "JRTCKXETXF",
                        "sku": sku,
                        "effectiveDate": "2026-12-01T00:00:00Z",
                        "priceDimensions": {
                            rate: {
                                "rateCode": rate,
                                "unit": "Hrs",
                                "description": f"${usd} per {usage} {name} hour in {region}",
                                "beginRange": "0",
                                "endRange": "Inf",
                                "pricePerUnit": {currency: usd},
                                "appliesTo": [],
                            }
                        },
                        "termAttributes": {},
                    }
                }
            },
            "version": "20261201000000",
            "publicationDate": "2026-12-01T00:00:00Z",
        }
    )


def request(region: str, usage: str, token: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "ServiceCode": "AmazonSageMaker",
        "Filters": region_filters(region, usage),
        "FormatVersion": "aws_v1",
        "MaxResults": 100,
    }
    return {**params, "NextToken": token} if token else params


class Stubbed:
    """One us-east-1 ``pricing`` client behind Stubber; every request it is sent is checked against botocore's
    model, and the Price List regions asked for are recorded."""

    def __init__(self) -> None:
        self.client = botocore.session.get_session().create_client(
            "pricing", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
        )
        self.stubber = Stubber(self.client)
        self.sent: list[dict[str, Any]] = []
        self.asked: list[str] = []
        self.client.meta.events.register("before-parameter-build.pricing.GetProducts", self._record)

    def _record(self, params: dict[str, Any], **_kwargs: Any) -> None:
        self.sent.append(dict(params))

    def page(self, region: str, usage: str, entries: list[str], *, token: str | None = None, nxt: str | None = None):
        expected = request(region, usage, token)
        assert_valid_request("pricing", "GetProducts", expected)
        response: dict[str, Any] = {"FormatVersion": "aws_v1", "PriceList": entries}
        if nxt:
            response["NextToken"] = nxt
        self.stubber.add_response("get_products", response, expected)

    def error(self, region: str, usage: str, code: str, message: str, status: int = 400) -> None:
        expected = request(region, usage)
        assert_valid_request("pricing", "GetProducts", expected)
        self.stubber.add_client_error(
            "get_products",
            service_error_code=code,
            service_message=message,
            http_status_code=status,
            expected_params=expected,
        )

    def price_list(self) -> PriceList:
        self.stubber.activate()

        def client_for(api_region: str) -> Any:
            self.asked.append(api_region)
            return self.client

        return PriceList(client_for=client_for)

    def done(self) -> None:
        self.stubber.assert_no_pending_responses()
        assert self.sent, "no request was sent"
        for params in self.sent:
            assert_valid_request("pricing", "GetProducts", params)


def previous_table(path: Path) -> None:
    """A table of 2026-01-01 with one figure (eu-west-1 ml.g6e.2xlarge Hosting), the rest unknown."""
    data = table_json(date(2026, 1, 1), types=TYPES, regions=REGIONS)
    data["usages"]["Hosting"]["prices"]["ml.g6e.2xlarge"]["eu-west-1"] = {
        "usd_per_hour": "9.99",
        "source": "https://example.com/old-offer.json",
        "read": "2026-01-01",
    }
    write_table(data, path)


def test_refresh_writes_every_cell_but_the_failed_region_and_says_why(tmp_path):
    path = tmp_path / "prices.json"
    previous_table(path)
    aws = Stubbed()
    # Hosting: eu-west-1 throttled (after botocore's retries), us-east-1 over two pages with an Outposts product
    # priced above the region's, GovCloud from the same commercial list.
    aws.error("eu-west-1", "Hosting", "ThrottlingException", "Rate exceeded")
    aws.page(
        "us-east-1",
        "Hosting",
        [listed("ml.g6e.2xlarge", "us-east-1", "1.2345000000", sku="G6E2XUSE1")],
        nxt="page-2",
    )
    aws.page(
        "us-east-1",
        "Hosting",
        [
            listed("ml.p5e.48xlarge", "us-east-1", "80.0000000000", sku="P5EOUTPOST", location="AWS Outposts"),
            listed("ml.p5e.48xlarge", "us-east-1", "50.0000000000", sku="P5EUSE1"),
        ],
        token="page-2",
    )
    aws.page("us-gov-west-1", "Hosting", [listed("ml.g6e.2xlarge", "us-gov-west-1", "3.0000000000", sku="G6EGOV")])
    # Training: eu-west-1 answers; us-east-1 lists two products at different prices, one whose usagetype is exact.
    aws.page("eu-west-1", "Training", [listed("ml.p5e.48xlarge", "eu-west-1", "40", usage="Training", sku="P5ETEU")])
    aws.page(
        "us-east-1",
        "Training",
        [
            listed(
                "ml.p5e.48xlarge",
                "us-east-1",
                "47",
                usage="Training",
                sku="P5EFLEX",
                usagetype="USE1-Train:ml.p5e.48xlarge-Flex",
            ),
            listed("ml.p5e.48xlarge", "us-east-1", "45", usage="Training", sku="P5ETUSE1"),
        ],
    )
    aws.page("us-gov-west-1", "Training", [])

    summary = refresh(path, price_list=aws.price_list(), today=TODAY, partition="aws", types=TYPES, regions=REGIONS)
    aws.done()

    assert aws.asked == ["us-east-1"]  # GovCloud from the commercial list; China not queried
    assert summary.splitlines() == [
        f"{path}: 6 of 12 figures known, read 2026-12-15; aws price list: 5 of 6 region queries answered; "
        "not queried: cn-north-1",
        "  not refreshed (figures kept from before): eu-west-1 Hosting: GetProducts failed: ThrottlingException: "
        "Rate exceeded",
    ]
    table = PriceTable.load(path)
    assert table.read == TODAY
    cells = table.cells
    assert cells[("Hosting", "ml.g6e.2xlarge", "us-east-1")] == (
        Decimal("1.2345"),
        OFFER.format("us-east-1"),
        "2026-12-15",
    )
    assert cells[("Hosting", "ml.p5e.48xlarge", "us-east-1")][0] == Decimal("50")  # not the Outposts 80
    assert cells[("Hosting", "ml.g6e.2xlarge", "us-gov-west-1")] == (
        Decimal("3"),
        OFFER.format("us-gov-west-1"),
        "2026-12-15",
    )
    assert cells[("Training", "ml.p5e.48xlarge", "us-east-1")][0] == Decimal("45")
    assert cells[("Training", "ml.p5e.48xlarge", "eu-west-1")][0] == Decimal("40")
    # the failed region keeps its old figure and date, and its unknown cell says why
    assert cells[("Hosting", "ml.g6e.2xlarge", "eu-west-1")] == (
        Decimal("9.99"),
        "https://example.com/old-offer.json",
        "2026-01-01",
    )
    assert table.hourly("ml.p5e.48xlarge", "eu-west-1").label() == (
        "unknown (GetProducts failed: ThrottlingException: Rate exceeded; table of 2026-12-15)"
    )
    assert table.hourly("ml.g6e.2xlarge", "cn-north-1").label() == (
        "unknown (not queried with aws credentials: the China regions' prices are listed in CNY by the China Price "
        "List API, outside this USD table; table of 2026-12-15)"
    )
    assert table.hourly("ml.p5e.48xlarge", "us-gov-west-1").label().startswith("unknown (not found in AWS's")

    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["not_refreshed"] == {
        "Hosting": {
            "cn-north-1": table.reasons[("Hosting", "ml.g6e.2xlarge", "cn-north-1")],
            "eu-west-1": "GetProducts failed: ThrottlingException: Rate exceeded",
        },
        "Training": {"cn-north-1": table.reasons[("Training", "ml.p5e.48xlarge", "cn-north-1")]},
    }
    assert data["cell_notes"] == {
        "Hosting": {
            "ml.p5e.48xlarge": {
                "us-east-1": "Price List API, SKU P5EUSE1 (usagetype USE1-Host:ml.p5e.48xlarge); "
                "skipped SKU P5EOUTPOST (locationType AWS Outposts)"
            }
        },
        "Training": {
            "ml.p5e.48xlarge": {
                "us-east-1": "Price List API, SKU P5ETUSE1 (usagetype USE1-Train:ml.p5e.48xlarge) of 2 matching, "
                "the one whose usagetype ends in :ml.p5e.48xlarge"
            }
        },
    }


def test_a_refresh_no_region_answers_leaves_the_table_unchanged(tmp_path):
    path = tmp_path / "prices.json"
    previous_table(path)
    before = path.read_bytes()
    aws = Stubbed()
    for usage in ("Hosting", "Training"):
        for region in ("eu-west-1", "us-east-1"):
            aws.error(
                region, usage, "UnrecognizedClientException", "The security token included in the request is invalid."
            )
    with pytest.raises(
        NothingRefreshed,
        match=r"no region answered GetProducts \(first: eu-west-1 Hosting: GetProducts failed: Unrecognized.*unchanged",
    ):
        refresh(path, price_list=aws.price_list(), today=TODAY, types=TYPES, regions=["eu-west-1", "us-east-1"])
    aws.done()
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("partition", "match"),
    [
        ("aws-cn", r"partition aws-cn: the China regions' Price List API \(cn-northwest-1\) lists prices in CNY"),
        ("aws-us-gov", r"partition aws-us-gov: GovCloud has no Price List API endpoint.*--partition aws"),
        ("aws-moon", r"partition 'aws-moon' is not one of aws, aws-cn, aws-us-gov; pass --partition aws"),
    ],
)
def test_a_partition_without_a_usd_list_is_refused_before_any_call(tmp_path, partition, match):
    def no_client(region: str) -> Any:
        raise AssertionError(f"no Price List call expected, asked for {region}")

    with pytest.raises(RefreshRefused, match=match):
        refresh(tmp_path / "p.json", price_list=PriceList(client_for=no_client), partition=partition, regions=REGIONS)
    assert not (tmp_path / "p.json").exists()


def test_the_plan_reads_commercial_and_govcloud_regions_with_commercial_credentials():
    queried, skipped = refresh_plan("aws", REGIONS)
    assert queried == ["eu-west-1", "us-east-1", "us-gov-west-1"]
    assert list(skipped) == ["cn-north-1"]


def test_the_caller_partition_comes_from_the_session_region():
    class Session:
        def __init__(self, region: str | None) -> None:
            self.region_name = region

    assert caller_partition(Session("cn-north-1")) == "aws-cn"
    assert caller_partition(Session("us-gov-west-1")) == "aws-us-gov"
    assert caller_partition(Session(None)) == "aws"


def test_an_endpoint_that_does_not_answer_is_not_asked_again():
    class Down:
        sent: list[dict[str, Any]] = []

        def get_products(self, **params: Any) -> dict[str, Any]:
            self.sent.append(params)
            raise EndpointConnectionError(endpoint_url="https://api.pricing.us-east-1.amazonaws.com/")

    down = Down()
    prices = PriceList(client_for=lambda _region: down)
    first = prices.region_prices("us-east-1")
    second = prices.region_prices("eu-west-1")
    assert first.error == "the Price List API in us-east-1 did not answer (EndpointConnectionError)"
    assert second.error == "not queried: the Price List API in us-east-1 did not answer (EndpointConnectionError)"
    assert len(down.sent) == 1
    assert_valid_request("pricing", "GetProducts", down.sent[0])


def test_missing_credentials_are_raised_not_recorded(tmp_path):
    class NoCredentials:
        def get_products(self, **params: Any) -> dict[str, Any]:
            assert_valid_request("pricing", "GetProducts", params)
            raise NoCredentialsError()

    path = tmp_path / "prices.json"
    previous_table(path)
    before = path.read_bytes()
    with pytest.raises(NoCredentialsError):
        refresh(path, price_list=PriceList(client_for=lambda _r: NoCredentials()), types=TYPES, regions=REGIONS)
    assert path.read_bytes() == before


@pytest.fixture
def no_credentials(monkeypatch, tmp_path):
    """An environment where botocore finds no credentials and asks no metadata service."""
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_the_command_without_credentials_prints_one_line_and_exits_2(tmp_path, capsys, no_credentials):
    path = tmp_path / "prices.json"
    previous_table(path)
    before = path.read_bytes()
    assert main(["refresh", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "pricing refresh: no AWS credentials (NoCredentialsError: Unable to locate credentials); configure AWS "
        "credentials allowed pricing:GetProducts (`aws configure`, AWS_PROFILE, or AWS_ACCESS_KEY_ID and "
        "AWS_SECRET_ACCESS_KEY) and run it again; the price table is unchanged"
    ]
    assert path.read_bytes() == before


def test_the_command_refuses_china_credentials_in_one_line(tmp_path, capsys, no_credentials, monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "cn-northwest-1")
    assert main(["refresh", str(tmp_path / "p.json")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert err.startswith("pricing refresh: partition aws-cn: the China regions' Price List API")


# ----------------------------------------------------------------------- picking one product
def product(sku: str, usd: str, **attributes: str) -> ListedProduct:
    base = {"locationType": "AWS Region", "regionCode": "us-east-1", "instanceName": "ml.g6e.2xlarge"}
    return ListedProduct(
        sku, {**base, "platoinstancetype": "Hosting", **attributes}, "ML Instance", ((Decimal(usd), "USD"),)
    )


def test_one_matching_product_is_the_price_list_figure():
    assert pick_price([product("A", "2.5")], "ml.g6e.2xlarge", "us-east-1", "Hosting") == (
        Decimal("2.5"),
        "USD",
        "Price List API",
    )


def test_products_for_another_place_or_usage_are_skipped_and_named():
    products = [
        product("LZ", "9", locationType="AWS Local Zone", regionCode="us-east-1-nyc-1"),
        product("TR", "8", platoinstancetype="Training"),
        product("A", "2.5"),
    ]
    assert pick_price(products, "ml.g6e.2xlarge", "us-east-1", "Hosting") == (
        Decimal("2.5"),
        "USD",
        "Price List API, SKU A; skipped SKU LZ (locationType AWS Local Zone), SKU TR (platoinstancetype Training)",
    )


def test_several_prices_without_an_exact_usagetype_are_unknown():
    products = [
        product("A", "2.5", usagetype="USE1-Host:ml.g6e.2xlarge-A"),
        product("B", "2.7", usagetype="USE1-Host:ml.g6e.2xlarge-B"),
    ]
    assert pick_price(products, "ml.g6e.2xlarge", "us-east-1", "Hosting") == (
        None,
        "",
        "2 listed prices match at different amounts (SKU A USD 2.5, SKU B USD 2.7); none taken",
    )


def test_a_price_in_another_currency_only_is_said():
    cny = ListedProduct("C", {"instanceName": "ml.g6e.2xlarge"}, None, ((Decimal("20"), "CNY"),))
    assert pick_price([cny], "ml.g6e.2xlarge", "cn-north-1", "Hosting", currency="USD") == (
        None,
        "",
        "no Hosting price listed for ml.g6e.2xlarge in cn-north-1 (listed in CNY only)",
    )
