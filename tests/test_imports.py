"""Imports run one way: every module of the package stands on a floor, and imports only from its
own floor or the ones below, with no cycle anywhere. Read from the code with ``ast``, so an
import inside a function (the usual way to dodge a cycle) counts as much as one at the top.

The one exception: imports under ``if TYPE_CHECKING:`` do not count. They never run (the
package's modules use ``from __future__ import annotations``), so they make no cycle and load
nothing; they only let an annotation name a class from a floor above (a tokenizer's
``Scheme``, the ``Store`` a pipeline is handed).

Loading a submodule runs the package's ``__init__.py`` first; that is Python's doing, not an
import the submodule makes, and is not counted (``__init__.py`` is the public facade, near
the top). The same floor map is in docs/design.md, and a test keeps the two the same.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "simhash_store"
MIGRATIONS = REPO / "migrations"  # installed as simhash_store.migrations (pyproject.toml)

# Floor number: (what stands there, its files). A name ending in "/" is a folder and
# everything in it. A new module fails test_every_module_stands_on_a_floor until it is
# placed here and in docs/design.md.
FLOORS: dict[int, tuple[str, tuple[str, ...]]] = {
    0: (
        "foundations every floor may use: errors, value checks, bits, hashes, plurals, terminal-safe text, progress callbacks",
        (
            "errors.py",
            "validation.py",
            "bits.py",
            "hashing.py",
            "plural.py",
            "terminal.py",
            "progress.py",
            "ownership.py",
        ),
    ),
    1: (
        "text and files, no database: reading inputs, writing outputs; tokenizers, schemes, fingerprints",
        (
            "decoding.py",
            "corpus.py",
            "formats/",
            "cache.py",
            "user_dict.py",
            "dictionaries.py",
            "seed_format.py",
            "tokenizers.py",
            "scheme.py",
            "fingerprint.py",
            "overlap.py",
            "segments.py",
            "pairs.py",
            "leaders.py",
            "keep.py",
            "explain.py",
            "variants.py",
            "sources.py",
            "calibration_texts.py",
            "html.py",
            "html_limits.py",
            "warc.py",
        ),
    ),
    2: (
        "where the database is: URLs, the embedded server, the one resolution of the URL",
        ("urls.py", "embedded.py", "config.py"),
    ),
    3: (
        "the database floor: sessions, trust, revisions, the stored scheme, the radius search, SQL helpers",
        (
            "session.py",
            "trust.py",
            "migrate.py",
            "models.py",
            "store_info.py",
            "search.py",
            "maintenance.py",
            "distributed.py",
            "clusters.py",
            "sqlalchemy_search.py",
            "migrations/",
        ),
    ),
    4: (
        "the two ways in: Lookup (the fast read path, psycopg alone) and Store (the full store)",
        ("lookup.py", "store/"),
    ),
    5: (
        "pipelines over files and records, the HTTP fingerprint service, and the package's public names",
        (
            "ingest.py",
            "dedup.py",
            "calibrate.py",
            "http_service.py",
            "http_connections.py",
            "ray_data.py",
            "__init__.py",
        ),
    ),
    6: (
        "the command line: parses, calls the library, renders; chooses between Lookup and Store",
        ("cli/", "__main__.py"),
    ),
}

# The lowest floor that may import each of these libraries, wherever the import stands.
FORBIDDEN = {
    "psycopg": 2,  # the floors below the database (0-1) know nothing of PostgreSQL ...
    "sqlalchemy": 2,
    "alembic": 2,
    "typer": 6,  # ... and only the command line knows about terminals and arguments
    "rich": 6,
}


@dataclass(frozen=True)
class Module:
    name: str  # dotted, as imported: simhash_store.store.reads
    file: str  # as the floor map names it: store/reads.py, migrations/env.py
    path: Path
    package: bool


def _modules() -> dict[str, Module]:
    found = {}
    for root, prefix, place in (
        (PACKAGE, "simhash_store", ""),
        (MIGRATIONS, "simhash_store.migrations", "migrations/"),
    ):
        for path in sorted(root.rglob("*.py")):
            relative = path.relative_to(root)
            parts = list(relative.with_suffix("").parts)
            package = parts[-1] == "__init__"
            if package:
                parts = parts[:-1]
            name = ".".join([prefix, *parts])
            found[name] = Module(name, place + relative.as_posix(), path, package)
    return found


MODULES = _modules()


def _floor_of(file: str) -> list[int]:
    return [
        floor
        for floor, (_, files) in FLOORS.items()
        for entry in files
        if entry == file or (entry.endswith("/") and file.startswith(entry))
    ]


def _floor(module: Module) -> int | None:
    """The module's floor; None for one not placed (test_every_module_stands_on_a_floor says so)."""
    floors = _floor_of(module.file)
    return floors[0] if len(floors) == 1 else None


