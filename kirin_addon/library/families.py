"""Creature families: randomised skeletons with joint roles, varied naming and a skinned mesh.

`build_creature(family, seed)` gives a `Creature` in the canonical frame (+Z up, facing −Y, the
creature's left on +X, metres). Everything is deterministic by seed, and three independent
random streams keep the parts apart: proportions/rolls (so the same seed gives the same geometry
under every naming style), names, and the species/pose/naming draw.

Ground: legged families stand with the head of every `Limb.foot` joint at z = 0 (the paw, hoof,
ball of the foot or tarsus tip), and their mesh is flattened at z = 0 so soles sit on the floor.
Serpents lie with a flattened belly at z = 0. Fish float: the whole fish is lifted so its lowest
mesh point (belly or a fin) is at z = 0.

Mesh: closed tubes with elliptic sections and rounded caps around each body part (torso and neck
in one, then head, jaw, limbs, tail, ears, flat wings and fins), framed by parallel transport so
they never twist, wound so normals face out. Each vertex follows its segment's joint and blends
smoothly half-way into the neighbouring joint across each joint (at most 3 influences, stored in
4 columns; rows sum to 1). A creature has about 0.45k (boxy robots) to 3k vertices.

Roles: `Limb.foot` is the joint whose head rests on the ground — the paw/hoof digit of a
quadruped, the ball of the foot (ToeBase; its parent is the ankle) of a biped, the toes of a bird,
the tarsus of an insect or spider — and `Limb.toe` the bone beyond it when there is one (a
biped's toe end). Limbs run girdle → tip; arthropod legs are coxa → tarsus. Serpents and fish are
rooted mid-body (the vent / the centre of mass): `spine` runs forward to the head, `tail` back.
Arthropod abdomens, antennae, mandibles, chelicerae, pedipalps, ears, horns, a cobra's hood and
the unpaired fins are `extras`; paired fins are limbs of kind "fin".

Joint names follow one of `NAMING_STYLES`; where a style has no word for a part (Mixamo for a
tail or a spider leg) a consistent one is invented. Rolls vary per bone as they do on real rigs
(all zero, quarter turns, random; mirrored across the body or not), and some rest orientations
vary too (pelvis and head bones point different ways), while joint positions stay anatomical.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..core.creature import CENTRE, FAMILIES, LEFT, RIGHT, Creature, Limb
from ..core.rig import rig_from_bones
from ..core.skinning import SkinnedMesh

SPECIES: dict[str, tuple[str, ...]] = {
    "quadruped": ("wolf", "dog", "fox", "horse", "deer", "cat", "bear", "cow", "rat"),
    "biped": ("human", "knight", "robot", "goblin"),
    "bird": ("pigeon", "eagle", "chicken", "parrot"),
    "hexapod": ("ant", "beetle"),
    "spider": ("tarantula", "jumping_spider"),
    "serpent": ("snake", "cobra"),
    "dragon": ("dragon",),
    "fish": ("trout", "shark", "tuna"),
}
NAMING_STYLES = ("mixamo", "rigify", "gltf", "quaternius", "unreal", "bip", "arbitrary")
POSES: dict[str, tuple[str, ...]] = {"biped": ("T", "A")}  # rest-pose variants where a family has them

_FLIP = np.array([-1.0, 1.0, 1.0])
_X, _Y, _Z = np.eye(3)


# --------------------------------------------------------------------------- bones and parts
@dataclass(frozen=True)
class _Key:
    """What a bone is, independent of naming: the role plus where it sits."""

    role: str  # trunk role (pelvis, spine, neck, head, tail, ear...) or limb segment
    side: int = CENTRE
    index: int = 0  # 1-based position in a numbered chain (spine, neck, tail, antenna...), else 0
    group: str = ""  # limb group: arm, leg, front, hind, wing, arthro, pecfin, pelfin
    n: int = 0  # arthropod leg pair, 1 = front


@dataclass
class _Part:
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

    def mirrored(self, mapping: dict[int, int]) -> _Part:
        near = None
        if self.nearest is not None:
            near = [(mapping.get(j, j), a * _FLIP, b * _FLIP) for j, a, b in self.nearest]
        return replace(self, points=self.points * _FLIP, up=self.up * _FLIP,
                       joints=[mapping.get(j, j) for j in self.joints],
                       parent=mapping.get(self.parent, self.parent), nearest=near)


class _Builder:
    """Collects bones (left side first, then mirrored exactly), mesh parts and roles."""

    def __init__(self) -> None:
        self.keys: list[_Key] = []
        self.parents: list[int] = []
        self.heads: list[np.ndarray] = []
        self.tails: list[np.ndarray] = []
        self.mirror_of: dict[int, int] = {}  # right joint -> left joint
        self.parts: list[_Part] = []
        self.limbs: list[Limb] = []
        self.pelvis = -1
        self.spine: list[int] = []
        self.neck: list[int] = []
        self.head = -1
        self.jaw = -1
        self.tail: list[int] = []
        self.extras: dict[str, list[int]] = {}

    def bone(self, key: _Key, parent: int, head, tail) -> int:
        self.keys.append(key)
        self.parents.append(int(parent))
        self.heads.append(np.asarray(head, dtype=np.float64))
        self.tails.append(np.asarray(tail, dtype=np.float64))
        return len(self.keys) - 1

    def chain(self, role: str, parent: int, points, side: int = CENTRE) -> list[int]:
        """Bones point to point, numbered from 1 (spine, neck, tail, antenna...)."""
        out = []
        for k in range(len(points) - 1):
            parent = self.bone(_Key(role, side, k + 1), parent, points[k], points[k + 1])
            out.append(parent)
        return out

    def part(self, points, radii, joints, up, **kwargs) -> None:
        self.parts.append(_Part(np.asarray(points, dtype=np.float64), np.asarray(radii, dtype=np.float64),
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
                          self.heads[i] * _FLIP, self.tails[i] * _FLIP)
            mapping[i] = j
            self.mirror_of[j] = i
        for part in self.parts[first_part:end_part]:
            self.parts.append(part.mirrored(mapping))
        return left, [mapping[j] for j in left]

    def limb(self, group: str, segs: list[str], points, parent: int, kind: str, position: str = "",
             n: int = 0, foot: str = "", toe: str = "", mesh=None, **part_kwargs) -> None:
        """A left chain girdle→tip with its tube (or `mesh(joints)` parts), mirrored to the right."""

        def build() -> list[int]:
            joints, prev = [], parent
            for k, seg in enumerate(segs):
                prev = self.bone(_Key(seg, LEFT, 0, group, n), prev, points[k], points[k + 1])
                joints.append(prev)
            if mesh is None:
                self.part(points, part_kwargs.pop("radii"), joints, part_kwargs.pop("up", -_Y),
                          parent=parent, **part_kwargs)
            else:
                mesh(joints)
            return joints

        left, right = self.sided(build)
        for side, joints in ((LEFT, left), (RIGHT, right)):
            self.limbs.append(Limb(joints, side, kind, position,
                                   joints[segs.index(foot)] if foot in segs else -1,
                                   joints[segs.index(toe)] if toe in segs else -1))

    def extra(self, name: str, joints: list[int]) -> None:
        self.extras.setdefault(name, []).extend(joints)

    @property
    def size(self) -> float:
        points = np.concatenate([np.array(self.heads), np.array(self.tails)])
        return float(np.max(points.max(0) - points.min(0)))


def _jit(rng: np.random.Generator, value: float, rel: float = 0.1) -> float:
    """`value` scaled by a uniform factor in [1-rel, 1+rel]: plausible individual variation."""
    return float(value) * float(rng.uniform(1.0 - rel, 1.0 + rel))


def _unit(*v: float) -> np.ndarray:
    a = np.array(v, dtype=np.float64)
    return a / np.linalg.norm(a)


def _radial(deg: float) -> np.ndarray:
    """Horizontal direction on the left side, `deg` from +X towards +Y (backwards)."""
    a = math.radians(deg)
    return np.array([math.cos(a), math.sin(a), 0.0])


def _pick(rng: np.random.Generator, options, weights=None):
    p = None if weights is None else np.asarray(weights, dtype=np.float64) / np.sum(weights)
    return options[int(rng.choice(len(options), p=p))]


# --------------------------------------------------------------------------- quadrupeds, dragons
# size: withers height (m). body, neck, head, tail: lengths in withers heights; elbow, carpus,
# hock: joint heights in withers heights. Angles in degrees: the neck above the horizontal, the
# head below it, the tail root above it and the tail's curl per joint. width: torso width/depth;
# tail_r: tail root radius in withers heights, bushy: mid-tail thickening.
_QUADRUPEDS: dict[str, dict] = {
    "wolf": dict(size=0.80, body=0.95, neck=0.36, head=0.34, tail=0.60, elbow=0.50, carpus=0.17,
                 hock=0.28, stance="digitigrade", ears=("pointy", 0.32), tail_joints=5, neck_deg=38,
                 head_deg=18, tail_deg=(-35, -6), width=0.78, tail_r=0.06, bushy=1.4),
    "dog": dict(size=0.60, body=0.95, neck=0.36, head=0.36, tail=0.50, elbow=0.52, carpus=0.17, hock=0.27,
                stance="digitigrade", ears=("droopy", 0.35), tail_joints=5, neck_deg=40, head_deg=15,
                tail_deg=(10, -4), width=0.8, tail_r=0.045, bushy=1.0),
    "fox": dict(size=0.40, body=1.10, neck=0.32, head=0.38, tail=0.95, elbow=0.50, carpus=0.16, hock=0.27,
                stance="digitigrade", ears=("pointy", 0.42), tail_joints=6, neck_deg=35, head_deg=15,
                tail_deg=(-25, -2), width=0.75, tail_r=0.07, bushy=1.8),
    "horse": dict(size=1.60, body=1.00, neck=0.55, head=0.40, tail=0.45, elbow=0.60, carpus=0.30,
                  hock=0.34, stance="unguligrade", ears=("pointy", 0.26), tail_joints=4, neck_deg=52,
                  head_deg=55, tail_deg=(-55, -6), width=0.75, tail_r=0.05, bushy=1.2),
    "deer": dict(size=1.10, body=0.95, neck=0.52, head=0.32, tail=0.14, elbow=0.62, carpus=0.30,
                 hock=0.36, stance="unguligrade", ears=("long", 0.50), tail_joints=3, neck_deg=58,
                 head_deg=35, tail_deg=(20, -10), width=0.7, tail_r=0.05, bushy=1.0),
    "cat": dict(size=0.28, body=1.30, neck=0.30, head=0.34, tail=1.05, elbow=0.52, carpus=0.13, hock=0.24,
                stance="digitigrade", ears=("pointy", 0.32), tail_joints=7, neck_deg=30, head_deg=10,
                tail_deg=(25, 5), width=0.75, tail_r=0.04, bushy=1.0),
    "bear": dict(size=1.00, body=1.20, neck=0.30, head=0.40, tail=0.10, elbow=0.42, carpus=0.09,
                 hock=0.07, stance="plantigrade", ears=("round", 0.18), tail_joints=3, neck_deg=15,
                 head_deg=20, tail_deg=(-20, -10), width=0.95, tail_r=0.05, bushy=1.0),
    "cow": dict(size=1.40, body=1.15, neck=0.30, head=0.38, tail=0.62, elbow=0.46, carpus=0.24, hock=0.33,
                stance="unguligrade", ears=("side", 0.22), tail_joints=5, neck_deg=12, head_deg=50,
                tail_deg=(-75, -2), width=0.9, tail_r=0.03, bushy=1.0),
    "rat": dict(size=0.08, body=1.70, neck=0.25, head=0.60, tail=2.00, elbow=0.38, carpus=0.06, hock=0.06,
                stance="plantigrade", ears=("round", 0.28), tail_joints=8, neck_deg=18, head_deg=12,
                tail_deg=(-5, -3), width=0.9, tail_r=0.06, bushy=1.0),
    "dragon": dict(size=1.60, body=1.30, neck=0.85, head=0.45, tail=2.20, elbow=0.45, carpus=0.17,
                   hock=0.28, stance="digitigrade", ears=("horn", 0.35), tail_joints=10, neck_deg=42,
                   head_deg=20, tail_deg=(-15, -1.5), width=0.85, tail_r=0.12, bushy=1.0),
}
# How far the paw lies forward of the wrist/hock and how long the toe is, in withers heights.
_STANCE = {"unguligrade": (0.03, 0.02, 0.055), "digitigrade": (0.06, 0.05, 0.07),
           "plantigrade": (0.10, 0.16, 0.09)}  # (front forward, hind forward, toe length)


def _quadruped(b: _Builder, rng: np.random.Generator, species: str, pose: str | None) -> None:
    p = _QUADRUPEDS[species]
    dragon = species == "dragon"
    W = _jit(rng, p["size"], 0.35 if dragon else 0.2)
    body = _jit(rng, p["body"]) * W
    neck_len = _jit(rng, p["neck"], 0.15) * W
    head_len = _jit(rng, p["head"]) * W
    tail_len = _jit(rng, p["tail"], 0.15) * W
    elbow = _jit(rng, p["elbow"], 0.06) * W
    g = (W - elbow) / 1.95  # torso vertical radius: its top reaches W, its belly the elbows
    w = _jit(rng, p["width"]) * g  # torso half-width
    z_s = W - 0.8 * g  # spine line, near the top of the torso
    n_spine = int(rng.integers(4, 6) if dragon else rng.integers(3, 6))
    n_neck = int(rng.integers(4, 7) if dragon else rng.integers(2, 4))
    n_tail = int(np.clip(p["tail_joints"] + rng.integers(-2 if dragon else -1, 3 if dragon else 2),
                         8 if dragon else 3, 12 if dragon else 8))
    girdles = dragon or rng.random() < 0.7

    # Trunk: the pelvis bone and the spine share the back line, pelvis at the rear.
    ts = np.linspace(0.0, 1.0, n_spine + 2)
    trunk = np.stack([np.zeros_like(ts), body / 2 - body * ts, z_s + 0.05 * g * np.sin(np.pi * ts)], axis=-1)
    pelvis_tail = _pick(rng, [trunk[1], trunk[0] + (0, 0, body / (n_spine + 1)),
                              trunk[0] + (0, body / (n_spine + 1), 0)], [0.6, 0.25, 0.15])
    b.pelvis = b.bone(_Key("pelvis"), -1, trunk[0], pelvis_tail)
    b.spine = b.chain("spine", b.pelvis, trunk[1:])
    chest = b.spine[-1]

    angles = np.radians(_jit(rng, p["neck_deg"], 0.15) + rng.uniform(-6, 6, n_neck))
    neck_pts = [trunk[-1]]
    for a in angles:
        neck_pts.append(neck_pts[-1] + neck_len / n_neck * np.array([0.0, -math.cos(a), math.sin(a)]))
    b.neck = b.chain("neck", chest, neck_pts)
    hj = neck_pts[-1]
    beta = math.radians(_jit(rng, p["head_deg"], 0.2))
    fwd = np.array([0.0, -math.cos(beta), -math.sin(beta)])  # along the skull
    up_h = np.array([0.0, -math.sin(beta), math.cos(beta)])  # the skull's up
    r_h = (0.36 if species in ("bear", "cat", "rat") else 0.3) * head_len  # skull radius
    head_tail = hj + head_len * fwd if rng.random() < 0.8 else hj + 1.1 * r_h * _Z
    b.head = b.bone(_Key("head"), b.neck[-1], hj, head_tail)
    b.jaw = b.bone(_Key("jaw"), b.head, hj + 0.2 * head_len * fwd - 0.45 * r_h * up_h,
                   hj + 0.9 * head_len * fwd - 0.4 * r_h * up_h)

    # Tail: a chain curling by a fixed angle per joint, resting on the ground if it gets there.
    t0, curl = p["tail_deg"]
    t0 = math.radians(t0 + rng.uniform(-10, 10))
    curl = math.radians(curl * rng.uniform(0.6, 1.4))
    tail_pts = [np.array([0.0, body / 2 + 0.25 * g, z_s + 0.05 * g])]
    for k in range(n_tail):
        a = float(np.clip(t0 + k * curl, math.radians(-80), math.radians(70)))
        nxt = tail_pts[-1] + tail_len / n_tail * np.array([0.0, math.cos(a), math.sin(a)])
        nxt[2] = max(nxt[2], 0.03 * W)
        tail_pts.append(nxt)
    b.tail = b.chain("tail", b.pelvis, tail_pts)

    # Legs (left, mirrored): girdle, upper, lower, metapodial, digit whose head rests on z = 0.
    fwd_f, fwd_h, toe = (v * W * rng.uniform(0.85, 1.15) for v in _STANCE[p["stance"]])
    r_u = 0.36 * g * rng.uniform(0.9, 1.1)
    paw = {"unguligrade": (0.42, 0.42), "digitigrade": (0.3, 0.5), "plantigrade": (0.28, 0.6)}[p["stance"]]
    x_f, x_h = 0.62 * w, 0.66 * w
    shoulder = np.array([x_f, -body / 2 - 0.1 * g, z_s - 0.55 * g])
    elbow_p = np.array([x_f, -body / 2 + 0.25 * g, elbow])
    carpus = np.array([x_f, elbow_p[1] - 0.02 * W, _jit(rng, p["carpus"]) * W])
    paw_f = np.array([x_f, carpus[1] - fwd_f, 0.0])
    front = [np.array([0.55 * x_f, -body / 2 + 0.45 * g, z_s + 0.35 * g]), shoulder, elbow_p, carpus, paw_f,
             paw_f - (0, toe, 0)]
    front_r = [(1.0, 0.8), (1.0, 0.9), (0.7, 0.6), (0.42, 0.4), paw, (0.6 * paw[0], 0.8 * paw[1])]
    hip = np.array([x_h, body / 2 + 0.1 * g, z_s - 0.45 * g])
    stifle = np.array([x_h, hip[1] - 0.16 * W, min(elbow, 0.8 * hip[2])])
    hock = np.array([x_h, hip[1] + 0.1 * W, _jit(rng, p["hock"]) * W])
    paw_h = np.array([x_h, hock[1] - fwd_h, 0.0])
    hind = [np.array([0.3 * w, body / 2 - 0.15 * g, z_s + 0.1 * g]), hip, stifle, hock, paw_h,
            paw_h - (0, toe, 0)]
    hind_r = [(0.9, 0.8), (1.25, 0.95), (0.75, 0.6), (0.4, 0.38), paw, (0.6 * paw[0], 0.8 * paw[1])]
    segs = ["girdle", "upper", "lower", "meta", "digit"]
    first = 0 if girdles else 1
    for group, pts, radii, parent, position in (("front", front, front_r, chest, "front"),
                                                ("hind", hind, hind_r, b.pelvis, "hind")):
        b.limb(group, segs[first:], pts[first:], parent, "leg", position, foot="digit",
               radii=np.array(radii[first:]) * r_u, sides=8, caps=(0.8, 0.6))

    if dragon:
        _dragon_wings(b, rng, W, body, g, w, z_s, chest)

    # Mesh: one tube for torso and neck, then head, jaw, ears or horns, tail.
    drop = np.array([0.0, 0.0, -0.2 * g])
    points = [trunk[0] + drop] + [t + drop for t in trunk[1:-1]] + [trunk[-1] + 0.5 * drop] + neck_pts[1:]
    r_n0, r_n1 = 0.6 * g, 0.85 * r_h
    # Loins slimmer than the chest, as in most mammals.
    radii = ([(0.85 * g, 0.88 * w)] + [(f * g, (0.5 + 0.5 * f) * w) for f in np.linspace(0.88, 1.08, n_spine)]
             + [(0.95 * g, 0.88 * w)]
             + [(r_n0 + (r_n1 - r_n0) * f, 0.9 * (r_n0 + (r_n1 - r_n0) * f))
                for f in np.linspace(0.35, 1.0, n_neck)])
    b.part(points, radii, [b.pelvis, *b.spine, *b.neck], _Z, sides=14, caps=(1.0, 0.3))
    snout = 0.45 if species in ("bear", "cat") else 0.32
    b.part([hj + f * head_len * fwd for f in (-0.15, 0.25, 0.62, 1.0)],
           np.array([(0.85, 0.8), (1.0, 0.95), (snout + 0.1, snout), (snout * 0.7, snout * 0.6)]) * r_h,
           [b.head] * 3, up_h, sides=12, caps=(0.8, 0.6), parent=b.neck[-1])
    b.part([b.heads[b.jaw], b.tails[b.jaw]], np.array([(0.25, 0.4), (0.15, 0.2)]) * r_h, [b.jaw], up_h,
           sides=8, caps=(0.5, 0.6), parent=b.head)
    _ears(b, rng, p["ears"], hj, fwd, up_h, r_h, head_len)
    bushy = p["bushy"]
    tail_r = _jit(rng, p["tail_r"]) * W
    b.part(tail_pts, [(tail_r * f, tail_r * f) for f in np.interp(np.linspace(0, 1, n_tail + 1), [0, 0.5, 1],
                                                                   [1.0, 0.75 * bushy, 0.25 * bushy])],
           b.tail, _Z, sides=8, caps=(0.5, 1.0), parent=b.pelvis)


def _ears(b: _Builder, rng: np.random.Generator, spec: tuple[str, float], hj, fwd, up_h, r_h,
          head_len) -> None:
    style, length = spec
    length = _jit(rng, length, 0.15) * head_len
    base = hj + 0.05 * head_len * fwd + 0.75 * r_h * up_h + 0.5 * r_h * _X
    direction, width, hint = {
        "pointy": (_unit(0.3, 0.2, 1.0), 0.45, _X),
        "round": (_unit(0.6, 0.1, 1.0), 0.75, _X),
        "droopy": (_unit(0.45, 0.15, -1.0), 0.5, _Y),  # hanging beside the head
        "side": (_unit(1.0, 0.25, -0.35), 0.5, _Y),  # sticking out sideways
        "long": (_unit(0.9, 0.1, 0.8), 0.42, _unit(-0.7, 0, 0.8)),
        "horn": (_unit(0.35, 1.0, 0.55), 0.2, _Z),
    }[style]
    horn = style == "horn"

    def build() -> list[int]:
        tip = base + length * direction
        j = b.bone(_Key("horn" if horn else "ear", LEFT), b.head, base, tip)
        radii = [(width * length, width * length), (0.04 * length, 0.04 * length)] if horn else \
            [(width * length, 0.07 * length), (0.12 * width * length, 0.04 * length)]
        b.part([base - 0.15 * length * direction, tip], radii, [j], hint, sides=6 if horn else 8,
               caps=(0.5, 0.3), parent=b.head)
        return [j]

    left, right = b.sided(build)
    b.extra("horns" if horn else "ears", left + right)


def _dragon_wings(b: _Builder, rng: np.random.Generator, W: float, body: float, g: float, w: float,
                  z_s: float, chest: int) -> None:
    span = _jit(rng, 2.0, 0.2) * W  # one wing, root to tip
    two_fingers = rng.random() < 0.5
    lift = math.radians(rng.uniform(-10, 25))  # wings spread, raised by a random angle
    dirs = [_unit(0.8, 0.35, 0.5), _unit(0.9, -0.25, 0.15), _unit(0.95, 0.1, 0.0), _unit(0.7, 0.7, -0.15),
            _unit(0.4, 0.9, -0.2)]
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
        b.part(points[:2], [(0.3 * g, 0.3 * g), (0.15 * g, 0.15 * g)], joints[:1], _Z, sides=8,
               caps=(0.5, 0.5), parent=chest)
        # The membrane's leading edge runs along the arm and finger bones; its chord trails backwards.
        m = len(points) - 1
        b.part(points[1:], np.stack([chord[:m], thick[:m]], axis=1), joints[1:], _Y, sides=8, caps=(0.3, 0.3),
               shift=1.0, parent=joints[0])

    b.limb("wing", segs, points, chest, "wing", mesh=wing_mesh)


# --------------------------------------------------------------------------- bipeds
# height (m); fractions of the height: leg (hip-joint height), head, shoulder (shoulder-joint x),
# hips (hip-joint x), arm (length), girth (torso half-width), depth (torso half-depth), foot.
_BIPEDS: dict[str, dict] = {
    "human": dict(height=1.75, leg=0.50, head=0.13, shoulder=0.105, hips=0.055, arm=0.44, girth=0.085,
                  depth=0.06, foot=0.15, ears=False, boxy=False),
    "knight": dict(height=1.85, leg=0.49, head=0.13, shoulder=0.125, hips=0.06, arm=0.44, girth=0.105,
                   depth=0.075, foot=0.16, ears=False, boxy=False),
    "robot": dict(height=1.90, leg=0.50, head=0.12, shoulder=0.13, hips=0.065, arm=0.46, girth=0.10,
                  depth=0.07, foot=0.16, ears=False, boxy=True),
    "goblin": dict(height=1.00, leg=0.40, head=0.20, shoulder=0.11, hips=0.06, arm=0.50, girth=0.10,
                   depth=0.08, foot=0.17, ears=True, boxy=False),
}


def _biped(b: _Builder, rng: np.random.Generator, species: str, pose: str | None) -> None:
    p = _BIPEDS[species]
    h = _jit(rng, p["height"], 0.12)
    head = _jit(rng, p["head"]) * h
    z_hip = _jit(rng, p["leg"], 0.05) * h
    n_spine, n_neck = int(rng.integers(2, 4)), int(rng.integers(1, 3))
    boxy = p["boxy"]
    sides, phase = (4, math.pi / 4) if boxy else (10, 0.0)
    z_head = h - 0.8 * head  # skull base
    z_neck = z_head - _jit(rng, 0.045, 0.2) * h
    z_p = z_hip + 0.03 * h

    ts = np.linspace(0.0, 1.0, n_spine + 2)
    trunk = np.stack([np.zeros_like(ts), 0.012 * h * np.sin(np.pi * ts), z_p + (z_neck - z_p) * ts], axis=-1)
    seg = (z_neck - z_p) / (n_spine + 1)
    pelvis_tail = _pick(rng, [trunk[1], trunk[0] - (0, 0, seg), trunk[0] - (0, seg, 0)], [0.6, 0.25, 0.15])
    b.pelvis = b.bone(_Key("pelvis"), -1, trunk[0], pelvis_tail)
    b.spine = b.chain("spine", b.pelvis, trunk[1:])
    neck_pts = [trunk[-1] + (0, -0.01 * h * f, (z_head - z_neck) * f) for f in np.linspace(0, 1, n_neck + 1)]
    b.neck = b.chain("neck", b.spine[-1], neck_pts)
    hj = neck_pts[-1]
    head_tail = hj + (0, 0, 0.8 * head) if rng.random() < 0.75 else hj + (0, -0.5 * head, 0.3 * head)
    b.head = b.bone(_Key("head"), b.neck[-1], hj, head_tail)
    if boxy or species == "goblin" or rng.random() < 0.5:
        b.jaw = b.bone(_Key("jaw"), b.head, hj + (0, -0.1 * head, 0.0), hj + (0, -0.42 * head, -0.15 * head))
        b.part([b.heads[b.jaw], b.tails[b.jaw]], np.array([(0.12, 0.2), (0.08, 0.12)]) * head, [b.jaw], -_Y,
               sides=sides, phase=phase, caps=(0.5, 0.5), parent=b.head)
    if p["ears"]:
        ear = 0.5 * head * rng.uniform(0.8, 1.2)

        def ears() -> list[int]:
            base = hj + (0.38 * head, -0.05 * head, 0.35 * head)
            tip = base + ear * _unit(1.0, 0.35, 0.45)
            j = b.bone(_Key("ear", LEFT), b.head, base, tip)
            b.part([base, tip], [(0.35 * ear, 0.06 * ear), (0.03 * ear, 0.02 * ear)], [j], _Z,
                   caps=(0.3, 0.3), parent=b.head)
            return [j]

        left, right = b.sided(ears)
        b.extra("ears", left + right)

    # Arms: clavicle, upper arm, forearm, hand; T-pose horizontal or A-pose angled down.
    down = 0.0 if pose == "T" else math.radians(rng.uniform(30, 50))
    arm = _jit(rng, p["arm"], 0.06) * h
    d_up = np.array([math.cos(down), 0.0, -math.sin(down)])
    bend = math.radians(rng.uniform(0, 12))  # rigs often keep a slight elbow bend
    d_fore = _unit(*(d_up + np.array([0.0, -math.tan(bend), 0.0])))
    z_arm = z_neck - 0.03 * h
    sh = np.array([_jit(rng, p["shoulder"], 0.08) * h, 0.0, z_arm])
    elbow = sh + 0.43 * arm * d_up
    wrist = elbow + 0.34 * arm * d_fore
    clavicle = np.array([0.02 * h, -0.01 * h, z_arm + 0.01 * h])
    arm_pts = [clavicle, sh, elbow, wrist, wrist + 0.23 * arm * d_fore]
    r = 0.045 * h * (p["girth"] / 0.085)
    arm_r = np.array([(0.8, 0.8), (1.0, 1.0), (0.75, 0.75), (0.5, 0.6), (0.3, 0.8)]) * r
    b.limb("arm", ["girdle", "upper", "lower", "meta"], arm_pts, b.spine[-1], "arm", radii=arm_r, up=_Z,
           sides=sides, phase=phase, caps=(0.6, 0.8))

    # Legs: thigh, shin, foot (ankle→ball), toe whose head (the ball) rests on z = 0, maybe a toe end.
    x = _jit(rng, p["hips"], 0.1) * h
    foot = _jit(rng, p["foot"], 0.08) * h
    toe_end = rng.random() < 0.5
    knee = np.array([0.98 * x, -rng.uniform(0.0, 0.015) * h, 0.52 * z_hip])
    ankle = np.array([0.96 * x, 0.0, 0.045 * h])
    ball = np.array([0.98 * x, -0.45 * foot, 0.0])
    tip = np.array([x, -0.75 * foot, 0.0])
    toes = [ball + 0.6 * (tip - ball), tip] if toe_end else [tip]
    leg_pts = [np.array([x, 0.0, z_hip]), knee, ankle, ball, *toes]
    segs = ["upper", "lower", "meta", "digit"] + (["digit_end"] if toe_end else [])
    r = 0.075 * h * (p["girth"] / 0.085)
    leg_r = [(1.0, 1.0), (0.6, 0.6), (0.42, 0.42), (0.22, 0.55)] + [(0.15, 0.48)] * (2 if toe_end else 1)
    b.limb("leg", segs, leg_pts, b.pelvis, "leg", foot="digit", toe="digit_end", radii=np.array(leg_r) * r,
           up=-_Y, sides=sides, phase=phase, caps=(0.6, 0.5))

    # Mesh: torso from the crotch to the skull base, then the head.
    g, d = p["girth"] * h, p["depth"] * h
    points = [trunk[0] - (0, 0, 0.06 * h)] + list(trunk) + neck_pts[1:]
    radii = ([(0.8 * d, 0.9 * g), (d, 1.05 * g)] + [(0.85 * d, 0.85 * g)] * (n_spine - 1)
             + [(1.05 * d, 1.1 * g), (0.55 * d, 0.5 * g)] + [(0.4 * d, 0.35 * g)] * n_neck)
    b.part(points, radii, [b.pelvis, b.pelvis, *b.spine, *b.neck], -_Y, sides=4 if boxy else 14, phase=phase,
           caps=(0.6, 0.2))
    b.part([hj - (0, 0, 0.15 * head), hj + (0, -0.08 * head, 0.3 * head), (0, -0.05 * head, h - 0.05 * head)],
           np.array([(0.38, 0.3), (0.55, 0.42), (0.4, 0.33)]) * head, [b.head, b.head], -_Y,
           sides=4 if boxy else 12, phase=phase, caps=(0.5, 0.8), parent=b.neck[-1])


# --------------------------------------------------------------------------- birds
# hip: hip height (m); other lengths in hip heights: body (pelvis→chest), girth (body radius),
# neck, head (skull diameter), beak, tail. pitch: body axis above horizontal; neck_deg: neck
# above horizontal; tail_deg: tail above the body axis; ankle: intertarsal joint height; hook: beak.
_BIRDS: dict[str, dict] = {
    "pigeon": dict(hip=0.085, body=1.7, girth=0.55, neck=0.8, head=0.45, beak=0.2, tail=1.1, pitch=22,
                   neck_deg=65, tail_deg=0, ankle=0.45, hook=0.1),
    "eagle": dict(hip=0.22, body=1.7, girth=0.55, neck=0.6, head=0.45, beak=0.3, tail=1.3, pitch=40,
                  neck_deg=70, tail_deg=5, ankle=0.5, hook=0.6),
    "chicken": dict(hip=0.20, body=1.4, girth=0.65, neck=1.0, head=0.36, beak=0.14, tail=0.8, pitch=15,
                    neck_deg=75, tail_deg=45, ankle=0.42, hook=0.1),
    "parrot": dict(hip=0.09, body=1.8, girth=0.5, neck=0.6, head=0.6, beak=0.3, tail=2.0, pitch=60,
                   neck_deg=80, tail_deg=-15, ankle=0.4, hook=0.8),
}


def _bird(b: _Builder, rng: np.random.Generator, species: str, pose: str | None) -> None:
    p = _BIRDS[species]
    s = _jit(rng, p["hip"], 0.2)
    body, rb = _jit(rng, p["body"]) * s, _jit(rng, p["girth"]) * s
    pitch = math.radians(_jit(rng, p["pitch"], 0.2))
    d = np.array([0.0, -math.cos(pitch), math.sin(pitch)])  # body axis, forward-up
    e = np.array([0.0, math.sin(pitch), math.cos(pitch)])  # the body's up
    n_spine, n_neck, n_tail = int(rng.integers(1, 3)), int(rng.integers(2, 5)), int(rng.integers(1, 3))
    pel = np.array([0.0, 0.4 * body * math.cos(pitch), s + 0.25 * rb])
    trunk = [pel + body * f * d for f in np.linspace(0, 1, n_spine + 2)]
    pelvis_tail = trunk[1] if rng.random() < 0.7 else trunk[0] + 0.5 * rb * _Z
    b.pelvis = b.bone(_Key("pelvis"), -1, trunk[0], pelvis_tail)
    b.spine = b.chain("spine", b.pelvis, trunk[1:])
    chest = trunk[-1]

    neck_len = _jit(rng, p["neck"]) * s
    base = math.radians(_jit(rng, p["neck_deg"], 0.1))
    neck_pts = [chest]
    for k in range(n_neck):  # a gentle S: steeper at the base, flatter under the head
        a = base + math.radians(15) * (0.5 - k / max(n_neck - 1, 1))
        neck_pts.append(neck_pts[-1] + neck_len / n_neck * np.array([0.0, -math.cos(a), math.sin(a)]))
    b.neck = b.chain("neck", b.spine[-1], neck_pts)
    hj = neck_pts[-1]
    rh = 0.5 * _jit(rng, p["head"]) * s
    beak = _jit(rng, p["beak"], 0.15) * s
    skull = hj + np.array([0.0, -0.5 * rh, 0.5 * rh])
    tip = skull + np.array([0.0, -0.9 * rh - beak, -0.3 * rh - p["hook"] * 0.5 * beak])
    b.head = b.bone(_Key("head"), b.neck[-1], hj, tip if rng.random() < 0.8 else hj + 1.4 * rh * _Z)
    b.jaw = b.bone(_Key("jaw"), b.head, skull + (0, -0.7 * rh, -0.35 * rh), tip + (0, 0.25 * beak, -0.1 * rh))

    tail_len = _jit(rng, p["tail"], 0.15) * s
    tau = math.radians(p["tail_deg"] + rng.uniform(-8, 8))
    tail_base = pel - 0.15 * body * d + 0.1 * rb * e
    # The tail's height falls as sin(tau - pitch): raise it where it would reach the ground.
    tau = max(tau, pitch + math.asin(float(np.clip((0.15 * s - tail_base[2]) / tail_len, -1.0, 1.0))))
    t_dir = -d * math.cos(tau) + e * math.sin(tau)
    tail_pts = [tail_base + tail_len * t_dir * f for f in np.linspace(0, 1, n_tail + 1)]
    b.tail = b.chain("tail", b.pelvis, tail_pts)

    # Legs: femur (inside the body), tibiotarsus, tarsometatarsus, toes whose head rests on z = 0.
    centre_y = (pel + 0.45 * body * d)[1]
    foot = np.array([0.45 * rb, centre_y, 0.0])
    ankle = np.array([0.5 * rb, centre_y + 0.15 * s, _jit(rng, p["ankle"]) * s])
    knee = np.array([0.55 * rb, ankle[1] - 0.3 * s, 0.5 * (ankle[2] + pel[2] - 0.35 * rb)])
    hip = pel + np.array([0.5 * rb, 0.0, 0.0]) - 0.35 * rb * e
    leg_pts = [hip, knee, ankle, foot, foot - (0, 0.4 * s * rng.uniform(0.9, 1.1), 0)]
    leg_r = np.array([(0.35, 0.35), (0.28, 0.26), (0.07, 0.07), (0.06, 0.07), (0.025, 0.06)]) * rb
    b.limb("leg", ["upper", "lower", "meta", "digit"], leg_pts, b.pelvis, "leg", foot="digit", radii=leg_r,
           up=-_Y, sides=8, caps=(0.5, 0.5))

    # Folded wings: humerus back, forearm forward, hand back to the primaries' tips (a Z fold).
    sh = chest - 0.15 * body * d + 0.35 * rb * e + 0.65 * rb * _X
    el = sh - 0.45 * body * d - 0.1 * rb * e + 0.25 * rb * _X
    wr = el + 0.3 * body * d - 0.15 * rb * e + 0.1 * rb * _X
    hand = 0.95 * body + 0.4 * tail_len
    if d[2] > 0:  # upright birds: the primaries stop short of the ground
        hand = min(hand, (wr[2] - 0.1 * rb * e[2] - 0.15 * s) / d[2])
    wing_tip = wr - hand * d - 0.1 * rb * e + 0.1 * rb * _X

    def wing_mesh(joints: list[int]) -> None:
        # The feathers lie along the body's side, just outside it.
        pts = [np.array([max(q[0], 0.92 * rb), q[1], q[2]]) for q in (sh, 0.5 * (sh + wing_tip), wing_tip)]
        b.part(pts, np.array([(0.55, 0.14), (0.6, 0.12), (0.15, 0.03)]) * rb, joints[:1] * 2, -e, sides=8,
               caps=(0.6, 0.4), shift=np.array([0.4, 0.6, 0.3]),
               nearest=[(joints[0], sh, el), (joints[1], el, wr), (joints[2], wr, wing_tip)])

    b.limb("wing", ["upper", "lower", "meta"], [sh, el, wr, wing_tip], b.spine[-1], "wing", mesh=wing_mesh)

    # Mesh: body and neck, head with beak, lower beak, tail fan.
    points = [trunk[0], *trunk[1:], *neck_pts[1:]]
    radii = ([(0.85 * rb, 0.8 * rb)] + [(rb, 0.95 * rb)] * n_spine + [(0.85 * rb, 0.8 * rb)]
             + [(r, r) for r in np.linspace(0.5 * rb, 0.7 * rh, n_neck)])
    b.part(points, radii, [b.pelvis, *b.spine, *b.neck], e, sides=12, caps=(1.2, 0.3))
    b.part([skull + (0, 0.8 * rh, 0), skull, skull + (0, -0.9 * rh, -0.1 * rh), tip],
           np.array([(0.7, 0.7), (1.0, 0.9), (0.45, 0.38), (0.05, 0.05)]) * rh, [b.head] * 3, _Z, sides=10,
           caps=(0.8, 0.2), parent=b.neck[-1])
    b.part([b.heads[b.jaw], b.tails[b.jaw]], np.array([(0.25, 0.3), (0.04, 0.04)]) * rh, [b.jaw], _Z, sides=6,
           caps=(0.4, 0.2), parent=b.head)
    b.part(tail_pts, [(0.3 * rb, 0.08 * rb)] + [(0.55 * rb * (1 + f), 0.05 * rb) for f in
                                                 np.linspace(0.3, 1.0, n_tail)], b.tail, _X, sides=8,
           caps=(0.5, 0.5), parent=b.pelvis)


# --------------------------------------------------------------------------- hexapods
# length: body length (m); fractions of it: height (thorax above ground), leg, head, thorax,
# petiole (0: none), abdomen, width (thorax), antenna. elbowed: ant-like antennae.
_HEXAPODS: dict[str, dict] = {
    "ant": dict(length=0.012, height=0.28, leg=1.0, head=0.22, thorax=0.32, petiole=0.06, abdomen=0.40,
                width=0.16, antenna=0.6, elbowed=True, mandibles=1.0, leg_r=0.03),
    "beetle": dict(length=0.035, height=0.2, leg=0.75, head=0.16, thorax=0.3, petiole=0.0, abdomen=0.56,
                   width=0.45, antenna=0.35, elbowed=False, mandibles=0.5, leg_r=0.035),
}


def _arthropod_leg(b: _Builder, parent: int, attach, deg: float, length: float,
                   segs: list[str], profile: list[tuple[float, float | None]], r: float, n: int,
                   position: str) -> None:
    """One leg pair in the vertical plane at `deg` azimuth: up to a knee, down to the ground, then out."""
    rad = _radial(deg)
    pts = [np.asarray(attach, dtype=np.float64)]
    for reach, rise in profile:  # (outward, upward) steps in leg lengths; None rise: down to z = 0
        q = pts[-1] + reach * length * rad
        q[2] = 0.0 if rise is None else q[2] + rise * length
        pts.append(q)
    radii = [(r * f, r * f) for f in np.linspace(1.2, 0.4, len(pts))]
    b.limb("arthro", segs, pts, parent, "leg", position, n=n, foot=segs[-1], radii=radii, up=_Z, sides=6,
           caps=(0.6, 0.8))


def _hexapod(b: _Builder, rng: np.random.Generator, species: str, pose: str | None) -> None:
    p = _HEXAPODS[species]
    L = _jit(rng, p["length"], 0.3)
    fr = np.array([_jit(rng, p[k]) for k in ("head", "thorax", "petiole", "abdomen")])
    fr = fr / fr.sum() * L
    y_front = -L / 2
    y_neck = y_front + fr[0]
    y_pro = y_neck + 0.35 * fr[1]
    y_rear = y_neck + fr[1]
    y_abd = y_rear + fr[2]
    hw = _jit(rng, p["width"]) * L / 2
    ht = 0.7 * hw if species == "beetle" else 0.55 * fr[1] / 2
    z_b = _jit(rng, p["height"]) * L
    y_c = 0.5 * (y_pro + y_rear)
    b.pelvis = b.bone(_Key("pelvis"), -1, (0, y_c, z_b), (0, y_pro, z_b + 0.05 * ht))
    b.spine = b.chain("spine", b.pelvis, [(0, y_pro, z_b + 0.05 * ht), (0, y_neck, z_b + 0.1 * ht)])
    hj = np.array([0.0, y_neck, z_b + 0.1 * ht])
    b.head = b.bone(_Key("head"), b.spine[0], hj, (0, y_front, z_b - 0.1 * ht))
    if fr[2] > 0:
        abd = b.chain("abdomen", b.pelvis,
                      [(0, y_rear, z_b), (0, y_abd, z_b + 0.3 * ht), (0, L / 2, z_b + 0.1 * ht)])
    else:
        abd = b.chain("abdomen", b.pelvis, [(0, y_rear, z_b), (0, L / 2, z_b - 0.1 * ht)])
    b.extra("abdomen", abd)

    # Legs: coxa, femur up to the knee, tibia down to the ground, tarsus along it.
    leg = _jit(rng, p["leg"]) * L
    profile = [(0.12, -0.05), (0.23, 0.19), (0.25, None), (0.18, 0.0)]
    segs = ["coxa", "femur", "tibia", "tarsus"]
    r = p["leg_r"] * L
    spots = [(b.spine[0], 0.5 * (y_neck + y_pro), rng.uniform(-60, -35), 0.85, "front"),
             (b.pelvis, y_pro + 0.3 * (y_rear - y_pro), rng.uniform(-10, 10), 0.95, "middle"),
             (b.pelvis, y_pro + 0.75 * (y_rear - y_pro), rng.uniform(30, 55), 1.1, "hind")]
    for n, (parent, y, deg, f, position) in enumerate(spots, start=1):
        _arthropod_leg(b, parent, (0.7 * hw, y, z_b - 0.4 * ht), deg, leg * f, segs, profile, r, n,
                       position)

    antenna = _jit(rng, p["antenna"]) * L
    hh = 0.45 * fr[0]  # head half-size

    def antennae() -> list[int]:
        base = np.array([0.25 * hh, y_front + 0.3 * fr[0], z_b + 0.35 * hh])
        if p["elbowed"]:
            mid = base + 0.4 * antenna * _unit(0.4, -0.5, 0.8)
            end = mid + 0.6 * antenna * _unit(0.35, -1.0, -0.25)
        else:
            mid = base + 0.4 * antenna * _unit(0.5, -1.0, 0.35)
            end = mid + 0.6 * antenna * _unit(0.6, -1.0, 0.2)
        joints = b.chain("antenna", b.head, [base, mid, end], side=LEFT)
        b.part([base, mid, end], [(0.25 * r, 0.25 * r), (0.2 * r, 0.2 * r), (0.3 * r, 0.3 * r)], joints, _Z,
               sides=5, caps=(0.5, 1.0), parent=b.head)
        return joints

    left, right = b.sided(antennae)
    b.extra("antennae", left + right)
    if rng.random() < p["mandibles"]:
        def mandibles() -> list[int]:
            base = np.array([0.35 * hh, y_front + 0.15 * fr[0], z_b - 0.2 * hh])
            tip = np.array([0.1 * hh, y_front - 0.25 * fr[0], z_b - 0.35 * hh])
            j = b.bone(_Key("mandible", LEFT), b.head, base, tip)
            b.part([base, tip], [(0.3 * hh, 0.2 * hh), (0.06 * hh, 0.05 * hh)], [j], _Z, sides=6,
                   caps=(0.5, 0.4), parent=b.head)
            return [j]

        left, right = b.sided(mandibles)
        b.extra("mandibles", left + right)

    # Mesh: thorax, head, petiole and gaster (or one abdomen).
    b.part([(0, y_rear, z_b), (0, y_c, z_b), (0, y_pro, z_b + 0.05 * ht), hj],
           [(0.7 * ht, 0.75 * hw), (ht, hw), (0.85 * ht, 0.8 * hw), (0.5 * ht, 0.55 * hw)],
           [b.pelvis, b.pelvis, b.spine[0]], _Z, sides=10, caps=(0.6, 0.4))
    b.part([hj + (0, 0.1 * fr[0], 0), hj + (0, -0.45 * fr[0], 0), (0, y_front, z_b - 0.1 * ht)],
           [(0.7 * hh, 0.8 * hh), (hh, 1.05 * hh), (0.5 * hh, 0.6 * hh)], [b.head, b.head], _Z, sides=10,
           caps=(0.4, 0.6), parent=b.spine[0])
    la = L / 2 - (y_abd if fr[2] > 0 else y_rear)
    ha = (0.5 if species == "ant" else 0.32) * la
    wa = ha * (1.6 if species == "beetle" else 1.0)
    start = b.heads[abd[-1]]
    end = b.tails[abd[-1]]
    b.part([start, start + 0.45 * (end - start), end], [(0.6 * ha, 0.6 * wa), (ha, wa), (0.4 * ha, 0.4 * wa)],
           [abd[-1], abd[-1]], _Z, sides=12, caps=(0.6, 0.8), parent=abd[0] if len(abd) > 1 else b.pelvis)
    if len(abd) > 1:
        b.part([b.heads[abd[0]], b.tails[abd[0]]], [(0.3 * ht, 0.3 * ht), (0.35 * ht, 0.35 * ht)], [abd[0]],
               _Z, sides=6, caps=(0.5, 0.5), parent=b.pelvis)


# --------------------------------------------------------------------------- spiders
# body: cephalothorax + abdomen length (m); fractions of it: ceph, height, leg; front: front-leg factor.
_SPIDERS: dict[str, dict] = {
    "tarantula": dict(body=0.06, ceph=0.45, height=0.35, leg=1.45, leg_r=0.075, front=1.0, palp=0.55),
    "jumping_spider": dict(body=0.009, ceph=0.52, height=0.3, leg=1.0, leg_r=0.06, front=1.3, palp=0.4),
}


def _spider(b: _Builder, rng: np.random.Generator, species: str, pose: str | None) -> None:
    p = _SPIDERS[species]
    L = _jit(rng, p["body"], 0.3)
    lc = _jit(rng, p["ceph"]) * L
    y_f = -L / 2
    z_b = _jit(rng, p["height"]) * L
    wc = 0.42 * lc  # cephalothorax half-width
    cc = np.array([0.0, y_f + 0.55 * lc, z_b])
    hj = np.array([0.0, y_f + 0.2 * lc, z_b + 0.15 * lc])
    b.pelvis = b.bone(_Key("pelvis"), -1, cc, hj if rng.random() < 0.7 else cc + 0.4 * lc * _Z)
    b.head = b.bone(_Key("head"), b.pelvis, hj, (0, y_f - 0.02 * L, z_b + 0.1 * lc))
    pedicel = rng.random() < 0.5
    a0 = np.array([0.0, y_f + lc, z_b])
    if pedicel:
        abd = b.chain("abdomen", b.pelvis, [a0, a0 + (0, 0.05 * L, 0.05 * lc), (0, L / 2, z_b + 0.15 * lc)])
    else:
        abd = b.chain("abdomen", b.pelvis, [a0, (0, L / 2, z_b + 0.15 * lc)])
    b.extra("abdomen", abd)

    r = p["leg_r"] * L
    leg = _jit(rng, p["leg"]) * L
    segs = ["coxa", "femur", "tibia", "metatarsus", "tarsus"]
    profile = [(0.07, 0.02), (0.18, 0.21), (0.25, -0.07), (0.18, None), (0.1, 0.0)]
    pairs = [(-60, p["front"], "front"), (-22, 0.9, "middle"), (18, 0.85, "middle"), (48, 1.0, "hind")]
    for n, (deg, f, position) in enumerate(pairs, start=1):
        y = y_f + (0.28 + 0.17 * (n - 1)) * lc
        _arthropod_leg(b, b.pelvis, (0.85 * wc, y, z_b - 0.1 * lc), deg + rng.uniform(-8, 8),
                       leg * f * rng.uniform(0.93, 1.07), segs, profile, r * (f if n == 1 else 1.0), n,
                       position)

    def chelicerae() -> list[int]:
        base = np.array([0.12 * lc, y_f + 0.06 * lc, z_b])
        tip = np.array([0.1 * lc, y_f - 0.06 * lc, z_b - 0.3 * lc])
        j = b.bone(_Key("chelicera", LEFT), b.head, base, tip)
        b.part([base, tip], [(0.12 * lc, 0.1 * lc), (0.05 * lc, 0.04 * lc)], [j], -_Y, sides=6,
               caps=(0.5, 0.5), parent=b.head)
        return [j]

    left, right = b.sided(chelicerae)
    b.extra("chelicerae", left + right)
    palp = _jit(rng, p["palp"]) * lc

    def pedipalps() -> list[int]:
        base = np.array([0.25 * lc, y_f + 0.15 * lc, z_b - 0.1 * lc])
        mid = base + palp * _unit(0.5, -0.6, 0.35)
        tip = mid + palp * _unit(0.2, -1.0, -0.9)
        tip[2] = max(tip[2], 0.15 * z_b)
        joints = b.chain("pedipalp", b.pelvis, [base, mid, tip], side=LEFT)
        b.part([base, mid, tip], [(0.9 * r, 0.9 * r), (0.7 * r, 0.7 * r), (0.6 * r, 0.6 * r)], joints, _Z,
               sides=6, caps=(0.5, 0.8), parent=b.pelvis)
        return joints

    left, right = b.sided(pedipalps)
    b.extra("pedipalps", left + right)

    # Mesh: cephalothorax (with the eye region on the head joint) and abdomen.
    b.part([(0, y_f + lc, z_b), cc, hj, (0, y_f, z_b + 0.05 * lc)],
           [(0.25 * lc, 0.7 * wc), (0.3 * lc, wc), (0.26 * lc, 0.75 * wc), (0.15 * lc, 0.5 * wc)],
           [b.pelvis, b.pelvis, b.head], _Z, sides=12, caps=(0.4, 0.5))
    a_start, a_end = b.heads[abd[-1]], b.tails[abd[-1]]
    la = float(np.linalg.norm(a_end - a_start))
    b.part([a_start, a_start + 0.45 * (a_end - a_start), a_end], np.array([(0.25, 0.25), (0.42, 0.4),
                                                                           (0.18, 0.15)]) * la,
           [abd[-1], abd[-1]], _Z, sides=12, caps=(0.5, 0.8), parent=abd[0] if pedicel else b.pelvis)
    if pedicel:
        b.part([b.heads[abd[0]] - (0, 0.05 * L, 0), b.tails[abd[0]]], [(0.08 * lc, 0.08 * lc)] * 2, [abd[0]],
               _Z, sides=6, caps=(0.5, 0.5), parent=b.pelvis)


# --------------------------------------------------------------------------- serpents
# length (m); radius in lengths.
_SERPENTS: dict[str, dict] = {"snake": dict(length=1.3, radius=0.016),
                              "cobra": dict(length=2.2, radius=0.015)}


def _serpent(b: _Builder, rng: np.random.Generator, species: str, pose: str | None) -> None:
    p = _SERPENTS[species]
    L = _jit(rng, p["length"], 0.4)
    r = _jit(rng, p["radius"], 0.25) * L
    n_body = int(rng.integers(15, 31))
    n_tail = int(np.clip(round(0.18 * n_body), 3, 6))
    n_neck = int(rng.integers(1, 3))
    n_spine = n_body - 1 - n_tail - n_neck
    z = 0.8 * r
    head_len = 6.5 * r
    y_snout, y_head, y_vent = -L / 2, -L / 2 + head_len, -L / 2 + 0.82 * L
    front = [np.array([0.0, y, z]) for y in np.linspace(y_vent, y_head, n_spine + n_neck + 2)]
    b.pelvis = b.bone(_Key("pelvis"), -1, front[0], front[1])
    b.spine = b.chain("spine", b.pelvis, front[1:n_spine + 2])
    b.neck = b.chain("neck", b.spine[-1], front[n_spine + 1:])
    hj = front[-1]
    snout = np.array([0.0, y_snout, z - 0.1 * r])
    b.head = b.bone(_Key("head"), b.neck[-1], hj, snout)
    b.jaw = b.bone(_Key("jaw"), b.head, hj + (0, 0.3 * r, -0.45 * r), snout + (0, 0.6 * r, -0.5 * r))
    tail_pts = [np.array([0.0, y, z]) for y in np.linspace(y_vent, L / 2, n_tail + 1)]
    b.tail = b.chain("tail", b.pelvis, tail_pts)
    if species == "cobra":  # hood flaps folded along the neck
        def hood() -> list[int]:
            base = front[n_spine + 1] + (1.1 * r, 0.0, 0.2 * r)
            tip = base + (0.9 * r, 5.0 * r, 0.0)
            j = b.bone(_Key("hood", LEFT), b.neck[0], base, tip)
            b.part([base, tip], [(1.2 * r, 0.12 * r), (0.3 * r, 0.08 * r)], [j], _Z, sides=8, caps=(0.4, 0.4),
                   parent=b.neck[0])
            return [j]

        left, right = b.sided(hood)
        b.extra("hood", left + right)

    # Mesh: one tube from the tail tip to the snout (tail joints run backwards from the vent).
    points = [tail_pts[-1], *tail_pts[-2::-1], *front[1:], snout]
    joints = [*b.tail[::-1], b.pelvis, *b.spine, *b.neck, b.head]
    x_vent = (0.18 * L) / L
    profile = (np.array([0.0, x_vent, 0.5, 0.9, 0.95, 1.0]),
               np.array([(0.12, 0.12), (0.8, 0.8), (1.0, 1.0), (0.75, 0.75), (1.05, 1.2), (0.45, 0.5)]))
    b.part(points, [(0.85 * r, r)] * len(points), joints, _Z, sides=10, caps=(0.5, 0.5), profile=profile)
    b.part([b.heads[b.jaw], b.tails[b.jaw]], [(0.25 * r, 0.7 * r), (0.15 * r, 0.35 * r)], [b.jaw], _Z,
           sides=8, caps=(0.4, 0.4), parent=b.head)


# --------------------------------------------------------------------------- fish
# length (m); fractions of it: height (body depth), width, head, fins.
_FISH: dict[str, dict] = {
    "trout": dict(length=0.4, height=0.22, width=0.12, head=0.22, caudal=0.16, dorsal=0.1, pectoral=0.1,
                  tail="truncate"),
    "shark": dict(length=2.5, height=0.18, width=0.16, head=0.24, caudal=0.25, dorsal=0.14, pectoral=0.2,
                  tail="heterocercal"),
    "tuna": dict(length=1.5, height=0.27, width=0.2, head=0.22, caudal=0.2, dorsal=0.1, pectoral=0.12,
                 tail="lunate"),
}


def _fish(b: _Builder, rng: np.random.Generator, species: str, pose: str | None) -> None:
    p = _FISH[species]
    L = _jit(rng, p["length"], 0.3)
    H, Wd = _jit(rng, p["height"]) * L, _jit(rng, p["width"]) * L
    y0 = -L / 2
    y_head = y0 + _jit(rng, p["head"]) * L
    y_root = y0 + 0.42 * L
    y_ped = y0 + 0.86 * L
    n_tail = int(rng.integers(2, 5))
    front = [np.array([0.0, y_root, 0.0])]
    if rng.random() < 0.6:
        front.append(np.array([0.0, 0.5 * (y_root + y_head), 0.02 * H]))
    front.append(np.array([0.0, y_head, 0.03 * H]))
    b.pelvis = b.bone(_Key("pelvis"), -1, front[0], front[1])
    b.spine = b.chain("spine", b.pelvis, front[1:]) if len(front) > 2 else []
    snout = np.array([0.0, y0, -0.05 * H])
    b.head = b.bone(_Key("head"), b.spine[-1] if b.spine else b.pelvis, front[-1], snout)
    b.jaw = b.bone(_Key("jaw"), b.head, (0, y_head - 0.3 * (y_head - y0), -0.28 * H),
                   (0, y0 + 0.03 * L, -0.15 * H))
    tail_pts = [np.array([0.0, y, 0.0]) for y in np.linspace(y_root, y_ped, n_tail + 1)]
    b.tail = b.chain("tail", b.pelvis, tail_pts)

    caudal = _jit(rng, p["caudal"]) * L
    ped = tail_pts[-1]
    reach = 1.0 if p["tail"] == "truncate" else 0.6  # the bone ends where the fin's lobes do
    rise = 0.2 * caudal if species == "shark" else 0.0
    fins = b.bone(_Key("caudal_fin"), b.tail[-1], ped, ped + (0, reach * caudal, rise))
    dorsal = _jit(rng, p["dorsal"]) * L
    d0 = np.array([0.0, y_root - 0.02 * L, 0.42 * H])
    dorsal_j = b.bone(_Key("dorsal_fin"), b.pelvis, d0, d0 + dorsal * _unit(0, 0.6, 1.0))
    b.extra("fins", [dorsal_j, fins])
    b.part([d0 - (0, 0, 0.1 * H), b.tails[dorsal_j]], [(0.5 * dorsal, 0.05 * Wd), (0.1 * dorsal, 0.02 * Wd)],
           [dorsal_j], _Y, sides=6, caps=(0.2, 0.3), shift=np.array([0.6, 0.8]), parent=b.pelvis)
    if rng.random() < 0.5:
        a0 = np.array([0.0, y_root + 0.25 * L, -0.3 * H])
        a_tip = a0 + 0.6 * dorsal * _unit(0, 0.8, -1.0)
        anal = b.bone(_Key("anal_fin"), b.tail[min(1, n_tail - 1)], a0, a_tip)
        b.extra("fins", [anal])
        b.part([a0 + (0, 0, 0.1 * H), a_tip], [(0.3 * dorsal, 0.04 * Wd), (0.06 * dorsal, 0.02 * Wd)], [anal],
               _Y, sides=6, caps=(0.2, 0.3), shift=np.array([0.6, 0.8]), parent=b.parents[anal])
    # Caudal fin: one vertical fan, or two lobes (a longer upper one on sharks).
    lobes = {"truncate": [], "lunate": [(1.0, 1.0), (1.0, -1.0)],
             "heterocercal": [(1.3, 1.0), (0.7, -0.8)]}[p["tail"]]  # (length, up or down)
    if not lobes:
        b.part([ped, ped + (0, caudal, 0)], [(0.2 * H, 0.03 * Wd), (0.5 * caudal, 0.015 * Wd)], [fins], _Z,
               sides=8, caps=(0.2, 0.2), parent=b.tail[-1])
    for length, up in lobes:
        tip = ped + caudal * length * _unit(0, 0.8, 0.9 * up)
        b.part([ped, tip], [(0.25 * caudal, 0.04 * Wd), (0.05 * caudal, 0.01 * Wd)], [fins], _Y, sides=6,
               caps=(0.3, 0.3), shift=np.array([0.3, 0.6]), parent=b.tail[-1])

    pect = _jit(rng, p["pectoral"]) * L

    def fin_mesh(base, tip, joint, parent, size):
        b.part([base, tip], [(0.4 * size, 0.04 * Wd), (0.1 * size, 0.015 * Wd)], [joint], _Y, sides=6,
               caps=(0.3, 0.3), shift=np.array([0.6, 0.8]), parent=parent)

    chest = b.spine[-1] if b.spine else b.pelvis
    pc0 = np.array([0.35 * Wd, y_head + 0.03 * L, -0.22 * H])
    pc1 = pc0 + pect * _unit(0.8, 0.6, -0.35)
    b.limb("pecfin", ["fin"], [pc0, pc1], chest, "fin", "front",
           mesh=lambda j: fin_mesh(pc0, pc1, j[0], chest, pect))
    if rng.random() < 0.6:
        pv0 = np.array([0.22 * Wd, y_root + 0.06 * L, -0.38 * H])
        pv1 = pv0 + 0.6 * pect * _unit(0.4, 0.9, -0.35)
        b.limb("pelfin", ["fin"], [pv0, pv1], b.pelvis, "fin", "hind",
               mesh=lambda j: fin_mesh(pv0, pv1, j[0], b.pelvis, 0.6 * pect))

    # Body: one tube snout → peduncle, shaped by a fusiform profile.
    points = [snout, *front[::-1], *tail_pts[1:]]
    joints = [b.head, *(b.spine[::-1]), b.pelvis, *b.tail]
    xs = np.array([0.0, 0.08, 0.25, 0.42, 0.65, 1.0])
    factors = np.array([(0.2, 0.2), (0.62, 0.7), (0.93, 0.95), (1.0, 1.0), (0.72, 0.7), (0.22, 0.28)])
    b.part(points, [(0.5 * H, 0.5 * Wd)] * len(points), joints, _Z, sides=12, caps=(0.5, 0.3),
           profile=(xs, factors))
    b.part([b.heads[b.jaw], b.tails[b.jaw]], [(0.1 * H, 0.25 * Wd), (0.05 * H, 0.12 * Wd)], [b.jaw], _Z,
           sides=8, caps=(0.4, 0.4), parent=b.head)


_BUILDERS = {"quadruped": _quadruped, "biped": _biped, "bird": _bird, "hexapod": _hexapod, "spider": _spider,
             "serpent": _serpent, "dragon": _quadruped, "fish": _fish}


# --------------------------------------------------------------------------- naming
_TRUNK = {  # role: (CamelCase word, snake_case word, numbered chain)
    "pelvis": ("Hips", "pelvis", False), "spine": ("Spine", "spine", True), "neck": ("Neck", "neck", True),
    "head": ("Head", "head", False), "jaw": ("Jaw", "jaw", False), "tail": ("Tail", "tail", True),
    "ear": ("Ear", "ear", False), "horn": ("Horn", "horn", False), "antenna": ("Antenna", "antenna", True),
    "mandible": ("Mandible", "mandible", False), "chelicera": ("Chelicera", "chelicera", False),
    "pedipalp": ("Palp", "palp", True), "abdomen": ("Abdomen", "abdomen", True),
    "hood": ("Hood", "hood", False),
    "dorsal_fin": ("DorsalFin", "fin_dorsal", False), "anal_fin": ("AnalFin", "fin_anal", False),
    "caudal_fin": ("CaudalFin", "fin_caudal", False),
}
_VERTEBRATE_SEGS = ("girdle", "upper", "lower", "meta", "digit", "digit_end")
_ARTHROPOD_SEGS = ("coxa", "femur", "tibia", "metatarsus", "tarsus")
_LIMB_TABLE = {  # style: group: words for the group's segments, in order
    "mixamo": {
        "arm": "Shoulder Arm ForeArm Hand HandIndex1 HandIndex2", "leg": "Hip UpLeg Leg Foot ToeBase Toe_End",
        "front": "Shoulder Arm ForeArm Hand HandToe HandToe_End",
        "hind": "Hip UpLeg Leg Foot ToeBase Toe_End",
        "wing": "WingShoulder WingArm WingForeArm WingHand WingFinger1 WingFinger2",
        "arthro": "Coxa Femur Tibia Metatarsus Tarsus", "pecfin": "PectoralFin", "pelfin": "PelvicFin"},
    "rigify": {
        "arm": "shoulder upper_arm forearm hand f_index f_index_end",
        "leg": "pelvis thigh shin foot toe toe_end",
        "front": "shoulder upper_arm forearm hand f_toe f_toe_end",
        "hind": "pelvis thigh shin foot toe toe_end",
        "wing": "wing_root wing wing_fore wing_hand wing_finger wing_finger_tip",
        "arthro": "coxa femur tibia metatarsus tarsus", "pecfin": "fin_pectoral", "pelfin": "fin_pelvic"},
    "quaternius": {
        "arm": "Shoulder UpperArm LowerArm Hand Fingers FingersEnd",
        "leg": "Hip UpperLeg LowerLeg Foot Toe ToeEnd",
        "front": "FrontShoulder FrontUpperLeg FrontLowerLeg FrontFoot FrontToe FrontToeEnd",
        "hind": "BackHip BackUpperLeg BackLowerLeg BackFoot BackToe BackToeEnd",
        "wing": "WingRoot Wing1 Wing2 Wing3 Wing4 Wing5", "arthro": "Coxa Femur Tibia Metatarsus Tarsus",
        "pecfin": "FinFront", "pelfin": "FinBack"},
    "unreal": {
        "arm": "clavicle upperarm lowerarm hand index_01 index_02",
        "leg": "hip thigh calf foot ball ball_end",
        "front": "scapula_front upperleg_front lowerleg_front foot_front toe_front toe_end_front",
        "hind": "hip_back thigh_back calf_back foot_back toe_back toe_end_back",
        "wing": "wing_root wing_01 wing_02 wing_03 wing_04 wing_05",
        "arthro": "coxa femur tibia metatarsus tarsus",
        "pecfin": "fin_pectoral", "pelfin": "fin_pelvic"},
    "bip": {  # 3ds Max Biped: quadruped front legs are arms, the hind leg's extra link is HorseLink
        "arm": "Clavicle UpperArm Forearm Hand Finger0 Finger0Nub", "leg": "Hip Thigh Calf Foot Toe0 Toe0Nub",
        "front": "Clavicle UpperArm Forearm Hand Finger0 Finger0Nub",
        "hind": "Hip Thigh Calf HorseLink Foot Toe0",
        "wing": "WingClavicle Wing1 Wing2 Wing3 Wing4 Wing5", "arthro": "Coxa Femur Tibia Metatarsus Tarsus",
        "pecfin": "PectoralFin", "pelfin": "PelvicFin"},
}
_LIMB_WORDS = {
    style: {group: dict(zip(_ARTHROPOD_SEGS if group == "arthro" else ("fin",) if "fin" in group
                            else _VERTEBRATE_SEGS, words.split(), strict=False))
            for group, words in table.items()}
    for style, table in _LIMB_TABLE.items()
}
# Letters and prefixes that never read as a side ('l'/'r' on their own would, see rig.mirror_name).
_TOKEN_LETTERS = "abcdefghjkmnpqstuvwxyz"
_TOKEN_PREFIXES = ("jnt", "b", "node", "bn", "joint", "def", "grp", "obj", "sk", "x", "ctrl", "j")


def _style_name(style: str, key: _Key, variant: str, counts: dict[str, int]) -> str:
    """The name of one bone in a side-aware naming style."""
    limb = bool(key.group)
    word = _LIMB_WORDS[style][key.group][key.role] if limb else ""
    camel, snake, chain = _TRUNK.get(key.role, ("", "", False))
    i = key.index
    if style == "mixamo":
        side = {LEFT: "Left", RIGHT: "Right"}.get(key.side, "")
        if key.group == "arthro":
            return f"{variant}{side}Leg{key.n}{word}"
        if limb:
            return f"{variant}{side}{word}"
        return f"{variant}{side}{camel}{i - 1 if chain and i > 1 else ''}"
    if style == "rigify":
        side = {LEFT: ".L", RIGHT: ".R"}.get(key.side, "")
        if key.group == "arthro":
            return f"DEF-leg{key.n}_{word}{side}"
        if limb:
            return f"DEF-{word}{side}"
        if variant == "chain" and key.role in ("pelvis", "spine", "neck", "head"):
            # Rigify's own trunk: one numbered chain from the hips to the head.
            k = {"pelvis": 0, "spine": i, "neck": counts["spine"] + i,
                 "head": counts["spine"] + counts["neck"] + 1}[key.role]
            return f"DEF-spine.{k:03d}" if k else "DEF-spine"
        return f"DEF-{snake}{side}{f'.{i - 1:03d}' if chain and i > 1 else ''}"
    if style == "quaternius":
        side = {LEFT: ".L", RIGHT: ".R"}.get(key.side, "")
        if key.group == "arthro":
            return f"Leg{key.n}{word}{side}"
        return f"{word}{side}" if limb else f"{camel}{i if chain else ''}{side}"
    if style == "unreal":
        side = {LEFT: "_l", RIGHT: "_r"}.get(key.side, "")
        if key.group == "arthro":
            return f"leg_{key.n:02d}_{word}{side}"
        return f"{word}{side}" if limb else f"{snake}{f'_{i:02d}' if chain else ''}{side}"
    if style == "bip":
        side = {LEFT: "L ", RIGHT: "R "}.get(key.side, "")
        if key.group == "arthro":
            return f"Bip01 {side}Leg{key.n} {word}"
        if limb:
            return f"Bip01 {side}{word}"
        return f"Bip01 {side}{'Pelvis' if key.role == 'pelvis' else camel}{i - 1 if chain and i > 1 else ''}"
    raise ValueError(f"Unknown naming style {style!r}.")


def _names(keys: list[_Key], style: str, rng: np.random.Generator, counts: dict[str, int]) -> list[str]:
    count = len(keys)
    if style == "gltf":  # Blender's default names, numbered in whatever order the bones were made
        return ["Bone" if k == 0 else f"Bone.{k:03d}" for k in rng.permutation(count)]
    if style == "arbitrary":
        prefix = _pick(rng, _TOKEN_PREFIXES)
        sep = _pick(rng, ["_", "", "-"])
        numbers = rng.choice(100 if count <= 60 else 1000, size=count, replace=False)
        letters = rng.choice(list(_TOKEN_LETTERS), size=count)
        with_letter = rng.random() < 0.6
        return [f"{prefix}{sep}{int(k):02d}{c if with_letter else ''}"
                for k, c in zip(numbers, letters, strict=True)]
    variant = ""
    if style == "mixamo":
        variant = _pick(rng, ["mixamorig:", "mixamorig1:", "mixamorig2:"], [0.7, 0.2, 0.1])
    elif style == "rigify":
        variant = _pick(rng, ["chain", "named"])
    names = [_style_name(style, key, variant, counts) for key in keys]
    if len(set(names)) != count:
        raise AssertionError(f"duplicate {style} names: {sorted(n for n in names if names.count(n) > 1)}")
    return names


# --------------------------------------------------------------------------- mesh
_CAP_ANGLES = np.radians([60.0, 30.0])  # rings of a rounded end cap, from the pole side


def _transport(centres: np.ndarray, tangents: np.ndarray, up: np.ndarray) -> np.ndarray:
    """Rotation-minimising frame (double reflection): u vectors that follow the tube without twist."""
    t0 = tangents[0]
    u = up - np.dot(up, t0) * t0
    if np.linalg.norm(u) < 1e-6:
        u = np.cross(t0, _X if abs(t0[0]) < 0.9 else _Y)
    u = u / np.linalg.norm(u)
    c, t = centres.tolist(), tangents.tolist()
    out = [u.tolist()]
    r = out[0]
    for i in range(len(c) - 1):  # plain floats: much faster than numpy on 3-vectors
        v1 = [c[i + 1][k] - c[i][k] for k in range(3)]
        c1 = v1[0] * v1[0] + v1[1] * v1[1] + v1[2] * v1[2]
        if c1 > 1e-30:
            f = 2.0 * (v1[0] * r[0] + v1[1] * r[1] + v1[2] * r[2]) / c1
            r_l = [r[k] - f * v1[k] for k in range(3)]
            f = 2.0 * (v1[0] * t[i][0] + v1[1] * t[i][1] + v1[2] * t[i][2]) / c1
            v2 = [t[i + 1][k] - (t[i][k] - f * v1[k]) for k in range(3)]
            c2 = v2[0] * v2[0] + v2[1] * v2[1] + v2[2] * v2[2]
            if c2 > 1e-30:
                f = 2.0 * (v2[0] * r_l[0] + v2[1] * r_l[1] + v2[2] * r_l[2]) / c2
                r_l = [r_l[k] - f * v2[k] for k in range(3)]
            r = r_l
        out.append(r)
    u = np.array(out)
    u -= np.sum(u * tangents, axis=1, keepdims=True) * tangents
    return u / np.linalg.norm(u, axis=1, keepdims=True)


def _smooth(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def _chain_weights(s: np.ndarray, cum: np.ndarray, joints: list[int], parent: int,
                   blend: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """Each station to its segment's joint, shading half-way into the neighbour across a joint."""
    run_joint, run_start, run_end = [], [], []
    for k, j in enumerate(joints):
        if run_joint and run_joint[-1] == j:
            run_end[-1] = cum[k + 1]
        else:
            run_joint.append(j)
            run_start.append(cum[k])
            run_end.append(cum[k + 1])
    rj, r0, r1 = np.array(run_joint), np.array(run_start), np.array(run_end)
    r = np.clip(np.searchsorted(r0, s, side="right") - 1, 0, len(rj) - 1)
    t = (s - r0[r]) / np.maximum(r1[r] - r0[r], 1e-12)
    own = rj[r]
    prev = np.where(r > 0, rj[np.maximum(r - 1, 0)], parent)
    nxt = np.where(r < len(rj) - 1, rj[np.minimum(r + 1, len(rj) - 1)], -1)
    w_prev = np.where(prev >= 0, 0.5 * _smooth(1.0 - t / blend), 0.0)
    w_next = np.where(nxt >= 0, 0.5 * _smooth((t - (1.0 - blend)) / blend), 0.0)
    idx = np.stack([own, np.where(prev >= 0, prev, own), np.where(nxt >= 0, nxt, own), own], axis=1)
    wts = np.stack([1.0 - w_prev - w_next, w_prev, w_next, np.zeros_like(t)], axis=1)
    return idx, wts


