"""The AWS Price List API (``pricing`` ``GetProducts``, read-only ``pricing:GetProducts``) for SageMaker
instance-hours: the query, how a listed product is matched, and ``PriceList``, which looks prices up one by one
(a live preflight) or a whole region at a time (``make prices``, through ``pricing.refresh``).

The Price List API is served from ``us-east-1`` for the commercial partition and from ``cn-northwest-1`` for the
China regions (priced in CNY, so their cells stay unknown in a USD table). GovCloud has no endpoint of its own:
AWS publishes the GovCloud regions' prices in the commercial price list, so ``region_prices`` reads them from
``us-east-1`` (with commercial credentials).

Products are matched as AWS's own SageMaker tooling matches them: ``ServiceCode`` ``AmazonSageMaker``,
``productFamily`` ``ML Instance``, ``locationType`` ``AWS Region`` (an Outposts or Local Zone product never
prices a region), ``regionCode``, ``instanceName`` and ``platoinstancetype`` (``Hosting`` for endpoints,
``Training`` for jobs). A listed product whose stated attributes differ from the query is skipped and named;
when several products still match at different prices, the one whose ``usagetype`` ends in the instance type
is taken and named, and without such a one the price is unknown: the highest is never taken silently.

``pricing`` re-exports every public name here; import them from there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol

SERVICE_CODE = "AmazonSageMaker"
PRODUCT_FAMILY = "ML Instance"
LOCATION_TYPE = "AWS Region"
"""The ``locationType`` of a product priced for a region itself (not an Outpost, Local or Wavelength Zone)."""
HOSTING = "Hosting"
TRAINING = "Training"
JOB_USAGE = TRAINING
"""The ``platoinstancetype`` optimization and benchmark jobs are priced as. AWS's pricing page does not list
inference optimization jobs on their own; ``Training`` is the usage an optimization job's instances are looked
up as until AWS lists another (the table's ``usages`` say so)."""
PRICE_LIST_REGION = {"aws": "us-east-1", "aws-cn": "cn-northwest-1"}
"""Where the Price List API answers, per partition of the caller's credentials."""
LISTED_IN = {"aws": "aws", "aws-us-gov": "aws", "aws-cn": "aws-cn"}
"""Which partition's price list lists a region's prices, by the region's partition: GovCloud's are in the
commercial list."""
NOT_LOOKED_UP = "not looked up"
UNKNOWN = "unknown"
_MAX_PAGES = 5
_MAX_REGION_PAGES = 100


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
        {"Type": "TERM_MATCH", "Field": "locationType", "Value": LOCATION_TYPE},
        {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region},
        {"Type": "TERM_MATCH", "Field": "instanceName", "Value": instance_type},
        {"Type": "TERM_MATCH", "Field": "platoinstancetype", "Value": usage},
    ]


def region_filters(region: str, usage: str = HOSTING) -> list[dict[str, str]]:
    """The ``GetProducts`` filters for every instance type's on-demand price in ``region`` (no ``instanceName``)."""
    return [f for f in product_filters("-", region, usage) if f["Field"] != "instanceName"]


def _product(item: Any) -> dict[str, Any] | None:
    try:
        product = json.loads(item) if isinstance(item, str) else item
    except ValueError:
        return None
    return product if isinstance(product, dict) else None


def on_demand_prices(price_list: Iterable[Any]) -> list[tuple[Decimal, str]]:
    """(amount, currency) of every hourly on-demand price dimension in a ``GetProducts`` ``PriceList``."""
    found: list[tuple[Decimal, str]] = []
    for item in price_list:
        product = _product(item)
        terms = ((product or {}).get("terms") or {}).get("OnDemand") or {}
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


@dataclass(frozen=True)
class ListedProduct:
    """One product of a ``GetProducts`` page: its SKU, attributes and hourly on-demand prices."""

    sku: str
    attributes: Mapping[str, str]
    product_family: str | None
    prices: tuple[tuple[Decimal, str], ...]


def listed_products(price_list: Iterable[Any]) -> list[ListedProduct]:
    """The products of a ``GetProducts`` ``PriceList`` (JSON strings); an entry that is not JSON is left out."""
    products: list[ListedProduct] = []
    for item in price_list:
        data = _product(item)
        if data is None:
            continue
        product = data.get("product") or {}
        attributes = {str(k): str(v) for k, v in (product.get("attributes") or {}).items()}
        family = product.get("productFamily")
        products.append(
            ListedProduct(
                sku=str(product.get("sku") or "?"),
                attributes=attributes,
                product_family=str(family) if family is not None else None,
                prices=tuple(on_demand_prices([data])),
            )
        )
    return products


