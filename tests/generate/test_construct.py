"""Locomotion by construction on artists' skeletons: planted feet stay put, the tempo is the calibrated
one, foot controls travel with their legs, and the rig's own frame is honoured."""

from __future__ import annotations

import numpy as np
from artist_rigs import biped_with_foot_controls, ik_quadruped, quadruped_of_separate_roots

from kirin.kirin_addon.core.canonical import CanonicalFrame, canonical_rig
from kirin.kirin_addon.core.motion import joint_positions
from kirin.kirin_addon.generate.construct import construct_motion
from kirin.kirin_addon.generate.plan import plan_prompt
from kirin.kirin_addon.generate.tempo import tempo_of

FPS = 30.0


def _made(rig, prompt, frames=120, seed=0, frame=None):
    canon = canonical_rig(rig, frame or CanonicalFrame(np.eye(3), 1.0, np.zeros(3)))
    family = "quadruped" if "Root" in rig.names else "biped"
    return construct_motion(canon, rig, plan_prompt(prompt, family), frames, FPS, seed)


def _stride_hz(contact: np.ndarray) -> float:
    touchdowns = np.flatnonzero(contact[1:] & ~contact[:-1])
    return FPS / float(np.mean(np.diff(touchdowns)))


def test_quadruped_walk_plants_its_foot_controls_and_walks_at_the_calibrated_tempo():
    rig = ik_quadruped()
    made = _made(rig, "a wolf walking forward")
    positions = joint_positions(rig, made.motion)
    assert [rig.names[j][:2] for j in made.feet] == ["IK"] * 4
    feet = positions[:, made.feet]
    for leg in range(4):
        planted = made.contacts[:, leg]
        assert 0.4 < planted.mean() < 0.7
        runs = np.split(np.flatnonzero(planted), np.flatnonzero(np.diff(np.flatnonzero(planted)) > 1) + 1)
        for run in runs:  # a planted foot control does not move
            assert np.ptp(feet[run, leg], axis=0).max() < 1e-6
        assert abs(_stride_hz(planted) - tempo_of("quadruped", "walk").frequency) < 0.15
    # left and right feet of a pair alternate; the body travels forward (−Y)
    assert np.corrcoef(made.contacts[:, 0], made.contacts[:, 1])[0, 1] < -0.5 or \
        np.corrcoef(made.contacts[:, 0], made.contacts[:, 2])[0, 1] < -0.5
    pelvis = positions[:, rig.names.index("Hips")]
    assert pelvis[-1, 1] - pelvis[0, 1] < -0.5
    assert feet[..., 2].min() > -1e-6  # never below the floor


def test_the_paw_under_a_foot_control_comes_along():
    rig = ik_quadruped()
    made = _made(rig, "a wolf walking forward")
    positions = joint_positions(rig, made.motion)
    paw, control = rig.names.index("PawBack.L"), rig.names.index("IKBack.L")
    offset = np.linalg.norm(positions[:, paw] - positions[:, control], axis=1)
    assert np.allclose(offset, np.linalg.norm(rig.heads[paw] - rig.heads[control]), atol=1e-6)


def test_biped_run_has_a_flight_phase_and_variants_differ():
    rig = biped_with_foot_controls()
    one, two = _made(rig, "a goblin running", seed=0), _made(rig, "a goblin running", seed=1)
    assert one.contacts.mean() < 0.5
    assert np.any(~one.contacts.any(axis=1))  # both feet off the ground at times
    assert not np.allclose(one.motion.root_positions, two.motion.root_positions)


def test_a_rig_in_another_frame_gets_the_same_motion_in_its_own_axes():
    rig = ik_quadruped()
    turn = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # the file faces +X
    matrix = np.eye(4)
    matrix[:3, :3] = 0.01 * turn.T  # armature in centimetres-ish, turned
    user = rig.transformed(matrix)
    frame = CanonicalFrame(turn, 100.0, np.zeros(3))
    made = _made(user, "a wolf walking forward", frame=frame)
    canonical = frame.to_canonical_points(joint_positions(user, made.motion))
    reference = joint_positions(rig, _made(rig, "a wolf walking forward").motion)
    assert np.abs(canonical - reference).max() < 1e-6