def _nearest_weights(centres: np.ndarray, segments) -> tuple[np.ndarray, np.ndarray]:
    """Inverse-distance weights to the three nearest bone segments (for shapes that don't follow bones)."""
    dist = []
    for _, a, b in segments:
        ab = b - a
        t = np.clip((centres - a) @ ab / max(float(ab @ ab), 1e-30), 0.0, 1.0)
        dist.append(np.linalg.norm(centres - (a + t[:, None] * ab), axis=1))
    dist = np.stack(dist, axis=1)
    scale = 0.05 * max(float(np.linalg.norm(b - a)) for _, a, b in segments)
    w = 1.0 / (dist + scale) ** 3
    order = np.argsort(-w, axis=1)[:, :3]
    top = np.take_along_axis(w, order, axis=1)
    joints = np.array([j for j, _, _ in segments])[order]
    top /= top.sum(axis=1, keepdims=True)
    pad = np.zeros((len(centres), 4 - top.shape[1]))
    return (np.concatenate([joints, np.repeat(joints[:, :1], pad.shape[1], axis=1)], axis=1),
            np.concatenate([top, pad], axis=1))


def _part_mesh(part: _Part, size: float) -> tuple[np.ndarray, ...]:
    pts, n = part.points, len(part.points)
    seg = np.linalg.norm(np.diff(pts, axis=0), axis=1)
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    step = float(np.clip(1.2 * part.radii.mean(), size / 90.0, size / 22.0))
    counts = np.maximum(1, np.ceil(seg / step - 1e-9).astype(int))
    s = np.concatenate([cum[k] + seg[k] * np.arange(m) / m for k, m in enumerate(counts)] + [cum[-1:]])
    centres = np.stack([np.interp(s, cum, pts[:, d]) for d in range(3)], axis=1)
    ab = np.stack([np.interp(s, cum, part.radii[:, d]) for d in range(2)], axis=1)
    if part.profile is not None:
        xs, factors = part.profile
        x = s / cum[-1]
        ab = ab * np.stack([np.interp(x, xs, factors[:, 0]), np.interp(x, xs, factors[:, 1])], axis=1)
    shift = np.interp(s, cum, np.broadcast_to(np.asarray(part.shift, dtype=np.float64), (n,)))
    tangents = np.gradient(centres, s, axis=0)
    tangents /= np.linalg.norm(tangents, axis=1, keepdims=True)
    u = _transport(centres, tangents, part.up)
    v = np.cross(tangents, u)
    if part.nearest is not None:
        idx, wts = _nearest_weights(centres, part.nearest)
    else:
        idx, wts = _chain_weights(s, cum, part.joints, part.parent)
    centres = centres + (shift * ab[:, 0])[:, None] * u

    # End caps: two shrinking rings and a pole at each end, with that end's frame and weights.
    sin, cos = np.sin(_CAP_ANGLES), np.cos(_CAP_ANGLES)
    h0, h1 = part.caps[0] * ab[0].mean(), part.caps[1] * ab[-1].mean()
    ring_c = np.concatenate([centres[0] - np.outer(h0 * sin, tangents[0]), centres,
                             centres[-1] + np.outer(h1 * sin[::-1], tangents[-1])])
    ring_ab = np.concatenate([np.outer(cos, ab[0]), ab, np.outer(cos[::-1], ab[-1])])
    take = np.concatenate([[0, 0], np.arange(len(s)), [len(s) - 1] * 2])
    ring_u, ring_v = u[take], v[take]
    rings, sides = len(take), part.sides
    angle = part.phase + 2.0 * np.pi * np.arange(sides) / sides
    verts = (ring_c[:, None] + (ring_ab[:, 0:1] * np.cos(angle))[..., None] * ring_u[:, None]
             + (ring_ab[:, 1:2] * np.sin(angle))[..., None] * ring_v[:, None]).reshape(-1, 3)
    poles = np.stack([centres[0] - h0 * tangents[0], centres[-1] + h1 * tangents[-1]])
    verts = np.concatenate([verts, poles])

    # Quads between rings wind so normals point out (u, v, tangent is right-handed); poles fan.
    r = np.arange(rings - 1)[:, None] * sides
    k = np.arange(sides)[None, :]
    a, b = (r + k).ravel(), (r + (k + 1) % sides).ravel()
    last = (rings - 1) * sides
    k = k.ravel()
    start, end = rings * sides, rings * sides + 1
    tris = np.concatenate([
        np.stack([a, b, b + sides], axis=1), np.stack([a, b + sides, a + sides], axis=1),
        np.stack([np.full(sides, start), (k + 1) % sides, k], axis=1),
        np.stack([np.full(sides, end), last + k, last + (k + 1) % sides], axis=1)])
    vidx = np.concatenate([np.repeat(idx[take], sides, axis=0), idx[[0, -1]]])
    vwts = np.concatenate([np.repeat(wts[take], sides, axis=0), wts[[0, -1]]])
    return verts, tris, vidx, vwts


