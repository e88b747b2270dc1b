"""Dragons: a quadruped's body (see `quadruped`) with a pair of membrane wings on the chest."""

from __future__ import annotations

import math

import numpy as np

from .builder import Builder, LimbRole, Y, Z, jit, unit
from .quadruped import QuadrupedSkeleton, quadruped_mesh, quadruped_skeleton


def _wings(b: Builder, rng: np.random.Generator, skeleton: QuadrupedSkeleton) -> None:
    size = skeleton.size
    W, body, g, w, z_s, chest = size.W, size.body, size.g, size.w, size.z_s, b.spine[-1]
    span = jit(rng, 2.0, 0.2) * W  # one wing, root to tip
    two_fingers = rng.random() < 0.5
    lift = math.radians(rng.uniform(-10, 25))  # wings spread, raised by a random angle
    dirs = [unit(0.8, 0.35, 0.5), unit(0.9, -0.25, 0.15), unit(0.95, 0.1, 0.0), unit(0.7, 0.7, -0.15),
            unit(0.4, 0.9, -0.2)]
    lengths = [0.22, 0.28, 0.15, 0.35, 0.12]
    rot = np.array([[math.cos(lift), 0, -math.sin(lift)], [0, 1, 0], [math.sin(lift), 0, math.cos(lift)]])
    root = np.array([0.35 * w, -body / 2 + 0.3 * body, z_s + 0.3 * g])
    shoulder = np.array([0.8 * w, -body / 2 + 0.25 * body, z_s + 0.65 * g])
    points = [root, shoulder]
    for d, length in zip(dirs[: 5 if two_fingers else 4], lengths, strict=False):
        points.append(points[-1] + span * length * rng.uniform(0.9, 1.1) * (rot @ d))
    segs = ["girdle", "upper", "lower", "meta", "digit", "digit_end"][: len(points) - 1]
    chord = np.array([0.35 * body, 0.2 * span, 0.18 * span, 0.12 * span, 0.03 * span, 0.03 * span])
    thick = np.array([0.08 * g, 0.06 * g, 0.04 * g, 0.03 * g, 0.01 * g, 0.01 * g])

    def wing_mesh(joints: list[int]) -> None:
        b.part(points[:2], [(0.3 * g, 0.3 * g), (0.15 * g, 0.15 * g)], joints[:1], Z, sides=8,
               caps=(0.5, 0.5), parent=chest)
        # The membrane's leading edge runs along the arm and finger bones; its chord trails backwards.
        m = len(points) - 1
        b.part(points[1:], np.stack([chord[:m], thick[:m]], axis=1), joints[1:], Y, sides=8, caps=(0.3, 0.3),
               shift=1.0, parent=joints[0])

    b.limb(LimbRole("wing", "wing"), segs, points, chest, mesh=wing_mesh)


def build_dragon(b: Builder, rng: np.random.Generator, species: str, pose: str | None) -> None:
    skeleton = quadruped_skeleton(b, rng, species)
    _wings(b, rng, skeleton)
    quadruped_mesh(b, rng, species, skeleton)
