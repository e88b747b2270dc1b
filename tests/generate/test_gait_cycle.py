"""The gait a video asks for, on the rig (kirin_addon/generate/gait_cycle.py): the stride frequency
honoured, the phases a fraction of a stride apart, the gait named or nearest the frequency."""

from __future__ import annotations

import numpy as np
from artist_rigs import ik_quadruped

from kirin.kirin_addon.core.canonical import CanonicalFrame, canonical_rig
from kirin.kirin_addon.core.motion import joint_positions
from kirin.kirin_addon.core.rig import Rig
from kirin.kirin_addon.generate.gait_cycle import GaitAsked, chosen_gait, gait_starts

FPS = 30.0


def _canon(rig: Rig):
    return canonical_rig(rig, CanonicalFrame(np.eye(3), 1.0, np.zeros(3)))


def _period_frames(signal: np.ndarray) -> int:
    """The first autocorrelation peak of a (T,) signal: its period in frames."""
    signal = signal - signal.mean()
    auto = np.correlate(signal, signal, mode="full")[len(signal) - 1:]
    peaks = [k for k in range(2, len(auto) - 1) if auto[k] > auto[k - 1] and auto[k] >= auto[k + 1]]
    return peaks[0]


def test_the_gait_runs_at_the_asked_stride_in_phases_an_eighth_apart() -> None:
    rig = ik_quadruped()
    starts = gait_starts(_canon(rig), rig, GaitAsked(90, FPS, 1.5, "trot"))
    assert starts is not None and starts.gait == "trot" and starts.chosen_by == "description"
    assert len(starts.motions) == 8 and all(m.frame_count == 90 for m in starts.motions)
    foot = rig.names.index(next(n for n in rig.names if n.startswith("IK")))
    heights = [joint_positions(rig, m)[:, foot, 2] for m in starts.motions]
    assert abs(_period_frames(heights[0]) - FPS / 1.5) <= 1  # 20 frames a stride
    # Phase k starts k/8 of a stride later: phase 2 is phase 0 moved on by 5 frames.
    assert np.allclose(heights[2][:-5], heights[0][5:], atol=1e-3 * rig.body_size)
    assert not np.allclose(heights[4], heights[0], atol=1e-3 * rig.body_size)


def test_the_gait_is_named_or_the_nearest_to_the_stride() -> None:
    rig = ik_quadruped()
    canon = _canon(rig)
    assert chosen_gait("quadruped", "a horse galloping", 1.0, canon) == ("gallop", "description")
    slow, fast = chosen_gait("quadruped", "", 0.8, canon), chosen_gait("quadruped", "", 2.5, canon)
    assert slow == ("walk", "frequency") and fast[0] in ("trot", "gallop") and fast[1] == "frequency"
    # Words that name no gait leave it to the frequency.
    assert chosen_gait("quadruped", "something odd", 0.8, canon) == ("walk", "frequency")


def test_a_rig_the_controllers_cannot_drive_gets_no_gait() -> None:
    names = ["root", "a", "b"]
    rest = np.repeat(np.eye(4)[None], 3, axis=0)
    rest[1, 2, 3], rest[2, 2, 3] = 1.0, 2.0
    rig = Rig(names, np.array([-1, 0, 1]), rest, rest[:, :3, 3] + [0.0, 0.0, 1.0])
    assert gait_starts(_canon(rig), rig, GaitAsked(30, FPS, 1.0)) is None


def test_the_standing_pose_hangs_a_t_posed_humanoids_arms_and_is_none_for_a_serpent() -> None:
    """Motion From Video starts from it where no gait can be cut (rest is the T-pose: an arm held out
    at a side camera can swing forward instead of down)."""
    from kirin.kirin_addon.generate.gait_cycle import standing_pose
    from kirin.kirin_addon.library.families.build import build_creature

    creature = build_creature("biped", 1, naming="mixamo")
    rig = creature.rig
    pose = standing_pose(canonical_rig(rig), rig, FPS, creature.mesh)
    assert pose is not None and pose.frame_count == 1
    shoulder, hand = rig.names.index("mixamorig1:LeftArm"), rig.names.index("mixamorig1:LeftHand")
    arm = np.linalg.norm(rig.heads[hand] - rig.heads[shoulder])
    assert abs(rig.heads[hand, 2] - rig.heads[shoulder, 2]) < 0.1 * arm  # held out at rest
    heads = joint_positions(rig, pose)[0]
    assert heads[shoulder, 2] - heads[hand, 2] > 0.7 * arm  # hanging when standing
    serpent = build_creature("serpent", 0)
    assert standing_pose(canonical_rig(serpent.rig), serpent.rig, FPS, serpent.mesh) is None
