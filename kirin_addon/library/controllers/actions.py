"""In-place actions (idle, sit, rear up, sniff, shake, wave, flap...), jumps and glides: body poses whose
amplitude is limited to what the planted legs can hold."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...core.creature import LEFT, Creature
from ...core.rotations import quat_multiply, quat_rotate
from .body import arm_limbs, fold_wings, pose_arms, pose_wings, tail_lift
from .common import (
    GRAVITY,
    X_AXIS,
    Y_AXIS,
    Z_AXIS,
    ControllerError,
    GeneratedClip,
    about,
    envelope,
    euler_q,
    heading_forward,
    smooth_lower,
    smoothstep,
)
from .poser import BodyPose, FootPlan, LegRig, Poser, leg_rigs, solve_clip
from .segments import GaitSegment


def _rest_feet(legs: list[LegRig], frames: int) -> np.ndarray:
    return np.repeat(np.array([leg.foot_rest for leg in legs]).reshape(1, -1, 3), frames, axis=0)


def _above_pelvis(creature: Creature) -> np.ndarray:
    """(J,) the pelvis' ancestors (a floor-level root the body hangs from: it stays on the ground)."""
    out = np.zeros(creature.rig.joint_count, dtype=bool)
    j = int(creature.rig.parents[creature.pelvis])
    while j >= 0:
        out[j] = True
        j = int(creature.rig.parents[j])
    return out


