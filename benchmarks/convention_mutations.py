"""Issue 31's metamorphic convention tests: mutations of an artist's rig that leave the creature as it is.

Each mutation takes a (Rig, SkinnedMesh) in Blender's armature space (+Z up, as Blender's glTF importer
gives it) and returns a `Mutant`: the rig as another artist or tool would have made it — bone names in
Mixamo, Rigify (DEF-, with ORG- and MCH- copies that deform nothing), Unreal, Godot or numbered style; the
rest pose changed and the mesh re-bound to it (T-pose ↔ A-pose, spread ↔ folded wings: the rig is posed,
the mesh deformed by linear blend skinning, and the posed skeleton with the deformed mesh taken as the new
rest); each bone rolled about its own axis; scaled ×0.01 or ×100; Y-up; IK and pole controls added or
removed; a prop bone off a hand or a front foot; every bone disconnected; the toes removed (their weights
given to the foot). The mesh's vertex order never changes, so vertex sets chosen on the original serve
every mutant, and `to_original` (4×4) brings the mutant's armature space back to the original's.

What the mutations need to know of the rig (its legs, feet, toes, arms) is read once from the original
(`Anatomy`, from the engine's roles of the original): names are never read. Test and benchmark support
(tests/generate/test_conventions.py, benchmarks/bench_conventions.py), numpy only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from kirin.kirin_addon.core.canonical import Y_UP_TO_Z_UP, canonical_rig
from kirin.kirin_addon.core.rig import Rig
from kirin.kirin_addon.core.rotations import quat_about, quat_to_matrix
from kirin.kirin_addon.core.skinning import SkinnedMesh, linear_blend_skinning
from kirin.kirin_addon.generate.rig_roles import RoleError, detect_roles, planting_joints
from kirin.kirin_addon.io.bvh import unique_names

ROLL_SEED = 7
A_POSE_DEGREES = 40.0  # upper arms turned down from a T-pose (or up from an A-pose)
FOLD_DEGREES = 75.0  # spread wings swept back along the body
PROP_LENGTH = 0.5  # a weapon or prop bone, body sizes


@dataclass
class Mutant:
    name: str
    rig: Rig
    mesh: SkinnedMesh
    to_original: np.ndarray = field(default_factory=lambda: np.eye(4))  # mutant armature → original armature


@dataclass
class Anatomy:
    """What the mutations need of the original, in its armature space: the legs (user joints, girdle to
    foot) with side and end, the toes, the arms (clavicle to hand), the canonical axes and body size."""

    legs: list[tuple[list[int], int, str]]  # (user joints girdle → foot, side +1 left / −1 right, end)
    feet: list[int]  # per leg, the user joint that plants (a foot control where the leg has one)
    toes: list[int]
    arms: list[list[int]]
    axial: dict[str, list[int]]  # "spine", "neck", "head", "tail": user joints
    wings: bool  # the arms are wings (a bird): folded rather than lowered
    forward: np.ndarray  # (3,) armature axes
    up: np.ndarray
    left: np.ndarray
    size: float  # body size in armature units
    roles_found: bool


def anatomy(rig: Rig) -> Anatomy:
    """The original's legs, toes and arms as the engine reads them (empty where it finds no legs)."""
    canon = canonical_rig(rig)
    rotation = canon.frame.rotation
    left, forward, up = rotation[0], -rotation[1], rotation[2]
    size = 1.0 / canon.frame.scale
    try:
        roles = detect_roles(canon.rig)
    except RoleError:
        return Anatomy([], [], [], [], {}, False, forward, up, left, size, False)
    count = roles.joint_count
    legs = []
    for leg, planted in zip(roles.legs, planting_joints(roles), strict=True):
        chain = [j for j in leg.chain if j < count]
        side = 1 if leg.side > 0 else -1
        legs.append((chain, side, leg.position or "hind", planted))
    toes = [leg.toe for leg in roles.legs if 0 <= leg.toe < count]
    arms = [[j for j in arm if j < count] for arm in roles.arms]
    names = " ".join(rig.names[j] for arm in arms for j in arm).lower()
    axial = {"spine": [roles.pelvis, *roles.spine], "neck": list(roles.neck),
             "head": [roles.head] if roles.head >= 0 else [], "tail": list(roles.tail)}
    axial = {part: [j for j in joints if j < count] for part, joints in axial.items()}
    return Anatomy([(c, s, p) for c, s, p, _ in legs], [f for *_, f in legs], toes, arms, axial,
                   "wing" in names, forward, up, left, size, True)


