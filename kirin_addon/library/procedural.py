"""Rigs, skinned meshes and motions that Kirin builds in code (no files needed).

These serve the README's default job and the tests on a fresh clone. Everything is in the
canonical frame: +Z up, facing −Y, the creature's left on +X, metres.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.motion import Motion, motion_from_world_deltas
from ..core.rig import Rig, RigBuilder
from ..core.rotations import quat_about, quat_multiply
from ..core.skinning import SkinnedMesh

# Biped naming conventions, by role. {s} is the side ("Left"/"Right" or "L"/"R").
_NAMING = {
    "mixamo": {
        "hips": "mixamorig:Hips", "spine": "mixamorig:Spine{i}", "neck": "mixamorig:Neck",
        "head": "mixamorig:Head", "thigh": "mixamorig:{S}UpLeg", "shin": "mixamorig:{S}Leg",
        "foot": "mixamorig:{S}Foot", "toe": "mixamorig:{S}ToeBase", "shoulder": "mixamorig:{S}Shoulder",
        "upper_arm": "mixamorig:{S}Arm", "forearm": "mixamorig:{S}ForeArm", "hand": "mixamorig:{S}Hand",
    },
    "rigify": {
        "hips": "DEF-pelvis", "spine": "DEF-spine.{i:03d}", "neck": "DEF-neck", "head": "DEF-head",
        "thigh": "DEF-thigh.{s}", "shin": "DEF-shin.{s}", "foot": "DEF-foot.{s}", "toe": "DEF-toe.{s}",
        "shoulder": "DEF-shoulder.{s}", "upper_arm": "DEF-upper_arm.{s}", "forearm": "DEF-forearm.{s}",
        "hand": "DEF-hand.{s}",
    },
}


@dataclass
class BipedSpec:
    naming: str = "mixamo"
    arm_pose: str = "T"  # "T" (arms horizontal) or "A" (arms 45° down)
    height: float = 1.8
    spine_bones: int = 2
    leg_ratio: float = 0.52  # hip height / height
    knee_bend_deg: float = 0.0  # rest knee bend (bent-knee rigs)
    roll_seed: int | None = None  # random bone rolls, as real rigs have


def _name(spec: BipedSpec, role: str, side: str = "", index: int = 0) -> str:
    pattern = _NAMING[spec.naming][role]
    long_side = {"L": "Left", "R": "Right", "": ""}[side]
    return pattern.format(S=long_side, s=side, i=index)


def build_biped(spec: BipedSpec | None = None) -> Rig:
    """A humanoid rig in the canonical frame, named and posed as `spec` says."""
    spec = spec or BipedSpec()
    h = spec.height
    hip_z = spec.leg_ratio * h
    chest_z = hip_z + 0.3 * h
    bones = RigBuilder()
    add = bones.add

    hips = add(_name(spec, "hips"), -1, [0, 0, hip_z], [0, 0, hip_z + 0.08 * h])
    parent = hips
    step = (chest_z - hip_z - 0.08 * h) / spec.spine_bones
    z = hip_z + 0.08 * h
    for i in range(spec.spine_bones):
        parent = add(_name(spec, "spine", index=i + 1 if spec.naming == "mixamo" else i), parent,
                     [0, 0, z], [0, 0, z + step])
        z += step
    chest = parent
    neck = add(_name(spec, "neck"), chest, [0, 0, z], [0, -0.01 * h, z + 0.06 * h])
    add(_name(spec, "head"), neck, [0, -0.01 * h, z + 0.06 * h], [0, -0.01 * h, z + 0.18 * h])

    bend = np.radians(spec.knee_bend_deg)
    for side, sx in (("L", 1.0), ("R", -1.0)):
        x = sx * 0.055 * h
        knee_z = hip_z * 0.52
        shin = hip_z * 0.47
        knee = np.array([x, -np.sin(bend) * 0.5 * (hip_z - knee_z), knee_z])
        ankle = np.array([x, 0.0, 0.045 * h])
        ankle[2] = knee[2] - np.sqrt(max(shin**2 - knee[1] ** 2, 1e-6))
        thigh = add(_name(spec, "thigh", side), hips, [x, 0, hip_z], knee)
        shin_j = add(_name(spec, "shin", side), thigh, knee, ankle)
        ball = np.array([x, -0.08 * h, 0.012 * h])
        foot = add(_name(spec, "foot", side), shin_j, ankle, ball)
        add(_name(spec, "toe", side), foot, ball, ball + [0, -0.05 * h, 0])

        shoulder_head = np.array([sx * 0.02 * h, 0, chest_z - 0.02 * h])
        arm_root = np.array([sx * 0.1 * h, 0, chest_z - 0.01 * h])
        down = np.radians(45.0 if spec.arm_pose == "A" else 0.0)
        direction = np.array([sx * np.cos(down), 0.0, -np.sin(down)])
        elbow = arm_root + 0.17 * h * direction
        wrist = elbow + 0.15 * h * direction
        shoulder = add(_name(spec, "shoulder", side), chest, shoulder_head, arm_root)
        upper = add(_name(spec, "upper_arm", side), shoulder, arm_root, elbow)
        fore = add(_name(spec, "forearm", side), upper, elbow, wrist)
        add(_name(spec, "hand", side), fore, wrist, wrist + 0.08 * h * direction)

    rolls = 0.0
    if spec.roll_seed is not None:
        rolls = np.random.default_rng(spec.roll_seed).uniform(-np.pi, np.pi, len(bones.names))
    return bones.build(rolls)


def biped_roles(rig: Rig, spec: BipedSpec) -> dict[str, int]:
    roles = {"hips": _name(spec, "hips"), "neck": _name(spec, "neck"), "head": _name(spec, "head")}
    for side in "LR":
        for role in ("thigh", "shin", "foot", "toe", "shoulder", "upper_arm", "forearm", "hand"):
            roles[f"{role}.{side}"] = _name(spec, role, side)
    return {role: rig.index(name) for role, name in roles.items()}


def biped_walk(rig: Rig, spec: BipedSpec | None = None, frames: int = 60, fps: float = 30.0,
               speed: float = 1.2, cadence: float = 0.9) -> Motion:
    """A walk cycle along −Y: legs swing about the lateral axis, arms hang and counter-swing.

    Built as world deltas (each limb segment's world rotation from rest), so it is valid for any
    bone rolls of the rig; the inverse-bind correction gives the basis rotations.
    """
    spec = spec or BipedSpec()
    role = biped_roles(rig, spec)
    t = np.arange(frames) / fps
    phase = 2 * np.pi * cadence * t
    deltas = np.zeros((frames, rig.joint_count, 4))
    deltas[..., 0] = 1.0
    x_axis, y_axis = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]
    sway = quat_about([0, 0, 1], 0.06 * np.sin(phase))
    for j in range(rig.joint_count):
        deltas[:, j] = sway
    arm_down = 0.0 if spec.arm_pose == "A" else np.radians(45.0)
    for side, sign in (("L", 1.0), ("R", -1.0)):
        leg_phase = phase + (0.0 if side == "L" else np.pi)
        hip = 0.45 * np.sin(leg_phase)  # forward swing lifts the foot towards −Y
        knee = 0.55 * np.clip(np.sin(leg_phase + 1.2), 0.0, None) + 0.05  # shin swings back
        ankle = 0.2 * np.sin(leg_phase - 0.5)
        thigh_q = quat_multiply(sway, quat_about(x_axis, hip))
        shin_q = quat_multiply(thigh_q, quat_about(x_axis, knee))
        foot_q = quat_multiply(shin_q, quat_about(x_axis, -knee * 0.6 + ankle))
        deltas[:, role[f"thigh.{side}"]] = thigh_q
        deltas[:, role[f"shin.{side}"]] = shin_q
        deltas[:, role[f"foot.{side}"]] = foot_q
        deltas[:, role[f"toe.{side}"]] = foot_q
        swing = -0.35 * np.sin(leg_phase)
        lower = quat_about(y_axis, sign * arm_down * np.ones_like(t))
        upper_q = quat_multiply(sway, quat_multiply(quat_about(x_axis, swing), lower))
        fore_q = quat_multiply(upper_q, quat_about(x_axis, np.full_like(t, -0.25)))
        deltas[:, role[f"upper_arm.{side}"]] = upper_q
        deltas[:, role[f"forearm.{side}"]] = fore_q
        deltas[:, role[f"hand.{side}"]] = fore_q
    root = np.repeat(rig.heads[rig.main_root][None], frames, axis=0)
    root[:, 1] -= speed * t
    root[:, 2] += 0.02 * spec.height * np.cos(2 * phase)
    return motion_from_world_deltas(rig, deltas, root, fps)


def capsule_mesh(rig: Rig, radius_scale: float = 0.06, rings: int = 5, sides: int = 8) -> SkinnedMesh:
    """A low-poly tube around every deform bone, skinned to it and blended into its parent."""
    vertices, triangles, joints, weights = [], [], [], []
    size = rig.body_size
    for j in np.flatnonzero(rig.deform):
        head, tail = rig.heads[j], rig.tails[j]
        frame = rig.rest_rotations[j]
        radius = radius_scale * size * (0.6 if rig.lengths[j] < 0.08 * size else 1.0)
        base = len(vertices)
        for r in range(rings):
            s = r / (rings - 1)
            centre = head + s * (tail - head)
            for k in range(sides):
                a = 2 * np.pi * k / sides
                offset = radius * (np.cos(a) * frame[:, 0] + np.sin(a) * frame[:, 2])
                vertices.append(centre + offset)
                parent = rig.parents[j]
                blend = 0.5 * max(0.0, 1.0 - s / 0.3) if parent >= 0 else 0.0
                joints.append([j, max(parent, 0)])
                weights.append([1.0 - blend, blend])
        for r in range(rings - 1):
            for k in range(sides):
                a = base + r * sides + k
                b = base + r * sides + (k + 1) % sides
                triangles += [[a, b, b + sides], [a, b + sides, a + sides]]
    return SkinnedMesh(np.array(vertices), np.array(triangles, dtype=np.int64),
                       np.array(joints, dtype=np.int64), np.array(weights))


def default_retarget_pair() -> tuple[Rig, Motion, Rig, SkinnedMesh]:
    """The README's default job: a Mixamo-named T-pose walk onto a Rigify-named A-pose character."""
    source_spec = BipedSpec(naming="mixamo", arm_pose="T", height=1.75, spine_bones=3)
    target_spec = BipedSpec(naming="rigify", arm_pose="A", height=1.6, spine_bones=2,
                            leg_ratio=0.47, knee_bend_deg=12.0, roll_seed=7)
    source = build_biped(source_spec)
    motion = biped_walk(source, source_spec, frames=72)
    target = build_biped(target_spec)
    return source, motion, target, capsule_mesh(target)



