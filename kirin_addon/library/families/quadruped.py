"""Quadrupeds (wolf, dog, fox, horse, deer, cat, bear, cow, rat) and the dragon's body: trunk, neck and
head, a curling tail, four legs from girdle to digit, ears or horns, and the mesh around them."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...core.creature import LEFT
from .builder import BoneKey, Builder, LimbRole, X, Y, Z, jit, pick, unit

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


@dataclass(frozen=True)
class Proportions:
    """A quadruped's drawn sizes (m) and joint counts."""

    W: float  # withers height
    body: float
    neck_len: float
    head_len: float
    tail_len: float
    elbow: float  # elbow height
    g: float  # torso vertical radius: its top reaches W, its belly the elbows
    w: float  # torso half-width
    z_s: float  # spine line, near the top of the torso
    n_spine: int
    n_neck: int
    n_tail: int
    girdles: bool  # legs start at a scapula / pelvis girdle bone


@dataclass(frozen=True)
class Skull:
    """The head joint and the skull's axes and size."""

    joint: np.ndarray  # (3,) head joint
    fwd: np.ndarray  # along the skull
    up: np.ndarray  # the skull's up
    radius: float
    length: float


@dataclass(frozen=True)
class QuadrupedSkeleton:
    """What the mesh (and a dragon's wings) is built around."""

    size: Proportions
    trunk: np.ndarray  # (n_spine + 2, 3) back line, pelvis first
    neck_pts: list[np.ndarray]
    skull: Skull
    tail_pts: list[np.ndarray]


def _proportions(rng: np.random.Generator, p: dict, dragon: bool) -> Proportions:
    W = jit(rng, p["size"], 0.35 if dragon else 0.2)
    body = jit(rng, p["body"]) * W
    neck_len = jit(rng, p["neck"], 0.15) * W
    head_len = jit(rng, p["head"]) * W
    tail_len = jit(rng, p["tail"], 0.15) * W
    elbow = jit(rng, p["elbow"], 0.06) * W
    g = (W - elbow) / 1.95  # torso vertical radius: its top reaches W, its belly the elbows
    w = jit(rng, p["width"]) * g  # torso half-width
    z_s = W - 0.8 * g  # spine line, near the top of the torso
    n_spine = int(rng.integers(4, 6) if dragon else rng.integers(3, 6))
    n_neck = int(rng.integers(4, 7) if dragon else rng.integers(2, 4))
    n_tail = int(np.clip(p["tail_joints"] + rng.integers(-2 if dragon else -1, 3 if dragon else 2),
                         8 if dragon else 3, 12 if dragon else 8))
    girdles = dragon or rng.random() < 0.7
    return Proportions(W, body, neck_len, head_len, tail_len, elbow, g, w, z_s, n_spine, n_neck, n_tail,
                       girdles)


def _trunk(b: Builder, rng: np.random.Generator, p: dict, size: Proportions
           ) -> tuple[np.ndarray, list[np.ndarray]]:
    """Pelvis, spine and neck bones: the pelvis bone and the spine share the back line, pelvis at the rear."""
    body, g, n_spine, n_neck = size.body, size.g, size.n_spine, size.n_neck
    ts = np.linspace(0.0, 1.0, n_spine + 2)
    trunk = np.stack([np.zeros_like(ts), body / 2 - body * ts, size.z_s + 0.05 * g * np.sin(np.pi * ts)],
                     axis=-1)
    pelvis_tail = pick(rng, [trunk[1], trunk[0] + (0, 0, body / (n_spine + 1)),
                             trunk[0] + (0, body / (n_spine + 1), 0)], [0.6, 0.25, 0.15])
    b.pelvis = b.bone(BoneKey("pelvis"), -1, trunk[0], pelvis_tail)
    b.spine = b.chain("spine", b.pelvis, trunk[1:])

    angles = np.radians(jit(rng, p["neck_deg"], 0.15) + rng.uniform(-6, 6, n_neck))
    neck_pts = [trunk[-1]]
    for a in angles:
        neck_pts.append(neck_pts[-1] + size.neck_len / n_neck * np.array([0.0, -math.cos(a), math.sin(a)]))
    b.neck = b.chain("neck", b.spine[-1], neck_pts)
    return trunk, neck_pts


