"""The import graph of ``acp_agent/`` has no cycle and no upward edge; ``bench/`` stands alone.

Read from the source with ``ast`` (every ``import`` and ``from … import``, also the lazy ones
inside functions and under ``TYPE_CHECKING``: a lazy import that closes a circle is still a
circle, only hidden). ``from package import name`` counts as importing ``package.name`` when
that is a module.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The rooms of ``acp_agent/``, bottom floor first. A module may import modules of its own floor and
# of the floors below, never one above. Every module belongs to exactly one unit named here (a
# package, or a top-level module): a new package is refused until this table places it.
FLOORS: tuple[tuple[str, ...], ...] = (
    # what everything stands on
    (
        "acp_agent",
        "acp_agent.lean_imports",
        "acp_agent.errors",
        "acp_agent.content",
        "acp_agent.config_file",
        "acp_agent.logs",
        "acp_agent.progress",
        "acp_agent.safegit",
        "acp_agent.controls",
        "acp_agent.images",
        "acp_agent.telemetry",
    ),
    # the journal and the wire, knowing nothing of sessions
    ("acp_agent.journal", "acp_agent.transport"),
    ("acp_agent.model", "acp_agent.checkpoints"),
    # permission rules: patterns, the shell parser, the project store
    ("acp_agent.permissions",),
    # the OS sandbox around commands, and their environment
    ("acp_agent.sandbox",),
    # the coding tools; a journal as a transcript people read (export/ shows tools' diffs)
    ("acp_agent.tools", "acp_agent.export"),
    ("acp_agent.mcp",),
    # the turn engine: the pure machine, its actor and their ports
    ("acp_agent.turn",),
    ("acp_agent.hooks",),
    # slash commands, skills, review: door-neutral
    ("acp_agent.commands",),
    # session lifecycle and storage
    ("acp_agent.session",),
    # the two doors, and what reads options and reports start-up
    ("acp_agent.acp", "acp_agent.api", "acp_agent.options", "acp_agent.startup_report"),
    # one owner of a process's life, then its front ends
    ("acp_agent.process",),
    (
        "acp_agent.app",
        "acp_agent.remote",
        "acp_agent.doctor",
        "acp_agent.journal_cli",
        "acp_agent.schemas",
    ),
    ("acp_agent.launch",),
    ("acp_agent.replay",),
    ("acp_agent.cli", "acp_agent.__main__", "acp_agent.demo"),
)

# ``bench/``: its support modules, the cases that use them, the runners; it may import
# ``acp_agent`` (never the reverse) and never ``tests``.
BENCH_FLOORS: tuple[tuple[str, ...], ...] = (
    (
        "bench",
        "bench.stats",
        "bench.report",
        "bench.wire",
        "bench.loopback",
        "bench.journals",
        "bench.bare_writer",
        "bench.inject_floor",
        "bench.idle_tasks",
        "bench.installed",
        "bench.sdk_agent",
        "bench.sync_counting_agent",
    ),
    ("bench.lab",),
    ("bench.cases",),
    ("bench.peers",),
    ("bench.__main__",),
)


def modules(package: str) -> dict[str, Path]:
    found = {}
    for path in (ROOT / package).rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imported(name: str, path: Path) -> Iterator[str]:
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".")[: len(name.split(".")) - node.level + is_package]
                base = ".".join([*package, *([node.module] if node.module else [])])
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


@functools.cache
def graph(package: str) -> dict[str, set[str]]:
    mods = modules(package)
    return {
        name: {target for target in imported(name, path) if target in mods and target != name}
        for name, path in mods.items()
    }


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def unit_of(module: str, floors: tuple[tuple[str, ...], ...]) -> str | None:
    """The longest unit of ``floors`` that ``module`` is or lies in."""
    units = [unit for floor in floors for unit in floor]
    inside = [u for u in units if module == u or module.startswith(u + ".")]
    return max(inside, key=len, default=None)


def floor_of(floors: tuple[tuple[str, ...], ...]) -> dict[str, int]:
    return {unit: number for number, floor in enumerate(floors) for unit in floor}


def upward_edges(edges: dict[str, set[str]], floors: tuple[tuple[str, ...], ...]) -> list[str]:
    level = floor_of(floors)
    found = []
    for module, targets in edges.items():
        here = unit_of(module, floors)
        for target in targets:
            there = unit_of(target, floors)
            if here is not None and there is not None and level[there] > level[here]:
                found.append(f"{module} -> {target}")
    return sorted(found)


def unplaced(edges: dict[str, set[str]], floors: tuple[tuple[str, ...], ...]) -> list[str]:
    return sorted(module for module in edges if unit_of(module, floors) is None)


@pytest.mark.parametrize(("package", "floors"), [("acp_agent", FLOORS), ("bench", BENCH_FLOORS)])
def test_no_import_cycle(package: str, floors: tuple[tuple[str, ...], ...]) -> None:
    assert cycles(graph(package)) == []


@pytest.mark.parametrize(("package", "floors"), [("acp_agent", FLOORS), ("bench", BENCH_FLOORS)])
def test_every_module_has_a_floor(package: str, floors: tuple[tuple[str, ...], ...]) -> None:
    assert unplaced(graph(package), floors) == []


@pytest.mark.parametrize(("package", "floors"), [("acp_agent", FLOORS), ("bench", BENCH_FLOORS)])
def test_no_upward_import(package: str, floors: tuple[tuple[str, ...], ...]) -> None:
    assert upward_edges(graph(package), floors) == []


def test_the_checker_finds_a_cycle_even_through_a_lazy_import() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(edges) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_checker_finds_an_upward_edge_and_an_unplaced_module() -> None:
    floors = (("p.low",), ("p.high",))
    edges = {"p.low.a": {"p.high.b"}, "p.high.b": {"p.low.c"}, "p.low.c": set(), "p.new": set()}
    assert upward_edges(edges, floors) == ["p.low.a -> p.high.b"]
    assert unplaced(edges, floors) == ["p.new"]


def test_acp_agent_does_not_import_bench_or_tests() -> None:
    offenders = {
        f"{path.relative_to(ROOT)}: {target}"
        for path in (ROOT / "acp_agent").rglob("*.py")
        for target in imported("acp_agent", path)
        if target.split(".")[0] in ("bench", "tests")
    }
    assert sorted(offenders) == []


def test_bench_does_not_import_tests() -> None:
    offenders = {
        f"{path.relative_to(ROOT)}: {target}"
        for path in (ROOT / "bench").rglob("*.py")
        for target in imported("bench", path)
        if target == "tests" or target.startswith("tests.")
    }
    assert sorted(offenders) == []


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(package: str) -> Iterator[str]:
    """``from M import _name``, or ``M._name`` of a module ``M`` imported, where M is another
    module of the project."""
    for name, path in modules(package).items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported_names: set[str] = set()
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            if not node.level and (node.module or "").split(".")[0] not in ("acp_agent", "bench"):
                continue
            for alias in node.names:
                imported_names.add(alias.asname or alias.name)
                if is_private(alias.name):
                    yield f"{name}: from {node.module} import {alias.name}"
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and is_private(node.attr)
                and isinstance(node.value, ast.Name)
                and node.value.id in imported_names
            ):
                yield f"{name}:{node.lineno}: {node.value.id}.{node.attr}"


@pytest.mark.parametrize("package", ["acp_agent", "bench"])
def test_no_module_imports_another_modules_private_name(package: str) -> None:
    assert sorted(private_imports(package)) == []


def test_the_session_actor_is_reached_only_from_session_and_turn() -> None:
    """``Session.actor`` is the engine's; the doors and the process go through ``Session``."""
    offenders = []
    for name, path in modules("acp_agent").items():
        if name.startswith(("acp_agent.session", "acp_agent.turn")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "actor":
                offenders.append(f"{name}:{node.lineno}")
    assert offenders == []
