"""`kirin serve`: the local inference backend of Generate Motion (FastAPI + uvicorn).

Runs in the project's environment (torch, onnxruntime), never in Blender's Python. It binds to
127.0.0.1 on a free port by default, writes a random per-session token to a 0600 file and refuses
every request without it (401) or with a wrong one (403). One worker thread runs the model, loaded
once and kept warm (jobs.py); the HTTP side only checks requests and hands out status and results,
so health and progress answer while a job samples. The OpenAPI schema is at /openapi.json (with the
token too).

Endpoints (all JSON, under /v1): GET health, GET version, POST jobs/generate, jobs/transfer,
jobs/bind and jobs/extract (a driving video → motion on the rig; the video is read from a path on the
backend's machine) (202 + job status), GET jobs, GET jobs/{id}, GET jobs/{id}/result (kept until
deleted or expired), POST jobs/{id}/cancel, DELETE jobs/{id}, POST shutdown; Pose Space, synchronous
(the answer is the result, no job): POST pose/project (a dragged pose projected onto plausible poses),
pose/sample (plausible poses) and pose/walk (in-betweens through the pose space). Errors are
`{"error": message, "status": code}` with a 4xx for anything a client did wrong.

It reads only what a request uploads and files under the folders it was started to allow
(`--allow-dir`; none by default), each no larger than its kind's cap (files.py). Finished jobs
expire (`--job-ttl`). Bodies, request heads, idle connections and the number of connections are
bounded (http_limits.py).
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import ipaddress
import json
import logging
import os
import secrets
import socket
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.body_limit import MAX_BODY_SIZE_SCOPE_KEY

from ...kirin_addon.backend.protocol import PROTOCOL_VERSION
from ...kirin_addon.video.mediapipe_pose import find_mediapipe_python
from .bind import BindingService
from .files import AllowedFiles, FileLimits
from .generate import GenerationService, cuda_providers
from .http_limits import BodyGuard, HttpLimits, uvicorn_options
from .jobs import DEFAULT_TTL, JobError, JobQueue
from .pose import PoseService
from .routes_bind import bind_router
from .routes_generate import generate_router
from .routes_jobs import jobs_router
from .routes_pose import pose_router
from .routes_video import extract_router
from .video import ExtractService

log = logging.getLogger("kirin.backend")

LOOPBACK = ("127.0.0.1", "::1", "localhost")


# ----------------------------------------------------------------------------- the app
def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message, "status": status}, status_code=status, headers=headers)


class TokenAuth:
    """ASGI middleware: every HTTP request (the schema and unknown paths too) needs the token."""

    def __init__(self, app: Any, token: str):
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        value = headers.get(b"authorization", b"")
        scheme, _, given = value.partition(b" ")
        if not given.strip():  # no header, or "Bearer" with nothing after it
            response = _error(
                401,
                "Missing token: send 'Authorization: Bearer <token>' (the token is in the "
                "file given to kirin serve --token-file).",
                {"WWW-Authenticate": "Bearer"},
            )
        elif scheme.lower() != b"bearer" or not secrets.compare_digest(given.strip(), self.token):
            response = _error(
                403,
                "Wrong token: this backend was started with another one (a new session "
                "writes a new token file).",
            )
        else:
            await self.app(scope, receive, send)
            return
        await response(scope, receive, send)


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for error in exc.errors()[:5]:
        location = ".".join(str(p) for p in error.get("loc", ()) if p not in ("body", "query", "path"))
        message = error.get("msg", "invalid")
        value = error.get("input")
        shown = f" (got {value!r})" if isinstance(value, int | float | bool) and len(repr(value)) < 40 else ""
        parts.append(f"{location or 'request'}: {message}{shown}")
    more = len(exc.errors()) - 5
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def create_app(backend: Backend) -> FastAPI:
    """The HTTP app of `backend`: the token check, errors as `{"error", "status"}`, and one router per
    feature (routes_<feature>.py)."""

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        # Runs inside uvicorn's graceful shutdown (also after SIGTERM, which re-raises the signal
        # once serve() returns: nothing after it would run).
        backend.cleanup()

    app = FastAPI(
        title="Kirin backend",
        version=str(PROTOCOL_VERSION),
        lifespan=lifespan,
        description=__doc__,
        docs_url=None,
        redoc_url=None,
        max_body_size=backend.http.max_body,  # counted as the bytes arrive, chunked bodies too
    )
    app.add_middleware(BodyGuard, limits=backend.http)
    app.add_middleware(TokenAuth, token=backend.token)  # the outermost: nothing is read without it
    _add_error_handlers(app, backend.http)
    queue, rig_body = backend.queue, backend.http.max_rig_body
    app.include_router(jobs_router(queue, backend.health, backend.request_exit), max_body_size=rig_body)
    app.include_router(generate_router(backend.service, queue), max_body_size=rig_body)
    app.include_router(bind_router(backend.binding, queue))  # whole meshes: the app's max_body
    app.include_router(extract_router(backend.extract, queue), max_body_size=rig_body)
    app.include_router(pose_router(backend.pose), max_body_size=rig_body)

    original = app.openapi

    def openapi() -> dict[str, Any]:  # say in the schema how to authenticate
        schema = original()
        bearer = {"token": {"type": "http", "scheme": "bearer"}}
        schema.setdefault("components", {})["securitySchemes"] = bearer
        schema["security"] = [{"token": []}]
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def _add_error_handlers(app: FastAPI, limits: HttpLimits) -> None:
    """Every error as `{"error": message, "status": code}`: a 4xx for what a client did wrong."""

    @app.exception_handler(JobError)
    async def job_error(_: Request, exc: JobError) -> JSONResponse:
        return _error(exc.status, exc.message)

    @app.exception_handler(ValueError)  # ProtocolError, RigError: user-facing
    async def value_error(_: Request, exc: ValueError) -> JSONResponse:
        return _error(422, str(exc) or "Invalid request.")

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, _validation_message(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = str(exc.detail)
        if exc.status_code == 413 and message == "Content Too Large":  # from Starlette's body limit
            limit = request.scope.get(MAX_BODY_SIZE_SCOPE_KEY, limits.max_body)  # the route's own
            message = f"The request's body is more than {limit:,} bytes, the most this request may be."
        return _error(exc.status_code, message, exc.headers)

    @app.exception_handler(Exception)
    async def internal_error(_: Request, exc: Exception) -> JSONResponse:
        log.exception("request failed")
        # The exception's text stays in the log: it may quote anything, a file's contents too.
        return _error(500, f"Internal error in the backend ({type(exc).__name__}); its log has the details.")


# ----------------------------------------------------------------------------- the process
def default_token_file() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid()) if hasattr(os, "getuid") else "user"
    folder = Path(base) / f"kirin-{user}"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    if hasattr(os, "getuid"):  # in a shared temp folder, someone else may have made it first
        info = folder.stat()
        if info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise ValueError(
                f"Refusing to write the backend token into {folder}: it is not private to this user. "
                "Remove it, or give --token-file in a private folder."
            )
    return folder / f"backend-{os.getpid()}.token"


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read (0600), atomically (a reader never sees half a token)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(handle, text.encode())
    finally:
        os.close(handle)
    os.chmod(temporary, 0o600)  # in case a stale file kept wider bits
    os.replace(temporary, path)


def _bind(host: str, port: int) -> socket.socket:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6 and host in ("::", ""):
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise ValueError(f"Cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.listen(128)
    return sock


def _connect_host(host: str) -> str:
    """The host a client on this machine connects to (a wildcard bind is reached on loopback)."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    try:
        if ipaddress.ip_address(host).version == 6:
            return f"[{host}]"
    except ValueError:
        pass
    return host


