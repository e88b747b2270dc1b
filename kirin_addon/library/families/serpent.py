"""Serpents (snake, cobra): a long body rooted at the vent, spine forward to the head, a short tail, a jaw,
and a cobra's hood."""

from __future__ import annotations

import numpy as np

from .builder import BoneKey, Builder, Z, jit

# length (m); radius in lengths.
_SERPENTS: dict[str, dict] = {"snake": dict(length=1.3, radius=0.016),
                              "cobra": dict(length=2.2, radius=0.015)}

def build_serpent(b: Builder, rng: np.random.Generator, species: str, pose: str | None) -> None:
    p = _SERPENTS[species]
    L = jit(rng, p["length"], 0.4)
    r = jit(rng, p["radius"], 0.25) * L
    n_body = int(rng.integers(15, 31))
    n_tail = int(np.clip(round(0.18 * n_body), 3, 6))
    n_neck = int(rng.integers(1, 3))
    n_spine = n_body - 1 - n_tail - n_neck
    z = 0.8 * r
    head_len = 6.5 * r
    y_snout, y_head, y_vent = -L / 2, -L / 2 + head_len, -L / 2 + 0.82 * L
    front = [np.array([0.0, y, z]) for y in np.linspace(y_vent, y_head, n_spine + n_neck + 2)]
    b.pelvis = b.bone(BoneKey("pelvis"), -1, front[0], front[1])
    b.spine = b.chain("spine", b.pelvis, front[1:n_spine + 2])
    b.neck = b.chain("neck", b.spine[-1], front[n_spine + 1:])
    hj = front[-1]
    snout = np.array([0.0, y_snout, z - 0.1 * r])
    b.head = b.bone(BoneKey("head"), b.neck[-1], hj, snout)
    b.jaw = b.bone(BoneKey("jaw"), b.head, hj + (0, 0.3 * r, -0.45 * r), snout + (0, 0.6 * r, -0.5 * r))
    tail_pts = [np.array([0.0, y, z]) for y in np.linspace(y_vent, L / 2, n_tail + 1)]
    b.tail = b.chain("tail", b.pelvis, tail_pts)
    if species == "cobra":  # hood flaps folded along the neck
        base = front[n_spine + 1] + (1.1 * r, 0.0, 0.2 * r)
        tip = base + (0.9 * r, 5.0 * r, 0.0)
        b.paired_bone("hood", "hood", b.neck[0], base, tip, [(1.2 * r, 0.12 * r), (0.3 * r, 0.08 * r)], Z,
                      sides=8, caps=(0.4, 0.4))

    # Mesh: one tube from the tail tip to the snout (tail joints run backwards from the vent).
    points = [tail_pts[-1], *tail_pts[-2::-1], *front[1:], snout]
    joints = [*b.tail[::-1], b.pelvis, *b.spine, *b.neck, b.head]
    x_vent = (0.18 * L) / L
    profile = (np.array([0.0, x_vent, 0.5, 0.9, 0.95, 1.0]),
               np.array([(0.12, 0.12), (0.8, 0.8), (1.0, 1.0), (0.75, 0.75), (1.05, 1.2), (0.45, 0.5)]))
    b.part(points, [(0.85 * r, r)] * len(points), joints, Z, sides=10, caps=(0.5, 0.5), profile=profile)
    b.part([b.heads[b.jaw], b.tails[b.jaw]], [(0.25 * r, 0.7 * r), (0.15 * r, 0.35 * r)], [b.jaw], Z,
           sides=8, caps=(0.4, 0.4), parent=b.head)