def _head(b: Builder, rng: np.random.Generator, p: dict, species: str, size: Proportions,
          hj: np.ndarray) -> Skull:
    """Head and jaw bones at the end of the neck."""
    head_len = size.head_len
    beta = math.radians(jit(rng, p["head_deg"], 0.2))
    fwd = np.array([0.0, -math.cos(beta), -math.sin(beta)])  # along the skull
    up_h = np.array([0.0, -math.sin(beta), math.cos(beta)])  # the skull's up
    r_h = (0.36 if species in ("bear", "cat", "rat") else 0.3) * head_len  # skull radius
    head_tail = hj + head_len * fwd if rng.random() < 0.8 else hj + 1.1 * r_h * Z
    b.head = b.bone(BoneKey("head"), b.neck[-1], hj, head_tail)
    b.jaw = b.bone(BoneKey("jaw"), b.head, hj + 0.2 * head_len * fwd - 0.45 * r_h * up_h,
                   hj + 0.9 * head_len * fwd - 0.4 * r_h * up_h)
    return Skull(hj, fwd, up_h, r_h, head_len)


def _tail(b: Builder, rng: np.random.Generator, p: dict, size: Proportions) -> list[np.ndarray]:
    """A chain curling by a fixed angle per joint, resting on the ground if it gets there."""
    body, g, W, n_tail = size.body, size.g, size.W, size.n_tail
    t0, curl = p["tail_deg"]
    t0 = math.radians(t0 + rng.uniform(-10, 10))
    curl = math.radians(curl * rng.uniform(0.6, 1.4))
    tail_pts = [np.array([0.0, body / 2 + 0.25 * g, size.z_s + 0.05 * g])]
    for k in range(n_tail):
        a = float(np.clip(t0 + k * curl, math.radians(-80), math.radians(70)))
        nxt = tail_pts[-1] + size.tail_len / n_tail * np.array([0.0, math.cos(a), math.sin(a)])
        nxt[2] = max(nxt[2], 0.03 * W)
        tail_pts.append(nxt)
    b.tail = b.chain("tail", b.pelvis, tail_pts)
    return tail_pts


def _legs(b: Builder, rng: np.random.Generator, p: dict, size: Proportions) -> None:
    """Legs (left, mirrored): girdle, upper, lower, metapodial, digit whose head rests on z = 0."""
    W, body, g, w, z_s, elbow = size.W, size.body, size.g, size.w, size.z_s, size.elbow
    fwd_f, fwd_h, toe = (v * W * rng.uniform(0.85, 1.15) for v in _STANCE[p["stance"]])
    r_u = 0.36 * g * rng.uniform(0.9, 1.1)
    paw = {"unguligrade": (0.42, 0.42), "digitigrade": (0.3, 0.5), "plantigrade": (0.28, 0.6)}[p["stance"]]
    x_f, x_h = 0.62 * w, 0.66 * w
    shoulder = np.array([x_f, -body / 2 - 0.1 * g, z_s - 0.55 * g])
    elbow_p = np.array([x_f, -body / 2 + 0.25 * g, elbow])
    carpus = np.array([x_f, elbow_p[1] - 0.02 * W, jit(rng, p["carpus"]) * W])
    paw_f = np.array([x_f, carpus[1] - fwd_f, 0.0])
    front = [np.array([0.55 * x_f, -body / 2 + 0.45 * g, z_s + 0.35 * g]), shoulder, elbow_p, carpus, paw_f,
             paw_f - (0, toe, 0)]
    front_r = [(1.0, 0.8), (1.0, 0.9), (0.7, 0.6), (0.42, 0.4), paw, (0.6 * paw[0], 0.8 * paw[1])]
    hip = np.array([x_h, body / 2 + 0.1 * g, z_s - 0.45 * g])
    stifle = np.array([x_h, hip[1] - 0.16 * W, min(elbow, 0.8 * hip[2])])
    hock = np.array([x_h, hip[1] + 0.1 * W, jit(rng, p["hock"]) * W])
    paw_h = np.array([x_h, hock[1] - fwd_h, 0.0])
    hind = [np.array([0.3 * w, body / 2 - 0.15 * g, z_s + 0.1 * g]), hip, stifle, hock, paw_h,
            paw_h - (0, toe, 0)]
    hind_r = [(0.9, 0.8), (1.25, 0.95), (0.75, 0.6), (0.4, 0.38), paw, (0.6 * paw[0], 0.8 * paw[1])]
    segs = ["girdle", "upper", "lower", "meta", "digit"]
    first = 0 if size.girdles else 1
    for group, pts, radii, parent, position in (("front", front, front_r, b.spine[-1], "front"),
                                                ("hind", hind, hind_r, b.pelvis, "hind")):
        b.limb(LimbRole(group, "leg", position, foot="digit"), segs[first:], pts[first:], parent,
               radii=np.array(radii[first:]) * r_u, sides=8, caps=(0.8, 0.6))


def quadruped_skeleton(b: Builder, rng: np.random.Generator, species: str) -> QuadrupedSkeleton:
    """Every bone of a quadruped (or a dragon's body): trunk, neck, head, tail, legs."""
    p = _QUADRUPEDS[species]
    size = _proportions(rng, p, species == "dragon")
    trunk, neck_pts = _trunk(b, rng, p, size)
    skull = _head(b, rng, p, species, size, neck_pts[-1])
    tail_pts = _tail(b, rng, p, size)
    _legs(b, rng, p, size)
    return QuadrupedSkeleton(size, trunk, neck_pts, skull, tail_pts)


