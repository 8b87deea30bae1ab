"""The scenario map (``scenarios.py``) names real tests and covers reliability.md 1-12, plus 13 and 14 (issue 14)."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

from tests.reliability.scenarios import SCENARIOS, node_ids

REPO = Path(__file__).resolve().parents[2]


def test_every_scenario_of_reliability_md_is_mapped() -> None:
    assert [s.number for s in SCENARIOS] == list(range(1, 15))
    assert all(s.tests for s in SCENARIOS)


def test_every_mapped_test_exists() -> None:
    for scenario in SCENARIOS:
        for node in scenario.tests:
            path, _, name = node.partition("::")
            assert (REPO / path).is_file(), f"scenario {scenario.number}: no file {path}"
            module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
            test = getattr(module, name, None)
            assert inspect.isfunction(test) and name.startswith("test_"), (
                f"scenario {scenario.number}: no test {node}"
            )


def test_the_make_target_runs_every_mapped_test_once() -> None:
    ids = node_ids()
    assert len(ids) == len(set(ids))
    for scenario in SCENARIOS:
        for node in scenario.tests:
            assert node in ids or any(node.startswith(extra) for extra in ids), node
