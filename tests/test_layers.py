"""House rules a machine can check (docs/ARCHITECTURE.md): which layer may import which, no cycles.

The checker reads every import of the production tree statically — function-level imports and
`importlib.import_module` / `__import__` strings included — and resolves each to a module of the tree.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "kirin"  # the repository root is the package `kirin` (pyproject.toml)
TOP_LEVEL = ("kirin_addon", "models", "operators", "panels", "cli")
BLENDER_MODULES = {"bpy", "bmesh", "mathutils", "addon_utils", "bpy_extras"}

# The engine's packages, lowest first: a package imports only packages of a lower rank (and itself).
ENGINE_RANKS = {
    "core": 0,
    "io": 1, "retarget": 1, "eval": 1,
    "library": 2,
    "generate": 3, "bind": 3, "pose": 3,
    "video": 4,  # its pipeline starts the fit from the rig's gait (generate/gait_cycle, rig_roles)
    "backend": 5,
}
# The networks' packages: shared modules at the top of models/ (geometry, layers, diffusion…) lowest.
MODEL_RANKS = {"": 0, "data": 1, "motion": 2, "pose": 2, "bind": 2, "video": 3, "eval": 3, "server": 4}


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGE, *parts])


def production_files(root: Path) -> Iterator[Path]:
    yield root / "__init__.py"
    for folder in TOP_LEVEL:
        yield from sorted((root / folder).rglob("*.py"))


def _string_imports(node: ast.Call) -> Iterator[str | None]:
    """`importlib.import_module("x")` / `__import__("x")`: the name, or None where it is not a literal."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name not in ("import_module", "__import__") or not node.args:
        return
    arg = node.args[0]
    yield arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


def _is_sys_modules(node: ast.expr) -> bool:
    """`sys.modules` (a look-up by name hides an import from this checker and couples by a string)."""
    return (isinstance(node, ast.Attribute) and node.attr == "modules" and isinstance(node.value, ast.Name)
            and node.value.id == "sys")


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    if not level:
        return target or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def imports_of(path: Path, root: Path, modules: set[str]) -> set[str]:
    """The tree's modules that `path` imports (a name imported from a package counts as the package,
    unless it is a module itself); `<dynamic>` for an import whose name is not a string literal."""
    module = _module_name(path, root)
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def add(name: str) -> None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name:
            found.add(name)

    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    add(alias.name)
                elif alias.name.split(".")[0] in BLENDER_MODULES:
                    found.add(alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, is_package, node.level, node.module)
            if target.split(".")[0] in BLENDER_MODULES:
                found.add(target.split(".")[0])
            elif target.split(".")[0] == PACKAGE:
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    add(full if full in modules else target)
        elif isinstance(node, ast.Subscript) and _is_sys_modules(node.value):
            found.add("<sys.modules>")
        elif isinstance(node, ast.Call):
            for name in _string_imports(node):
                if name is None:
                    found.add("<dynamic>")
                elif name.split(".")[0] == PACKAGE:
                    add(name)
    found.discard(module)
    return found


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    files = list(production_files(root))
    modules = {_module_name(p, root) for p in files}
    return {_module_name(p, root): imports_of(p, root, modules) for p in files}


def _layer(module: str) -> tuple[str, str]:
    """("kirin_addon", "core") for kirin.kirin_addon.core.rig; ("models", "") for kirin.models.geometry."""
    parts = module.split(".")[1:]
    if not parts:
        return ("", "")
    if parts[0] == "models":
        return ("models", parts[1] if len(parts) > 1 and parts[1] in MODEL_RANKS else "")
    if parts[0] == "kirin_addon":
        return ("kirin_addon", parts[1] if len(parts) > 1 else "")
    return (parts[0], "")


