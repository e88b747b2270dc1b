"""Property-based fuzzing of the backend's published OpenAPI schema (schemathesis): valid and invalid
requests for every operation, on loopback with the token, never get a server error (5xx).

Bounded: at most MAX_EXAMPLES per operation and generation mode. The backend here runs the real
HTTP layer and request checks (GenerationService.check) but a stub in place of the model, so a
fuzzed request that happens to be valid queues a job that finishes at once."""

from __future__ import annotations

import base64
import collections
import json
import urllib.error
import urllib.request

import pytest

schemathesis = pytest.importorskip("schemathesis")
pytest.importorskip("fastapi")
from hypothesis import HealthCheck, given, settings  # noqa: E402 - schemathesis brings hypothesis
from hypothesis import strategies as st  # noqa: E402
from hypothesis.errors import Unsatisfiable  # noqa: E402
from mutation_support import json_paths, replaced  # noqa: E402
from stub_support import stub_backend  # noqa: E402

from kirin.kirin_addon.backend.protocol import generate_to_json  # noqa: E402
from kirin.kirin_addon.generate.request import GenerateRequest  # noqa: E402

MAX_EXAMPLES = 20
SKIPPED = ("/v1/shutdown",)  # would end the run; covered in test_backend_process.py


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
    with stub_backend(tmp_path_factory.mktemp("fuzz")) as backend:
        yield backend


def _operations(backend):
    request = urllib.request.Request(f"{backend.url}/openapi.json",
                                     headers={"Authorization": f"Bearer {backend.token}"})
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=30) as response:
        document = json.loads(response.read())
    # The token is tested on its own (test_backend_server.py); without the security section the
    # invalid cases go to bodies, paths and queries instead of mangled Authorization headers.
    document.pop("security", None)
    schema = schemathesis.openapi.from_dict(document)
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.path not in SKIPPED:
            yield operation


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["positive", "negative"])
def test_no_server_error_on_fuzzed_requests(fuzzed, mode):
    headers = {"Authorization": f"Bearer {fuzzed.token}"}
    generation = getattr(schemathesis.GenerationMode, mode.upper())
    failures, tried, statuses = [], [], []
    for operation in _operations(fuzzed):
        tried.append(f"{operation.method.upper()} {operation.path}")

        @settings(max_examples=MAX_EXAMPLES, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy(generation_mode=generation))
        def check(case) -> None:
            response = case.call(base_url=fuzzed.url, headers=headers, timeout=30)
            statuses.append(response.status_code)
            if response.status_code >= 500:
                failures.append((case.method, case.formatted_path, response.status_code, response.text[:300]))
            assert response.status_code < 500

        try:
            check()
        except Unsatisfiable:  # an operation without inputs has no invalid ones
            continue
        except AssertionError:  # recorded in failures
            pass
    assert len(tried) >= 8, tried
    assert len(statuses) >= 5 * len(tried), collections.Counter(statuses)
    assert failures == []


# ----------------------------------------------------------------------------- deeper than the schema
# Random base64 never fits a shape, so the schema fuzzer stops at the array checks. Here a valid
# request is mutated at one place at a time (any field, inside arrays too) with any JSON value.
SCALARS = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False)
           | st.text(max_size=12))
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=8,
)


