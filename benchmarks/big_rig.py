"""A production-sized rig for issue 31's "any size": a built creature with what artists' rigs carry
beyond the body — five three-bone fingers on each hand, leaf twist bones on the arms and legs (as
Unreal's mannequin has them), a face (brows, lids, lips, cheeks, a tongue…: leaf bones of the head and
jaw, as Rigify's face rig) and, with `fill="tail"`, a long tail — up to `total` bones. A finger or
a tail bone has its own tube of skin, a twist bone half the skin of its third of the limb, a face bone
half the skin of the head's vertices nearest it (a low-poly head leaves most face bones without any,
as helper bones are). The body's bones keep their indices and roles; the added ones are listed in
`creature.extras` ("fingers", "twist", "face", "long_tail")."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from kirin.kirin_addon.core.creature import Creature
from kirin.kirin_addon.core.rig import rig_from_bones
from kirin.kirin_addon.core.skinning import SkinnedMesh
from kirin.kirin_addon.library.families.build import build_creature
from kirin.kirin_addon.library.families.builder import Tube
from kirin.kirin_addon.library.families.mesh import skinned_mesh

FINGERS = ("Thumb", "Index", "Middle", "Ring", "Pinky")
SIDE_WORD = {1: "Left", -1: "Right"}


def _unit(v: np.ndarray) -> np.ndarray:
    return v / max(float(np.linalg.norm(v)), 1e-12)


class _Bones:
    """Bones and skin tubes added to a creature, appended after its own."""

    def __init__(self, creature: Creature, prefix: str):
        rig = creature.rig
        self.prefix = prefix
        self.names, self.parents = list(rig.names), list(rig.parents)
        self.heads, self.tails = list(rig.heads), list(rig.tails)
        self.tubes: list[Tube] = []
        self.twists: list[tuple[int, int, float, float]] = []  # (twist bone, segment, from, to)
        self.faces: tuple[list[int], list[int], float] = ([], [], 0.0)  # face bones, their skull, its radius
        self.size = rig.body_size

    def add(self, name: str, parent: int, head, tail, radius: float | None = None) -> int:
        self.names.append(self.prefix + name)
        self.parents.append(int(parent))
        self.heads.append(np.asarray(head, float))
        self.tails.append(np.asarray(tail, float))
        joint = len(self.names) - 1
        if radius is not None:
            self.tubes.append(Tube(np.stack([self.heads[-1], self.tails[-1]]), np.full((2, 2), radius),
                                   [joint], np.array([0.0, 0.0, 1.0]), sides=4, caps=(0.5, 0.5),
                                   parent=int(parent)))
        return joint

    @property
    def count(self) -> int:
        return len(self.names)


def _fingers(b: _Bones, creature: Creature) -> list[int]:
    """Five fingers of three bones on each arm's hand, fanned across the hand, the thumb forward."""
    out = []
    for limb in creature.limbs_of("arm"):
        hand = limb.joints[-1]
        wrist, knuckle = b.heads[hand], b.tails[hand]
        along = knuckle - wrist
        length = float(np.linalg.norm(along))
        d = _unit(along)
        across = _unit(np.cross(d, [0.0, 0.0, 1.0])) if abs(d[2]) < 0.9 else np.array([0.0, 1.0, 0.0])
        for k, finger in enumerate(FINGERS):
            if finger == "Thumb":
                base = wrist + 0.35 * along - 0.25 * length * across * np.sign(across[1] or 1.0)
                direction = _unit(d - 0.8 * across * np.sign(across[1] or 1.0))
            else:
                base = knuckle + (k - 2.5) * 0.22 * length * across
                direction = d
            parent, point = hand, base
            for phalanx, share in enumerate((0.45, 0.3, 0.25), start=1):
                end = point + 0.9 * length * share * direction
                name = f"{SIDE_WORD[limb.side]}Hand{finger}{phalanx}"
                parent = b.add(name, parent, point, end, radius=0.07 * length)
                out.append(parent)
                point = end
    return out


def _twists(b: _Bones, creature: Creature) -> list[int]:
    """Two leaf twist bones on each upper and lower arm and leg, at a third and two thirds along, each
    taking half the skin of its third of the segment."""
    out = []
    for limb in creature.limbs:
        if limb.kind not in ("arm", "leg"):
            continue
        segments = limb.joints[1:3] if limb.kind == "arm" else limb.joints[0:2]
        for label, segment in zip(("Upper", "Lower"), segments, strict=True):
            head, tail = b.heads[segment], b.tails[segment]
            for k in (1, 2):
                start, stop = k / 3.0, (k + 1) / 3.0
                name = f"{SIDE_WORD[limb.side]}{limb.position.title()}{label}{limb.kind.title()}Twist{k}"
                twist = b.add(name, segment, head + start * (tail - head), head + stop * (tail - head))
                b.twists.append((twist, segment, start, stop))
                out.append(twist)
    return out