def _process_alive(pid: int) -> bool:
    if os.name == "nt":  # os.kill(pid, 0) would send CTRL_C_EVENT on Windows
        import ctypes

        handle = ctypes.windll.kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return False
        code = ctypes.c_ulong()
        ctypes.windll.kernel32.GetExitCodeProcess(handle, ctypes.byref(code))
        ctypes.windll.kernel32.CloseHandle(handle)
        return code.value == 259  # STILL_ACTIVE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_started: Callable[[], None]):
        super().__init__(config)
        self._on_started = on_started

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self._on_started()


@dataclass
class ServeConfig:
    """Where and how a backend serves: its address (port 0: a free one), its token (None: a new random
    one) and the private files it writes (token file None: a per-user default), its queue's size and
    how long finished jobs are kept, the folders request paths may name and the caps on those files,
    the HTTP side's limits, the process whose end ends it (the add-on's Blender), uvicorn's log level."""

    host: str = "127.0.0.1"
    port: int = 0
    token: str | None = None
    token_file: str | Path | None = None
    url_file: str | Path | None = None
    max_jobs: int = 256
    job_ttl: float = DEFAULT_TTL
    allow_dirs: tuple[str | Path, ...] = ()
    file_limits: FileLimits = field(default_factory=FileLimits)
    http: HttpLimits = field(default_factory=HttpLimits)
    parent_pid: int | None = None
    log_level: str = "warning"


