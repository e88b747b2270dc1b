"""A death: the creature staggers, its legs buckle, it falls (a four-legged one onto its side, a
two-legged one onto its back) and lies still on the ground."""

from __future__ import annotations

import numpy as np

from ...core.creature import Creature
from ...core.rotations import quat_rotate
from .body import tail_lift
from .common import GeneratedClip, envelope, euler_q, smoothstep
from .poser import BodyPose, FootPlan, leg_rigs, solve_clip
from .segments import GaitSegment

FALL_ANGLE = 1.45  # rad: lying on the side (or back), a little short of flat, as a body with legs lies
# How long a death takes to go from standing to lying (s): the calibration rigs' authored deaths
# (median 1.04 s over the animals, dinosaurs and monsters; 0.8–1.3 s). A longer clip then lies still,
# rather than falling in slow motion.
DEATH_SECONDS = 1.04
# ... of which it stays on its feet, staggering, at least this long (s) where the clip allows.
STAGGER_SECONDS = 0.35
BUCKLE = 0.25  # leg lengths the body sinks before it goes over


def _resting_points(creature: Creature) -> np.ndarray:
    """The body's points at rest (its skin where it has one, else its joints), relative to the pelvis."""
    points = creature.mesh.vertices if creature.mesh is not None else creature.rig.heads
    return points - creature.rig.heads[creature.pelvis]


def death(creature: Creature, frames: int, fps: float, rng: np.random.Generator,
          stance: np.ndarray | None = None) -> GeneratedClip:
    """Stagger (STAGGER_SECONDS, or a quarter of DEATH_SECONDS), buckle and fall (over about half of
    DEATH_SECONDS, or of a shorter clip), lie still: the body turns rigidly over
    onto the ground, so that the lowest point of its skin rests on the floor, the legs go limp with it.
    The feet start at rest, or where `stance` (legs, 3; body frame at rest) has them."""
    legs = leg_rigs(creature)
    t = np.arange(frames) / fps
    d = max(t[-1], 1e-6)
    leg_len = creature.leg_length
    side = 1.0 if rng.uniform() < 0.5 else -1.0
    span = min(d, DEATH_SECONDS)
    t_fall = min(max(0.25 * span * rng.uniform(0.9, 1.1), STAGGER_SECONDS), 0.5 * d)
    t_down = min(t_fall + 0.55 * span, 0.95 * d)
    fall = smoothstep((t - t_fall) / (t_down - t_fall)) ** 1.5  # gathers speed as it goes over
    angle = side * FALL_ANGLE * fall
    stagger = 0.08 * np.sin(2 * np.pi * 1.5 * t) * (1.0 - envelope(t, 0.6 * t_fall, t_fall))
    biped = creature.family == "biped"
    pitch, roll = (-np.abs(angle), stagger) if biped else (np.zeros(frames), angle + stagger)
    body = euler_q(pitch, roll, np.zeros(frames))
    pelvis = creature.rig.heads[creature.pelvis]
    floor = min(float(creature.rig.heads[:, 2].min()), 0.0)
    points = _resting_points(creature)
    turned = quat_rotate(body[:, None], points[None])  # (T,P,3)
    lying = floor - turned[..., 2].min(axis=1)  # the pelvis height that lays the lowest point on the floor
    buckle = BUCKLE * leg_len * envelope(t, 0.5 * t_fall, t_fall)
    root = np.repeat(pelvis[None], frames, axis=0)
    root[:, 2] = (1.0 - fall) * (pelvis[2] - buckle) + fall * lying
    # The body goes over about its feet: the pelvis moves half the way the turn would swing them.
    feet_rest = pelvis[None]
    if legs:
        feet_rest = np.array([leg.foot_rest for leg in legs]) if stance is None else np.asarray(stance, float)
    centre = feet_rest.mean(axis=0) - pelvis
    swing = quat_rotate(body, np.repeat(centre[None], frames, axis=0)) - centre
    root[:, :2] -= 0.5 * swing[:, :2]
    pose = BodyPose(root, body)
    neck = creature.neck + ([creature.head] if creature.head >= 0 else [])
    if neck:  # the head droops, and on the ground lolls the way the body fell
        bends = np.zeros((frames, len(neck), 3))
        bends[:, :, 0] = (0.35 * envelope(t, 0.2 * t_fall, t_down))[:, None] / len(neck)
        bends[:, :, 1] = (0.4 * side * fall)[:, None] / len(neck)
        pose.neck = bends
    if creature.tail:
        count = len(creature.tail)
        bends = np.zeros((frames, count, 3))
        bends[:, :, 0] = (0.3 * tail_lift(creature) * (1.0 - fall))[:, None] / count
        pose.tail = bends
    # Feet stay planted until the fall begins, then the legs go over with the body, limp.
    contacts = np.repeat((t < t_fall)[:, None], len(legs), axis=1)
    targets = np.repeat(feet_rest[None], frames, axis=0) if legs else np.zeros((frames, 0, 3))
    if legs:
        start = int(np.searchsorted(t, t_fall))
        held = feet_rest - root[min(start, frames - 1)]
        carried = root[:, None] + quat_rotate(body[:, None], held[None])
        carried[..., 2] = np.maximum(carried[..., 2], feet_rest[None, :, 2])
        targets = np.where(contacts[..., None], targets, carried)
    zeros = np.zeros((frames, len(legs)))
    fold = np.repeat((0.3 * fall)[:, None], len(legs), axis=1)
    motion, info = solve_clip(creature, pose, FootPlan(targets, zeros, contacts, fold), fps)
    info.update(foot_targets=targets, fall_start=t_fall, down=t_down, side=side)
    return GeneratedClip(motion, "death", [GaitSegment("death", frames / fps, 0.0)],
                         0.0, "none", contacts, info)
