"""Birds (pigeon, eagle, chicken, parrot): a pitched body, an S-shaped neck, a beaked head, a tail fan,
legs down to the toes, and folded wings lying along the body."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .builder import BoneKey, Builder, LimbRole, X, Y, Z, jit

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



@dataclass(frozen=True)
class _Frame:
    """A bird's drawn size (m), its body axes and the points its limbs and mesh are built on."""

    p: dict
    s: float  # hip height
    body: float  # pelvis → chest
    rb: float  # body radius
    pitch: float  # body axis above horizontal (rad)
    d: np.ndarray  # body axis, forward-up
    e: np.ndarray  # the body's up
    pel: np.ndarray  # pelvis joint
    trunk: list[np.ndarray]
    neck_pts: list[np.ndarray]
    rh: float  # skull radius
    skull: np.ndarray  # skull centre
    tip: np.ndarray  # beak tip
    n_tail: int


def _body(b: Builder, rng: np.random.Generator, species: str) -> _Frame:
    """Pelvis, spine, neck (a gentle S), head and lower beak."""
    p = _BIRDS[species]
    s = jit(rng, p["hip"], 0.2)
    body, rb = jit(rng, p["body"]) * s, jit(rng, p["girth"]) * s
    pitch = math.radians(jit(rng, p["pitch"], 0.2))
    d = np.array([0.0, -math.cos(pitch), math.sin(pitch)])  # body axis, forward-up
    e = np.array([0.0, math.sin(pitch), math.cos(pitch)])  # the body's up
    n_spine, n_neck, n_tail = int(rng.integers(1, 3)), int(rng.integers(2, 5)), int(rng.integers(1, 3))
    pel = np.array([0.0, 0.4 * body * math.cos(pitch), s + 0.25 * rb])
    trunk = [pel + body * f * d for f in np.linspace(0, 1, n_spine + 2)]
    pelvis_tail = trunk[1] if rng.random() < 0.7 else trunk[0] + 0.5 * rb * Z
    b.pelvis = b.bone(BoneKey("pelvis"), -1, trunk[0], pelvis_tail)
    b.spine = b.chain("spine", b.pelvis, trunk[1:])
    chest = trunk[-1]

    neck_len = jit(rng, p["neck"]) * s
    base = math.radians(jit(rng, p["neck_deg"], 0.1))
    neck_pts = [chest]
    for k in range(n_neck):  # a gentle S: steeper at the base, flatter under the head
        a = base + math.radians(15) * (0.5 - k / max(n_neck - 1, 1))
        neck_pts.append(neck_pts[-1] + neck_len / n_neck * np.array([0.0, -math.cos(a), math.sin(a)]))
    b.neck = b.chain("neck", b.spine[-1], neck_pts)
    hj = neck_pts[-1]
    rh = 0.5 * jit(rng, p["head"]) * s
    beak = jit(rng, p["beak"], 0.15) * s
    skull = hj + np.array([0.0, -0.5 * rh, 0.5 * rh])
    tip = skull + np.array([0.0, -0.9 * rh - beak, -0.3 * rh - p["hook"] * 0.5 * beak])
    b.head = b.bone(BoneKey("head"), b.neck[-1], hj, tip if rng.random() < 0.8 else hj + 1.4 * rh * Z)
    b.jaw = b.bone(BoneKey("jaw"), b.head, skull + (0, -0.7 * rh, -0.35 * rh),
                   tip + (0, 0.25 * beak, -0.1 * rh))
    return _Frame(p, s, body, rb, pitch, d, e, pel, trunk, neck_pts, rh, skull, tip, n_tail)


def _tail(b: Builder, rng: np.random.Generator, frame: _Frame) -> tuple[float, list[np.ndarray]]:
    """The tail: raised where it would reach the ground; returns its length and points."""
    p, s, body, rb, pitch, d, e = frame.p, frame.s, frame.body, frame.rb, frame.pitch, frame.d, frame.e
    pel, n_tail = frame.pel, frame.n_tail
    tail_len = jit(rng, p["tail"], 0.15) * s
    tau = math.radians(p["tail_deg"] + rng.uniform(-8, 8))
    tail_base = pel - 0.15 * body * d + 0.1 * rb * e
    # The tail's height falls as sin(tau - pitch): raise it where it would reach the ground.
    tau = max(tau, pitch + math.asin(float(np.clip((0.15 * s - tail_base[2]) / tail_len, -1.0, 1.0))))
    t_dir = -d * math.cos(tau) + e * math.sin(tau)
    tail_pts = [tail_base + tail_len * t_dir * f for f in np.linspace(0, 1, n_tail + 1)]
    b.tail = b.chain("tail", b.pelvis, tail_pts)
    return tail_len, tail_pts


