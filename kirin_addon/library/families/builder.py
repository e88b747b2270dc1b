"""The shared pieces every family builder uses: bone keys, mesh tubes, the builder that collects bones
(left side first, then mirrored), limbs and roles, and the random draws of individual variation."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ...core.creature import CENTRE, LEFT, RIGHT, Limb

FLIP = np.array([-1.0, 1.0, 1.0])
X, Y, Z = np.eye(3)


@dataclass(frozen=True)
class BoneKey:
    """What a bone is, independent of naming: the role plus where it sits."""

    role: str  # trunk role (pelvis, spine, neck, head, tail, ear...) or limb segment
    side: int = CENTRE
    index: int = 0  # 1-based position in a numbered chain (spine, neck, tail, antenna...), else 0
    group: str = ""  # limb group: arm, leg, front, hind, wing, arthro, pecfin, pelfin
    n: int = 0  # arthropod leg pair, 1 = front


@dataclass
class Tube:
    """One closed tube of the mesh around a polyline, skinned along its joints."""

    points: np.ndarray  # (n+1,3) centreline
    radii: np.ndarray  # (n+1,2) half-widths along the frame's u and v axes
    joints: list[int]  # (n) the joint skinning each polyline segment
    up: np.ndarray  # initial u direction (parallel-transported along the tube)
    sides: int = 8
    caps: tuple[float, float] = (0.8, 0.8)  # end-cap lengths in end radii (0: flat)
    parent: int = -1  # joint the first segment blends into near the start
    shift: float | np.ndarray = 0.0  # centre offset along u in units of the u radius (per point)
    profile: tuple[np.ndarray, np.ndarray] | None = None  # (x in [0,1], (k,2) radius factors)
    nearest: list[tuple[int, np.ndarray, np.ndarray]] | None = None  # weight by distance instead
    phase: float = 0.0  # angle of the first ring vertex (pi/4 with 4 sides gives boxes)

    def mirrored(self, mapping: dict[int, int]) -> Tube:
        near = None
        if self.nearest is not None:
            near = [(mapping.get(j, j), a * FLIP, b * FLIP) for j, a, b in self.nearest]
        return replace(self, points=self.points * FLIP, up=self.up * FLIP,
                       joints=[mapping.get(j, j) for j in self.joints],
                       parent=mapping.get(self.parent, self.parent), nearest=near)


@dataclass(frozen=True)
class LimbRole:
    """What a limb is, apart from its shape: its naming group (arm, leg, front, hind, wing, arthro,
    pecfin, pelfin), kind (leg, arm, wing, fin), position (front, middle, hind), arthropod pair
    number (1 = front), and the names of its foot and toe segments (if any)."""

    group: str
    kind: str
    position: str = ""
    n: int = 0
    foot: str = ""
    toe: str = ""


class Builder:
    """Collects bones (left side first, then mirrored exactly), mesh parts and roles."""

    def __init__(self) -> None:
        self.keys: list[BoneKey] = []
        self.parents: list[int] = []
        self.heads: list[np.ndarray] = []
        self.tails: list[np.ndarray] = []
        self.mirror_of: dict[int, int] = {}  # right joint -> left joint
        self.parts: list[Tube] = []
        self.limbs: list[Limb] = []
        self.pelvis = -1
        self.spine: list[int] = []
        self.neck: list[int] = []
        self.head = -1
        self.jaw = -1
        self.tail: list[int] = []
        self.extras: dict[str, list[int]] = {}

    def bone(self, key: BoneKey, parent: int, head, tail) -> int:
        self.keys.append(key)
        self.parents.append(int(parent))
        self.heads.append(np.asarray(head, dtype=np.float64))
        self.tails.append(np.asarray(tail, dtype=np.float64))
        return len(self.keys) - 1

    def chain(self, role: str, parent: int, points, side: int = CENTRE) -> list[int]:
        """Bones point to point, numbered from 1 (spine, neck, tail, antenna...)."""
        out = []
        for k in range(len(points) - 1):
            parent = self.bone(BoneKey(role, side, k + 1), parent, points[k], points[k + 1])
            out.append(parent)
        return out

    def part(self, points, radii, joints, up, **kwargs) -> None:
        self.parts.append(Tube(np.asarray(points, dtype=np.float64), np.asarray(radii, dtype=np.float64),
                                list(joints), np.asarray(up, dtype=np.float64), **kwargs))

    def sided(self, build) -> tuple[list[int], list[int]]:
        """Run `build()` (adds left bones and parts, returns left joints), then mirror it."""
        first_bone, first_part = len(self.keys), len(self.parts)
        left = build()
        end_bone, end_part = len(self.keys), len(self.parts)
        mapping: dict[int, int] = {}
        for i in range(first_bone, end_bone):
            key = self.keys[i]
            if key.side != LEFT:
                raise AssertionError(f"mirroring a bone that is not on the left: {key}")
            j = self.bone(replace(key, side=RIGHT), mapping.get(self.parents[i], self.parents[i]),
                          self.heads[i] * FLIP, self.tails[i] * FLIP)
            mapping[i] = j
            self.mirror_of[j] = i
        for part in self.parts[first_part:end_part]:
            self.parts.append(part.mirrored(mapping))
        return left, [mapping[j] for j in left]

    def limb(self, role: LimbRole, segs: list[str], points, parent: int, mesh=None, **part_kwargs) -> None:
        """A left chain girdle→tip with its tube (or `mesh(joints)` parts), mirrored to the right."""

        def build() -> list[int]:
            joints, prev = [], parent
            for k, seg in enumerate(segs):
                prev = self.bone(BoneKey(seg, LEFT, 0, role.group, role.n), prev, points[k], points[k + 1])
                joints.append(prev)
            if mesh is None:
                self.part(points, part_kwargs.pop("radii"), joints, part_kwargs.pop("up", -Y),
                          parent=parent, **part_kwargs)
            else:
                mesh(joints)
            return joints

        left, right = self.sided(build)
        for side, joints in ((LEFT, left), (RIGHT, right)):
            self.limbs.append(Limb(joints, side, role.kind, role.position,
                                   joints[segs.index(role.foot)] if role.foot in segs else -1,
                                   joints[segs.index(role.toe)] if role.toe in segs else -1))

    def paired(self, name: str, build: Callable[[], list[int]]) -> None:
        """Run `build()` on the left, mirror it, and list both sides' joints as the extra `name`."""
        left, right = self.sided(build)
        self.extra(name, left + right)

    def paired_bone(self, name: str, role: str, parent: int, base, tip, radii, up, **part_kwargs) -> None:
        """One left bone base → tip with a tube along it, mirrored, listed as the extra `name` (ears,
        mandibles, chelicerae, a cobra's hood)."""

        def build() -> list[int]:
            j = self.bone(BoneKey(role, LEFT), parent, base, tip)
            self.part([base, tip], radii, [j], up, parent=parent, **part_kwargs)
            return [j]

        self.paired(name, build)

    def paired_chain(self, name: str, role: str, parent: int, points, radii, up, **part_kwargs) -> None:
        """A left chain through `points` with a tube along it, mirrored, listed as the extra `name`
        (antennae, pedipalps)."""

        def build() -> list[int]:
            joints = self.chain(role, parent, points, side=LEFT)
            self.part(points, radii, joints, up, parent=parent, **part_kwargs)
            return joints

        self.paired(name, build)

    def extra(self, name: str, joints: list[int]) -> None:
        self.extras.setdefault(name, []).extend(joints)

    @property
    def size(self) -> float:
        points = np.concatenate([np.array(self.heads), np.array(self.tails)])
        return float(np.max(points.max(0) - points.min(0)))


def jit(rng: np.random.Generator, value: float, rel: float = 0.1) -> float:
    """`value` scaled by a uniform factor in [1-rel, 1+rel]: plausible individual variation."""
    return float(value) * float(rng.uniform(1.0 - rel, 1.0 + rel))


def unit(*v: float) -> np.ndarray:
    a = np.array(v, dtype=np.float64)
    return a / np.linalg.norm(a)


def radial(deg: float) -> np.ndarray:
    """Horizontal direction on the left side, `deg` from +X towards +Y (backwards)."""
    a = math.radians(deg)
    return np.array([math.cos(a), math.sin(a), 0.0])


def pick(rng: np.random.Generator, options, weights=None):
    p = None if weights is None else np.asarray(weights, dtype=np.float64) / np.sum(weights)
    return options[int(rng.choice(len(options), p=p))]

