"""Paths and speed profiles: the time grid of a locomotion clip, segment blend weights, and the integrated
ground track and heading."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .common import heading_forward, smoothstep


@dataclass
class Profile:
    """Time grid (with padding before and after the clip) and everything that varies along the path."""

    times: np.ndarray  # (N,) seconds; clip frames are [pad, pad + frames)
    pad: int
    frames: int
    fps: float
    speed: np.ndarray  # (N,) ground speed along the travel direction
    turn: np.ndarray  # (N,) heading rate, rad/s (positive turns left)
    heading: np.ndarray  # (N,) facing angle (0 = −Y)
    position: np.ndarray  # (N,2) pelvis ground track
    weights: np.ndarray  # (N,K) blend weight of each segment
    track: np.ndarray | None = None  # (N,2) ground track of the pivot the body turns about
    sign: float = 1.0  # −1 when travelling backwards

    def turn_centre(self, t: float) -> np.ndarray | None:
        """(2,) the point the body is turning about at time t, None on a (nearly) straight path."""
        k = int(np.clip(round((t - self.times[0]) * self.fps), 0, len(self.times) - 1))
        w, v = self.turn[k], self.sign * self.speed[k]
        if abs(w) < 1e-9:
            return None
        track = self.position if self.track is None else self.track
        left = np.array([np.cos(self.heading[k]), np.sin(self.heading[k])])
        return track[k] + (v / w) * left

    def at(self, t: float) -> tuple[np.ndarray, float]:
        """Ground position and heading at any time (linear between grid samples, clamped)."""
        x = np.clip((t - self.times[0]) * self.fps, 0.0, len(self.times) - 1.0)
        lo = min(int(np.floor(x)), len(self.times) - 2)
        w = x - lo
        pos = (1 - w) * self.position[lo] + w * self.position[lo + 1]
        return pos, float((1 - w) * self.heading[lo] + w * self.heading[lo + 1])

    def clip(self, values: np.ndarray) -> np.ndarray:
        return values[self.pad:self.pad + self.frames]


def segment_weights(times: np.ndarray, durations: list[float], ramp: float) -> np.ndarray:
    """(N,K) smooth partition of unity: segment k holds between its boundaries, cross-fading over `ramp`."""
    bounds = np.cumsum(durations)[:-1]
    rises = [np.ones_like(times)] + [smoothstep((times - b + 0.5 * ramp) / ramp) for b in bounds]
    rises.append(np.zeros_like(times))
    return np.stack([rises[k] - rises[k + 1] for k in range(len(durations))], axis=-1)


@dataclass(frozen=True)
class TimeGrid:
    """A clip's time grid with padding: samples `times` (s), of which [pad, pad + frames) are the clip's."""

    times: np.ndarray  # (N,) seconds
    pad: int
    frames: int
    fps: float


def build_path(grid: TimeGrid, speeds: np.ndarray, weights: np.ndarray, turns: np.ndarray, sign: float,
               start: np.ndarray, pivot: np.ndarray | None = None) -> Profile:
    """Integrate heading and ground position; the clip's first frame sits at `start`, heading 0.

    The path is that of `pivot` (rest position; default `start`, the pelvis): the pelvis track is
    the pivot's track plus the pelvis's rest offset from it, turned with the heading.
    """
    times, pad, frames, fps = grid.times, grid.pad, grid.frames, grid.fps
    speed = weights @ speeds
    turn = weights @ turns
    dt = 1.0 / fps
    heading = np.concatenate([[0.0], np.cumsum(0.5 * (turn[1:] + turn[:-1]) * dt)])
    heading -= heading[pad]
    velocity = sign * speed[:, None] * heading_forward(heading)[:, :2]
    position = np.concatenate([[[0.0, 0.0]], np.cumsum(0.5 * (velocity[1:] + velocity[:-1]) * dt, axis=0)])
    if pivot is None:
        position += start[:2] - position[pad]
        track = position
    else:
        arm = start[:2] - pivot[:2]
        c, s = np.cos(heading), np.sin(heading)
        swung = np.stack([c * arm[0] - s * arm[1], s * arm[0] + c * arm[1]], axis=-1)
        track = position + pivot[:2] - position[pad]
        position = track + swung
    return Profile(times, pad, frames, fps, speed, turn, heading, position, weights, track, sign)

