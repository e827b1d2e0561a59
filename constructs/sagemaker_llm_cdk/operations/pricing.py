"""On-demand SageMaker instance-hour prices: a shipped, dated table, and the AWS Price List API that refreshes it.

Two sources, one shape (``PriceLookup.hourly`` -> ``HourlyPrice``):

* ``PriceTable`` (``prices.json`` next to this module, shipped in the wheel): USD per instance-hour by usage
  (``Hosting``: real-time inference endpoints; ``Training``: what optimization and benchmark jobs are looked
  up as), instance type and region, each known figure with its source URL and the date it was read. A figure
  nobody found in AWS's published pricing is ``null`` and reads "unknown", never 0. The synth prices from it
  without calling AWS, and says how old the table is.
* ``PriceList``: the Price List API (``pricing`` ``GetProducts``, read-only ``pricing:GetProducts``), used by
  ``make prices`` to rewrite the table (``python -m sagemaker_llm_cdk.operations.pricing refresh``) and by a
  live preflight.

The Price List API is served from ``us-east-1`` for the commercial partition and from
``cn-northwest-1`` for the China regions (priced in CNY, so their cells stay unknown in a USD table).
GovCloud prices appear in the commercial price list, which GovCloud credentials cannot call.

Products are matched as AWS's own SageMaker tooling matches them: ``ServiceCode`` ``AmazonSageMaker``,
``productFamily`` ``ML Instance``, ``regionCode``, ``instanceName`` and ``platoinstancetype``
(``Hosting`` for endpoints, ``Training`` for jobs).
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Protocol

SERVICE_CODE = "AmazonSageMaker"
PRODUCT_FAMILY = "ML Instance"
HOSTING = "Hosting"
TRAINING = "Training"
JOB_USAGE = TRAINING
"""The ``platoinstancetype`` optimization and benchmark jobs are priced as. AWS's pricing page does not list
inference optimization jobs on their own; ``Training`` is the usage an optimization job's instances are looked
up as until AWS lists another (the table's ``usages`` say so)."""
PRICE_LIST_REGION = {"aws": "us-east-1", "aws-cn": "cn-northwest-1"}
"""Where the Price List API answers, per partition."""
NOT_LOOKED_UP = "not looked up"
UNKNOWN = "unknown"
_MAX_PAGES = 5
_MAX_REGION_PAGES = 100
PRICE_TABLE = Path(__file__).with_name("prices.json")
"""The shipped price table (``make prices`` rewrites it)."""


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
            return not_looked_up(
                instance_type, region, f"the Price List API does not serve partition {partition or 'unknown'}"
            )
        client = self._client(api_region)
        prices: list[tuple[Decimal, str]] = []
        request: dict[str, Any] = {
            "ServiceCode": SERVICE_CODE,
            "Filters": product_filters(instance_type, region, usage),
            "FormatVersion": "aws_v1",
            "MaxResults": 100,
        }
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

    def region_prices(self, region: str, *, usage: str = HOSTING) -> dict[str, HourlyPrice]:
        """Every instance type's on-demand price in ``region`` for ``usage``, from one paginated ``GetProducts``
        query (no ``instanceName`` filter): what ``make prices`` reads, one query per region and usage.

        USD only: a region priced in another currency (the China regions) returns nothing.
        """
        from ..core.regions import partition_of

        api_region = PRICE_LIST_REGION.get(partition_of(region) or "")
        if api_region is None:
            return {}
        client = self._client(api_region)
        filters = [f for f in product_filters("-", region, usage) if f["Field"] != "instanceName"]
        request: dict[str, Any] = {
            "ServiceCode": SERVICE_CODE,
            "Filters": filters,
            "FormatVersion": "aws_v1",
            "MaxResults": 100,
        }
        found: dict[str, list[Decimal]] = {}
        for _ in range(_MAX_REGION_PAGES):
            response = client.get_products(**request)
            for item in response.get("PriceList", []):
                product = json.loads(item) if isinstance(item, str) else item
                name = ((product.get("product") or {}).get("attributes") or {}).get("instanceName")
                if isinstance(name, str):
                    found.setdefault(name, []).extend(a for a, c in on_demand_prices([product]) if c == "USD")
            token = response.get("NextToken")
            if not token:
                break
            request = {**request, "NextToken": token}
        return {
            name: HourlyPrice(
                name,
                region,
                max(amounts),
                "USD",
                "Price List API" + (", highest of several listed" if len(set(amounts)) > 1 else ""),
            )
            for name, amounts in found.items()
            if amounts
        }


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


# ==================================================================== the shipped table
@dataclass(frozen=True)
class PriceTable:
    """The shipped price table (``prices.json``): USD per instance-hour by usage, instance type and region.

    ``cells[(usage, instance_type, region)]`` is ``(amount or None, source URL, date read)``; a cell the table
    covers with no figure is unknown (nobody found it in AWS's published pricing), one it does not cover is
    "not in the table". ``hourly`` answers like ``PriceList.hourly``, without any AWS call.
    """

    read: date
    currency: str
    cells: Mapping[tuple[str, str, str], tuple[Decimal | None, str, str]]
    regions: tuple[str, ...]
    usages: Mapping[str, str]
    path: str = ""

    @classmethod
    def load(cls, path: str | Path | None = None) -> PriceTable:
        """The table at ``path`` (default: the shipped ``prices.json``)."""
        source = Path(path) if path is not None else PRICE_TABLE
        return cls.from_json(json.loads(source.read_text(encoding="utf-8")), path=str(source))

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, path: str = "") -> PriceTable:
        cells: dict[tuple[str, str, str], tuple[Decimal | None, str, str]] = {}
        read = str(data["read"])
        usages: dict[str, str] = {}
        for usage, entry in data["usages"].items():
            usages[usage] = str(entry.get("what", usage))
            for instance_type, by_region in entry["prices"].items():
                for region, cell in by_region.items():
                    if cell is None:
                        cells[(usage, instance_type, region)] = (None, "", read)
                    else:
                        cells[(usage, instance_type, region)] = (
                            Decimal(str(cell["usd_per_hour"])),
                            str(cell["source"]),
                            str(cell.get("read", read)),
                        )
        return cls(
            read=date.fromisoformat(read),
            currency=str(data.get("currency", "USD")),
            cells=cells,
            regions=tuple(data.get("regions", ())),
            usages=usages,
            path=path,
        )

    def hourly(self, instance_type: str, region: str, *, usage: str = HOSTING) -> HourlyPrice:
        cell = self.cells.get((usage, instance_type, region))
        if cell is None:
            return HourlyPrice(
                instance_type,
                region,
                None,
                note=f"{UNKNOWN} ({instance_type} {usage} in {region} is not in the price table)",
            )
        amount, _source, read = cell
        if amount is None:
            return HourlyPrice(
                instance_type,
                region,
                None,
                note=f"{UNKNOWN} (not found in AWS's published pricing; table of {self.read})",
            )
        return HourlyPrice(instance_type, region, amount, self.currency, f"price table, read {read}")

    def highest(self, instance_type: str, *, usage: str = HOSTING) -> HourlyPrice:
        """The highest known price of ``instance_type`` over every region of the table: a ceiling for a stack
        that names no region. Unknown when no region has a figure."""
        known = [
            (amount, region)
            for (u, t, region), (amount, _s, _r) in self.cells.items()
            if u == usage and t == instance_type and amount is not None
        ]
        if not known:
            return HourlyPrice(
                instance_type, "any region", None, note=f"{UNKNOWN} (no region's price in the table of {self.read})"
            )
        amount, region = max(known)
        return HourlyPrice(
            instance_type,
            "any region",
            amount,
            self.currency,
            f"highest in the table ({region}), the stack names no region",
        )

    def known_count(self) -> tuple[int, int]:
        """(cells with a figure, cells in all)."""
        return sum(1 for amount, _s, _r in self.cells.values() if amount is not None), len(self.cells)

    def age_days(self, today: date | None = None) -> int:
        return ((today or date.today()) - self.read).days

    def age_line(self, today: date | None = None) -> str:
        """``Prices: table of 2026-12-01 (3 days old), 12 of 4464 figures known; refresh with `make prices```."""
        known, total = self.known_count()
        return (
            f"Prices: USD per instance-hour from the price table of {self.read} ({self.age_days(today)} days old), "
            f"{known} of {total} figures known, the rest unknown; refresh with `make prices` (Price List API)"
        )


