"""The broken-clip classes on synthetic clips that trip each one and on clips that must not (numpy only).

The sound clips are the controllers' own walks, runs and idles on procedural creatures; each broken one
is that walk (or the rest pose) spoiled in one way: held still, slid, lifted, lowered, shot off,
stretched."""

from __future__ import annotations

import numpy as np
import pytest

from kirin.kirin_addon.core import rotations as rot
from kirin.kirin_addon.core.motion import Motion, joint_positions
from kirin.kirin_addon.core.skinning import linear_blend_skinning, skin_matrices
from kirin.kirin_addon.eval.broken import (
    BrokenLimits,
    ClipShape,
    LimbPair,
    classify,
    describe,
    exploded,
    floating,
    frozen,
    laid_still,
    measures,
    rest_posed,
    sinking,
    spread_angles,
)
from kirin.kirin_addon.library.controllers.dispatch import generate
from kirin.kirin_addon.library.families.build import build_creature

FPS = 30.0


@pytest.fixture(scope="module")
def biped():
    return build_creature("biped", 1)


@pytest.fixture(scope="module")
def dog():
    return build_creature("quadruped", 3)


def clip_of(creature, motion: Motion, legged: bool = True, skin: bool = False, **changes) -> ClipShape:
    """The clip of a motion on a procedural creature (feet at z = 0 at rest), in its own units."""
    rig = creature.rig
    positions = joint_positions(rig, motion)
    feet = np.array([limb.foot for limb in creature.legs()])
    vertices = None
    if skin:
        from kirin.kirin_addon.core.motion import forward_kinematics

        mesh = creature.mesh
        vertices = linear_blend_skinning(mesh.vertices, mesh.joint_indices, mesh.joint_weights,
                                         skin_matrices(rig.rest, forward_kinematics(rig, motion)))
    floor = float(rig.heads[:, 2].min()) if vertices is None else float(creature.mesh.vertices[:, 2].min())
    soles = positions[:, feet].transpose(1, 0, 2)
    soles[..., 2] -= rig.heads[feet, 2][:, None]  # each foot on the floor where it stands at rest
    shape = dict(positions=positions, parents=rig.parents, fps=motion.fps, body_size=rig.body_size,
                 floor=floor, feet=soles + [0.0, 0.0, floor], legged=legged, vertices=vertices,
                 names=tuple(rig.names))
    shape.update(changes)
    return ClipShape(**shape)


def walk(creature, action: str = "walk", frames: int = 90) -> Motion:
    return generate(creature, action, 2, frames=frames, fps=FPS).motion


def moved(motion: Motion, offset) -> Motion:
    """The motion carried by `offset` ((3,) or (T,3)) added to the root."""
    root = motion.root_positions + np.asarray(offset)
    return Motion(motion.fps, root, motion.rotations, motion.translations)


# ----------------------------------------------------------------------------- sound clips
@pytest.mark.parametrize("family, action", [("biped", "walk"), ("biped", "run"), ("quadruped", "walk"),
                                            ("quadruped", "gallop"), ("quadruped", "trot")])
def test_the_controllers_gaits_are_not_broken(biped, dog, family, action):
    creature = biped if family == "biped" else dog
    assert classify(clip_of(creature, walk(creature, action), skin=True)) == []


def test_an_idle_that_only_breathes_is_not_frozen_when_asked_to_stand(biped):
    idle = generate(biped, "idle", 1, frames=90, fps=FPS).motion
    assert frozen(clip_of(biped, idle, legged=False, still=True)) is None


# ----------------------------------------------------------------------------- frozen
def test_a_held_rest_pose_is_frozen_standing_or_sliding_or_turning(biped):
    rest = Motion.rest(biped.rig, 60, FPS)
    found = frozen(clip_of(biped, rest, legged=False))
    assert found is not None and found.kind == "frozen" and "nothing moved" in found.message
    assert "it stands" in found.message and found.value < 1e-9
    slide = moved(rest, np.linspace(0, 1, 60)[:, None] * [0.0, -2.0 * biped.rig.body_size, 0.0])
    found = frozen(clip_of(biped, slide, legged=False))
    assert found is not None and "slides 2.0 body sizes" in found.message
    # Turning on the spot (the whole body about the vertical, rigidly) moves no limb either.
    turn = rot.quat_about(np.array([0.0, 0.0, 1.0]), np.linspace(0, np.pi, 60))
    root = biped.rig.main_root
    rotations = rest.rotations.copy()
    rotations[:, root] = rot.quat_multiply(turn, rotations[:, root])
    assert frozen(clip_of(biped, Motion(FPS, rest.root_positions, rotations), legged=False)) is not None
    # A clip asked to stand still may move very little, but not nothing at all.
    assert frozen(clip_of(biped, rest, legged=False, still=True)) is not None


