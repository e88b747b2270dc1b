"""A backend with the real HTTP side and request checks but a stub in place of the motion model: its
jobs finish at once (or, with `delay`, after reporting progress for that long), so the HTTP and job
behaviour is tested in a fraction of a second per backend."""

from __future__ import annotations

import contextlib
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

from kirin.models.server.app import Backend, ServeConfig
from kirin.models.server.generate import GenerationService

OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy for loopback


class StubService(GenerationService):
    """Checks requests like the real service; runs nothing (for `delay` seconds, cancellable)."""

    delay = 0.0

    def load(self) -> None:
        self.model = object()

    def info(self) -> dict:
        return {"model_loaded": True, "device": "cpu", "backend": "stub"}

    def work(self, job):
        def run(report):
            started = time.monotonic()
            while time.monotonic() - started < self.delay:
                report((time.monotonic() - started) / self.delay, "working")  # raises once cancelled
                time.sleep(0.01)
            return {"frames": job.request.frames, "variants": []}

        return run


@contextlib.contextmanager
def stub_backend(tmp_path, delay: float = 0.0, **config: Any) -> Iterator[Backend]:
    """A running stub backend on loopback; `config`: ServeConfig's fields."""
    service = StubService(bank="none")
    service.delay = delay
    backend = Backend(service, ServeConfig(token_file=tmp_path / "token", **config))
    backend.start_in_thread()
    try:
        yield backend
    finally:
        backend.stop()


def call(backend, method: str, path: str, body: Any = None, timeout: float = 30) -> tuple[int, Any]:
    """One request with the token; the status and the JSON answer."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {backend.token}"}
    if data is not None:
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(backend.url + path, data=data, method=method, headers=headers)
    try:
        with OPENER.open(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")