def limit_amplitude(creature: Creature, make_pose: Callable[[np.ndarray], BodyPose], wanted: np.ndarray,
                    planted: np.ndarray, fps: float, feet: np.ndarray | None = None,
                    fold_of: Callable[[np.ndarray], np.ndarray] | None = None,
                    iterations: int = 10) -> np.ndarray:
    """Largest amplitude ≤ wanted (per frame) keeping planted legs in reach and the body above ground (feet:
    (T,L,3) where they stand, default at rest; fold_of: amplitude → (T,L) distal flexion of the legs, default
    none). A planted leg may be as straight as it stands at rest (artists' rest legs are often straighter
    than the solver's reach), and the joints the pelvis hangs from are not the body."""
    frames = wanted.shape[0]
    legs = leg_rigs(creature)
    feet = _rest_feet(legs, frames) if feet is None else feet
    zeros = np.zeros((frames, len(legs)))
    floor = np.minimum(creature.rig.heads[:, 2], 0.0)
    body = ~_above_pelvis(creature)

    def spans_and_heights(a: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        pose = make_pose(a)
        poser = Poser(creature, frames)
        poser.apply_body(pose)
        poser.inherit()
        rel = poser.relative_positions()
        root = poser.root_for(pose.root, rel)
        fold = zeros if fold_of is None else fold_of(a)
        starts, ends, _ = poser.leg_ends(rel, root, feet, zeros, fold)
        spans = [np.linalg.norm(starts[i] - ends[i], axis=-1) for i in range(len(legs))]
        poser.solve_legs(rel, root, feet, zeros, fold)
        poser.inherit()
        return spans, poser.relative_positions()[..., 2] + root[:, None, 2]

    at_rest = [float(np.max(span)) for span in spans_and_heights(np.zeros(frames))[0]]

    def feasible(a: np.ndarray) -> np.ndarray:
        spans, heights = spans_and_heights(a)
        ok = np.ones(frames, dtype=bool)
        for i, leg in enumerate(legs):
            if planted[i]:
                lo, hi = leg.reach
                ok &= (spans[i] <= max(hi, at_rest[i])) & (spans[i] >= lo)
        return ok & np.all(heights[:, body] >= floor[None, body] - 1e-12, axis=1)

    if np.all(feasible(wanted)):
        return wanted
    lo, hi = np.zeros(frames), wanted.copy()
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        ok = feasible(mid)
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    half = max(1, int(round(0.1 * fps)))
    a = smooth_lower(lo, half)
    for _ in range(8):  # feasibility is not monotone everywhere: back off where smoothing broke it
        ok = feasible(a)
        if ok.all():
            break
        a = smooth_lower(np.where(ok, a, 0.8 * a), half)
    return a


def _pose_maker(creature: Creature, t: np.ndarray, spec: Callable[[np.ndarray, np.ndarray], dict]
                ) -> Callable[[np.ndarray], BodyPose]:
    """Wrap an action's pose function (t, amplitude) → dict of body terms into a BodyPose builder."""
    pelvis = creature.rig.heads[creature.pelvis]
    neck = creature.neck + ([creature.head] if creature.head >= 0 else [])
    frames = t.shape[0]

    def make(a: np.ndarray) -> BodyPose:
        terms = spec(t, a)
        shift = terms.get("shift", np.zeros((frames, 3)))
        pitch, roll, yaw = (terms.get(k, np.zeros(frames)) for k in ("pitch", "roll", "yaw"))
        pose = BodyPose(pelvis + shift, euler_q(pitch, roll, yaw))
        for name, chain in (("spine", creature.spine), ("neck", neck), ("tail", creature.tail)):
            if chain and name in terms:
                bends = np.zeros((frames, len(chain), 3))
                share = np.full(len(chain), 1.0 / len(chain))
                if name + "_base" in terms:  # more of the bend at the chain's base (a grazing neck)
                    share = np.linspace(1.0 + terms[name + "_base"], 1.0 - terms[name + "_base"], len(chain))
                    share = share / share.sum()
                bends[:] = terms[name][:, None, :] * share[None, :, None]
                if name + "_wave" in terms:
                    bends += terms[name + "_wave"](np.arange(len(chain)))
                setattr(pose, name, bends)
        if "jaw" in terms:
            pose.jaw = terms["jaw"]
        return pose

    return make


def _vec(frames: int, pitch=0.0, roll=0.0, yaw=0.0) -> np.ndarray:
    out = np.zeros((frames, 3))
    out[:, 0], out[:, 1], out[:, 2] = pitch, roll, yaw
    return out


# An action's terms: (pose spec (t, amplitude) → body terms, wanted amplitude over time, legs it lifts).
ActionTerms = tuple[Callable, Callable[[np.ndarray], np.ndarray], np.ndarray | None]


@dataclass(frozen=True)
class _ActionBody:
    """What every in-place action's pose is scaled by: the creature's size, the clip's length, this
    clip's random amplitude and breathing phase, and the rest tail's lift."""

    leg_len: float
    d: float  # clip duration (s)
    amp: float
    phase: float
    tail_up: float
    front: np.ndarray  # (legs,) which legs are fore legs
    shoulder: np.ndarray | None = None  # (3,) the fore legs' roots relative to the pelvis, at rest

    def breathe(self, t: np.ndarray, a: np.ndarray | float) -> np.ndarray:
        return 0.006 * self.leg_len * np.sin(2 * np.pi * 0.4 * t + self.phase) * a


# A sit tips the body back this far (rad) about the shoulders (a dog's spine sits at 40–60°), the
# shoulders sink this share of a leg as the fore legs give a little, and the hind legs' segments below
# the knee fold back this far (rad) so the hocks go down towards the ground.
SIT_PITCH, SIT_SINK, SIT_HOCK = 0.75, 0.08, -0.5


def _idle(body: _ActionBody, action: str, rng: np.random.Generator) -> ActionTerms:
    d, leg_len, tail_up, phase = body.d, body.leg_len, body.tail_up, body.phase
    looks = rng.uniform(-0.35, 0.35, 3)

    def spec(t, a):
        yaw = np.interp(t, [0, 0.3 * d, 0.6 * d, d], [0, *looks]) * a
        shift = np.zeros((len(t), 3))
        shift[:, 2] = body.breathe(t, a)
        shift[:, 0] = 0.01 * leg_len * np.sin(2 * np.pi * 0.25 * t + phase) * a
        tail = _vec(len(t), 0.3 * tail_up, yaw=0.1 * np.sin(t + phase))
        return {"shift": shift, "neck": _vec(len(t), yaw=yaw), "tail": tail}
    return spec, lambda t: np.ones_like(t), None


def _settle(body: _ActionBody, action: str, rng: np.random.Generator) -> ActionTerms:
    """sit, lie_down and stand_up (lying down, played backwards). A sit tips the body back about its
    shoulders (the fore legs stay as they stand, a little bent) so the hindquarters go down to the
    ground, head up; without fore legs the body sinks and tips back about the pelvis."""
    d, leg_len, tail_up = body.d, body.leg_len, body.tail_up
    sit = action == "sit"
    depth = {"sit": 0.45, "lie_down": 0.85, "stand_up": 0.85}[action] * body.amp
    nose_up = (SIT_PITCH if body.shoulder is not None else 0.45) * body.amp if sit else 0.0

    def spec(t, a):
        pitch = -nose_up * a
        shift = np.zeros((len(t), 3))
        if sit and body.shoulder is not None:
            level = np.zeros_like(pitch)
            shift += body.shoulder - quat_rotate(euler_q(pitch, level, level), body.shoulder)
            shift[:, 2] -= SIT_SINK * leg_len * a
        else:
            shift[:, 2] = -depth * leg_len * a
            shift[:, 1] = 0.1 * leg_len * a if sit else 0.0
        shift[:, 2] += body.breathe(t, 1.0)
        fold = np.where(body.front, 0.0, SIT_HOCK if sit else 0.0)[None, :] * np.asarray(a, float)[:, None]
        return {"shift": shift, "pitch": pitch, "leg_fold": fold,
                "neck": _vec(len(t), pitch=(0.6 * nose_up - 0.1) * a),
                "tail": _vec(len(t), pitch=(nose_up + tail_up) * a), "spine": _vec(len(t), pitch=0.1 * a)}
    if action == "stand_up":
        return spec, lambda t: 1.0 - envelope(t, 0.2 * d, 0.75 * d), None
    return spec, lambda t: envelope(t, 0.1 * d, 0.7 * d), None


def _crouch(body: _ActionBody, action: str, rng: np.random.Generator) -> ActionTerms:
    d = body.d

    def spec(t, a):
        shift = np.zeros((len(t), 3))
        shift[:, 2] = -0.4 * body.amp * body.leg_len * a
        return {"shift": shift, "pitch": 0.25 * a, "spine": _vec(len(t), pitch=0.15 * a),
                "neck": _vec(len(t), pitch=-0.3 * a)}
    return spec, lambda t: envelope(t, 0.1 * d, 0.45 * d, 0.65 * d, 0.95 * d), None


def _rear_up(body: _ActionBody, action: str, rng: np.random.Generator) -> ActionTerms:
    d, amp = body.d, body.amp

    def spec(t, a):
        shift = np.zeros((len(t), 3))
        shift[:, 2] = 0.05 * body.leg_len * a
        return {"shift": shift, "pitch": -0.8 * amp * a, "neck": _vec(len(t), pitch=0.5 * a),
                "tail": _vec(len(t), pitch=(0.8 * amp + body.tail_up) * a),
                "spine": _vec(len(t), pitch=-0.15 * a)}
    return spec, lambda t: envelope(t, 0.15 * d, 0.45 * d, 0.65 * d, 0.95 * d), body.front


# An attack strikes about this often (s): the calibration rigs' authored attacks last 0.8–1.3 s (median
# 1.0), and a clip of several seconds keeps attacking.
STRIKE_SECONDS = 1.0


def _beats(d: float, seconds: float, start: float) -> tuple[list[float], float]:
    """When a repeated action (a strike, a blow) begins in a clip of `d` s, about every `seconds` (a whole
    number of times, at least once), `start` a share of the period in; and the period."""
    count = max(1, int(round(d / seconds)))
    period = d / count
    return [(k + start) * period for k in range(count)], period


def _strike_phases(t: np.ndarray, d: float, start: float) -> tuple[np.ndarray, np.ndarray]:
    """(draw back, strike) envelopes of an attack that strikes once every STRIKE_SECONDS or so, the first
    from `start` (a share of a strike's period): in each, the body draws back over a quarter of it, is let
    go and strikes (a sixth: a fist at about 5 body sizes a second), holds and recovers."""
    starts, period = _beats(d, STRIKE_SECONDS, start)
    draw, strike = np.zeros_like(t), np.zeros_like(t)
    for s in starts:
        draw += envelope(t, s, s + 0.22 * period, s + 0.24 * period, s + 0.4 * period)
        strike += envelope(t, s + 0.24 * period, s + 0.4 * period, s + 0.5 * period, s + 0.8 * period)
    return draw, strike


def _attack(body: _ActionBody, action: str, rng: np.random.Generator) -> ActionTerms:
    """A strike at what is ahead: the body draws back and low, then lunges forward and comes back. Four
    legs bite (the head is thrust forward and down, the jaw open); two legs punch (the torso twists into
    it; `_limb_extra` throws the arm)."""
    d, leg_len, amp = body.d, body.leg_len, body.amp
    start = rng.uniform(0.02, 0.1)
    four_legged = body.shoulder is not None
    twist = rng.choice([-1.0, 1.0]) * 0.35 * amp  # which way the torso winds

    def spec(t, a):
        draw, strike = _strike_phases(t, d, start)
        shift = np.zeros((len(t), 3))
        shift[:, 1] = leg_len * (0.12 * draw - (0.3 if four_legged else 0.12) * strike) * amp * a
        shift[:, 2] = -leg_len * (0.08 * draw + 0.08 * strike) * amp * a + body.breathe(t, 1.0)
        terms = {"shift": shift, "pitch": (0.05 * draw + 0.2 * strike) * amp * a,
                 "arm_phases": (draw, strike)}
        if four_legged:
            terms["neck"] = _vec(len(t), pitch=(-0.25 * draw + 0.45 * strike) * amp * a)
            terms["jaw"] = 0.5 * amp * np.clip(strike + 0.5 * draw, 0.0, 1.0) * a
            terms["tail"] = _vec(len(t), pitch=(body.tail_up + 0.3 * draw) * a)
        else:
            terms["yaw"] = twist * (draw - 1.4 * strike) * a
            terms["spine"] = _vec(len(t), pitch=0.1 * strike * a, yaw=0.5 * twist * (draw - strike) * a)
            terms["neck"] = _vec(len(t), pitch=0.1 * strike * a, yaw=-twist * (draw - 1.4 * strike) * a)
        return terms
    return spec, lambda t: np.ones_like(t), None


# A hit throws the body back this fast (s), it holds, then recovers over this long (the calibration rigs'
# authored hit reactions last 0.46–0.67 s); a longer clip is hit again about every HIT_SECONDS.
HIT_SNAP, HIT_HOLD, HIT_RECOVER, HIT_SECONDS = 0.12, 0.05, 0.45, 1.5


def _hit_phase(t: np.ndarray, d: float, start: float) -> np.ndarray:
    """0 → 1 → 0: each blow snaps the body back at once and lets it recover slowly."""
    out = np.zeros_like(t)
    for s in _beats(d, HIT_SECONDS, start)[0]:
        out += envelope(t, s, s + HIT_SNAP, s + HIT_SNAP + HIT_HOLD, s + HIT_SNAP + HIT_HOLD + HIT_RECOVER)
    return out


def _hit(body: _ActionBody, action: str, rng: np.random.Generator) -> ActionTerms:
    """A blow from ahead: the body is thrown back (two legs: and up, the back arching; four legs: back and
    low), the head snaps back, turned a little aside; then it recovers. Arms fling forward (`_limb_extra`)."""
    d, leg_len, amp = body.d, body.leg_len, body.amp
    start = rng.uniform(0.05, 0.2)
    aside = rng.choice([-1.0, 1.0]) * rng.uniform(0.1, 0.25)

    # Four legs cower, low and aside, rather than rear back off their fore legs (straight at rest).
    four_legged = body.shoulder is not None
    pitch, back, drop, turn = (0.0, 0.04, 0.12, 0.15) if four_legged else (-0.25, 0.12, 0.04, 1.0)

    def spec(t, a):
        blow = _hit_phase(t, d, start) * amp * a
        shift = np.zeros((len(t), 3))
        shift[:, 1] = back * leg_len * blow
        shift[:, 2] = -drop * leg_len * blow + body.breathe(t, 1.0)
        return {"shift": shift, "pitch": pitch * blow, "yaw": turn * aside * blow, "roll": 0.5 * aside * blow,
                "spine": _vec(len(t), pitch=-0.2 * blow),
                "neck": _vec(len(t), pitch=-0.35 * blow, yaw=aside * blow),
                "tail": _vec(len(t), pitch=(body.tail_up + 0.3 * blow)), "arm_phases": (blow,)}
    return spec, lambda t: np.ones_like(t), None


def _look_around(body: _ActionBody, action: str, rng: np.random.Generator) -> ActionTerms:
    d = body.d
    targets = rng.uniform(-1.0, 1.0, 3) * np.array([1, -1, 1])

    def spec(t, a):
        yaw = np.interp(t, [0, 0.2 * d, 0.45 * d, 0.7 * d, 0.9 * d, d], [0, targets[0], targets[0],
                                                                          targets[1], targets[2], 0])
        pitch = -0.15 * np.sin(2 * np.pi * t / d)
        return {"neck": _vec(len(t), pitch=pitch * a, yaw=yaw * a), "shift": np.c_[
            np.zeros(len(t)), np.zeros(len(t)), body.breathe(t, a)], "tail": _vec(len(t), body.tail_up * 0.3)}
    return spec, lambda t: np.ones_like(t), None


def _nod(body: _ActionBody, action: str, rng: np.random.Generator) -> ActionTerms:
    """sniff, peck and eat: the head goes down and nods, pecks, or stays down at the food and chews (the
    jaw working, the head tugging), coming up at the end."""
    d = body.d
    rate = {"sniff": 3.0, "peck": 2.0, "eat": 1.5}[action]
    reach = 1.3 if action == "eat" else 1.1

    def spec(t, a):
        wave = np.sin(2 * np.pi * rate * t)
        nod = {"sniff": 0.12 * wave, "peck": 0.5 * np.maximum(0, wave) ** 2, "eat": 0.1 * wave}[action]
        shift = np.zeros((len(t), 3))
        shift[:, 2] = -(0.08 if action == "eat" else 0.05) * body.leg_len * a
        terms = {"shift": shift, "pitch": (0.15 if action == "eat" else 0.1) * a,
                 "neck": _vec(len(t), pitch=(reach * body.amp + nod) * a),
                 "tail": _vec(len(t), body.tail_up * 0.3, yaw=0.15 * np.sin(2 * t) * a)}
        if action == "eat":
            terms["jaw"] = 0.25 * np.maximum(0, wave) ** 2 * a
            terms["neck_base"] = 0.8
        return terms
    if action == "eat":
        return spec, lambda t: envelope(t, 0.05 * d, 0.25 * d, 0.85 * d, d), None
    return spec, lambda t: envelope(t, 0.1 * d, 0.35 * d, 0.75 * d, 0.95 * d), None


def _shake(body: _ActionBody, action: str, rng: np.random.Generator) -> ActionTerms:
    d = body.d
    rate = rng.uniform(3.5, 4.5)

    def spec(t, a):
        wob = np.sin(2 * np.pi * rate * t)
        return {"roll": 0.3 * body.amp * a * wob, "spine": _vec(len(t), roll=0.3 * a * wob),
                "neck": _vec(len(t), roll=0.4 * a * wob, yaw=0.3 * a * wob),
                "tail": _vec(len(t), yaw=0.5 * a * wob)}
    return spec, lambda t: envelope(t, 0.1 * d, 0.25 * d, 0.7 * d, 0.9 * d), None


def _wag_tail(body: _ActionBody, action: str, rng: np.random.Generator) -> ActionTerms:
    rate = rng.uniform(2.5, 3.5)

    def spec(t, a):
        def wave(k):
            swing = 0.35 * body.amp * a[:, None] * np.sin(2 * np.pi * rate * t[:, None] - 0.7 * k[None])
            return swing[..., None] * np.array([0.0, 0.0, 1.0])
        return {"tail": _vec(len(t), pitch=body.tail_up + 0.3 * a), "tail_wave": wave,
                "shift": np.c_[np.zeros(len(t)), np.zeros(len(t)), body.breathe(t, a)]}
    return spec, lambda t: envelope(t, 0.0, 0.2 * body.d), None


def _limbs_only(body: _ActionBody, action: str, rng: np.random.Generator) -> ActionTerms:
    """wave and flap: the body stays still; arms or wings do the work (see `_limb_extra`)."""
    def spec(t, a):
        return {"shift": np.c_[np.zeros(len(t)), np.zeros(len(t)), body.breathe(t, 1.0)]}
    return spec, lambda t: np.ones_like(t), None


_ACTION_TERMS: dict[str, Callable[[_ActionBody, str, np.random.Generator], ActionTerms]] = {
    "idle": _idle, "sit": _settle, "lie_down": _settle, "stand_up": _settle, "crouch": _crouch,
    "rear_up": _rear_up, "look_around": _look_around, "sniff": _nod, "peck": _nod, "eat": _nod,
    "shake": _shake,
    "wag_tail": _wag_tail, "wave": _limbs_only, "flap": _limbs_only, "attack": _attack, "hit": _hit,
}


def action_terms(creature: Creature, action: str, duration: float, rng: np.random.Generator) -> ActionTerms:
    """(pose spec, wanted amplitude over time, which legs may leave the ground) for an in-place action."""
    leg_len = max(creature.leg_length, 0.05 * creature.rig.body_size)
    amp = rng.uniform(0.85, 1.1)
    phase = rng.uniform(0, 2 * np.pi)
    legs = leg_rigs(creature)
    front = np.array([leg.limb.position == "front" for leg in legs], dtype=bool)
    terms = _ACTION_TERMS.get(action)
    if terms is None:
        raise ControllerError(f"Unknown action '{action}'.")
    shoulder = None
    if front.any() and (~front).any():
        roots = creature.rig.heads[[leg.limb.joints[0] for leg, f in zip(legs, front, strict=True) if f]]
        shoulder = roots.mean(axis=0) - creature.rig.heads[creature.pelvis]
    body = _ActionBody(leg_len, duration, amp, phase, tail_lift(creature), front, shoulder)
    return terms(body, action, rng)


def _punch(arms: list, phases: tuple[np.ndarray, np.ndarray], arm: int
           ) -> tuple[dict[int, np.ndarray], np.ndarray]:
    """The punching arm's aim over an attack's (draw back, strike) phases (body frame): drawn back and up
    by the shoulder, then thrown straight ahead at shoulder height along the arc between the two (at an
    even angular speed: a blend of the two directions would whip through the middle), then let down;
    raise weight."""
    arm = arm % len(arms)
    draw, strike = (np.clip(p, 0.0, 1.0) for p in phases)
    side = arms[arm].side
    back = np.array([0.35 * side, 0.55, -0.35])
    ahead = np.array([-0.1 * side, -1.0, 0.05])
    back, ahead = back / np.linalg.norm(back), ahead / np.linalg.norm(ahead)
    u = strike / np.maximum(draw + strike, 1e-9)
    angle = np.arccos(np.clip(back @ ahead, -1.0, 1.0))
    aim = (np.sin((1.0 - u) * angle)[:, None] * back + np.sin(u * angle)[:, None] * ahead) / np.sin(angle)
    return {arm: aim}, np.clip(draw + strike, 0.0, 1.0)


def _limb_extra(creature: Creature, action: str, t: np.ndarray, d: float, rng: np.random.Generator,
                phases: tuple[np.ndarray, ...] = ()) -> Callable[[Poser], None]:
    """Arms (hang, swing, wave) and wings (fold, flap) on top of a body pose."""
    frames = t.shape[0]
    rate = rng.uniform(1.2, 1.8)
    punching = int(rng.integers(2))  # which arm throws an attack's punch (`phases`: when, see _attack)

    def extra(poser: Poser) -> None:
        arms = arm_limbs(creature)
        if arms:
            raise_dir, weight = None, None
            if action == "wave":
                waving = max(range(len(arms)), key=lambda n: arms[n].side == -LEFT)
                side = arms[waving].side
                sweep = 0.35 * np.sin(2 * np.pi * rate * t)
                raise_dir = {waving: np.stack([side * (0.45 + sweep), np.full(frames, -0.15),
                                               np.full(frames, 0.9)], axis=-1)}
                weight = envelope(t, 0.05 * d, 0.3 * d, 0.75 * d, 0.95 * d)
            elif action == "attack" and phases:
                raise_dir, weight = _punch(arms, phases, punching)
            elif action == "hit" and phases:  # arms fling forward and out as the body is thrown back
                weight = np.clip(phases[0], 0.0, 1.0)
                raise_dir = {n: np.broadcast_to(np.array([0.45 * arm.side, -0.7, -0.25]), (frames, 3))
                             for n, arm in enumerate(arms)}
            pose_arms(poser, {}, raise_dir, weight)
        if creature.limbs_of("wing"):
            if action == "flap":
                beat = 0.7 * np.sin(2 * np.pi * 2.5 * rate * t) * envelope(t, 0.0, 0.15 * d)
                pose_wings(poser, beat, 0.3 * np.maximum(0, np.cos(2 * np.pi * 2.5 * rate * t)))
            else:
                fold_wings(poser)
    return extra


def in_place(creature: Creature, action: str, frames: int, fps: float, rng: np.random.Generator,
             stance: np.ndarray | None = None) -> GeneratedClip:
    """Actions with the feet planted at rest, or where `stance` (legs, 3; body frame at rest) has them (as
    a stop left them), except legs an action lifts (e.g. fore legs rearing)."""
    t = np.arange(frames) / fps
    d = max(t[-1], 1e-6)
    spec, wanted_fn, free = action_terms(creature, action, d, rng)
    legs = leg_rigs(creature)
    free = np.zeros(len(legs), bool) if free is None else free
    make = _pose_maker(creature, t, spec)
    wanted = wanted_fn(t)
    targets = _rest_feet(legs, frames)
    if stance is not None and legs:
        targets = np.repeat(np.asarray(stance, dtype=float)[None], frames, axis=0)

    def fold_of(a: np.ndarray) -> np.ndarray:
        return spec(t, a).get("leg_fold", np.zeros((frames, len(legs))))

    a = limit_amplitude(creature, make, wanted, ~free, fps, targets, fold_of) if legs else wanted
    pose = make(a)
    contacts = np.ones((frames, len(legs)), dtype=bool)
    if free.any():
        # Lifted legs follow the body rigidly (tucked a little) and are down only where a == 0.
        pelvis = creature.rig.heads[creature.pelvis]
        for i in np.flatnonzero(free):
            carried = pose.root + quat_rotate(pose.body, legs[i].foot_rest - pelvis)
            carried[:, 2] = np.maximum(carried[:, 2] + 0.1 * creature.leg_length * a, legs[i].foot_rest[2])
            targets[:, i] = np.where(a[:, None] > 0, carried, targets[:, i])
            contacts[:, i] = a <= 0
    zeros = np.zeros((frames, len(legs)))
    terms = spec(t, a)  # the chosen amplitude's legs and arms
    fold = terms.get("leg_fold", zeros)
    motion, info = solve_clip(creature, pose, FootPlan(targets, zeros, contacts, fold), fps,
                              _limb_extra(creature, action, t, d, rng, terms.get("arm_phases", ())))
    info.update(amplitude=a, foot_targets=targets)
    return GeneratedClip(motion, action, [GaitSegment(action, frames / fps, 0.0)], 0.0,
                         "none", contacts, info)


def jump(creature: Creature, frames: int, fps: float, rng: np.random.Generator) -> GeneratedClip:
    """Crouch, ballistic flight forward, land and absorb; feet planted before take-off and after landing."""
    legs = leg_rigs(creature)
    t = np.arange(frames) / fps
    d = max(t[-1], 1e-6)
    leg_len = creature.leg_length
    t_off, flight = 0.38 * d, 0.28 * d * rng.uniform(0.9, 1.1)
    t_land = t_off + flight
    distance = rng.uniform(0.5, 0.8) * leg_len * (0.5 if creature.family == "biped" else 1.0)
    s = np.clip((t - t_off) / flight, 0.0, 1.0)
    rise = 0.5 * GRAVITY * flight**2 * s * (1.0 - s)  # ballistic: h(s) = g T² s(1-s) / 2
    crouch = 0.22 * leg_len * (envelope(t, 0.05 * d, 0.28 * d, 0.28 * d, t_off)
                               + envelope(t, t_land, t_land + 0.08 * d, t_land + 0.08 * d, 0.95 * d))
    pelvis = creature.rig.heads[creature.pelvis]
    root = np.repeat(pelvis[None], frames, axis=0)
    root[:, 1] -= distance * s
    root[:, 2] += rise - crouch
    tilt = 0.15 * np.sin(2 * np.pi * s) * (s > 0) * (s < 1)
    pose = BodyPose(root, about(X_AXIS, tilt))
    neck = creature.neck + ([creature.head] if creature.head >= 0 else [])
    if neck:
        pose.neck = np.repeat(_vec(frames, pitch=-tilt)[:, None] / len(neck), len(neck), axis=1)
    if creature.tail:
        lift = 0.3 * tail_lift(creature) + 0.4 * rise / max(leg_len, 1e-6)
        count = len(creature.tail)
        pose.tail = np.repeat(_vec(frames, pitch=lift)[:, None] / count, count, axis=1)
    targets = _rest_feet(legs, frames)
    contacts = (t <= t_off) | (t >= t_land)
    contacts = np.repeat(contacts[:, None], len(legs), axis=1)
    hs = smoothstep(s)
    targets[:, :, 1] -= distance * hs[:, None]
    targets[:, :, 2] += (0.9 * rise + 0.15 * leg_len * np.sin(np.pi * s))[:, None]
    zeros = np.zeros((frames, len(legs)))
    fold = np.repeat((0.4 * np.sin(np.pi * s))[:, None], len(legs), axis=1)
    motion, info = solve_clip(creature, pose, FootPlan(targets, zeros, contacts, fold), fps,
                              _limb_extra(creature, "jump", t, d, rng))
    info.update(foot_targets=targets, take_off=t_off, landing=t_land, distance=distance)
    return GeneratedClip(motion, "jump", [GaitSegment("jump", frames / fps, 0.0)],
                         0.0, "forward", contacts, info)


def glide(creature: Creature, frames: int, fps: float, rng: np.random.Generator, speed: float | None,
          turn_rate: float) -> GeneratedClip:
    """Airborne glide: wings spread and banking, legs carried, slow descent well above the ground."""
    legs = leg_rigs(creature)
    size = creature.rig.body_size
    t = np.arange(frames) / fps
    v = speed if speed is not None else rng.uniform(0.9, 1.1) * 2.0 * np.sqrt(GRAVITY * size)
    heading = turn_rate * t
    dt = 1.0 / fps
    vel = v * heading_forward(heading)
    pelvis = creature.rig.heads[creature.pelvis]
    root = pelvis + np.concatenate([[np.zeros(3)], np.cumsum(0.5 * (vel[1:] + vel[:-1]) * dt, axis=0)])
    altitude = 1.5 * size
    root[:, 2] += altitude - 0.05 * size * t / max(t[-1], 1e-6)
    bank = 0.15 * np.sin(2 * np.pi * 0.3 * t + rng.uniform(0, 6.28)) + 0.3 * np.clip(turn_rate, -1, 1)
    pose = BodyPose(root, quat_multiply(about(Z_AXIS, heading), about(Y_AXIS, -bank)))
    targets = np.zeros((frames, len(legs), 3))
    for i, leg in enumerate(legs):
        carried = pose.root + quat_rotate(pose.body, leg.foot_rest - pelvis)
        targets[:, i] = carried + np.array([0.0, 0.1, 0.1]) * creature.leg_length
    zeros = np.zeros((frames, len(legs)))
    contacts = np.zeros((frames, len(legs)), dtype=bool)

    def extra(poser: Poser) -> None:
        pose_wings(poser, 0.08 * np.sin(2 * np.pi * 0.5 * t), np.zeros(frames))

    motion, info = solve_clip(creature, pose, FootPlan(targets, zeros, contacts, zeros), fps, extra,
                              lower=False)
    info.update(heading=heading, foot_targets=targets)
    return GeneratedClip(motion, "glide", [GaitSegment("glide", frames / fps, v)], v,
                         "forward", contacts, info)

