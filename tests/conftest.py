"""Shared fixtures: the third-party assets of ../shared (skipped where absent); and an exit that
cannot hang in bpy's static destructors."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from assets_support import ASSETS

_exit_status: list[int] = []


@pytest.fixture(scope="session")
def assets_dir() -> Path:
    if not ASSETS.is_dir():
        pytest.skip("../shared/assets is not present")
    return ASSETS


def pytest_sessionfinish(session, exitstatus) -> None:
    _exit_status.append(int(exitstatus))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config) -> None:
    """Once pytest has reported everything, leave without C++ static destruction when bpy was loaded:
    bpy 4.5's movie reader keeps a "delayed close" thread whose global state's destructor can wait on
    that thread for ever (seen after the Movie Clip tests: every test passed, the process never ended,
    and CI's `timeout` would turn the pass into a failure)."""
    if "bpy" in sys.modules and _exit_status:
        from kirin.kirin_addon.io.scratch import remove_scratch_folders

        remove_scratch_folders()  # os._exit skips atexit
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_status[-1])
