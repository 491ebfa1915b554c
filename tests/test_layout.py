"""The tree shows the architecture: one package per stage, data walking one way, and no import cycle.

source → snapshot → signals → verdict → review → action → schedule: a module may import its own stage
and the stages below it, never one above. The import graph is read from the source (every import,
including those inside functions and under TYPE_CHECKING), so a lazy import cannot hide a cycle.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "mcp_training_check"
MAX_TOP_LEVEL_MODULES = 12

# stage of each top-level name, lowest first; a module may import only equal or lower stages
STAGES: dict[str, int] = {
    "__init__": 0,
    "models": 0,
    "errors": 0,
    "roles": 0,
    "files": 0,  # the one regular-file open every stage reads local files with
    "config": 1,
    "sources": 2,
    "state": 3,
    "snapshot": 4,
    "plot": 4,  # draws the stored history (state) with the signals it is handed; review attaches it
    "judge": 5,
    "review": 6,
    "stop": 7,
    "schedule": 8,
    "group_check": 9,
    "service": 9,
    "serving": 10,
    "server": 10,
    "cli": 10,
    "__main__": 10,
    "examples": 10,
    "watch": 10,
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def source_modules(*tops: str) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for top in tops:
        for path in sorted((ROOT / top).rglob("*.py")):
            found[module_name(path)] = path
    return found


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules ``name`` imports: the module each import names (a package's ``__init__`` when
    the name is a package), plus the package a cross-package import runs first."""
    is_package = path.name == "__init__.py"
    here = name.split(".") if is_package else name.split(".")[:-1]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - (node.level - 1)] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                child = f"{module}.{alias.name}"
                targets.add(child if child in known else module)
    edges = set()
    for target in targets:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if not target or target == name:
            continue
        edges.add(target)
        parent = target.rpartition(".")[0]
        if parent not in ("", PACKAGE, name) and not name.startswith(parent + "."):
            edges.add(parent)  # importing a.b.c runs a.b first
    return edges


def import_graph(*tops: str) -> dict[str, set[str]]:
    modules = source_modules(*tops)
    known = set(modules)
    return {name: imported_modules(name, path, known) for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def stage(module: str) -> int:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "__init__"
    assert top in STAGES, f"{module}: add its top-level name to STAGES in {__file__}"
    return STAGES[top]


def test_top_level_has_few_modules_and_no_shared_prefix() -> None:
    names = sorted(p.stem for p in (ROOT / PACKAGE).glob("*.py"))
    assert len(names) <= MAX_TOP_LEVEL_MODULES, names
    prefixes = Counter(n.split("_")[0] for n in names if "_" in n.strip("_"))
    shared = {p: [n for n in names if n.startswith(p + "_")] for p, count in prefixes.items() if count > 1}
    assert not shared, f"modules sharing a name_ prefix belong in one package: {shared}"


def test_every_stage_package_says_its_job_and_exports_its_names() -> None:
    for package in ("sources", "state", "judge", "review", "stop", "config", "plot"):
        init = ROOT / PACKAGE / package / "__init__.py"
        tree = ast.parse(init.read_text())
        assert ast.get_docstring(tree), f"{package}/__init__.py needs a docstring stating its job"
        exported = [n for n in tree.body if isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)]  # fmt: skip
        assert exported, f"{package}/__init__.py should list its public names in __all__"


def test_import_graph_has_no_cycle_including_benchmarks() -> None:
    graph = import_graph(PACKAGE, "benchmarks")
    assert find_cycle(graph) is None, " → ".join(find_cycle(graph) or [])


def test_no_stage_imports_a_later_one() -> None:
    graph = import_graph(PACKAGE)
    upward = [
        f"{module} (stage {stage(module)}) imports {target} (stage {stage(target)})"
        for module, targets in graph.items()
        for target in targets
        if stage(target) > stage(module)
    ]
    assert not upward, "\n".join(sorted(upward))


def test_the_graph_reader_sees_a_cycle_and_an_upward_import() -> None:
    """The checks above can fail: a two-module cycle is found, and judge → service is an upward import."""
    assert find_cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
    assert stage(f"{PACKAGE}.service") > stage(f"{PACKAGE}.judge.trend")
