"""Insects (ant, beetle): head, thorax and abdomen (with a petiole on ants), three leg pairs, antennae and
mandibles."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .arthropods import ArthropodLeg, add_arthropod_leg
from .builder import BoneKey, Builder, Z, jit, unit

# length: body length (m); fractions of it: height (thorax above ground), leg, head, thorax,
# petiole (0: none), abdomen, width (thorax), antenna. elbowed: ant-like antennae.
_HEXAPODS: dict[str, dict] = {
    "ant": dict(length=0.012, height=0.28, leg=1.0, head=0.22, thorax=0.32, petiole=0.06, abdomen=0.40,
                width=0.16, antenna=0.6, elbowed=True, mandibles=1.0, leg_r=0.03),
    "beetle": dict(length=0.035, height=0.2, leg=0.75, head=0.16, thorax=0.3, petiole=0.0, abdomen=0.56,
                   width=0.45, antenna=0.35, elbowed=False, mandibles=0.5, leg_r=0.035),
}


@dataclass(frozen=True)
class _Body:
    """An insect's drawn length (m), the fore–aft stations of its parts, and its abdomen chain."""

    p: dict
    species: str
    L: float  # body length
    fr: np.ndarray  # (4,) lengths of head, thorax, petiole, abdomen
    y_front: float
    y_neck: float
    y_pro: float
    y_rear: float
    y_abd: float
    y_c: float
    hw: float  # thorax half-width
    ht: float  # thorax half-height
    z_b: float  # thorax height above ground
    hj: np.ndarray  # head joint
    abd: list[int]


def _body(b: Builder, rng: np.random.Generator, species: str) -> _Body:
    """Pelvis (thorax), spine (prothorax), head and the abdomen chain."""
    p = _HEXAPODS[species]
    L = jit(rng, p["length"], 0.3)
    fr = np.array([jit(rng, p[k]) for k in ("head", "thorax", "petiole", "abdomen")])
    fr = fr / fr.sum() * L
    y_front = -L / 2
    y_neck = y_front + fr[0]
    y_pro = y_neck + 0.35 * fr[1]
    y_rear = y_neck + fr[1]
    y_abd = y_rear + fr[2]
    hw = jit(rng, p["width"]) * L / 2
    ht = 0.7 * hw if species == "beetle" else 0.55 * fr[1] / 2
    z_b = jit(rng, p["height"]) * L
    y_c = 0.5 * (y_pro + y_rear)
    b.pelvis = b.bone(BoneKey("pelvis"), -1, (0, y_c, z_b), (0, y_pro, z_b + 0.05 * ht))
    b.spine = b.chain("spine", b.pelvis, [(0, y_pro, z_b + 0.05 * ht), (0, y_neck, z_b + 0.1 * ht)])
    hj = np.array([0.0, y_neck, z_b + 0.1 * ht])
    b.head = b.bone(BoneKey("head"), b.spine[0], hj, (0, y_front, z_b - 0.1 * ht))
    if fr[2] > 0:
        abd = b.chain("abdomen", b.pelvis,
                      [(0, y_rear, z_b), (0, y_abd, z_b + 0.3 * ht), (0, L / 2, z_b + 0.1 * ht)])
    else:
        abd = b.chain("abdomen", b.pelvis, [(0, y_rear, z_b), (0, L / 2, z_b - 0.1 * ht)])
    b.extra("abdomen", abd)
    return _Body(p, species, L, fr, y_front, y_neck, y_pro, y_rear, y_abd, y_c, hw, ht, z_b, hj, abd)


def _legs(b: Builder, rng: np.random.Generator, body: _Body) -> None:
    """Coxa, femur up to the knee, tibia down to the ground, tarsus along it."""
    p, L, y_neck, y_pro, y_rear = body.p, body.L, body.y_neck, body.y_pro, body.y_rear
    leg = jit(rng, p["leg"]) * L
    profile = [(0.12, -0.05), (0.23, 0.19), (0.25, None), (0.18, 0.0)]
    segs = ["coxa", "femur", "tibia", "tarsus"]
    r = p["leg_r"] * L
    spots = [(b.spine[0], 0.5 * (y_neck + y_pro), rng.uniform(-60, -35), 0.85, "front"),
             (b.pelvis, y_pro + 0.3 * (y_rear - y_pro), rng.uniform(-10, 10), 0.95, "middle"),
             (b.pelvis, y_pro + 0.75 * (y_rear - y_pro), rng.uniform(30, 55), 1.1, "hind")]
    for n, (parent, y, deg, f, position) in enumerate(spots, start=1):
        add_arthropod_leg(b, ArthropodLeg(segs, profile, leg * f, r), parent,
                          (0.7 * body.hw, y, body.z_b - 0.4 * body.ht), deg, n, position)