def rule_violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for module, targets in graph.items():
        layer, feature = _layer(module)
        for target in sorted(targets):
            if target == "<dynamic>":
                bad.append(f"{module} imports a module by a name that is not a string literal")
                continue
            if target == "<sys.modules>":
                bad.append(f"{module} looks a module up in sys.modules[...]: import it, or return the value")
                continue
            t_layer, t_feature = _layer(target)
            if target in BLENDER_MODULES:
                if layer in ("kirin_addon", "models"):
                    bad.append(f"{module} imports {target}: the engine and the models never import bpy")
                continue
            if t_layer == "models" and layer not in ("models", "cli"):
                bad.append(f"{module} imports {target}: only models/ and the command line import models")
            if t_layer == "operators" and layer not in ("operators", "", "cli"):
                bad.append(f"{module} imports {target}: only the root, operators and the command line do")
            if t_layer == "panels" and layer not in ("panels", ""):
                bad.append(f"{module} imports {target}: only the root registers the panels")
            if t_layer == "cli" and layer != "cli":
                bad.append(f"{module} imports {target}: the command line is a launcher nothing imports")
            wire_format = t_layer == "kirin_addon" and t_feature == "backend"
            if layer == "models" and wire_format and feature != "server":
                bad.append(f"{module} imports {target}: of models/, only the server speaks the wire format")
            if layer == "kirin_addon" and t_layer == "kirin_addon" and feature != t_feature:
                if ENGINE_RANKS.get(t_feature, 99) >= ENGINE_RANKS.get(feature, -1):
                    bad.append(f"{module} imports {target}: {feature}/ may not import {t_feature}/")
            if layer == "models" and t_layer == "models" and feature != t_feature:
                if MODEL_RANKS.get(t_feature, 99) >= MODEL_RANKS.get(feature, -1):
                    bad.append(f"{module} imports {target}: models/{feature or '.'} may not import "
                               f"models/{t_feature or '.'}")
    return bad


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def _check_in_subprocess(function: str):
    # In a fresh interpreter: CPython 3.11's ast constructor is not thread-safe (gh-106905), and the
    # session's in-process backend may still be working on a thread ("AST constructor recursion
    # depth mismatch").
    script = (f"import sys, json; sys.path.insert(0, {str(Path(__file__).parent)!r}); import test_layers; "
              f"g = test_layers.import_graph(); print(json.dumps(test_layers.{function}(g)))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_tree_keeps_the_layering_rules():
    assert _check_in_subprocess("rule_violations") == []


def test_the_tree_has_no_import_cycle():
    assert _check_in_subprocess("import_cycles") == []


# --------------------------------------------------------------------------- the checker on planted trees


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "__init__.py").touch()
    for folder in TOP_LEVEL:
        (tmp_path / folder).mkdir(exist_ok=True)
    return tmp_path


_CLEAN = {
    "kirin_addon/__init__.py": "",
    "kirin_addon/core/__init__.py": "",
    "kirin_addon/core/rig.py": "import numpy\n",
    "kirin_addon/pose/__init__.py": "",
    "kirin_addon/pose/space.py": "from ..core.rig import Rig\n",
    "models/__init__.py": "",
    "models/pose/__init__.py": "",
    "models/pose/sampler.py": "from ...kirin_addon.pose import space\n",
}


def test_a_clean_planted_tree_passes(tmp_path):
    graph = import_graph(_tree(tmp_path, _CLEAN))
    assert graph["kirin.kirin_addon.pose.space"] == {"kirin.kirin_addon.core.rig"}
    assert graph["kirin.models.pose.sampler"] == {"kirin.kirin_addon.pose.space"}
    assert rule_violations(graph) == [] and import_cycles(graph) == []


@pytest.mark.parametrize("text, words", [
    ("from ..pose.space import JointLimits\n", "core/ may not import pose/"),
    ("def f():\n    from ...models.pose import sampler\n", "only models/ and the command line import models"),
    ("import bpy\n", "never import bpy"),
    ("def f():\n    import importlib\n    importlib.import_module('kirin.models.pose.sampler')\n",
     "only models/ and the command line import models"),
    ("import importlib\nNAME = 'x'\nimportlib.import_module(f'kirin.{NAME}')\n", "not a string literal"),
    ("from ...operators import pose\n", "only the root, operators and the command line do"),
    ("from ...cli import main\n", "the command line is a launcher nothing imports"),
    ("import sys\nsampler = sys.modules['kirin.models.pose.sampler']\n", "sys.modules"),
])
def test_a_planted_import_is_caught(tmp_path, text, words):
    files = dict(_CLEAN, **{"kirin_addon/core/rig.py": text, "operators/__init__.py": "",
                            "operators/pose.py": "", "cli/__init__.py": "", "cli/main.py": ""})
    bad = rule_violations(import_graph(_tree(tmp_path, files)))
    assert any(words in line for line in bad), bad


@pytest.mark.parametrize("text, words", [
    ("from ...operators import pose\n", "only the root, operators and the command line do"),
    ("def f():\n    from ...panels import main\n", "only the root registers the panels"),
    ("from ...kirin_addon.backend import protocol\n", "only the server speaks the wire format"),
    ("import sys\nrun = sys.modules[__name__.rpartition('.')[0]]\n", "sys.modules"),
])
def test_a_planted_import_in_the_models_is_caught(tmp_path, text, words):
    files = dict(_CLEAN, **{"models/pose/sampler.py": text, "operators/__init__.py": "",
                            "operators/pose.py": "", "panels/__init__.py": "", "panels/main.py": "",
                            "kirin_addon/backend/__init__.py": "", "kirin_addon/backend/protocol.py": "",
                            "cli/__init__.py": "", "cli/main.py": ""})
    bad = rule_violations(import_graph(_tree(tmp_path, files)))
    assert any(words in line for line in bad), bad


