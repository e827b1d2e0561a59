"""On-demand SageMaker instance-hour prices: a shipped, dated table, and the AWS Price List API that refreshes it.

Two sources, one shape (``PriceLookup.hourly`` -> ``HourlyPrice``):

* ``PriceTable`` (``prices.json`` next to this module, shipped in the wheel): USD per instance-hour by usage
  (``Hosting``: real-time inference endpoints; ``Training``: what optimization and benchmark jobs are looked
  up as), instance type and region, each known figure with its source URL and the date it was read. A figure
  nobody found in AWS's published pricing is ``null`` and reads "unknown", never 0, with the reason the last
  refresh recorded (a region whose query failed, a product that matched ambiguously). The synth prices from it
  without calling AWS, and says how old the table is.
* ``PriceList`` (``price_list``, re-exported here): the Price List API (``pricing`` ``GetProducts``, read-only
  ``pricing:GetProducts``), used by ``make prices`` to rewrite the table
  (``python -m sagemaker_llm_cdk.operations.pricing refresh [PATH] [--partition aws]``) and by a live preflight.

A refresh reads one partition's price list, the caller's: with commercial credentials (``aws``) the commercial
regions and the GovCloud regions (AWS publishes GovCloud's prices in the commercial list). The China regions'
list is priced in CNY, outside this USD table, and is not queried. A region whose query fails keeps its previous
figures and the reason; every other cell is written.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

from .price_list import (
    HOSTING,
    JOB_USAGE,
    LISTED_IN,
    LOCATION_TYPE,
    NOT_LOOKED_UP,
    PRICE_LIST_REGION,
    PRODUCT_FAMILY,
    SERVICE_CODE,
    TRAINING,
    UNKNOWN,
    HourlyPrice,
    ListedProduct,
    PriceList,
    PriceLookup,
    RegionPrices,
    credentials_missing,
    listed_products,
    not_looked_up,
    on_demand_prices,
    pick_price,
    price_lines,
    product_filters,
    region_filters,
)

__all__ = [
    "HOSTING",
    "JOB_USAGE",
    "LISTED_IN",
    "LOCATION_TYPE",
    "NOT_LOOKED_UP",
    "PRICE_LIST_REGION",
    "PRICE_LIST_SOURCE",
    "PRICE_TABLE",
    "PRODUCT_FAMILY",
    "REFRESHED_WITH",
    "SERVICE_CODE",
    "TRAINING",
    "UNKNOWN",
    "USAGE_NOTES",
    "HourlyPrice",
    "ListedProduct",
    "NothingRefreshed",
    "PriceList",
    "PriceLookup",
    "PriceTable",
    "RefreshRefused",
    "RegionPrices",
    "caller_partition",
    "covered_instance_types",
    "covered_regions",
    "credentials_missing",
    "listed_products",
    "main",
    "not_looked_up",
    "on_demand_prices",
    "pick_price",
    "price_lines",
    "product_filters",
    "refresh",
    "refresh_plan",
    "region_filters",
    "shipped_table",
    "table_json",
    "write_table",
]

PRICE_TABLE = Path(__file__).with_name("prices.json")
"""The shipped price table (``make prices`` rewrites it)."""


# ==================================================================== the shipped table
@dataclass(frozen=True)
class PriceTable:
    """The shipped price table (``prices.json``): USD per instance-hour by usage, instance type and region.

    ``cells[(usage, instance_type, region)]`` is ``(amount or None, source URL, date read)``; a cell the table
    covers with no figure is unknown (nobody found it in AWS's published pricing, or ``reasons`` says why the
    last refresh did not price it), one it does not cover is "not in the table". ``hourly`` answers like
    ``PriceList.hourly``, without any AWS call.

    JSON: ``usages.<usage>.prices.<type>.<region>`` is ``null`` or ``{usd_per_hour, source, read}``;
    ``not_refreshed.<usage>.<region>`` (why the last refresh did not read a region) and
    ``cell_notes.<usage>.<type>.<region>`` (which product a figure came from, or why a listed type has none) are
    optional.
    """

    read: date
    currency: str
    cells: Mapping[tuple[str, str, str], tuple[Decimal | None, str, str]]
    regions: tuple[str, ...]
    usages: Mapping[str, str]
    path: str = ""
    reasons: Mapping[tuple[str, str, str], str] = field(default_factory=dict)
    """Why a cell without a figure has none, as the last refresh recorded it."""

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
        reasons: dict[tuple[str, str, str], str] = {}
        not_refreshed = data.get("not_refreshed") or {}
        notes = data.get("cell_notes") or {}
        for usage, entry in data["usages"].items():
            usages[usage] = str(entry.get("what", usage))
            for instance_type, by_region in entry["prices"].items():
                for region, cell in by_region.items():
                    if cell is None:
                        cells[(usage, instance_type, region)] = (None, "", read)
                        why = ((notes.get(usage) or {}).get(instance_type) or {}).get(region) or (
                            not_refreshed.get(usage) or {}
                        ).get(region)
                        if why:
                            reasons[(usage, instance_type, region)] = str(why)
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
            reasons=reasons,
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
        why = self.reasons.get((usage, instance_type, region))
        if amount is None and why:
            return HourlyPrice(instance_type, region, None, note=f"{UNKNOWN} ({why}; table of {self.read})")
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
        'Training usage: listed for reference only; the cost model prices no EAGLE job with it. AWS: "You incur '
        'no additional costs for jobs that apply speculative decoding" '
        "(https://docs.aws.amazon.com/sagemaker/latest/dg/model-optimize-create-job.html), and it names no Price "
        "List usage for the instances those jobs run on, so EAGLE job lines read unknown"
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
        it gives replaces the cell with source = the region's offer file, read = ``read``. A ``RegionPrices``
        with an ``error`` is recorded in ``not_refreshed``, its ``unknown`` reasons and the notes of figures
        taken from one of several products in ``cell_notes``. Default: none.
    :param previous: the table being refreshed; a cell the lookup does not price keeps its figure and date.
    """
    types = types or covered_instance_types()
    regions = list(regions or covered_regions())
    usages: dict[str, Any] = {}
    not_refreshed: dict[str, dict[str, str]] = {}
    notes: dict[str, dict[str, dict[str, str]]] = {}
    for usage, names in types.items():
        prices: dict[str, dict[str, Any]] = {name: {} for name in names}
        for region in regions:
            found = lookup(region, usage) if lookup is not None else {}
            if isinstance(found, RegionPrices) and found.error is not None:
                not_refreshed.setdefault(usage, {})[region] = found.error
            unknown = found.unknown if isinstance(found, RegionPrices) else {}
            for name in names:
                price = found.get(name)
                if price is not None and price.amount is not None and price.currency == "USD":
                    prices[name][region] = {
                        "usd_per_hour": f"{price.amount.normalize():f}",
                        "source": PRICE_LIST_SOURCE.format(region=region),
                        "read": read.isoformat(),
                    }
                    if price.note != "Price List API":
                        notes.setdefault(usage, {}).setdefault(name, {})[region] = price.note
                    continue
                if name in unknown:
                    notes.setdefault(usage, {}).setdefault(name, {})[region] = unknown[name]
                old = previous.cells.get((usage, name, region)) if previous is not None else None
                if old is not None and old[0] is not None:
                    prices[name][region] = {"usd_per_hour": f"{old[0].normalize():f}", "source": old[1], "read": old[2]}
                else:
                    prices[name][region] = None
        usages[usage] = {"what": USAGE_NOTES.get(usage, usage), "prices": prices}
    data: dict[str, Any] = {
        "about": (
            "On-demand USD per instance-hour of SageMaker AI, by usage, instance type and region. Figures come "
            "only from AWS's published pricing (its pricing pages and the Price List API offer files); each "
            "known figure names its source and the date it was read. null: not found there, shown as unknown, "
            "never 0. Rewritten by `make prices` (Price List API, needs credentials); not_refreshed: the regions "
            "the last refresh did not read, and why (their figures are kept from before)."
        ),
        "currency": "USD",
        "read": read.isoformat(),
        "searched": list(searched),
        "regions": regions,
    }
    if not_refreshed:
        data["not_refreshed"] = not_refreshed
    if notes:
        data["cell_notes"] = notes
    data["usages"] = usages
    return data


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


