"""The HTTP routes every backend has: health and version, the job queue (status with long polling,
results, cancel, delete) and shutdown.

Health and job status are coroutines: they run on the event loop, never waiting for a worker thread,
and a long poll sleeps there (asyncio) between looks at its job, so any number of long polls (the
connection limit bounds them) leaves health and every other request their threads."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import platform
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, BackgroundTasks, Query
from fastapi.responses import Response

from ...kirin_addon.backend.protocol import API, PROTOCOL_VERSION
from .http_limits import OffLoopRoute
from .jobs import JobQueue, JobState
from .schema import ERRORS, JobId, JobOut

POLL_INTERVAL = 0.05  # seconds between a long poll's looks at its job
MAX_WAIT = 30.0  # seconds a long poll may last


def version_info() -> dict[str, Any]:
    def version(name: str) -> str | None:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return None

    return {
        "kirin": version("kirin"),
        "protocol": PROTOCOL_VERSION,
        "python": platform.python_version(),
        "packages": {
            name: version(name)
            for name in ("numpy", "torch", "onnxruntime", "onnxruntime-gpu", "fastapi", "uvicorn")
        },
    }


def jobs_router(
    queue: JobQueue, health_info: Callable[[], dict[str, Any]], request_exit: Callable[[], None]
) -> APIRouter:
    """The routes of `queue`; `health_info` answers GET health, `request_exit` stops the backend."""
    router = APIRouter(route_class=OffLoopRoute)

    @router.get(f"{API}/health", responses=ERRORS)
    async def health() -> dict[str, Any]:
        """Liveness and readiness: `status` is "loading" until the model is loaded, then "ok"
        (or "error" with `error` when loading failed)."""
        return health_info()

    @router.get(f"{API}/version", responses=ERRORS)
    def version() -> dict[str, Any]:
        return version_info()

    @router.get(f"{API}/jobs", response_model=list[JobOut], responses=ERRORS)
    def list_jobs() -> list[dict[str, Any]]:
        return queue.list()

    @router.get(f"{API}/jobs/{{job_id}}", response_model=JobOut, responses=ERRORS)
    async def job_status(
        job_id: JobId, wait: Annotated[float, Query(ge=0, le=MAX_WAIT, allow_inf_nan=False)] = 0.0
    ) -> dict[str, Any]:
        """The job's state, progress and message; with `wait` (seconds) the answer comes as soon as
        the job has finished, or after `wait` seconds (long polling)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        status = queue.status(job_id)
        while not JobState(status["state"]).finished and (left := deadline - loop.time()) > 0:
            await asyncio.sleep(min(POLL_INTERVAL, left))
            status = queue.status(job_id)
        return status

    @router.get(f"{API}/jobs/{{job_id}}/result", responses=ERRORS)
    def job_result(job_id: JobId) -> Response:
        """The result of a done job (per variant: motion arrays, contacts, metrics, report); it stays
        until the job is deleted (DELETE jobs/{id}) or expires, so a dropped download can be fetched
        again. A failed job answers 422 with its error."""
        result = queue.take_result(job_id)
        # Serialised here rather than by FastAPI: the arrays are already base64 strings.
        return Response(json.dumps({"id": job_id, **result}), media_type="application/json")

    @router.post(f"{API}/jobs/{{job_id}}/cancel", response_model=JobOut, responses=ERRORS)
    def cancel_job(job_id: JobId) -> dict[str, Any]:
        return queue.cancel(job_id)

    @router.delete(f"{API}/jobs/{{job_id}}", response_model=JobOut, responses=ERRORS)
    def delete_job(job_id: JobId) -> dict[str, Any]:
        return queue.delete(job_id)

    @router.post(f"{API}/shutdown", status_code=202, responses=ERRORS)
    def shutdown(tasks: BackgroundTasks) -> dict[str, str]:
        """Graceful stop: open requests finish, queued and running jobs are cancelled."""
        tasks.add_task(request_exit)  # after this response is sent
        return {"status": "shutting down"}

    return router