# ----------------------------------------------------------------------------- editing helpers
def _rig(rig: Rig, **changes) -> Rig:
    """A copy of the rig with some fields replaced (connected recomputed unless given)."""
    fields = {"names": list(rig.names), "parents": rig.parents.copy(), "rest": rig.rest.copy(),
              "tails": rig.tails.copy(), "deform": rig.deform.copy(), "connected": None}
    fields.update(changes)
    return Rig(fields["names"], fields["parents"], fields["rest"], fields["tails"], fields["deform"],
               fields["connected"])


def add_bones(rig: Rig, bones: list[tuple[str, int, np.ndarray, np.ndarray]]) -> Rig:
    """The rig with non-deforming bones (name, parent, head, tail) appended (the mesh needs no change)."""
    from kirin.kirin_addon.core.rig import bone_frame

    names = list(rig.names)
    parents = list(rig.parents)
    rest = list(rig.rest)
    tails = list(rig.tails)
    for name, parent, head, tail in bones:
        matrix = np.eye(4)
        matrix[:3, :3] = bone_frame(np.asarray(head), np.asarray(tail))
        matrix[:3, 3] = head
        names.append(name)
        parents.append(parent)
        rest.append(matrix)
        tails.append(np.asarray(tail, dtype=np.float64))
    deform = np.concatenate([rig.deform, np.zeros(len(bones), dtype=bool)])
    return _rig(rig, names=unique_names(names), parents=np.array(parents), rest=np.array(rest),
                tails=np.array(tails), deform=deform)


def remove_bones(rig: Rig, mesh: SkinnedMesh, removed: set[int]) -> tuple[Rig, SkinnedMesh]:
    """The rig without `removed` (children hang from the nearest kept ancestor), the weights of a removed
    bone given to that ancestor, joint indices renumbered."""
    keep = [j for j in range(rig.joint_count) if j not in removed]
    new_index = {old: new for new, old in enumerate(keep)}

    def kept_ancestor(joint: int) -> int:
        while joint >= 0 and joint in removed:
            joint = int(rig.parents[joint])
        return joint

    parents = np.array([new_index.get(kept_ancestor(int(rig.parents[j])), -1) for j in keep])
    owner = np.array([new_index.get(kept_ancestor(j), 0) for j in range(rig.joint_count)])
    out = _rig(rig, names=[rig.names[j] for j in keep], parents=parents, rest=rig.rest[keep],
               tails=rig.tails[keep], deform=rig.deform[keep])
    skin = SkinnedMesh(mesh.vertices, mesh.triangles, owner[mesh.joint_indices], mesh.joint_weights)
    return out, skin


def _pose_subtrees(rig: Rig, mesh: SkinnedMesh,
                   turns: list[tuple[int, np.ndarray]]) -> tuple[Rig, SkinnedMesh]:
    """Re-bound: each (joint, 3×3 rotation about its head) turns the joint's subtree; the posed skeleton
    and the mesh deformed by it (linear blend skinning) become the new rest."""
    posed = rig.rest.copy()
    tails = rig.tails.copy()
    for joint, rotation in turns:
        turn = np.eye(4)
        turn[:3, :3] = rotation
        pivot = posed[joint, :3, 3].copy()
        turn[:3, 3] = pivot - rotation @ pivot
        inside = rig.subtree(joint)
        posed[inside] = turn[None] @ posed[inside]
        tails[inside] = tails[inside] @ rotation.T + turn[:3, 3]
    skin = posed @ np.linalg.inv(rig.rest)
    vertices = linear_blend_skinning(mesh.vertices, mesh.joint_indices, mesh.joint_weights, skin)
    return (_rig(rig, rest=posed, tails=tails),
            SkinnedMesh(vertices, mesh.triangles, mesh.joint_indices, mesh.joint_weights))


