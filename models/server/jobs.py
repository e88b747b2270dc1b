"""The backend's job machinery: a FIFO queue served by one worker thread (one model, kept warm),
progress, cancellation, and results kept until deleted or expired. No HTTP and no model here, so it
is tested directly (BLENDER_NOTES.md, Background mode).

A job's work is a callable `run(report)`; `report(fraction, message)` publishes progress and raises
`JobCancelled` once the job is cancelled, which is how a cancel stops a running model between two
steps. A cancelled or failed job keeps only its state and message: its input and any partial result
are dropped at once, so a cancel leaves nothing behind. A finished job (done, failed or cancelled)
expires `ttl` seconds after it finished; a result may be fetched again until then, so a dropped
download does not lose it. The client deletes what it fetched, cancelled or gave up on.
"""

from __future__ import annotations

import itertools
import logging
import secrets
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

log = logging.getLogger("kirin.backend")


class JobState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in (JobState.DONE, JobState.FAILED, JobState.CANCELLED)


class JobCancelled(Exception):
    """Raised inside a job's work (by its progress report) once the job was cancelled."""


class JobError(Exception):
    """A request about a job that cannot be served; `status` is the HTTP status that fits."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.message = message
        self.status = status


class UserError(ValueError):
    """Work failed because of its input; the message is user-facing (GenerationError, RigError...)."""


Report = Callable[[float, str], None]
Work = Callable[[Report], Any]


@dataclass
class Job:
    id: str
    kind: str
    work: Work | None
    state: JobState = JobState.QUEUED
    progress: float = 0.0
    message: str = "queued"
    error: str | None = None
    result: Any = None
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    seq: int = 0  # submission order: the queue position is derived from it
    fetched: bool = False  # its result or error was sent once
    expires: float | None = None  # the queue's clock past which a finished job is forgotten

    @property
    def live(self) -> bool:
        """Whether the job counts toward the queue's limit: queued, running, or done and not fetched."""
        return not self.state.finished or (self.state is JobState.DONE and not self.fetched)

    def snapshot(self, position: int | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "state": self.state.value,
            "progress": round(float(self.progress), 4),
            "message": self.message,
            "error": self.error,
            "created": self.created,
            "started": self.started,
            "finished": self.finished,
            "has_result": self.state is JobState.DONE,
        }
        if position is not None:
            out["position"] = position
        return out


DEFAULT_TTL = 900.0  # seconds a finished job is kept


