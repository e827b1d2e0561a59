"""On-demand SageMaker instance-hour prices from the AWS Price List API (``pricing`` ``GetProducts``).

Prices change and differ by region and agreement, so nothing here is hard-coded: a price is
looked up with credentials (read-only, ``pricing:GetProducts``) or shown as "not looked up".
``preflight`` uses it for its cost lines; ``cost.cost_ceiling_table(prices=...)`` takes the same
lookup, and with none (the synth default: no AWS calls at synth) marks every price as not looked up.

The Price List API is served from ``us-east-1`` for the commercial partition and from
``cn-northwest-1`` for the China regions. GovCloud prices appear in the commercial price list,
which GovCloud credentials cannot call, so they are not looked up.

Products are matched as AWS's own SageMaker tooling matches them: ``ServiceCode`` ``AmazonSageMaker``,
``productFamily`` ``ML Instance``, ``regionCode``, ``instanceName`` and ``platoinstancetype``
(``Hosting`` for endpoints).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Callable, Iterable, Protocol

SERVICE_CODE = "AmazonSageMaker"
PRODUCT_FAMILY = "ML Instance"
HOSTING = "Hosting"
PRICE_LIST_REGION = {"aws": "us-east-1", "aws-cn": "cn-northwest-1"}
"""Where the Price List API answers, per partition."""
NOT_LOOKED_UP = "not looked up"
_MAX_PAGES = 5


@dataclass(frozen=True)
class HourlyPrice:
    """One instance-hour's on-demand price, or why it is not known (``amount`` None)."""

    instance_type: str
    region: str
    amount: Decimal | None
    currency: str = "USD"
    note: str = NOT_LOOKED_UP

    @property
    def known(self) -> bool:
        return self.amount is not None

    def label(self) -> str:
        """``USD 12.34/h (Price List API)`` or ``not looked up (why)``."""
        if self.amount is None:
            return self.note
        return f"{self.currency} {self.amount.normalize():f}/h ({self.note})"

    def times(self, hours: int) -> str:
        """The cost of ``hours`` instance-hours, or the reason it is unknown."""
        if self.amount is None:
            return self.note
        return f"{self.currency} {(self.amount * hours).quantize(Decimal('0.01')):,}"


class PriceLookup(Protocol):
    """Anything that prices an instance type in a region (``PriceList``, or a test double)."""

    def hourly(self, instance_type: str, region: str, *, usage: str = HOSTING) -> HourlyPrice: ...


def not_looked_up(instance_type: str, region: str, why: str | None = None) -> HourlyPrice:
    return HourlyPrice(instance_type, region, None, note=NOT_LOOKED_UP + (f" ({why})" if why else ""))


def product_filters(instance_type: str, region: str, usage: str = HOSTING) -> list[dict[str, str]]:
    """The ``GetProducts`` filters for one instance type's on-demand price in ``region``."""
    return [
        {"Type": "TERM_MATCH", "Field": "productFamily", "Value": PRODUCT_FAMILY},
        {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region},
        {"Type": "TERM_MATCH", "Field": "instanceName", "Value": instance_type},
        {"Type": "TERM_MATCH", "Field": "platoinstancetype", "Value": usage},
    ]


def on_demand_prices(price_list: Iterable[str]) -> list[tuple[Decimal, str]]:
    """(amount, currency) of every hourly on-demand price dimension in a ``GetProducts`` ``PriceList``."""
    found: list[tuple[Decimal, str]] = []
    for item in price_list:
        try:
            product = json.loads(item) if isinstance(item, str) else item
        except ValueError:
            continue
        terms = (product.get("terms") or {}).get("OnDemand") or {}
        for term in terms.values():
            for dimension in (term.get("priceDimensions") or {}).values():
                unit = str(dimension.get("unit", ""))
                if unit.lower() not in ("hrs", "hours", "hour"):
                    continue
                for currency, text in (dimension.get("pricePerUnit") or {}).items():
                    try:
                        amount = Decimal(str(text))
                    except InvalidOperation:
                        continue
                    if amount > 0:
                        found.append((amount, currency))
    return found


class PriceList:
    """Looks prices up with the Price List API, once per (instance type, region, usage).

    :param client_for: returns a ``pricing`` client for a Price List region (tests pass stubbed
        clients). Default: boto3 clients from ``session`` (or the default session).
    """

    def __init__(self, *, session: Any = None, client_for: Callable[[str], Any] | None = None) -> None:
        self._session = session
        self._client_for = client_for
        self._clients: dict[str, Any] = {}
        self._cache: dict[tuple[str, str, str], HourlyPrice] = {}

    def _client(self, api_region: str) -> Any:
        if api_region not in self._clients:
            if self._client_for is not None:
                self._clients[api_region] = self._client_for(api_region)
            else:
                import boto3

                session = self._session or boto3.Session()
                self._clients[api_region] = session.client("pricing", region_name=api_region)
        return self._clients[api_region]

    def hourly(self, instance_type: str, region: str, *, usage: str = HOSTING) -> HourlyPrice:
        key = (instance_type, region, usage)
        if key not in self._cache:
            self._cache[key] = self._look_up(instance_type, region, usage)
        return self._cache[key]

    def _look_up(self, instance_type: str, region: str, usage: str) -> HourlyPrice:
        from botocore.exceptions import BotoCoreError, ClientError

        from ..core.regions import partition_of

        partition = partition_of(region)
        api_region = PRICE_LIST_REGION.get(partition or "")
        if api_region is None:
            return not_looked_up(instance_type, region, f"the Price List API does not serve partition {partition or 'unknown'}")
        client = self._client(api_region)
        prices: list[tuple[Decimal, str]] = []
        request: dict[str, Any] = {"ServiceCode": SERVICE_CODE, "Filters": product_filters(instance_type, region, usage),
                                   "FormatVersion": "aws_v1", "MaxResults": 100}
        try:
            for _ in range(_MAX_PAGES):
                response = client.get_products(**request)
                prices.extend(on_demand_prices(response.get("PriceList", [])))
                token = response.get("NextToken")
                if not token:
                    break
                request = {**request, "NextToken": token}
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "error")
            return not_looked_up(instance_type, region, f"GetProducts failed: {code}")
        except BotoCoreError as error:
            return not_looked_up(instance_type, region, f"GetProducts failed: {type(error).__name__}")
        if not prices:
            return not_looked_up(instance_type, region, f"no {usage} price listed for {instance_type} in {region}")
        amount, currency = max(prices)
        note = "Price List API" + (", highest of several listed" if len({p for p, _ in prices}) > 1 else "")
        return HourlyPrice(instance_type, region, amount, currency, note)


def price_lines(pairs: Iterable[tuple[str, str | None]], prices: PriceLookup | None) -> list[str]:
    """One line per distinct (instance type, region): its on-demand hourly price, or why it is not shown.

    ``region`` None (an environment-agnostic stack) cannot be priced: the line says so.
    """
    lines: list[str] = []
    for instance_type, region in sorted(set(pairs), key=lambda p: (p[0], p[1] or "")):
        if region is None:
            price = not_looked_up(instance_type, "?", "the stack has no region")
        elif prices is None:
            price = not_looked_up(instance_type, region, "run `make preflight` with credentials")
        else:
            price = prices.hourly(instance_type, region)
        lines.append(f"{instance_type} in {region or 'any region'}: {price.label()}")
    return lines