class Backend:
    """One backend: the services, their job queue and the HTTP server on a bound socket."""

    def __init__(
        self, service: GenerationService, config: ServeConfig | None = None, pose: PoseService | None = None
    ):
        config = config or ServeConfig()
        self.files = AllowedFiles(config.allow_dirs, config.file_limits)
        self.http = config.http
        self.service = service
        self.service.files = self.files
        self.binding = BindingService()
        self.extract = ExtractService(self.files)
        # Pose Space embeds joint names with the motion model's text encoder (none while it loads).
        self.pose = pose or PoseService()
        if self.pose.encoder is None:
            self.pose.encoder = self._text_encoder
        self.token = config.token or secrets.token_urlsafe(32)
        self.queue = JobQueue(config.max_jobs, setup=service.load, ttl=config.job_ttl)
        self.started = time.time()
        self.host = config.host
        self.sock = _bind(config.host, config.port)
        self.port = int(self.sock.getsockname()[1])
        self.url = f"http://{_connect_host(config.host)}:{self.port}"
        self.token_file = Path(config.token_file) if config.token_file else default_token_file()
        self.url_file = Path(config.url_file) if config.url_file else None
        self.parent_pid = config.parent_pid
        self.ready = threading.Event()
        self._cleaned = False
        write_private(self.token_file, self.token)
        uvicorn_config = uvicorn.Config(
            create_app(self),
            log_level=config.log_level,
            access_log=False,
            log_config=None,
            lifespan="on",
            timeout_graceful_shutdown=5,
            **uvicorn_options(config.http),
        )
        self.server = _Server(uvicorn_config, self._started)
        self._thread: threading.Thread | None = None

    def health(self) -> dict[str, Any]:
        """GET health: `status` "loading" until the model is loaded, then "ok" (or "error")."""
        queue, service = self.queue, self.service
        status = "error" if queue.setup_error else ("ok" if service.model is not None else "loading")
        return {
            "status": status,
            "error": queue.setup_error,
            **service.info(),
            "queue_length": queue.queue_length,
            "running": queue.running,
            "jobs": queue.counts(),
            "job_ttl": queue.ttl,
            "pid": os.getpid(),
            "uptime": time.time() - self.started,
            "protocol": PROTOCOL_VERSION,
            "pose": self.pose.info(),
            "mediapipe": find_mediapipe_python() is not None,
        }

    def _text_encoder(self) -> Any:
        model = self.service.model
        return None if model is None else getattr(model, "text_encoder", None)

    def _started(self) -> None:
        if self.url_file is not None:  # written last: its presence means "listening"
            write_private(
                self.url_file,
                json.dumps({"url": self.url, "pid": os.getpid(), "token_file": str(self.token_file)}),
            )
        if self.parent_pid:
            threading.Thread(target=self._watch_parent, name="kirin-parent-watch", daemon=True).start()
        self.ready.set()

    def _watch_parent(self) -> None:
        # The add-on stops its backend when Blender quits; this covers a Blender that crashed.
        while not self.server.should_exit:
            if not _process_alive(int(self.parent_pid or 0)):
                log.warning("parent process %s is gone: shutting down", self.parent_pid)
                self.request_exit()
                return
            time.sleep(1.0)

    def serve(self) -> None:
        """Serve until shutdown (endpoint, SIGINT/SIGTERM or the parent's end). Blocking."""
        self.queue.start()
        try:
            self.server.run(sockets=[self.sock])
        finally:
            self.cleanup()

    def start_in_thread(self, timeout: float = 30.0) -> Backend:
        """Serve on a thread (tests, benchmarks); returns once it listens."""
        self._thread = threading.Thread(target=self.serve, name="kirin-backend-http", daemon=True)
        self._thread.start()
        if not self.ready.wait(timeout):
            raise RuntimeError("The backend did not start in time.")
        return self

    def request_exit(self) -> None:
        # Jobs first: a running job stops at its next step and long polls answer before the HTTP
        # side drains its connections.
        self.queue.close()
        self.server.should_exit = True

    def stop(self, timeout: float = 15.0) -> None:
        self.request_exit()
        if self._thread is not None:
            self._thread.join(timeout)

    def cleanup(self) -> None:
        """Cancel every job, stop the worker, remove this session's token and URL files."""
        if self._cleaned:
            return
        self._cleaned = True
        self.queue.stop()
        for path, mine in ((self.token_file, self.token), (self.url_file, self.url)):
            if path is None:
                continue
            with contextlib.suppress(OSError):
                if mine in path.read_text():  # another backend may have taken the path over since
                    path.unlink()
        with contextlib.suppress(OSError):
            self.sock.close()