def test_a_planted_cycle_is_caught(tmp_path):
    files = dict(_CLEAN, **{
        "kirin_addon/core/motion.py": "from .rig import Rig\n",
        "kirin_addon/core/rig.py": "def f():\n    from .canonical import frame\n",
        "kirin_addon/core/canonical.py": "from . import motion\n",
    })
    graph = import_graph(_tree(tmp_path, files))
    assert rule_violations(graph) == []
    assert import_cycles(graph) == [["kirin.kirin_addon.core.canonical", "kirin.kirin_addon.core.motion",
                                     "kirin.kirin_addon.core.rig"]]


# ------------------------------------------------------------------ one runtime per top-level package

# What each top-level package may never import (statically, function-level imports included).
NETWORK_RUNTIME = {"torch", "onnxruntime", "onnx", "safetensors", "fastapi", "uvicorn", "starlette",
                   "pydantic", "h11", "tokenizers"}
FORBIDDEN_RUNTIMES = {
    "kirin_addon": NETWORK_RUNTIME | BLENDER_MODULES,
    "operators": NETWORK_RUNTIME,
    "panels": NETWORK_RUNTIME,
    "models": BLENDER_MODULES,
}
# Media readers the engine may load lazily where a feature reads media, each with its reason: PyAV decodes a
# driving video, OpenCV's GrabCut cuts a film of stills, MediaPipe runs in its own environment's process.
ENGINE_MEDIA = {"av", "cv2", "mediapipe"}


def third_party_imports(path: Path) -> set[str]:
    """The top-level names of every module outside the standard library and the tree that `path` imports."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {PACKAGE}


def runtime_violations(root: Path = ROOT) -> list[str]:
    bad = []
    for top, forbidden in FORBIDDEN_RUNTIMES.items():
        for path in sorted((root / top).rglob("*.py")):
            imported = third_party_imports(path)
            for name in sorted(imported & forbidden):
                bad.append(f"{path.relative_to(root)} imports {name}: {top}/ never runs it")
            if top == "kirin_addon":
                for name in sorted(imported - ENGINE_MEDIA - forbidden - {"numpy", "scipy"}):
                    bad.append(f"{path.relative_to(root)} imports {name}: the engine is numpy and scipy")
    return bad


def test_each_package_keeps_its_runtime():
    assert runtime_violations() == []


def test_a_planted_runtime_import_is_caught(tmp_path):
    files = dict(_CLEAN, **{"kirin_addon/pose/space.py": "def f():\n    import torch\n",
                            "models/pose/sampler.py": "import bpy\n",
                            "kirin_addon/core/rig.py": "import pandas\n"})
    bad = runtime_violations(_tree(tmp_path, files))
    assert bad == ["kirin_addon/core/rig.py imports pandas: the engine is numpy and scipy",
                   "kirin_addon/pose/space.py imports torch: kirin_addon/ never runs it",
                   "models/pose/sampler.py imports bpy: models/ never runs it"]


BLOCKED_AT_IMPORT = ("torch", "fastapi", "uvicorn", "starlette", "onnxruntime", "pydantic",
                     *sorted(BLENDER_MODULES))


def test_every_engine_module_imports_without_torch_the_server_or_blender():
    """Each module of kirin_addon/ imported in a fresh interpreter where torch, FastAPI, uvicorn, starlette,
    onnxruntime and bpy cannot be imported (as in Blender's own Python, or a backend without the networks)."""
    modules = sorted(m for m in import_graph() if m.startswith(f"{PACKAGE}.kirin_addon"))
    script = (f"import importlib, sys\nfor name in {BLOCKED_AT_IMPORT!r}:\n    sys.modules[name] = None\n"
              f"failed = []\nfor module in {modules!r}:\n    try:\n        importlib.import_module(module)\n"
              f"    except Exception as exc:\n        failed.append(f'{{module}}: {{exc!r}}')\n"
              f"print('\\n'.join(failed))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert len(modules) > 100
    assert done.stdout.strip() == ""


def test_the_import_check_sees_a_module_that_needs_torch(tmp_path):
    (tmp_path / "needs_torch.py").write_text("import torch\n")
    script = (f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\nfor name in {BLOCKED_AT_IMPORT!r}:\n"
              f"    sys.modules[name] = None\nimport needs_torch\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "ModuleNotFoundError" in done.stderr