def _about(axis: np.ndarray, degrees: float) -> np.ndarray:
    return quat_to_matrix(quat_about(np.asarray(axis, dtype=np.float64), np.radians(degrees)))


# ----------------------------------------------------------------------------- names
def _semantic(rig: Rig, body: Anatomy) -> dict[int, tuple[str, int]]:
    """joint → (semantic part, side +1/−1/0) for the joints whose role the original's roles give."""
    out: dict[int, tuple[str, int]] = {}
    for part, joints in body.axial.items():
        for k, joint in enumerate(joints):
            if part == "spine":  # the pelvis, then the spine
                out[joint] = ("hips", 0) if k == 0 else ("spine" + (str(k - 1) if k > 1 else ""), 0)
            else:
                out[joint] = (part if part == "head" else f"{part}{k}" if k else part, 0)
    for (chain, side, end), planted in zip(body.legs, body.feet, strict=True):
        front = end == "front" and len(body.legs) >= 4
        parts = ("clavicle", "upperarm", "forearm", "hand") if front else ("hip", "thigh", "shin", "foot")
        if end == "middle":
            parts = ("coxa", "femur", "tibia", "tarsus")
        if planted not in chain:  # the foot is a control beside the leg: the chain stops at the shin
            out[planted] = (parts[-1], side)
            parts = parts[:-1]
        for k, joint in enumerate(chain[::-1]):
            out[joint] = (parts[max(len(parts) - 1 - k, 0)] + ("" if k < len(parts) else str(k)), side)
    for toe in body.toes:
        parent = int(rig.parents[toe])
        side = out.get(parent, ("", 0))[1]
        out[toe] = ("finger" if out.get(parent, ("",))[0] == "hand" else "toe", side)
    for arm in body.arms:
        side = 1 if float(rig.heads[arm[-1]] @ body.left) > float(rig.heads[arm[0]] @ body.left) else -1
        for k, joint in enumerate(arm[::-1]):
            out[joint] = (("hand", "forearm", "upperarm", "clavicle")[min(k, 3)] + ("" if k < 4 else str(k)),
                          side)
    return out


def _geometric_side(rig: Rig, body: Anatomy, joint: int) -> int:
    lateral = float((rig.heads[joint] - rig.heads[rig.main_root]) @ body.left) / body.size
    return 1 if lateral > 0.02 else -1 if lateral < -0.02 else 0


# Each style's word for a part (the part's own name where a style has none).
_PARTS = ("hips", "spine", "neck", "head", "hip", "thigh", "shin", "foot", "toe", "clavicle", "upperarm",
          "forearm", "hand", "finger", "coxa", "femur", "tibia", "tarsus")
MIXAMO = dict(zip(_PARTS, ("Hips", "Spine", "Neck", "Head", "HipTwist", "UpLeg", "Leg", "Foot", "ToeBase",
                           "Shoulder", "Arm", "ForeArm", "Hand", "HandIndex1", "LegCoxa", "LegFemur",
                           "LegTibia", "LegTarsus"), strict=True))
RIGIFY = dict(zip(_PARTS, ("spine", "spine", "spine.004", "spine.006", "pelvis", "thigh", "shin", "foot",
                           "toe", "shoulder", "upper_arm", "forearm", "hand", "f_index.01", "coxa", "femur",
                           "tibia", "tarsus"), strict=True))
UNREAL = dict(zip(_PARTS, ("pelvis", "spine", "neck", "head", "pelvis_twist", "thigh", "calf", "foot",
                           "ball", "clavicle", "upperarm", "lowerarm", "hand", "index_01", "coxa", "femur",
                           "tibia", "tarsus"), strict=True))
GODOT = dict(zip(_PARTS, ("Hips", "Spine", "Neck", "Head", "HipTwist", "UpperLeg", "LowerLeg", "Foot",
                          "Toes", "Shoulder", "UpperArm", "LowerArm", "Hand", "IndexProximal", "Coxa",
                          "Femur", "Tibia", "Tarsus"), strict=True))


