"""Interleaved sampling, medians and percentiles, and the ``Figure`` a case reports."""

from __future__ import annotations

import math
import statistics
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Better(StrEnum):
    """Which way a figure improves: a time or a size shrinks, a rate grows."""

    LOWER = "lower"
    HIGHER = "higher"


@dataclass(frozen=True)
class Target:
    """``ratio <= limit`` (``Better.LOWER``) or ``ratio >= limit``; or a bound on ``ours``."""

    limit: float
    on_ratio: bool = True
    text: str = ""

    def met(self, ours: float, ratio: float, better: Better) -> bool:
        value = ratio if self.on_ratio else ours
        return value <= self.limit if better is Better.LOWER else value >= self.limit


@dataclass(frozen=True)
class Figure:
    """One row of the report: ours against its baseline, measured in the same run."""

    key: str
    title: str
    unit: str
    ours: float
    baseline: float
    baseline_label: str
    better: Better
    target: Target | None = None
    samples: int = 0
    note: str = ""
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        return self.ours / self.baseline if self.baseline else math.inf

    @property
    def met(self) -> bool | None:
        if self.target is None:
            return None
        return self.target.met(self.ours, self.ratio, self.better)

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ratio"] = self.ratio
        data["met"] = self.met
        return data


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-quantile (0..1) by linear interpolation between closest ranks."""
    if not values:
        raise ValueError("no samples")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


Sampler = Callable[[], Awaitable[float]]


async def interleave(
    samplers: Mapping[str, Sampler], rounds: int, warmup: int
) -> dict[str, list[float]]:
    """Run every sampler once per round, flipping the order each round; drop warm-up rounds.

    Interleaving makes a burst of load from elsewhere on the machine hit ours and the baseline
    alike, so their ratio stays meaningful when the absolute numbers do not.
    """
    names = list(samplers)
    kept: dict[str, list[float]] = {name: [] for name in names}
    for index in range(warmup + rounds):
        order = names if index % 2 == 0 else names[::-1]
        for name in order:
            value = await samplers[name]()
            if index >= warmup:
                kept[name].append(value)
    return kept
