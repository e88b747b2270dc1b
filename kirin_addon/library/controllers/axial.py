"""Serpents and fish: the body is a curve of headings Φ(b, t) along its axis; each joint is yawed onto it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.creature import Creature
from ...core.rotations import quat_multiply
from .body import pose_fins
from .common import X_AXIS, Z_AXIS, ControllerError, GeneratedClip, Travel, about, envelope, heading_forward
from .poser import Poser
from .segments import GaitSegment


def _axial_layout(creature: Creature) -> tuple[list[int], np.ndarray, np.ndarray, np.ndarray]:
    """Body-axis joints, each with its coordinate b (m from the pelvis, + towards the head), the
    coordinate of the middle of the segment it drives, and that segment's length."""
    rig = creature.rig
    head = [creature.head] if creature.head >= 0 else []
    forward = [creature.pelvis] + creature.spine + creature.neck + head
    joints, coord, mid, length = [], [], [], []
    b = 0.0
    for k, j in enumerate(forward):
        nxt = rig.heads[forward[k + 1]] if k + 1 < len(forward) else rig.tails[j]
        seg = float(np.linalg.norm(nxt - rig.heads[j]))
        joints.append(j)
        coord.append(b)
        mid.append(b + 0.5 * seg)
        length.append(seg)
        b += seg
    b = 0.0
    if creature.tail:
        b = -float(np.linalg.norm(rig.heads[creature.tail[0]] - rig.heads[creature.pelvis]))
    for k, j in enumerate(creature.tail):
        nxt = rig.heads[creature.tail[k + 1]] if k + 1 < len(creature.tail) else rig.tails[j]
        seg = float(np.linalg.norm(nxt - rig.heads[j]))
        joints.append(j)
        coord.append(b)
        mid.append(b - 0.5 * seg)
        length.append(seg)
        b -= seg
    return joints, np.array(coord), np.array(mid), np.array(length)


@dataclass(frozen=True)
class _Axis:
    """A serpent's or fish's body axis for one clip: the joints along it with their coordinates (see
    `_axial_layout`), its length, the clip's times, and this clip's random amplitude."""

    joints: list[int]
    coord: np.ndarray  # (n,) m from the pelvis, + towards the head
    mid: np.ndarray  # (n,) coordinate of the middle of the segment each joint drives
    length: float
    size: float
    pelvis: np.ndarray  # (3,) rest pelvis head
    t: np.ndarray  # (T,) seconds
    amp: float
    sign: float  # −1 when travelling backwards

    @property
    def d(self) -> float:
        return max(self.t[-1], 1e-6)

    @property
    def rest(self) -> np.ndarray:
        """(T,3) the pelvis held where it rests."""
        return np.repeat(self.pelvis[None], len(self.t), axis=0)


# What an axial action gives besides the joints it sets: the pelvis path, the heading, the wave speed.
_AxialPath = tuple[np.ndarray, np.ndarray, float]


def _follow_track(axis: _Axis, poser: Poser, rng: np.random.Generator, action: str,
                  travel: Travel) -> _AxialPath:
    """slither, swim and turn: every point of the body follows one track (wavy for slither)."""
    joints, coord, mid, length, size, t, amp, sign = (axis.joints, axis.coord, axis.mid, axis.length,
                                                      axis.size, axis.t, axis.amp, axis.sign)
    turn_rate = travel.turn_rate
    if action == "turn" and turn_rate == 0.0:
        turn_rate = (np.pi / 2) / axis.d * (1 if rng.uniform() < 0.5 else -1)
    pace = 0.35 if action == "slither" else 0.8  # body lengths per second
    v = travel.speed if travel.speed is not None else rng.uniform(0.9, 1.1) * pace * size
    v = max(v, 1e-6)
    wavelength = (0.6 if action == "slither" else 1.0) * size
    curvature = turn_rate / v
    sigma_now = sign * v * t
    table = np.linspace(sigma_now.min() + coord.min() - size, sigma_now.max() + coord.max() + size, 4001)
    if action == "slither":
        wave_amp = np.full_like(table, 0.55 * amp)
        phi_table = curvature * table + wave_amp * np.sin(2 * np.pi * table / wavelength)
    else:
        phi_table = curvature * table
    step = np.diff(table)
    fwd = heading_forward(phi_table)
    track = np.concatenate([[np.zeros(3)], np.cumsum(0.5 * (fwd[1:] + fwd[:-1]) * step[:, None], axis=0)])
    pelvis_track = np.stack([np.interp(sigma_now, table, track[:, k]) for k in range(3)], axis=-1)
    root = axis.pelvis + pelvis_track - np.array([np.interp(0.0, table, track[:, k]) for k in range(3)])
    omega = 2 * np.pi * v / wavelength
    for n, j in enumerate(joints):
        phi = np.interp(sigma_now + sign * mid[n], table, phi_table)
        if action != "slither":
            # Fish: a wave running head → tail, amplitude growing towards the tail, about the track.
            rel = (coord.max() - mid[n]) / length
            phi = phi + 0.35 * amp * rel**2 * np.sin(omega * t + 2 * np.pi * mid[n] / wavelength)
            phi = phi + (0.4 * np.clip(turn_rate, -2, 2) * rel if action == "turn" else 0.0)
        poser.set(j, about(Z_AXIS, phi))
    return root, np.interp(sigma_now, table, curvature * table), v


