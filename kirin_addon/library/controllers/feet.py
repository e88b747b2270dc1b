"""Foot planning: footfall phases of each gait pattern, swing arcs, and the contact schedule with one
constant target per stance (zero skating by construction)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.creature import LEFT, Creature
from ...core.rotations import quat_from_axis_angle, quat_identity, quat_rotate
from .common import smoothstep
from .path import Profile
from .poser import BodyPose, FootPlan, LegRig, Poser, chain_bends


def _leg_ranks(legs: list[LegRig]) -> tuple[list[int], int]:
    """Rank of each leg from the rear on its side (0 = hindmost) and the most legs on one side."""
    ranks = [0] * len(legs)
    most = 1
    for side in {leg.limb.side for leg in legs}:
        members = [i for i, leg in enumerate(legs) if leg.limb.side == side]
        members.sort(key=lambda i: -legs[i].foot_rest[1])  # +Y is the rear
        for r, i in enumerate(members):
            ranks[i] = r
        most = max(most, len(members))
    return ranks, most


def phase_offsets(pattern: str, legs: list[LegRig]) -> np.ndarray:
    """Touchdown phase (fraction of a cycle) of each leg for a footfall pattern."""
    ranks, most = _leg_ranks(legs)
    out = np.zeros(len(legs))
    for i, leg in enumerate(legs):
        right = leg.limb.side != LEFT
        r = ranks[i]
        front = r >= most / 2 if most > 1 else False
        if pattern in ("lateral", "wave"):
            out[i] = 0.5 * right + r / (2 * most)
        elif pattern in ("trot", "tripod", "alternate"):
            out[i] = 0.5 * ((r + right) % 2)
        elif pattern == "pace":
            out[i] = 0.5 * right
        elif pattern == "canter" and most == 2:
            table = {(True, False): 0.0, (False, False): 0.3, (True, True): 0.3, (False, True): 0.6}
            out[i] = table[(right, front)]
        elif pattern in ("transverse", "rotary") and most == 2:
            lead = 0.1 * right if not front else 0.5 + 0.1 * (right if pattern == "transverse" else not right)
            out[i] = lead
        elif pattern == "bound":
            out[i] = 0.5 * front
        elif pattern == "pronk":
            out[i] = 0.0
        else:
            out[i] = 0.5 * ((r + right) % 2)
    return out



# Share of the swing's fore–aft travel that follows an ease-in/ease-out curve; the rest is linear,
# so a foot leaves its footprint at once (a pure ease held it near the ground and near its old
# footprint, i.e. in effect planted, for the first and last ~10% of the swing).
SWING_EASE = 0.4


# Swing height peaks early (at 0.5^(1/SWING_RISE) of the swing): feet snap up at lift-off and reach
# forward to a softer touchdown, instead of grazing the ground at both ends of a symmetric arc.
SWING_RISE = 0.6


def swing_profile(s: np.ndarray | float) -> np.ndarray | float:
    """Fraction of the way from lift-off to touchdown at swing progress s ∈ [0, 1]."""
    return (1.0 - SWING_EASE) * np.clip(s, 0.0, 1.0) + SWING_EASE * smoothstep(s)


def swing_height(s: np.ndarray | float) -> np.ndarray | float:
    """Foot height over the swing, as a fraction of the gait's lift (0 at both ends, 1 at the top)."""
    return np.sin(np.pi * np.clip(s, 0.0, 1.0) ** SWING_RISE)


def swing_point(src: np.ndarray, dst: np.ndarray, centre: np.ndarray | None, h: float) -> np.ndarray:
    """Foot position a fraction h of the way from src to dst (3,): along the arc about the point the
    body turns about (radius and angle blended), so a swing keeps up with a turning body instead of
    cutting the chord inside it; a straight line on a straight path."""
    out = src + (dst - src) * h
    if centre is None:
        return out
    a, b = src[:2] - centre, dst[:2] - centre
    ra, rb = np.hypot(*a), np.hypot(*b)
    if min(ra, rb) < 1e-12:
        return out
    sweep = (np.arctan2(b[1], b[0]) - np.arctan2(a[1], a[0]) + np.pi) % (2 * np.pi) - np.pi
    if abs(sweep) < 1e-6:
        return out
    angle = np.arctan2(a[1], a[0]) + sweep * h
    out[:2] = centre + (ra + (rb - ra) * h) * np.array([np.cos(angle), np.sin(angle)])
    return out



