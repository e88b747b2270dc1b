"""The bones that matter (kirin_addon/core/rig_reduction.py): a 256-bone rig (fingers, twist bones, a
face, a long tail: benchmarks/big_rig.py) seen as at most 64 bones, and what is made on those
carried back onto every bone — the fingers riding on their hands, the face on the head."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from kirin.benchmarks.big_rig import big_creature
from kirin.kirin_addon.core.canonical import canonical_rig
from kirin.kirin_addon.core.motion import Motion, forward_kinematics, world_deltas
from kirin.kirin_addon.core.rig import MAX_JOINTS, Rig, RigError
from kirin.kirin_addon.core.rig_reduction import WORKING_JOINTS, reduce_rig
from kirin.kirin_addon.core.rotations import quat_from_axis_angle, quat_to_matrix
from kirin.kirin_addon.core.skinning import linear_blend_skinning, skin_matrices
from kirin.kirin_addon.library.families.build import build_creature


@cache
def big(family: str = "biped", fill: str = "face"):
    creature = big_creature(family, 1, fill=fill)
    return creature, reduce_rig(creature.rig, keep=canonical_rig(creature.rig).feet)


def random_motion(rig: Rig, frames: int = 4, degrees: float = 40.0, seed: int = 0) -> Motion:
    rng = np.random.default_rng(seed)
    axis = rng.normal(size=(frames, rig.joint_count, 3))
    angle = np.radians(rng.uniform(0.0, degrees, (frames, rig.joint_count)))
    root = rig.heads[rig.main_root] + rng.normal(0.0, 0.1, (frames, 3))
    return Motion(30.0, root, quat_from_axis_angle(axis, angle))


def body_joints(creature) -> list[int]:
    added = {j for key in ("fingers", "twist", "face", "long_tail") for j in creature.extras.get(key, [])}
    return [j for j in range(creature.rig.joint_count) if j not in added]


def test_a_rig_that_fits_is_left_as_it_is():
    rig = build_creature("dragon", 1).rig
    reduction = reduce_rig(rig)
    assert not reduction.reduced and reduction.rig is rig
    motion = random_motion(rig)
    assert reduction.reduce_motion(motion) is motion and reduction.expand_motion(motion) is motion
    assert np.array_equal(reduction.index, np.arange(rig.joint_count))


@pytest.mark.parametrize("family, fill", [("biped", "face"), ("biped", "tail"), ("dragon", "tail")])
def test_the_body_stays_and_the_extras_go(family, fill):
    creature, reduction = big(family, fill)
    rig = creature.rig
    assert rig.joint_count == MAX_JOINTS
    assert WORKING_JOINTS - 1 <= reduction.keep.size <= WORKING_JOINTS
    kept = set(reduction.keep.tolist())
    # Feet, the main root and (on the biped) every bone of the built body stay; the face goes first.
    assert set(canonical_rig(rig).feet.tolist()) <= kept
    assert reduction.rig.names[reduction.rig.main_root] == rig.names[rig.main_root]
    face = creature.extras["face"]
    assert sum(j in kept for j in face) <= 0.2 * len(face)  # the face goes first ...
    feet = set(canonical_rig(rig).feet.tolist())
    assert {j for j in creature.extras["twist"] if j in kept} <= feet  # ... and twist bones along their limbs
    for j in creature.extras["fingers"][::3]:  # every finger keeps its base: a hand still has fingers
        assert j in kept, rig.names[j]
    body = body_joints(creature)
    lost = [rig.names[j] for j in body if j not in kept]
    assert not lost if family == "biped" else len(lost) <= 5, lost
    for limb in creature.limbs:  # every limb keeps its girdle-to-foot chain but perhaps a hip girdle
        assert sum(j in kept for j in limb.joints) >= len(limb.joints) - 1
    # Mirror pairs go together.
    for a, b in rig.mirror_pairs:
        assert (a in kept) == (b in kept), (rig.names[a], rig.names[b])
    reduction.rig.validate()


def test_a_long_tail_is_resampled_not_cut_short():
    creature, reduction = big("dragon", "tail")
    tail = creature.extras["long_tail"]
    kept = [k for k, j in enumerate(tail) if j in set(reduction.keep.tolist())]
    assert len(kept) >= 6
    gaps = np.diff([0] + kept + [len(tail)])
    assert gaps.max() <= 3 * np.median(gaps), gaps  # evenly spread bends along the whole tail
    assert kept[-1] >= len(tail) - 5  # its tip (it touches the ground) still moves


@pytest.mark.parametrize("family, fill", [("biped", "face"), ("dragon", "tail")])
def test_carried_bones_ride_on_the_bones_that_matter(family, fill):
    creature, reduction = big(family, fill)
    rig, small = creature.rig, reduction.rig
    motion = random_motion(small)
    full = reduction.expand_motion(motion)
    assert full.joint_count == rig.joint_count
    # Every kept bone is exactly where the reduced rig puts it.
    reduced_pose = forward_kinematics(small, motion)
    full_pose = forward_kinematics(rig, full)
    assert np.allclose(full_pose[:, reduction.keep], reduced_pose, atol=1e-9)
    # A dropped bone is rigid with its anchor: its transform relative to the anchor's is the rest's.
    dropped = np.setdiff1d(np.arange(rig.joint_count), reduction.keep)
    anchor = reduction.anchor[dropped]
    relative = np.linalg.inv(full_pose[:, anchor]) @ full_pose[:, dropped]
    rest_relative = np.linalg.inv(rig.rest[anchor]) @ rig.rest[dropped]
    assert np.allclose(relative, rest_relative[None], atol=1e-9)
    # The skin agrees: the reduced mesh on the reduced rig is the full mesh on the full rig.
    mesh = creature.mesh
    small_mesh = reduction.reduce_mesh(mesh)
    assert small_mesh.joint_indices.max() < small.joint_count
    assert np.allclose(small_mesh.joint_weights.sum(1), mesh.joint_weights.sum(1))
    on_small = linear_blend_skinning(small_mesh.vertices, small_mesh.joint_indices, small_mesh.joint_weights,
                                     skin_matrices(small.rest, reduced_pose))
    on_full = linear_blend_skinning(mesh.vertices, mesh.joint_indices, mesh.joint_weights,
                                    skin_matrices(rig.rest, full_pose))
    assert np.abs(on_small - on_full).max() < 1e-9 * rig.body_size
    # And back: the full motion reduced is the reduced motion.
    again = reduction.reduce_motion(full)
    assert np.allclose(forward_kinematics(small, again), reduced_pose, atol=1e-9)


@pytest.mark.parametrize("family, fill", [("biped", "face"), ("dragon", "tail")])
def test_fingers_keep_the_animators_curl(family, fill):
    """With a reference pose (the animator's), a dropped finger keeps its turn relative to the hand;
    the kept bones' heads stay where the reduced rig puts them."""
    creature, reduction = big(family, fill)
    rig = creature.rig
    reference = random_motion(rig, frames=1, seed=3)
    motion = random_motion(reduction.rig, frames=3, seed=4)
    full = reduction.expand_motion(motion, reference)
    deltas = quat_to_matrix(world_deltas(rig, full))
    ref = quat_to_matrix(world_deltas(rig, reference))[0]
    extras = creature.extras["fingers"] + creature.extras["face"]
    dropped = [j for j in extras if j not in set(reduction.keep.tolist())]
    assert dropped and not reduction.inline[dropped].any()
    anchor = reduction.anchor[dropped]
    turned = np.swapaxes(deltas[:, anchor], -1, -2) @ deltas[:, dropped]
    assert np.allclose(turned, (ref[anchor].transpose(0, 2, 1) @ ref[dropped])[None], atol=1e-9)
    # Kept bones are the motion's; the reference changes nothing of them.
    plain = reduction.expand_motion(motion)
    assert np.allclose(forward_kinematics(rig, plain)[:, reduction.keep],
                       forward_kinematics(rig, full)[:, reduction.keep], atol=1e-9)
    assert np.allclose(forward_kinematics(rig, full)[:, reduction.keep],
                       forward_kinematics(reduction.rig, motion), atol=1e-9)
    assert reduction.inline.any() == (fill == "tail")  # the long tail is resampled


def test_joints_and_frames_map_onto_the_reduced_rig():
    creature, reduction = big()
    fingers = creature.extras["fingers"]
    hands = {limb.joints[-1] for limb in creature.limbs_of("arm")}
    mapped = reduction.reduce_joints(fingers)
    assert {int(reduction.keep[k]) for k in mapped} <= hands | set(fingers)
    assert set(reduction.keep[reduction.reduce_joints(list(hands))].tolist()) == hands
    frame = canonical_rig(creature.rig).frame
    scaled = reduction.canonical_frame(frame)
    points = scaled.to_canonical_points(np.concatenate([reduction.rig.heads, reduction.rig.tails]))
    size = np.ptp(points, 0).max()
    assert size == pytest.approx(1.0)


def test_more_than_256_bones_are_refused():
    creature = big_creature("biped", 1, total=MAX_JOINTS + 1)
    with pytest.raises(RigError, match=f"{MAX_JOINTS + 1} bones; Kirin handles at most {MAX_JOINTS}"):
        creature.rig.validate()
