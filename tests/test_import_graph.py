"""The import graph of ``acp_agent/`` has no cycle and no upward edge; ``bench/`` stands alone.

Read from the source with ``ast`` (every ``import`` and ``from … import``, also the lazy ones
inside functions and under ``TYPE_CHECKING``: a lazy import that closes a circle is still a
circle, only hidden). ``from package import name`` counts as importing ``package.name`` when
that is a module.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Lower layers never import higher ones (a module may import its own layer and those below).
LAYERS: dict[str, tuple[str, ...]] = {
    "acp_agent.journal": ("acp_agent.session", "acp_agent.acp", "acp_agent.model"),
    "acp_agent.model": ("acp_agent.hooks", "acp_agent.session", "acp_agent.acp", "acp_agent.api"),
    "acp_agent.tools": ("acp_agent.session", "acp_agent.acp", "acp_agent.api", "acp_agent.app"),
    "acp_agent.session": ("acp_agent.acp", "acp_agent.api", "acp_agent.app", "acp_agent.cli"),
    "acp_agent.acp": ("acp_agent.api", "acp_agent.app", "acp_agent.cli"),
    "acp_agent.transport": ("acp_agent.session", "acp_agent.acp", "acp_agent.api"),
}


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


def test_acp_agent_has_no_import_cycle() -> None:
    assert cycles(graph("acp_agent")) == []


def test_the_checker_finds_a_cycle_even_through_a_lazy_import() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(edges) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_no_upward_import(layer: str) -> None:
    upward = {
        f"{module} -> {target}"
        for module, targets in graph("acp_agent").items()
        if module == layer or module.startswith(layer + ".")
        for target in targets
        if any(target == above or target.startswith(above + ".") for above in LAYERS[layer])
    }
    assert sorted(upward) == []


def test_bench_does_not_import_tests() -> None:
    offenders = {
        f"{path.relative_to(ROOT)}: {target}"
        for path in (ROOT / "bench").rglob("*.py")
        for target in imported("bench", path)
        if target == "tests" or target.startswith("tests.")
    }
    assert sorted(offenders) == []