def _antennae_and_mandibles(b: Builder, rng: np.random.Generator, body: _Body) -> None:
    """Two antennae on the head (elbowed on ants), and mandibles on most."""
    p, L, fr, y_front, z_b = body.p, body.L, body.fr, body.y_front, body.z_b
    r = p["leg_r"] * L
    antenna = jit(rng, p["antenna"]) * L
    hh = 0.45 * fr[0]  # head half-size
    base = np.array([0.25 * hh, y_front + 0.3 * fr[0], z_b + 0.35 * hh])
    if p["elbowed"]:
        mid = base + 0.4 * antenna * unit(0.4, -0.5, 0.8)
        end = mid + 0.6 * antenna * unit(0.35, -1.0, -0.25)
    else:
        mid = base + 0.4 * antenna * unit(0.5, -1.0, 0.35)
        end = mid + 0.6 * antenna * unit(0.6, -1.0, 0.2)
    radii = [(0.25 * r, 0.25 * r), (0.2 * r, 0.2 * r), (0.3 * r, 0.3 * r)]
    b.paired_chain("antennae", "antenna", b.head, [base, mid, end], radii, Z, sides=5, caps=(0.5, 1.0))
    if rng.random() < p["mandibles"]:
        base = np.array([0.35 * hh, y_front + 0.15 * fr[0], z_b - 0.2 * hh])
        tip = np.array([0.1 * hh, y_front - 0.25 * fr[0], z_b - 0.35 * hh])
        radii = [(0.3 * hh, 0.2 * hh), (0.06 * hh, 0.05 * hh)]
        b.paired_bone("mandibles", "mandible", b.head, base, tip, radii, Z, sides=6, caps=(0.5, 0.4))


def _mesh(b: Builder, body: _Body) -> None:
    """Thorax, head, petiole and gaster (or one abdomen)."""
    L, fr, y_front, y_rear, y_abd = body.L, body.fr, body.y_front, body.y_rear, body.y_abd
    y_c, y_pro = body.y_c, body.y_pro
    hw, ht, z_b, hj, abd, species = body.hw, body.ht, body.z_b, body.hj, body.abd, body.species
    hh = 0.45 * fr[0]  # head half-size
    b.part([(0, y_rear, z_b), (0, y_c, z_b), (0, y_pro, z_b + 0.05 * ht), hj],
           [(0.7 * ht, 0.75 * hw), (ht, hw), (0.85 * ht, 0.8 * hw), (0.5 * ht, 0.55 * hw)],
           [b.pelvis, b.pelvis, b.spine[0]], Z, sides=10, caps=(0.6, 0.4))
    b.part([hj + (0, 0.1 * fr[0], 0), hj + (0, -0.45 * fr[0], 0), (0, y_front, z_b - 0.1 * ht)],
           [(0.7 * hh, 0.8 * hh), (hh, 1.05 * hh), (0.5 * hh, 0.6 * hh)], [b.head, b.head], Z, sides=10,
           caps=(0.4, 0.6), parent=b.spine[0])
    la = L / 2 - (y_abd if fr[2] > 0 else y_rear)
    ha = (0.5 if species == "ant" else 0.32) * la
    wa = ha * (1.6 if species == "beetle" else 1.0)
    start = b.heads[abd[-1]]
    end = b.tails[abd[-1]]
    b.part([start, start + 0.45 * (end - start), end], [(0.6 * ha, 0.6 * wa), (ha, wa), (0.4 * ha, 0.4 * wa)],
           [abd[-1], abd[-1]], Z, sides=12, caps=(0.6, 0.8), parent=abd[0] if len(abd) > 1 else b.pelvis)
    if len(abd) > 1:
        b.part([b.heads[abd[0]], b.tails[abd[0]]], [(0.3 * ht, 0.3 * ht), (0.35 * ht, 0.35 * ht)], [abd[0]],
               Z, sides=6, caps=(0.5, 0.5), parent=b.pelvis)


def build_hexapod(b: Builder, rng: np.random.Generator, species: str, pose: str | None) -> None:
    body = _body(b, rng, species)
    _legs(b, rng, body)
    _antennae_and_mandibles(b, rng, body)
    _mesh(b, body)
