"""Rest-pose augmentation equals building the rig with the other rest pose and re-extracting features."""

from __future__ import annotations

import numpy as np

from kirin.kirin_addon.core.canonical import canonical_rig, procedural_frame
from kirin.kirin_addon.core.motion import forward_kinematics, joint_positions, motion_from_world_transforms
from kirin.kirin_addon.core.rig import Rig
from kirin.kirin_addon.core.rig_features import rig_features
from kirin.kirin_addon.generate.features import motion_features
from kirin.kirin_addon.library.controllers.dispatch import generate
from kirin.kirin_addon.library.families.build import build_creature
from kirin.models.data.augment import apply_rest_change, random_rest_change


def test_augmented_features_match_a_rig_built_with_that_rest():
    creature = build_creature("biped", 2)
    rig = creature.rig
    motion = generate(creature, "walk", 3, frames=30).motion
    frame = procedural_frame(rig)
    canon = canonical_rig(rig, frame)
    feats = motion_features(canon, rig, motion).features.astype(np.float64)
    geometry = rig_features(canon.rig, canon.feet).geometry
    parents = np.where(rig.parents >= 0, rig.parents, np.arange(rig.joint_count))
    change = random_rest_change(parents, rig.depth, np.random.default_rng(0), probability=0.5)
    assert np.abs(change - np.eye(3)).max() > 0.1
    new_feats, new_geometry, offsets = apply_rest_change(feats, geometry, parents, change)

    # The same world motion on a rig whose rest bones are turned by the change.
    heads = rig.heads.copy()
    for j in rig.topological_order:
        p = rig.parents[j]
        if p >= 0:
            heads[j] = heads[p] + change[p] @ (rig.heads[j] - rig.heads[p])
    rest = rig.rest.copy()
    rest[:, :3, :3] = change @ rig.rest[:, :3, :3]
    rest[:, :3, 3] = heads
    tails = heads + np.einsum("jab,jb->ja", change, rig.tails - rig.heads)
    other = Rig(list(rig.names), rig.parents.copy(), rest, tails, rig.deform.copy(), rig.connected.copy())
    world = forward_kinematics(rig, motion)
    moved = motion_from_world_transforms(other, world, motion.fps)
    assert np.abs(joint_positions(other, moved) - joint_positions(rig, motion)).max() < 1e-9
    expected = motion_features(canonical_rig(other, frame), other, moved).features
    assert np.abs(new_feats - expected).max() < 1e-4
    expected_geometry = rig_features(canonical_rig(other, frame).rig, canon.feet).geometry
    columns = [0, 1, 2, 3, 4, 5, 6, 7, 8, 16, 17]
    assert np.abs(new_geometry[:, columns] - expected_geometry[:, columns]).max() < 1e-5
    assert np.allclose(offsets, new_geometry[:, 3:6])