def _mesh(parts: list[_Part], size: float, ground: bool) -> SkinnedMesh:
    verts, tris, idx, wts = [], [], [], []
    offset = 0
    for part in parts:
        v, t, i, w = _part_mesh(part, size)
        verts.append(v)
        tris.append(t + offset)
        idx.append(i)
        wts.append(w)
        offset += len(v)
    vertices = np.concatenate(verts)
    if ground:  # flatten soles and bellies on the floor instead of sinking through it
        vertices[:, 2] = np.maximum(vertices[:, 2], 0.0)
    return SkinnedMesh(vertices, np.concatenate(tris), np.concatenate(idx), np.concatenate(wts))


# --------------------------------------------------------------------------- public API
def _rng(seed: int, stream: int, family: str) -> np.random.Generator:
    return np.random.default_rng([int(seed) & 0xFFFFFFFFFFFFFFFF, stream, FAMILIES.index(family)])


def _rolls(b: _Builder, rng: np.random.Generator) -> np.ndarray:
    """Per-bone rolls the way real rigs have them: zero, quarter turns or arbitrary."""
    count = len(b.keys)
    mode = _pick(rng, ["zero", "quarter", "random", "chaotic"], [0.2, 0.25, 0.35, 0.2])
    if mode == "zero":
        return np.zeros(count)
    if mode == "quarter":
        rolls = rng.integers(-1, 3, count) * (np.pi / 2)
    else:
        rolls = rng.uniform(-np.pi, np.pi, count)
    if mode != "chaotic":  # symmetrised rigs mirror the roll too
        for right, left in b.mirror_of.items():
            rolls[right] = -rolls[left]
    return rolls


