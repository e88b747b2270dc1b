"""The HTTP routes every backend has: health and version, the job queue (status with long polling,
results, cancel, delete) and shutdown."""

from __future__ import annotations

import importlib.metadata
import json
import platform
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, BackgroundTasks, Query
from fastapi.responses import Response

from ..protocol import API, PROTOCOL_VERSION
from .jobs import JobQueue
from .schema import ERRORS, JobId, JobOut


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
    router = APIRouter()

    @router.get(f"{API}/health", responses=ERRORS)
    def health() -> dict[str, Any]:
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
    def job_status(
        job_id: JobId, wait: Annotated[float, Query(ge=0, le=30, allow_inf_nan=False)] = 0.0
    ) -> dict[str, Any]:
        """The job's state, progress and message; with `wait` (seconds) the answer comes as soon as
        the job has finished, or after `wait` seconds (long polling)."""
        return queue.wait(job_id, wait) if wait > 0 else queue.status(job_id)

    @router.get(f"{API}/jobs/{{job_id}}/result", responses=ERRORS)
    def job_result(job_id: JobId, keep: Annotated[bool, Query()] = False) -> Response:
        """The result of a done job (per variant: motion arrays, contacts, metrics, report); it is
        removed once fetched unless keep=true. A failed job answers 422 with its error."""
        result = queue.take_result(job_id, remove=not keep)
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