def _mismatch(product: ListedProduct, instance_type: str, region: str, usage: str) -> str | None:
    """The first attribute ``product`` states that differs from the query (an attribute it leaves out is not held
    against it: the query filtered on it), or None."""
    wanted = {
        "locationType": LOCATION_TYPE,
        "regionCode": region,
        "instanceName": instance_type,
        "platoinstancetype": usage,
    }
    for name, value in wanted.items():
        stated = product.attributes.get(name)
        if stated is not None and stated != value:
            return f"{name} {stated}"
    if product.product_family not in (None, PRODUCT_FAMILY):
        return f"productFamily {product.product_family}"
    return None


def pick_price(
    products: Iterable[ListedProduct], instance_type: str, region: str, usage: str, *, currency: str | None = None
) -> tuple[Decimal | None, str, str]:
    """(amount, currency, note) of ``instance_type``'s on-demand price among ``products``, or (None, "", why).

    The note is ``Price List API`` when one product matched and none was skipped; otherwise it names the SKU
    taken and the products skipped. Several matching products at different prices: the one whose ``usagetype``
    ends in ``:<instance type>``, or unknown when that does not single one out.
    """
    skipped: list[str] = []
    other_currencies: set[str] = set()
    matching: list[tuple[ListedProduct, Decimal, str]] = []
    for product in products:
        why = _mismatch(product, instance_type, region, usage)
        if why is not None:
            skipped.append(f"SKU {product.sku} ({why})")
            continue
        for amount, cur in product.prices:
            if currency is None or cur == currency:
                matching.append((product, amount, cur))
            else:
                other_currencies.add(cur)
    skipped_note = f"; skipped {', '.join(skipped)}" if skipped else ""
    if not matching:
        listed = f" (listed in {', '.join(sorted(other_currencies))} only)" if other_currencies else ""
        return None, "", f"no {usage} price listed for {instance_type} in {region}{listed}{skipped_note}"
    how = ""
    if len({(amount, cur) for _p, amount, cur in matching}) > 1:
        exact = [m for m in matching if m[0].attributes.get("usagetype", "").rsplit(":", 1)[-1] == instance_type]
        if not exact or len({(amount, cur) for _p, amount, cur in exact}) > 1:
            listing = ", ".join(f"SKU {p.sku} {cur} {amount.normalize():f}" for p, amount, cur in matching)
            return None, "", f"{len(matching)} listed prices match at different amounts ({listing}); none taken"
        how = f", the one whose usagetype ends in :{instance_type}"
        matching = exact + [m for m in matching if m not in exact]
    product, amount, cur = matching[0]
    skus = {p.sku for p, _a, _c in matching}
    if len(skus) == 1 and not skipped and not how:
        return amount, cur, "Price List API"
    usagetype = product.attributes.get("usagetype")
    taken = f"SKU {product.sku}" + (f" (usagetype {usagetype})" if usagetype else "")
    of = f" of {len(skus)} matching" if len(skus) > 1 else ""
    return amount, cur, f"Price List API, {taken}{of}{how}{skipped_note}"


@dataclass(frozen=True)
class RegionPrices(Mapping[str, HourlyPrice]):
    """What one region's ``GetProducts`` query gave for one usage: a mapping of instance type to its known price,
    with ``unknown`` (instance type -> why a listed type has no price) and ``error`` (why the region was not
    read: the query failed or was not made; None when it answered)."""

    region: str
    usage: str
    prices: Mapping[str, HourlyPrice] = field(default_factory=dict)
    unknown: Mapping[str, str] = field(default_factory=dict)
    error: str | None = None

    def __getitem__(self, name: str) -> HourlyPrice:
        return self.prices[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.prices)

    def __len__(self) -> int:
        return len(self.prices)


def error_text(error: Exception) -> str:
    """``AccessDeniedException`` or ``ThrottlingException: Rate exceeded`` for a ``ClientError``."""
    details = getattr(error, "response", {}).get("Error", {})
    code = str(details.get("Code") or type(error).__name__)
    message = str(details.get("Message") or "").strip()
    return f"{code}: {message[:200]}" if message else code


