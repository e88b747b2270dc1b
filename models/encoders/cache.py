"""Process-wide cache of the frozen encoders: a backend loads each encoder once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

_cache: dict[Hashable, Any] = {}
_cache_lock = threading.Lock()


def cached(key: Hashable, build: Callable[[], Any]) -> Any:
    """The encoder under `key`, built by `build()` the first time (under the lock: one build each)."""
    with _cache_lock:
        if key not in _cache:
            _cache[key] = build()
        return _cache[key]


def clear_cache() -> None:
    """Forget the cached encoders (tests, or after the user picks another image encoder)."""
    with _cache_lock:
        _cache.clear()