def _legs(b: Builder, rng: np.random.Generator, frame: _Frame) -> None:
    """Femur (inside the body), tibiotarsus, tarsometatarsus, toes whose head rests on z = 0."""
    p, s, body, rb, d, e, pel = frame.p, frame.s, frame.body, frame.rb, frame.d, frame.e, frame.pel
    centre_y = (pel + 0.45 * body * d)[1]
    foot = np.array([0.45 * rb, centre_y, 0.0])
    ankle = np.array([0.5 * rb, centre_y + 0.15 * s, jit(rng, p["ankle"]) * s])
    knee = np.array([0.55 * rb, ankle[1] - 0.3 * s, 0.5 * (ankle[2] + pel[2] - 0.35 * rb)])
    hip = pel + np.array([0.5 * rb, 0.0, 0.0]) - 0.35 * rb * e
    leg_pts = [hip, knee, ankle, foot, foot - (0, 0.4 * s * rng.uniform(0.9, 1.1), 0)]
    leg_r = np.array([(0.35, 0.35), (0.28, 0.26), (0.07, 0.07), (0.06, 0.07), (0.025, 0.06)]) * rb
    b.limb(LimbRole("leg", "leg", foot="digit"), ["upper", "lower", "meta", "digit"], leg_pts, b.pelvis,
           radii=leg_r, up=-Y, sides=8, caps=(0.5, 0.5))


def _wings(b: Builder, frame: _Frame, tail_len: float) -> None:
    """Folded wings: humerus back, forearm forward, hand back to the primaries' tips (a Z fold)."""
    s, body, rb, d, e, chest = frame.s, frame.body, frame.rb, frame.d, frame.e, frame.trunk[-1]
    sh = chest - 0.15 * body * d + 0.35 * rb * e + 0.65 * rb * X
    el = sh - 0.45 * body * d - 0.1 * rb * e + 0.25 * rb * X
    wr = el + 0.3 * body * d - 0.15 * rb * e + 0.1 * rb * X
    hand = 0.95 * body + 0.4 * tail_len
    if d[2] > 0:  # upright birds: the primaries stop short of the ground
        hand = min(hand, (wr[2] - 0.1 * rb * e[2] - 0.15 * s) / d[2])
    wing_tip = wr - hand * d - 0.1 * rb * e + 0.1 * rb * X

    def wing_mesh(joints: list[int]) -> None:
        # The feathers lie along the body's side, just outside it.
        pts = [np.array([max(q[0], 0.92 * rb), q[1], q[2]]) for q in (sh, 0.5 * (sh + wing_tip), wing_tip)]
        b.part(pts, np.array([(0.55, 0.14), (0.6, 0.12), (0.15, 0.03)]) * rb, joints[:1] * 2, -e, sides=8,
               caps=(0.6, 0.4), shift=np.array([0.4, 0.6, 0.3]),
               nearest=[(joints[0], sh, el), (joints[1], el, wr), (joints[2], wr, wing_tip)])

    b.limb(LimbRole("wing", "wing"), ["upper", "lower", "meta"], [sh, el, wr, wing_tip], b.spine[-1],
           mesh=wing_mesh)


def _mesh(b: Builder, frame: _Frame, tail_pts: list[np.ndarray]) -> None:
    """Body and neck, head with beak, lower beak, tail fan."""
    trunk, neck_pts, rb, rh, skull, tip, e = (frame.trunk, frame.neck_pts, frame.rb, frame.rh, frame.skull,
                                              frame.tip, frame.e)
    n_spine, n_neck, n_tail = len(b.spine), len(b.neck), frame.n_tail
    points = [trunk[0], *trunk[1:], *neck_pts[1:]]
    radii = ([(0.85 * rb, 0.8 * rb)] + [(rb, 0.95 * rb)] * n_spine + [(0.85 * rb, 0.8 * rb)]
             + [(r, r) for r in np.linspace(0.5 * rb, 0.7 * rh, n_neck)])
    b.part(points, radii, [b.pelvis, *b.spine, *b.neck], e, sides=12, caps=(1.2, 0.3))
    b.part([skull + (0, 0.8 * rh, 0), skull, skull + (0, -0.9 * rh, -0.1 * rh), tip],
           np.array([(0.7, 0.7), (1.0, 0.9), (0.45, 0.38), (0.05, 0.05)]) * rh, [b.head] * 3, Z, sides=10,
           caps=(0.8, 0.2), parent=b.neck[-1])
    b.part([b.heads[b.jaw], b.tails[b.jaw]], np.array([(0.25, 0.3), (0.04, 0.04)]) * rh, [b.jaw], Z, sides=6,
           caps=(0.4, 0.2), parent=b.head)
    b.part(tail_pts, [(0.3 * rb, 0.08 * rb)] + [(0.55 * rb * (1 + f), 0.05 * rb) for f in
                                                 np.linspace(0.3, 1.0, n_tail)], b.tail, X, sides=8,
           caps=(0.5, 0.5), parent=b.pelvis)


def build_bird(b: Builder, rng: np.random.Generator, species: str, pose: str | None) -> None:
    frame = _body(b, rng, species)
    tail_len, tail_pts = _tail(b, rng, frame)
    _legs(b, rng, frame)
    _wings(b, frame, tail_len)
    _mesh(b, frame, tail_pts)
