"""USD per hour for the cost delta: the shipped price table (``prices.json``), another table of its shape, or a flat
mapping of instance type to USD, each file read once per process (``PriceBook``)."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

from tools.change_report.assembly import _read_json

REPO = Path(__file__).resolve().parents[2]

PRICE_TABLE = REPO / "constructs" / "sagemaker_llm_cdk" / "operations" / "prices.json"
"""The shipped price table, read as JSON (``operations.pricing.PriceTable`` would start jsii for nothing)."""


def _decimal(value: Any) -> Decimal | None:
    if value is None or value == "":
        return None
    try:
        return Decimal(str(value))
    except ArithmeticError:
        return None


class PriceBook:
    """USD per hour by usage, instance type and region: a table in ``prices.json``'s shape, or ``{instance type: USD}``
    for every usage and region. A region of None is priced at the table's highest (as the cost model does)."""

    def __init__(
        self,
        cells: dict[tuple[str, str, str], Decimal | None] | None = None,
        flat: Mapping[str, Decimal] | None = None,
        label: str = "",
    ) -> None:
        self.cells = cells or {}
        self.flat = dict(flat or {})
        self.label = label

    @classmethod
    def of(cls, prices: PriceBook | Mapping[str, Any] | Path | None) -> PriceBook:
        """``prices`` as a book: a mapping of instance type to USD, a ``prices.json``-shaped file, or (None) the
        shipped table."""
        if isinstance(prices, PriceBook):
            return prices
        if isinstance(prices, Mapping):
            return cls(flat={k: Decimal(str(v)) for k, v in prices.items()}, label="the prices given")
        path = prices or PRICE_TABLE
        if path in _BOOKS:
            return _BOOKS[path]
        data = _read_json(path) if path.is_file() else {}
        cells: dict[tuple[str, str, str], Decimal | None] = {}
        for usage, entry in (data.get("usages") or {}).items():
            for instance_type, by_region in (entry.get("prices") or {}).items():
                for region, cell in by_region.items():
                    cells[(usage, instance_type, region)] = _decimal((cell or {}).get("usd_per_hour"))
        _BOOKS[path] = cls(cells, label=f"the price table of {data.get('read', '?')}" if data else "no price table")
        return _BOOKS[path]

    def hourly(self, instance_type: str | None, usage: str, region: str | None) -> Decimal | None:
        if instance_type is None:
            return None
        if self.flat or not self.cells:
            return self.flat.get(instance_type)
        if region is not None:
            return self.cells.get((usage, instance_type, region))
        known = [a for (u, t, _r), a in self.cells.items() if u == usage and t == instance_type and a is not None]
        return max(known) if known else None


_BOOKS: dict[Path, PriceBook] = {}
"""Price tables read from files, once per process."""
