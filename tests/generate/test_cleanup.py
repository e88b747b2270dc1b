"""Clean-up after sampling (kirin_addon.generate.cleanup): contact locking, penetration, bone lengths."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from kirin.kirin_addon.core.motion import Motion, joint_positions
from kirin.kirin_addon.core.rig import RigBuilder
from kirin.kirin_addon.core.rotations import quat_from_axis_angle, quat_multiply
from kirin.kirin_addon.eval.metrics import Ground, bone_length_error, foot_skating
from kirin.kirin_addon.generate.cleanup import CleanupOptions, clean_motion, leg_chain
from kirin.kirin_addon.library.controllers.dispatch import generate
from kirin.kirin_addon.library.families.build import build_creature

FAMILIES = ("biped", "quadruped", "spider")


@pytest.fixture(scope="module", params=FAMILIES)
def walk(request):
    """(creature, clip, feet) of a clean procedural walk: exact contacts, feet in creature.legs() order.
    Its skeleton alone: the clean-up knows joints, not skin (the controllers raise a foot whose skin
    would dip, which the clean-up's joint floors would read as off the ground)."""
    creature = dataclasses.replace(build_creature(request.param, 1), mesh=None)
    clip = generate(creature, "walk", 0, frames=90)
    feet = np.array([leg.foot for leg in creature.legs()])
    return creature, clip, feet


def perturb(creature, motion: Motion, seed: int = 0, amplitude: float = 0.06, drift: float = 0.15,
            sink: float = 0.0) -> Motion:
    """What a sampler gets wrong: smooth noise and a slow drift on every leg joint, the body sunk."""
    rng = np.random.default_rng(seed)
    count = motion.frame_count
    t = np.arange(count) / motion.fps
    rotations = motion.rotations.copy()
    for j in sorted({j for leg in creature.legs() for j in leg.joints}):
        axis = rng.normal(size=3)
        freq, phase = rng.uniform(0.5, 3.0, 3), rng.uniform(0.0, 2 * np.pi, 3)
        angle = amplitude * np.sin(2 * np.pi * freq * t[:, None] + phase).sum(1) / 1.5 + drift * t / t[-1]
        turn = quat_from_axis_angle(np.broadcast_to(axis, (count, 3)), angle)
        rotations[:, j] = quat_multiply(rotations[:, j], turn)
    root = motion.root_positions - [0.0, 0.0, sink * creature.rig.body_size]
    return Motion(motion.fps, root, rotations)


def joint_floors(rig, feet) -> np.ndarray:
    """Ground (lowest rest point) for the body; rest height for feet and what hangs below them."""
    rest = rig.heads[:, 2]
    ground = min(rest.min(), rig.tails[:, 2].min())
    below = np.zeros(rig.joint_count, dtype=bool)
    below[feet] = True
    for j in rig.topological_order:
        if rig.parents[j] >= 0:
            below[j] |= below[rig.parents[j]]
    return np.where(below, rest, ground)


# ----------------------------------------------------------------------------- procedural creatures
def test_perturbed_walk_is_locked_lifted_and_rigid(walk) -> None:
    creature, clip, feet = walk
    rig = creature.rig
    size = rig.body_size
    noisy = perturb(creature, clip.motion, sink=0.02)
    result = clean_motion(rig, noisy, clip.contacts, feet)
    positions = joint_positions(rig, result.motion)

    ground = Ground(body_size=size)
    before = foot_skating(joint_positions(rig, noisy), feet, noisy.fps, clip.contacts, ground=ground)
    after = foot_skating(positions, feet, noisy.fps, clip.contacts, ground=ground)
    assert before.mean_rel > 1e-3  # the perturbation really makes feet slide
    assert result.unreached == 0
    assert after.max_rel <= 1e-9
    assert result.skating_after.max_rel <= 1e-9
    assert result.skating_before.mean_rel == pytest.approx(before.mean_rel)
    # Planted feet stand on their floors.
    floors = np.broadcast_to(result.floors, clip.contacts.shape)
    assert np.abs(positions[:, feet, 2] - floors)[clip.contacts].max() <= 1e-9 * size
    # Nothing is in the floor (beyond the tolerance), and the report says so too.
    depth = joint_floors(rig, feet)[None] - positions[..., 2]
    assert depth.max() <= 0.002 * size
    assert result.penetration_before.max_depth_rel > 0.01 >= result.penetration_after.max_depth_rel
    # Rotations only: bone lengths exact.
    assert bone_length_error(rig, result.motion).max_error <= 1e-9
    assert all(s in ("two_bone", "fabrik") for s in result.solvers)
    json.dumps(result.summary())


def test_clean_walk_is_left_alone(walk) -> None:
    creature, clip, feet = walk
    rig = creature.rig
    result = clean_motion(rig, clip.motion, clip.contacts, feet)
    moved = np.abs(joint_positions(rig, result.motion) - joint_positions(rig, clip.motion)).max()
    assert moved <= 1e-6 * rig.body_size
    assert result.frames_adjusted == 0 and not np.any(result.root_raise)
    assert np.allclose(result.motion.root_positions, clip.motion.root_positions, rtol=0, atol=1e-12)


def test_frames_away_from_contacts_are_untouched(walk) -> None:
    creature, clip, feet = walk
    rig = creature.rig
    noisy = perturb(creature, clip.motion, seed=3)
    # Short blends, so that even a walk's short swings have frames out of every lock's reach.
    options = CleanupOptions(fix_penetration=False, blend_frames=1)
    result = clean_motion(rig, noisy, clip.contacts, feet, options)
    before, after = joint_positions(rig, noisy), joint_positions(rig, result.motion)
    change = np.linalg.norm(after - before, axis=-1)  # (T,J)
    limit = 1e-9 * rig.body_size
    legs = set()
    for column, chain in enumerate(result.chains):
        below = [j for j in range(rig.joint_count) if chain[-1] in (j, *_ancestors(rig, j))]
        joints = sorted(set(chain) | set(below))
        legs |= set(joints)
        far = result.weights[:, column] == 0
        assert far.any()
        assert change[far][:, joints].max() <= limit
    body = sorted(set(range(rig.joint_count)) - legs)
    assert change[:, body].max() <= limit  # the body never moves without a root lift


def _ancestors(rig, joint: int) -> list[int]:
    out = []
    while rig.parents[joint] >= 0:
        joint = int(rig.parents[joint])
        out.append(joint)
    return out


def test_lock_fades_in_and_out_without_pops(walk) -> None:
    creature, clip, feet = walk
    rig = creature.rig
    noisy = perturb(creature, clip.motion, seed=5, drift=0.0)
    sampled = joint_positions(rig, noisy)[:, feet]

    def feet_after(blend: int):
        options = CleanupOptions(fix_penetration=False, blend_frames=blend)
        result = clean_motion(rig, noisy, clip.contacts, feet, options)
        return result, joint_positions(rig, result.motion)[:, feet]

    def largest(values: np.ndarray, order: int) -> float:
        return float(np.linalg.norm(np.diff(values, order, axis=0), axis=-1).max())

    (hard, popped), (result, smooth) = feet_after(0), feet_after(3)
    # Fading the lock in and out halves the largest per-frame change of the correction, and the
    # cleaned feet accelerate no harder than the sampled ones did.
    assert largest(smooth - sampled, 1) <= 0.75 * largest(popped - sampled, 1)
    assert largest(smooth, 2) <= 1.1 * largest(sampled, 2)
    # After a run the weight ramps down 1 → 0.84 → 0.5 → 0.16 → 0 (where the swing is long enough).
    for column in range(feet.size):
        contact = clip.contacts[:, column]
        for end in np.flatnonzero(contact[:-1] & ~contact[1:]):
            if end + 8 <= contact.size and not contact[end + 1:end + 8].any():
                assert np.allclose(result.weights[end:end + 5, column], [1.0, 0.84375, 0.5, 0.15625, 0.0])
    assert set(np.unique(hard.weights)) <= {0.0, 1.0}


def test_spider_with_detected_contacts_and_default_feet() -> None:
    creature = build_creature("spider", 2)
    rig = creature.rig
    clip = generate(creature, "walk", 1, frames=60)
    noisy = perturb(creature, clip.motion, seed=1, amplitude=0.03, drift=0.05, sink=0.01)
    result = clean_motion(rig, noisy)
    assert set(result.feet.tolist()) >= {leg.foot for leg in creature.legs()}
    assert result.contacts.shape == (60, result.feet.size) and result.contacts.any()
    assert result.skating_after.mean <= 0.05 * result.skating_before.mean
    assert bone_length_error(rig, result.motion).max_error <= 1e-9
    assert [len(c) - 1 for c in result.chains if c] and all(2 <= len(c) - 1 <= 6 for c in result.chains if c)


def test_out_of_reach_contacts_are_clamped_and_counted() -> None:
    creature = build_creature("quadruped", 1)
    rig = creature.rig
    clip = generate(creature, "walk", 0, frames=30)
    feet = np.array([leg.foot for leg in creature.legs()])
    lifted = Motion(clip.motion.fps, clip.motion.root_positions + [0.0, 0.0, 0.5 * creature.leg_length],
                    clip.motion.rotations)
    result = clean_motion(rig, lifted, clip.contacts, feet)
    assert result.unreached > 0 and any("reach" in n for n in result.notes)
    before = joint_positions(rig, lifted)[:, feet, 2][clip.contacts]
    after = joint_positions(rig, result.motion)[:, feet, 2][clip.contacts]
    assert np.all(after <= before + 1e-9) and after.mean() < before.mean()  # as near as the legs go
    assert bone_length_error(rig, result.motion).max_error <= 1e-9


# ----------------------------------------------------------------------------- hand-built rig
def _stilt_rig():
    """Two 2-bone legs under a pelvis, a separate prop root, random bone rolls."""
    b = RigBuilder()
    pelvis = b.add("pelvis", None, [0, 0, 1.0], [0, -0.2, 1.0])
    for side, x in (("L", 0.15), ("R", -0.15)):
        thigh = b.add(f"thigh.{side}", pelvis, [x, 0, 1.0], [x, -0.05, 0.52])
        shin = b.add(f"shin.{side}", thigh, [x, -0.05, 0.52], [x, 0, 0.05])
        b.add(f"foot.{side}", shin, [x, 0, 0.05], [x, -0.15, 0.0])
    b.add("prop", None, [1.0, 0, 0], [1.0, 0, 0.3])
    return b.build(np.random.default_rng(7).uniform(-np.pi, np.pi, len(b.names)))


def test_two_bone_legs_several_roots_and_translations() -> None:
    rig = _stilt_rig()
    feet = np.array([rig.index("foot.L"), rig.index("foot.R")])
    assert [rig.names[j] for j in leg_chain(rig, feet[0])] == ["thigh.L", "shin.L", "foot.L"]
    count = 40
    t = np.linspace(0.0, 1.0, count)
    rotations = np.tile(np.array([1.0, 0, 0, 0]), (count, rig.joint_count, 1))
    for j, phase in ((rig.index("thigh.L"), 0.0), (rig.index("thigh.R"), 1.0)):
        rotations[:, j] = quat_from_axis_angle(np.array([1.0, 0.3, 0.0]), 0.15 * np.sin(6 * t + phase))
    translations = np.zeros((count, rig.joint_count, 3))
    translations[:, rig.index("prop"), 1] = 0.1  # an authored offset elsewhere must survive
    root = np.tile(rig.heads[rig.main_root], (count, 1)) - [0, 0, 0.03]
    motion = Motion(30.0, root, rotations, translations)
    contacts = np.ones((count, 2), dtype=bool)
    result = clean_motion(rig, motion, contacts.astype(float), feet)  # probabilities are thresholded
    assert result.solvers == ["two_bone", "two_bone"]
    positions = joint_positions(rig, result.motion)
    assert np.ptp(positions[:, feet], axis=0).max() <= 1e-9  # planted for the whole clip
    assert np.allclose(positions[:, feet, 2], rig.heads[feet, 2], atol=1e-9)
    assert np.array_equal(result.motion.translations, translations)
    assert np.allclose(positions[:, rig.index("prop")], joint_positions(rig, motion)[:, rig.index("prop")])
    assert bone_length_error(rig, result.motion).max_error <= 1e-9
    # Knees keep bending the way they did (forwards, −Y) rather than flipping.
    knees = positions[:, [rig.index("shin.L"), rig.index("shin.R")]]
    assert np.all(knees[..., 1] < 0.5 * (positions[:, feet, 1] + positions[:, [1, 4], 1]))


def test_bad_input_is_refused_clearly() -> None:
    rig = _stilt_rig()
    feet = np.array([rig.index("foot.L"), rig.index("foot.R")])
    motion = Motion.rest(rig, frames=10)
    with pytest.raises(ValueError, match="contacts must be"):
        clean_motion(rig, motion, np.ones((9, 2), dtype=bool), feet)
    with pytest.raises(ValueError, match="contacts must be"):
        clean_motion(rig, motion, np.ones((10, 3), dtype=bool), feet)
    with pytest.raises(ValueError, match="out of range"):
        clean_motion(rig, motion, None, [0, 99])
    with pytest.raises(ValueError, match="repeat"):
        clean_motion(rig, motion, None, [feet[0], feet[0]])
    with pytest.raises(ValueError, match="blend_frames"):
        clean_motion(rig, motion, None, feet, CleanupOptions(blend_frames=-1))
    short = Motion(30.0, motion.root_positions, motion.rotations[:, :-1])
    with pytest.raises(ValueError, match="joints"):
        clean_motion(rig, short, None, feet)


# ----------------------------------------------------------------------------- doubtful contacts
def test_a_label_under_a_striding_foot_is_not_locked(walk) -> None:
    """A sampler that says "planted" all the time (v0's contact channel did) must not pin the feet
    for whole strides: with `confirm`, only frames where the foot is also low and slow are locked,
    and `max_lock` leaves alone a run whose lock would drag the foot far."""
    creature, clip, feet = walk
    rig = creature.rig
    always = np.ones_like(clip.contacts)
    blind = clean_motion(rig, clip.motion, always, feet)
    assert blind.contacts.all()
    dragged = np.abs(joint_positions(rig, blind.motion) - joint_positions(rig, clip.motion)).max()
    assert dragged > 0.1 * rig.body_size  # what the doubt is for: the legs were pulled far

    confirmed = clean_motion(rig, clip.motion, always, feet, CleanupOptions(confirm=True))
    # Swing frames of the clean walk are neither low nor slow (but near lift-off and touch-down):
    # most are not contacts any more.
    assert confirmed.contacts[~clip.contacts].mean() < 0.3
    assert confirmed.contacts[clip.contacts].mean() > 0.8
    moved = np.abs(joint_positions(rig, confirmed.motion) - joint_positions(rig, clip.motion)).max()
    # (2.2 % on the spider, whose sprawled feet lift in proportion to their legs' length since issue 31)
    assert moved < 0.025 * rig.body_size

    limited = clean_motion(rig, clip.motion, always, feet, CleanupOptions(max_lock=0.3))
    assert not limited.contacts.any()  # every whole-clip run would move its foot a stride or more
    assert any("left as sampled" in note for note in limited.notes)
    assert np.abs(joint_positions(rig, limited.motion) - joint_positions(rig, clip.motion)).max() < 1e-6


def test_plausible_contacts_keeps_small_slips_and_drops_far_locks() -> None:
    from kirin.kirin_addon.generate.cleanup import plausible_contacts

    frames = 20
    contacts = np.zeros((frames, 2), dtype=bool)
    contacts[2:8], contacts[10:18] = True, True  # foot 0: a short run and a long one
    feet = np.zeros((frames, 2, 3))
    feet[:, 0, 0] = np.where(np.arange(frames) < 10, 0.001 * np.arange(frames), 0.1 * np.arange(frames))
    feet[:, 1, 2] = 0.5  # foot 1 floats half a metre up during its runs
    kept, dropped = plausible_contacts(contacts, feet, np.zeros(2), np.array([0.2, 0.2]))
    assert kept[2:8, 0].all() and not kept[10:18, 0].any()  # the slip is kept, the slide is not
    assert not kept[:, 1].any() and dropped == 3
