"""The job machinery on its own (no HTTP, no model): order, progress, cancel, failures, limits."""

from __future__ import annotations

import threading
import time

import pytest

from kirin.models.server.jobs import JobError, JobQueue, UserError


def _wait(queue: JobQueue, job_id: str, timeout: float = 10.0,
          states: tuple[str, ...] = ("done", "failed", "cancelled")) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        status = queue.status(job_id)
        if status["state"] in states:
            return status
        assert time.monotonic() < deadline, status
        time.sleep(0.005)


@pytest.fixture
def queue():
    q = JobQueue(max_jobs=64)
    q.start()
    yield q
    q.stop()


def test_jobs_run_in_order_and_results_are_kept_until_deleted(queue):
    order = []

    def work(tag):
        def run(report):
            report(0.5, f"half of {tag}")
            order.append(tag)
            return {"tag": tag}

        return run

    ids = [queue.submit(work(i))["id"] for i in range(5)]
    for job_id in ids:
        assert _wait(queue, job_id)["state"] == "done"
    assert order == list(range(5))
    status = queue.status(ids[2])
    assert status["progress"] == 1.0 and status["has_result"]
    # A dropped download loses nothing: the result is there until the job is deleted.
    assert queue.take_result(ids[2]) == {"tag": 2}
    assert queue.take_result(ids[2]) == {"tag": 2}
    queue.delete(ids[2])
    with pytest.raises(JobError) as info:
        queue.status(ids[2])
    assert info.value.status == 404 and "Unknown job" in info.value.message


def test_cancel_a_queued_job_and_a_running_one(queue):
    started, release = threading.Event(), threading.Event()
    ran = []

    def slow(report):
        started.set()
        while not release.is_set():
            report(0.1, "working")  # raises JobCancelled once cancelled
            time.sleep(0.002)
        return {"big": "result"}

    def never(report):
        ran.append("never")

    first = queue.submit(slow)["id"]
    second = queue.submit(never)["id"]
    assert started.wait(5)
    assert queue.status(second)["position"] == 0
    assert queue.cancel(second)["state"] == "cancelled"
    queue.cancel(first)
    status = _wait(queue, first)
    assert status["state"] == "cancelled" and not status["has_result"]
    assert ran == []
    for job_id in (first, second):
        with pytest.raises(JobError) as info:
            queue.take_result(job_id)
        assert info.value.status == 409 and "cancelled" in info.value.message
        job = queue._jobs[job_id]
        assert job.result is None and job.work is None  # nothing of it stays behind
        queue.delete(job_id)
    assert queue.counts() == {"queued": 0, "running": 0, "done": 0, "failed": 0, "cancelled": 0}


def test_long_poll_answers_when_the_job_ends(queue):
    release = threading.Event()
    job_id = queue.submit(lambda report: release.wait(5))["id"]
    started = time.monotonic()
    assert queue.wait(job_id, 0.05)["state"] in ("queued", "running")  # timed out
    threading.Timer(0.2, release.set).start()
    assert queue.wait(job_id, 10)["state"] == "done"
    assert time.monotonic() - started < 5


def test_a_cancel_during_the_last_step_still_wins(queue):
    job_id = None

    def work(report):
        queue.cancel(job_id)
        return "too late"

    job_id = queue.submit(work)["id"]
    assert _wait(queue, job_id)["state"] == "cancelled"


def test_failures_carry_their_message(queue):
    def bad_input(report):
        raise UserError("The prompt is empty.")

    def bug(report):
        raise KeyError("oops")

    a, b = queue.submit(bad_input)["id"], queue.submit(bug)["id"]
    assert _wait(queue, a)["error"] == "The prompt is empty."
    assert "Internal error" in _wait(queue, b)["error"]
    for _ in range(2):  # the error can be fetched again, like a result
        with pytest.raises(JobError) as info:
            queue.take_result(a)
        assert info.value.status == 422 and info.value.message == "The prompt is empty."
    assert "oops" not in _wait(queue, b)["error"]  # an exception's text stays in the log
    assert queue.status(b)["state"] == "failed"  # the worker survived the bug
    assert _wait(queue, queue.submit(lambda report: 1)["id"])["state"] == "done"


