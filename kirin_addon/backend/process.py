"""The backend process this add-on starts: launch `kirin serve` in the backend's environment with a
private token file, reuse it while it answers, stop it when Blender quits (standard library only).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .client import STOPPED, BackendClient
from .protocol import PROTOCOL_VERSION
from .results import BackendError, BackendStopped

SERVE_MODULE = "kirin.cli"  # `python -m SERVE_MODULE serve ...` in the backend's environment


# ----------------------------------------------------------------------------- the process
class BackendProcess:
    """A backend this add-on started: its process, address, token and log."""

    def __init__(self, popen: subprocess.Popen, url: str, token: str, folder: Path, key: tuple = ()):
        self.popen = popen
        self.url = url
        self.token = token
        self.folder = folder  # private (0700): token file, URL file, log
        self.key = key
        self.allow_dirs: tuple[str, ...] | None = None  # the folders it may read request files from
        self.client = BackendClient(url, token, process=self)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None

    def exit_description(self) -> str:
        code = self.popen.poll()
        if code is None:
            return "still running"
        if code < 0:
            return f"killed by signal {-code}"
        return f"exit code {code}"

    @property
    def log_file(self) -> Path:
        return self.folder / "backend.log"

    def log_excerpt(self, chars: int = 1500) -> str:
        try:
            text = self.log_file.read_text(errors="replace")[-chars:].strip()
        except OSError:
            return ""
        return f"\nBackend log ({self.log_file}):\n{text}" if text else ""

    def stop(self, timeout: float = 10.0) -> None:
        """Graceful shutdown, then terminate, then kill; removes the private folder."""
        if self.alive:
            with contextlib.suppress(BackendError):
                self.client.shutdown()
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.terminate()
                try:
                    self.popen.wait(5.0)
                except subprocess.TimeoutExpired:
                    self.popen.kill()
                    self.popen.wait(5.0)
        else:
            self.popen.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def _child_env(env: dict[str, str] | None) -> dict[str, str]:
    if env is not None:
        return dict(env)
    out = dict(os.environ)
    # Blender's own Python settings must not leak into another interpreter.
    for name in ("PYTHONHOME", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONEXECUTABLE"):
        out.pop(name, None)
    out["PYTHONUNBUFFERED"] = "1"
    return out


def local_folders() -> tuple[str, ...]:
    """The folders a backend this add-on starts may read request files from (videos, keypoints, mask
    folders): the user's home and the temporary folder (where Blender and tools leave renders)."""
    folders = (Path.home(), Path(tempfile.gettempdir()))
    return tuple(dict.fromkeys(str(folder.resolve()) for folder in folders))


@dataclass(frozen=True)
class BackendLaunch:
    """How to run `kirin serve`: the device and CPU threads it uses, where it listens (port 0: a free
    one), the folders it may read request files from (None: `local_folders()`), more arguments for
    it, and the command (None: `python -m SERVE_MODULE` of the backend's Python, or e.g. the `kirin`
    entry point), environment (None: this one, cleaned of Blender's Python settings) and folder it
    runs in."""

    device: str = "auto"
    host: str = "127.0.0.1"
    port: int = 0
    threads: int = 0
    allow_dirs: Sequence[str] | None = None
    extra_args: Sequence[str] = ()
    command: Sequence[str] | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None

    def arguments(
        self, python_executable: str | os.PathLike | None, token_file: Path, url_file: Path
    ) -> list[str]:
        """The command line: serve on the chosen address and device, writing the token and URL
        files, watching this process (the backend ends itself when this process ends)."""
        python = str(python_executable or sys.executable)
        base = list(self.command) if self.command else [python, "-m", SERVE_MODULE]
        args = base + [
            "serve",
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--token-file",
            str(token_file),
            "--url-file",
            str(url_file),
            "--device",
            self.device,
            "--parent-pid",
            str(os.getpid()),
        ]
        if self.threads:
            args += ["--threads", str(self.threads)]
        for folder in local_folders() if self.allow_dirs is None else self.allow_dirs:
            args += ["--allow-dir", str(folder)]
        return args + list(self.extra_args)


