"""The backend's HTTP side under clients that misbehave (issue 18, defects 4 and 5): bodies counted as
they arrive, JSON parsed off the event loop, time-outs for heads, bodies and idle connections, a
connection limit within the file limit, and long polls that leave health its answer."""

from __future__ import annotations

import json
import os
import resource
import select
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

import pytest
from stub_support import call, stub_backend
from test_backend_files import small_rig

from kirin.kirin_addon.backend.client import BackendClient
from kirin.kirin_addon.backend.protocol import generate_to_json
from kirin.kirin_addon.generate.request import GenerateRequest
from kirin.models.server import http_limits
from kirin.models.server.http_limits import HttpLimits

MIB = 1024 * 1024
THREADS_ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def connect(backend) -> socket.socket:
    parts = urllib.parse.urlsplit(backend.url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
    return sock


def head(backend, path: str = "/v1/jobs/generate", extra: str = "") -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {backend.token}\r\n"
            f"Content-Type: application/json\r\n{extra}\r\n").encode()


def answer(sock: socket.socket, timeout: float = 10.0) -> tuple[int, bytes]:
    """The status and body of the response on `sock` (read until the server closes or it is whole)."""
    sock.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < _length(data):
        piece = sock.recv(65536)
        if not piece:
            break
        data += piece
    return int(data.split(b" ", 2)[1]), data.split(b"\r\n\r\n", 1)[1]


def _length(data: bytes) -> int:
    for line in data.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":")[1])
    return 0


