"""Bipeds (human, knight, robot, goblin): trunk and head, arms in a T- or A-pose, legs down to the ball
of the foot, and a mesh (boxy for robots)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .builder import BoneKey, Builder, LimbRole, Y, Z, jit, pick, unit

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



@dataclass(frozen=True)
class _Frame:
    """A biped's drawn height (m), head size, trunk line and the points the mesh follows."""

    p: dict
    h: float  # height
    head: float  # head size
    z_hip: float  # hip-joint height
    z_neck: float  # neck base height
    sides: int  # tube sides (4: boxy)
    phase: float
    trunk: np.ndarray  # (n_spine + 2, 3) pelvis to neck base
    neck_pts: list[np.ndarray]


def _trunk(b: Builder, rng: np.random.Generator, species: str) -> _Frame:
    """Pelvis, spine, neck, head, maybe a jaw and ears."""
    p = _BIPEDS[species]
    h = jit(rng, p["height"], 0.12)
    head = jit(rng, p["head"]) * h
    z_hip = jit(rng, p["leg"], 0.05) * h
    n_spine, n_neck = int(rng.integers(2, 4)), int(rng.integers(1, 3))
    boxy = p["boxy"]
    sides, phase = (4, math.pi / 4) if boxy else (10, 0.0)
    z_head = h - 0.8 * head  # skull base
    z_neck = z_head - jit(rng, 0.045, 0.2) * h
    z_p = z_hip + 0.03 * h

    ts = np.linspace(0.0, 1.0, n_spine + 2)
    trunk = np.stack([np.zeros_like(ts), 0.012 * h * np.sin(np.pi * ts), z_p + (z_neck - z_p) * ts], axis=-1)
    seg = (z_neck - z_p) / (n_spine + 1)
    pelvis_tail = pick(rng, [trunk[1], trunk[0] - (0, 0, seg), trunk[0] - (0, seg, 0)], [0.6, 0.25, 0.15])
    b.pelvis = b.bone(BoneKey("pelvis"), -1, trunk[0], pelvis_tail)
    b.spine = b.chain("spine", b.pelvis, trunk[1:])
    neck_pts = [trunk[-1] + (0, -0.01 * h * f, (z_head - z_neck) * f) for f in np.linspace(0, 1, n_neck + 1)]
    b.neck = b.chain("neck", b.spine[-1], neck_pts)
    hj = neck_pts[-1]
    head_tail = hj + (0, 0, 0.8 * head) if rng.random() < 0.75 else hj + (0, -0.5 * head, 0.3 * head)
    b.head = b.bone(BoneKey("head"), b.neck[-1], hj, head_tail)
    if boxy or species == "goblin" or rng.random() < 0.5:
        b.jaw = b.bone(BoneKey("jaw"), b.head, hj + (0, -0.1 * head, 0.0),
                       hj + (0, -0.42 * head, -0.15 * head))
        b.part([b.heads[b.jaw], b.tails[b.jaw]], np.array([(0.12, 0.2), (0.08, 0.12)]) * head, [b.jaw], -Y,
               sides=sides, phase=phase, caps=(0.5, 0.5), parent=b.head)
    if p["ears"]:
        ear = 0.5 * head * rng.uniform(0.8, 1.2)
        base = hj + (0.38 * head, -0.05 * head, 0.35 * head)
        tip = base + ear * unit(1.0, 0.35, 0.45)
        b.paired_bone("ears", "ear", b.head, base, tip, [(0.35 * ear, 0.06 * ear), (0.03 * ear, 0.02 * ear)],
                      Z, caps=(0.3, 0.3))
    return _Frame(p, h, head, z_hip, z_neck, sides, phase, trunk, neck_pts)


def _arms(b: Builder, rng: np.random.Generator, frame: _Frame, pose: str | None) -> None:
    """Clavicle, upper arm, forearm, hand; T-pose horizontal or A-pose angled down."""
    p, h = frame.p, frame.h
    down = 0.0 if pose == "T" else math.radians(rng.uniform(30, 50))
    arm = jit(rng, p["arm"], 0.06) * h
    d_up = np.array([math.cos(down), 0.0, -math.sin(down)])
    bend = math.radians(rng.uniform(0, 12))  # rigs often keep a slight elbow bend
    d_fore = unit(*(d_up + np.array([0.0, -math.tan(bend), 0.0])))
    z_arm = frame.z_neck - 0.03 * h
    sh = np.array([jit(rng, p["shoulder"], 0.08) * h, 0.0, z_arm])
    elbow = sh + 0.43 * arm * d_up
    wrist = elbow + 0.34 * arm * d_fore
    clavicle = np.array([0.02 * h, -0.01 * h, z_arm + 0.01 * h])
    arm_pts = [clavicle, sh, elbow, wrist, wrist + 0.23 * arm * d_fore]
    r = 0.045 * h * (p["girth"] / 0.085)
    arm_r = np.array([(0.8, 0.8), (1.0, 1.0), (0.75, 0.75), (0.5, 0.6), (0.3, 0.8)]) * r
    b.limb(LimbRole("arm", "arm"), ["girdle", "upper", "lower", "meta"], arm_pts, b.spine[-1], radii=arm_r,
           up=Z, sides=frame.sides, phase=frame.phase, caps=(0.6, 0.8))


def _legs(b: Builder, rng: np.random.Generator, frame: _Frame) -> None:
    """Thigh, shin, foot (ankle→ball), toe whose head (the ball) rests on z = 0, maybe a toe end."""
    p, h, z_hip = frame.p, frame.h, frame.z_hip
    x = jit(rng, p["hips"], 0.1) * h
    foot = jit(rng, p["foot"], 0.08) * h
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
    b.limb(LimbRole("leg", "leg", foot="digit", toe="digit_end"), segs, leg_pts, b.pelvis,
           radii=np.array(leg_r) * r, up=-Y, sides=frame.sides, phase=frame.phase, caps=(0.6, 0.5))


def _mesh(b: Builder, frame: _Frame) -> None:
    """Torso from the crotch to the skull base, then the head."""
    p, h, head, trunk, neck_pts = frame.p, frame.h, frame.head, frame.trunk, frame.neck_pts
    boxy, phase = p["boxy"], frame.phase
    n_spine, n_neck = len(b.spine), len(b.neck)
    hj = neck_pts[-1]
    g, d = p["girth"] * h, p["depth"] * h
    points = [trunk[0] - (0, 0, 0.06 * h)] + list(trunk) + neck_pts[1:]
    radii = ([(0.8 * d, 0.9 * g), (d, 1.05 * g)] + [(0.85 * d, 0.85 * g)] * (n_spine - 1)
             + [(1.05 * d, 1.1 * g), (0.55 * d, 0.5 * g)] + [(0.4 * d, 0.35 * g)] * n_neck)
    b.part(points, radii, [b.pelvis, b.pelvis, *b.spine, *b.neck], -Y, sides=4 if boxy else 14, phase=phase,
           caps=(0.6, 0.2))
    b.part([hj - (0, 0, 0.15 * head), hj + (0, -0.08 * head, 0.3 * head), (0, -0.05 * head, h - 0.05 * head)],
           np.array([(0.38, 0.3), (0.55, 0.42), (0.4, 0.33)]) * head, [b.head, b.head], -Y,
           sides=4 if boxy else 12, phase=phase, caps=(0.5, 0.8), parent=b.neck[-1])


def build_biped(b: Builder, rng: np.random.Generator, species: str, pose: str | None) -> None:
    frame = _trunk(b, rng, species)
    _arms(b, rng, frame, pose)
    _legs(b, rng, frame)
    _mesh(b, frame)