class JobQueue:
    """Jobs run one at a time, in submission order, on a worker thread.

    `max_jobs` bounds the live jobs (queued, running, done but not fetched): past it, `submit`
    refuses (HTTP 429) rather than let unfetched results pile up in memory; cancelled, failed and
    fetched jobs do not count. Every finished job expires `ttl` seconds after it finished, and at
    most `max_jobs` finished jobs that no longer count are held (the oldest go first). `setup` runs
    first on the worker (loading the model there keeps start-up responsive: health answers while it
    loads); if it raises, every job fails with its message.
    """

    def __init__(
        self,
        max_jobs: int = 256,
        setup: Callable[[], None] | None = None,
        ttl: float = DEFAULT_TTL,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.max_jobs = max_jobs
        self.ttl = ttl
        self._clock = clock  # when finished jobs expire (tests turn it by hand)
        self._setup = setup
        self._jobs: dict[str, Job] = {}
        self._pending: deque[Job] = deque()
        self._lock = threading.Condition()
        self._running: Job | None = None
        self._closed = False
        self._counter = itertools.count()
        self._thread: threading.Thread | None = None
        self.setup_error: str | None = None
        self.ready = threading.Event()  # set once setup finished (well or not)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._worker, name="kirin-backend-worker", daemon=True)
            self._thread.start()

    def close(self) -> None:
        """Refuse new jobs and cancel queued and running ones; returns at once."""
        with self._lock:
            self._closed = True
            while self._pending:
                self._finish_cancelled(self._pending.popleft(), "cancelled: the backend is shutting down")
            if self._running is not None:
                self._running.cancel.set()
            self._lock.notify_all()

    def stop(self, timeout: float = 10.0) -> None:
        """`close`, then wait for the worker to finish."""
        self.close()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def closed(self) -> bool:
        return self._closed

    # ------------------------------------------------------------------ requests
    def submit(self, work: Work, kind: str = "generate") -> dict[str, Any]:
        with self._lock:
            if self._closed:
                raise JobError("The backend is shutting down; start a new one.", 503)
            self._expire()
            live = sum(1 for job in self._jobs.values() if job.live)
            if live >= self.max_jobs:
                raise JobError(
                    f"The backend holds {live} jobs that are queued, running or waiting to be fetched "
                    f"(at most {self.max_jobs}): wait for some to finish and fetch or delete their "
                    "results.",
                    429,
                )
            job = Job(secrets.token_hex(8), kind, work, seq=next(self._counter))
            self._jobs[job.id] = job
            self._pending.append(job)
            self._lock.notify_all()
            return job.snapshot(len(self._pending) - 1)

    def _get(self, job_id: str) -> Job:
        self._expire()
        job = self._jobs.get(job_id)
        if job is None:
            raise JobError(
                f"Unknown job {job_id[:64]!r} (a job is removed when deleted, or {self.ttl:g} s after it "
                "finished).",
                404,
            )
        return job

    def _expire(self) -> None:
        """Forget finished jobs past their time, and the oldest finished jobs that no longer count
        while more than `max_jobs` of them are held (called with the lock held)."""
        now = self._clock()
        for job_id in [i for i, job in self._jobs.items() if job.expires is not None and job.expires <= now]:
            del self._jobs[job_id]
        idle = [job for job in self._jobs.values() if not job.live]
        if len(idle) > self.max_jobs:
            idle.sort(key=lambda job: job.expires or 0.0)
            for job in idle[: len(idle) - self.max_jobs]:
                del self._jobs[job.id]

    def status(self, job_id: str) -> dict[str, Any]:
        with self._lock:
            job = self._get(job_id)
            return job.snapshot(self._position(job))

    def _position(self, job: Job) -> int | None:
        """Jobs ahead of a queued job (None for any other)."""
        if job.state is not JobState.QUEUED:
            return None
        return sum(1 for other in self._pending if other.seq < job.seq)

    def wait(self, job_id: str, timeout: float) -> dict[str, Any]:
        """The job's status once it finished, or after `timeout` seconds (long polling: a client
        learns of the end at once instead of at its next poll)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            job = self._get(job_id)
            while not job.state.finished and (remaining := deadline - time.monotonic()) > 0:
                self._lock.wait(remaining)
            return self.status(job_id)

    def cancel(self, job_id: str) -> dict[str, Any]:
        """Cancel a queued job at once, a running one at its next progress report; finished jobs
        are left as they are."""
        with self._lock:
            job = self._get(job_id)
            if job.state is JobState.QUEUED:
                self._pending.remove(job)
                self._finish_cancelled(job, "cancelled")
            elif job.state is JobState.RUNNING:
                job.cancel.set()
                job.message = "cancelling"
            return job.snapshot()

    def delete(self, job_id: str) -> dict[str, Any]:
        """Cancel if needed and forget the job (and any result) now."""
        with self._lock:
            job = self._get(job_id)
            if not job.state.finished:
                self.cancel(job_id)
            del self._jobs[job_id]
            return job.snapshot()

    def take_result(self, job_id: str) -> Any:
        """The result of a done job (kept: it may be fetched again until deleted or expired, but no
        longer counts toward `max_jobs`); a failed job's error is raised; unfinished or cancelled
        jobs raise 409."""
        with self._lock:
            job = self._get(job_id)
            if job.state is JobState.DONE:
                job.fetched = True
                return job.result
            if job.state is JobState.FAILED:
                job.fetched = True
                raise JobError(job.error or "The job failed.", 422)
            if job.state is JobState.CANCELLED:
                raise JobError("The job was cancelled; it has no result.", 409)
            raise JobError(
                f"The job is {job.state.value} ({job.progress:.0%}); its result is not ready.", 409
            )

    def list(self) -> list[dict[str, Any]]:
        """Every job held, oldest first."""
        with self._lock:
            self._expire()
            jobs = sorted(self._jobs.values(), key=lambda job: job.seq)
            return [job.snapshot(self._position(job)) for job in jobs]

    def counts(self) -> dict[str, int]:
        with self._lock:
            self._expire()
            states = [job.state for job in self._jobs.values()]
            return {state.value: states.count(state) for state in JobState}

    @property
    def queue_length(self) -> int:
        return len(self._pending)

    @property
    def running(self) -> str | None:
        job = self._running
        return None if job is None else job.id

    # ------------------------------------------------------------------ worker
    def _finished(self, job: Job) -> None:
        job.finished = time.time()
        job.expires = self._clock() + self.ttl

    def _finish_cancelled(self, job: Job, message: str) -> None:
        job.state, job.message = JobState.CANCELLED, message
        self._finished(job)
        job.work, job.result = None, None  # nothing of a cancelled job stays behind
        self._lock.notify_all()  # wake long polls

    def _worker(self) -> None:
        if self._setup is not None:
            try:
                self._setup()
            except Exception as exc:  # noqa: BLE001 - any failure must reach the user as a job error
                log.error("backend setup failed:\n%s", traceback.format_exc())
                self.setup_error = str(exc) or type(exc).__name__
        self.ready.set()
        while True:
            with self._lock:
                while not self._pending and not self._closed:
                    self._lock.wait()
                if self._closed and not self._pending:
                    return
                job = self._pending.popleft()
                job.state, job.message, job.started = JobState.RUNNING, "starting", time.time()
                self._running = job
            self._run(job)
            with self._lock:
                self._running = None

    def _run(self, job: Job) -> None:
        def report(fraction: float, message: str = "") -> None:
            if job.cancel.is_set():
                raise JobCancelled
            job.progress = min(max(float(fraction), job.progress), 1.0)  # never goes backwards
            if message:
                job.message = message

        outcome: tuple[JobState, Any, str | None] | None = None
        try:
            if self.setup_error is not None:
                raise UserError(f"The backend could not load its model: {self.setup_error}")
            work, job.work = job.work, None  # the input is not needed any more
            assert work is not None
            result = work(report)
            report(1.0, "done")  # a cancel that came during the last step still wins
            outcome = (JobState.DONE, result, None)
        except JobCancelled:
            outcome = (JobState.CANCELLED, None, None)
        except (UserError, ValueError) as exc:  # user-facing messages (GenerationError, RigError...)
            outcome = (JobState.FAILED, None, str(exc) or type(exc).__name__)
        except Exception as exc:  # noqa: BLE001 - a bug must fail the job, never the worker
            log.error("job %s crashed:\n%s", job.id, traceback.format_exc())
            # The exception's text stays in the log: it may quote anything, a file's contents too.
            outcome = (JobState.FAILED, None, f"Internal error in the backend ({type(exc).__name__}); "
                                              "its log has the details.")
        with self._lock:
            state, result, error = outcome
            if job.cancel.is_set() and state is not JobState.FAILED:
                state, result = JobState.CANCELLED, None
            if state is JobState.CANCELLED:
                self._finish_cancelled(job, "cancelled")
            elif state is JobState.DONE:
                job.state, job.result, job.progress, job.message = state, result, 1.0, "done"
                self._finished(job)
            else:
                job.state, job.error, job.message = state, error, "failed"
                self._finished(job)
            self._lock.notify_all()  # wake long polls
