"""The motion model's denoiser called in slices short enough for a cancel to stop it within a fraction
of a second.

The sampler reports progress (where a cancel is seen) once per step, and one step is one call of the
denoiser on every variant at once (twice that with guidance): for 16 variants of 2000 frames on a
CPU that call alone takes 8–17 s, so a cancel waited that long. The denoiser treats each sample of
its batch on its own, so calling it on slices of the batch gives the same numbers; between slices
the job's cancel is checked. Slices are sized from the time one sample took (per sample shape), so
small requests, and fast GPUs, still make one call per step.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import torch

SLICE_SECONDS = 0.25  # the longest a slice of the batch should take
KNOWN_SHAPES = 32  # per-sample times remembered (one per sample shape: frames, joints)


class InterruptibleDenoiser:
    """Calls `runner` (keyword tensors in, one tensor out, every input batch-first) on slices of the
    batch, each expected to take at most `slice_seconds`, calling `check()` before each (it raises to
    stop: JobCancelled). Other attributes are the runner's (device, providers...)."""

    def __init__(self, runner: Callable[..., torch.Tensor], slice_seconds: float = SLICE_SECONDS):
        self.runner = runner
        self.slice_seconds = slice_seconds
        self.check: Callable[[], None] | None = None
        self._seconds: OrderedDict[tuple, float] = OrderedDict()  # sample shape → seconds per sample

    def __getattr__(self, name: str) -> Any:
        return getattr(self.runner, name)

    def __call__(self, **inputs: torch.Tensor) -> torch.Tensor:
        batch = int(inputs["x"].shape[0])
        shape = tuple(inputs["x"].shape[1:])
        per_sample = self._seconds.get(shape)
        if per_sample is None:  # unknown cost: one sample first, timed
            first = self._timed(inputs, 0, 1, shape)
            if batch == 1:
                return first
            return torch.cat([first, self(**{k: _rows(v, batch, 1, batch) for k, v in inputs.items()})])
        size = max(1, int(self.slice_seconds / max(per_sample, 1e-9)))
        if size >= batch:
            return self._timed(inputs, 0, batch, shape)
        return torch.cat([self._timed(inputs, start, min(start + size, batch), shape)
                          for start in range(0, batch, size)])

    def _timed(self, inputs: dict[str, torch.Tensor], start: int, stop: int, shape: tuple) -> torch.Tensor:
        if self.check is not None:
            self.check()
        batch = int(inputs["x"].shape[0])
        began = time.perf_counter()
        out = self.runner(**{k: _rows(v, batch, start, stop) for k, v in inputs.items()})
        self._seconds[shape] = (time.perf_counter() - began) / (stop - start)
        self._seconds.move_to_end(shape)
        while len(self._seconds) > KNOWN_SHAPES:
            self._seconds.popitem(last=False)
        return out


def _rows(value: Any, batch: int, start: int, stop: int) -> Any:
    """Rows start..stop of a batch-first tensor (anything else as it is)."""
    if torch.is_tensor(value) and value.dim() > 0 and value.shape[0] == batch:
        return value[start:stop]
    return value