def start_backend(
    python_executable: str | os.PathLike | None = None,
    launch: BackendLaunch | None = None,
    *,
    timeout: float = 120.0,
    wait_model: bool = False,
) -> BackendProcess:
    """Launch `python -m kirin.cli serve` (or `launch.command`) with a private token
    file, and wait until it answers (and, with `wait_model`, until its model is loaded). The backend
    ends itself when this process ends."""
    launch = launch or BackendLaunch()
    folder = Path(tempfile.mkdtemp(prefix="kirin-backend-"))  # 0700
    token_file, url_file, log_file = folder / "token", folder / "url.json", folder / "backend.log"
    args = launch.arguments(python_executable, token_file, url_file)
    flags = getattr(subprocess, "CREATE_NO_WINDOW", 0) if os.name == "nt" else 0
    with open(log_file, "wb") as log:
        try:
            popen = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=_child_env(launch.env),
                cwd=launch.cwd,
                creationflags=flags,
            )
        except OSError as exc:
            shutil.rmtree(folder, ignore_errors=True)
            raise BackendError(
                f"Cannot start the Kirin backend with {args[0]}: {exc.strerror or exc}. "
                "Set the backend's Python in the add-on preferences."
            ) from None
    process = BackendProcess(popen, "", "", folder)
    deadline = time.monotonic() + timeout
    try:
        _connect(process, token_file, url_file, deadline, timeout)
        if wait_model:
            process.client.wait_ready(max(deadline - time.monotonic(), 1.0))
    except BaseException:
        _discard(process)
        raise
    return process


def _connect(
    process: BackendProcess, token_file: Path, url_file: Path, deadline: float, timeout: float
) -> None:
    """Wait for the started backend to listen (its URL file), then connect to it and check that it
    speaks this add-on's protocol."""
    while not url_file.exists():  # written once the server listens (after the token file)
        if not process.alive:
            raise BackendStopped(
                f"{STOPPED} while starting ({process.exit_description()}).{process.log_excerpt()}"
            )
        if time.monotonic() > deadline:
            raise BackendError(
                f"The Kirin backend did not start within {timeout:.0f} s.{process.log_excerpt()}"
            )
        time.sleep(0.05)
    process.url = json.loads(url_file.read_text())["url"]
    process.token = token_file.read_text().strip()
    process.client = BackendClient(process.url, process.token, process=process)
    health = process.client.health()
    if health.get("protocol") != PROTOCOL_VERSION:
        raise BackendError(
            f"The Kirin backend speaks protocol {health.get('protocol')}; this add-on "
            f"speaks {PROTOCOL_VERSION}: update one of them."
        )


def _discard(process: BackendProcess) -> None:
    if process.alive:
        process.popen.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.popen.wait(5.0)
    shutil.rmtree(process.folder, ignore_errors=True)


# ----------------------------------------------------------------------------- one backend per add-on
_current: BackendProcess | None = None
_current_lock = threading.Lock()
_atexit_registered = False


def ensure_backend(
    python_executable: str | os.PathLike | None = None,
    *,
    url: str | None = None,
    token: str | None = None,
    token_file: str | os.PathLike | None = None,
    device: str = "auto",
    timeout: float = 120.0,
    **options: Any,
) -> BackendClient:
    """A client of a working backend. With `url` (a running backend, maybe a GPU box elsewhere) it
    only checks that one answers; otherwise it reuses the backend this process started if it is
    alive and answers, else starts a new one (stopped when this process exits, or by `stop_backend`);
    `options` are BackendLaunch's other fields."""
    global _current, _atexit_registered
    if url:
        if token is None:
            if token_file is None:
                raise BackendError("Connecting to a running Kirin backend needs its token (or token file).")
            try:
                token = Path(token_file).read_text().strip()
            except OSError as exc:
                raise BackendError(
                    f"Cannot read the backend token file {token_file}: {exc.strerror}"
                ) from None
        client = BackendClient(url, token)
        client.health()
        return client
    wanted = options.pop("allow_dirs", None)
    key = (str(python_executable or sys.executable), device, tuple(sorted(options.items())))
    with _current_lock:
        if _current is not None:
            held = _current.allow_dirs
            if _current.alive and _current.key == key and _covers(held, wanted):
                try:
                    _current.client.health()
                    return _current.client
                except BackendError:
                    pass
            if wanted is not None and held is not None:  # the new one reads what the old one did, and more
                wanted = tuple(dict.fromkeys([*held, *wanted]))
            _current.stop(timeout=5.0)
            _current = None
        launch = BackendLaunch(device=device, allow_dirs=wanted, **options)
        _current = start_backend(python_executable, launch, timeout=timeout)
        _current.key = key
        _current.allow_dirs = local_folders() if wanted is None else tuple(wanted)
        if not _atexit_registered:
            atexit.register(stop_backend)
            _atexit_registered = True
        return _current.client


def _covers(held: tuple[str, ...] | None, wanted: tuple[str, ...] | None) -> bool:
    """Whether a backend allowed to read `held` (None: `local_folders()`) may read every folder of
    `wanted` (None: the same default)."""
    held = local_folders() if held is None else held
    wanted = local_folders() if wanted is None else wanted
    return all(any(_inside(w, h) for h in held) for w in wanted)


def _inside(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # another drive (Windows), or a relative path beside an absolute one
        return False


def current_backend() -> BackendProcess | None:
    return _current


def stop_backend() -> None:
    """Stop the backend this process started (Blender quitting, the add-on unregistering)."""
    global _current
    with _current_lock:
        if _current is not None:
            _current.stop()
            _current = None
