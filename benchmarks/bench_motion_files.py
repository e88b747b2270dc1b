"""Apply Motion From File measured: every motion file in ../shared/assets onto rigs of several sources.

Issue 31, item 5. Each source clip — every CMU BVH (bvh_cmu_01_01, bvh_cmu_subjects_01_07; `--per-subject
N` keeps the first N takes of each subject) and the walks and runs of glTF humanoids (CesiumMan,
RobotExpressive, a Quaternius mech and big monsters) — is applied to each target rig (`TARGETS`: 12 rigs
of 6 sources, the CMU skeleton among them) through `bpy.ops.kirin.apply_motion_file`, as a user would
(Blender headless, the scene at 30 fps, the file read by the operator: no axis, unit or clip setting is
given but the glTF clip's name). Source and result are measured the same way, independently of the
retargeter (feet, soles and trunk found here from each rig's own mesh and rest or a skeleton's names;
motion_real_support for imports and mesh evaluation; kirin_addon/eval/gait.py for the gait):

* **trunk**: the angle of hips (the legs' tops' midpoint: `trunk_joints`) → head from the vertical per
  frame, less the rig's own rest tilt (a mech stands leaning; a skeleton's rest may lie folded: 0),
  source and target at the same times; the pair passes when the 95th percentile of |target − source|
  is ≤ 25°;
* **floor**: per frame the lowest sole vertex (the rest vertices within 2 % of body size of the floor,
  each side; a skeleton: its feet's lowest joints) against the rest mesh's lowest vertex; passes when
  the 5th percentile over frames is within 2 % of body size of it (the lowest (sinking) and the median
  (floating) are printed beside it);
* **duty** and **stride frequency** (gait.py): within 10 % of the source's. Mesh against mesh where both
  have one (soles); where either is a skeleton (no mesh), each one's own ankles, as joints, found on
  its own rig (`ankle`; a mesh whose sole hangs from a shin, a mech's spike: its sole): never through
  the retargeter's joint map, which made the source's reference depend on the map (one take's duty
  read 0.24 to 0.68 across the targets, a walk's 0.08 to 0.47; a map that sends an ankle to a toe
  compared an ankle with a toe). Pairs whose source has no stride
  frequency (a punch, a sword fight) count as n/a; the summary repeats every criterion over the walks
  and runs alone (CMU's description of the trial says walk, run or jog; every glTF clip here is one),
  where duty and frequency mean most;
* **travel**: the hips' vertical drift over the clip against its horizontal travel (printed only).

A game clip that walks in place is played LOOPS times over, and so is its retargeted clip. Prints a row
per pair and a summary: pairs passing each criterion of N. These are third-party assets: nothing
converted from them is written to the repository.

`--self` applies each clip to its own file's rig instead (a take onto the skeleton it was captured on):
what the criteria read where a retarget has nothing to change.

Run: .venv/bin/python benchmarks/bench_motion_files.py [--per-subject N] [--targets CesiumMan Yeti]
     [--sources 002_01 Robot] [--self] [--json out.json] [--assets ../shared/assets]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kirin.kirin_addon.io.scratch import private_blender_resources

private_blender_resources("kirin-bench-")

import bpy  # noqa: E402
import numpy as np  # noqa: E402

from kirin.benchmarks import motion_real_support as support  # noqa: E402
from kirin.kirin_addon.eval.gait import FootTrack, GaitInput, measure_gait  # noqa: E402
from kirin.operators.headless import common as headless  # noqa: E402
from kirin.operators.scene_io.arrays import object_matrix  # noqa: E402
from kirin.operators.scene_io.rig import evaluated_pose  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT.parent / "shared" / "assets"
FPS = 30
TRUNK_MAX = 25.0  # degrees
FLOOR_MAX = 0.02  # body sizes
RATE_MAX = 0.10  # relative, duty and stride frequency
# Target rigs: 12 rigs of 6 sources (Khronos, three.js, Quaternius glTF and FBX, Quaternius monsters, CMU);
# CesiumMan, RobotExpressive and the Yeti are held-out rigs (benchmarks/motion_real_sets.py): measured here,
# never looked at to tune the retargeter.
TARGETS = (
    "khronos_cesiumman/CesiumMan.glb",
    "threejs_robotexpressive/RobotExpressive.glb",
    "quaternius/modular_men/Casual.glb",
    "quaternius/modular_women/Witch.glb",
    "quaternius/mech_pack/Mike.glb",
    "quaternius_fbx/man_animated/Animated_Human.fbx",
    "quaternius_fbx/woman_animated/Animated_Woman.fbx",
    "quaternius_fbx/zombie_animated/Zombie.fbx",
    "quaternius_monsters/big/BlueDemon.glb",
    "quaternius_monsters/big/Ninja.glb",
    "quaternius_monsters/big/Yeti.glb",
    "bvh_cmu_01_01/01_01.bvh",
)
BVH_GLOBS = ("bvh_cmu_01_01/*.bvh", "bvh_cmu_subjects_01_07/*.bvh")
# glTF humanoids' locomotion clips (file, the glTF animation's name; None: its only clip).
GLTF_SOURCES = (
    ("khronos_cesiumman/CesiumMan.glb", None),
    ("threejs_robotexpressive/RobotExpressive.glb", "Walking"),
    ("threejs_robotexpressive/RobotExpressive.glb", "Running"),
    ("quaternius/mech_pack/Mike.glb", "Walk"),
    ("quaternius/mech_pack/Mike.glb", "Run"),
    ("quaternius_monsters/big/Ninja.glb", "Walk"),
    ("quaternius_monsters/big/Ninja.glb", "Run"),
    ("quaternius_monsters/big/Demon.glb", "Walk"),
)


@dataclass
class Rigged:
    """A character as measured here: its feet (soles, and the bone of each), its trunk joints."""

    character: support.Character
    feet: list[support.Foot]
    foot_joints: list[int]  # per foot, the bone its sole hangs from (its top joint on a skeleton)
    trunk: tuple[list[int], int]  # (hips: the joints whose heads' midpoint is the pelvis, top)
    loop: bool = False  # a game clip that walks in place: cycled when played
    rest_tilt: float = 0.0  # the trunk's tilt at rest (degrees); 0 for a skeleton, whose rest may lie folded


@dataclass
class Measured:
    """One clip played on one character: its gait, per-frame trunk tilt, lowest sole, joints."""

    fps: float
    gait: object  # GaitMeasures on the soles (mesh, or a skeleton's lowest foot joints)
    tilt: np.ndarray  # (T,) degrees from the vertical, less the character's own rest tilt (`Rigged`)
    lowest: np.ndarray  # (T,) world height of the lowest sole vertex (joint without mesh)
    heads: np.ndarray  # (T,J,3) world joint heads
    hips: list[int]  # the joints whose heads' midpoint is the pelvis
    soles: np.ndarray | None = None  # (F,T,3) each foot's sole centroid (a skinned character's)


# ----------------------------------------------------------------------------- the character's feet and trunk
FOOT_WORDS = ("foot", "ankle")
SOLE = 0.02  # body sizes: a rest vertex this close to the floor is a sole's
ANKLE = 0.12  # of the character's height: a foot's joints are lower (an ankle ~5 %, a knee ~27 %)


def joint_feet(character: support.Character) -> list[support.Foot]:
    """A skeleton without mesh (a BVH): per side, the topmost joint named foot or ankle, its sole the lowest
    joints of its subtree in the reference pose (a Character Creator foot has a dozen toe joints, which
    motion_real_support's chain ends miss)."""
    rig, feet = character.rig, []
    for side, sign in (("left", -1), ("right", 1)):
        named = [j for j, n in enumerate(rig.names) if support.side_of(n) == sign
                 and any(w in n.lower() for w in FOOT_WORDS)]
        if not named:
            return character.feet
        top = min(named, key=lambda j: rig.depth[j])
        joints = support._subtree(rig, top)
        heights = character.reference[joints, 2]
        lowest = [joints[k] for k in support._lowest(heights)]
        feet.append(support.Foot(f"hind_{side}", side, "hind", joints, sole_joints=lowest))
    return feet


def mesh_feet(character: support.Character) -> tuple[list[support.Foot], list[int]]:
    """A skinned character: per side (canonical x), the rest vertices within SOLE body sizes of the floor
    (on every rig measured, feet alone: a foot control parented to the root, a toe-less foot, a robot's
    shin), and the bone most of them follow."""
    rest = support.rest_vertices(character.arm, character.parts)
    to_arm = np.linalg.inv(object_matrix(character.arm))
    index = {n: i for i, n in enumerate(character.rig.names)}
    feet, bones = [], []
    for side, sign in (("left", 1.0), ("right", -1.0)):
        sole, votes = {}, {}
        for part in character.parts:
            v = rest[part.obj.name]
            x = character.frame.to_canonical_points(v @ to_arm[:3, :3].T + to_arm[:3, 3])[:, 0]
            low = v[:, 2] - character.floor <= SOLE * character.body_size
            near = np.flatnonzero(low & (sign * x > 0.01))
            if not len(near):
                continue
            sole[part.obj.name] = near
            if part.bone is not None:
                votes[part.bone] = votes.get(part.bone, 0) + len(near)
                continue
            groups, indices, weights = part.vertex_groups()
            for k in near:
                name = groups[indices[k][int(np.argmax(weights[k]))]]
                votes[name] = votes.get(name, 0) + 1
        known = {n: c for n, c in votes.items() if n in index}
        if not sole or not known:
            raise support.Unmeasurable(f"no {side} sole on the floor at rest")
        bone = index[max(known, key=known.get)]
        feet.append(support.Foot(f"hind_{side}", side, "hind", [bone], sole=sole))
        bones.append(bone)
    return feet, bones


def rigged(character: support.Character, loop: bool = False) -> Rigged:
    if character.parts:
        feet, bones = mesh_feet(character)
    else:
        feet = joint_feet(character)
        bones = [f.joints[0] for f in feet]
    character.feet = feet
    trunk = trunk_joints(character)
    rest_tilt = 0.0
    if character.parts:
        world = object_matrix(character.arm)
        axis = (character.rig.heads[trunk[1]] - character.rig.heads[trunk[0]].mean(0)) @ world[:3, :3].T
        rest_tilt = _tilt(axis[None])[0]
    return Rigged(character, feet, bones, trunk, loop, rest_tilt)


def _tilt(axis: np.ndarray) -> np.ndarray:
    """(N,) degrees between vectors (N,3) and world +Z."""
    return np.degrees(np.arccos(np.clip(axis[:, 2] / np.maximum(np.linalg.norm(axis, axis=1), 1e-12), -1, 1)))


def as_target(character: support.Character) -> None:
    """A skeleton without mesh as a target: its floor is its rest's (its own take's floor is the source's,
    wherever the capture had it), or where the rest lies another way up than world +Z (a Character Creator
    skeleton's folded zero pose), its take's first frame's, which Apply Motion From File stands on
    (operators/standing.py)."""
    if character.parts:
        return
    world = object_matrix(character.arm)
    heads = character.rig.heads @ world[:3, :3].T + world[:3, 3]
    if support.rest_frame(character.arm, character.rig).up_axis != "+Z":
        heads = character.reference
    character.floor = float(heads[:, 2].min())


def trunk_joints(character: support.Character) -> tuple[list[int], int]:
    """(hips, top). The hips: the legs' top joints (below the deepest joint above every foot), whose heads'
    midpoint is the pelvis; where those are feet themselves (feet parented to the root), that deepest
    joint alone — a rig's own pelvis joint may sit off the spine (the Quaternius mech's Body root is a
    third of its height in front of its torso: its hips → head line leant 27° at rest, and a bow moved
    it by other angles than the spine's). The top: the head (by name: the first joint named head, else
    neck; else the highest reference joint outside the legs)."""
    rig = character.rig
    chains = []
    for foot in character.feet:
        chain, j = [], foot.joints[0]
        while j >= 0:
            chain.append(j)
            j = int(rig.parents[j])
        chains.append(chain[::-1])
    hips, split = 0, 0
    for k in range(min(len(c) for c in chains)):
        if len({c[k] for c in chains}) > 1:
            break
        hips, split = chains[0][k], k + 1
    tops = [c[split] for c in chains if len(c) > split]
    heights = character.reference[:, 2] - character.floor
    tall = float(np.ptp(character.reference[:, 2])) or 1.0
    pelvis = tops if len(tops) == len(chains) and min(heights[tops]) >= ANKLE * tall else [hips]
    legs = {j for c in chains for j in c if j != hips and hips in c[: c.index(j)]}
    legs |= {j for f in character.feet for j in f.joints}
    # The whole rig, not only the hips' subtree: a Character Creator pelvis carries the legs alone.
    inside = [j for j in range(rig.joint_count) if j not in legs and j != hips]
    for word in ("head", "neck"):  # by name first: hands raised in the first frame reach higher
        named = [j for j in inside if word in rig.names[j].lower()
                 and not any(w in rig.names[j].lower() for w in ("end", "top", "nub"))]
        if named:
            return pelvis, min(named, key=lambda j: rig.depth[j])
    top = max(inside, key=lambda j: character.reference[j, 2]) if inside else hips
    return pelvis, top


def measure_clip(rig_info: Rigged, action, frames: list[int]) -> Measured:
    """Play `action` on the character at `frames`; its gait (soles), trunk tilt, lowest sole, joints."""
    character = rig_info.character
    support.use_action(character.arm, action)
    scene, arm, rig = bpy.context.scene, character.arm, character.rig
    world = object_matrix(arm)
    soles, body, lowest, heads_all = [], [], [], []
    for frame in frames:
        scene.frame_set(frame)
        heads = evaluated_pose(arm, rig)[:, :3, 3] @ world[:3, :3].T + world[:3, 3]
        if character.parts:
            verts = {p.obj.name: support.part_vertices(p, arm) for p in character.parts}
            feet = [np.concatenate([verts[n][i] for n, i in f.sole.items()]) for f in rig_info.feet]
            every = np.concatenate(list(verts.values()))
        else:
            feet = [heads[f.sole_joints] for f in rig_info.feet]
            every = heads
        soles.append([f.mean(0) for f in feet])
        lowest.append(min(float(f[:, 2].min()) for f in feet))
        body.append(every.mean(0))
        heads_all.append(heads)
    fps = scene.render.fps / scene.render.fps_base
    soles_array = np.swapaxes(np.array(soles), 0, 1)
    tracks = tuple(FootTrack(f.name, f.side, f.end, soles_array[k]) for k, f in enumerate(rig_info.feet))
    gait = measure_gait(GaitInput(fps, tracks, np.array(body), character.body_size, character.floor, None))
    heads_all = np.array(heads_all)
    hips, top = rig_info.trunk
    axis = heads_all[:, top] - heads_all[:, hips].mean(1)
    return Measured(fps, gait, _tilt(axis) - rig_info.rest_tilt, np.array(lowest), heads_all, hips,
                    soles_array if character.parts else None)


def joint_gait(measured: Measured, joints: list[int | None], size: float):
    """GaitMeasures of the heads of `joints` (one foot each; None: that foot's sole, `ankle`), the joints'
    centroid as the body."""
    tracks = tuple(FootTrack(f"foot{k}", ("left", "right")[k % 2], "hind",
                             measured.heads[:, j] if j is not None else measured.soles[k])
                   for k, j in enumerate(joints))
    return measure_gait(GaitInput(measured.fps, tracks, measured.heads.mean(1), size, None, None))


# ----------------------------------------------------------------------------- sources
LOOPS = 3  # a game clip that walks in place is played this many times over (gait.py needs 1.5 cycles)
GAIT_WORDS = re.compile(r"\bwalk|\brun\b|\bjog", re.IGNORECASE)


@dataclass
class Source:
    path: Path
    clip: str | None  # the glTF animation's name (None: a BVH, or the file's only clip)
    name: str
    measured: Measured | None = None
    names: list[str] | None = None  # its rig's joint names
    mesh: bool = False  # measured on a mesh (else on a skeleton's joints)
    loop: bool = False  # a game clip in place: played LOOPS times, and so is its retargeted clip
    body_size: float = 1.0
    gait: bool = False  # a walk or a run (CMU's description of the trial; the glTF clips all are)
    ankles: list[int] | None = None  # per foot (left, right), its ankle (`ankle`)
    reason: str | None = None


def source_clips(assets: Path, per_subject: int | None, only: list[str] | None) -> list[Source]:
    found = sorted({f for pattern in BVH_GLOBS for f in assets.glob(pattern)})
    if per_subject:
        by_subject: dict[str, list[Path]] = {}
        for f in found:
            by_subject.setdefault(f.stem.split("_")[0], []).append(f)
        found = [f for files in by_subject.values() for f in files[:per_subject]]
    texts = support.cmu_descriptions(assets / support.CMU_DESCRIPTIONS)
    texts["01_01"] = texts.get("001_01", "")  # the same trial (forward jumps, turn around), other naming
    sources = [Source(f, None, f.stem, gait=bool(GAIT_WORDS.search(texts.get(f.stem, "")))) for f in found]
    sources += [Source(assets / f, clip, f"{Path(f).stem}:{clip or 'clip'}", gait=True)
                for f, clip in GLTF_SOURCES if (assets / f).is_file()]
    if only:
        sources = [s for s in sources if any(o.lower() in s.name.lower() for o in only)]
    return sources


def _action_for(actions: list, clip: str | None):
    """The imported action of a glTF animation (Blender names it after the animation, perhaps with the
    armature's name before a '|')."""
    if clip is None:
        return actions[0] if actions else None
    for action in actions:
        if action.name == clip or action.name.split("|")[-1] == clip:
            return action
    return None


def played(action, loop: bool, length: int | None = None) -> list[int]:
    """The frames to play: once, or a loop LOOPS times over (its last key, the first again, left out)."""
    once = support.clip_frames(action, 0, loop)
    if not loop:
        return once
    count = length if length is not None else len(once)
    return [once[k % len(once)] for k in range(LOOPS * count)]


def measure_source(source: Source) -> None:
    """The source clip played on its own character (Blender's import of the file)."""
    try:
        character, actions = support.load_character(source.path, headless.import_rig_file)
        own = rigged(character, loop=source.path.suffix.lower() != ".bvh")
        source.names, source.mesh = list(character.rig.names), bool(character.parts)
        source.loop, source.body_size = own.loop, character.body_size
        source.ankles = [ankle(own, j) for j in own.foot_joints]
        action = _action_for(actions, source.clip)
        if action is None:
            raise support.Unmeasurable(f"no action {source.clip!r} among {[a.name for a in actions]}")
        source.measured = measure_clip(own, action, played(action, own.loop))
    except Exception as exc:  # noqa: BLE001 — reported in the table
        source.reason = f"{type(exc).__name__}: {exc}"


# ----------------------------------------------------------------------------- pairs
def apply(character: support.Character, source: Source) -> tuple[object, dict]:
    """Apply Motion From File as the panel does; the new action and the operator's report."""
    headless.activate(character.arm)
    scene = bpy.context.scene
    scene.frame_start = 1
    with tempfile.TemporaryDirectory(prefix="kirin-report-") as folder:
        report = Path(folder) / "report.json"
        result = bpy.ops.kirin.apply_motion_file(filepath=str(source.path), clip=source.clip or "",
                                                 report_file=str(report))
        if result != {"FINISHED"}:
            raise support.Unmeasurable("Apply Motion From File failed")
        return character.arm.animation_data.action, json.loads(report.read_text())


def _relative(value, reference) -> float | None:
    if value is None or reference is None or abs(reference) < 1e-9:
        return None
    return abs(value - reference) / abs(reference)


def ankle(rigged_info: Rigged, joint: int) -> int | None:
    """The topmost joint of a foot above `joint` (its sole's bone): up the parents while they stay low
    (below ANKLE of the character's height) and above it. A toe's sole bone becomes its ankle, so both
    sides of a pair are measured at one level of the foot (a toe stays down longer than an ankle).
    None where the sole's bone is itself a shin (its head a knee, above ANKLE: a mech's spike, a
    hoof modelled on the shin): the sole is the foot there."""
    character = rigged_info.character
    heights = character.reference[:, 2] - character.floor
    tall = float(np.ptp(character.reference[:, 2])) or 1.0
    if character.parts and heights[joint] >= ANKLE * tall:
        return None
    j = joint
    while (p := int(character.rig.parents[j])) >= 0 and heights[j] <= heights[p] < ANKLE * tall:
        j = p
    return j


def gaits(source: Source, target: Rigged, measured: Measured):
    """(source, target) GaitMeasures compared alike: soles on both meshes; where either has no mesh (a
    skeleton source or target), each one's own ankles (`ankle`) as joints. Each side's feet are its
    own, found on its own rig: never through the retargeter's joint map, which would let the map
    choose what the source is measured on."""
    if source.mesh and target.character.parts:
        return source.measured.gait, measured.gait
    ours = [ankle(target, j) for j in target.foot_joints]
    return (joint_gait(source.measured, source.ankles, source.body_size),
            joint_gait(measured, ours, target.character.body_size))


def compare(source: Source, target: Rigged, measured: Measured) -> dict:
    """The pair's numbers and verdicts (module docstring)."""
    size, floor = target.character.body_size, target.character.floor
    reference = source.measured
    times = np.arange(len(measured.tilt)) / measured.fps
    source_tilt = np.interp(times, np.arange(len(reference.tilt)) / reference.fps, reference.tilt)
    trunk = float(np.percentile(np.abs(measured.tilt - source_tilt), 95))
    gap = (measured.lowest - floor) / size
    floor_error = float(np.percentile(gap, 5))
    theirs, ours = gaits(source, target, measured)
    cycle = theirs.frequency_hz is not None
    duty = _relative(ours.duty, theirs.duty)
    frequency = _relative(ours.frequency_hz, theirs.frequency_hz)
    hips = measured.heads[:, measured.hips].mean(1)
    return {
        "trunk_p95_deg": trunk, "trunk_ok": trunk <= TRUNK_MAX,
        "floor_p5": floor_error, "floor_min": float(gap.min()), "floor_median": float(np.median(gap)),
        "floor_ok": abs(floor_error) <= FLOOR_MAX,
        "duty_source": theirs.duty, "duty_target": ours.duty,
        "duty_ok": None if not cycle else (duty is not None and duty <= RATE_MAX),
        "freq_source": theirs.frequency_hz, "freq_target": ours.frequency_hz,
        "freq_ok": None if not cycle else (frequency is not None and frequency <= RATE_MAX),
        "travel": float(np.linalg.norm(hips[-1, :2] - hips[0, :2]) / size),
        "vertical_drift": float(abs(hips[-1, 2] - hips[0, 2]) / size),
    }


def run_pair(target: Rigged, source: Source) -> dict:
    bpy.context.scene.render.fps, bpy.context.scene.render.fps_base = FPS, 1.0
    action, report = apply(target.character, source)
    frames = played(action, source.loop)
    measured = measure_clip(target, action, frames)
    row = compare(source, target, measured)
    row.update(read_as=report["read_as"], mapped=report["mapped"], gait=source.gait, reason=None,
               feet_held=report["feet_held"], feet_lifted=report.get("feet_lifted"),
               root_scale=report["root_scale"])
    bpy.data.actions.remove(action)
    return row


def run_target(path: Path, sources: list[Source]) -> list[dict]:
    """Every source clip onto one target rig; one row per pair."""
    base = {"target": path.stem, "target_file": str(path)}
    try:
        character, _ = support.load_character(path, headless.import_rig_file)
        as_target(character)
        target = rigged(character)
    except Exception as exc:  # noqa: BLE001
        return [{**base, "source": None, "reason": f"{type(exc).__name__}: {exc}"}]
    rows = []
    for source in sources:
        row = {**base, "source": source.name}
        began = time.perf_counter()
        if source.measured is None:
            row["reason"] = f"source: {source.reason}"
        else:
            try:
                row.update(run_pair(target, source))
            except Exception as exc:  # noqa: BLE001 — one failed pair must not drop the others
                row["reason"] = f"{type(exc).__name__}: {exc}"
        row["seconds"] = round(time.perf_counter() - began, 2)
        rows.append(row)
        print(line(row), flush=True)
    return rows


# ----------------------------------------------------------------------------- report
def line(row: dict) -> str:
    head = f"{row['target'][:14]:14s} {(row['source'] or '-')[:22]:22s}"
    if row.get("reason"):
        return f"{head} -- {row['reason']}"

    def mark(ok) -> str:
        return "n/a" if ok is None else ("ok" if ok else "NO")

    def num(value, fmt: str) -> str:
        return "-" if value is None else format(value, fmt)

    duty = f"{num(row['duty_target'], '.2f')}/{num(row['duty_source'], '.2f')}"
    hertz = f"{num(row['freq_target'], '.2f')}/{num(row['freq_source'], '.2f')}"
    return (f"{head} trunk {row['trunk_p95_deg']:5.1f}° {mark(row['trunk_ok']):3s} | floor p5 "
            f"{row['floor_p5']:+.3f} min {row['floor_min']:+.3f} med {row['floor_median']:+.3f} "
            f"{mark(row['floor_ok']):3s} | duty {duty} {mark(row['duty_ok']):3s} | Hz {hertz} "
            f"{mark(row['freq_ok']):3s} | travel {row['travel']:.2f} drift {row['vertical_drift']:.3f} "
            f"| {row['mapped']} mapped, {row['seconds']:.1f} s")


def summary(rows: list[dict]) -> dict:
    """Pairs passing each criterion of those judged; `gaits`: the same over the walks and runs."""
    out = _tally(rows)
    out["gaits"] = _tally([r for r in rows if r.get("gait")])
    return out


def _tally(rows: list[dict]) -> dict:
    measured = [r for r in rows if not r.get("reason")]
    out = {"pairs": len(rows), "measured": len(measured), "failed": len(rows) - len(measured)}
    for key in ("trunk_ok", "floor_ok", "duty_ok", "freq_ok"):
        judged = [r for r in measured if r.get(key) is not None]
        out[key] = {"pass": sum(bool(r[key]) for r in judged), "of": len(judged)}
    every = [r for r in measured if r["trunk_ok"] and r["floor_ok"] and r["duty_ok"] is not False
             and r["freq_ok"] is not False]
    out["all"] = {"pass": len(every), "of": len(measured)}
    return out


def summary_text(info: dict) -> str:
    names = {"trunk_ok": f"upright (trunk ≤ {TRUNK_MAX:.0f}° of the source's)",
             "floor_ok": f"on the floor (lowest sole within {FLOOR_MAX:.0%} of body size)",
             "duty_ok": f"duty within {RATE_MAX:.0%}", "freq_ok": f"stride frequency within {RATE_MAX:.0%}",
             "all": "every criterion"}
    lines = []
    for title, part in (("every clip", info), ("walks and runs", info["gaits"])):
        lines.append(f"{title}: {part['pairs']} pairs, {part['measured']} measured, "
                     f"{part['failed']} failed to run")
        lines += [f"  {names[k]}: {part[k]['pass']}/{part[k]['of']}" for k in names]
    return "\n".join(lines)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assets", type=Path, default=ASSETS)
    parser.add_argument("--per-subject", type=int, default=0,
                        help="the first N takes of each CMU subject (default: every take)")
    parser.add_argument("--targets", nargs="*", help="substrings of the target rigs' paths")
    parser.add_argument("--sources", nargs="*", help="substrings of the source clips' names")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--self", action="store_true", dest="onto_itself",
                        help="each clip onto its own file's rig instead of TARGETS: what the criteria read "
                             "where the retarget has nothing to change")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse(argv)
    targets = [args.assets / t for t in TARGETS if (args.assets / t).is_file()]
    if args.targets:
        targets = [t for t in targets if any(s.lower() in str(t).lower() for s in args.targets)]
    sources = source_clips(args.assets, args.per_subject or None, args.sources)
    if not targets or not sources:
        sys.exit(f"No target rig or source clip under {args.assets}.")
    began = time.perf_counter()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    module = headless.enable_extension()
    rows: list[dict] = []
    try:
        for source in sources:
            support.clear_scene()
            measure_source(source)
        pairs = [(s.path, [s]) for s in sources] if args.onto_itself else [(t, sources) for t in targets]
        for path, clips in pairs:
            support.clear_scene()
            rows += run_target(path, clips)
    finally:
        headless.disable_extension(module)
    info = {**summary(rows), "seconds": round(time.perf_counter() - began, 1),
            "targets": len(targets), "sources": len(sources)}
    print(summary_text(info))
    print(f"{len(sources)} source clips × {len(targets)} targets in {info['seconds']:.0f} s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"summary": info, "rows": rows}, indent=2, default=str))
    return {"summary": info, "rows": rows}


if __name__ == "__main__":
    main()
