"""The benchmark results of an optimization job, parsed: base and trained-head throughput, and the speedup.

Every job benchmarks the model without speculative decoding, with the pre-trained EAGLE head and with the
trained one, and writes the results under ``<output>/results/`` in an undocumented layout (see below). This
module finds the benchmark rows in those JSON documents, assigns each to a side, pairs the sides per
concurrency level and computes ``speedup = optimized / base throughput`` (``ResultsSummary``). It is pure and
deterministic, and it never guesses numbers: anything it cannot pair is reported as unparsed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# The layout of ``<output>/results/`` is not documented. The AWS launch post for EAGLE jobs
# ("Amazon SageMaker AI introduces EAGLE based adaptive speculative decoding", Nov 2025) says every
# job "automatically produce[s] benchmark results" and shows them as rows per configuration
# ("No EAGLE", "Base EAGLE", "Trained EAGLE") and concurrency with TTFT/TPOT/ITL (ms), request
# throughput and output throughput (tokens/sec). Those are the metrics of vLLM/SGLang
# ``benchmark_serving`` result JSON (``output_throughput``, ``mean_ttft_ms``, ``max_concurrency``...).
# So the parser accepts any JSON/JSONL whose objects carry a throughput number and can be assigned
# to the base (no speculative decoding) or the optimized (trained EAGLE) side by a label value,
# an enclosing key or the file name. It never guesses numbers: anything it cannot pair is reported
# as unparsed together with the files it saw.

#: Throughput keys (normalised: lowercase, non-alphanumerics -> "_"), best first. Base and optimized
#: are compared on the first key present on every paired row.
THROUGHPUT_KEYS: tuple[str, ...] = (
    "output_throughput",
    "output_token_throughput",
    "output_throughput_tokens_sec",
    "output_throughput_tokens_per_sec",
    "output_throughput_tokens_per_second",
    "output_token_throughput_tok_s",
    "output_tokens_per_second",
    "output_tokens_per_sec",
    "output_tps",
    "tokens_per_second",
    "tokens_per_sec",
    "throughput_tokens_per_second",
    "throughput_tokens_sec",
    "token_throughput",
    "throughput",
    "total_token_throughput",
    "total_throughput",
)

#: Latency keys recorded (not used for the decision), normalised name -> canonical name.
LATENCY_KEYS: dict[str, str] = {
    "mean_ttft_ms": "ttft_ms",
    "ttft_ms": "ttft_ms",
    "time_to_first_token_ms": "ttft_ms",
    "mean_tpot_ms": "tpot_ms",
    "tpot_ms": "tpot_ms",
    "time_per_output_token_ms": "tpot_ms",
    "mean_itl_ms": "itl_ms",
    "itl_ms": "itl_ms",
    "inter_token_latency_ms": "itl_ms",
    "mean_e2el_ms": "e2e_latency_ms",
    "mean_e2e_latency_ms": "e2e_latency_ms",
    "e2e_latency_ms": "e2e_latency_ms",
    "latency_ms": "e2e_latency_ms",
}

CONCURRENCY_KEYS = ("concurrency", "max_concurrency", "num_concurrent_requests", "concurrent_requests", "batch_size")
LABEL_KEYS = (
    "configuration",
    "config",
    "config_name",
    "name",
    "label",
    "variant",
    "mode",
    "setting",
    "scenario",
    "type",
    "model_type",
    "method",
)

MAX_DEPTH = 12


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(text).lower()).strip("_")


_BASE_RE = re.compile(
    r"(?:^|_)(?:no|without|wo|w_o|non|disabled)_?(?:eagle|spec|speculative|speculation|draft)"
    r"|(?:eagle|spec|speculative|speculation|draft)\w*_(?:disabled|off|false|none)(?:_|$)"
    r"|baseline|vanilla|autoregressive|(?:^|_)base_?model(?:_|$)|(?:^|_)original(?:_|$)"
)
_REFERENCE_RE = re.compile(r"(?:^|_)(?:base|pretrained|pre_trained|default|reference|builtin|built_in)_?eagle")
_OPTIMIZED_RE = re.compile(r"eagle|optimi[sz]ed|speculative|(?:^|_)draft|(?:^|_)spec(?:_|$)|(?:^|_)trained(?:_|$)")
_PLAIN_BASE_RE = re.compile(r"^(?:base|base_\w+|\w+_base)$")


def classify_label(text: str) -> str | None:
    """``"base"`` (no speculative decoding), ``"optimized"`` (trained EAGLE head), ``"reference"``
    (a pre-trained/built-in EAGLE head, recorded only) or ``None`` when the text says nothing."""
    t = _norm(text)
    if not t:
        return None
    if _BASE_RE.search(t):
        return "base"
    if _REFERENCE_RE.search(t):
        return "reference"
    if _OPTIMIZED_RE.search(t):
        return "optimized"
    if _PLAIN_BASE_RE.match(t):
        return "base"
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


@dataclass(frozen=True)
class BenchmarkRow:
    role: str
    concurrency: float | None
    throughput: dict[str, float]  # normalised throughput key -> value (> 0)
    latency: dict[str, float]
    source: str


@dataclass
class ResultsSummary:
    """Outcome of reading ``<output>/results/``."""

    status: str  # "parsed" | "results_unparsed"
    files: list[str] = field(default_factory=list)
    reason: str | None = None
    throughput_metric: str | None = None
    base_throughput: float | None = None
    optimized_throughput: float | None = None
    speedup: float | None = None
    concurrency: float | None = None
    base_latency: dict[str, float] = field(default_factory=dict)
    optimized_latency: dict[str, float] = field(default_factory=dict)
    per_concurrency: list[dict[str, Any]] = field(default_factory=list)
    reference_rows: int = 0
    reference_throughput: float | None = None
    reference_speedup: float | None = None
    """The pre-trained (reference) EAGLE head's speedup over base in the same benchmark: the lowest over the
    concurrency levels both measured, as for the trained head; None when the job reported no such rows."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "files": list(self.files),
            "reason": self.reason,
            "throughput_metric": self.throughput_metric,
            "base_throughput": self.base_throughput,
            "optimized_throughput": self.optimized_throughput,
            "speedup": self.speedup,
            "concurrency": self.concurrency,
            "base_latency": dict(self.base_latency),
            "optimized_latency": dict(self.optimized_latency),
            "per_concurrency": [dict(item) for item in self.per_concurrency],
            "reference_rows": self.reference_rows,
            "reference_throughput": self.reference_throughput,
            "reference_speedup": self.reference_speedup,
        }


