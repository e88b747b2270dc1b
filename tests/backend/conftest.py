"""Backend fixtures: one in-process backend (real server, real model, CPU, one thread) shared by
the module tests that need a model, and a procedural quadruped to animate."""

from __future__ import annotations

import pytest

from kirin.kirin_addon.library.families.build import build_creature


@pytest.fixture(scope="session")
def creature():
    return build_creature("quadruped", 3)


@pytest.fixture(scope="session")
def backend(tmp_path_factory):
    """A real `kirin serve` on a thread: uvicorn on 127.0.0.1, a free port, a token, the shipped model."""
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    torch = pytest.importorskip("torch")
    from kirin.models.motion.generator import DEFAULT_MODEL
    from kirin.models.server.app import Backend, ServeConfig
    from kirin.models.server.generate import GenerationService

    if not (DEFAULT_MODEL / "model.json").exists():
        pytest.skip("no shipped motion model")
    torch.set_num_threads(1)
    token_file = tmp_path_factory.mktemp("backend") / "token"
    # The tests' files live under pytest's temporary folder: the one folder this backend may read.
    config = ServeConfig(token_file=token_file, allow_dirs=(tmp_path_factory.getbasetemp(),))
    running = Backend(GenerationService(device="cpu", threads=1), config).start_in_thread()
    yield running
    running.stop()


@pytest.fixture(scope="session")
def client(backend):
    from kirin.kirin_addon.backend.client import BackendClient

    connected = BackendClient(backend.url, backend.token)
    connected.wait_ready(timeout=120)
    return connected
