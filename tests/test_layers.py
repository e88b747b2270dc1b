"""House rules a machine can check: the engine and the models never import bpy."""

import ast
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


def test_engine_and_models_never_import_bpy():
    offenders = [
        str(p.relative_to(ROOT))
        for folder in ("kirin_addon", "models")
        for p in (ROOT / folder).rglob("*.py")
        if _imports(p) & {"bpy", "bmesh", "mathutils", "addon_utils", "bpy_extras"}
    ]
    assert offenders == []


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
