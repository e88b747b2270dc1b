"""House rules a machine can check: the engine and the models never import bpy."""

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def _offenders() -> list[str]:
    return [
        str(p.relative_to(ROOT))
        for folder in ("kirin_addon", "models")
        for p in (ROOT / folder).rglob("*.py")
        if _imports(p) & {"bpy", "bmesh", "mathutils", "addon_utils", "bpy_extras"}
    ]


def test_engine_and_models_never_import_bpy():
    # In a fresh interpreter: CPython 3.11's ast constructor is not thread-safe (gh-106905), and the
    # session's in-process backend may still be working on a thread ("AST constructor recursion
    # depth mismatch").
    script = f"import sys, json; sys.path.insert(0, {str(Path(__file__).parent)!r}); " \
             "import test_layers; print(json.dumps(test_layers._offenders()))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_the_check_sees_an_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    import bpy\n")
    assert "bpy" in _imports(bad)


def test_engine_imports_without_blender():
    import importlib


    for module in ("rig", "motion", "rotations", "retarget", "procedural", "skinning", "canonical",
                   "joint_mapping", "families", "controllers", "captions", "metrics", "library", "ingest",
                   "render", "preview", "io_files"):
        importlib.import_module(f"kirin.kirin_addon.{module}")