@dataclass(frozen=True)
class Import:
    source: Module
    target: str  # a module name, or a third-party top-level name
    line: int

    def __str__(self) -> str:
        target = MODULES[self.target].file if self.target in MODULES else self.target
        return f"{self.source.file}:{self.line} imports {target}"


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(module: Module) -> list[Import]:
    """Every import the module runs, at any depth (not those under ``if TYPE_CHECKING:``)."""
    found = []
    todo: list[ast.AST] = [ast.parse(module.path.read_text(encoding="utf-8"))]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and _type_checking_only(node):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Import):
            targets = [_longest_module(alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, node)
            targets = [_from_target(base, alias.name) for alias in node.names]
        else:
            continue
        found += [Import(module, target, node.lineno) for target in targets if target != module.name]
    return found


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = module.name.split(".")
    if not module.package:
        parts = parts[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def _longest_module(name: str) -> str:
    """The module ``import a.b.c`` is after (its parents are only loaded on the way), or the
    third-party top-level name."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in MODULES:
            return ".".join(parts[:end])
    return parts[0]


def _from_target(base: str, name: str) -> str:
    """``from base import name``: the submodule ``name`` if there is one, else ``base`` itself."""
    if f"{base}.{name}" in MODULES:
        return f"{base}.{name}"
    return _longest_module(base)


def _all_imports() -> list[Import]:
    return [found for module in MODULES.values() for found in _imports(module)]


def test_every_module_stands_on_a_floor():
    misplaced = [
        f"{module.file}: floors {floors}" for module in MODULES.values() if len(floors := _floor_of(module.file)) != 1
    ]
    assert not misplaced, (
        "each module stands on exactly one floor (add a new one to FLOORS in tests/test_imports.py and to the "
        "floor map in docs/design.md):\n" + "\n".join(misplaced)
    )
    stale = [
        entry
        for _, files in FLOORS.values()
        for entry in files
        if not any(m.file == entry or (entry.endswith("/") and m.file.startswith(entry)) for m in MODULES.values())
    ]
    assert not stale, f"FLOORS names files that do not exist: {stale}"


def test_no_import_runs_upward():
    upward = []
    for found in _all_imports():
        if found.target not in MODULES:
            continue
        low, high = _floor(found.source), _floor(MODULES[found.target])
        if low is not None and high is not None and high > low:
            upward.append(f"{found} (floor {high}) from floor {low}")
    assert not upward, "imports from a lower floor to a higher one:\n" + "\n".join(upward)


def test_no_import_cycles():
    edges: dict[str, dict[str, Import]] = {name: {} for name in MODULES}
    for found in _all_imports():
        if found.target in MODULES:
            edges[found.source.name].setdefault(found.target, found)
    cycles = [
        "; ".join(sorted(str(edges[a][b]) for a in group for b in edges[a] if b in group))
        for group in _strongly_connected(edges)
    ]
    assert not cycles, "import cycles (each line: the imports that close one):\n" + "\n".join(cycles)


def test_text_floors_know_no_database_and_only_the_cli_knows_the_terminal():
    refused = []
    for found in _all_imports():
        floor = _floor(found.source)
        if found.target not in MODULES and floor is not None and floor < FORBIDDEN.get(found.target, 0):
            refused.append(str(found))
    assert not refused, "imports of a library the module's floor may not know (see FORBIDDEN):\n" + "\n".join(refused)


def test_the_floor_map_in_the_design_notes_is_this_one():
    text = (REPO / "docs" / "design.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \|[^|]*\|([^|\n]*)\|", text, flags=re.M)
    documented = {int(floor): sorted(re.findall(r"`([^`]+)`", files)) for floor, files in rows}
    assert documented == {floor: sorted(files) for floor, (_, files) in FLOORS.items()}


def _strongly_connected(edges: dict[str, dict[str, Import]]) -> list[set[str]]:
    """Groups of two or more modules that import each other, directly or round a loop (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in edges[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in edges:
        if node not in index:
            visit(node)
    return groups
