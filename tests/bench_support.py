"""Running the scripts of benchmarks/ in tests: they are not a package, so they load as modules."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
# What a benchmark that generates through the panel's path needs: the backend's environment and model.
HAS_BACKEND = ((ROOT / ".venv" / "bin" / "python").is_file()
               and (ROOT / "models" / "weights" / "motion" / "model.json").is_file())
NO_BACKEND = "needs the checkout's .venv (the backend's environment) and the motion model"


def load_benchmark(name: str) -> ModuleType:
    """benchmarks/<name>.py as the module `name`."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def numbers(value, path: str = "") -> Iterator[tuple[str, float]]:
    """(path, number) for every number in nested rows (dicts, lists, tuples)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from numbers(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for k, item in enumerate(value):
            yield from numbers(item, f"{path}[{k}]")
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield path, float(value)