def _face(b: _Bones, creature: Creature, count: int) -> list[int]:
    """`count` leaf bones of the head (the jaw's below the mouth line), spread just under the front of
    the skull on a golden-angle spiral, each pointing out of the face; each takes half the skin of the
    head's vertices nearest it (a face rig deforms the head's surface, it adds none)."""
    head = creature.head
    centre = 0.5 * (b.heads[head] + b.tails[head])
    radius = 0.45 * float(np.linalg.norm(b.tails[head] - b.heads[head]))
    out = []
    for k in range(count):
        z = 1.0 - 2.0 * (k + 0.5) / max(count, 1)
        angle = k * np.pi * (3.0 - np.sqrt(5.0))
        ring = np.sqrt(max(1.0 - z * z, 0.0))
        outward = _unit(np.array([ring * np.cos(angle), -abs(ring * np.sin(angle)) - 0.3, z]))
        start = centre + 0.8 * radius * outward
        parent = creature.jaw if creature.jaw >= 0 and z < -0.3 else head
        out.append(b.add(f"Face{k + 1:03d}", parent, start, start + 0.15 * radius * outward))
    b.faces = (out, [head] + ([creature.jaw] if creature.jaw >= 0 else []), radius)
    return out


def _long_tail(b: _Bones, creature: Creature, count: int) -> list[int]:
    """`count` bones continuing the creature's tail (or starting one behind the pelvis), straight back
    and gently down, half a body long in all (a snake's or a dragon's tail of many short bones)."""
    if creature.tail:
        parent = creature.tail[-1]
        start = b.tails[parent]
    else:
        parent = creature.pelvis
        start = b.heads[parent] + np.array([0.0, 0.05 * b.size, 0.0])
    step = 0.5 * b.size / max(count, 1)
    direction = _unit(np.array([0.0, 1.0, -0.15]))
    out = []
    for k in range(count):
        end = start + step * direction
        parent = b.add(f"TailExtra{k + 1:03d}", parent, start, end, radius=0.3 * step)
        out.append(parent)
        start = end
    return out


def _merged_mesh(creature: Creature, b: _Bones) -> SkinnedMesh:
    """The creature's mesh with the twist and face bones' shares and the added tubes."""
    mesh = creature.mesh
    index, weight = mesh.joint_indices.copy(), mesh.joint_weights.copy()
    extra_i = np.zeros((mesh.vertex_count, 1), np.int64)
    extra_w = np.zeros((mesh.vertex_count, 1))
    for twist, segment, start, stop in b.twists:
        head, tail = b.heads[segment], b.tails[segment]
        axis = tail - head
        share = (mesh.vertices - head) @ axis / max(float(axis @ axis), 1e-12)
        owned = (index[:, 0] == segment) & (share >= start) & (share < stop) & (extra_w[:, 0] == 0)
        extra_i[owned, 0] = twist
        extra_w[owned, 0] = 0.5 * weight[owned, 0]
        weight[owned, 0] *= 0.5
    faces, skull, radius = b.faces
    if faces:
        owned = np.flatnonzero(np.isin(index[:, 0], skull) & (extra_w[:, 0] == 0))
        spots = np.array([b.heads[j] for j in faces])
        distance = np.linalg.norm(mesh.vertices[owned, None] - spots[None], axis=-1)
        near = distance.min(axis=1) < 0.5 * radius
        owned, nearest = owned[near], np.asarray(faces)[distance[near].argmin(axis=1)]
        extra_i[owned, 0] = nearest
        extra_w[owned, 0] = 0.5 * weight[owned, 0]
        weight[owned, 0] *= 0.5
    parts = [SkinnedMesh(mesh.vertices, mesh.triangles, np.concatenate([index, extra_i], 1),
                         np.concatenate([weight, extra_w], 1))]
    if b.tubes:
        added = skinned_mesh(b.tubes, b.size, ground=False)
        pad = parts[0].joint_indices.shape[1] - added.joint_indices.shape[1]
        parts.append(SkinnedMesh(added.vertices, added.triangles,
                                 np.pad(added.joint_indices, ((0, 0), (0, pad))),
                                 np.pad(added.joint_weights, ((0, 0), (0, pad)))))
    offsets = np.cumsum([0] + [p.vertex_count for p in parts[:-1]])
    return SkinnedMesh(np.concatenate([p.vertices for p in parts]),
                       np.concatenate([p.triangles + o for p, o in zip(parts, offsets, strict=True)]),
                       np.concatenate([p.joint_indices for p in parts]),
                       np.concatenate([p.joint_weights for p in parts]))


def big_creature(family: str = "biped", seed: int = 1, total: int = 256, fill: str = "face",
                 naming: str = "mixamo") -> Creature:
    """`build_creature(family, seed)` grown to exactly `total` bones: fingers, twist bones, then
    `fill` ("face": face bones; "tail": a long tail, after a face of twenty bones)."""
    creature = build_creature(family, seed, naming=naming)
    prefix = creature.rig.names[0].split(":")[0] + ":" if ":" in creature.rig.names[0] else ""
    b = _Bones(creature, prefix)
    extras = {"fingers": _fingers(b, creature), "twist": _twists(b, creature)}
    left = total - b.count
    if fill == "tail":
        extras["face"] = _face(b, creature, min(20, left))
        extras["long_tail"] = _long_tail(b, creature, total - b.count)
    else:
        extras["face"] = _face(b, creature, left)
    if b.count != total:
        raise ValueError(f"{family} {seed}: {b.count} bones, not {total}")
    old = creature.rig
    # The body keeps its own rolls (rest rotations); the added bones get a zero roll.
    rig = rig_from_bones(b.names, b.parents, np.array(b.heads), np.array(b.tails))
    rest = rig.rest.copy()
    rest[: old.joint_count] = old.rest
    rig = replace(rig, rest=rest, connected=None, deform=None, local_rest=None)
    return replace(creature, rig=rig, mesh=_merged_mesh(creature, b),
                   extras={**creature.extras, **extras})
