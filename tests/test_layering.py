"""The house's layering: imports between duckrank's modules (at the top of a file or inside a
function alike) run one way, cli -> reporting -> comparison -> evaluation | spark -> plan ->
measures -> registry -> options | spellings -> inputs -> _sql, errors, _library (a package's
modules in its layer); no two modules import each other, however indirectly; nothing imports
_generate (a build step). Read from the source, nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "duckrank"
# Top first; a module may import those of its own layer and below.
LAYERS = (("duckrank.cli",), ("duckrank.reporting",), ("duckrank.comparison",),
          ("duckrank.evaluation", "duckrank._partitions", "duckrank._duckdb_sql", "duckrank._checks", "duckrank.spark"),
          ("duckrank.lean", "duckrank._inliner"), ("duckrank.plan",),
          ("duckrank.measures",), ("duckrank.registry",), ("duckrank.options", "duckrank.spellings"),
          ("duckrank.inputs",),
          ("duckrank._sql", "duckrank.errors", "duckrank._library", "duckrank._borrowed"))


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Each module's imports of duckrank's other modules (the package's lazy __init__ left out)."""
    modules = {_name(path): path for path in PACKAGE.rglob("*.py")}
    found: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                targets.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                               for alias in node.names)
        found[name] = set()
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target not in (name, "duckrank"):
                found[name].add(target)
    return found


IMPORTS = _imports()


def _layer(module: str) -> int | None:
    """A module's layer; a package's modules are in its layer."""
    return next((i for i, names in enumerate(LAYERS) for name in names
                 if module == name or module.startswith(f"{name}.")), None)


def test_no_import_runs_back_up_the_layers():
    upward = [(module, target) for module, targets in IMPORTS.items() for target in targets
              if _layer(module) is not None and _layer(target) is not None and _layer(target) < _layer(module)]
    assert upward == []


def test_no_import_circle():
    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            module = todo.pop()
            if module == goal:
                return True
            if module not in seen:
                seen.add(module)
                todo.extend(IMPORTS.get(module, ()))
        return False

    circles = sorted((module, target) for module, targets in IMPORTS.items() for target in targets
                     if reaches(target, module))
    assert circles == []


def test_nothing_imports_the_build_step():
    assert [module for module, targets in IMPORTS.items() if "duckrank._generate" in targets] == []


# A module holds one job: past this many lines it holds two (issue 23), and is split by job.
MAX_MODULE_LINES = 600


def test_no_module_is_over_the_line_limit():
    long = {path.relative_to(PACKAGE.parent).as_posix(): lines for path in PACKAGE.rglob("*.py")
            if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}