def _row_from_dict(node: Mapping[str, Any], role: str | None, source: str) -> BenchmarkRow | None:
    normalised = {_norm(k): v for k, v in node.items() if isinstance(k, str)}
    throughput = {}
    for key in THROUGHPUT_KEYS:
        value = _number(normalised.get(key))
        if value is not None and value > 0:
            throughput[key] = value
    if not throughput or role is None:
        return None
    latency: dict[str, float] = {}
    for key, canonical in LATENCY_KEYS.items():
        value = _number(normalised.get(key))
        if value is not None and value >= 0 and canonical not in latency:
            latency[canonical] = value
    concurrency = None
    for key in CONCURRENCY_KEYS:
        value = _number(normalised.get(key))
        if value is not None and value > 0:
            concurrency = value
            break
    return BenchmarkRow(role=role, concurrency=concurrency, throughput=throughput, latency=latency, source=source)


def _own_label_role(node: Mapping[str, Any]) -> str | None:
    for key, value in node.items():
        if isinstance(key, str) and _norm(key) in LABEL_KEYS and isinstance(value, str):
            role = classify_label(value)
            if role:
                return role
    # boolean flags such as {"speculative_decoding": false} / {"eagle": true}
    for key, value in node.items():
        if isinstance(key, str) and isinstance(value, bool):
            role = classify_label(key)
            if role == "optimized":
                return "optimized" if value else "base"
    return None


# longest first, so "eagle_total_token_throughput" is read as total_token_throughput, not token_throughput
_WIDE_METRICS = tuple(sorted({*THROUGHPUT_KEYS, *LATENCY_KEYS, *CONCURRENCY_KEYS}, key=lambda m: (-len(m), m)))


def _wide_rows(node: Mapping[Any, Any], source: str) -> list[BenchmarkRow]:
    """Rows from one flat object such as ``{"baseline_output_throughput": 90, "eagle_output_throughput": 210}``."""
    grouped: dict[str, dict[str, Any]] = {}
    for key, value in node.items():
        if not isinstance(key, str):
            continue
        nkey = _norm(key)
        for metric in _WIDE_METRICS:
            rest = None
            if nkey.endswith("_" + metric):
                rest = nkey[: -len(metric) - 1]
            elif nkey.startswith(metric + "_"):
                rest = nkey[len(metric) + 1 :]
            if rest:
                role = classify_label(rest)
                if role:
                    grouped.setdefault(role, {}).setdefault(metric, value)
                break
    shared_concurrency = {k: v for k, v in node.items() if isinstance(k, str) and _norm(k) in CONCURRENCY_KEYS}
    rows = []
    for role, values in grouped.items():
        row = _row_from_dict({**shared_concurrency, **values}, role, source)
        if row:
            rows.append(row)
    return rows


