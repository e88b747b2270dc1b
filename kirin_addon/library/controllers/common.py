"""The controllers' shared vocabulary: body axes, the clip they return, the error they raise, and the
smooth curves (steps, envelopes, running bounds) every controller shapes its motion with."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ...core.motion import Motion
from ...core.rotations import quat_about, quat_multiply
from .segments import GaitSegment

GRAVITY = 9.81
X_AXIS = np.array([1.0, 0.0, 0.0])  # the creature's lateral axis (pitch)
Y_AXIS = np.array([0.0, 1.0, 0.0])  # its long axis, pointing backwards (roll)
Z_AXIS = np.array([0.0, 0.0, 1.0])  # up (yaw / heading)
FORWARD = np.array([0.0, -1.0, 0.0])


class ControllerError(ValueError):
    """An action a creature cannot perform; the message is user-facing."""


@dataclass
class GeneratedClip:
    motion: Motion
    action: str
    segments: list[GaitSegment]  # what it was asked, each with the speed it got
    speed: float  # requested mean ground speed (m/s; 0 for in-place actions)
    direction: str
    contacts: np.ndarray  # (T, legs) planted feet, legs in creature.legs() order
    metadata: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Travel:
    """How a clip moves over the ground.

    speed: m/s (None: the gait's or action's own). direction: "forward", "backward", "left"/"right"
    (constant-curvature turn), "circle" (a full circle over the clip). turn_rate: heading rate
    (rad/s; 0: the direction's default).
    """

    speed: float | None = None
    direction: str = "forward"
    turn_rate: float = 0.0


# ----------------------------------------------------------------------------- small helpers
about = quat_about  # rotations by angles about one fixed axis (used everywhere below)


def euler_q(pitch: np.ndarray, roll: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    """Body-frame rotation: yaw (about up) · pitch (about lateral) · roll (about the long axis)."""
    return quat_multiply(about(Z_AXIS, yaw), quat_multiply(about(X_AXIS, pitch), about(Y_AXIS, roll)))


def smoothstep(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def envelope(t: np.ndarray, up0: float, up1: float, down0: float = np.inf,
             down1: float = np.inf) -> np.ndarray:
    """0 → 1 between up0 and up1, back to 0 between down0 and down1 (exact 0 and 1 outside)."""
    rise = smoothstep((t - up0) / max(up1 - up0, 1e-9))
    if np.isinf(down0):
        return rise
    return rise * (1.0 - smoothstep((t - down0) / max(down1 - down0, 1e-9)))


def _running(values: np.ndarray, half: int, fn: Callable) -> np.ndarray:
    if half <= 0:
        return values.copy()
    pad = np.pad(values, (half, half), mode="edge")
    windows = np.lib.stride_tricks.sliding_window_view(pad, 2 * half + 1)
    return fn(windows, axis=-1)


def smooth_upper(values: np.ndarray, half: int) -> np.ndarray:
    """A smooth curve that is ≥ values everywhere (running max, then a moving average)."""
    return _running(_running(values, half, np.max), half, np.mean)


def smooth_lower(values: np.ndarray, half: int) -> np.ndarray:
    """A smooth curve that is ≤ values everywhere (running min, then a moving average)."""
    return _running(_running(values, half, np.min), half, np.mean)


def heading_forward(heading: np.ndarray) -> np.ndarray:
    """World forward direction (…,3) for a heading angle (0 = facing −Y, positive turns left)."""
    return np.stack([np.sin(heading), -np.cos(heading), np.zeros_like(heading)], axis=-1)

