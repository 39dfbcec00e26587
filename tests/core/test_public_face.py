"""The seam between the core and its adapters: bot/ imports `core` (its __init__) and nothing under it,
and `core.__all__` is sorted and lists exactly the names bot/ imports, so the face cannot grow stale."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import core
from tests.conftest import ROOT


def core_imports(root: Path) -> list[tuple[str, str, list[str]]]:
    """(file:line, module, names) of every import of core in root/bot."""
    found = []
    for path in sorted((root / "bot").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "core":
                found.append((where, node.module, [a.name for a in node.names]))
            elif isinstance(node, ast.Import):
                found += [(where, a.name, []) for a in node.names if a.name.split(".")[0] == "core"]
    return found


def behind_the_face(root: Path) -> list[str]:
    """Imports of a core submodule, written `from core.x import y`, `import core.x` or `from core import x`."""
    found = [f"{where} imports {module}" for where, module, _ in core_imports(root) if module != "core"]
    return found + [
        f"{where} imports the module core.{name}"
        for where, module, names in core_imports(root)
        if module == "core"
        for name in names
        if importlib.util.find_spec(f"core.{name}") is not None
    ]


def unlisted_and_unused(root: Path, face: list[str]) -> tuple[set[str], set[str]]:
    used = {name for _, module, names in core_imports(root) if module == "core" for name in names}
    return used - set(face), set(face) - used


def test_adapters_import_the_core_through_its_face_only():
    assert not behind_the_face(ROOT), "\n".join(behind_the_face(ROOT))


def test_the_face_is_sorted_and_lists_exactly_what_adapters_use():
    assert core.__all__ == sorted(core.__all__)
    unlisted, unused = unlisted_and_unused(ROOT, core.__all__)
    assert not unlisted, f"imported by bot/ but not in core.__all__: {sorted(unlisted)}"
    assert not unused, f"in core.__all__ but used by no adapter: {sorted(unused)}"
    assert all(hasattr(core, name) for name in core.__all__)


def test_the_checks_find_what_they_are_for(tmp_path):
    (tmp_path / "bot").mkdir()
    (tmp_path / "bot" / "x.py").write_text(
        "import core.records\nfrom core.errors import plural\nfrom core import scopes, Service\n"
    )
    assert behind_the_face(tmp_path) == [
        "bot/x.py:1 imports core.records",
        "bot/x.py:2 imports core.errors",
        "bot/x.py:3 imports the module core.scopes",
    ]
    assert unlisted_and_unused(tmp_path, ["Service", "Turn"]) == ({"scopes"}, {"Turn"})