def test_full_queue_refuses_with_429():
    queue = JobQueue(max_jobs=3)  # not started: jobs stay queued
    for _ in range(3):
        queue.submit(lambda report: None)
    with pytest.raises(JobError) as info:
        queue.submit(lambda report: None)
    assert info.value.status == 429
    queue.stop()
    assert queue.counts()["cancelled"] == 3
    with pytest.raises(JobError) as info:
        queue.submit(lambda report: None)
    assert info.value.status == 503


def test_setup_failure_fails_every_job():
    def setup():
        raise RuntimeError("no model.json")

    queue = JobQueue(setup=setup)
    queue.start()
    job_id = queue.submit(lambda report: "never")["id"]
    assert queue.ready.wait(5)
    assert "no model.json" in _wait(queue, job_id)["error"]
    queue.stop()


def test_twenty_concurrent_submissions_all_complete(queue):
    ids, lock = [], threading.Lock()

    def submit(i):
        job_id = queue.submit(lambda report: i * i)["id"]
        with lock:
            ids.append((i, job_id))

    threads = [threading.Thread(target=submit, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ids) == 20
    for i, job_id in ids:
        assert _wait(queue, job_id)["state"] == "done"
        assert queue.take_result(job_id) == i * i


# ----------------------------------------------------------------------------- expiry and the limit
class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_finished_jobs_expire_after_their_time_to_live():
    clock = Clock()
    queue = JobQueue(max_jobs=8, ttl=60.0, clock=clock)
    queue.start()
    try:
        done = queue.submit(lambda report: "result")["id"]
        assert _wait(queue, done)["state"] == "done"
        blocker = threading.Event()
        running = queue.submit(lambda report: blocker.wait(10))["id"]
        _wait(queue, running, states=("running",))  # the worker has taken it (it may lag on a busy machine)
        cancelled = queue.submit(lambda report: None)["id"]
        queue.cancel(cancelled)
        clock.now += 59.0
        assert queue.take_result(done) == "result" and queue.status(cancelled)["state"] == "cancelled"
        clock.now += 2.0
        for job_id in (done, cancelled):
            with pytest.raises(JobError) as info:
                queue.status(job_id)
            assert info.value.status == 404 and "60 s after it finished" in info.value.message
        assert queue.status(running)["state"] == "running"  # a live job never expires
        blocker.set()
        assert _wait(queue, running)["state"] == "done"
        assert [job["id"] for job in queue.list()] == [running]
    finally:
        queue.stop()


def test_the_limit_counts_only_live_jobs():
    queue = JobQueue(max_jobs=4)  # not started: jobs stay queued
    ids = [queue.submit(lambda report: None)["id"] for _ in range(4)]
    with pytest.raises(JobError) as info:
        queue.submit(lambda report: None)
    assert info.value.status == 429 and "4 jobs" in info.value.message
    for job_id in ids:  # four Escs
        queue.cancel(job_id)
    fifth = queue.submit(lambda report: None)["id"]  # before: 429 until the cancelled jobs were deleted
    assert queue.status(fifth)["state"] == "queued"
    # Cancelled jobs past the limit make way: the oldest are forgotten, not the live ones.
    for _ in range(50):
        queue.cancel(queue.submit(lambda report: None)["id"])
    counts = queue.counts()
    assert counts["queued"] == 1 and counts["cancelled"] == 4
    queue.stop()


def test_a_done_job_counts_until_its_result_is_fetched():
    small = JobQueue(max_jobs=2)
    small.start()
    try:
        a, b = (small.submit(lambda report: "r")["id"] for _ in range(2))
        _wait(small, a), _wait(small, b)
        with pytest.raises(JobError) as info:
            small.submit(lambda report: None)
        assert info.value.status == 429
        assert small.take_result(a) == "r"  # fetched: no longer counts, still there
        c = small.submit(lambda report: "r")["id"]
        assert _wait(small, c)["state"] == "done" and small.take_result(a) == "r"
    finally:
        small.stop()