@dataclass(frozen=True)
class GaitSchedule:
    """The blended gait at every sample of a locomotion clip's time grid."""

    phase: np.ndarray  # (N,) gait cycles so far
    offsets: np.ndarray  # (N,L) touchdown phase of each leg
    duty: np.ndarray  # (N,) fraction of the cycle a foot is down
    lift: np.ndarray  # (N,) swing foot clearance (m)
    freq: np.ndarray  # (N,) stride frequency (Hz)


def plan_feet(profile: Profile, legs: list[LegRig], schedule: GaitSchedule, neutral: np.ndarray,
              pelvis_rest: np.ndarray, moving: np.ndarray,
              girdle_shift: np.ndarray | None = None, changing: np.ndarray | None = None) -> FootPlan:
    """Contact schedule and foot targets: one constant point per stance, an arc per swing.

    A foot lands where its stance centre (`neutral`, body frame at rest, moved by `girdle_shift`
    (N,L,2) where the spine bends) will be at mid-stance (predicted from the path), so stance is
    centred in what the leg can reach. Once the creature has stopped for good, feet in stance stay
    down and feet in swing finish their step and stay down. For a gait that changes within the clip (a
    walk speeding into a gallop), `changing` (L,D: LegReach.radius, each leg's reach from its stance
    centre towards D evenly spaced angles) lifts a foot early that its stance would carry out of reach
    (the swing is longer, the footfall keeps its time), and each swinging foot is re-aimed every frame
    at where it will land (the changing gait shifts the touchdown: the foot follows, instead of landing
    where the old gait would have put the body).
    """
    phase, offsets, duty, lift, freq = (schedule.phase, schedule.offsets, schedule.duty, schedule.lift,
                                        schedule.freq)
    n, count = len(profile.times), len(legs)
    targets = np.zeros((n, count, 3))
    yaw = np.zeros((n, count))
    contacts = np.zeros((n, count), dtype=bool)
    fold = np.zeros((n, count))
    settled = np.flip(np.logical_and.accumulate(np.flip(~moving)))

    def placement(i: int, t: float) -> tuple[np.ndarray, float]:
        pos, head = profile.at(t)
        rel = neutral[i] - pelvis_rest
        if girdle_shift is not None:
            x = np.clip((t - profile.times[0]) * profile.fps, 0.0, n - 1.0)
            lo = min(int(np.floor(x)), n - 2)
            rel = rel.copy()
            rel[:2] += (1 - (x - lo)) * girdle_shift[lo, i] + (x - lo) * girdle_shift[lo + 1, i]
        c, s = np.cos(head), np.sin(head)
        return np.array([pos[0] + c * rel[0] - s * rel[1], pos[1] + s * rel[0] + c * rel[1],
                         legs[i].foot_rest[2]]), head

    for i in range(count):
        u = phase - offsets[:, i]
        t0 = profile.times[0]
        plant, plant_yaw = placement(i, t0)
        stance, u_down = True, np.floor(u[0])
        src = dst = plant
        src_yaw = dst_yaw = plant_yaw
        centre = None
        u_up = u_land = 0.0
        for k in range(n):
            t, f = profile.times[k], freq[k]
            overreached = stance and changing is not None and _beyond(plant, placement(i, t), changing[i])
            if stance and (u[k] - u_down >= duty[k] or overreached) and not settled[k]:
                stance = False
                # The swing began at phase u_down + duty, between two frames: a frame later the foot
                # is already on its way (starting it at u[k] held it down one frame too long).
                src, src_yaw, u_up = plant, plant_yaw, min(u_down + duty[k], u[k])
                u_land = np.floor(u[k]) + 1.0
                t_land = t + (u_land - u[k]) / f
                dst, dst_yaw = placement(i, t_land + 0.5 * duty[k] / f)
                centre = profile.turn_centre(0.5 * (t + t_land))
            if not stance and u[k] >= u_land:
                stance, plant, plant_yaw, u_down = True, dst, dst_yaw, u_land
            if stance:
                targets[k, i], yaw[k, i], contacts[k, i] = plant, plant_yaw, True
            else:
                s = float(np.clip((u[k] - u_up) / max(u_land - u_up, 1e-9), 0.0, 1.0))
                if changing is not None:  # where the body will be when this foot lands, as the gait now says
                    dst, dst_yaw = placement(i, t + (u_land - u[k]) / f + 0.5 * duty[k] / f)
                h = swing_profile(s)
                targets[k, i] = swing_point(src, dst, centre, h)
                targets[k, i, 2] = legs[i].foot_rest[2] + lift[k] * swing_height(s)
                yaw[k, i] = src_yaw + (dst_yaw - src_yaw) * h
                fold[k, i] = 0.4 * np.sin(np.pi * s)
    return FootPlan(targets, yaw, contacts, fold)