def _styled(style: str, part: str, side: int, serial: int) -> str:
    """One bone's name in a style; `serial` keeps repeated parts (legs of a spider, extras) apart."""
    digits = "".join(c for c in part if c.isdigit())
    base = part.rstrip("0123456789")
    side_word = {1: "Left", -1: "Right", 0: ""}[side]
    suffix = {1: ".L", -1: ".R", 0: ""}[side]
    if style == "mixamo":
        word = MIXAMO.get(base, base.capitalize())
        return f"mixamorig:{side_word}{word}{digits}" + (f"_{serial}" if serial else "")
    if style == "rigify":
        word = RIGIFY.get(base, base)
        number = f".{int(digits):03d}" if digits else ""
        return f"DEF-{word}{number}{f'_{serial}' if serial else ''}{suffix}"
    if style == "unreal":
        word = UNREAL.get(base, base)
        side_tag = {1: "_l", -1: "_r", 0: ""}[side]
        number = f"_{int(digits):02d}" if digits else ""
        return f"{word}{number}{f'_{serial}' if serial else ''}{side_tag}"
    word = GODOT.get(base, base.capitalize())
    return f"{side_word}{word}{digits}" + (f"_{serial}" if serial else "")


def _axial(rig: Rig, body: Anatomy, named: dict[int, tuple[str, int]]) -> dict[int, tuple[str, int]]:
    """The other joints: the root, controls, and parts named after the part they hang from ("toe" below
    a foot, "finger" below a hand, "ear"-like extras below a head …)."""
    out = dict(named)
    for j in rig.topological_order:
        j = int(j)
        if j in out:
            continue
        side = _geometric_side(rig, body, j)
        parent = int(rig.parents[j])
        above = out.get(parent, ("", 0))[0].rstrip("0123456789")
        if parent < 0:
            part = "root" if j == rig.main_root else "ctrl"
        elif not rig.deform[j] and not rig.deform[parent]:
            part = "ctrl"
        else:
            part = {"foot": "toe", "toe": "toe", "hand": "finger", "finger": "finger", "head": "ear",
                    "tail": "tail", "ear": "ear"}.get(above, "extra")
        out[j] = (part, side)
    return out


def renamed(rig: Rig, mesh: SkinnedMesh, body: Anatomy, style: str) -> Mutant:
    """Bone names in a tool's style: "mixamo", "rigify" (DEF- names, with ORG- and MCH- copies),
    "unreal", "godot" or "numbered" ("Bone", "Bone.001", … in parents-first order: no side hints)."""
    if style == "numbered":
        names = [""] * rig.joint_count
        for k, j in enumerate(rig.topological_order):
            names[int(j)] = "Bone" if k == 0 else f"Bone.{k:03d}"
        return Mutant(f"names_{style}", _rig(rig, names=names), mesh)
    parts = _axial(rig, body, _semantic(rig, body))
    names, seen = [], {}
    for j in range(rig.joint_count):
        part, side = parts[j]
        key = (part, side)
        serial = seen.get(key, 0)
        seen[key] = serial + 1
        name = _styled(style, part, side, serial)
        if style == "rigify" and not rig.deform[j]:
            name = name.replace("DEF-", "MCH-")
        names.append(name)
    out = _rig(rig, names=unique_names(names))
    if style == "rigify":
        out = rigify_copies(out, body)
    return Mutant(f"names_{style}", out, mesh)


def rigify_copies(rig: Rig, body: Anatomy) -> Rig:
    """Rigify's generated bones beside the deforming ones, all under a non-deforming `root` on the floor
    (the rig's own root hangs from it): an ORG- copy of every DEF- bone (its own hierarchy) and MCH- IK
    copies of the legs' bones (under the ORG- girdle)."""
    count = rig.joint_count
    root = rig.heads[rig.main_root]
    floor = root - body.up * float(root @ body.up - (rig.heads @ body.up).min())
    bones = [("root", -1, floor, floor - body.forward * 0.2 * body.size)]
    copy_of: dict[int, int] = {}
    for j in rig.topological_order:
        j = int(j)
        if not rig.deform[j]:
            continue
        parent = int(rig.parents[j])
        while parent >= 0 and parent not in copy_of:
            parent = int(rig.parents[parent])
        copy_of[j] = count + len(bones)
        name = rig.names[j].replace("DEF-", "ORG-")
        bones.append((name, copy_of.get(parent, count), rig.heads[j], rig.tails[j]))
    for chain, _, _ in body.legs:
        parent = copy_of.get(chain[0], count)
        for j in chain[1:]:
            name = rig.names[j].replace("DEF-", "MCH-").replace(".", "_ik.", 1)
            bones.append((name, parent, rig.heads[j], rig.tails[j]))
            parent = count + len(bones) - 1
    out = add_bones(rig, bones)
    out.parents[[r for r in rig.roots]] = count  # the rig's roots hang from `root`
    return _rig(out)