# ----------------------------------------------------------------------------- command line
def serve(args: argparse.Namespace) -> int:
    """`kirin serve` (arguments: cli/main.py)."""
    logging.basicConfig(level=args.log_level.upper(), format="kirin serve: %(levelname)s %(message)s")
    if args.device == "cuda" and "CUDAExecutionProvider" not in cuda_providers():
        raise ValueError(
            "--device cuda: onnxruntime has no CUDA provider here (install onnxruntime-gpu "
            "with a matching CUDA), or use --device cpu/auto."
        )
    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port must be 0..65535, got {args.port}")
    if args.threads < 0 or args.max_jobs < 1:
        raise ValueError("--threads must be 0 or more and --max-jobs 1 or more")
    if not args.job_ttl > 0 or args.max_connections < 1:
        raise ValueError("--job-ttl must be more than 0 seconds and --max-connections 1 or more")
    service = GenerationService(args.model, device=args.device, bank=args.bank, threads=args.threads)
    if not (service.model_dir / "model.json").is_file():  # fail now rather than on the first job
        raise ValueError(f"No motion model at {service.model_dir} (model.json missing)")
    pose = PoseService(args.pose_model)  # missing: Pose Space answers 503, the rest works
    allowed = tuple(args.allow_dir or ())
    for folder in allowed:
        if not os.path.isdir(os.path.expanduser(folder)):
            raise ValueError(f"--allow-dir {folder}: no such folder")
    config = ServeConfig(host=args.host, port=args.port, token_file=args.token_file, url_file=args.url_file,
                         max_jobs=args.max_jobs, job_ttl=args.job_ttl, allow_dirs=allowed,
                         http=HttpLimits(max_connections=args.max_connections),
                         parent_pid=args.parent_pid, log_level=args.log_level)
    backend = Backend(service, config, pose=pose)
    if args.host not in LOOPBACK:
        print(
            f"kirin serve: listening on {args.host}, beyond this machine: plain HTTP, the token is the "
            "only guard; use a trusted network or an SSH tunnel. Whoever has the token may have the "
            f"backend read files under: {', '.join(backend.files.folders) or 'no folder'}.",
            file=sys.stderr,
        )
    print(f"Kirin backend listening on {backend.url} (token in {backend.token_file})", flush=True)
    backend.serve()
    return 0
