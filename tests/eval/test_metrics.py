"""Motion metrics on constructed clips whose answers are known exactly."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kirin.kirin_addon.core.motion import Motion, joint_positions
from kirin.kirin_addon.core.rig import rig_from_bones
from kirin.kirin_addon.core.rotations import quat_identity
from kirin.kirin_addon.eval import metrics as M
from kirin.kirin_addon.eval.report import evaluate_motion
from kirin.kirin_addon.library.procedural import BipedSpec, biped_walk, build_biped, capsule_mesh

FPS = 30.0


def sliding_foot(speed: float, height: float = 0.0, frames: int = 40) -> np.ndarray:
    """(T,2,3): a root 1 m up standing still and a foot moving along +X at `speed` m/s."""
    positions = np.zeros((frames, 2, 3))
    positions[:, 0] = [0.0, 0.0, 1.0]
    positions[:, 1, 0] = speed * np.arange(frames) / FPS
    positions[:, 1, 2] = height
    return positions


def synthetic_gait(freq: float = 1.5, duty: float = 0.6, fps: float = 60.0, seconds: float = 4.0,
                   speed: float = 1.2, lift: float = 0.1) -> np.ndarray:
    """(T,3,3) root + two feet in antiphase walking along −Y; each foot planted for `duty` of a stride.

    Samples sit half a frame off the phase boundaries, so each stance holds exactly duty·fps/freq samples.
    """
    t = (np.arange(int(seconds * fps)) + 0.5) / fps
    stride = speed / freq
    positions = np.zeros((t.size, 3, 3))
    positions[:, 0] = np.stack([np.zeros_like(t), -speed * t, np.full_like(t, 0.9)], -1)
    for k, (x, shift) in enumerate(((0.1, 0.0), (-0.1, 0.5)), start=1):
        cycle = freq * t + shift
        n, s = np.floor(cycle), cycle - np.floor(cycle)
        swing = np.clip((s - duty) / (1 - duty), 0.0, 1.0)
        positions[:, k, 0] = x
        positions[:, k, 1] = -stride * (n + swing)
        positions[:, k, 2] = lift * np.sin(np.pi * swing)
    return positions


# ----------------------------------------------------------------------------- contacts & skating
def test_sliding_foot_skates_at_its_speed_per_frame():
    speed = 0.6
    stats = M.foot_skating(sliding_foot(speed), [1], FPS, ground=M.Ground(body_size=1.0))
    assert stats.contact_steps == 39
    assert stats.mean == pytest.approx(speed / FPS)
    assert stats.max == pytest.approx(speed / FPS)
    assert stats.mean_speed == pytest.approx(speed)
    assert stats.mean_rel == pytest.approx(speed / FPS)
    assert stats.weighted == pytest.approx(speed / FPS)  # on the ground: full weight
    assert stats.ratio == 1.0  # 0.6 m/s > 0.25 body sizes/s
    # Speed-gated contacts see no contact at all: that is why skating uses height alone.
    assert not M.foot_contacts(sliding_foot(speed), [1], FPS, ground=M.Ground(body_size=1.0)).any()


def test_skating_weight_falls_with_height():
    on_floor = M.Ground(floor=0.0, body_size=1.0)
    half = M.foot_skating(sliding_foot(0.6, height=0.015), [1], FPS, ground=on_floor)
    assert half.mean == pytest.approx(0.6 / FPS)
    assert half.weighted == pytest.approx(0.6 / FPS * (2 - 2**0.5))  # h = H/2


def test_planted_foot_does_not_skate_and_is_in_contact():
    positions = sliding_foot(0.0)
    stats = M.foot_skating(positions, [1], FPS, ground=M.Ground(body_size=1.0))
    assert stats.contact_steps == 39 and stats.mean == 0.0 and stats.max == 0.0 and stats.ratio == 0.0
    assert M.foot_contacts(positions, [1], FPS, ground=M.Ground(body_size=1.0)).all()


def test_lifted_foot_has_no_contact_and_no_skating():
    lifted = sliding_foot(0.6, height=0.5)
    stats = M.foot_skating(lifted, [1], FPS, ground=M.Ground(floor=0.0, body_size=1.0))
    assert stats.contact_steps == 0 and stats.mean == 0.0 and stats.weighted == 0.0
    # With the floor estimated from the feet, a planted second foot sets it.
    both = np.concatenate([lifted, sliding_foot(0.0)[:, 1:]], axis=1)
    contacts = M.foot_contacts(both, [1, 2], FPS, ground=M.Ground(body_size=1.0))
    assert not contacts[:, 0].any() and contacts[:, 1].all()
    assert M.foot_skating(both, [1, 2], FPS, ground=M.Ground(body_size=1.0)).mean == 0.0


def test_contact_hysteresis_and_debounce():
    frames = 30
    positions = sliding_foot(0.0, frames=frames)
    limit = 0.03
    positions[:, 1, 2] = np.where(np.arange(frames) % 2, 0.8 * limit, 1.2 * limit)  # hovers around H
    positions[0, 1, 2] = 0.8 * limit
    held = M.foot_contacts(positions, [1], FPS, ground=M.Ground(floor=0.0, body_size=1.0))
    assert held.all()  # entered below H, never above 1.5 H
    flicker = M.foot_contacts(positions, [1], FPS, ground=M.Ground(floor=0.0, body_size=1.0), release=1.0,
                              min_duration=0.0)
    assert flicker[1::2, 0].all() and not flicker[2::2, 0].any()

    hop = sliding_foot(0.0, frames=frames)
    hop[15, 1, 2] = 0.2  # a one-frame hop is flicker
    hop[3, 0, 2] = 1.0
    assert M.foot_contacts(hop, [1], FPS, ground=M.Ground(floor=0.0, body_size=1.0)).all()
    blip = sliding_foot(0.0, frames=frames)
    blip[:, 1, 2] = 0.2
    blip[15, 1, 2] = 0.0  # touching the ground for one frame is no contact
    assert not M.foot_contacts(blip, [1], FPS, ground=M.Ground(floor=0.0, body_size=1.0)).any()


# ----------------------------------------------------------------------------- penetration
def test_known_penetration_depth_and_up_axis():
    positions = np.zeros((100, 3, 3))
    positions[:, :, 2] = [0.0, 0.5, 1.0]
    positions[40:50, 0, 2] = -0.05
    stats = M.ground_penetration(positions, floor=0.0, body_size=1.0)
    assert stats.max_depth == pytest.approx(0.05)
    assert stats.mean_depth == pytest.approx(0.005)
    assert stats.frame_fraction == pytest.approx(0.1)
    assert stats.max_depth_rel == pytest.approx(0.05)
    y_up = positions[..., [0, 2, 1]]
    assert M.ground_penetration(y_up, up=[0, 1, 0], body_size=1.0) == stats
    raised = M.ground_penetration(positions, floor=-0.1, body_size=1.0)
    assert raised.max_depth == 0.0 and raised.frame_fraction == 0.0


# ----------------------------------------------------------------------------- jitter
def test_jerk_of_a_cubic_is_exact():
    t = np.arange(20) / FPS
    positions = np.zeros((20, 1, 3))
    positions[:, 0, 1] = 0.5 * t**3 + 2 * t**2 - t  # jerk 3 m/s³ everywhere
    stats = M.jitter(positions, FPS, body_size=2.0)
    assert stats.mean_jerk == pytest.approx(3.0, rel=1e-6)
    assert stats.max_jerk == pytest.approx(3.0, rel=1e-6)
    assert stats.mean_jerk_rel == pytest.approx(1.5, rel=1e-6)
    assert np.isnan(M.jitter(positions[:3], FPS, body_size=1.0).mean_jerk)


def test_jitter_of_added_noise_matches_theory():
    rng = np.random.default_rng(3)
    frames, joints, sigma = 2000, 20, 0.001
    t = np.arange(frames) / FPS
    smooth = np.zeros((frames, joints, 3))
    smooth[..., 0] = np.sin(t)[:, None] * np.linspace(0.5, 1.0, joints)
    noisy = smooth + rng.normal(scale=sigma, size=smooth.shape)
    base = M.jitter(smooth, FPS, body_size=1.0).mean_jerk
    # Δ³ of white noise has variance 20σ² per axis; |N(0, s²I₃)| has mean s·√(8/π).
    expected = np.sqrt(20) * sigma * np.sqrt(8 / np.pi) * FPS**3
    assert base < 1.0
    assert M.jitter(noisy, FPS, body_size=1.0).mean_jerk == pytest.approx(expected, rel=0.03)


# ----------------------------------------------------------------------------- bone lengths
def chain_rig():
    heads = np.array([[0, 0, 1.0], [0, 0, 1.5], [0, 0, 2.0]])
    tails = np.array([[0, 0, 1.5], [0, 0, 2.0], [0, 0, 2.4]])
    return rig_from_bones(["root", "mid", "tip"], [-1, 0, 1], heads, tails)


def test_stretched_bone_has_known_length_error():
    rig = chain_rig()
    motion = Motion.rest(rig, frames=10)
    rigid = M.bone_length_error(rig, motion)
    assert rigid.max_error < 1e-12
    positions = joint_positions(rig, motion)
    positions[4, 2] = positions[4, 1] + 1.1 * (positions[4, 2] - positions[4, 1])  # tip bone +10%
    stats = M.bone_length_error(rig, positions)
    assert stats.max_error == pytest.approx(0.1)
    assert stats.mean_error == pytest.approx(0.1 / 20)  # one of 2 bones × 10 frames
    assert stats.worst_joint == "tip"
    assert M.broken_reasons(rig, positions, bone_tolerance=0.05)[0].startswith("bone length")
    assert not M.is_broken_clip(rig, positions, bone_tolerance=0.2)


# ----------------------------------------------------------------------------- static filter
def box_clip(steps: np.ndarray) -> np.ndarray:
    """Eight corners of a unit cube, shifted along X by the cumulative `steps`."""
    corners = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], dtype=np.float64)
    shift = np.concatenate([[0.0], np.cumsum(steps)])
    out = np.repeat(corners[None], shift.size, axis=0)
    out[..., 0] += shift[:, None]
    return out


@pytest.mark.parametrize("factor, static", [(0.95, True), (1.05, False)])
def test_static_clip_at_the_displacement_edge(factor, static):
    step = factor * M.STATIC_DISPLACEMENT * np.sqrt(3)
    steps = step * np.where(np.arange(100) % 2, -1.0, 1.0)  # back and forth: the box stays ~1³
    clip = box_clip(steps)
    diagonal = np.linalg.norm(np.ptp(clip.reshape(-1, 3), axis=0))
    assert (step / diagonal < M.STATIC_DISPLACEMENT) == static  # the case is on the side it claims
    assert M.is_static_clip(clip) == static


@pytest.mark.parametrize("moving, static", [(10, True), (11, False)])
def test_static_clip_at_the_fraction_edge(moving, static):
    steps = np.zeros(100)
    steps[:moving] = 0.05 * np.where(np.arange(moving) % 2, -1.0, 1.0)
    assert M.is_static_clip(box_clip(steps)) == static
    assert M.is_static_clip(box_clip(steps), fraction=0.8)


# ----------------------------------------------------------------------------- broken filter
@pytest.fixture(scope="module")
def walk():
    spec = BipedSpec()
    rig = build_biped(spec)
    return rig, biped_walk(rig, spec, frames=120)


def test_clean_walk_is_not_broken(walk):
    rig, motion = walk
    assert M.broken_reasons(rig, motion) == []
    assert not M.is_broken_clip(rig, joint_positions(rig, motion))


def test_broken_clips(walk):
    rig, motion = walk
    rotations = motion.rotations.copy()
    rotations[10, 5] = np.nan
    nan_motion = Motion(motion.fps, motion.root_positions, rotations)
    assert any("non-finite" in r for r in M.broken_reasons(rig, nan_motion))

    teleport = motion.root_positions.copy()
    teleport[60:, 0] += 0.6 * rig.body_size  # the whole body jumps sideways
    reasons = M.broken_reasons(rig, Motion(motion.fps, teleport, motion.rotations))
    assert len(reasons) == 1 and reasons[0].startswith("teleport")

    positions = joint_positions(rig, motion)
    positions[7, 3] += [0.0, 0.0, 10 * rig.body_size]
    reasons = M.broken_reasons(rig, positions)
    assert any(r.startswith("exploding") for r in reasons) and M.is_broken_clip(rig, positions)

    heads = np.array([[0, 0, 1.0], [0, 0, 2.0]])
    flat = rig_from_bones(["a", "b"], [-1, 0], heads, np.array([[0, 0, 2.0], [0, 0, 2.0]]))
    assert any("zero-length" in r for r in M.broken_reasons(flat, Motion.rest(flat, 3)))


# ----------------------------------------------------------------------------- gait & drift
def test_gait_of_a_synthetic_walk():
    fps = 60.0
    positions = synthetic_gait(freq=1.5, duty=0.6, fps=fps)
    contacts = M.foot_contacts(positions, [1, 2], fps)
    stats = M.gait_stats(positions, [1, 2], fps, contacts, leg_length=0.9, root=0)
    assert stats.source == "contacts"
    assert stats.frequency == pytest.approx(1.5, rel=0.02)
    assert stats.period == pytest.approx(1 / 1.5, rel=0.02)
    assert stats.duty_factor == pytest.approx(0.6, rel=0.03)
    assert all(d == pytest.approx(0.6, rel=0.03) for d in stats.duty_factors)
    assert stats.stride_length == pytest.approx(0.8, rel=0.02)
    assert stats.stride_length_rel == pytest.approx(0.8 / 0.9, rel=0.02)
    # The same gait seen by its foot heights only (e.g. no contact flags) gives the same frequency.
    assert M.stride_frequency(positions[:, 1:, 2], fps) == pytest.approx(1.5, rel=0.02)


def test_root_drift_in_place_and_travelling():
    t = np.arange(91) / FPS  # three seconds
    bob = 1.0 + 0.02 * np.cos(4 * np.pi * t)
    in_place = np.stack([0.05 * np.sin(2 * np.pi * t), np.zeros_like(t), bob], -1)
    drift = M.root_drift(in_place, body_size=2.0)
    assert drift.net == pytest.approx(0.0, abs=1e-12)
    assert drift.max_excursion == pytest.approx(0.05, rel=1e-2)  # sampled near the peak
    assert drift.path_length == pytest.approx(0.6, rel=1e-2)  # 3 cycles × 4 × 0.05 m; vertical bob ignored
    travelling = in_place + np.stack([np.zeros_like(t), -1.2 * t, np.zeros_like(t)], -1)
    moved = M.root_drift(travelling, body_size=2.0)
    assert moved.net == pytest.approx(3.6, rel=1e-9)
    assert moved.net_rel == pytest.approx(1.8, rel=1e-9)
    assert moved.path_length >= moved.net


# ----------------------------------------------------------------------------- report
def test_evaluate_motion_report(walk):
    rig, motion = walk
    report = evaluate_motion(rig, motion)
    data = report.as_dict()
    json.dumps(data, allow_nan=False)
    assert data["feet"] == ["mixamorig:LeftToeBase", "mixamorig:RightToeBase"]
    assert report.gait.frequency == pytest.approx(0.9, rel=0.03)  # the walk's cadence
    assert report.drift.net == pytest.approx(1.2 * report.duration, rel=1e-6)
    assert not report.static and not report.broken
    assert report.bone_length.max_error < 1e-9

    # The same clip turned to Y-up and given as positions measures the same.
    turn = np.array([[1.0, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 0], [0, 0, 0, 1]])
    y_rig = rig.transformed(turn)
    y_positions = joint_positions(rig, motion) @ turn[:3, :3].T
    y_report = evaluate_motion(y_rig, y_positions, up=[0, 1, 0], fps=motion.fps)
    assert y_report.feet == report.feet
    for group in ("skating", "jitter", "drift", "gait"):
        for key, value in data[group].items():
            other = y_report.as_dict()[group][key]
            if isinstance(value, str):
                assert other == value
                continue
            assert other == pytest.approx(value, rel=1e-6, abs=1e-9), (group, key)

    skinned = evaluate_motion(rig, motion, mesh=capsule_mesh(rig))
    assert skinned.penetration.max_depth > report.penetration.max_depth  # capsules reach below the toes


def test_evaluate_broken_motion_does_not_raise():
    rig = chain_rig()
    rotations = quat_identity((8, 3))
    rotations[3] = np.nan
    root = np.repeat(rig.heads[:1], 8, axis=0)
    report = evaluate_motion(rig, Motion(FPS, root, rotations), feet=[2])
    assert report.broken and any("non-finite" in r for r in report.broken_reasons)
    json.dumps(report.as_dict(), allow_nan=False)
