"""A job's life between the client and the backend (issue 18, defect 3): what the client cancels,
fetches or gives up on is deleted on the backend, a result can be fetched again until then, and
cancelled jobs never hold the queue's places."""

from __future__ import annotations

import time

import pytest
from stub_support import call, stub_backend
from test_backend_files import small_rig

from kirin.kirin_addon.backend.client import BackendClient, BackendJob
from kirin.kirin_addon.backend.results import BackendError, JobCancelledError
from kirin.kirin_addon.generate.request import GenerateRequest

REQUEST = GenerateRequest("a walk", frames=8)


def held(backend) -> list[str]:
    return [job["id"] for job in call(backend, "GET", "/v1/jobs")[1]]


def test_four_escs_leave_the_fifth_submit_room(tmp_path):
    with stub_backend(tmp_path, delay=30.0, max_jobs=4) as backend:
        client = BackendClient(backend.url, backend.token)
        jobs = [client.generate(small_rig(), REQUEST) for _ in range(4)]
        with pytest.raises(BackendError) as info:
            client.generate(small_rig(), REQUEST)
        assert info.value.status == 429
        for job in jobs:
            job.cancel()  # Esc
            assert job.poll_once().state == "cancelled"
            with pytest.raises(JobCancelledError):
                job.result()
        assert held(backend) == []
        fifth = client.generate(small_rig(), REQUEST)
        assert held(backend) == [fifth.id]
        fifth.cancel()


def test_a_result_can_be_fetched_again_until_the_client_deletes_it(tmp_path):
    with stub_backend(tmp_path) as backend:
        client = BackendClient(backend.url, backend.token)
        submitted = client.generate(small_rig(), REQUEST)
        client.status(submitted.id, wait=10)
        first, again = client.result(submitted.id), client.result(submitted.id)  # a dropped download
        assert first == again and first["frames"] == 8
        status, _ = call(backend, "GET", f"/v1/jobs/{submitted.id}/result")
        assert status == 200
        job = BackendJob(client, submitted.id, lambda payload: payload)  # the stub's result as it is
        assert job.wait(10)["frames"] == 8 and job.status.state == "done"  # decoded, then deleted
        assert held(backend) == []
        assert job.result()["frames"] == 8  # kept by the client


def test_a_failed_poll_or_a_time_out_gives_the_job_up_on_the_backend(tmp_path, monkeypatch):
    with stub_backend(tmp_path, delay=30.0) as backend:
        client = BackendClient(backend.url, backend.token)
        job = client.generate(small_rig(), REQUEST)
        with monkeypatch.context() as patch:
            def refuse(*args, **kwargs):
                raise BackendError("The Kirin backend did not answer in time.")

            patch.setattr(client, "status", refuse)
            with pytest.raises(BackendError, match="in time"):
                job.poll_once()
        assert held(backend) == []  # deleted, though the poll failed
        with pytest.raises(BackendError, match="in time"):
            job.poll_once()  # and the job stays given up
        timed = client.generate(small_rig(), REQUEST)
        with pytest.raises(BackendError, match="did not finish within"):
            timed.wait(timeout=0.3)
        assert held(backend) == []


def test_a_failed_job_is_deleted_once_its_error_is_read(tmp_path, monkeypatch):
    with stub_backend(tmp_path) as backend:
        def fail(job):
            def run(report):
                raise ValueError("The rig has no legs.")
            return run

        monkeypatch.setattr(backend.service, "work", fail)
        client = BackendClient(backend.url, backend.token)
        job = client.generate(small_rig(), REQUEST)
        with pytest.raises(BackendError, match="no legs") as info:
            job.wait(10)
        assert info.value.status == 422 and held(backend) == []


def test_the_denoiser_runs_in_slices_that_a_cancel_stops_between():
    torch = pytest.importorskip("torch")
    from kirin.models.server.interruptible import InterruptibleDenoiser
    from kirin.models.server.jobs import JobCancelled

    calls = []

    def runner(**inputs):  # 20 ms a sample, each sample on its own (as the network)
        calls.append(int(inputs["x"].shape[0]))
        time.sleep(0.02 * inputs["x"].shape[0])
        return inputs["x"] * 2 + inputs["t"][:, None] + inputs["scale"]

    denoiser = InterruptibleDenoiser(runner, slice_seconds=0.1)
    x, t = torch.arange(96.0).reshape(32, 3), torch.arange(32.0)
    out = denoiser(x=x, t=t, scale=torch.tensor(1.0))
    assert torch.equal(out, x * 2 + t[:, None] + 1.0)  # the same numbers as one call on the batch
    assert calls[0] == 1 and max(calls) <= 5 and sum(calls) == 32  # one timed sample, then ≤ 0.1 s slices

    checks = []

    def check():
        checks.append(len(calls))
        if len(checks) == 3:
            raise JobCancelled

    denoiser.check, calls[:] = check, []
    with pytest.raises(JobCancelled):
        denoiser(x=x, t=t, scale=torch.tensor(1.0))
    assert len(calls) == 2 and sum(calls) <= 10  # stopped after two slices, not the whole batch
