"""Shared fixtures: the third-party assets of ../shared (skipped where absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from assets_support import ASSETS


@pytest.fixture(scope="session")
def assets_dir() -> Path:
    if not ASSETS.is_dir():
        pytest.skip("../shared/assets is not present")
    return ASSETS