def _beyond(plant: np.ndarray, centre: tuple[np.ndarray, float], radius: np.ndarray) -> bool:
    """True when a planted foot lies further from its stance centre (world point, heading) than the leg
    reaches in that direction (radius: (D,) towards angles 2πk/D in the body frame)."""
    point, heading = centre
    dx, dy = plant[0] - point[0], plant[1] - point[1]
    c, s = np.cos(heading), np.sin(heading)
    x, y = c * dx + s * dy, -s * dx + c * dy  # into the body frame
    count = radius.shape[0]
    at = (np.arctan2(y, x) % (2 * np.pi)) / (2 * np.pi) * count
    k0 = int(np.floor(at)) % count
    return bool(np.hypot(x, y) > min(radius[k0], radius[(k0 + 1) % count]))


# Foot roll: the share of a stance the heel takes to come up before lift-off, of a swing over which the
# toes flatten again, and of the stance and swing either side of a touchdown the heel-strike spans.
HEEL_OFF_SHARE, TOE_FLAT_SHARE, STRIKE_SHARE = 0.35, 0.5, 0.2
# The heel a foot lands on lies this share of the ankle-to-toe length behind the ankle.
HEEL_BACK = 0.3


def _progress(contact: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(T,) progress 0 → 1 through each frame's stance run, and through each swing run (NaN outside)."""
    stance, swing = np.full(len(contact), np.nan), np.full(len(contact), np.nan)
    edges = np.flatnonzero(np.diff(np.concatenate([[-1], contact.astype(int), [-1]])) != 0)
    for start, stop in zip(edges[:-1], edges[1:], strict=True):
        values = (np.arange(stop - start) + 0.5) / max(stop - start, 1)
        (stance if contact[start] else swing)[start:stop] = values
    return stance, swing


def roll_angles(contact: np.ndarray, heel_off: float, heel_strike: float) -> np.ndarray:
    """(T,) foot pitch of one foot (toes down > 0): the heel comes up late in a stance (the foot rolls
    over its toes) and the toes flatten early in the swing; the toes come up before a touchdown and the
    foot lands heel first, flat again early in the stance. A clip's opening run starts flat."""
    stance, swing = _progress(contact)
    in_stance, in_swing = ~np.isnan(stance), ~np.isnan(swing)
    stance, swing = np.nan_to_num(stance), np.nan_to_num(swing)
    off = heel_off * np.where(in_stance, smoothstep((stance - 1 + HEEL_OFF_SHARE) / HEEL_OFF_SHARE),
                              np.where(in_swing, 1 - smoothstep(swing / TOE_FLAT_SHARE), 0.0))
    strike = -heel_strike * np.where(in_swing, smoothstep((swing - 1 + STRIKE_SHARE) / STRIKE_SHARE),
                                     np.where(in_stance, 1 - smoothstep(stance / (0.5 * STRIKE_SHARE)), 0.0))
    changes = np.flatnonzero(np.diff(contact.astype(int)))
    first = int(changes[0]) + 1 if changes.size else len(contact)
    (strike if contact[0] else off)[:first] = 0.0  # an opening stance has not landed, nor a swing rolled off
    return off + strike


def roll_feet(plan: FootPlan, legs: list[LegRig], creature: Creature, heel_off: float,
              heel_strike: float) -> FootPlan:
    """The plan with its feet rolling over their toes at lift-off and onto their heels at touchdown:
    the pivot (the toe joint, or the heel below the ankle) stays where the flat foot had it and the
    ankle target moves about it. Legs without a toe that points forward do not roll."""
    rig = creature.rig
    roll = np.zeros(plan.yaw.shape)
    targets = plan.targets.copy()
    for i, leg in enumerate(legs):
        toe = leg.limb.toe
        if toe < 0:
            continue
        reach = rig.heads[toe] - leg.foot_rest  # body frame at rest
        if -reach[1] < 0.5 * np.linalg.norm(reach):  # no toe ahead of the ankle: nothing to roll over
            continue
        angles = roll_angles(plan.contacts[:, i].astype(bool), heel_off, heel_strike)
        heel = np.array([0.0, HEEL_BACK * -reach[1], reach[2]])  # the back of the heel, below the ankle
        c, s = np.cos(plan.yaw[:, i]), np.sin(plan.yaw[:, i])
        for pivot_rest, active in ((reach, angles > 0), (heel, angles < 0)):
            k = np.flatnonzero(active)
            if not k.size:
                continue
            pivot = np.stack([c[k] * pivot_rest[0] - s[k] * pivot_rest[1],
                              s[k] * pivot_rest[0] + c[k] * pivot_rest[1],
                              np.full(k.size, pivot_rest[2])], 1)
            axis = np.stack([c[k], s[k], np.zeros(k.size)], 1)
            # ankle' = pivot + R(axis, angle)(ankle − pivot), relative to the ankle: −pivot turned, + pivot
            turned = quat_rotate(quat_from_axis_angle(axis, angles[k]), -pivot)
            targets[k, i] += pivot + turned
        roll[:, i] = angles
    return FootPlan(targets, plan.yaw, plan.contacts, plan.fold, roll)


def spine_turn_bend(turn: np.ndarray) -> np.ndarray:
    """Total yaw bend (rad) of the spine into a turn of `turn` rad/s."""
    return np.clip(0.25 * turn, -0.5, 0.5)


def girdle_shifts(creature: Creature, legs: list[LegRig], bend: np.ndarray) -> np.ndarray | None:
    """(N,L,2) how far (body frame) each leg's girdle joint moves when the spine yaws by bend (N,)
    in total: the feet of a bent body are planted under its bent girdles, not the rest ones."""
    if not creature.spine or not np.any(bend):
        return None
    grid = np.linspace(-0.5, 0.5, 21)
    poser = Poser(creature, len(grid))
    pelvis = creature.rig.heads[creature.pelvis]
    spine = chain_bends(len(grid), len(creature.spine))
    spine[:, :, 2] = (grid / len(creature.spine))[:, None]
    poser.apply_body(BodyPose(np.repeat(pelvis[None], len(grid), axis=0), quat_identity((len(grid),)),
                              spine=spine))
    poser.inherit()
    girdles = [leg.chain[0] for leg in legs]
    at = poser.relative_positions()[:, girdles, :2]
    moved = at - at[len(grid) // 2][None]  # relative to the straight spine (grid[10] = 0)
    out = np.zeros((len(bend), len(legs), 2))
    for i in range(len(legs)):
        for axis in range(2):
            out[:, i, axis] = np.interp(bend, grid, moved[:, i, axis])
    return out


