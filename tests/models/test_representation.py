"""The motion model's features: exact inverse, independent of rig axes, scale, position and heading."""

from __future__ import annotations

import numpy as np
import pytest

from kirin.kirin_addon.core.canonical import canonical_rig, procedural_frame
from kirin.kirin_addon.core.motion import Motion, joint_positions
from kirin.kirin_addon.core.rotations import matrix_to_quat, quat_multiply
from kirin.kirin_addon.generate.features import (
    CONTACT,
    features_to_motion,
    motion_features,
    positions_from_features,
)
from kirin.kirin_addon.library.controllers.dispatch import generate
from kirin.kirin_addon.library.families.build import build_creature

Y_UP_CM = np.array([[100.0, 0, 0, 5], [0, 0, 100.0, 2], [0, -100.0, 0, 1], [0, 0, 0, 1]])


def _clip(family: str, action: str):
    creature = build_creature(family, 3)
    return creature, generate(creature, action, 1, frames=60)


def _moved(rig, motion, matrix):
    """The same clip on the rig under a similarity transform (a Y-up, centimetre armature)."""
    moved_rig = rig.transformed(matrix)
    rotation = matrix[:3, :3] / np.cbrt(np.linalg.det(matrix[:3, :3]))
    return (
        moved_rig,
        Motion(motion.fps, motion.root_positions @ matrix[:3, :3].T + matrix[:3, 3], motion.rotations),
        rotation,
    )


@pytest.mark.parametrize(
    "family,action", [("quadruped", "turn"), ("biped", "walk"), ("spider", "walk"), ("serpent", "slither")]
)
def test_features_invert_exactly_on_any_armature(family, action):
    creature, clip = _clip(family, action)
    rig, motion, _ = _moved(creature.rig, clip.motion, Y_UP_CM)
    canon = canonical_rig(rig)
    feats = motion_features(canon, rig, motion)
    back = features_to_motion(
        canon, rig, feats.features.astype(np.float64), motion.fps, feats.start_yaw, feats.start_ground
    )
    error = np.abs(joint_positions(rig, back) - joint_positions(rig, motion)).max()
    assert error < 1e-6 * rig.body_size
    # Positions straight from the features (start at yaw 0 on the origin) agree with FK once the
    # clip's start heading and ground point are taken out.
    direct = positions_from_features(feats.features, canon.rig.main_root, motion.fps)
    fk = canon.frame.to_canonical_points(joint_positions(rig, motion))
    fk[..., :2] -= feats.start_ground
    c, s = np.cos(-feats.start_yaw), np.sin(-feats.start_yaw)
    fk = fk @ np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]).T
    assert np.abs(direct - fk).max() < 1e-4


def test_features_ignore_scale_axes_start_position_and_heading():
    creature, clip = _clip("quadruped", "walk")
    base = motion_features(
        canonical_rig(creature.rig, procedural_frame(creature.rig)), creature.rig, clip.motion
    )
    # Turn the whole clip 70° about up and shift it: the same features.
    c, s = np.cos(1.2), np.sin(1.2)
    turn = np.array([[c, -s, 0, 3], [s, c, 0, -2], [0, 0, 1, 0], [0, 0, 0, 1.0]])
    root = creature.rig.main_root
    rest = creature.rig.rest[root, :3, :3]
    q = matrix_to_quat(rest.T @ turn[:3, :3] @ rest)  # a world turn, seen in the root's rest frame
    rotations = clip.motion.rotations.copy()
    rotations[:, root] = quat_multiply(np.broadcast_to(q, rotations[:, root].shape), rotations[:, root])
    pivot = creature.rig.heads[root]
    positions = (clip.motion.root_positions - pivot) @ turn[:3, :3].T + pivot + turn[:3, 3]
    turned = Motion(clip.motion.fps, positions, rotations)
    other = motion_features(canonical_rig(creature.rig, procedural_frame(creature.rig)), creature.rig, turned)
    assert np.abs(other.features - base.features).max() < 1e-4
    assert abs(other.start_yaw - base.start_yaw - 1.2) < 1e-6
    # The Y-up centimetre copy, detected automatically, matches too.
    rig, motion, _ = _moved(creature.rig, clip.motion, Y_UP_CM)
    detected = motion_features(canonical_rig(rig), rig, motion)
    assert np.abs(detected.features - base.features).max() < 1e-3


def test_contact_channel_follows_the_planted_feet():
    creature, clip = _clip("quadruped", "walk")
    canon = canonical_rig(creature.rig, procedural_frame(creature.rig))
    feats = motion_features(canon, creature.rig, clip.motion).features
    feet = [leg.foot for leg in creature.legs()]
    agree = np.mean((feats[:, feet, CONTACT] > 0.5) == clip.contacts)
    assert agree > 0.85
    others = np.setdiff1d(np.arange(creature.rig.joint_count), canon.feet)
    assert np.all(feats[:, others, CONTACT] == 0)
