"""Running the scripts of benchmarks/ in tests: they are not a package, so they load as modules."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


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