def _sidewind(axis: _Axis, poser: Poser, rng: np.random.Generator, action: str,
              travel: Travel) -> _AxialPath:
    """The body lies across the direction of travel with a lateral and a lifting wave."""
    coord, mid, size, t = axis.coord, axis.mid, axis.size, axis.t
    v = travel.speed if travel.speed is not None else rng.uniform(0.9, 1.1) * 0.3 * size
    wavelength = 0.7 * size
    omega = 2 * np.pi * v / (0.6 * wavelength)
    towards = heading_forward(np.full(len(t), np.pi / 2 * axis.sign))  # moves towards its left
    root = axis.pelvis + v * t[:, None] * towards
    lift_h = 0.04 * size

    def lifted(b: float) -> np.ndarray:
        return lift_h * np.maximum(0, np.sin(2 * np.pi * b / wavelength - omega * t - np.pi / 2)) ** 2

    for n, j in enumerate(axis.joints):
        wave = 2 * np.pi * mid[n] / wavelength - omega * t
        phi = 0.5 * axis.amp * np.sin(wave)
        toward = 1.0 if mid[n] >= coord[n] else -1.0
        end = coord[n] + 2 * (mid[n] - coord[n])
        z0, z1 = lifted(coord[n]), lifted(end)
        seg = 2 * abs(mid[n] - coord[n])
        pitch = -toward * np.arcsin(np.clip((z1 - z0) / max(seg, 1e-9), -1, 1))
        poser.set(j, quat_multiply(about(Z_AXIS, phi), about(X_AXIS, pitch)))
    root[:, 2] += lift_h * np.maximum(0, np.sin(-omega * t - np.pi / 2)) ** 2
    return root, np.zeros(len(t)), v


def _coil(axis: _Axis, poser: Poser, rng: np.random.Generator, action: str, travel: Travel) -> _AxialPath:
    """Curvature growing monotonically towards the tail tip (nested, non-crossing turns)."""
    coord, mid, t = axis.coord, axis.mid, axis.t
    a = envelope(t, 0.05 * axis.d, 0.7 * axis.d)
    for n, j in enumerate(axis.joints):
        rel = max(-mid[n], 0.0) / max(-coord.min(), 1e-9)
        phi = a * 2.6 * np.pi * rel**2 * axis.amp
        pitch = np.zeros(len(t))
        if mid[n] > coord[n] and coord[n] > 0.6 * coord.max():
            pitch = -0.5 * a  # the front rises, ready to strike
        poser.set(j, quat_multiply(about(Z_AXIS, phi), about(X_AXIS, pitch)))
    return axis.rest, np.zeros(len(t)), 0.0


def _idle(axis: _Axis, poser: Poser, rng: np.random.Generator, action: str, travel: Travel) -> _AxialPath:
    for n, j in enumerate(axis.joints):
        poser.set(j, about(Z_AXIS, 0.05 * np.sin(2 * np.pi * 0.3 * axis.t + axis.mid[n] / axis.size * 3)))
    return axis.rest, np.zeros(len(axis.t)), 0.0


_AXIAL_ACTIONS = {"slither": _follow_track, "swim": _follow_track, "turn": _follow_track,
                  "sidewind": _sidewind, "coil": _coil, "idle": _idle}


def axial(creature: Creature, action: str, frames: int, fps: float, rng: np.random.Generator,
          travel: Travel) -> GeneratedClip:
    """Serpents and fish: the body is a curve of headings Φ(b, t); each joint is yawed onto it.

    slither: follow-the-leader lateral undulation — Φ depends on the path coordinate σ = s(t) + b
    only, so every point of the body travels along the same wavy track (no sideways slip beyond the
    wave); the pelvis rides that track at the requested speed.
    sidewind: the body lies across the direction of travel with a lateral and a lifting wave.
    coil: curvature growing monotonically towards the tail tip (nested, non-crossing turns).
    swim: travelling wave whose amplitude grows towards the tail; turn bends into the turn.
    """
    joints, coord, mid, _ = _axial_layout(creature)
    length = float(coord.max() - coord.min() + 1e-9)
    axis = _Axis(joints, coord, mid, length, max(length, creature.rig.body_size),
                 creature.rig.heads[creature.pelvis], np.arange(frames) / fps, rng.uniform(0.85, 1.15),
                 -1.0 if travel.direction == "backward" else 1.0)
    poser = Poser(creature, frames)
    move = _AXIAL_ACTIONS.get(action)
    if move is None:
        raise ControllerError(f"Unknown action '{action}' for a {creature.family}.")
    root, heading, v = move(axis, poser, rng, action, travel)
    poser.inherit()
    pose_fins(poser, axis.t, 2.0, 0.3)
    poser.inherit()
    rel = poser.relative_positions()
    root_main = poser.root_for(root, rel)
    motion = poser.motion(root_main, fps)
    info = {"heading": heading, "wave_speed": v}
    segments = [GaitSegment(action, frames / fps, v)]
    contacts = np.zeros((frames, 0), dtype=bool)  # no feet
    return GeneratedClip(motion, action, segments, v, travel.direction, contacts, info)
