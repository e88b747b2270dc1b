"""A valid request body mutated at one place: every place in it, and the body with one replaced."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def json_paths(value: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Every place in a JSON value (keys and indices from the top; lists of more than 8 items are not
    entered): the value itself first."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from json_paths(item, prefix + (key,))
    elif isinstance(value, list) and len(value) <= 8:
        for i, item in enumerate(value):
            yield from json_paths(item, prefix + (i,))


def replaced(value: Any, path: tuple, new: Any) -> Any:
    """A copy of `value` with the place `path` set to `new` (the original is left as it is)."""
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = replaced(value[path[0]], path[1:], new)
    return copy
