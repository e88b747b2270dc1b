"""Soak the backend as the add-on runs it (issue 18): a `kirin serve` subprocess on 127.0.0.1 and the
standard-library client, under many clients, cancels, deletes, a stopped and a killed process, huge
bodies and idle sockets. Loopback only; bounded by --deadline; stops by itself.

1. baseline: the backend's RSS once its model is loaded, and its peak while one job runs alone;
2. the soak: --jobs generate jobs from --clients client threads; each job is, at random, waited for
   and fetched, cancelled (what Esc does: cancel + delete) or deleted mid-run. Meanwhile: a health
   monitor (every 50 ms), an RSS sampler, a chunked --body-mb body (one long JSON string: refused at
   the 512 MiB limit), a --array-mb JSON array (refused past the JSON value limit), --idle-sockets
   sockets opened and left silent; the backend is SIGSTOPped for --stop-s s then SIGCONTed, and at
   half the jobs SIGKILLed and a new one started (the add-on's "Generate again");
3. the report: every job's final state, lost jobs (accepted but never accounted for: must be 0),
   health latency p50/p99 outside the stop and restart windows (≤ 0.5 s), peak RSS against 1.5× the
   one-job baseline, what the big bodies got, and the jobs left on the backend (0: the client deletes
   what it fetched, cancelled or gave up on).

Run: .venv/bin/python benchmarks/bench_backend_soak.py [--jobs 200] [--clients 20] [--body-mb 600]
     [--array-mb 76] [--idle-sockets 150] [--stop-s 2] [--no-kill] [--deadline 900]
Exit status 1 when a criterion fails. tests/backend/test_backend_soak.py runs a small version.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import select
import signal
import socket
import sys
import threading
import time
import urllib.parse
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kirin.kirin_addon.backend.client import BackendClient
from kirin.kirin_addon.backend.process import BackendLaunch, BackendProcess, start_backend
from kirin.kirin_addon.backend.results import BackendError, BackendStopped, JobCancelledError
from kirin.kirin_addon.generate.request import GenerateRequest
from kirin.kirin_addon.library.families.build import build_creature

PROMPTS = ("a dog walking forward", "a dog trotting forward", "a dog dancing happily")  # the last: network
MIB = 1024 * 1024


@dataclass
class SoakOptions:
    jobs: int = 200
    clients: int = 20
    body_mb: int = 600
    array_mb: int = 76
    idle_sockets: int = 150
    stop_s: float = 2.0
    kill: bool = True
    deadline: float = 900.0
    seed: int = 0


@dataclass
class Window:
    """A time the backend was stopped or restarting: health there is not judged."""

    start: float
    end: float = float("inf")


@dataclass
class Soak:
    """What the soak's threads share: the backend now, the jobs' outcomes and the measurements."""

    options: SoakOptions
    process: BackendProcess
    ready: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    next_job: int = 0
    submitted: int = 0
    states: dict[int, str] = field(default_factory=dict)
    health: list[tuple[float, float]] = field(default_factory=list)  # (when, seconds; inf: failed)
    rss: list[float] = field(default_factory=list)
    windows: list[Window] = field(default_factory=list)
    bodies: dict[str, Any] = field(default_factory=dict)
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def client(self) -> BackendClient:
        return self.process.client


# ----------------------------------------------------------------------------- measurements
def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:  # the process is gone
        return None
    return None


def send_chunked(url: str, token: str, total: int, piece: bytes, opening: bytes = b"") -> dict[str, Any]:
    """POST `opening` then `piece` repeated up to `total` bytes as a chunked body, stopping as soon as
    an answer comes; the status, the bytes sent and the seconds it took."""
    parts = urllib.parse.urlsplit(url)
    started, sent = time.monotonic(), 0
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as sock:
        sock.sendall(f"POST /v1/jobs/generate HTTP/1.1\r\nHost: {parts.hostname}\r\nAuthorization: "
                     f"Bearer {token}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                     .encode())
        with contextlib.suppress(OSError):  # the backend may close once it answered
            for chunk in (opening,) if opening else ():
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent += len(chunk)
            while sent < total and not select.select([sock], [], [], 0)[0]:
                sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                sent += len(piece)
            if sent >= total:
                sock.sendall(b"0\r\n\r\n")
        sock.settimeout(60)
        try:
            head = sock.recv(65536)
            status = int(head.split(b" ", 2)[1]) if head else None
        except (OSError, IndexError, ValueError):
            status = None
    seconds = round(time.monotonic() - started, 2)
    return {"status": status, "sent_mb": round(sent / MIB, 1), "seconds": seconds}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


# ----------------------------------------------------------------------------- the backend
def launch() -> BackendProcess:
    extra = ["--bank", "none", "--job-ttl", "600"]
    process = start_backend(sys.executable, BackendLaunch(device="cpu", threads=1, extra_args=extra),
                            timeout=180, wait_model=True)
    return process


def one_job_peak(soak: Soak, rig) -> tuple[float, float]:
    """The backend's RSS at rest and its peak while the soak's largest job runs alone."""
    pid = soak.process.pid
    idle = rss_mb(pid) or 0.0
    job = soak.client.generate(rig, GenerateRequest(PROMPTS[2], frames=48, variants=2))
    peak = idle
    while not job.poll_once(wait=0.05).finished:
        peak = max(peak, rss_mb(pid) or 0.0)
    job.result()
    return idle, max(peak, rss_mb(pid) or 0.0)


# ----------------------------------------------------------------------------- the threads
def client_thread(soak: Soak, rig, rng: random.Random) -> None:
    """Take job numbers until there are none left; run each to a final state it can account for."""
    while not soak.done.is_set():
        with soak.lock:
            if soak.next_job >= soak.options.jobs:
                return
            number, soak.next_job = soak.next_job, soak.next_job + 1
        soak.states[number] = run_job(soak, rig, rng)


def run_job(soak: Soak, rig, rng: random.Random) -> str:
    request = GenerateRequest(rng.choice(PROMPTS), frames=rng.randint(16, 48), variants=rng.randint(1, 2),
                              seed=rng.randint(0, 1000))
    fate = rng.choices(("fetch", "cancel", "delete"), (2, 1, 1))[0]
    while True:  # submitting: a backend that is restarting is waited for
        soak.ready.wait(60)
        try:
            job = soak.client.generate(rig, request)
            break
        except BackendStopped:
            time.sleep(0.1)
        except BackendError as exc:
            return f"refused: {exc.status}"
    with soak.lock:
        soak.submitted += 1
    try:
        if fate == "fetch":
            job.wait(timeout=300, interval=0.5)
            return "fetched"
        time.sleep(rng.uniform(0.0, 0.5))
        if fate == "cancel":
            job.cancel()
            return "cancelled"
        soak.client.delete(job.id)
        return "deleted"
    except JobCancelledError:
        return "cancelled"
    except BackendStopped:
        return "backend stopped"
    except BackendError as exc:
        if exc.status == 404 and job.client is not soak.client:
            return "backend stopped"  # a new backend on the old one's port does not know it
        if exc.status == 404:
            return "lost"  # accepted, then gone without this client deleting it
        return f"given up: {exc.status}"


def monitor(soak: Soak) -> None:
    """Health every 50 ms and the backend's RSS, until the soak is done."""
    while not soak.done.is_set():
        client, pid = soak.client, soak.process.pid
        started = time.monotonic()
        try:
            client.health(timeout=10)
            soak.health.append((started, time.monotonic() - started))
        except BackendError:
            soak.health.append((started, float("inf")))
        soak.rss.append(rss_mb(pid) or 0.0)
        time.sleep(0.05)


