"""The promotion decision: may this run's draft head replace the head the endpoint serves, and why (not).

A head is promoted when its job completed, its results were parsed, its speedup reaches the threshold and it
beats the speedup of the head served now (the ``Incumbent``: none, the pre-trained head, or a head an earlier
run promoted). Pure: ``job_promotion`` finds the incumbent and writes the parameter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from job_results import ResultsSummary
from job_results import format_number as _fmt


@dataclass(frozen=True)
class Decision:
    promote: bool
    reason: str


@dataclass(frozen=True)
class Incumbent:
    """The head the endpoint serves now: a new head must beat its measured speedup to replace it.

    ``kind``: ``none`` (the base model: only the threshold counts), ``pretrained`` (the pre-trained head
    served from day one) or ``promoted`` (a head an earlier run promoted, or one set by hand).
    ``figures``: its known speedups over the base model, each with where it comes from; the bar is the
    highest. ``required``: without a figure no head replaces it (the pre-trained head)."""

    kind: str = "none"
    s3_uri: str | None = None
    figures: tuple[tuple[str, float], ...] = ()
    required: bool = False
    note: str | None = None

    @property
    def bar(self) -> float | None:
        return max((value for _, value in self.figures), default=None)

    @property
    def bar_source(self) -> str | None:
        if not self.figures:
            return None
        return max(self.figures, key=lambda item: item[1])[0]

    def as_dict(self) -> dict[str, Any]:
        """The comparison basis recorded with the run."""
        return {
            "served_head": self.kind,
            "s3_uri": self.s3_uri,
            "speedup": self.bar,
            "source": self.bar_source,
            "figures": [{"source": source, "speedup": value} for source, value in self.figures],
            "note": self.note,
        }


def pretrained_incumbent(s3_uri: str, results: ResultsSummary | None, configured: float | None) -> Incumbent:
    """The pre-trained head as the incumbent: its figures from this job's benchmark (its own rows) and config."""
    figures: list[tuple[str, float]] = []
    if results is not None and results.reference_speedup is not None:
        figures.append(("job results: pre-trained EAGLE rows", results.reference_speedup))
    if configured is not None:
        figures.append(("eagle.pretrained_head_speedup", configured))
    return Incumbent(kind="pretrained", s3_uri=s3_uri, figures=tuple(figures), required=True)


def decide(
    *,
    status: str,
    failure_reason: str | None,
    results: ResultsSummary | None,
    threshold: float,
    results_uri: str,
    incumbent: Incumbent | None = None,
) -> Decision:
    """Whether the run's draft head may be promoted, and why (or why not): at least ``threshold`` over the base
    model, and better than the ``incumbent`` head's measured speedup (strictly: a tie keeps the served head)."""
    if status != "COMPLETED":
        return Decision(False, f"job {status}: {failure_reason or 'no failure reason given'}")
    if results is None or results.status != "parsed" or results.speedup is None:
        why = results.reason if results else "results not read"
        listed = ", ".join(results.files[:20]) if results and results.files else "none"
        return Decision(False, f"results unparsed under {results_uri}: {why} (files: {listed})")
    speedup = results.speedup
    if speedup < threshold:
        return Decision(False, f"speedup below threshold: {_fmt(speedup)}x < {_fmt(threshold)}x")
    passed = f"speedup {_fmt(speedup)}x >= threshold {_fmt(threshold)}x"
    if incumbent is None or incumbent.kind == "none":
        return Decision(True, passed)
    bar = incumbent.bar
    head = f"the served {incumbent.kind} head"
    if bar is None:
        if incumbent.required:
            return Decision(
                False,
                f"{passed}, but {head}'s speedup is unknown (the job's results have no pre-trained "
                "EAGLE rows and eagle.pretrained_head_speedup is not set), so this head cannot be "
                "shown to beat it; set eagle.pretrained_head_speedup to its measured speedup",
            )
        return Decision(True, f"{passed}; {head} has no recorded speedup ({incumbent.note or 'unknown'})")
    if speedup <= bar:
        return Decision(
            False, f"{passed}, but it does not beat {head}: {_fmt(speedup)}x <= {_fmt(bar)}x ({incumbent.bar_source})"
        )
    return Decision(True, f"{passed} and beats {head}: {_fmt(speedup)}x > {_fmt(bar)}x ({incumbent.bar_source})")