@functools.cache
def shipped_table() -> PriceTable:
    """The shipped ``prices.json``, read once per process."""
    return PriceTable.load()


def covered_instance_types() -> dict[str, list[str]]:
    """What the table covers, by usage: every accelerated endpoint type SageMaker accepts (``Hosting``: the g, p,
    inf and trn families of ``ProductionVariantInstanceType``, and every type ``core.instances`` knows) and every
    optimization job type (``Training``: ``OptimizationJobDeploymentInstanceType``)."""
    import re

    from ..core import instances, service_model

    accelerated = re.compile(r"^ml\.(g|p|inf|trn)\d")
    hosting = {t for t in service_model.endpoint_instance_types() if accelerated.match(t)}
    hosting |= set(instances._ACCELERATORS)
    return {HOSTING: sorted(hosting), JOB_USAGE: sorted(service_model.optimization_instance_types())}


def covered_regions() -> list[str]:
    """The regions this library deploys to: those with an LMI image account (``core.regions.DLC_ACCOUNTS``)."""
    from ..core.regions import DLC_ACCOUNTS

    return sorted(DLC_ACCOUNTS)


USAGE_NOTES = {
    HOSTING: "Real-time inference (endpoints): SageMaker's Hosting usage, what an inference component's instances bill",
    JOB_USAGE: (
        "Training usage: what optimization (EAGLE) and benchmark jobs are priced as here; AWS's pricing page "
        "lists no separate rate for inference optimization jobs"
    ),
}
PRICE_LIST_SOURCE = (
    "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonSageMaker/current/{region}/index.json"
)
"""Where a figure the Price List API gave comes from (the offer file of its region)."""