def attacks(soak: Soak) -> None:
    """The big bodies and the idle sockets, one after the other, while the jobs run."""
    options, client = soak.options, soak.client
    parts = urllib.parse.urlsplit(client.url)
    idle = []
    with contextlib.suppress(OSError):
        for _ in range(options.idle_sockets):
            idle.append(socket.create_connection((parts.hostname, parts.port), timeout=10))
    soak.bodies["idle_sockets_opened"] = len(idle)
    soak.bodies["string_body"] = send_chunked(client.url, client.token, options.body_mb * MIB, b"x" * 65536,
                                              b'{"prompt": "')
    soak.bodies["array_body"] = send_chunked(client.url, client.token, options.array_mb * MIB,
                                             b"0," * 32768, b'{"prompt": "a", "junk": [')
    time.sleep(1.0)
    for sock in idle:
        sock.close()


def interrupt(soak: Soak, rig) -> None:
    """SIGSTOP then SIGCONT at a quarter of the jobs; SIGKILL and a new backend at half."""
    options = soak.options

    def wait_for(count: int) -> bool:
        while soak.submitted < count and not soak.done.is_set():
            time.sleep(0.05)
        return not soak.done.is_set()

    if options.stop_s > 0 and wait_for(options.jobs // 4):
        window = Window(time.monotonic())
        soak.windows.append(window)
        os.kill(soak.process.pid, signal.SIGSTOP)
        time.sleep(options.stop_s)
        os.kill(soak.process.pid, signal.SIGCONT)
        window.end = time.monotonic() + 1.0  # the answers it held come out first
    if options.kill and wait_for(options.jobs // 2):
        window = Window(time.monotonic())
        soak.windows.append(window)
        soak.ready.clear()
        os.kill(soak.process.pid, signal.SIGKILL)
        soak.process.popen.wait(30)
        old = soak.process
        soak.process = launch()
        old.stop(timeout=1.0)  # its folder
        soak.ready.set()
        window.end = time.monotonic() + 0.5


# ----------------------------------------------------------------------------- the run
def run_soak(options: SoakOptions) -> dict[str, Any]:
    """The soak's report (see the module's description)."""
    rig = build_creature("quadruped", 3).rig
    soak = Soak(options, launch())
    soak.ready.set()
    started = time.monotonic()
    try:
        idle, one_job = one_job_peak(soak, rig)
        rng = random.Random(options.seed)
        workers = [threading.Thread(target=client_thread, args=(soak, rig, random.Random(rng.random())),
                                    daemon=True) for _ in range(options.clients)]
        helpers = [threading.Thread(target=f, args=a, daemon=True)
                   for f, a in ((monitor, (soak,)), (attacks, (soak,)), (interrupt, (soak, rig)))]
        for thread in helpers + workers:
            thread.start()
        for thread in workers + helpers[1:]:
            thread.join(max(options.deadline - (time.monotonic() - started), 1.0))
        time.sleep(1.0)  # health once more, after it all
        soak.done.set()
        helpers[0].join(15)
        left = len(soak.client.jobs())
    finally:
        soak.done.set()
        soak.process.stop()
    return report(soak, idle, one_job, left, time.monotonic() - started)


def report(soak: Soak, idle: float, one_job: float, left: int, seconds: float) -> dict[str, Any]:
    judged = [s for t, s in soak.health if not any(w.start <= t <= w.end for w in soak.windows)]
    states = {n: soak.states.get(n, "lost") for n in range(soak.options.jobs)}
    kinds = Counter(states.values())
    peak = max(soak.rss, default=0.0)
    result = {
        "options": asdict(soak.options),
        "seconds": round(seconds, 1),
        "jobs": dict(kinds),
        "lost": kinds.get("lost", 0),
        "jobs_left_on_backend": left,
        "health": {"samples": len(judged), "failed": sum(s == float("inf") for s in judged),
                   "p50_s": round(percentile(judged, 0.5), 4), "p99_s": round(percentile(judged, 0.99), 4)},
        "rss_mb": {"idle": round(idle, 1), "one_job_peak": round(one_job, 1), "peak": round(peak, 1),
                   "budget": round(1.5 * one_job, 1)},
        "bodies": soak.bodies,
        "final_states": states,
    }
    result["checks"] = {
        "no job lost": result["lost"] == 0,
        "health p99 <= 0.5 s": result["health"]["p99_s"] <= 0.5 and result["health"]["failed"] == 0,
        "peak RSS <= 1.5x one job": peak <= 1.5 * one_job,
        "big bodies refused": all((soak.bodies.get(k) or {}).get("status") in (408, 413, 422)
                                  for k in ("string_body", "array_body")),
        "no job left behind": left == 0,
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    defaults = SoakOptions()
    for name in ("jobs", "clients", "body_mb", "array_mb", "idle_sockets", "seed"):
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=getattr(defaults, name))
    parser.add_argument("--stop-s", type=float, default=defaults.stop_s)
    parser.add_argument("--deadline", type=float, default=defaults.deadline)
    parser.add_argument("--no-kill", action="store_true", help="do not SIGKILL the backend mid-run")
    parser.add_argument("--states", action="store_true", help="print every job's final state")
    args = parser.parse_args()
    options = SoakOptions(args.jobs, args.clients, args.body_mb, args.array_mb, args.idle_sockets,
                          args.stop_s, not args.no_kill, args.deadline, args.seed)
    result = run_soak(options)
    states = result.pop("final_states")
    print(json.dumps(result, indent=2))
    if args.states:
        print(json.dumps(states))
    print("\n".join(f"{'PASS' if ok else 'FAIL'}  {name}" for name, ok in result["checks"].items()))
    sys.exit(0 if all(result["checks"].values()) else 1)


if __name__ == "__main__":
    main()
