"""The soak benchmark (benchmarks/bench_backend_soak.py), small: a few jobs from a few clients with
random cancels and deletes, a stopped and a killed backend, a JSON array past the value limit, a
small chunked body and idle sockets; every job ends in a state its client accounts for."""

from __future__ import annotations

import math

import pytest
from bench_support import HAS_BACKEND, NO_BACKEND, load_benchmark

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not HAS_BACKEND, reason=NO_BACKEND)]


def test_a_small_soak_loses_no_job_and_leaves_none_behind():
    soak = load_benchmark("bench_backend_soak")
    options = soak.SoakOptions(jobs=8, clients=3, body_mb=4, array_mb=8, idle_sockets=20, stop_s=0.5,
                               kill=True, deadline=240.0)
    result = soak.run_soak(options)
    states = result["final_states"]
    assert sorted(states) == list(range(8)) and result["lost"] == 0, states
    assert set(states.values()) <= {"fetched", "cancelled", "deleted", "backend stopped"}, states
    assert result["jobs_left_on_backend"] == 0  # the client deleted what it fetched or cancelled
    assert result["bodies"]["array_body"]["status"] == 413  # past the JSON value limit, unparsed
    assert result["bodies"]["string_body"]["status"] == 422  # 4 MiB under the limit: read, and no JSON
    assert result["bodies"]["idle_sockets_opened"] == 20
    health = result["health"]
    assert health["samples"] >= 5 and health["failed"] == 0 and math.isfinite(health["p99_s"])
    assert result["rss_mb"]["peak"] > result["rss_mb"]["idle"] > 0
