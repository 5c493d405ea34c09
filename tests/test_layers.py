"""The import layering holds: each folder is a layer, and a module imports only its own layer and those below.

The picture and the reasons are in docs/architecture.md; :data:`FOLDER_LAYERS`
is its table. This test parses every module of the four packages with ``ast``
(nothing is imported) and fails on an import that points up a layer, on a
circle between modules, and on a function-local import of a project module
that does not say why it is local. Every import counts for the layers,
wherever it stands: at the top, inside a function, or under
``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("protocol", "acpc_lbr", "agents", "dealer")

#: Folder -> layer, lowest layer first. A module belongs to the deepest folder
#: listed that holds it; it may import its own layer and those below.
FOLDER_LAYERS: dict[str, int] = {
    "protocol": 0,          # the rules and the wire grammar, no I/O
    "acpc_lbr": 1,          # the compute core (its top-level modules)
    "acpc_lbr/results": 1,  # the results home, Twisted-free
    "acpc_lbr/runtime": 1,  # reactor, progress, exit codes, children, bounded reads
    "agents": 2,            # players: SDK, bots, client, LBR agent, probe adapter
    "dealer": 3,            # the dealer
    "acpc_lbr/app": 4,      # the application: evaluate, scale-out, tournament, table, report
    "acpc_lbr/cli": 5,      # the command line: one module per subcommand
}

#: The word a function-local project import must carry in a comment on its line
#: or the line above, saying why it is local (a heavy import kept off the
#: start-up path, an optional dependency).
LOCAL_IMPORT_MARK = "lazy"


def folder_of(module: str) -> str:
    """The deepest folder of :data:`FOLDER_LAYERS` that holds a dotted module name.

    >>> [folder_of(m) for m in ("protocol.rules", "acpc_lbr.stats", "acpc_lbr.runtime.reactor",
    ...                         "acpc_lbr.app.tournament.driver", "acpc_lbr.cli", "acpc_lbr")]
    ['protocol', 'acpc_lbr', 'acpc_lbr/runtime', 'acpc_lbr/app', 'acpc_lbr/cli', 'acpc_lbr']
    """
    parts = module.split(".")
    for depth in range(len(parts), 0, -1):
        folder = "/".join(parts[:depth])
        if folder in FOLDER_LAYERS:
            return folder
    raise ValueError(f"not a project module: {module}")


def layer_of(module: str) -> int:
    """The layer of a dotted module name of this project: its folder's.

    >>> [layer_of(m) for m in ("protocol.rules", "acpc_lbr.stats", "agents.sdk", "dealer.match",
    ...                        "acpc_lbr.app.evaluate.run", "acpc_lbr.cli.evaluate")]
    [0, 1, 2, 3, 4, 5]
    """
    return FOLDER_LAYERS[folder_of(module)]


@dataclass(frozen=True)
class Edge:
    """One import statement of a project module by a project module."""

    source: str
    target: str
    path: str
    line: int
    local: bool
    marked: bool


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in sorted((REPO / pkg).rglob("*.py")):
            found[_module_name(path)] = path
    return found


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
             modules: dict[str, Path]) -> list[str]:
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = _resolve(node, module, is_package)
        # ``from pkg import sub`` imports the submodule pkg.sub when there is one.
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
    out = []
    for name in names:
        while name and name not in modules:  # ``import a.b.c`` of a non-module name
            name = name.rpartition(".")[0]
        if name and name.split(".")[0] in PACKAGES:
            out.append(name)
    return out


def import_edges() -> list[Edge]:
    """Every import of a project module by a project module, with where it stands."""
    modules = _modules()
    edges: list[Edge] = []
    for module, path in modules.items():
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        tree = ast.parse(text, filename=str(path))
        is_package = path.name == "__init__.py"
        local_nodes: set[int] = set()
        for func in ast.walk(tree):
            if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                local_nodes.update(id(n) for n in ast.walk(func))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            around = " ".join(lines[max(node.lineno - 2, 0): node.end_lineno or node.lineno])
            for target in sorted(set(_targets(node, module, is_package, modules))):
                if target == module:
                    continue
                edges.append(Edge(module, target, str(path.relative_to(REPO)), node.lineno,
                                  id(node) in local_nodes, LOCAL_IMPORT_MARK in around))
    return edges


def _cycles(edges: list[Edge]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        graph.setdefault(e.source, set()).add(e.target)
        graph.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


@pytest.fixture(scope="module")
def edges() -> list[Edge]:
    return import_edges()


def test_the_scan_sees_the_known_imports(edges: list[Edge]) -> None:
    """The parser finds imports we know exist, local and top-level alike."""
    pairs = {(e.source, e.target) for e in edges}
    assert ("protocol.rules", "protocol.gamedef") in pairs
    assert ("dealer.match", "dealer.seat") in pairs
    assert ("acpc_lbr.app.evaluate.run", "dealer.match") in pairs


def test_no_upward_import(edges: list[Edge]) -> None:
    """No module imports a module of a higher layer."""
    bad = [
        f"{e.path}:{e.line}: {e.source} (L{layer_of(e.source)}, {folder_of(e.source)}/) imports "
        f"{e.target} (L{layer_of(e.target)}, {folder_of(e.target)}/)"
        for e in edges
        if layer_of(e.target) > layer_of(e.source)
    ]
    assert not bad, "upward imports (see docs/architecture.md):\n" + "\n".join(bad)


def test_no_import_circle(edges: list[Edge]) -> None:
    """The import graph has no circle, counting lazy imports too.

    A lazy import does not deadlock the import, but it still ties the two
    modules into one: neither can be read, tested or moved without the other.
    """
    assert not _cycles(edges), f"import circles: {_cycles(edges)}"


def test_every_folder_says_its_layer() -> None:
    """Each package's ``__init__.py`` docstring names its layer (``L0`` ... ``L5``), so the tree shows it."""
    bad = []
    for pkg in PACKAGES:
        for init in sorted((REPO / pkg).rglob("__init__.py")):
            module = _module_name(init)
            doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
            if f"L{layer_of(module)}" not in doc:
                bad.append(f"{init.relative_to(REPO)}: say 'L{layer_of(module)}' ({folder_of(module)}/)")
    assert not bad, "package docstrings without their layer:\n" + "\n".join(bad)


