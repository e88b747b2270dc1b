"""The Blender side of bench_motion_real: held-out authored rigs, their clips read as actions, their feet
and soles, per-frame tracks of the deformed mesh and the span of a clip that is motion (the filmstrips
are motion_real_filmstrip's).

Feet: the chain ends of the main tree that touch the ground at rest (`Rig.foot_candidates` in the rig's
canonical frame, `detect_canonical_frame` with the rest mesh), leaving out tails and IK/pole helpers by
name. Each candidate is moved up its chain to the nearest bone that carries mesh (FBX `_end` leaves carry
none); the candidates are sorted into feet by side (the sign of canonical x: left on +X, "centre" near 0)
and end (front/hind by the forward axis, split at the middle of the feet when they spread along it by more
than a quarter of body size; else all "hind", as a biped's feet are). A foot's bones are the subtrees of
its candidates. Its sole: the vertices weighted mostly (≥ 50 %) to those bones — bone-parented mesh parts
count wholly for their bone — and of them the lowest ~10 % at rest; per frame their mean in world space,
from the evaluated (deformed) meshes. A file without mesh (CMU BVH) uses the lowest rest joints of the
foot's bones instead.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import bpy
import numpy as np

from kirin.benchmarks.motion_real_sets import CALIBRATION_GLOBS, CMU_GLOB, RIG_FILES, calibration_files  # noqa: F401
from kirin.kirin_addon.core.canonical import CanonicalFrame, detect_canonical_frame
from kirin.kirin_addon.core.rig import Rig, side_of
from kirin.kirin_addon.library.captions.clip_names import describe_clip_name
from kirin.kirin_addon.library.ingest import clip_label, species_from_file
from kirin.operators.scene_io.action import keyed_channels
from kirin.operators.scene_io.arrays import object_matrix
from kirin.operators.scene_io.mesh import evaluated_mesh_vertices, read_vertex_groups
from kirin.operators.scene_io.pose import read_pose_channels, write_pose_channels
from kirin.operators.scene_io.rig import evaluated_pose, read_rig
from kirin.operators.standing import standing_pose

CMU_DESCRIPTIONS = "bvh_cmu_subjects_01_07/cmu_descriptions.csv"
DEFAULT_FPS = 24  # Blender's
BVH_FPS = 30  # CMU trials (120/60 fps) are imported at this rate (Blender's BVH fps scaling)

# What a clip's action (describe_clip_name) is measured as; anything else is left out.
KINDS = {"walk": "walk", "trot": "walk", "pace": "walk", "run": "run", "gallop": "run", "canter": "run",
         "bound": "run", "idle": "idle", "look_around": "idle", "eat": "eat", "attack": "attack",
         "jump": "jump", "hop": "jump", "death": "death", "hit": "hit"}
LOCOMOTION = frozenset({"walk", "run"})
# Chain ends that are never feet (IK bones are, when they carry the paw's mesh: the Quaternius animals).
NOT_A_FOOT = re.compile(r"tail|pole|target|ctrl|pincer|jaw|wing|fin|ear|eye|head", re.IGNORECASE)
SOLE_SHARE = 0.10  # the lowest share of a foot's vertices at rest
MIN_SOLE = 4
MOSTLY = 0.5  # a vertex belongs to a foot when at least this share of its weight is on the foot's bones
GROUND = 0.10  # a foot's mesh reaches this close to the floor at rest (body sizes)
JUMP = 0.25  # body sizes in one frame: a clip's first frame this far from its second is not motion
HOLD = 1e-4  # body sizes in one frame: every tracked point moving less than this holds still
MAX_VERTICES = 1500  # deformed vertices handed to the measures (penetration), evenly strided


class Unmeasurable(Exception):
    """A case that cannot be measured; its message is the reason the table prints."""


@dataclass
class Part:
    """A mesh that moves with the armature: skinned (vertex groups) or parented to one bone."""

    obj: bpy.types.Object
    bone: str | None  # the parent bone of a bone-parented part; None: skinned
    groups: tuple | None = None  # its vertex groups (names, indices, weights), read once

    def vertex_groups(self) -> tuple:
        if self.groups is None:
            self.groups = read_vertex_groups(self.obj)
        return self.groups


@dataclass
class Foot:
    name: str
    side: str  # "left" | "right" | "centre"
    end: str  # "front" | "hind"
    joints: list[int]  # the foot's bones (rig indices)
    sole: dict[str, np.ndarray] = field(default_factory=dict)  # part name → vertex indices
    sole_joints: list[int] = field(default_factory=list)  # no mesh: the lowest joints


# Per armature (by name): the pose a clip plays from (use_action), where the import set channels that no
# clip keys.
_BASE_POSE: dict[str, dict[str, np.ndarray]] = {}
_REST_CHANNELS = {"location": (0.0, 0.0, 0.0), "rotation_quaternion": (1.0, 0.0, 0.0, 0.0),
                  "rotation_euler": (0.0, 0.0, 0.0), "rotation_axis_angle": (0.0, 0.0, 1.0, 0.0),
                  "scale": (1.0, 1.0, 1.0)}


@dataclass
class Character:
    """An imported rig file: the armature, its moving mesh parts, rig, frame and feet."""

    path: Path
    arm: bpy.types.Object
    parts: list[Part]
    rig: Rig
    frame: CanonicalFrame
    feet: list[Foot]
    species: str
    family: str
    body_size: float  # world units
    floor: float  # world height of the lowest rest vertex (joint without mesh)
    reference: np.ndarray  # (J,3) world joints the feet are found in: rest, or a BVH's first frame
    # The rig as it stands (armature space): its rest, or the pose the import shows where the rest lies
    # another way up (a glTF bind pose on its side). `rig` stays the rest that actions are read against.
    standing: Rig | None = None

    def __post_init__(self):
        if self.standing is None:
            self.standing = self.rig


@dataclass
class Clip:
    """One authored action of a character to measure, with what it is and the prompt it gets."""

    action: str
    label: str
    kind: str
    action_word: str  # the reading's action ("walk", "gallop", …)
    description: object  # MotionDescription
    compound: bool


# ----------------------------------------------------------------------------- scene
def clear_scene() -> None:
    """Everything imported so far removed (the add-on and its backend stay), and the scene back at
    Blender's default frame rate: a BVH's rate must not carry over to the next file (glTF and FBX clips
    are imported at the scene's rate, and the jerk is measured per frame), at frame 1: the pose an import
    shows is its clip's at the current frame, and a rig whose rest lies another way up stands on it."""
    bpy.context.scene.render.fps, bpy.context.scene.render.fps_base = DEFAULT_FPS, 1.0
    bpy.context.scene.frame_set(1)
    for collection in (bpy.data.objects, bpy.data.actions, bpy.data.meshes, bpy.data.armatures,
                       bpy.data.materials, bpy.data.cameras, bpy.data.lights, bpy.data.images):
        for item in list(collection):
            collection.remove(item)


def _bvh_fps(path: Path) -> float:
    match = re.search(r"Frame Time:\s*([0-9.eE+-]+)", path.read_text(errors="ignore")[:200000])
    return 1.0 / float(match.group(1)) if match else 30.0


def _import(path: Path, import_rig_file, bvh_up: str = "Y") -> bpy.types.Object:
    scene = bpy.context.scene
    if path.suffix.lower() == ".bvh":
        scene.render.fps, scene.render.fps_base = BVH_FPS, 1.0
        before = set(bpy.data.objects)
        # Keyframes scaled from the file's rate to the scene's: the import_rig_file default would play
        # a 120 fps trial four times too slowly at the scene's rate.
        forward = "-Z" if bvh_up == "Y" else "-Y"
        bpy.ops.import_anim.bvh(filepath=str(path), use_fps_scale=True, axis_up=bvh_up, axis_forward=forward)
        arms = [o for o in bpy.data.objects if o not in before and o.type == "ARMATURE"]
        if not arms:
            raise Unmeasurable("the BVH holds no armature")
        return arms[0]
    arm, _ = import_rig_file(str(path))
    return arm


def moving_parts(arm: bpy.types.Object) -> list[Part]:
    """Meshes skinned to `arm` (armature modifier) or parented to one of its bones."""
    parts = []
    for obj in bpy.data.objects:
        if obj.type != "MESH" or len(obj.data.vertices) == 0:
            continue
        if obj.find_armature() == arm:
            parts.append(Part(obj, None))
        elif obj.parent == arm and obj.parent_type == "BONE" and obj.parent_bone:
            parts.append(Part(obj, obj.parent_bone))
    return parts


def use_action(arm: bpy.types.Object, action) -> None:
    """`action` the armature's only animation (NLA tracks of the import are gone already), played from
    the base pose: channels it does not key would otherwise keep what the clip played before left there
    (an authored Run keys the Zebra's leg bones' locations, a generated clip does not). The base is the
    rest, except on a rig that stands in the pose its import shows, where channels that no clip of the
    file keys keep what the import set (the Triceratops' root turns its bind pose, lying on its side,
    upright; its clips rely on that)."""
    base = _BASE_POSE.get(arm.name)
    if base is not None and len(base["scale"]) == len(arm.pose.bones):
        write_pose_channels(arm, base)
    else:
        for bone in arm.pose.bones:
            bone.location, bone.scale = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
            bone.rotation_quaternion, bone.rotation_euler = (1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
    anim = arm.animation_data or arm.animation_data_create()
    anim.action = action
    if hasattr(anim, "action_slot") and len(getattr(action, "slots", ())):
        anim.action_slot = action.slots[0]


def _remember_base_pose(arm: bpy.types.Object, actions: list | None) -> None:
    """The armature's base pose (use_action) where the rig stands in the pose its import shows (its rest
    lies another way up): the pose channels as they are now where no action keys them, the rest where
    one does (every rotation channel of a bone whose rotation one keys). `actions` None: the rest
    (elsewhere a channel no clip keys may still hold an offset the import set, which lifts the clips
    off the rest's floor: the Apatosaurus' root)."""
    if actions is None:
        _BASE_POSE.pop(arm.name, None)
        return
    channels = read_pose_channels(arm)
    keyed = set().union(*(keyed_channels(a, arm) for a in actions))
    turned = {name for name, prop in keyed if prop.startswith("rotation_")}
    for k, bone in enumerate(arm.pose.bones):
        for prop, values in channels.items():
            if (bone.name, prop) in keyed or (prop.startswith("rotation_") and bone.name in turned):
                values[k] = _REST_CHANNELS[prop]
    _BASE_POSE[arm.name] = channels


def _drop_nla(arm: bpy.types.Object) -> list:
    """The armature's actions kept (fake user), its NLA tracks removed: one action plays at a time."""
    for action in bpy.data.actions:
        action.use_fake_user = True
    anim = arm.animation_data
    if anim is not None:
        while len(anim.nla_tracks):
            anim.nla_tracks.remove(anim.nla_tracks[0])
        anim.action = None
    return sorted(bpy.data.actions, key=lambda a: a.name)


def rest_frame(arm: bpy.types.Object, rig: Rig, points: np.ndarray | None = None) -> CanonicalFrame:
    """The canonical frame of `rig` on `arm` (the armature's world matrix; `points`: world vertices at
    rest, the floor)."""
    world = object_matrix(arm)
    to_arm = np.linalg.inv(world)
    armature_points = None if points is None else points @ to_arm[:3, :3].T + to_arm[:3, 3]
    return detect_canonical_frame(rig, world, mesh_vertices=armature_points)


def family_of(feet: int) -> str:
    return {2: "biped", 4: "quadruped", 6: "hexapod"}.get(feet, "quadruped" if feet < 6 else "spider")


def _posed_heads(arm: bpy.types.Object, rig: Rig, action) -> np.ndarray:
    """(J,3) world joint positions at the first frame of `action`."""
    use_action(arm, action)
    bpy.context.scene.frame_set(int(round(action.frame_range[0])))
    world = object_matrix(arm)
    return evaluated_pose(arm, rig)[:, :3, 3] @ world[:3, :3].T + world[:3, 3]


def _standing(heads: np.ndarray) -> float:
    """How upright a posed skeleton stands along world +Z: its height over its largest extent."""
    extent = np.ptp(heads, axis=0)
    return float(extent[2] / max(extent.max(), 1e-12))


def _import_bvh(path: Path, import_rig_file) -> bpy.types.Object:
    """A BVH imported with the up axis that makes its first frame stand along world +Z (Blender's
    default reads Y as up; CMU's CC-rig trials are Z-up)."""
    scores = {}
    for up in ("Y", "Z"):
        clear_scene()
        arm = _import(path, import_rig_file, up)
        action = arm.animation_data.action if arm.animation_data else None
        if action is None:
            raise Unmeasurable("the BVH holds no motion")
        scores[up] = _standing(_posed_heads(arm, read_rig(arm), action))
    if scores["Z"] < scores["Y"]:
        clear_scene()
        arm = _import(path, import_rig_file, "Y")
    return arm


def load_character(path: Path, import_rig_file, strict: bool = True) -> tuple[Character, list]:
    """Import `path` into the (cleared) scene; its character and authored actions. Feet are found in
    the rest pose (in the pose the import shows, where Generate Motion stands on that: a rest lying on
    its side), or for a rig without mesh (BVH, whose rest pose may lie flat) in the first frame of
    its motion. `strict`: a rig without feet, or not standing up world +Z, is Unmeasurable (the smoke
    over every rig file takes them as they are: a fish has no feet)."""
    bvh = path.suffix.lower() == ".bvh"
    if bvh:
        arm = _import_bvh(path, import_rig_file)
    else:
        clear_scene()
        arm = _import(path, import_rig_file)
    rig = read_rig(arm)
    parts = moving_parts(arm)
    first = arm.animation_data.action if arm.animation_data else None
    actions = _drop_nla(arm)
    rest = rest_vertices(arm, parts)
    standing = None if bvh else standing_pose(arm, rig)  # as Generate Motion stands it (operators/standing)
    if standing is not None:  # the pose the import shows stands, the rest lies another way up
        rest = {p.obj.name: part_vertices(p, arm) for p in parts}
    standing = rig if standing is None else standing.rig
    points = np.concatenate(list(rest.values())) if rest else None
    frame = rest_frame(arm, standing, points)
    if frame.up_axis != "+Z" and not bvh and strict:
        raise Unmeasurable(f"up is {frame.up_axis}, not world +Z")
    _remember_base_pose(arm, actions if standing is not rig else None)
    world = object_matrix(arm)
    scale = float(np.cbrt(abs(np.linalg.det(world[:3, :3]))))
    if parts:
        reference = standing.heads @ world[:3, :3].T + world[:3, 3]
    else:
        reference = _posed_heads(arm, rig, first or actions[0])
    floor = float(points[:, 2].min()) if points is not None else float(reference[:, 2].min())
    species = "person" if bvh else species_from_file(path)
    character = Character(path, arm, parts, rig, frame, [], species, "", scale / frame.scale, floor,
                          reference, standing)
    character.feet = find_feet(character, rest)
    if not character.feet and strict:
        raise Unmeasurable("no feet found (no chain end reaches the ground at rest)")
    character.family = family_of(len(character.feet))
    return character, actions


# ----------------------------------------------------------------------------- vertices
def part_vertices(part: Part, arm: bpy.types.Object) -> np.ndarray:
    """The part's evaluated vertices in world space (deformed by the armature, or carried by its bone)."""
    if part.bone is None:
        local = evaluated_mesh_vertices(part.obj, arm)  # armature space
        world = object_matrix(arm)
        return local @ world[:3, :3].T + world[:3, 3]
    evaluated = part.obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    count = len(evaluated.data.vertices)
    co = np.empty(count * 3, dtype=np.float32)
    evaluated.data.vertices.foreach_get("co", co)
    matrix = np.array(evaluated.matrix_world, dtype=np.float64)
    return co.reshape(-1, 3).astype(np.float64) @ matrix[:3, :3].T + matrix[:3, 3]


def rest_vertices(arm: bpy.types.Object, parts: list[Part]) -> dict[str, np.ndarray]:
    """World vertices of every part with the armature in its rest position."""
    arm.data.pose_position = "REST"
    bpy.context.view_layer.update()
    try:
        return {p.obj.name: part_vertices(p, arm) for p in parts}
    finally:
        arm.data.pose_position = "POSE"
        bpy.context.view_layer.update()


def _foot_share(part: Part, rig: Rig, joints: list[int]) -> np.ndarray:
    """Per vertex of the part, the share of its weight on `joints`."""
    names = {rig.names[j] for j in joints}
    count = len(part.obj.data.vertices)
    if part.bone is not None:
        return np.full(count, 1.0 if part.bone in names else 0.0)
    groups, indices, weights = part.vertex_groups()
    deform = {n for n, d in zip(rig.names, rig.deform, strict=True) if d}
    on_foot = np.array([g in names for g in groups] or [False])
    deforming = np.array([g in deform for g in groups] or [False])
    total = np.where(deforming[indices], weights, 0.0).sum(1)
    share = np.where(on_foot[indices], weights, 0.0).sum(1)
    return np.where(total > 0, share / np.maximum(total, 1e-12), 0.0)


# ----------------------------------------------------------------------------- feet
def _subtree(rig: Rig, root: int) -> list[int]:
    inside = np.zeros(rig.joint_count, dtype=bool)
    inside[root] = True
    for j in rig.topological_order:
        if rig.parents[j] >= 0 and inside[rig.parents[j]]:
            inside[j] = True
    return [int(j) for j in np.flatnonzero(inside)]


def _carrying(character: Character) -> np.ndarray:
    """(J,) bones that carry mesh: some vertex group weight, or a bone-parented part."""
    rig = character.rig
    carries = np.zeros(rig.joint_count, dtype=bool)
    index = {n: i for i, n in enumerate(rig.names)}
    for part in character.parts:
        if part.bone is not None:
            if part.bone in index:
                carries[index[part.bone]] = True
            continue
        groups, indices, weights = part.vertex_groups()
        used = np.unique(indices[weights > 0])
        for g in used:
            if groups[g] in index:
                carries[index[groups[g]]] = True
    return carries


def _clearance(character: Character, rest: dict[str, np.ndarray], joints: list[int]) -> float:
    """Height above the floor of the lowest rest vertex carried mostly by `joints` (their lowest rest
    joint without mesh); inf when they carry no vertex."""
    if not character.parts:
        return float(character.reference[joints, 2].min()) - character.floor
    lowest = np.inf
    for part in character.parts:
        mine = _foot_share(part, character.rig, joints) >= MOSTLY
        if np.any(mine):
            lowest = min(lowest, float(rest[part.obj.name][mine, 2].min()))
    return lowest - character.floor


def _candidates(character: Character, rest: dict[str, np.ndarray]) -> list[int]:
    """Per chain of bones ending in a leaf, its lowest bone that carries mesh, when that mesh reaches the
    ground at rest (within GROUND body sizes); without mesh, the chain's lowest joint on the main tree."""
    rig = character.rig
    main = set(_subtree(rig, rig.main_root))
    carries = _carrying(character) if character.parts else np.ones(rig.joint_count, dtype=bool)
    height = character.reference[:, 2]
    out: list[int] = []
    for leaf in rig.end_effectors:
        chain = [int(leaf)]
        while rig.parents[chain[-1]] >= 0 and len(rig.children[rig.parents[chain[-1]]]) == 1:
            chain.append(int(rig.parents[chain[-1]]))
        carrying = [j for j in chain if carries[j]]
        if not carrying or NOT_A_FOOT.search(rig.names[leaf]):
            continue
        k = min(carrying, key=lambda j: height[j])
        if NOT_A_FOOT.search(rig.names[k]) or k in out or (not character.parts and k not in main):
            continue
        if _clearance(character, rest, _subtree(rig, k)) <= GROUND * character.body_size:
            out.append(k)
    return out


def _sort_feet(character: Character, candidates: list[int]) -> list[Foot]:
    """Candidates grouped by side (canonical x) and end (forward = canonical −y)."""
    canonical = character.standing.transformed(character.frame.matrix())
    lows = np.array([np.minimum(canonical.heads[j], canonical.tails[j]) for j in candidates]).reshape(-1, 3)
    x, ahead = lows[:, 0], -lows[:, 1]
    split = np.ptp(ahead) > 0.25 if len(candidates) > 2 else False
    middle = (ahead.max() + ahead.min()) / 2 if len(candidates) else 0.0
    groups: dict[tuple[str, str], list[int]] = {}
    for k, j in enumerate(candidates):
        side = "centre" if abs(x[k]) < 0.02 else ("left" if x[k] > 0 else "right")
        named = side_of(character.rig.names[j])
        if not character.parts and named:  # a BVH's rest may lie flat: its names say the side
            side = "left" if named < 0 else "right"
        end = ("front" if ahead[k] > middle else "hind") if split else "hind"
        groups.setdefault((side, end), []).append(j)
    feet = []
    for (side, end), members in sorted(groups.items(), key=lambda item: (item[0][1], item[0][0])):
        joints = sorted({i for j in members for i in _subtree(character.rig, j)})
        feet.append(Foot(f"{end}_{side}", side, end, joints))
    return feet


def _lowest(heights: np.ndarray) -> np.ndarray:
    count = max(MIN_SOLE, int(math.ceil(SOLE_SHARE * len(heights))))
    return np.argsort(heights, kind="stable")[: min(count, len(heights))]


def find_feet(character: Character, rest: dict[str, np.ndarray]) -> list[Foot]:
    """The character's feet with their soles (module docstring); feet without a sole are left out."""
    feet = _sort_feet(character, _candidates(character, rest))
    heads = character.reference
    kept = []
    for foot in feet:
        if not character.parts:
            joints = np.array(foot.joints)
            foot.sole_joints = [int(j) for j in joints[_lowest(heads[joints, 2])]]
            kept.append(foot)
            continue
        candidates = []
        for part in character.parts:
            mine = np.flatnonzero(_foot_share(part, character.rig, foot.joints) >= MOSTLY)
            candidates += [(part.obj.name, int(v), float(rest[part.obj.name][v, 2])) for v in mine]
        if not candidates:
            continue
        chosen = _lowest(np.array([c[2] for c in candidates]))
        for k in chosen:
            name, vertex, _ = candidates[k]
            foot.sole.setdefault(name, [])
            foot.sole[name].append(vertex)
        foot.sole = {name: np.array(v, dtype=np.int64) for name, v in foot.sole.items()}
        kept.append(foot)
    return kept


# ----------------------------------------------------------------------------- clips
def _preference(clip: Clip) -> tuple:
    """Which of a kind's clips stands for it: one action before compounds, the kind's own action (a
    horse's Walk, not its Trot, is its walk), then the shortest name."""
    return clip.compound, clip.action_word != clip.kind, len(clip.label), clip.label


def read_clips(character: Character, actions: list, descriptions: dict[str, str] | None = None) -> list[Clip]:
    """One clip per kind the character's actions show (`_preference`: one action before compounds, the
    kind's own action, then the shortest name), in the order of KINDS' values."""
    by_kind: dict[str, Clip] = {}
    for action in actions:
        label = clip_label(action.name)
        text = (descriptions or {}).get(action.name, label)
        desc = describe_clip_name(text, character.species, character.family)
        kind = KINDS.get(desc.action)
        if kind is None:
            continue
        clip = Clip(action.name, label, kind, desc.action, desc, bool(desc.segments))
        best = by_kind.get(kind)
        if best is None or _preference(clip) < _preference(best):
            by_kind[kind] = clip
    order = list(dict.fromkeys(KINDS.values()))
    return sorted(by_kind.values(), key=lambda c: order.index(c.kind))


def cmu_descriptions(path: Path) -> dict[str, str]:
    """'007_01' → the trial's text ("walk", "slow walk", …) from cmu_descriptions.csv."""
    import csv

    out = {}
    if not path.is_file():
        return out
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            try:
                key = f"{int(row['Subject']):03d}_{int(row['Trial #']):02d}"
                out[key] = row["Motion Description"].strip()
            except (KeyError, ValueError):
                continue
    return out


def clip_frames(action, frames: int | None, loop: bool) -> list[int]:
    """The scene frames that play the clip: once, or (`loop`) cycled to `frames` frames, the last key
    left out when it repeats the first (a looping clip)."""
    start, end = (int(round(v)) for v in action.frame_range)
    length = max(end - start + (0 if loop and end > start else 1), 1)
    if not loop or not frames:
        return list(range(start, start + length))
    return [start + (k % length) for k in range(max(frames, length))]


# ----------------------------------------------------------------------------- tracks
@dataclass
class Tracks:
    """Per frame: each foot's sole point (F,T,3), the body centre (T,3), deformed vertices (T,V,3)
    (None without mesh) and the world bounds of all of it."""

    soles: np.ndarray
    body: np.ndarray
    vertices: np.ndarray | None
    lo: np.ndarray
    hi: np.ndarray
    clip_length: int = 0  # frames of one play of the clip (set by the caller when it cycles it)


def track(character: Character, frames: list[int]) -> Tracks:
    """Sole points, body centre and deformed vertices of the playing action at `frames`."""
    scene, arm, rig = bpy.context.scene, character.arm, character.rig
    world = object_matrix(arm)
    soles, body, kept = [], [], []
    for frame in frames:
        scene.frame_set(frame)
        if character.parts:
            verts = {p.obj.name: part_vertices(p, arm) for p in character.parts}
            soles.append([np.concatenate([verts[n][idx] for n, idx in f.sole.items()]).mean(0)
                          for f in character.feet])
            every = np.concatenate(list(verts.values()))
        else:
            heads = evaluated_pose(arm, rig)[:, :3, 3] @ world[:3, :3].T + world[:3, 3]
            soles.append([heads[f.sole_joints].mean(0) for f in character.feet])
            every = heads
        body.append(every.mean(0))
        stride = max(1, len(every) // MAX_VERTICES)
        kept.append(every[::stride])
    allv = np.array(kept)
    vertices = allv if character.parts else None
    return Tracks(np.swapaxes(np.array(soles), 0, 1), np.array(body), vertices,
                  allv.reshape(-1, 3).min(0), allv.reshape(-1, 3).max(0))


def motion_span(tracks: Tracks, body_size: float, loop: bool) -> slice:
    """The frames of a clip that are its motion: a first frame that is a jump rather than motion (a sole
    or the body moves more than JUMP body sizes into the second frame, and more than ten times its
    median step: a BVH's opening T-pose) is left out, and so is a hold at the end (every tracked point
    still, below HOLD body sizes a frame: keys that repeat the last pose, as the Zebra's Walk holds for
    its second half); a loop's last moving frame goes too, as it repeats the first (`clip_frames`)."""
    points = np.concatenate([tracks.soles, tracks.body[None]], axis=0)  # (F+1,T,3)
    frames = points.shape[1]
    if frames < 4:
        return slice(0, frames)
    steps = np.linalg.norm(np.diff(points, axis=1), axis=2).max(axis=0) / body_size
    start = int(steps[0] > JUMP and steps[0] > 10 * float(np.median(steps[1:])))
    moving = np.flatnonzero(steps[start:] > HOLD) + start
    if len(moving) == 0:
        return slice(start, frames)
    stop = int(moving[-1]) + 2  # the frame after the last step that moves
    if stop < frames and loop:
        stop -= 1
    return slice(start, max(stop, start + 2))


def posed_forward(character: Character, tracks: Tracks) -> np.ndarray:
    """The way the posed figure walks, horizontal, unit: the body's net displacement over `tracks` when
    it travels a tenth of a body size, else the rest pose's forward (`forward_axis`; a BVH's rest may lie
    flat, its take travels)."""
    net = tracks.body[-1] - tracks.body[0]
    net[2] = 0.0
    if np.linalg.norm(net) > 0.1 * character.body_size:
        return net / np.linalg.norm(net)
    return forward_axis(character)


def forward_axis(character: Character) -> np.ndarray:
    """The creature's forward in world space, horizontal, unit."""
    ahead = -(object_matrix(character.arm)[:3, :3] @ character.frame.rotation[1])
    ahead[2] = 0.0
    return ahead / max(np.linalg.norm(ahead), 1e-12)