def closed_by_server(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


# ----------------------------------------------------------------------------- bodies
def test_a_chunked_body_is_refused_as_soon_as_it_passes_the_limit(tmp_path):
    with stub_backend(tmp_path, http=HttpLimits(max_rig_body=1 * MIB, max_body=4 * MIB)) as backend:
        sock = connect(backend)
        sock.sendall(head(backend, extra="Transfer-Encoding: chunked\r\n"))
        piece, sent = b"x" * 65536, 0
        while sent < 256 * MIB and not select.select([sock], [], [], 0)[0]:
            sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            sent += len(piece)
        status, body = answer(sock)
        assert status == 413 and "1,048,576 bytes" in json.loads(body)["error"]
        assert sent < 64 * MIB, sent  # answered while the body still came, not after 256 MiB
        # A declared length past the limit is refused before anything is read.
        sock = connect(backend)
        sock.sendall(head(backend, extra=f"Content-Length: {600 * MIB}\r\n"))
        assert answer(sock)[0] == 413
        # Whole meshes have the larger limit: 2 MiB of them is read (and is no JSON).
        sock = connect(backend)
        sock.sendall(head(backend, "/v1/jobs/bind", f"Content-Length: {2 * MIB}\r\n") + b"x" * (2 * MIB))
        assert answer(sock)[0] == 422
        assert call(backend, "GET", "/v1/jobs")[1] == []


def test_a_body_of_too_many_json_values_is_refused_unparsed(tmp_path, monkeypatch):
    parsed = []
    real_loads = json.loads

    def loads(text, **options):
        if b'"rig"' in (text if isinstance(text, bytes) else text.encode()):  # a request, not an answer
            parsed.append(threading.current_thread().name)
        return real_loads(text, **options)

    monkeypatch.setattr(http_limits.json, "loads", loads)
    with stub_backend(tmp_path, http=HttpLimits(max_json_values=10_000)) as backend:
        body = {**generate_to_json(small_rig(), GenerateRequest("a walk", frames=8)), "junk": [0] * 50_000}
        status, answer_ = call(backend, "POST", "/v1/jobs/generate", body)
        assert status == 413 and "10,000 JSON values" in answer_["error"]
        assert parsed == []
        small = generate_to_json(small_rig(), GenerateRequest("a walk", frames=8))
        assert call(backend, "POST", "/v1/jobs/generate", small)[0] == 202
    # The accepted body was parsed on a worker thread, not on the event loop's.
    assert len(parsed) == 1 and parsed[0] != "kirin-backend-http"


def test_a_body_that_stops_arriving_times_out(tmp_path):
    with stub_backend(tmp_path, http=HttpLimits(body_timeout=0.5)) as backend:
        sock = connect(backend)
        sock.sendall(head(backend, extra="Content-Length: 1000\r\n") + b'{"prompt": ')
        status, body = answer(sock)
        assert status == 408 and "stopped arriving" in json.loads(body)["error"]
        assert closed_by_server(sock, 5.0)


# ----------------------------------------------------------------------------- connections
def test_silent_or_half_sent_heads_and_idle_connections_are_closed(tmp_path):
    limits = HttpLimits(header_timeout=0.5, keep_alive=0.5)
    with stub_backend(tmp_path, http=limits) as backend:
        silent, half, idle = connect(backend), connect(backend), connect(backend)
        half.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")  # never finished
        idle.sendall(f"GET /v1/health HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {backend.token}\r\n\r\n"
                     .encode())
        assert answer(idle)[0] == 200
        for sock in (silent, half, idle):
            assert closed_by_server(sock, 5.0)
        assert call(backend, "GET", "/v1/health")[0] == 200
        options = backend.server.config
        assert options.timeout_keep_alive == 0.5 and options.limit_concurrency is not None


def test_idle_sockets_past_the_limit_leave_room_for_a_client(tmp_path):
    with stub_backend(tmp_path, http=HttpLimits(max_connections=8, header_timeout=60)) as backend:
        idle = [connect(backend) for _ in range(40)]
        time.sleep(0.3)
        open_now = [c for c in backend.server.server_state.connections if not c.transport.is_closing()]
        assert len(open_now) <= 8
        assert BackendClient(backend.url, backend.token).health(timeout=10)["status"] == "ok"
        closed = sum(closed_by_server(sock, 0.05) for sock in idle)
        assert closed >= 40 - 8  # the oldest idle ones made room
        for sock in idle:
            sock.close()


def test_long_polls_leave_health_its_answer(tmp_path):
    with stub_backend(tmp_path, delay=30.0) as backend:
        client = BackendClient(backend.url, backend.token)
        job = client.generate(small_rig(), GenerateRequest("a walk", frames=8))
        answers = []
        polls = [threading.Thread(target=lambda: answers.append(client.status(job.id, wait=8).state))
                 for _ in range(45)]
        for poll in polls:
            poll.start()
        time.sleep(0.5)
        started = time.monotonic()
        assert client.health()["status"] == "ok"
        waited = time.monotonic() - started
        client.cancel(job.id)  # the long polls answer at once
        for poll in polls:
            poll.join(15)
        assert answers == ["cancelled"] * 45
        assert waited < 2.0, waited  # was 7.5 s: the polls held every worker thread
        job.cancel()


@pytest.mark.slow
def test_a_backend_with_128_open_files_answers_past_150_idle_sockets(tmp_path):
    url_file = tmp_path / "url.json"
    args = [sys.executable, "-m", "kirin.cli", "serve", "--device", "cpu", "--threads", "1",
            "--bank", "none", "--token-file", str(tmp_path / "token"), "--url-file", str(url_file)]
    server = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=THREADS_ENV,
                              preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128)))
    idle = []
    try:
        deadline = time.monotonic() + 60
        while not url_file.exists():
            assert time.monotonic() < deadline and server.poll() is None
            time.sleep(0.05)
        url = json.loads(url_file.read_text())["url"]
        client = BackendClient(url, (tmp_path / "token").read_text())
        parts = urllib.parse.urlsplit(url)
        idle = [socket.create_connection((parts.hostname, parts.port), timeout=10) for _ in range(150)]
        assert client.health(timeout=10)["pid"] == server.pid
        assert len(os.listdir(f"/proc/{server.pid}/fd")) < 128
        client.shutdown()
        assert server.wait(30) == 0
    finally:
        for sock in idle:
            sock.close()
        if server.poll() is None:
            server.kill()
            server.wait()