# ----------------------------------------------------------------------------- the mutations
def rest_pose_changed(rig: Rig, mesh: SkinnedMesh, body: Anatomy) -> Mutant | None:
    """T-pose ↔ A-pose (upper arms turned 40° down, or up where they already hang), or spread wings folded
    back along the body; re-bound (the mesh deformed to the new rest). None without arms or wings."""
    if not body.arms:
        return None
    turns = []
    for arm in body.arms:
        upper = arm[1] if len(arm) >= 4 else arm[0]
        reach = rig.heads[arm[-1]] - rig.heads[upper]
        side = 1.0 if float(reach @ body.left) > 0 else -1.0
        if body.wings:  # swept back about the up axis: the wing's tip goes behind
            turns.append((upper, _about(body.up, -side * FOLD_DEGREES)))
            continue
        level = np.hypot(float(reach @ body.left), float(reach @ body.forward))
        below = np.degrees(np.arctan2(-float(reach @ body.up), level))
        degrees = A_POSE_DEGREES if below < 25.0 else -min(A_POSE_DEGREES, below)
        turns.append((upper, _about(body.forward, -side * degrees)))  # about forward: the hand goes down
    posed, skin = _pose_subtrees(rig, mesh, turns)
    return Mutant("wings_folded" if body.wings else "arms_a_t_pose", posed, skin)


def rolled(rig: Rig, mesh: SkinnedMesh, seed: int = ROLL_SEED) -> Mutant:
    """Every bone's rest turned about its own axis (Y) by a random roll; the mesh as it is."""
    angles = np.random.default_rng(seed).uniform(-np.pi, np.pi, rig.joint_count)
    rest = rig.rest.copy()
    rest[:, :3, :3] = rest[:, :3, :3] @ quat_to_matrix(quat_about(np.array([0.0, 1.0, 0.0]), angles))
    return Mutant("rolls", _rig(rig, rest=rest), mesh)


def similar(rig: Rig, mesh: SkinnedMesh, matrix: np.ndarray, name: str) -> Mutant:
    """The rig and mesh under a similarity (a scale, a rotation)."""
    moved = rig.transformed(matrix)
    vertices = mesh.vertices @ matrix[:3, :3].T + matrix[:3, 3]
    skin = SkinnedMesh(vertices, mesh.triangles, mesh.joint_indices, mesh.joint_weights)
    return Mutant(name, _rig(moved), skin, np.linalg.inv(matrix))


def scaled(rig: Rig, mesh: SkinnedMesh, factor: float) -> Mutant:
    return similar(rig, mesh, np.diag([factor, factor, factor, 1.0]), f"scale_{factor:g}")


def y_up(rig: Rig, mesh: SkinnedMesh) -> Mutant:
    """The rig as a Y-up file holds it (Blender's Z-up turned back: −90° about X)."""
    return similar(rig, mesh, np.linalg.inv(Y_UP_TO_Z_UP), "y_up")


def controls(rig: Rig) -> set[int]:
    """Control bones: whole subtrees that deform nothing (no skin), hanging beside the body from a root or
    from the joint the body hangs from (foot IK targets, pole targets), not a leg's or a tail's end."""
    out: set[int] = set()
    for j in range(rig.joint_count):
        inside = rig.subtree(j)
        if rig.deform[inside].any():
            continue
        parent = int(rig.parents[j])
        if parent < 0 or int(rig.parents[parent]) < 0 or not rig.deform[parent]:
            if parent < 0 and rig.descendant_count[j] > 0.5 * rig.joint_count:
                continue  # the rig's own root
            out |= set(np.flatnonzero(inside).tolist())
    return out