def build_creature(family: str, seed: int, naming: str | None = None, species: str | None = None,
                   pose: str | None = None) -> Creature:
    """A random creature of `family`, deterministic by `seed` (see the module docstring).

    `naming` is one of NAMING_STYLES, `species` one of SPECIES[family], `pose` one of
    POSES[family] (bipeds: "T" or "A"); None draws each from the seed. The geometry depends only
    on (family, seed, species, pose), never on the naming style.
    """
    if family not in FAMILIES:
        raise ValueError(f"Unknown family {family!r}; expected one of {', '.join(FAMILIES)}.")
    draw = _rng(seed, 2, family)
    options = SPECIES[family]
    drawn_species = options[int(draw.integers(len(options)))]
    drawn_naming = NAMING_STYLES[int(draw.integers(len(NAMING_STYLES)))]
    poses = POSES.get(family, ())
    drawn_pose = poses[int(draw.integers(len(poses)))] if poses else None
    species = species or drawn_species
    naming = naming or drawn_naming
    pose = pose or drawn_pose
    if species not in options:
        raise ValueError(f"Unknown {family} species {species!r}; expected one of {', '.join(options)}.")
    if naming not in NAMING_STYLES:
        raise ValueError(f"Unknown naming style {naming!r}; expected one of {', '.join(NAMING_STYLES)}.")
    if pose is not None and pose not in poses:
        raise ValueError(f"A {family} has no pose {pose!r}; expected one of {poses or 'none'}.")

    b = _Builder()
    geometry = _rng(seed, 0, family)
    _BUILDERS[family](b, geometry, species, pose)
    rolls = _rolls(b, geometry)
    heads, tails = np.array(b.heads), np.array(b.tails)
    mesh = _mesh(b.parts, b.size, ground=family != "fish")
    if family == "fish":  # it floats: lift it so its lowest point is at z = 0
        lift = np.array([0.0, 0.0, -mesh.vertices[:, 2].min()])
        heads, tails = heads + lift, tails + lift
        mesh.vertices = mesh.vertices + lift
    counts = {"spine": len(b.spine), "neck": len(b.neck)}
    names = _names(b.keys, naming, _rng(seed, 1, family), counts)
    rig = rig_from_bones(names, b.parents, heads, tails, rolls)
    return Creature(family=family, species=species, rig=rig, mesh=mesh, pelvis=b.pelvis, spine=b.spine,
                    neck=b.neck, head=b.head, jaw=b.jaw, tail=b.tail, limbs=b.limbs, extras=b.extras,
                    naming=naming, seed=int(seed))