def test_the_table_names_real_folders() -> None:
    """Every folder of :data:`FOLDER_LAYERS` exists (a renamed folder would fall to its parent's layer)."""
    missing = [f for f in FOLDER_LAYERS if not (REPO / f / "__init__.py").is_file()
               and f != "acpc_lbr/results"]  # created by the results change of issue 29
    assert not missing, f"FOLDER_LAYERS names folders that are not packages: {missing}"


def test_local_imports_say_why(edges: list[Edge]) -> None:
    """A function-local import of a project module carries a comment with 'lazy' and why."""
    bad = [f"{e.path}:{e.line}: {e.source} -> {e.target}" for e in edges
           if e.local and not e.marked]
    assert not bad, "hoist these imports, or say why they are lazy:\n" + "\n".join(bad)


def test_bench_local_imports_say_why() -> None:
    """The bench/ scripts keep the same rule: a function-local project import says why it is lazy."""
    bad = []
    for path in sorted((REPO / "bench").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for func in ast.walk(ast.parse(text)):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    names = [node.module or ""]
                else:
                    continue
                around = " ".join(lines[max(node.lineno - 2, 0): node.end_lineno or node.lineno])
                if any(n.split(".")[0] in PACKAGES for n in names) and LOCAL_IMPORT_MARK not in around:
                    bad.append(f"bench/{path.name}:{node.lineno}")
    assert not bad, "hoist these imports, or say why they are lazy:\n" + "\n".join(sorted(set(bad)))


@pytest.mark.parametrize(
    ("edges_in", "circle"),
    [
        ([("a.x", "a.y"), ("a.y", "a.x")], [["a.x", "a.y"]]),
        ([("a.x", "a.y"), ("a.y", "a.z")], []),
        ([("a.x", "a.y"), ("a.y", "a.z"), ("a.z", "a.x"), ("a.z", "a.w")], [["a.x", "a.y", "a.z"]]),
    ],
)
def test_cycle_finder(edges_in: list[tuple[str, str]], circle: list[list[str]]) -> None:
    """The circle finder reports exactly the circles of small graphs."""
    es = [Edge(s, t, "", 0, False, False) for s, t in edges_in]
    assert _cycles(es) == circle