def test_a_walk_whose_legs_never_step_is_frozen_though_the_body_moves(biped):
    motion = walk(biped)
    clip = clip_of(biped, motion)
    body = clip.positions.mean(axis=1)
    stuck = clip.feet[:, :1] - body[:1][None] + body[None]  # the feet carried with the body
    found = frozen(clip_of(biped, motion, feet=stuck))
    assert found is not None and "legs froze" in found.message
    assert frozen(clip) is None
    assert frozen(clip_of(biped, motion, legged=False, feet=stuck)) is None  # not a walk: legs may rest


# ----------------------------------------------------------------------------- exploded
def test_a_body_that_shoots_off_has_exploded(biped):
    motion = walk(biped)
    size = biped.rig.body_size
    shot = moved(motion, np.arange(90)[:, None] * [0.0, -30.0 * size / FPS, 0.0])  # 30 body sizes/s
    found = exploded(clip_of(biped, shot))
    assert found is not None and found.kind == "exploded" and 29 < found.value < 32
    assert f"shoots off at {found.value:.0f} body sizes a second" in found.message
    quick = moved(motion, np.arange(90)[:, None] * [0.0, -8.0 * size / FPS, 0.0])  # fast, but a run
    assert exploded(clip_of(biped, quick)) is None


def test_stretched_bones_and_flying_parts_have_exploded_and_free_joints_may_move(biped):
    clip = clip_of(biped, walk(biped))
    child = int(np.flatnonzero(biped.rig.parents >= 0)[5])
    parent = int(biped.rig.parents[child])

    def stretched(share: float) -> np.ndarray:
        positions = clip.positions.copy()
        bone = positions[:, child] - positions[:, parent]
        positions[45:, child] += share * bone[45:]  # the bone grows half-way through the clip
        return positions

    found = exploded(clip_of(biped, walk(biped), positions=stretched(0.12)))
    assert found is not None and biped.rig.names[child] in found.message and "12 %" in found.message
    assert exploded(clip_of(biped, walk(biped), positions=stretched(0.02))) is None
    assert exploded(clip_of(biped, walk(biped), positions=stretched(0.12), free=(child,))) is None
    flung = clip.positions.copy()
    flung[40, child] += [6.0 * biped.rig.body_size, 0.0, 0.0]
    found = exploded(clip_of(biped, walk(biped), positions=flung))
    assert found is not None and "exploded" in found.message
    nan = clip.positions.copy()
    nan[3, 2] = np.nan
    assert exploded(clip_of(biped, walk(biped), positions=nan)) is not None


# ----------------------------------------------------------------------------- floating
def test_a_walk_in_the_air_floats_and_a_flight_does_not(dog):
    motion = walk(dog)
    size = dog.rig.body_size
    lifted = moved(motion, [0.0, 0.0, 0.2 * size])
    found = floating(clip_of(dog, lifted))
    assert found is not None and found.kind == "floating" and found.value < 0.05
    assert "planted 0 % of the time" in found.message and "above the floor" in found.message
    assert floating(clip_of(dog, lifted, legged=False)) is None  # a flight need not plant
    assert floating(clip_of(dog, motion)) is None
    run = clip_of(dog, walk(dog, "gallop"))  # a gallop's flight phase is not floating
    assert floating(run) is None


