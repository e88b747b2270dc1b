"""The backend as the add-on runs it: `python -m kirin.cli serve` in a subprocess, started
on first use, reused, killed mid-job (a clear error, then a new one starts), and stopped."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

from kirin.kirin_addon.backend import process as backend_process
from kirin.kirin_addon.backend.client import BackendClient
from kirin.kirin_addon.backend.results import BackendError, BackendStopped
from kirin.kirin_addon.generate.request import GenerateRequest

pytestmark = pytest.mark.slow

THREADS_ENV = {**os.environ, "OMP_NUM_THREADS": "1"}  # the test machine is small and shared


@pytest.fixture(autouse=True)
def _needs_server():
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    yield
    backend_process.stop_backend()


def _running_job(client, creature):
    """A job long enough to be caught mid-way, once it samples."""
    job = client.generate(creature.rig, GenerateRequest("a dog galloping", frames=1600, variants=8))
    deadline = time.monotonic() + 120
    while job.poll_once().state != "running" or job.status.progress < 0.06:
        assert time.monotonic() < deadline, job.status
        time.sleep(0.05)
    return job


def test_backend_killed_mid_job_gives_a_clear_error_and_a_new_one_starts(creature):
    client = backend_process.ensure_backend(sys.executable, device="cpu", threads=1, timeout=180)
    process = backend_process.current_backend()
    assert process is not None and process.alive
    assert stat.S_IMODE((process.folder / "token").stat().st_mode) == 0o600
    assert backend_process.ensure_backend(sys.executable, device="cpu", threads=1) is client  # reused
    client.wait_ready(180)
    job = _running_job(client, creature)
    os.kill(process.pid, signal.SIGKILL)
    with pytest.raises(BackendStopped) as info:
        job.wait(timeout=60)
    assert info.value.message.startswith("The Kirin backend stopped")
    assert "killed by signal 9" in info.value.message
    # The next Generate starts a new backend, which works.
    again = backend_process.ensure_backend(sys.executable, device="cpu", threads=1, timeout=180)
    assert again is not client and backend_process.current_backend().pid != process.pid
    result = again.generate(creature.rig, GenerateRequest("a dog walking forward", frames=16)).wait(180)
    assert result.variants[0].motion.frame_count == 16
    folder = backend_process.current_backend().folder
    backend_process.stop_backend()
    assert backend_process.current_backend() is None and not folder.exists()


def test_unreachable_backend_is_a_clear_error():
    probe = __import__("socket").socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    with pytest.raises(BackendStopped, match="The Kirin backend stopped: nothing answers"):
        BackendClient(f"http://127.0.0.1:{port}", "token").health()
    with pytest.raises(BackendError, match="token"):
        backend_process.ensure_backend(url=f"http://127.0.0.1:{port}")


def test_kirin_serve_prints_its_url_writes_a_private_token_and_shuts_down(tmp_path):
    token_file, url_file = tmp_path / "run" / "token", tmp_path / "url.json"
    args = [sys.executable, "-m", "kirin.cli", "serve", "--port", "0", "--device", "cpu",
            "--threads", "1", "--token-file", str(token_file), "--url-file", str(url_file), "--bank", "none"]
    server = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=THREADS_ENV)
    try:
        line = server.stdout.readline()
        assert line.startswith("Kirin backend listening on http://127.0.0.1:"), line
        deadline = time.monotonic() + 60
        while not url_file.exists():
            assert time.monotonic() < deadline and server.poll() is None
            time.sleep(0.05)
        url = json.loads(url_file.read_text())["url"]
        assert url in line and str(token_file) in line
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        assert stat.S_IMODE(token_file.parent.stat().st_mode) == 0o700
        client = BackendClient(url, token_file.read_text())
        assert client.health()["pid"] == server.pid
        with pytest.raises(BackendError) as info:
            BackendClient(url, "").health()
        assert info.value.status == 401
        client.shutdown()
        assert server.wait(30) == 0
        assert not token_file.exists() and not url_file.exists()  # nothing of the session stays
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_kirin_serve_refuses_cuda_where_there_is_none():
    pytest.importorskip("onnxruntime")
    from kirin.models.server.generate import cuda_providers

    if "CUDAExecutionProvider" in cuda_providers():
        pytest.skip("this machine has CUDA")
    done = subprocess.run([sys.executable, "-m", "kirin.cli", "serve", "--device", "cuda"],
                          capture_output=True, text=True, timeout=120, env=THREADS_ENV)
    assert done.returncode == 2 and "CUDA" in done.stderr


def test_backend_ends_with_its_parent(tmp_path):
    # Blender crashed: nobody calls stop_backend, the backend notices its parent is gone.
    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    url_file = tmp_path / "url.json"
    args = [sys.executable, "-m", "kirin.cli", "serve", "--device", "cpu", "--threads", "1",
            "--bank", "none", "--token-file", str(tmp_path / "token"), "--url-file", str(url_file),
            "--parent-pid", str(parent.pid)]
    server = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=THREADS_ENV)
    try:
        deadline = time.monotonic() + 60
        while not url_file.exists():
            assert time.monotonic() < deadline and server.poll() is None
            time.sleep(0.05)
        parent.kill()
        parent.wait()
        assert server.wait(30) == 0
    finally:
        for process in (parent, server):
            if process.poll() is None:
                process.kill()
                process.wait()


def test_default_token_folder_is_private():
    from kirin.models.server.app import default_token_file

    if not hasattr(os, "getuid"):
        pytest.skip("POSIX permissions")
    folder = default_token_file().parent
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and folder.stat().st_uid == os.getuid()


def test_a_running_backend_is_kept_while_it_may_read_the_folders_asked_for(tmp_path) -> None:
    """A request naming a file in a folder the running backend may read reuses it; one outside starts a
    new backend allowed both (process._covers)."""
    from kirin.kirin_addon.backend.process import _covers

    inner, other = tmp_path / "clips" / "birds", tmp_path / "elsewhere"
    assert _covers((str(tmp_path),), (str(inner),))
    assert not _covers((str(tmp_path / "clips"),), (str(other),))
    assert _covers((str(tmp_path / "clips"), str(other)), (str(inner), str(other)))
