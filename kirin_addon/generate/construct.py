"""Motion made by construction on any rig: the gait (and idle, jump) controllers drive the rig's own legs.

The rig's roles (rig_roles.py) make it a `Creature` the controllers know: legs solved by IK onto
planted footholds, swing arcs, body bob, spine, neck and tail bending with the gait. What the
controllers do not drive comes along: foot controls and pole targets outside the body follow the
joint they belong to, ears and jaws keep their rest pose on the head. The motion is made in metres
(the controllers' gaits are set by the Froude number) on the rig in its canonical frame, then
brought to the rig's own armature space, joint for joint, with whatever translations the
followers need.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.canonical import CanonicalRig
from ..core.creature import Creature, Limb
from ..core.motion import Motion, forward_kinematics, motion_from_world_transforms
from ..core.rig import Rig
from ..core.rotations import matrix_to_quat, quat_slerp, quat_to_matrix
from ..core.skinning import SkinnedMesh
from ..library.controllers.common import GeneratedClip, Travel, smoothstep
from ..library.controllers.dispatch import generate as controller_clip
from ..library.controllers.segments import GaitSegment
from .plan import MotionPlan
from .rig_roles import RigRoles, detect_roles, followers_attached, planting_joints, wing_like
from .rig_shape import RigShape, rig_shape

# How long (s) a finale blends in from the stop before it.
SEAM_SECONDS = 0.3
# Metres per body size the controllers are run at. Artists' files say nothing usable (the same
# Quaternius husky is 5 m in one export, the Khronos fox 108 m in another), so the size is the family's.
# Reach, lift and bob are in leg lengths; the tempo is calibrated in Hz (tempo.py, docs/tempo.md), so
# the size only sets the Froude speeds of gaits that have no calibrated tempo.
BODY_METRES = {"quadruped": 1.6, "biped": 1.7, "hexapod": 0.5, "spider": 0.5}


@dataclass
class ConstructedMotion:
    motion: Motion  # on the rig given, its own armature space
    contacts: np.ndarray  # (T,L) planted feet, legs in roles.legs order
    feet: list[int]  # per leg, the rig joint that plants (a tip's foot control where there is one)
    report: dict = field(default_factory=dict)


def rest_floor(rig: Rig, mesh: SkinnedMesh | None = None) -> float:
    """Height of the floor a rig stands on at rest: its lowest point (its skin, else its joints' heads;
    not the bones' tails, which leaf bones point anywhere). The canonical frame need not put it at
    z = 0: a robot's root may lie well below its soles."""
    lowest = float(rig.heads[:, 2].min())
    if mesh is not None and mesh.vertex_count:
        lowest = min(lowest, float(mesh.vertices[:, 2].min()))
    return lowest


def creature_of(roles: RigRoles, metres: float, mesh: SkinnedMesh | None = None) -> Creature:
    """The rig as the controllers' creature, in metres, standing on z = 0 as creatures do (its skin too,
    where it has one: canonical frame; `rest_floor` is the height it was moved down by)."""
    floor = rest_floor(roles.rig, mesh)
    placed = np.diag([metres, metres, metres, 1.0])
    placed[2, 3] = -floor * metres
    rig = followers_attached(roles).transformed(placed)
    if mesh is not None:
        vertices = mesh.vertices @ placed[:3, :3].T + placed[:3, 3]
        mesh = SkinnedMesh(vertices, mesh.triangles, mesh.joint_indices, mesh.joint_weights)
    limbs = [Limb(list(leg.chain), leg.side, "leg", leg.position, leg.foot, leg.toe) for leg in roles.legs]
    limbs += [Limb(list(arm), 1 if rig.heads[arm[-1], 0] > 0 else -1, kind)
              for arm, kind in zip(roles.arms, arm_kinds(rig, roles, mesh), strict=True)]
    return Creature(roles.family, "", rig, mesh, roles.pelvis, list(roles.spine), list(roles.neck),
                    roles.head, -1, list(roles.tail), limbs)


def arm_kinds(rig: Rig, roles: RigRoles, mesh: SkinnedMesh | None) -> list[str]:
    """"arm" or "wing" for each of the roles' arms on `rig` (the working rig, in the frame and units of
    `mesh`): a bird's wings are found where a biped's arms are, and fold to the body where arms hang."""
    leg = float(np.mean([np.linalg.norm(rig.heads[limb.chain[0]] - rig.heads[limb.foot])
                         for limb in roles.legs]))
    dominant = None
    if mesh is not None and mesh.vertex_count:
        dominant = mesh.dominant_joints()
    vertices = None if dominant is None else mesh.vertices
    wings = [wing_like(rig, arm, leg, vertices, dominant) for arm in roles.arms]
    # A pair of wings, or none: one flat arm is an arm holding a shield or a blade (the monsters').
    return ["wing" if all(wings) else "arm" for _ in roles.arms]


def ground_frames(rig: Rig, pelvis: int, pose: np.ndarray) -> np.ndarray:
    """(T,4,4) the body's frame on the ground: the pelvis' heading and its path over the floor, no bob,
    pitch or roll (what a floor-level root bone and the pole targets travel with); identity at rest."""
    rest = rig.heads[pelvis]
    delta = pose[:, pelvis, :3, :3] @ rig.rest[pelvis, :3, :3].T
    forward = delta @ np.array([0.0, -1.0, 0.0])
    yaw = np.arctan2(forward[:, 0], -forward[:, 1])
    c, s = np.cos(yaw), np.sin(yaw)
    frames = np.repeat(np.eye(4)[None], len(pose), axis=0)
    frames[:, 0, 0], frames[:, 0, 1], frames[:, 1, 0], frames[:, 1, 1] = c, -s, s, c
    turned = np.einsum("tij,j->ti", frames[:, :3, :3], rest * np.array([1.0, 1.0, 0.0]))
    frames[:, :2, 3] = pose[:, pelvis, :2, 3] - turned[:, :2]
    return frames


def _followed_poses(roles: RigRoles, pose: np.ndarray) -> np.ndarray:
    """(T,J,4,4) canonical poses of the user's joints: the controllers' for the body; the joints the body
    hangs from (a floor-level root) and what follows no body joint (pole targets) on the ground frame;
    each other branch outside the body carried rigidly by the joint it follows."""
    rig = roles.rig
    out = pose[:, :roles.joint_count].copy()
    ground = ground_frames(rig, roles.pelvis, pose)
    above = roles.above_pelvis if not rig.connected[roles.pelvis] else []
    for j in above:
        out[:, j] = ground @ rig.rest[j][None]
    for top, anchor in roles.followers.items():
        carry = ground if anchor < 0 else pose[:, anchor] @ np.linalg.inv(rig.rest[anchor])[None]
        for j in np.flatnonzero(rig.subtree(top)[:roles.joint_count]):
            out[:, j] = carry @ rig.rest[j][None]
    return out


def _to_armature(canon: CanonicalRig, poses: np.ndarray) -> np.ndarray:
    """Canonical pose matrices (…,4,4) in the rig's armature space."""
    out = np.empty_like(poses)
    out[..., :3, :3] = canon.frame.rotation.T @ poses[..., :3, :3]
    out[..., :3, 3] = canon.frame.from_canonical_points(poses[..., :3, 3])
    out[..., 3, :] = (0.0, 0.0, 0.0, 1.0)
    return out


def _only_followers_move(roles: RigRoles, motion: Motion) -> Motion:
    """The motion with translations on the follower branches' tops alone: every other joint is where its
    parent's rotation puts it (what is left there is rounding between the rig's two copies of its rest;
    Blender refuses locations on connected bones)."""
    if motion.translations is None:
        return motion
    moved = np.zeros_like(motion.translations)
    tops = [top for top in (*roles.followers, *roles.hung) if top < motion.joint_count]
    if roles.above_pelvis and not roles.rig.connected[roles.pelvis]:
        tops.append(roles.pelvis)  # the body rides on a floor-level root
    moved[:, tops] = motion.translations[:, tops]
    return Motion(motion.fps, motion.root_positions, motion.rotations, moved if tops else None)


def _stance_at_the_end(creature: Creature, pose: np.ndarray) -> np.ndarray:
    """(legs, 3) where the feet stand at a clip's last frame, in the body's frame at rest (the controllers'
    leg order): a death that follows goes over from there, not from the rest stance."""
    ground = ground_frames(creature.rig, creature.pelvis, pose[-1:])[0]
    feet = pose[-1, [limb.foot for limb in creature.legs()], :3, 3]
    return (feet - ground[:3, 3]) @ ground[:3, :3]


def _followed_by(creature: Creature, before: np.ndarray, after: np.ndarray, fps: float) -> np.ndarray:
    """(T,J,4,4) world poses: `before` (a clip that has come to a stop), then `after` (an action in place,
    made at rest) carried to where and how the body stopped, its first SEAM_SECONDS blended in from the
    stop's last pose (each joint's rotation slerped, its position eased)."""
    ground = ground_frames(creature.rig, creature.pelvis, before[-1:])[0]
    after = ground[None, None] @ after
    count = min(len(after), max(1, int(round(SEAM_SECONDS * fps))))
    weight = smoothstep((np.arange(count) + 1.0) / (count + 1.0))
    seam = after[:count].copy()
    start = matrix_to_quat(before[-1, :, :3, :3])
    target = matrix_to_quat(seam[:, :, :3, :3])
    seam[:, :, :3, :3] = quat_to_matrix(quat_slerp(np.broadcast_to(start, target.shape), target,
                                                   weight[:, None]))
    seam[:, :, :3, 3] = before[-1, None, :, :3, 3] + weight[:, None, None] * (seam[:, :, :3, 3]
                                                                            - before[-1, None, :, :3, 3])
    after[:count] = seam
    return np.concatenate([before, after])


def _tempo_report(segment: GaitSegment) -> dict:
    """The tempo asked of a segment, and the calibration rigs it came from (None: no calibrated tempo)."""
    source = None if segment.tempo_from is None else list(segment.tempo_from)
    return {"gait": segment.action, "frequency": segment.frequency, "duty": segment.overrides.duty,
            "tempo_from": source}


def _controllers_made(creature: Creature, plan: MotionPlan, frames: int, fps: float, seed: int,
                      shape: RigShape) -> tuple[GeneratedClip, np.ndarray, np.ndarray, list[dict]]:
    """The controllers' clip of the plan (its locomotion, the stop and finale after it, or its one action
    in place): the clip (the locomotion where there is a finale), world poses (T,J,4,4) in metres, planted
    feet (T,L) and the tempo asked of each gait segment."""
    tempo: list[dict] = []
    finale = plan.finale
    moving_frames = frames
    if finale is not None:  # the gaits, a stop, then the finale in place
        moving_frames = int(round(frames * (1.0 - finale.share / sum(s.share for s in plan.segments))))
        plan = plan.moving_part(moving_frames / fps)
    if plan.locomotion:
        segments = plan.controller_segments(moving_frames / fps, shape)
        tempo = [_tempo_report(segment) for segment in segments]
        clip = controller_clip(creature, segments[0].action, seed, frames=moving_frames, fps=fps,
                               travel=Travel(direction=plan.direction), segments=segments)
    else:  # one action in place (plan.constructed)
        clip = controller_clip(creature, plan.segments[0].action, seed, frames=frames, fps=fps)
    pose = forward_kinematics(creature.rig, clip.motion)
    contacts = np.asarray(clip.contacts, dtype=bool)
    if finale is not None:
        last = controller_clip(creature, finale.action, seed, frames=frames - moving_frames, fps=fps,
                               stance=_stance_at_the_end(creature, pose))
        pose = _followed_by(creature, pose, forward_kinematics(creature.rig, last.motion), fps)
        contacts = np.concatenate([contacts, np.asarray(last.contacts, dtype=bool)])
    return clip, pose, contacts, tempo


def canonical_skin(canon: CanonicalRig, mesh: SkinnedMesh | None) -> SkinnedMesh | None:
    """The rig's skin (armature space) in its canonical frame."""
    if mesh is None:
        return None
    return SkinnedMesh(canon.frame.to_canonical_points(mesh.vertices), mesh.triangles, mesh.joint_indices,
                       mesh.joint_weights)


def construction_roles(canon: CanonicalRig, mesh: SkinnedMesh | None) -> RigRoles:
    """The roles construction drives (`construct_motion`'s `roles`): the canonical rig's, its skin
    saying where a leg without a foot bone ends."""
    return detect_roles(canon.rig, canonical_skin(canon, mesh))


def construct_motion(canon: CanonicalRig, rig: Rig, plan: MotionPlan, frames: int, fps: float,
                     seed: int, mesh: SkinnedMesh | None = None,
                     roles: RigRoles | None = None) -> ConstructedMotion:
    """`frames` frames of the plan (its locomotion, ending perhaps in a death, or its one action in place)
    on `rig` (canon: the same rig in its canonical frame; mesh: its skin in the rig's armature space, or
    None; roles: `construction_roles` when already read). RoleError when the rig's legs cannot be found;
    ControllerError when its family cannot do the action."""
    skin = canonical_skin(canon, mesh)
    roles = detect_roles(canon.rig, skin) if roles is None else roles
    metres = BODY_METRES[roles.family]
    creature = creature_of(roles, metres, skin)
    shape = rig_shape(roles)
    clip, pose, contacts, tempo = _controllers_made(creature, plan, frames, fps, seed, shape)
    pose[..., :3, 3] /= metres
    pose[..., 2, 3] += rest_floor(roles.rig, skin)
    world = _to_armature(canon, _followed_poses(roles, pose))
    motion = _only_followers_move(roles, motion_from_world_transforms(rig, world, fps))
    report = {
        "path": "constructed",
        "family": roles.family,
        "legs": len(roles.legs),
        "gaits": clip.metadata.get("gaits"),
        "stride_frequency": clip.metadata.get("stride_frequency"),
        "speed": float(clip.speed) / metres,  # body sizes per second
        "body_metres": metres,
        "rig_shape": shape.as_dict(),
        "tempo": tempo,  # per segment: the tempo asked for, and the calibration rigs it came from
    }
    if plan.finale is not None:
        report["finale"] = plan.finale.action
    return ConstructedMotion(motion, contacts, planting_joints(roles), report)