# ----------------------------------------------------------------------------- sinking
def test_a_body_through_the_floor_sinks_and_a_toe_dipping_at_push_off_does_not(dog):
    motion = walk(dog)
    size = dog.rig.body_size
    found = sinking(clip_of(dog, moved(motion, [0.0, 0.0, -0.05 * size]), skin=True))
    assert found is not None and found.kind == "sinking" and "mesh goes" in found.message
    assert 0.04 < found.value < 0.07
    assert sinking(clip_of(dog, moved(motion, [0.0, 0.0, -0.01 * size]), skin=True)) is None
    dips = np.zeros((90, 3))
    dips[::15, 2] = -0.05 * size  # a frame in fifteen: 7 % of the clip
    assert sinking(clip_of(dog, moved(motion, dips), skin=True)) is None
    assert sinking(clip_of(dog, moved(motion, [0.0, 0.0, -0.05 * size]))) is not None  # joints alone
    # A swim or a flight has no floor: the same clip, said to have none, does not sink.
    assert sinking(clip_of(dog, moved(motion, [0.0, 0.0, -0.05 * size]), skin=True, floor=None)) is None


def test_measures_are_the_numbers_behind_the_classes(dog):
    motion = walk(dog)
    sound = measures(clip_of(dog, motion, skin=True))
    assert sound["moves"] > 0.05 and 0 < sound["speed"] < 5 and sound["reach"] < 1 and sound["stretch"] < 1e-6
    assert 0.3 < sound["planted"] < 0.8 and sound["depth"] < 0.02
    lowered = measures(clip_of(dog, moved(motion, [0.0, 0.0, -0.05 * dog.rig.body_size]), skin=True))
    assert 0.04 < lowered["depth"] < 0.07
    assert measures(clip_of(dog, motion, legged=False))["planted"] is None


def test_every_class_is_found_and_described(biped):
    rest = Motion.rest(biped.rig, 60, FPS)
    sunk = moved(rest, [0.0, 0.0, -0.1 * biped.rig.body_size])
    found = classify(clip_of(biped, sunk))
    assert [f.kind for f in found] == ["frozen", "sinking"]
    text = describe(found)
    assert text.startswith("The clip froze") and "sinks through the floor" in text and text.endswith(".")
    assert describe([]) == "nothing is broken"


def test_limits_are_the_thresholds(dog):
    lifted = moved(walk(dog), [0.0, 0.0, 0.2 * dog.rig.body_size])
    assert floating(clip_of(dog, lifted), BrokenLimits(planted=0.0)) is None


# ----------------------------------------------------------------------------- rest-posed
def test_spread_angles_read_hanging_and_t_posed_arms():
    # Shoulders at x = ±0.2; hands hanging below them, or straight out sideways (T), or at 45° (A).
    def arms(hand_left, hand_right) -> np.ndarray:
        return np.array([[[0.2, 0, 1.4], [-0.2, 0, 1.4], hand_left, hand_right]] * 5, dtype=float)

    pair = LimbPair("arms", (0, 2), (1, 3))
    hanging = spread_angles(arms([0.25, 0, 0.8], [-0.25, 0, 0.8]), pair)
    t_pose = spread_angles(arms([0.8, 0, 1.4], [-0.8, 0, 1.4]), pair)
    a_pose = spread_angles(arms([0.6, 0, 1.0], [-0.6, 0, 1.0]), pair)
    assert np.all(hanging < 6) and np.allclose(t_pose, 90) and np.allclose(a_pose, 45)
    assert np.allclose(spread_angles(arms([0.2, 0.6, 1.4], [-0.2, 0.6, 1.4]), pair), 0)  # folded back
    found = rest_posed(t_pose, np.concatenate([hanging, a_pose * 0.5]), "arms", rest=t_pose[0])
    assert found is not None and found.kind == "rest_posed" and "90° out" in found.message
    assert "(as the rest pose holds it)" in found.message and "own clips hold it 5–22°" in found.message
    found = rest_posed(t_pose, np.concatenate([hanging, a_pose * 0.5]), "arms", rest=hanging[0])
    assert found is not None and "rest pose" not in found.message  # held out, but not as the rest holds it
    assert rest_posed(hanging, np.concatenate([hanging, a_pose]), "arms") is None
    assert rest_posed(t_pose, t_pose, "wings") is None  # the rig's own clips spread them too


def test_laid_still_takes_out_rigid_motion():
    rng = np.random.default_rng(0)
    pose = rng.normal(size=(12, 3))
    angles = np.linspace(0, 2.0, 20)
    turns = rot.rotvec_to_matrix(np.stack([0.3 * angles, angles, 0 * angles], 1))
    frames = np.einsum("tij,pj->tpi", turns, pose) + rng.normal(size=(20, 1, 3))
    assert np.abs(laid_still(frames) - frames[:1]).max() < 1e-9
