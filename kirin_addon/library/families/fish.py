"""Fish (trout, shark, tuna): a fusiform body rooted at the centre of mass, a jaw, dorsal, anal and caudal
fins as extras, and paired pectoral and pelvic fins as limbs."""

from __future__ import annotations

import numpy as np

from .builder import BoneKey, Builder, LimbRole, Y, Z, jit, unit

# length (m); fractions of it: height (body depth), width, head, fins.
_FISH: dict[str, dict] = {
    "trout": dict(length=0.4, height=0.22, width=0.12, head=0.22, caudal=0.16, dorsal=0.1, pectoral=0.1,
                  tail="truncate"),
    "shark": dict(length=2.5, height=0.18, width=0.16, head=0.24, caudal=0.25, dorsal=0.14, pectoral=0.2,
                  tail="heterocercal"),
    "tuna": dict(length=1.5, height=0.27, width=0.2, head=0.22, caudal=0.2, dorsal=0.1, pectoral=0.12,
                 tail="lunate"),
}


def build_fish(b: Builder, rng: np.random.Generator, species: str, pose: str | None) -> None:
    p = _FISH[species]
    L = jit(rng, p["length"], 0.3)
    H, Wd = jit(rng, p["height"]) * L, jit(rng, p["width"]) * L
    y0 = -L / 2
    y_head = y0 + jit(rng, p["head"]) * L
    y_root = y0 + 0.42 * L
    y_ped = y0 + 0.86 * L
    n_tail = int(rng.integers(2, 5))
    front = [np.array([0.0, y_root, 0.0])]
    if rng.random() < 0.6:
        front.append(np.array([0.0, 0.5 * (y_root + y_head), 0.02 * H]))
    front.append(np.array([0.0, y_head, 0.03 * H]))
    b.pelvis = b.bone(BoneKey("pelvis"), -1, front[0], front[1])
    b.spine = b.chain("spine", b.pelvis, front[1:]) if len(front) > 2 else []
    snout = np.array([0.0, y0, -0.05 * H])
    b.head = b.bone(BoneKey("head"), b.spine[-1] if b.spine else b.pelvis, front[-1], snout)
    b.jaw = b.bone(BoneKey("jaw"), b.head, (0, y_head - 0.3 * (y_head - y0), -0.28 * H),
                   (0, y0 + 0.03 * L, -0.15 * H))
    tail_pts = [np.array([0.0, y, 0.0]) for y in np.linspace(y_root, y_ped, n_tail + 1)]
    b.tail = b.chain("tail", b.pelvis, tail_pts)

    caudal = jit(rng, p["caudal"]) * L
    ped = tail_pts[-1]
    reach = 1.0 if p["tail"] == "truncate" else 0.6  # the bone ends where the fin's lobes do
    rise = 0.2 * caudal if species == "shark" else 0.0
    fins = b.bone(BoneKey("caudal_fin"), b.tail[-1], ped, ped + (0, reach * caudal, rise))
    dorsal = jit(rng, p["dorsal"]) * L
    d0 = np.array([0.0, y_root - 0.02 * L, 0.42 * H])
    dorsal_j = b.bone(BoneKey("dorsal_fin"), b.pelvis, d0, d0 + dorsal * unit(0, 0.6, 1.0))
    b.extra("fins", [dorsal_j, fins])
    b.part([d0 - (0, 0, 0.1 * H), b.tails[dorsal_j]], [(0.5 * dorsal, 0.05 * Wd), (0.1 * dorsal, 0.02 * Wd)],
           [dorsal_j], Y, sides=6, caps=(0.2, 0.3), shift=np.array([0.6, 0.8]), parent=b.pelvis)
    if rng.random() < 0.5:
        a0 = np.array([0.0, y_root + 0.25 * L, -0.3 * H])
        a_tip = a0 + 0.6 * dorsal * unit(0, 0.8, -1.0)
        anal = b.bone(BoneKey("anal_fin"), b.tail[min(1, n_tail - 1)], a0, a_tip)
        b.extra("fins", [anal])
        b.part([a0 + (0, 0, 0.1 * H), a_tip], [(0.3 * dorsal, 0.04 * Wd), (0.06 * dorsal, 0.02 * Wd)], [anal],
               Y, sides=6, caps=(0.2, 0.3), shift=np.array([0.6, 0.8]), parent=b.parents[anal])
    # Caudal fin: one vertical fan, or two lobes (a longer upper one on sharks).
    lobes = {"truncate": [], "lunate": [(1.0, 1.0), (1.0, -1.0)],
             "heterocercal": [(1.3, 1.0), (0.7, -0.8)]}[p["tail"]]  # (length, up or down)
    if not lobes:
        b.part([ped, ped + (0, caudal, 0)], [(0.2 * H, 0.03 * Wd), (0.5 * caudal, 0.015 * Wd)], [fins], Z,
               sides=8, caps=(0.2, 0.2), parent=b.tail[-1])
    for length, up in lobes:
        tip = ped + caudal * length * unit(0, 0.8, 0.9 * up)
        b.part([ped, tip], [(0.25 * caudal, 0.04 * Wd), (0.05 * caudal, 0.01 * Wd)], [fins], Y, sides=6,
               caps=(0.3, 0.3), shift=np.array([0.3, 0.6]), parent=b.tail[-1])

    pect = jit(rng, p["pectoral"]) * L

    def fin_mesh(base, tip, joint, parent, size):
        b.part([base, tip], [(0.4 * size, 0.04 * Wd), (0.1 * size, 0.015 * Wd)], [joint], Y, sides=6,
               caps=(0.3, 0.3), shift=np.array([0.6, 0.8]), parent=parent)

    chest = b.spine[-1] if b.spine else b.pelvis
    pc0 = np.array([0.35 * Wd, y_head + 0.03 * L, -0.22 * H])
    pc1 = pc0 + pect * unit(0.8, 0.6, -0.35)
    b.limb(LimbRole("pecfin", "fin", "front"), ["fin"], [pc0, pc1], chest,
           mesh=lambda j: fin_mesh(pc0, pc1, j[0], chest, pect))
    if rng.random() < 0.6:
        pv0 = np.array([0.22 * Wd, y_root + 0.06 * L, -0.38 * H])
        pv1 = pv0 + 0.6 * pect * unit(0.4, 0.9, -0.35)
        b.limb(LimbRole("pelfin", "fin", "hind"), ["fin"], [pv0, pv1], b.pelvis,
               mesh=lambda j: fin_mesh(pv0, pv1, j[0], b.pelvis, 0.6 * pect))

    # Body: one tube snout → peduncle, shaped by a fusiform profile.
    points = [snout, *front[::-1], *tail_pts[1:]]
    joints = [b.head, *(b.spine[::-1]), b.pelvis, *b.tail]
    xs = np.array([0.0, 0.08, 0.25, 0.42, 0.65, 1.0])
    factors = np.array([(0.2, 0.2), (0.62, 0.7), (0.93, 0.95), (1.0, 1.0), (0.72, 0.7), (0.22, 0.28)])
    b.part(points, [(0.5 * H, 0.5 * Wd)] * len(points), joints, Z, sides=12, caps=(0.5, 0.3),
           profile=(xs, factors))
    b.part([b.heads[b.jaw], b.tails[b.jaw]], [(0.1 * H, 0.25 * Wd), (0.05 * H, 0.12 * Wd)], [b.jaw], Z,
           sides=8, caps=(0.4, 0.4), parent=b.head)
