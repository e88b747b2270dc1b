"""The backend over real HTTP (in-process uvicorn, shipped model on the CPU, one thread): generate on a
procedural quadruped, the token, cancel, 20 concurrent jobs, and bad input refused with a clear 4xx."""

from __future__ import annotations

import json
import stat
import struct
import threading
import time
import urllib.error
import urllib.request
import zlib

import numpy as np
import pytest

from kirin.kirin_addon.backend.client import BackendClient, GenerationJob
from kirin.kirin_addon.backend.protocol import encode_array, generate_to_json, rig_to_json
from kirin.kirin_addon.backend.results import BackendError, JobCancelledError
from kirin.kirin_addon.core.motion import joint_positions
from kirin.kirin_addon.eval.metrics import bone_length_error
from kirin.kirin_addon.generate.request import GenerateRequest

FRAMES = 24
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy for loopback


def raw(backend, method: str, path: str, body=None, headers=None) -> tuple[int, dict]:
    """One request without the client, to see statuses and bodies as they are."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(backend.url + path, data=data, method=method, headers=headers or {})
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with OPENER.open(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def auth(backend) -> dict[str, str]:
    return {"Authorization": f"Bearer {backend.token}"}


def png_file(path, size: int = 16) -> None:
    """A small RGB PNG written with the standard library."""
    pixels = bytearray()
    for y in range(size):
        pixels.append(0)
        for x in range(size):
            pixels += bytes([(x * 16) % 256, (y * 16) % 256, 128])
    rows = bytes(pixels)

    def chunk(kind: bytes, payload: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + payload))
        return struct.pack(">I", len(payload)) + kind + payload + crc

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
                     + chunk(b"IEND", b""))


# ----------------------------------------------------------------------------- health and token
def test_health_reports_device_model_and_queue(client, backend):
    health = client.health()
    assert health["status"] == "ok" and health["model_loaded"]
    assert health["device"] == "cpu" and health["backend"] in ("onnxruntime", "torch")
    assert health["queue_length"] == 0 and health["protocol"] == 1
    version = client.version()
    assert version["protocol"] == 1 and version["packages"]["fastapi"]
    assert stat.S_IMODE(backend.token_file.stat().st_mode) == 0o600
    assert backend.token_file.read_text() == backend.token
    assert backend.url.startswith("http://127.0.0.1:")


@pytest.mark.parametrize("path", ["/v1/health", "/v1/jobs", "/openapi.json", "/no/such/page"])
def test_every_request_needs_the_token(backend, path):
    status, body = raw(backend, "GET", path)
    assert status == 401 and "Missing token" in body["error"]
    status, body = raw(backend, "GET", path, headers={"Authorization": "Bearer not-the-token"})
    assert status == 403 and "Wrong token" in body["error"]
    status, _ = raw(backend, "GET", path, headers={"Authorization": f"Basic {backend.token}"})
    assert status == 403
    status, _ = raw(backend, "GET", path, headers=auth(backend))
    assert status == (404 if path == "/no/such/page" else 200)


def test_client_with_a_wrong_token_gets_a_clear_error(backend):
    with pytest.raises(BackendError) as info:
        BackendClient(backend.url, "wrong").health()
    assert info.value.status == 403 and "refused the token" in info.value.message


# ----------------------------------------------------------------------------- generate
def test_generate_on_a_procedural_quadruped(client, creature):
    rig = creature.rig
    job = client.generate(
        rig,
        GenerateRequest("a dog trotting forward", frames=FRAMES, variants=2, seed=3),
        mesh=creature.mesh,
    )
    seen = []
    result = job.wait(timeout=120, on_progress=seen.append)
    assert [s.progress for s in seen] == sorted(s.progress for s in seen)
    assert result.frames == FRAMES and len(result.variants) == 2 and result.device == "cpu"
    for i, variant in enumerate(result.variants):
        motion = variant.motion
        assert motion.rotations.shape == (FRAMES, rig.joint_count, 4)
        assert motion.root_positions.shape == (FRAMES, 3) and np.all(np.isfinite(motion.root_positions))
        assert motion.fps == pytest.approx(30.0)
        assert variant.seed == 3 + i
        assert bone_length_error(rig, motion).max_error < 1e-9  # bone lengths exact (rotations only)
        assert set(variant.metrics) == {"foot_skating", "jitter", "penetration", "bone_length_error"}
        assert variant.metrics["bone_length_error"] < 1e-9
        # Judged against the shipped model's per-clip bounds (model.json, `kirin bounds`).
        assert variant.within_bounds is not None
        assert variant.contacts.shape == (FRAMES, len(variant.feet))
    bounds = result.info["bounds"]
    assert set(bounds) == set(result.variants[0].metrics) and all(v > 0 for v in bounds.values())
    assert not np.allclose(result.variants[0].motion.rotations, result.variants[1].motion.rotations)
    # Results are removed once fetched.
    with pytest.raises(BackendError) as info:
        client.result(job.id)
    assert info.value.status == 404


def test_frame_rate_and_kept_frames(client, creature):
    rig = creature.rig
    at_24 = client.generate(
        rig,
        GenerateRequest("a dog walking forward", frames=20, fps=24.0),
    ).wait(120).variants[0].motion
    assert at_24.frame_count == 20 and at_24.fps == 24.0
    first = client.generate(
        rig,
        GenerateRequest("a dog walking forward", frames=32, seed=0),
    ).wait(120).variants[0].motion
    kept = np.arange(8)
    second = client.generate(
        rig,
        GenerateRequest("a dog jumping", frames=32, seed=5, keep=first, keep_frames=kept),
    ).wait(120).variants[0].motion
    a, b = joint_positions(rig, first), joint_positions(rig, second)
    held = np.abs(a[kept] - b[kept]).max()
    assert held < 0.1 * rig.body_size  # the clean-up may move the feet a little
    assert held < 0.5 * np.abs(a[16:] - b[16:]).max()


def test_reference_image_by_path_and_by_bytes(client, creature, tmp_path):
    image = tmp_path / "pose.png"
    png_file(image)
    job = client.generate(creature.rig, GenerateRequest("a dog", image=str(image), frames=16))
    assert len(job.wait(120).variants) == 1
    # The bytes, as the client sends them to a backend on another machine (no prompt: image only).
    status = client.submit(generate_to_json(
        creature.rig,
        GenerateRequest(None, image=image.read_bytes(), frames=16),
    ))
    assert len(GenerationJob(client, status["id"], creature.rig.joint_count, 16, 1).wait(120).variants) == 1


def test_generation_error_fails_the_job_with_its_message(client, backend, creature, monkeypatch):
    from kirin.kirin_addon.generate.network import GenerationError

    def refuse(*args, **kwargs):
        raise GenerationError("The frames to keep are for a different rig.")

    monkeypatch.setattr(backend.service.pipeline, "run", refuse)
    job = client.generate(creature.rig, GenerateRequest("a dog", frames=FRAMES))
    with pytest.raises(BackendError, match="different rig"):
        job.wait(60)
    assert job.status.state == "failed"


# ----------------------------------------------------------------------------- cancel and load
def test_cancel_stops_a_running_job_within_a_second_and_leaves_nothing_behind(client, backend, creature):
    before = client.health()["jobs"]  # the backend is shared by the session's tests
    # A prompt the network makes (no gait to construct): each sampling step is one long denoiser call
    # on every variant, which the backend slices so that a cancel is seen between slices.
    long = client.generate(creature.rig, GenerateRequest("a dog dancing happily", frames=1200, variants=8))
    after = client.generate(creature.rig, GenerateRequest("a dog walking", frames=FRAMES))
    deadline = time.monotonic() + 120
    while long.poll_once().state != "running" or long.status.progress < 0.06:  # past the first step
        assert time.monotonic() < deadline
        time.sleep(0.02)
    cancelled_at = time.monotonic()
    client.cancel(long.id)  # the plain cancel keeps the job: its status shows when it stopped
    status = client.status(long.id, wait=30)
    stopped_after = time.monotonic() - cancelled_at
    assert status.state == "cancelled"
    assert stopped_after < 2.0, stopped_after  # within 1 s on an idle machine; generous for a busy one
    assert backend.queue._jobs[long.id].result is None
    long.cancel()  # what Esc does: cancelled and deleted on the backend
    with pytest.raises(JobCancelledError):
        long.result()
    with pytest.raises(BackendError) as info:
        client.status(long.id)
    assert info.value.status == 404
    assert len(after.wait(120).variants) == 1  # the queue goes on
    assert client.health()["jobs"] == before


def test_cancel_stops_a_constructed_gait_between_variants(client, creature):
    """A gait is built by the controllers, one variant after another (about 0.3 s each at 2000 frames):
    the cancel is seen before the next one (it took 4.8 s for 16 variants before)."""
    job = client.generate(creature.rig, GenerateRequest("a dog galloping", frames=2000, variants=16))
    deadline = time.monotonic() + 120
    while job.poll_once().state != "running" or job.status.progress < 0.05:  # building the variants
        assert time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(0.5)
    assert client.status(job.id).progress < 0.9  # still building them, not measuring
    cancelled_at = time.monotonic()
    client.cancel(job.id)
    status = client.status(job.id, wait=30)
    assert status.state == "cancelled"
    assert time.monotonic() - cancelled_at < 2.0  # within 1 s on an idle machine; generous for a busy one
    job.cancel()


def test_twenty_concurrent_jobs_all_complete(client, creature):
    body = generate_to_json(creature.rig, GenerateRequest("a dog walking forward", frames=8))
    statuses, errors = [None] * 20, []

    def submit(i):
        try:
            statuses[i] = client.submit({**body, "seed": i})
        except BackendError as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=submit, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len({s["id"] for s in statuses}) == 20
    assert client.health()["queue_length"] + 1 >= 19  # queued while one runs
    for i, status in enumerate(statuses):
        result = GenerationJob(client, status["id"], creature.rig.joint_count, 8, 1).wait(300)
        assert result.variants[0].seed == i and result.variants[0].motion.frame_count == 8


# ----------------------------------------------------------------------------- bad input
def _body(creature, **changes):
    body = generate_to_json(creature.rig, GenerateRequest("a dog walking", frames=FRAMES))
    body.update(changes)
    return body


def _bad_cases(creature, tmp_path):
    rig = rig_to_json(creature.rig)
    count = len(rig["names"])
    text = tmp_path / "notes.png"
    text.write_text("this is not an image")
    nan_rest = creature.rig.rest.copy()
    nan_rest[0, 0, 0] = np.nan
    short = rig["tails"]["data"]
    other_rig = {"fps": 30.0, "root_positions": encode_array(np.zeros((4, 3))),
                 "rotations": encode_array(np.tile([1.0, 0, 0, 0], (4, 2, 1)))}
    keep_motion = {**other_rig, "rotations": encode_array(np.tile([1.0, 0, 0, 0], (8, count, 1))),
                   "root_positions": encode_array(np.zeros((8, 3)))}
    return {
        "empty prompt": (_body(creature, prompt=""), "prompt is empty"),
        "blank prompt": (_body(creature, prompt="   "), "prompt is empty"),
        "no prompt nor image": (_body(creature, prompt=None), "prompt, a reference image or both"),
        "missing image": (_body(creature, image_path=str(tmp_path / "nope.png")), "does not exist"),
        "image is a folder": (_body(creature, image_path=str(tmp_path)), "not a file"),
        "non-image file": (_body(creature, image_path=str(text)), "not an image file"),
        "non-image bytes": (_body(creature, image_data="aGVsbG8="), "not an image file"),
        "no deform bones": (_body(creature, rig={**rig, "deform": [False] * count}), "no deform bones"),
        "frames 0": (_body(creature, frames=0), "frames"),
        "frames -5": (_body(creature, frames=-5), "frames"),
        "frames 100000": (_body(creature, frames=100000), "frames"),
        "too long at a low fps": (_body(creature, frames=2000, fps=10.0), "at most 2000 frames"),
        "variants 0": (_body(creature, variants=0), "variants"),
        "variants 17": (_body(creature, variants=17), "variants"),
        "fps 0": (_body(creature, fps=0), "fps"),
        "fps tiny": (_body(creature, fps=1e-310), "fps"),  # was a 500: OverflowError
        "fps NaN": (_body(creature, fps=float("nan")), "fps"),
        "frames as text": (_body(creature, frames="10"), "frames"),
        "frames true": (_body(creature, frames=True), "frames"),
        "frames 1.5": (_body(creature, frames=1.5), "frames"),
        "seed huge": (_body(creature, seed=2**63), "seed"),
        "loop yes": (_body(creature, loop="yes"), "loop"),
        "parent below -1": (_body(creature, rig={**rig, "parents": [-2] * count}), "parents"),
        "keep at 0.003 fps": (_body(creature, keep={"motion": {**keep_motion, "fps": 0.003}, "frames": [0]}),
                              "keep.motion.fps"),
        "guidance negative": (_body(creature, guidance=-1), "guidance"),
        "unknown field": (_body(creature, frame=10), "frame"),
        "rest wrong shape": (_body(creature, rig={**rig, "rest": encode_array(creature.rig.rest[:, :3])}),
                             "rig.rest: expected shape"),
        "rest bad base64": (_body(creature, rig={**rig, "rest": {**rig["rest"], "data": "@@@@"}}), "base64"),
        "rest short data": (_body(creature, rig={**rig, "rest": {**rig["rest"], "data": short}}),
                            "do not fit"),
        "rest NaN": (_body(creature, rig={**rig, "rest": encode_array(nan_rest)}), "NaN"),
        "rest dtype": (_body(creature, rig={**rig, "rest": {**rig["rest"], "dtype": "float16"}}), "dtype"),
        "rest not an array": (_body(creature, rig={**rig, "rest": [1, 2, 3]}), "rest"),
        "parents too short": (_body(creature, rig={**rig, "parents": rig["parents"][:-1]}), "parents"),
        "parent out of range": (_body(creature, rig={**rig, "parents": [count] * count}), "parent"),
        "keep for another rig": (_body(creature, keep={"motion": other_rig, "frames": [0]}),
                                 "keep.motion.rotations: expected shape"),
        "keep frames out of range": (_body(creature, keep={"motion": {**other_rig, "rotations": encode_array(
            np.tile([1.0, 0, 0, 0], (4, count, 1)))}, "frames": [9]}), "keep.frames"),
    }


def test_bad_input_is_refused_with_a_clear_4xx(backend, creature, tmp_path):
    before = raw(backend, "GET", "/v1/health", headers=auth(backend))[1]["jobs"]
    for name, (body, words) in _bad_cases(creature, tmp_path).items():
        status, answer = raw(backend, "POST", "/v1/jobs/generate", body, auth(backend))
        assert status == 422, (name, status, answer)
        assert words.lower() in answer["error"].lower(), (name, answer)
    assert raw(backend, "GET", "/v1/health", headers=auth(backend))[1]["jobs"] == before  # nothing queued


def test_costly_kept_keys_are_refused_before_anything_is_resampled(backend, creature, monkeypatch):
    from kirin.kirin_addon.core.motion import Motion

    resampled = []
    monkeypatch.setattr(Motion, "resampled", lambda self, fps: resampled.append(fps) or self)
    count = creature.rig.joint_count
    slow = {"fps": 0.1, "root_positions": encode_array(np.zeros((8, 3))),
            "rotations": encode_array(np.tile([1.0, 0, 0, 0], (8, count, 1)))}
    status, answer = raw(backend, "POST", "/v1/jobs/generate",
                         _body(creature, frames=8, keep={"motion": slow, "frames": [0]}), auth(backend))
    # 8 frames at 0.1 fps last 70 s: 2101 frames at the model's 30 fps, past its 2000.
    assert status == 422 and "keep.motion: 8 frames at 0.1 fps last 70.0 s" in answer["error"], answer
    assert resampled == []


def test_malformed_requests_and_unknown_jobs(backend):
    headers = {**auth(backend), "Content-Type": "application/json"}
    request = urllib.request.Request(backend.url + "/v1/jobs/generate", data=b"{not json", method="POST",
                                     headers=headers)
    with pytest.raises(urllib.error.HTTPError) as info:
        OPENER.open(request, timeout=10)
    assert info.value.code == 422 and "JSON" in json.loads(info.value.read())["error"]
    for method, path in [("GET", "/v1/jobs/0123456789abcdef"), ("GET", "/v1/jobs/nope/result"),
                         ("POST", "/v1/jobs/nope/cancel"), ("DELETE", "/v1/jobs/nope")]:
        status, answer = raw(backend, method, path, {} if method == "POST" else None, auth(backend))
        assert status == 404 and "Unknown job" in answer["error"]
    status, answer = raw(backend, "PUT", "/v1/health", None, auth(backend))
    assert status == 405 and answer["error"]


def test_client_raises_backend_error_for_bad_input(client, creature):
    with pytest.raises(BackendError) as info:
        client.generate(creature.rig, GenerateRequest("", frames=FRAMES))
    assert info.value.status == 422 and "prompt is empty" in info.value.message
    with pytest.raises(BackendError) as info:
        client.generate(creature.rig, GenerateRequest("a dog", frames=100000))
    assert info.value.status == 422 and "frames" in info.value.message


def test_result_of_an_unfinished_job_is_409(client, creature):
    job = client.generate(creature.rig, GenerateRequest("a dog", frames=400, variants=4))
    with pytest.raises(BackendError) as info:
        client.result(job.id)
    assert info.value.status == 409 and "not ready" in info.value.message
    client.delete(job.id)
