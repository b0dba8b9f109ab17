"""The package layers: the library never loads Prefect, the flows, the tasks or the CLI.

Each library module is imported alone in one fresh interpreter, in order; after each import the
test looks for what must not be there, so a failure names the module that pulled it in. Inside the
library, each capability imports only the ones below it (`CAPABILITY_FLOORS`) and no two modules
or packages import each other.
"""

from __future__ import annotations

import functools
import json
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import codex_memories

REPO_ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = ("prefect", "codex_memories_flows", "codex_memories_tasks", "codex_memories_cli")

_CHECK = """
import importlib, json, sys
forbidden = tuple(sys.argv[2].split(","))
offenders = {}
for name in json.loads(sys.argv[1]):
    importlib.import_module(name)
    loaded = sorted({m.split(".")[0] for m in sys.modules if m.split(".")[0] in forbidden})
    if loaded:
        offenders[name] = loaded
        break
print(json.dumps(offenders))
"""


def library_modules() -> list[str]:
    return sorted(
        module.name
        for module in pkgutil.walk_packages(codex_memories.__path__, prefix="codex_memories.")
        # Alembic's env.py runs only inside an alembic migration context.
        if not module.name.endswith(".migrations.env")
    )


def test_no_library_module_imports_prefect_the_flows_the_tasks_or_the_cli() -> None:
    modules = library_modules()
    assert len(modules) > 30
    completed = subprocess.run(
        [sys.executable, "-c", _CHECK, json.dumps(modules), ",".join(FORBIDDEN)],
        capture_output=True, text=True, check=True, timeout=240,
    )
    assert json.loads(completed.stdout) == {}


def test_the_wheel_lists_every_package_of_the_tree_and_no_generic_top_level_name() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools = project["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    mapped = setuptools["package-dir"]
    on_disk = set()
    for package, folder in {"codex_memories": "codex_memories", "codex_memories_cli": "codex_memories_cli", **mapped}.items():
        base = REPO_ROOT / folder
        for init in base.rglob("__init__.py"):
            relative = init.parent.relative_to(base)
            on_disk.add(".".join([package, *relative.parts]))
    assert listed == on_disk
    assert all(name.split(".")[0].startswith("codex_memories") for name in listed)


def test_forgetting_and_the_memory_folder_never_import_phase_2() -> None:
    """`consolidate` uses `forget` (its routes run inside phase 2) and `memory_folder`; the arrows
    run one way, so a route or the folder can be read, changed and tested without phase 2."""
    import ast

    offenders = []
    for package in ("forget", "memory_folder"):
        for path in sorted((REPO_ROOT / "codex_memories" / package).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else (
                    [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
                )
                offenders += [f"{path.name}: {name}" for name in names if name.startswith("codex_memories.consolidate")]
    assert offenders == []


# The library's capabilities from the ground up (farm-studio's floors): a package imports only
# packages below it. Each line says why it stands where it does.
CAPABILITY_FLOORS = (
    ("redact",),         # every path's secret redaction: imports nothing of ours
    ("evidence",),       # the instruction screen extraction, consolidation and the read path share
    ("llm",),            # model providers and the rate limits of their answers
    ("state",),          # the state DB
    ("ingest",),         # rollouts: reading, discovery, backfill sources, the rollouts' rate limits
    ("memory_folder",),  # the folder, its notes and the team files: what forgetting and phase 2 change
    ("forget",),         # the routes, over the folder and the state DB
    ("extract",),        # phase 1's extraction, the offline extractor included
    ("consolidate",),    # phase 2
    ("read", "reports"),  # sessions reading memories; what runs report (neither imports the other)
    ("codex",),          # Codex's side: install, uninstall, doctor, trust, the launcher (its hooks run read)
)


@functools.cache
def _library_imports() -> tuple[tuple[str, str], ...]:
    """(importing module, imported module) for every import of our library inside it."""
    import ast

    pairs = []
    for path in sorted((REPO_ROOT / "codex_memories").rglob("*.py")):
        module = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            pairs += [(module, name) for name in names if name.startswith("codex_memories.")]
    return tuple(pairs)


def _room(module: str) -> str:
    """The top-level module or package of the library a module belongs to."""
    return module.split(".")[1]


def test_each_capability_imports_only_the_floors_below_it() -> None:
    floor = {package: rank for rank, packages in enumerate(CAPABILITY_FLOORS) for package in packages}
    offenders = sorted(
        f"{module} -> {imported}"
        for module, imported in _library_imports()
        if _room(module) in floor and _room(imported) in floor and _room(module) != _room(imported)
        and floor[_room(imported)] >= floor[_room(module)]
    )
    assert offenders == []


def test_no_two_parts_of_the_library_import_each_other() -> None:
    """No import circle between the library's top-level modules and packages (a circle inside one
    package is as much of a trap, so modules are checked too)."""
    import graphlib

    modules = set(library_modules())
    for level in (_room, lambda module: module):
        graph: dict[str, set[str]] = {}
        for module, imported in _library_imports():
            source, target = level(module), level(imported)
            if source != target and (level is _room or target in modules):
                graph.setdefault(source, set()).add(target)
        graphlib.TopologicalSorter(graph).prepare()  # raises CycleError naming the circle