def extract_rows(document: Any, source: str) -> list[BenchmarkRow]:
    """All benchmark rows in one parsed JSON document; the file path gives the default role."""
    rows: list[BenchmarkRow] = []
    parts = source.split("/")
    parts[-1] = parts[-1].rsplit(".", 1)[0]
    # the file name first, then the nearest folder: "no_eagle/c8.json", "trained_eagle.json"
    file_role = next((role for role in map(classify_label, reversed(parts)) if role), None)

    def walk(node: Any, inherited: str | None, depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        if isinstance(node, Mapping):
            role = _own_label_role(node) or inherited
            row = _row_from_dict(node, role, source)
            if row:
                rows.append(row)
                return
            wide = _wide_rows(node, source)
            if wide:
                rows.extend(wide)
                return
            for key, child in node.items():
                if isinstance(child, (Mapping, list)):
                    key_role = classify_label(key) if isinstance(key, str) else None
                    walk(child, key_role or role, depth + 1)
        elif isinstance(node, list):
            for item in node:
                walk(item, inherited, depth + 1)

    walk(document, file_role, 0)
    return rows


Pair = tuple[float | None, BenchmarkRow, BenchmarkRow]
"""A concurrency level (None: not given) with the base and the optimized row measured at it."""


def format_number(number: float) -> str:
    """A number as the reasons show it (``2.5``, ``1e+06``)."""
    return f"{number:g}"


def summarize_results(documents: Sequence[tuple[str, Any]], files: Iterable[str]) -> ResultsSummary:
    """Pair base and optimized benchmark rows and compute ``speedup = optimized / base throughput``.

    Rows are paired per concurrency level. The headline speedup is the *lowest* speedup over the
    concurrency levels both sides measured (the head must help at every measured load); the
    headline throughputs and latencies are those of that level. Without concurrency information
    exactly one row per side is required.
    """
    files = sorted(files)
    ordered = sorted(documents, key=lambda item: item[0])  # stable, so re-recording merges identically
    rows = [row for source, document in ordered for row in extract_rows(document, source)]
    summary = ResultsSummary(status="results_unparsed", files=files)
    summary.reference_rows = sum(1 for row in rows if row.role == "reference")
    base = [row for row in rows if row.role == "base"]
    optimized = [row for row in rows if row.role == "optimized"]
    if not base or not optimized:
        missing = " and ".join(
            name for name, side in (("base (no EAGLE)", base), ("optimized (trained EAGLE)", optimized)) if not side
        )
        summary.reason = f"no {missing} throughput found in {len(documents)} JSON document(s) of {len(files)} file(s)"
        return summary

    base_levels = _by_level(base)
    optimized_levels = _by_level(optimized)
    for problem in (base_levels, optimized_levels):
        if isinstance(problem, str):
            summary.reason = problem
            return summary
    assert isinstance(base_levels, dict) and isinstance(optimized_levels, dict)

    pairs = _pairs(base_levels, optimized_levels)
    if not pairs:
        summary.reason = (
            "base and optimized rows were measured at different concurrency levels "
            f"(base {sorted(format_number(level) for level in base_levels if level is not None)}, "
            f"optimized {sorted(format_number(level) for level in optimized_levels if level is not None)}); "
            "nothing to compare"
        )
        return summary

    metric = next(
        (key for key in THROUGHPUT_KEYS if all(key in b.throughput and key in o.throughput for _, b, o in pairs)),
        None,
    )
    if metric is None:
        summary.reason = "base and optimized rows report throughput under different metric names; not comparable"
        return summary

    _set_headline(summary, pairs, metric)
    reference = [row for row in rows if row.role == "reference"]
    if reference:
        _set_reference(summary, reference, pairs, metric)
    return summary


def _by_level(side: list[BenchmarkRow]) -> dict[float | None, BenchmarkRow] | str:
    """Merge the rows of one side per concurrency level; rows may repeat (summary + detail files)
    but must agree on every throughput number they share. A str: why they cannot be merged."""
    grouped: dict[float | None, list[BenchmarkRow]] = {}
    for row in side:
        grouped.setdefault(row.concurrency, []).append(row)
    merged: dict[float | None, BenchmarkRow] = {}
    for level, level_rows in grouped.items():
        throughput: dict[str, float] = {}
        latency: dict[str, float] = {}
        for row in level_rows:
            for key, value in row.throughput.items():
                if throughput.setdefault(key, value) != value:
                    where = "without a concurrency" if level is None else f"at concurrency {format_number(level)}"
                    return (
                        f"conflicting {row.role} {key} values {format_number(throughput[key])} and "
                        f"{format_number(value)} {where}; cannot tell which to use"
                    )
            for key, value in row.latency.items():
                latency.setdefault(key, value)
        first = level_rows[0]
        merged[level] = BenchmarkRow(first.role, level, throughput, latency, first.source)
    return merged


def _pairs(
    base_levels: dict[float | None, BenchmarkRow], optimized_levels: dict[float | None, BenchmarkRow]
) -> list[Pair]:
    """The levels both sides measured, in order; else one row per side, when either gives no concurrency."""
    pairs: list[Pair] = []
    common = sorted((level for level in base_levels if level is not None and level in optimized_levels), key=float)
    if common:
        pairs = [(level, base_levels[level], optimized_levels[level]) for level in common]
    elif len(base_levels) == 1 and len(optimized_levels) == 1:
        (b_level, b_row), (o_level, o_row) = next(iter(base_levels.items())), next(iter(optimized_levels.items()))
        if b_level is None or o_level is None:
            pairs = [(b_level if b_level is not None else o_level, b_row, o_row)]
    return pairs


def _set_headline(summary: ResultsSummary, pairs: list[Pair], metric: str) -> None:
    """The speedup per level, and the headline figures: those of the level with the lowest speedup."""
    per_level: list[dict[str, Any]] = []
    for level, b, o in pairs:
        speedup = o.throughput[metric] / b.throughput[metric]
        per_level.append(
            {
                "concurrency": level,
                "base_throughput": b.throughput[metric],
                "optimized_throughput": o.throughput[metric],
                "speedup": round(speedup, 4),
                "base_latency": dict(b.latency),
                "optimized_latency": dict(o.latency),
            }
        )
    worst = min(per_level, key=lambda item: (item["speedup"], item["concurrency"] or 0))
    summary.status = "parsed"
    summary.throughput_metric = metric
    summary.per_concurrency = per_level
    summary.concurrency = worst["concurrency"]
    summary.base_throughput = worst["base_throughput"]
    summary.optimized_throughput = worst["optimized_throughput"]
    summary.speedup = worst["speedup"]
    summary.base_latency = worst["base_latency"]
    summary.optimized_latency = worst["optimized_latency"]


def _set_reference(summary: ResultsSummary, reference: list[BenchmarkRow], pairs: list[Pair], metric: str) -> None:
    """The pre-trained head's speedup over base, the lowest over the paired levels it was measured at too."""
    reference_levels = _by_level(reference)
    if isinstance(reference_levels, dict):
        figures = [
            (
                reference_levels[level].throughput[metric] / b.throughput[metric],
                level,
                reference_levels[level].throughput[metric],
            )
            for level, b, _ in pairs
            if level in reference_levels and metric in reference_levels[level].throughput
        ]
        if not figures and len(reference_levels) == 1 and len(pairs) == 1:
            (only,) = reference_levels.values()
            if metric in only.throughput and (only.concurrency is None or pairs[0][0] is None):
                figures = [
                    (only.throughput[metric] / pairs[0][1].throughput[metric], pairs[0][0], only.throughput[metric])
                ]
        if figures:
            speedup, _, throughput = min(figures, key=lambda item: (item[0], item[1] or 0))
            summary.reference_speedup = round(speedup, 4)
            summary.reference_throughput = throughput


def parse_json_documents(name: str, body: bytes) -> list[Any]:
    """Parse a ``.json`` file (one document) or ``.jsonl`` file (one per line); bad content -> ``[]``."""
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError:
        return []
    if name.lower().endswith(".jsonl"):
        documents = []
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            try:
                documents.append(json.loads(line))
            except ValueError:
                continue
        return documents
    try:
        return [json.loads(text)]
    except ValueError:
        return []
