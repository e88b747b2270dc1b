"""How often one Generate job of a network prompt passes between the top-level packages.

The counting rule: the backend's generation work runs in-process (the real `GenerationService` with
the shipped network, on the CPU, and a motion bank to retrieve from) under `sys.setprofile`, from
the start of the job's work on the worker (the HTTP request already decoded and checked:
`GenerationService.work(job)`) to its result encoded for the wire (the dict the HTTP layer sends).
Every Python 'call' event of a function whose module (`frame.f_globals['__name__']`) lies in the
`kirin` package is recorded; a crossing is such a call whose top-level package (kirin.kirin_addon,
kirin.models, kirin.operators, kirin.cli) differs from that of the nearest calling frame in the kirin
package. Property getters, generated dataclass methods and callbacks count like any call. The job
counted is a one-variant network prompt on a rig the backend has not seen (its preparation and the
network's encoding of it included) after a warm-up job on another rig (modules imported, encoders
loaded). With more variants, the pipeline reports between them (a cancel point) at most once per
REPORT_SECONDS: a short job makes no such report, a long one adds a crossing per report.

Measured the same way on the tree before issue 30 (main 07beb1c, its service and model): 125
crossings in 3,432 kirin calls for this job (121 in 3,345 without the bank), most of them the
networks' modules reading the engine's rig and the sampler calling the server's progress and
denoiser wrapper, which lived in the engine; the issue's own, coarser count was 20 in 99. Now: 4
(the job into the engine; the pipeline into the network to encode the rig, to embed the prompt for
the bank's search, and to sample), 3 without a bank.
"""

from __future__ import annotations

import sys
from collections import Counter

import pytest

from kirin.kirin_addon.backend.protocol import generate_to_json
from kirin.kirin_addon.generate.request import GenerateRequest
from kirin.kirin_addon.library.families.build import build_creature

TOPS = ("kirin.kirin_addon", "kirin.models", "kirin.operators", "kirin.cli", "kirin.panels")
BUDGET = 4


def _top(module: str) -> str | None:
    """The top-level package of a module of the kirin package (None: outside it)."""
    for top in TOPS:
        if module == top or module.startswith(top + "."):
            return top
    return "kirin" if module == "kirin" or module.startswith("kirin.") else None


class Crossings:
    """A profile function recording calls into the kirin package and the crossings among them."""

    def __init__(self):
        self.calls = 0
        self.crossings: list[str] = []

    def __call__(self, frame, event, arg) -> None:
        if event != "call":
            return
        callee = frame.f_globals.get("__name__", "")
        top = _top(callee)
        if top is None:
            return
        self.calls += 1
        caller = frame.f_back
        while caller is not None and _top(caller.f_globals.get("__name__", "")) is None:
            caller = caller.f_back
        if caller is None:
            return
        if _top(caller.f_globals["__name__"]) != top:
            self.crossings.append(f"{caller.f_globals['__name__']}.{caller.f_code.co_name} -> "
                                  f"{callee}.{frame.f_code.co_name}")

    def count(self, work, *args):
        sys.setprofile(self)
        try:
            return work(*args)
        finally:
            sys.setprofile(None)


def _report(fraction: float, message: str = "") -> None:
    """The job queue's progress report, as the worker gives it (never cancelled here)."""


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    torch = pytest.importorskip("torch")
    from kirin.models.motion.bank import build_bank, open_bank
    from kirin.models.motion.generator import DEFAULT_MODEL
    from kirin.models.server.generate import GenerationService

    if not (DEFAULT_MODEL / "model.json").exists():
        pytest.skip("no shipped motion model")
    torch.set_num_threads(1)
    loaded = GenerationService(device="cpu", threads=1, bank="none")
    loaded.load()
    folder = tmp_path_factory.mktemp("bank")
    loaded.pipeline.bank = open_bank(build_bank(folder, clips=8, seed=5, workers=1, progress=False))
    return loaded


def test_a_network_prompt_job_crosses_between_packages_at_most_four_times(service):
    warm = build_creature("quadruped", 3)
    body = generate_to_json(warm.rig, GenerateRequest("a dog wags its tail", frames=48, seed=1), warm.mesh)
    service.work(service.check(body))(_report)  # imports, encoders, the bank's first search
    creature = build_creature("quadruped", 11)
    body = generate_to_json(creature.rig, GenerateRequest("a dog wags its tail", frames=48, seed=2),
                            creature.mesh)
    job = service.check(body)  # the HTTP side: decoded and checked
    counter = Crossings()
    result = counter.count(service.work(job), _report)
    print(f"{len(counter.crossings)} crossings in {counter.calls} kirin calls:")
    for crossing, times in Counter(counter.crossings).most_common():
        print(f"  {times} x {crossing}")
    assert len(result["variants"]) == 1 and result["variants"][0]["report"].get("path") != "constructed"
    assert counter.calls > 1000  # the job ran through the counter
    assert len(counter.crossings) <= BUDGET, counter.crossings