def test_a_rig_standing_above_its_origin_walks_as_it_would_on_it():
    """The canonical frame need not put the soles at z = 0 (a robot's root lies below its feet): the
    creature is stood on its own lowest point, so the walk is the same walk, as high as the rig stands."""
    rig = biped_with_foot_controls()
    up = np.eye(4)
    up[2, 3] = 0.3 * rig.body_size
    raised = rig.transformed(up)
    reference = joint_positions(rig, _made(rig, "a goblin walking forward").motion)
    lifted = joint_positions(raised, _made(raised, "a goblin walking forward").motion)
    assert np.abs(lifted - up[:3, 3] - reference).max() < 1e-6 * rig.body_size


def test_a_run_that_ends_in_a_death_stops_and_goes_over_where_its_feet_stopped():
    rig = biped_with_foot_controls()
    made = _made(rig, "a goblin runs, then dies", frames=150)
    assert made.report["finale"] == "death"
    positions = joint_positions(rig, made.motion)
    assert positions[-1, :, 2].max() < 0.5 * positions[0, :, 2].max()  # lying on the ground
    feet = positions[:, made.feet]
    planted = made.contacts[1:] & made.contacts[:-1]
    moved = np.linalg.norm(np.diff(feet, axis=0), axis=-1)
    assert moved[planted].max() < 1e-3  # the stop's feet stay put into the fall: no slide at the seam
    step = np.linalg.norm(np.diff(positions, axis=0), axis=-1).max(axis=1)
    seam = 75
    assert step[seam - 2:seam + 10].max() <= step[:seam - 15].max()  # no jump at the seam


def test_a_trot_that_ends_in_a_sit_stops_and_sits_where_its_feet_stopped():
    """The issue's own example: the trot comes to a stop, the hindquarters go down and the head comes
    up, the feet stay where the stop left them (their rest legs are straighter than the solver's reach:
    the sit must still go down)."""
    rig = ik_quadruped()
    made = _made(rig, "a wolf trotting forward, then sitting down", frames=150)
    assert made.report["finale"] == "sit"
    positions = joint_positions(rig, made.motion)
    hips, head = rig.names.index("Hips"), rig.names.index("Head")
    stopped = int(round(150 * 0.5))
    drop = positions[stopped, hips, 2] - positions[-1, hips, 2]
    assert drop > 0.25 * rig.heads[hips, 2]  # sitting, not standing
    assert positions[-1, head, 2] > positions[-1, hips, 2]  # head up, hindquarters down
    feet = positions[:, made.feet]
    planted = made.contacts[1:] & made.contacts[:-1]
    moved = np.linalg.norm(np.diff(feet, axis=0), axis=-1)
    assert moved[planted].max() < 1e-3  # no slide into the sit
    assert made.contacts[-20:].all()


def test_legs_rigged_as_roots_of_their_own_walk_with_the_body():
    """Each leg a root of its own: the walk moves the leg roots with the body (they keep their place on
    it), the feet step and plant, and the body travels forward."""
    rig = quadruped_of_separate_roots()
    canon = canonical_rig(rig, CanonicalFrame(np.eye(3), 1.0, np.zeros(3)))
    made = construct_motion(canon, rig, plan_prompt("a fox walking forward", "quadruped"), 120, FPS, 0)
    positions = joint_positions(rig, made.motion)
    body = rig.names.index("Bone")
    travel = positions[-1, body, 1] - positions[0, body, 1]
    assert travel < -0.5
    for top in (4, 7, 10, 13):  # each leg's root stays where it is on the body
        offset = np.linalg.norm(positions[:, top] - positions[:, body], axis=1)
        assert np.ptp(offset) < 0.05
        assert np.ptp(positions[:, top, 1]) > 0.4  # and travels with it
    for leg in range(4):
        planted = made.contacts[:, leg]
        assert 0.3 < planted.mean() < 0.8
    assert positions[:, made.feet, 2].min() > -1e-3  # never below the floor