def quadruped_mesh(b: Builder, rng: np.random.Generator, species: str, skeleton: QuadrupedSkeleton) -> None:
    """Mesh: one tube for torso and neck, then head, jaw, ears or horns, tail."""
    p = _QUADRUPEDS[species]
    size, trunk, neck_pts, skull = skeleton.size, skeleton.trunk, skeleton.neck_pts, skeleton.skull
    g, w, n_spine, n_neck, n_tail = size.g, size.w, size.n_spine, size.n_neck, size.n_tail
    hj, fwd, up_h, r_h, head_len = skull.joint, skull.fwd, skull.up, skull.radius, skull.length
    drop = np.array([0.0, 0.0, -0.2 * g])
    points = [trunk[0] + drop] + [t + drop for t in trunk[1:-1]] + [trunk[-1] + 0.5 * drop] + neck_pts[1:]
    r_n0, r_n1 = 0.6 * g, 0.85 * r_h
    # Loins slimmer than the chest, as in most mammals.
    radii = ([(0.85 * g, 0.88 * w)] + [(f * g, (0.5 + 0.5 * f) * w) for f in np.linspace(0.88, 1.08, n_spine)]
             + [(0.95 * g, 0.88 * w)]
             + [(r_n0 + (r_n1 - r_n0) * f, 0.9 * (r_n0 + (r_n1 - r_n0) * f))
                for f in np.linspace(0.35, 1.0, n_neck)])
    b.part(points, radii, [b.pelvis, *b.spine, *b.neck], Z, sides=14, caps=(1.0, 0.3))
    snout = 0.45 if species in ("bear", "cat") else 0.32
    b.part([hj + f * head_len * fwd for f in (-0.15, 0.25, 0.62, 1.0)],
           np.array([(0.85, 0.8), (1.0, 0.95), (snout + 0.1, snout), (snout * 0.7, snout * 0.6)]) * r_h,
           [b.head] * 3, up_h, sides=12, caps=(0.8, 0.6), parent=b.neck[-1])
    b.part([b.heads[b.jaw], b.tails[b.jaw]], np.array([(0.25, 0.4), (0.15, 0.2)]) * r_h, [b.jaw], up_h,
           sides=8, caps=(0.5, 0.6), parent=b.head)
    _ears(b, rng, p["ears"], skull)
    bushy = p["bushy"]
    tail_r = jit(rng, p["tail_r"]) * size.W
    taper = np.interp(np.linspace(0, 1, n_tail + 1), [0, 0.5, 1], [1.0, 0.75 * bushy, 0.25 * bushy])
    b.part(skeleton.tail_pts, [(tail_r * f, tail_r * f) for f in taper], b.tail, Z, sides=8, caps=(0.5, 1.0),
           parent=b.pelvis)


def _ears(b: Builder, rng: np.random.Generator, spec: tuple[str, float], skull: Skull) -> None:
    hj, fwd, up_h, r_h, head_len = skull.joint, skull.fwd, skull.up, skull.radius, skull.length
    style, length = spec
    length = jit(rng, length, 0.15) * head_len
    base = hj + 0.05 * head_len * fwd + 0.75 * r_h * up_h + 0.5 * r_h * X
    direction, width, hint = {
        "pointy": (unit(0.3, 0.2, 1.0), 0.45, X),
        "round": (unit(0.6, 0.1, 1.0), 0.75, X),
        "droopy": (unit(0.45, 0.15, -1.0), 0.5, Y),  # hanging beside the head
        "side": (unit(1.0, 0.25, -0.35), 0.5, Y),  # sticking out sideways
        "long": (unit(0.9, 0.1, 0.8), 0.42, unit(-0.7, 0, 0.8)),
        "horn": (unit(0.35, 1.0, 0.55), 0.2, Z),
    }[style]
    horn = style == "horn"

    def build() -> list[int]:
        tip = base + length * direction
        j = b.bone(BoneKey("horn" if horn else "ear", LEFT), b.head, base, tip)
        radii = [(width * length, width * length), (0.04 * length, 0.04 * length)] if horn else \
            [(width * length, 0.07 * length), (0.12 * width * length, 0.04 * length)]
        b.part([base - 0.15 * length * direction, tip], radii, [j], hint, sides=6 if horn else 8,
               caps=(0.5, 0.3), parent=b.head)
        return [j]

    b.paired("horns" if horn else "ears", build)



def build_quadruped(b: Builder, rng: np.random.Generator, species: str, pose: str | None) -> None:
    quadruped_mesh(b, rng, species, quadruped_skeleton(b, rng, species))
