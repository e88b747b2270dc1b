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

from kirin.kirin_addon.backend.protocol import generate_to_json  # noqa: E402
from kirin.kirin_addon.backend.server.app import Backend, ServeConfig  # noqa: E402
from kirin.kirin_addon.backend.server.generate import GenerationService  # noqa: E402
from kirin.kirin_addon.generate.request import GenerateRequest  # noqa: E402

MAX_EXAMPLES = 20
SKIPPED = ("/v1/shutdown",)  # would end the run; covered in test_backend_process.py


class StubService(GenerationService):
    """Checks requests like the real service; runs nothing."""

    def load(self) -> None:
        self.model = object()

    def info(self) -> dict:
        return {"model_loaded": True, "device": "cpu", "backend": "stub"}

    def work(self, job):
        return lambda report: {"frames": job.frames, "variants": []}


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
    config = ServeConfig(token_file=tmp_path_factory.mktemp("fuzz") / "token")
    backend = Backend(StubService(bank="none"), config)
    backend.start_in_thread()
    yield backend
    backend.stop()


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