def ik_added(rig: Rig, body: Anatomy) -> Mutant | None:
    """An IK target at every foot and a pole target in front of every knee, non-deforming, under the root."""
    if not body.legs:
        return None
    root = int(rig.main_root)
    bones = []
    for k, (chain, side, _) in enumerate(body.legs):
        foot, knee = chain[-1], chain[-2] if len(chain) >= 2 else chain[-1]
        tag = f"{'L' if side > 0 else 'R'}{k}"
        heel = rig.heads[foot]
        bones.append((f"IK_foot.{tag}", root, heel, heel + body.forward * 0.08 * body.size))
        pole = rig.heads[knee] + body.forward * 0.3 * body.size
        bones.append((f"IK_pole.{tag}", root, pole, pole + body.up * 0.05 * body.size))
    return Mutant("ik_added", add_bones(rig, bones), None)  # type: ignore[arg-type]


def ik_removed(rig: Rig, mesh: SkinnedMesh) -> Mutant | None:
    """The rig without its control bones (`controls`); None where it has none."""
    found = controls(rig)
    if not found:
        return None
    out, skin = remove_bones(rig, mesh, found)
    return Mutant("ik_removed", out, skin)


def prop_added(rig: Rig, body: Anatomy) -> Mutant | None:
    """A long non-deforming weapon bone held by a hand (forward and down), or a prop on a front foot
    (forward, a little up)."""
    if body.arms:
        hand = body.arms[0][-1]
        direction = body.forward - 0.5 * body.up
    else:
        fronts = [foot for foot, (_, _, end) in zip(body.feet, body.legs, strict=True) if end == "front"]
        if not fronts:
            return None
        hand = fronts[0]
        direction = body.forward + 0.25 * body.up
    direction = direction / np.linalg.norm(direction)
    head = rig.heads[hand]
    tail = head + direction * PROP_LENGTH * body.size
    return Mutant("prop_added", add_bones(rig, [("Weapon", hand, head, tail)]), None)  # type: ignore[arg-type]


def disconnected(rig: Rig, mesh: SkinnedMesh) -> Mutant:
    return Mutant("disconnected", _rig(rig, connected=np.zeros(rig.joint_count, dtype=bool)), mesh)


def toes_removed(rig: Rig, mesh: SkinnedMesh, body: Anatomy) -> Mutant | None:
    """The toe bones (and what hangs from them) removed, their weights given to the foot."""
    if not body.toes:
        return None
    removed: set[int] = set()
    for toe in body.toes:
        removed |= set(np.flatnonzero(rig.subtree(toe)).tolist())
    out, skin = remove_bones(rig, mesh, removed)
    return Mutant("toes_removed", out, skin)


STYLES = ("mixamo", "rigify", "unreal", "godot", "numbered")


def mutations(rig: Rig, mesh: SkinnedMesh, body: Anatomy | None = None) -> list[Mutant]:
    """Every mutation that applies to the rig (its anatomy read from the original when not given)."""
    body = anatomy(rig) if body is None else body
    makers: list[Callable[[], Mutant | None]] = [
        *[lambda style=style: renamed(rig, mesh, body, style) for style in STYLES],
        lambda: rest_pose_changed(rig, mesh, body),
        lambda: rolled(rig, mesh),
        lambda: scaled(rig, mesh, 0.01),
        lambda: scaled(rig, mesh, 100.0),
        lambda: y_up(rig, mesh),
        lambda: ik_added(rig, body),
        lambda: ik_removed(rig, mesh),
        lambda: prop_added(rig, body),
        lambda: disconnected(rig, mesh),
        lambda: toes_removed(rig, mesh, body),
    ]
    out = []
    for make in makers:
        mutant = make()
        if mutant is not None:
            if mutant.mesh is None:  # bones added: the mesh's indices still hold
                mutant.mesh = mesh
            out.append(mutant)
    return out
