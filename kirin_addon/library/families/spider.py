"""Spiders (tarantula, jumping spider): cephalothorax and abdomen (maybe on a pedicel), four leg pairs,
chelicerae and pedipalps."""

from __future__ import annotations

import numpy as np

from .arthropods import ArthropodLeg, add_arthropod_leg
from .builder import BoneKey, Builder, Y, Z, jit, unit

# body: cephalothorax + abdomen length (m); fractions of it: ceph, height, leg; front: front-leg factor.
_SPIDERS: dict[str, dict] = {
    "tarantula": dict(body=0.06, ceph=0.45, height=0.35, leg=1.45, leg_r=0.075, front=1.0, palp=0.55),
    "jumping_spider": dict(body=0.009, ceph=0.52, height=0.3, leg=1.0, leg_r=0.06, front=1.3, palp=0.4),
}


def build_spider(b: Builder, rng: np.random.Generator, species: str, pose: str | None) -> None:
    p = _SPIDERS[species]
    L = jit(rng, p["body"], 0.3)
    lc = jit(rng, p["ceph"]) * L
    y_f = -L / 2
    z_b = jit(rng, p["height"]) * L
    wc = 0.42 * lc  # cephalothorax half-width
    cc = np.array([0.0, y_f + 0.55 * lc, z_b])
    hj = np.array([0.0, y_f + 0.2 * lc, z_b + 0.15 * lc])
    b.pelvis = b.bone(BoneKey("pelvis"), -1, cc, hj if rng.random() < 0.7 else cc + 0.4 * lc * Z)
    b.head = b.bone(BoneKey("head"), b.pelvis, hj, (0, y_f - 0.02 * L, z_b + 0.1 * lc))
    pedicel = rng.random() < 0.5
    a0 = np.array([0.0, y_f + lc, z_b])
    if pedicel:
        abd = b.chain("abdomen", b.pelvis, [a0, a0 + (0, 0.05 * L, 0.05 * lc), (0, L / 2, z_b + 0.15 * lc)])
    else:
        abd = b.chain("abdomen", b.pelvis, [a0, (0, L / 2, z_b + 0.15 * lc)])
    b.extra("abdomen", abd)

    r = p["leg_r"] * L
    leg = jit(rng, p["leg"]) * L
    segs = ["coxa", "femur", "tibia", "metatarsus", "tarsus"]
    profile = [(0.07, 0.02), (0.18, 0.21), (0.25, -0.07), (0.18, None), (0.1, 0.0)]
    pairs = [(-60, p["front"], "front"), (-22, 0.9, "middle"), (18, 0.85, "middle"), (48, 1.0, "hind")]
    for n, (deg, f, position) in enumerate(pairs, start=1):
        y = y_f + (0.28 + 0.17 * (n - 1)) * lc
        deg_n = deg + rng.uniform(-8, 8)
        length = leg * f * rng.uniform(0.93, 1.07)
        add_arthropod_leg(b, ArthropodLeg(segs, profile, length, r * (f if n == 1 else 1.0)), b.pelvis,
                          (0.85 * wc, y, z_b - 0.1 * lc), deg_n, n, position)

    base = np.array([0.12 * lc, y_f + 0.06 * lc, z_b])
    tip = np.array([0.1 * lc, y_f - 0.06 * lc, z_b - 0.3 * lc])
    radii = [(0.12 * lc, 0.1 * lc), (0.05 * lc, 0.04 * lc)]
    b.paired_bone("chelicerae", "chelicera", b.head, base, tip, radii, -Y, sides=6, caps=(0.5, 0.5))
    palp = jit(rng, p["palp"]) * lc
    base = np.array([0.25 * lc, y_f + 0.15 * lc, z_b - 0.1 * lc])
    mid = base + palp * unit(0.5, -0.6, 0.35)
    tip = mid + palp * unit(0.2, -1.0, -0.9)
    tip[2] = max(tip[2], 0.15 * z_b)
    b.paired_chain("pedipalps", "pedipalp", b.pelvis, [base, mid, tip],
                   [(0.9 * r, 0.9 * r), (0.7 * r, 0.7 * r), (0.6 * r, 0.6 * r)], Z, sides=6, caps=(0.5, 0.8))

    # Mesh: cephalothorax (with the eye region on the head joint) and abdomen.
    b.part([(0, y_f + lc, z_b), cc, hj, (0, y_f, z_b + 0.05 * lc)],
           [(0.25 * lc, 0.7 * wc), (0.3 * lc, wc), (0.26 * lc, 0.75 * wc), (0.15 * lc, 0.5 * wc)],
           [b.pelvis, b.pelvis, b.head], Z, sides=12, caps=(0.4, 0.5))
    a_start, a_end = b.heads[abd[-1]], b.tails[abd[-1]]
    la = float(np.linalg.norm(a_end - a_start))
    b.part([a_start, a_start + 0.45 * (a_end - a_start), a_end], np.array([(0.25, 0.25), (0.42, 0.4),
                                                                           (0.18, 0.15)]) * la,
           [abd[-1], abd[-1]], Z, sides=12, caps=(0.5, 0.8), parent=abd[0] if pedicel else b.pelvis)
    if pedicel:
        b.part([b.heads[abd[0]] - (0, 0.05 * L, 0), b.tails[abd[0]]], [(0.08 * lc, 0.08 * lc)] * 2, [abd[0]],
               Z, sides=6, caps=(0.5, 0.5), parent=b.pelvis)