def credentials_missing(error: Exception) -> bool:
    """True for botocore's errors that mean the caller has no credentials (or region) to call AWS with."""
    from botocore import exceptions

    missing = (
        exceptions.NoCredentialsError,
        exceptions.PartialCredentialsError,
        exceptions.CredentialRetrievalError,
        exceptions.NoRegionError,
        exceptions.NoAuthTokenError,
        exceptions.TokenRetrievalError,
    )
    return isinstance(error, missing)


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
        self._unreachable: dict[str, str] = {}

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
            return not_looked_up(
                instance_type, region, f"the Price List API does not serve partition {partition or 'unknown'}"
            )
        client = self._client(api_region)
        products: list[ListedProduct] = []
        request: dict[str, Any] = {
            "ServiceCode": SERVICE_CODE,
            "Filters": product_filters(instance_type, region, usage),
            "FormatVersion": "aws_v1",
            "MaxResults": 100,
        }
        try:
            for _ in range(_MAX_PAGES):
                response = client.get_products(**request)
                products.extend(listed_products(response.get("PriceList", [])))
                token = response.get("NextToken")
                if not token:
                    break
                request = {**request, "NextToken": token}
        except ClientError as error:
            return not_looked_up(instance_type, region, f"GetProducts failed: {error_text(error)}")
        except BotoCoreError as error:
            return not_looked_up(instance_type, region, f"GetProducts failed: {type(error).__name__}")
        amount, currency, note = pick_price(products, instance_type, region, usage)
        if amount is None:
            if note.startswith("no "):
                return not_looked_up(instance_type, region, note)
            return HourlyPrice(instance_type, region, None, note=f"{UNKNOWN} ({note})")
        return HourlyPrice(instance_type, region, amount, currency, note)

    def region_prices(self, region: str, *, usage: str = HOSTING) -> RegionPrices:
        """Every instance type's on-demand USD price in ``region`` for ``usage``, from one paginated ``GetProducts``
        query (no ``instanceName`` filter): what ``make prices`` reads, one query per region and usage.

        GovCloud regions are read from the commercial price list (``us-east-1``). A failed query (a ``ClientError``
        such as ``UnrecognizedClientException``, ``AccessDeniedException``, or throttling after botocore's
        retries) comes back as ``error``, not raised; an endpoint that does not answer at all is not asked again
        for later regions. Missing credentials are raised (``NoCredentialsError`` and its kin): no region can be
        read without them. USD only: a region priced in another currency returns its types as ``unknown``.
        """
        from botocore.exceptions import BotoCoreError, ClientError

        from ..core.regions import partition_of

        partition = partition_of(region)
        api_region = PRICE_LIST_REGION.get(LISTED_IN.get(partition or "", ""))
        if api_region is None:
            return RegionPrices(region, usage, error=f"no Price List API lists partition {partition or 'unknown'}")
        if api_region in self._unreachable:
            return RegionPrices(region, usage, error=f"not queried: {self._unreachable[api_region]}")
        client = self._client(api_region)
        request: dict[str, Any] = {
            "ServiceCode": SERVICE_CODE,
            "Filters": region_filters(region, usage),
            "FormatVersion": "aws_v1",
            "MaxResults": 100,
        }
        products: list[ListedProduct] = []
        try:
            for _ in range(_MAX_REGION_PAGES):
                response = client.get_products(**request)
                products.extend(listed_products(response.get("PriceList", [])))
                token = response.get("NextToken")
                if not token:
                    break
                request = {**request, "NextToken": token}
        except ClientError as error:
            return RegionPrices(region, usage, error=f"GetProducts failed: {error_text(error)}")
        except BotoCoreError as error:
            if credentials_missing(error):
                raise
            self._unreachable[api_region] = (
                f"the Price List API in {api_region} did not answer ({type(error).__name__})"
            )
            return RegionPrices(region, usage, error=self._unreachable[api_region])
        by_name: dict[str, list[ListedProduct]] = {}
        for product in products:
            name = product.attributes.get("instanceName")
            if name:
                by_name.setdefault(name, []).append(product)
        known: dict[str, HourlyPrice] = {}
        unknown: dict[str, str] = {}
        for name, listed in by_name.items():
            amount, currency, note = pick_price(listed, name, region, usage, currency="USD")
            if amount is None:
                unknown[name] = note
            else:
                known[name] = HourlyPrice(name, region, amount, currency, note)
        return RegionPrices(region, usage, known, unknown)


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