@pytest.mark.slow
def test_mutated_valid_requests_never_get_a_server_error(fuzzed):
    from kirin.kirin_addon.core.rig import RigBuilder

    builder = RigBuilder()
    builder.add("hips", None, (0, 0, 1), (0, 0, 1.2))
    builder.add("leg.L", "hips", (0.2, 0, 1), (0.2, 0, 0.1))
    builder.add("leg.R", "hips", (-0.2, 0, 1), (-0.2, 0, 0.1))
    valid = generate_to_json(builder.build(), GenerateRequest("a walk", frames=8))
    paths = [p for p in json_paths(valid) if p]
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    headers = {"Authorization": f"Bearer {fuzzed.token}", "Content-Type": "application/json"}
    statuses = []

    @settings(max_examples=60, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(where=st.sampled_from(paths), value=JSON_VALUES)
    def check(where, value) -> None:
        body = json.dumps(replaced(valid, where, value)).encode()
        request = urllib.request.Request(f"{fuzzed.url}/v1/jobs/generate", body, headers, method="POST")
        try:
            with opener.open(request, timeout=30) as response:
                status = response.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        statuses.append(status)
        assert status < 500, (where, value)

    check()
    assert collections.Counter(statuses)[422] > 10

    # Arrays whose bytes fit their shape but hold anything (NaN, huge values, broken rotations).
    arrays = [p for p in paths if isinstance(_get(valid, p), dict) and "data" in _get(valid, p)]

    @settings(max_examples=40, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(where=st.sampled_from(arrays), data=st.data())
    def check_bytes(where, data) -> None:
        array = _get(valid, where)
        size = len(base64.b64decode(array["data"]))
        raw = data.draw(st.binary(min_size=size, max_size=size))
        body = replaced(valid, where, {**array, "data": base64.b64encode(raw).decode()})
        request = urllib.request.Request(f"{fuzzed.url}/v1/jobs/generate", json.dumps(body).encode(), headers,
                                         method="POST")
        try:
            with opener.open(request, timeout=30) as response:
                status = response.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        assert status < 500, (where, raw[:32])

    check_bytes()


def _get(value, path):
    for key in path:
        value = value[key]
    return value


# ----------------------------------------------------------------------------- numeric edges
# Every number of every request, set to each edge: zero, negative, tiny, huge, beyond int64, NaN and
# the infinities (JSON's NaN/Infinity tokens), and values of another type. Nothing gets a 5xx, and
# a value outside a field's range or type is refused (422).
EDGES = (0, -1, 1e-310, -1e-310, 1e308, -1e308, 2**63, -(2**63) - 1, 10**30, float("nan"), float("inf"),
         float("-inf"), 0.5, "10", True)


def _bodies(tmp_path) -> dict[str, dict]:
    import numpy as np
    from test_backend_files import small_rig

    from kirin.kirin_addon.backend.protocol_bind import bind_to_json, transfer_to_json
    from kirin.kirin_addon.backend.protocol_pose import (
        pose_project_to_json,
        pose_sample_to_json,
        pose_walk_to_json,
    )
    from kirin.kirin_addon.backend.protocol_video import extract_to_json
    from kirin.kirin_addon.bind.request import BindRequest, TransferRequest
    from kirin.kirin_addon.core.motion import Motion
    from kirin.kirin_addon.pose.request import PoseProjectRequest, PoseSampleRequest, PoseWalkRequest
    from kirin.kirin_addon.video.request import ExtractRequest

    rig = small_rig()
    pose, keys = Motion.rest(rig, 1, 30.0), Motion.rest(rig, 3, 30.0)
    vertices = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float)
    triangles = np.array([[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]])
    video = tmp_path / "clip.mp4"
    video.write_bytes(b"not a video")
    options = {"max_distance": 0.1, "max_angle": 30.0, "surface_tolerance": 0.01, "smooth_iterations": 2,
               "max_influences": 4, "k": 3}
    return {
        "/v1/jobs/generate": generate_to_json(rig, GenerateRequest(
            "a walk", frames=8, fps=24.0, guidance=2.0, keep=Motion.rest(rig, 8, 24.0), keep_frames=[0, 1])),
        "/v1/jobs/extract": extract_to_json(rig, ExtractRequest(video, start=1, stop=5, stride=2, fps=24.0,
                                                                epochs=3)),
        "/v1/pose/project": pose_project_to_json(rig, PoseProjectRequest(pose, {1: [0.3, 0, 0.2]}, pins=[2],
                                                                         strength=0.5)),
        "/v1/pose/sample": pose_sample_to_json(rig, PoseSampleRequest(pose, count=2, seed=3)),
        "/v1/pose/walk": pose_walk_to_json(rig, PoseWalkRequest(keys, [4, 4])),
        "/v1/jobs/transfer": transfer_to_json(TransferRequest(
            vertices, triangles, ["a"], np.zeros((4, 1), np.int64), np.ones((4, 1)),
            [("t", vertices, triangles)], options)),
        "/v1/jobs/bind": bind_to_json(BindRequest(vertices, triangles, options=options)),
    }


def _numbers(value, path=()):
    """The places of a body that hold a number (not inside an array's base64)."""
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _numbers(item, path + (key,))
    elif isinstance(value, list) and len(value) <= 8:
        for i, item in enumerate(value):
            yield from _numbers(item, path + (i,))


@pytest.mark.slow
def test_every_number_at_its_edges_is_refused_or_accepted_never_a_server_error(tmp_path):
    with stub_backend(tmp_path, allow_dirs=(tmp_path,)) as backend:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        headers = {"Authorization": f"Bearer {backend.token}", "Content-Type": "application/json"}
        seen, failures = collections.Counter(), []
        for route, valid in _bodies(tmp_path).items():
            places = list(_numbers(valid))
            assert places, route
            for place in places:
                for edge in EDGES:
                    body = json.dumps(replaced(valid, place, edge)).encode()  # NaN → NaN, inf → Infinity
                    request = urllib.request.Request(backend.url + route, body, headers, method="POST")
                    try:
                        with opener.open(request, timeout=30) as response:
                            status = response.status
                    except urllib.error.HTTPError as exc:
                        status = exc.code
                    seen[status] += 1
                    if status >= 500 and status != 503:  # 503: no pose prior in this backend
                        failures.append((route, place, edge, status))
                    if isinstance(edge, str | bool) or edge != edge or abs(edge) == float("inf"):
                        if status not in (409, 422, 503):  # 409 only for an unknown mesh key
                            failures.append((route, place, edge, status))
        assert failures == []
        assert seen[422] > 300, seen