def table_json(
    read: date,
    lookup: Callable[[str, str], Mapping[str, HourlyPrice]] | None = None,
    *,
    previous: PriceTable | None = None,
    searched: Sequence[str] = (),
    types: Mapping[str, Sequence[str]] | None = None,
    regions: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The table as JSON data: every covered (usage, type, region) cell, ``null`` where no figure is known.

    :param lookup: ``(region, usage) -> {instance type: HourlyPrice}`` (``PriceList.region_prices``); a figure
        it gives replaces the cell with source = the region's offer file, read = ``read``. Default: none.
    :param previous: the table being refreshed; a cell the lookup does not price keeps its figure and date.
    """
    types = types or covered_instance_types()
    regions = list(regions or covered_regions())
    usages: dict[str, Any] = {}
    for usage, names in types.items():
        prices: dict[str, dict[str, Any]] = {name: {} for name in names}
        for region in regions:
            found = lookup(region, usage) if lookup is not None else {}
            for name in names:
                price = found.get(name)
                if price is not None and price.amount is not None and price.currency == "USD":
                    prices[name][region] = {
                        "usd_per_hour": f"{price.amount.normalize():f}",
                        "source": PRICE_LIST_SOURCE.format(region=region),
                        "read": read.isoformat(),
                    }
                    continue
                old = previous.cells.get((usage, name, region)) if previous is not None else None
                if old is not None and old[0] is not None:
                    prices[name][region] = {"usd_per_hour": f"{old[0].normalize():f}", "source": old[1], "read": old[2]}
                else:
                    prices[name][region] = None
        usages[usage] = {"what": USAGE_NOTES.get(usage, usage), "prices": prices}
    return {
        "about": (
            "On-demand USD per instance-hour of SageMaker AI, by usage, instance type and region. Figures come "
            "only from AWS's published pricing (its pricing pages and the Price List API offer files); each "
            "known figure names its source and the date it was read. null: not found there, shown as unknown, "
            "never 0. Rewritten by `make prices` (Price List API, needs credentials)."
        ),
        "currency": "USD",
        "read": read.isoformat(),
        "searched": list(searched),
        "regions": regions,
        "usages": usages,
    }


def write_table(data: Mapping[str, Any], path: str | Path = PRICE_TABLE) -> None:
    """One line per instance type (regions inline), so a refresh's diff shows which figures changed."""
    lines = ["{"]
    head = {k: v for k, v in data.items() if k != "usages"}
    for key, value in head.items():
        lines.append(f"  {json.dumps(key)}: {json.dumps(value)},")
    lines.append('  "usages": {')
    usage_items = list(data["usages"].items())
    for u_index, (usage, entry) in enumerate(usage_items):
        lines.append(f"    {json.dumps(usage)}: {{")
        lines.append(f'      "what": {json.dumps(entry["what"])},')
        lines.append('      "prices": {')
        price_items = list(entry["prices"].items())
        for t_index, (name, by_region) in enumerate(price_items):
            comma = "," if t_index < len(price_items) - 1 else ""
            lines.append(f"        {json.dumps(name)}: {json.dumps(by_region, separators=(', ', ': '))}{comma}")
        lines.append("      }")
        lines.append("    }" + ("," if u_index < len(usage_items) - 1 else ""))
    lines.append("  }")
    lines.append("}")
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def refresh(path: str | Path = PRICE_TABLE, *, price_list: PriceList | None = None, today: date | None = None) -> str:
    """Rewrite the table at ``path`` from the Price List API (credentials with ``pricing:GetProducts``); return a
    one-line summary. A cell the API does not price keeps its previous figure and date."""
    price_list = price_list or PriceList()
    previous = PriceTable.load(path) if Path(path).is_file() else None

    def lookup(region: str, usage: str) -> Mapping[str, HourlyPrice]:
        return price_list.region_prices(region, usage=usage)

    data = table_json(
        today or date.today(),
        lookup,
        previous=previous,
        searched=["Price List API GetProducts (AmazonSageMaker, ML Instance, per region and usage)"],
    )
    write_table(data, path)
    table = PriceTable.from_json(data)
    known, total = table.known_count()
    return f"{path}: {known} of {total} figures known, read {table.read}"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sagemaker_llm_cdk.operations.pricing refresh [PATH]``: what ``make prices`` runs."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] != "refresh":
        print("usage: python -m sagemaker_llm_cdk.operations.pricing refresh [PATH]", file=sys.stderr)
        return 2
    print(refresh(args[1] if len(args) > 1 else PRICE_TABLE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