REFRESHED_WITH: Mapping[str, tuple[str, ...]] = {"aws": ("aws", "aws-us-gov")}
"""Partition of the caller's credentials -> the partitions whose regions one refresh reads. Commercial credentials
read the commercial list, which holds the GovCloud regions' prices too."""
_REFUSED = {
    "aws-cn": (
        "the China regions' Price List API (cn-northwest-1) lists prices in CNY and this table is USD, so China "
        "credentials have nothing to refresh; run it with commercial credentials (--partition aws)"
    ),
    "aws-us-gov": (
        "GovCloud has no Price List API endpoint; AWS lists GovCloud's prices in the commercial price list: run it "
        "with commercial credentials (--partition aws), which refreshes the GovCloud regions too"
    ),
}


class RefreshRefused(ValueError):
    """The refresh cannot run for this caller (a partition without a USD price list to read)."""


class NothingRefreshed(RuntimeError):
    """No region answered: the table was left unchanged."""


def refresh_plan(partition: str, regions: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """(regions a refresh with ``partition`` credentials queries, {region: why it is not queried})."""
    from ..core.regions import SUPPORTED_PARTITIONS, partition_of

    if partition in _REFUSED:
        raise RefreshRefused(f"partition {partition}: {_REFUSED[partition]}")
    if partition not in REFRESHED_WITH:
        raise RefreshRefused(
            f"partition {partition!r} is not one of {', '.join(SUPPORTED_PARTITIONS)}; pass --partition aws "
            "(commercial credentials refresh the commercial and GovCloud regions)"
        )
    queried: list[str] = []
    skipped: dict[str, str] = {}
    for region in regions:
        region_partition = partition_of(region)
        if region_partition in REFRESHED_WITH[partition]:
            queried.append(region)
        elif region_partition == "aws-cn":
            skipped[region] = (
                f"not queried with {partition} credentials: the China regions' prices are listed in CNY by the "
                "China Price List API, outside this USD table"
            )
        else:
            skipped[region] = f"not queried: partition {region_partition or 'unknown'} is not in the {partition} list"
    return queried, skipped


def caller_partition(session: Any = None) -> str:
    """The partition of the session's region (``aws`` when no region is configured)."""
    from ..core.regions import partition_of

    if session is None:
        import boto3

        session = boto3.Session()
    region = session.region_name
    return (partition_of(region) if region else None) or "aws"


def refresh(
    path: str | Path = PRICE_TABLE,
    *,
    price_list: PriceList | None = None,
    today: date | None = None,
    partition: str = "aws",
    types: Mapping[str, Sequence[str]] | None = None,
    regions: Sequence[str] | None = None,
) -> str:
    """Rewrite the table at ``path`` from the Price List API (credentials with ``pricing:GetProducts``) for the
    regions ``partition``'s price list holds; return a summary (one line, then one per region not read).

    A region whose query fails keeps its previous figures, and the reason goes to ``not_refreshed``; every other
    cell is written. Raises ``RefreshRefused`` for a partition without a USD list, ``NothingRefreshed`` (table
    unchanged) when no region answered, and botocore's ``NoCredentialsError`` (and its kin) before any write.
    """
    regions = list(regions or covered_regions())
    queried, skipped = refresh_plan(partition, regions)
    price_list = price_list or PriceList()
    previous = PriceTable.load(path) if Path(path).is_file() else None
    answered: set[tuple[str, str]] = set()

    def lookup(region: str, usage: str) -> Mapping[str, HourlyPrice]:
        if region in skipped:
            return RegionPrices(region, usage, error=skipped[region])
        found = price_list.region_prices(region, usage=usage)
        if not isinstance(found, RegionPrices) or found.error is None:
            answered.add((region, usage))
        return found

    data = table_json(
        today or date.today(),
        lookup,
        previous=previous,
        searched=[
            "Price List API GetProducts (AmazonSageMaker, ML Instance, AWS Region, one query per region and usage; "
            f"the {partition} price list)"
        ],
        types=types,
        regions=regions,
    )
    failed = {
        f"{region} {usage}": why
        for usage, by_region in (data.get("not_refreshed") or {}).items()
        for region, why in by_region.items()
        if region not in skipped
    }
    if queried and not answered:
        first = next(iter(failed.items()), ("", "no answer"))
        raise NothingRefreshed(
            f"no region answered GetProducts (first: {first[0]}: {first[1]}); {path} is unchanged. Check that the "
            "credentials allow pricing:GetProducts"
        )
    write_table(data, path)
    table = PriceTable.from_json(data)
    known, total = table.known_count()
    asked = len(queried) * len(data["usages"])
    lines = [
        f"{path}: {known} of {total} figures known, read {table.read}; {partition} price list: {len(answered)} of "
        f"{asked} region queries answered; not queried: {', '.join(sorted(skipped)) or 'none'}"
    ]
    lines += [f"  not refreshed (figures kept from before): {where}: {why}" for where, why in failed.items()]
    return "\n".join(lines)


_FIX = (
    "configure AWS credentials allowed pricing:GetProducts (`aws configure`, AWS_PROFILE, or AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY) and run it again; the price table is unchanged"
)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sagemaker_llm_cdk.operations.pricing refresh [PATH] [--partition P]``: what ``make prices`` runs.

    Exit 0 when the table was written (a region that failed is listed), 1 when no region answered, 2 for a
    caller's problem (no credentials, a partition without a USD list), each said in one line.
    """
    parser = argparse.ArgumentParser(
        prog="python -m sagemaker_llm_cdk.operations.pricing",
        description="Rewrite the price table from the AWS Price List API (needs pricing:GetProducts).",
    )
    parser.add_argument("command", choices=["refresh"])
    parser.add_argument("path", nargs="?", default=str(PRICE_TABLE), help="the table to rewrite (default: shipped)")
    parser.add_argument(
        "--partition",
        help="the partition of your credentials (default: your session's region's, else aws); aws refreshes the "
        "commercial and GovCloud regions",
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    from botocore.exceptions import BotoCoreError

    try:
        partition = args.partition or caller_partition()
        print(refresh(args.path, partition=partition))
    except RefreshRefused as error:
        print(f"pricing refresh: {error}", file=sys.stderr)
        return 2
    except NothingRefreshed as error:
        print(f"pricing refresh: {error}", file=sys.stderr)
        return 1
    except BotoCoreError as error:
        if not credentials_missing(error):
            raise
        what = "no AWS region" if type(error).__name__ == "NoRegionError" else "no AWS credentials"
        print(f"pricing refresh: {what} ({type(error).__name__}: {error}); {_FIX}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
