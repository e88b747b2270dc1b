"""Retargeting between rigs of different naming, topology, rest pose and scale."""

from __future__ import annotations

import numpy as np
import pytest

from kirin.kirin_addon.core import rotations as rot
from kirin.kirin_addon.core.canonical import detect_canonical_frame
from kirin.kirin_addon.core.motion import joint_positions
from kirin.kirin_addon.library.procedural import BipedSpec, biped_walk, build_biped
from kirin.kirin_addon.retarget.retargeter import retarget

from assets_support import ASSETS

LIMBS = [("mixamorig:LeftUpLeg", "mixamorig:LeftLeg", "DEF-thigh.L", "DEF-shin.L"),
         ("mixamorig:RightLeg", "mixamorig:RightFoot", "DEF-shin.R", "DEF-foot.R"),
         ("mixamorig:LeftArm", "mixamorig:LeftForeArm", "DEF-upper_arm.L", "DEF-forearm.L"),
         ("mixamorig:RightForeArm", "mixamorig:RightHand", "DEF-forearm.R", "DEF-hand.R")]


def limb_angles(src_rig, src_pos, tgt_rig, tgt_pos, src_frame, tgt_frame) -> np.ndarray:
    """Angle per frame between source and target limb directions, both in canonical axes."""
    out = []
    for s0, s1, t0, t1 in LIMBS:
        a = src_pos[:, src_rig.index(s1)] - src_pos[:, src_rig.index(s0)]
        b = tgt_pos[:, tgt_rig.index(t1)] - tgt_pos[:, tgt_rig.index(t0)]
        a = a @ src_frame.rotation.T
        b = b @ tgt_frame.rotation.T
        cos = np.sum(a * b, -1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
        out.append(np.degrees(np.arccos(np.clip(cos, -1, 1))))
    return np.array(out)


def transformed_target(scale: float, seed: int):
    """An A-pose, bent-knee, Rigify-named target, turned onto Y-up axes and scaled."""
    spec = BipedSpec(naming="rigify", arm_pose="A", height=1.6, leg_ratio=0.47, knee_bend_deg=15,
                     roll_seed=seed)
    rig = build_biped(spec)
    m = np.eye(4)
    m[:3, :3] = scale * np.array([[1, 0, 0], [0, 0, 1], [0, -1, 0]])  # Z-up → Y-up (glTF-like)
    m[:3, 3] = [3.0, -1.0, 2.0]
    return rig.transformed(m)


@pytest.mark.parametrize("scale", [1.0, 100.0])
def test_t_pose_walk_onto_a_pose_rig_follows_limb_directions(scale):
    source_spec = BipedSpec(naming="mixamo", arm_pose="T", height=1.75, spine_bones=3)
    source = build_biped(source_spec)
    motion = biped_walk(source, source_spec, frames=40)
    target = transformed_target(scale, seed=2)
    result = retarget(source, motion, target)
    assert result.mapping["DEF-thigh.L"] == "mixamorig:LeftUpLeg"
    assert result.mapping["DEF-hand.R"] == "mixamorig:RightHand"
    assert result.target_frame.up_axis == "+Y"
    src_pos = joint_positions(source, motion)
    tgt_pos = joint_positions(target, result.motion)
    aligned = limb_angles(source, src_pos, target, tgt_pos, result.source_frame, result.target_frame)
    assert aligned.max() < 0.5  # every limb points where the source's does, every frame

    unaligned = retarget(source, motion, target, align_rest=False).motion
    off = limb_angles(source, src_pos, target, joint_positions(target, unaligned), result.source_frame,
                      result.target_frame)
    assert off[2:].mean() > 30  # without rest alignment the A-pose arms stay ~45° off

    # Root path: scaled by hip heights (in the target's own units) and along the target's forward axis.
    tgt_root, src_root = tgt_pos[:, target.main_root], src_pos[:, source.main_root]
    travelled = (tgt_root[-1] - tgt_root[0]) @ result.target_frame.rotation.T
    src_travel = (src_root[-1] - src_root[0]) @ result.source_frame.rotation.T
    ratio = np.linalg.norm(travelled) / np.linalg.norm(src_travel)
    canonical_ratio = ratio * result.target_frame.scale / result.source_frame.scale
    assert np.isclose(canonical_ratio, result.root_scale, rtol=1e-6)
    assert travelled[1] < 0  # walks forward (−Y canonical)


def test_unmapped_joints_keep_rest_and_bad_maps_fail():
    source = build_biped(BipedSpec(naming="mixamo"))
    motion = biped_walk(source, BipedSpec(naming="mixamo"), frames=10)
    target = build_biped(BipedSpec(naming="rigify", roll_seed=1))
    auto = retarget(source, motion, target).mapping
    edited = dict(auto, **{"DEF-forearm.L": None})
    out = retarget(source, motion, target, mapping=edited).motion
    fore = target.index("DEF-forearm.L")
    assert np.allclose(np.abs(out.rotations[:, fore, 0]), 1.0, atol=1e-9)
    with pytest.raises(ValueError):
        retarget(source, motion, target, mapping=dict(auto, **{"DEF-hand.L": "no such joint"}))
    with pytest.raises(ValueError):
        retarget(source, motion, target, mapping={n: None for n in target.names})


def test_identity_retarget_reproduces_the_motion():
    spec = BipedSpec(naming="mixamo", roll_seed=4)
    rig = build_biped(spec)
    motion = biped_walk(rig, spec, frames=20)
    out = retarget(rig, motion, rig).motion
    assert np.allclose(joint_positions(rig, out), joint_positions(rig, motion), atol=1e-9)
    assert np.allclose(np.abs(np.sum(out.rotations * motion.rotations, -1)), 1.0, atol=1e-9)


@pytest.mark.skipif(not (ASSETS / "bvh_cmu_01_01").is_dir(), reason="needs ../shared/assets")
def test_cmu_mocap_onto_built_character_looks_right():
    from kirin.kirin_addon.io.bvh import load_bvh

    source, motion = load_bvh(ASSETS / "bvh_cmu_01_01" / "01_01.bvh")
    motion = motion.resampled(30.0).sliced(0, 200)
    target = transformed_target(1.0, seed=5)
    result = retarget(source, motion, target)
    assert result.source_frame.up_axis == "+Y"
    mapped = {k: v for k, v in result.mapping.items() if v}
    for tgt, src in [("DEF-thigh.L", "LeftUpLeg"), ("DEF-shin.R", "RightLeg"), ("DEF-upper_arm.L", "LeftArm"),
                     ("DEF-head", "Head")]:
        assert mapped.get(tgt) == src, (tgt, mapped.get(tgt))
    src_pos = joint_positions(source, motion) @ result.source_frame.rotation.T
    tgt_pos = joint_positions(target, result.motion) @ result.target_frame.rotation.T
    for s0, s1, t0, t1 in [("LeftUpLeg", "LeftLeg", "DEF-thigh.L", "DEF-shin.L"),
                           ("RightArm", "RightForeArm", "DEF-upper_arm.R", "DEF-forearm.R")]:
        a = src_pos[:, source.index(s1)] - src_pos[:, source.index(s0)]
        b = tgt_pos[:, target.index(t1)] - tgt_pos[:, target.index(t0)]
        cos = np.sum(a * b, -1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
        assert np.degrees(np.arccos(np.clip(cos, -1, 1))).max() < 1.0
    frame = detect_canonical_frame(target)
    assert np.allclose(frame.rotation, result.target_frame.rotation)
    assert rot.quat_normalize(result.motion.rotations).shape == (200, target.joint_count, 4)


def with_ground_root(rig):
    """The rig under an extra root bone lying on the floor, as game rigs have."""
    from kirin.kirin_addon.core.rig import rig_from_bones

    heads = np.concatenate([[[0.0, 0.0, 0.0]], rig.heads])
    tails = np.concatenate([[[0.0, -0.2, 0.0]], rig.tails])
    parents = np.concatenate([[-1], np.where(rig.parents >= 0, rig.parents + 1, 0)])
    return rig_from_bones(["root"] + rig.names, parents, heads, tails)


def test_ground_root_bone_keeps_root_scaling_by_hip_height():
    source_spec = BipedSpec(naming="mixamo", height=1.75)
    source = build_biped(source_spec)
    motion = biped_walk(source, source_spec, frames=30)
    target = with_ground_root(build_biped(BipedSpec(naming="rigify", height=1.2, leg_ratio=0.45)))
    result = retarget(source, motion, target)
    assert result.mapping["root"] is None and result.mapping["DEF-pelvis"] == "mixamorig:Hips"
    assert not result.warnings
    src_c = source.transformed(result.source_frame.matrix())
    tgt_c = target.transformed(result.target_frame.matrix())
    hips = target.index("DEF-pelvis")
    expected = tgt_c.heads[hips, 2] / src_c.heads[source.main_root, 2]
    assert np.isclose(result.root_scale, expected, rtol=1e-3)
    travel = joint_positions(target, result.motion)[[0, -1], hips]
    src_travel = joint_positions(source, motion)[[0, -1], source.main_root]
    ratio = np.linalg.norm(travel[1] - travel[0]) / np.linalg.norm(src_travel[1] - src_travel[0])
    units = result.source_frame.scale / result.target_frame.scale
    assert np.isclose(ratio, result.root_scale * units, rtol=1e-6)
    assert 0.5 < ratio < 0.7  # a 1.2 m character with short legs strides less than a 1.75 m one
