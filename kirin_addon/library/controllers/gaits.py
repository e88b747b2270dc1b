"""Legged locomotion: gaits, stride frequencies and speeds, turning paths, and the clip that puts them
together (planted feet, swing arcs, body bob, IK legs) for any number of legs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ...core.creature import Creature
from ...core.motion import forward_kinematics
from ...core.rotations import quat_multiply
from .body import arm_limbs, clearance_lifts, fold_wings, pose_arms, sole_lifts, tail_lift
from .common import GRAVITY, X_AXIS, Y_AXIS, Z_AXIS, ControllerError, GeneratedClip, about, smooth_upper
from .feet import GaitSchedule, girdle_shifts, phase_offsets, plan_feet, roll_feet, spine_turn_bend
from .path import Profile, TimeGrid, build_path, segment_weights
from .poser import BodyPose, FootPlan, LegRig, Poser, chain_bends, leg_rigs, solve_clip
from .reach import leg_reach
from .segments import GaitSegment

# At least this many frames per gait cycle by default: faster cycles alias at the clip's frame rate.
MIN_CYCLE_FRAMES = 6.0
# ... and at least this many frames per swing, so a swinging foot never crosses its stride in one frame (the
# wave gait's 0.8 duty leaves a fifth of the cycle for the swing).
MIN_SWING_FRAMES = 2.0
# Never fewer than this many (explicit speeds and turn rates may need faster cycles than the above).
HARD_CYCLE_FRAMES = 4.0
# The longest stride (in leg lengths) a tempo asked for may take: Alexander's relative stride at a
# Froude number of about 1 for a walk, up to three times that for a gait with long flight phases.
MAX_STRIDE = 2.3
# A default turn may shorten strides by up to this factor before it is made wider.
TURN_STRIDE = 1.5


@dataclass(frozen=True, kw_only=True)
class Gait:
    """A legged gait: footfall phases by leg pattern, duty factor and defaults from the Froude number (a
    segment's GaitOverrides may set the fields they name)."""

    name: str
    pattern: str  # how per-leg phase offsets are laid out (see `_phase_offsets`)
    duty: float  # fraction of the cycle each foot is on the ground
    froude: float  # default speed as Froude number v² / (g L)
    lift: float  # swing foot clearance, in leg lengths
    bob: float  # vertical body bob, in leg lengths
    bobs_per_cycle: int  # 2 for symmetric gaits, 1 for gallops, bounds and pronks
    pitch: float = 0.0  # body pitch oscillation (rad), for bounds and gallops
    sway: float = 0.0  # lateral body sway, in leg lengths (bipeds)
    stride_scale: float = 1.0  # multiplies Alexander's relative stride length
    nod: float = 0.04  # head-and-neck pitch oscillation (rad), with the body bob
    crouch: float = 0.08  # body drop (in leg lengths) the stride may count on to reach further
    lean: float = 0.0  # forward pitch (rad) of the spine while moving (a runner leans into the run)
    arm_swing: float = 0.35  # fore–aft swing (rad) of arms against the legs of their side
    elbow: float = 0.35  # forearm bend (rad) of swinging arms
    heel_off: float = 0.0  # foot pitch (rad) as the heel comes up before lift-off (feet with toes)
    heel_strike: float = 0.0  # toes up (rad) as the foot lands heel first


def _by_name(*gaits: Gait) -> dict[str, Gait]:
    return {gait.name: gait for gait in gaits}


GAITS: dict[str, Gait] = _by_name(
    Gait(name="walk", pattern="lateral", duty=0.58, froude=0.30, lift=0.08, bob=0.012, bobs_per_cycle=2),
    Gait(name="trot", pattern="trot", duty=0.45, froude=0.70, lift=0.12, bob=0.025, bobs_per_cycle=2),
    Gait(name="pace", pattern="pace", duty=0.45, froude=0.70, lift=0.11, bob=0.02, bobs_per_cycle=2),
    Gait(name="canter", pattern="canter", duty=0.40, froude=1.30, lift=0.13, bob=0.03, bobs_per_cycle=1,
         pitch=0.06),
    Gait(name="gallop", pattern="transverse", duty=0.25, froude=5.00, lift=0.14, bob=0.03, bobs_per_cycle=1,
         pitch=0.08, stride_scale=0.95, nod=0.25, crouch=0.12),
    Gait(name="rotary_gallop", pattern="rotary", duty=0.25, froude=5.00, lift=0.14, bob=0.03,
         bobs_per_cycle=1, pitch=0.08, stride_scale=0.95, nod=0.25, crouch=0.12),
    Gait(name="bound", pattern="bound", duty=0.38, froude=1.40, lift=0.14, bob=0.035, bobs_per_cycle=1,
         pitch=0.10, stride_scale=0.85),
    Gait(name="pronk", pattern="pronk", duty=0.35, froude=0.60, lift=0.16, bob=0.05, bobs_per_cycle=1,
         stride_scale=0.7),
    Gait(name="biped_walk", pattern="alternate", duty=0.62, froude=0.20, lift=0.07, bob=0.015,
         bobs_per_cycle=2, sway=0.02, stride_scale=0.7),
    Gait(name="run", pattern="alternate", duty=0.36, froude=1.00, lift=0.14, bob=0.03, bobs_per_cycle=2,
         sway=0.01, stride_scale=0.75),
    Gait(name="hop", pattern="pronk", duty=0.40, froude=0.35, lift=0.18, bob=0.06, bobs_per_cycle=1,
         stride_scale=0.7),
    Gait(name="tripod", pattern="tripod", duty=0.55, froude=0.25, lift=0.10, bob=0.01, bobs_per_cycle=2,
         stride_scale=0.8),
    Gait(name="wave", pattern="wave", duty=0.80, froude=0.10, lift=0.10, bob=0.005, bobs_per_cycle=1,
         stride_scale=0.8),
)

# Gait names each family accepts for locomotion, and what "walk" means for it.
FAMILY_GAITS = {
    "quadruped": {"walk": "walk", "trot": "trot", "pace": "pace", "canter": "canter", "gallop": "gallop",
                  "rotary_gallop": "rotary_gallop", "bound": "bound", "pronk": "pronk"},
    "dragon": {"walk": "walk", "trot": "trot", "canter": "canter", "gallop": "gallop", "bound": "bound"},
    "biped": {"walk": "biped_walk", "run": "run"},
    "bird": {"walk": "biped_walk", "hop": "hop", "run": "run"},
    "hexapod": {"walk": "tripod", "tripod": "tripod", "wave": "wave"},
    "spider": {"walk": "tripod", "tripod": "tripod", "wave": "wave"},
}


# A sprawled leg's swing lift is counted in this share of its length (not the body's low hip height).
SPRAWLED_LIFT = 0.5


def stride_frequency(gait: Gait, speed: float, leg: float) -> float:
    """Cycles per second from Alexander's relative stride length λ = 2.3·Fr^0.3 (scaled per gait)."""
    default = np.sqrt(gait.froude * GRAVITY * leg)
    froude = max(speed, 0.25 * default) ** 2 / (GRAVITY * leg)
    stride = 2.3 * froude**0.3 * gait.stride_scale * leg
    return max(speed, 0.25 * default) / stride


def _gait_for(family: str, name: str) -> Gait:
    table = FAMILY_GAITS.get(family, {})
    if name not in table:
        raise ControllerError(f"A {family} has no gait '{name}' (known: {', '.join(sorted(table))}).")
    return GAITS[table[name]]


def _wrap(x: np.ndarray) -> np.ndarray:
    return (x + 0.5) % 1.0 - 0.5


# ----------------------------------------------------------------------------- legged locomotion
def _largest(ok: Callable[[float], bool], hi: float, iterations: int = 24) -> float:
    """Largest x in [0, hi] with ok(x), for ok true at 0 and monotone (bisection)."""
    if ok(hi):
        return hi
    lo = 0.0
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


@dataclass(frozen=True)
class _StrideFit:
    """What a locomotion clip's speeds, turn rates and stride frequencies are fitted to: what the legs
    reach (see LegReach), the frame rate, and the requested direction and turn rate."""

    creature: Creature
    legs: list[LegRig]
    arms: np.ndarray  # (L,2) stance centres relative to the pivot the body turns about
    fps: float
    direction: str
    turn_rate: float | None
    duration: float
    stride_mult: float

    @property
    def leg_len(self) -> float:
        return max(self.creature.leg_length, 1e-3)

    @property
    def sign(self) -> float:
        return -1.0 if self.direction == "backward" else 1.0

    @property
    def f_hard(self) -> float:
        return self.fps / HARD_CYCLE_FRAMES

    def needed(self, v: float, w: float, gait: Gait) -> float:
        """Least stride frequency at which every foot's stance fits its reach (see LegReach)."""
        velocity = np.stack([-w * self.arms[:, 1], w * self.arms[:, 0]], axis=1)
        velocity[:, 1] -= self.sign * v  # forward is −Y
        return leg_reach(self.creature, self.legs, gait.crouch).frequency(velocity, gait.duty)

    def cap(self, gait: Gait) -> float:
        """Highest default stride frequency the frame rate can show for this gait."""
        return self.fps / max(MIN_CYCLE_FRAMES, MIN_SWING_FRAMES / max(1.0 - gait.duty, 1e-3))

    def base(self, v: float, gait: Gait) -> float:
        # Alexander's stride, or shorter where the legs cannot reach that far (tiny legs give
        # frequencies above what the frame rate can show: capped there).
        return max(min(stride_frequency(gait, v, self.leg_len), self.cap(gait)), self.needed(v, 0.0, gait))

    def segment(self, gait: Gait, seg: GaitSegment, variation: float) -> tuple[float, float, float]:
        """(speed, stride frequency, turn rate) of one moving segment. A stride frequency asked for sets the
        tempo: the speed is then the fastest whose strides the legs reach at it, times the segment's
        `stride` share. A segment's own `turn` is an angle kept whole: the body slows where the legs need
        it to."""
        asked = None if seg.turn is None else seg.turn / max(seg.duration, 1e-6)
        if seg.frequency is not None and seg.speed is None:
            return self._at_frequency(gait, variation * seg.frequency, asked, seg.stride)
        default_speed = seg.speed is None
        if default_speed:
            v = variation * np.sqrt(gait.froude * GRAVITY * self.leg_len)
            # Default speeds stay what the legs can sweep at a cycle rate the frame rate can show.
            v = seg.stride * min(v, variation * self.cap(gait) / max(self.needed(1.0, 0.0, gait), 1e-12))
        else:
            v = float(seg.speed)
        if asked is not None:
            w = asked
            allowed = min(self.cap(gait), TURN_STRIDE * self.base(v, gait))
            v = _largest(lambda x: self.needed(x, w, gait) <= allowed, v)
        elif self.turn_rate is not None:
            w = float(self.turn_rate)
        else:
            w = default_turn(self.direction, 0.0, self.duration, v, self.leg_len)
        if w and self.turn_rate is None and asked is None:
            v, w = self._bounded_turn(gait, v, w, default_speed)
        f = min(max(self.base(v, gait), self.needed(v, w, gait)) * self.stride_mult,
                max(self.f_hard, self.base(v, gait)))
        return v, f, w

    def _at_frequency(self, gait: Gait, frequency: float, asked: float | None = None,
                      stride: float = 1.0) -> tuple[float, float, float]:
        frequency = min(frequency, self.cap(gait))
        w = float(self.turn_rate) if self.turn_rate is not None else 0.0
        if asked is not None:
            w = asked
        elif self.turn_rate is None and self.direction in ("left", "right", "circle"):
            w = default_turn(self.direction, 0.0, self.duration, 0.0, self.leg_len)
        v = self._fastest(gait, frequency, w)
        if stride <= 1.0:
            v *= stride
        else:  # a longer stride than the legs reach: the cadence rises instead (up to what the frames show)
            target = stride * v
            for _ in range(3):
                if v >= 0.999 * target or frequency >= self.cap(gait):
                    break
                frequency = min(self.cap(gait), frequency * target / max(v, 1e-9))
                v = min(target, self._fastest(gait, frequency, w))
        return v, max(frequency, self.needed(v, w, gait)), w

    def _fastest(self, gait: Gait, frequency: float, w: float) -> float:
        """The fastest speed whose strides the legs reach at `frequency` while turning at `w`."""
        hi = 3.0 * np.sqrt(gait.froude * GRAVITY * self.leg_len)
        # A running gait flies between stances: its stride may be longer than a walk's.
        longest = MAX_STRIDE * (1.0 + 2.0 * max(0.0, 0.5 - gait.duty) / 0.5) * self.leg_len

        def fits(x: float) -> bool:  # the legs reach the stride, and it is a stride a leg can take
            return self.needed(x, w, gait) <= frequency and x <= frequency * longest

        # A retry for a body that dropped too far keeps the tempo and shortens the stride instead.
        return _largest(fits, hi) / self.stride_mult

    def _bounded_turn(self, gait: Gait, v: float, w: float, default_speed: bool) -> tuple[float, float]:
        # A turn may shorten the stride a little (the outer and far feet sweep further than on a
        # straight path); beyond that a default turn is taken more slowly: on the same radius
        # (left/right; the feet's speeds scale with it) or, for a circle, at the same turn rate.
        # With an explicit speed a left/right turn is made wider instead. Explicit turn rates
        # are kept.
        f_cap = self.cap(gait)
        allowed = min(f_cap, TURN_STRIDE * self.base(v, gait))
        if default_speed and self.direction != "circle" and self.needed(v, w, gait) > allowed:
            scale = allowed / self.needed(v, w, gait)
            v, w = v * scale, w * scale
        if self.direction == "circle" and default_speed:
            # ... but at no less than half speed where quicker strides (up to the frame-rate
            # limit) allow it: a circle is walked, not turned on the spot.
            allowed = max(allowed, min(f_cap, self.needed(0.5 * v, w, gait)))
            v = _largest(lambda x: self.needed(x, w, gait) <= allowed, v)
        if self.needed(v, w, gait) > allowed:
            side = np.sign(w)
            w = side * _largest(lambda x: self.needed(v, side * x, gait) <= allowed, abs(w))
        return v, w


def _segment_rates(fit: _StrideFit, segments: list[GaitSegment], rng: np.random.Generator
                   ) -> tuple[list[Gait], list[float], list[float], list[float]]:
    """Gait, speed, stride frequency and turn rate of each segment; a stop keeps the gait before it."""
    gaits, speeds, freqs, turns = [], [], [], []
    variation = rng.uniform(0.92, 1.08)
    for k, seg in enumerate(segments):
        if seg.stops and k == 0:
            raise ControllerError("A clip cannot start with a stop segment.")
        if seg.stops:
            gaits.append(gaits[-1])
            speeds.append(0.0)
            freqs.append(freqs[-1])
            turns.append(0.0)
            continue
        # The segment's overrides: a tempo calibrated on artists' rigs (kirin_addon/generate/tempo.py).
        gait = seg.overrides.applied(_gait_for(fit.creature.family, seg.action))
        v, f, w = fit.segment(gait, seg, variation)
        gaits.append(gait)
        speeds.append(v)
        freqs.append(f)
        turns.append(w)
    return gaits, speeds, freqs, turns


@dataclass(frozen=True)
class _GaitMix:
    """Which gait moves the body when: per-sample weights of each segment's gait (0 while stopped), the
    gait cycle's angle, and this clip's random amplitude."""

    gaits: list[Gait]
    live: np.ndarray  # (N,K)
    cycle: np.ndarray  # (N,) 2π · gait phase
    activity: np.ndarray  # (frames,) 1 while moving, 0 while stopped (clip frames)
    amp: float


def _lift_unit(legs: list[LegRig], hip_height: float) -> float:
    """What a swing's lift is counted in: the hip's height, or for legs sprawled out far wider than the
    body is high (a spider's, a beetle's) half their length: those feet lift a visible step."""
    spans = [float(np.sum(np.linalg.norm(leg.vectors, axis=1))) for leg in legs]
    return max(hip_height, SPRAWLED_LIFT * float(np.median(spans))) if spans else hip_height


def _schedule(gaits: list[Gait], freqs: list[float], weights: np.ndarray, legs: list[LegRig], leg_len: float,
              fps: float, rng: np.random.Generator) -> GaitSchedule:
    """Blend gait parameters across segments; phase offsets blend along the shortest way round."""
    n = weights.shape[0]
    duty = weights @ np.array([g.duty for g in gaits])
    lift = weights @ np.array([g.lift * leg_len * rng.uniform(0.9, 1.1) for g in gaits])
    freq = weights @ np.array(freqs)
    rises = np.cumsum(weights[:, ::-1], axis=1)[:, ::-1]
    offs = [phase_offsets(g.pattern, legs) for g in gaits]
    offsets = np.repeat(offs[0][None], n, axis=0)
    for k in range(1, len(gaits)):
        offsets = offsets + rises[:, k:k + 1] * _wrap(offs[k] - offs[k - 1])[None]
    phase = rng.uniform(0.0, 1.0) + np.concatenate([[0.0], np.cumsum(0.5 * (freq[1:] + freq[:-1]) / fps)])
    return GaitSchedule(phase, offsets, duty, lift, freq)


def _body_pose(creature: Creature, profile: Profile, mix: _GaitMix, leg_len: float) -> BodyPose:
    """Body (clip frames): bob, pitch and sway per gait (none while stopped), heading from the path, and
    the spine, neck and tail bending with the gait and into turns."""
    gaits, live, cycle, amp = mix.gaits, mix.live, mix.cycle, mix.amp
    n, frames = len(profile.times), profile.frames
    pelvis_rest = creature.rig.heads[creature.pelvis]
    bob = sum(live[:, k] * g.bob * leg_len * amp * np.cos(g.bobs_per_cycle * cycle)
              for k, g in enumerate(gaits))
    pitch = -sum(live[:, k] * g.pitch * amp * np.sin(cycle) for k, g in enumerate(gaits))
    sway = sum(live[:, k] * g.sway * leg_len * amp * np.sin(cycle) for k, g in enumerate(gaits))
    heading = profile.heading
    lateral = np.stack([np.cos(heading), np.sin(heading), np.zeros(n)], axis=-1)
    root = np.concatenate([profile.position, np.full((n, 1), pelvis_rest[2])], axis=1)
    root = root + lateral * sway[:, None] + Z_AXIS * bob[:, None]
    body = quat_multiply(about(Z_AXIS, heading), quat_multiply(about(X_AXIS, pitch), about(Y_AXIS, -2 * sway
                                                                                           / leg_len)))
    clip = profile.clip
    pose = BodyPose(clip(root), clip(body))
    turn_clip = clip(profile.turn)
    if creature.spine:
        bends = chain_bends(frames, len(creature.spine))
        bends[:, :, 2] = (spine_turn_bend(turn_clip) / len(creature.spine))[:, None]
        lean = sum(live[:, k] * g.lean for k, g in enumerate(gaits))
        bends[:, :, 0] = (clip(lean) - clip(pitch))[:, None] / len(creature.spine)
        pose.spine = bends
    neck = creature.neck + ([creature.head] if creature.head >= 0 else [])
    if neck:
        bends = chain_bends(frames, len(neck))
        # Nods with the bob: twice a cycle, or once (head down as the fore feet land: with the pitch).
        nod = sum(live[:, k] * g.nod * (np.sin(2 * cycle) if g.bobs_per_cycle == 2 else -np.sin(cycle))
                  for k, g in enumerate(gaits))
        bends[:, :, 0] = (amp * clip(nod))[:, None] / len(neck)
        bends[:, :, 2] = (np.clip(0.2 * turn_clip, -0.4, 0.4) / len(neck))[:, None]
        pose.neck = bends
    if creature.tail:
        bends = chain_bends(frames, len(creature.tail))
        k = np.arange(len(creature.tail))
        wave = np.sin(clip(cycle)[:, None] - 0.6 * k[None])
        bends[:, :, 2] = 0.12 * amp * wave * (0.3 + mix.activity[:, None])
        bends[:, 0, 0] = 0.3 * tail_lift(creature)
        pose.tail = bends
    return pose


def _swing_limbs(creature: Creature, legs: list[LegRig], offsets: np.ndarray, mix: _GaitMix,
                 clip: Callable[[np.ndarray], np.ndarray]) -> Callable[[Poser], None]:
    """Arms swing against the legs of their side (`offsets`: (L,) phase offsets at the clip's start),
    each frame as its gait swings them (a walk's loose arms, a run's bent and pumping: a walk into a run
    changes both as it changes gait); wings stay folded. `clip` takes the gait's samples to the clip's."""
    arms = arm_limbs(creature)
    amplitude = clip(_per_sample(mix, [g.arm_swing for g in mix.gaits]))
    elbow = clip(_per_sample(mix, [g.elbow for g in mix.gaits]))
    cycle = clip(mix.cycle)

    def extra(poser: Poser) -> None:
        swing = {}
        for n_arm, limb in enumerate(arms):
            same = [i for i, leg in enumerate(legs) if leg.limb.side == limb.side]
            offset = offsets[same[0]] if same else 0.0
            swing[n_arm] = amplitude * mix.amp * mix.activity * np.sin(cycle - 2 * np.pi * offset + np.pi)
        if arms:
            pose_arms(poser, swing, bend=elbow)
        if creature.limbs_of("wing"):
            fold_wings(poser)

    return extra


def _per_sample(mix: _GaitMix, values: list[float]) -> np.ndarray:
    """(N,) a gait value each sample, blended across segments as the gaits are; while stopped, the value of
    the next sample that moves, else of the last (a stop keeps the arms as the gait held them)."""
    live = mix.live.sum(axis=1)
    blended = mix.live @ np.asarray(values, dtype=float) / np.maximum(live, 1e-12)
    moving = np.flatnonzero(live > 1e-9)
    if not len(moving):
        return np.full(len(live), float(values[0]))
    nearest = moving[np.clip(np.searchsorted(moving, np.arange(len(live))), 0, len(moving) - 1)]
    return blended[nearest]


def _rolled(plan: FootPlan, legs: list[LegRig], creature: Creature, mix: _GaitMix) -> FootPlan:
    """The plan with heel-off and heel-strike where its gaits roll their feet (each segment's share)."""
    share = mix.live.sum(axis=0) / max(float(mix.live.sum()), 1e-12)
    heel_off = float(sum(w * g.heel_off for w, g in zip(share, mix.gaits, strict=True)))
    heel_strike = float(sum(w * g.heel_strike for w, g in zip(share, mix.gaits, strict=True)))
    if heel_off <= 0 and heel_strike <= 0:
        return plan
    return roll_feet(plan, legs, creature, heel_off, heel_strike)


def _blend_seconds(speeds: list[float]) -> float:
    """How long a change of gait takes: half a second, longer when the speed changes much (a walk into a
    run at twice its speed takes a second: faster, the feet cannot keep up with the body)."""
    ratio = 1.0
    for a, b in zip(speeds[:-1], speeds[1:], strict=False):
        if min(a, b) > 1e-9:
            ratio = max(ratio, max(a, b) / min(a, b))
    return float(np.clip(0.5 * ratio, 0.5, 1.5))


def _changing_gait(creature: Creature, legs: list[LegRig], gaits: list[Gait]) -> np.ndarray | None:
    """plan_feet's reach for a clip whose gait changes (None: one gait keeps its planned footfalls): at
    the deepest crouch any of its gaits counts on."""
    if len({g.name for g in gaits}) < 2:
        return None
    return leg_reach(creature, legs, max(g.crouch for g in gaits)).radius


def locomotion(creature: Creature, segments: list[GaitSegment], fps: float, rng: np.random.Generator,
               direction: str, turn_rate: float | None, stride_mult: float = 1.0) -> GeneratedClip:
    """Any number of legs: gait phases, planted feet, swing arcs, body bob, IK legs.

    turn_rate: heading rate (rad/s) honoured as given; None takes the direction's default ("left" /
    "right": a turn of radius ~2 leg lengths, "circle": a full circle over the clip), bounded by
    what the legs can reach.
    """
    legs = leg_rigs(creature)
    if not legs:
        raise ControllerError(f"This {creature.family} has no legs to walk on.")
    leg_len = max(creature.leg_length, 1e-3)
    frames = int(round(sum(s.duration for s in segments) * fps))
    reach = leg_reach(creature, legs)
    pelvis_rest = creature.rig.heads[creature.pelvis].copy()
    # The body turns about the centre of its feet (not the pelvis: a cow's hips sit far behind its
    # fore feet), so no foot swings round a long lever arm; its stance centres are the feet's.
    pivot = reach.neutral.mean(axis=0)
    fit = _StrideFit(creature, legs, (reach.neutral - pivot)[:, :2], fps, direction, turn_rate, frames / fps,
                     stride_mult)
    gaits, speeds, freqs, turns = _segment_rates(fit, segments, rng)
    f_min = min(freqs)
    pad = int(np.ceil(1.6 / f_min * fps))
    post = int(np.ceil(1.2 / f_min * fps))
    times = (np.arange(pad + frames + post) - pad) / fps
    durations = [s.duration for s in segments]
    weights = segment_weights(times, durations, min(_blend_seconds(speeds), 0.6 * min(durations)))
    profile = build_path(TimeGrid(times, pad, frames, fps), np.array(speeds), weights, np.array(turns),
                         fit.sign, pelvis_rest, pivot)

    stop_mask = np.array([s.stops for s in segments], dtype=float)
    amp = rng.uniform(0.85, 1.15)
    schedule = _schedule(gaits, freqs, weights, legs, _lift_unit(legs, leg_len), fps, rng)
    moving = (np.abs(profile.speed) > 1e-9) | (np.abs(profile.turn) > 1e-9)
    plan = plan_feet(profile, legs, schedule, reach.neutral, pelvis_rest, moving,
                     girdle_shifts(creature, legs, spine_turn_bend(profile.turn)),
                     _changing_gait(creature, legs, gaits))
    clip = profile.clip
    mix = _GaitMix(gaits, weights * (1.0 - stop_mask)[None], 2 * np.pi * schedule.phase,
                   clip(1.0 - weights @ stop_mask), amp)
    pose = _body_pose(creature, profile, mix, leg_len)
    extra = _swing_limbs(creature, legs, schedule.offsets[pad], mix, clip)

    plan = _rolled(plan, legs, creature, mix)
    contacts = clip(plan.contacts)
    # Swing feet count too for the body drop (a foot that cannot reach forward lowers the body).
    feet = FootPlan(clip(plan.targets), clip(plan.yaw), np.ones_like(contacts), clip(plan.fold),
                    None if plan.roll is None else clip(plan.roll))
    motion, info = solve_clip(creature, pose, feet, fps, extra, planted=contacts)
    half = max(1, int(round(0.08 * fps)))
    for _ in range(3):  # a long tail must not drag, nor a low head dip, nor a hoof's toe sink
        world = forward_kinematics(creature.rig, motion)  # one pass of FK for every clearance
        lift_tail, lift_head = clearance_lifts(creature, world)
        lift_tail = lift_tail if pose.tail is not None else None
        lift_head = lift_head if pose.neck is not None else None
        lift_soles = sole_lifts(creature, world, fps, [leg.chain for leg in legs], contacts)
        if lift_tail is None and lift_head is None and lift_soles is None:
            break
        if lift_soles is not None:
            feet.targets[..., 2] += lift_soles
        if lift_tail is not None:
            pose.tail[:, 0, 0] += smooth_upper(lift_tail, half)
        if lift_head is not None:
            pose.neck[:, 0, 0] -= smooth_upper(lift_head, half)  # a neck bends down for a positive pitch
        motion, info = solve_clip(creature, pose, feet, fps, extra, planted=contacts)
    info.update(heading=clip(profile.heading).copy(), phase=clip(schedule.phase).copy(), times=clip(times),
                speed_profile=clip(profile.speed).copy(), foot_targets=clip(plan.targets).copy(),
                gaits=[g.name for g in gaits], stride_frequency=[float(f) for f in freqs])
    mean_speed = float(np.mean(clip(profile.speed)))
    done = [replace(s, speed=v) for s, v in zip(segments, speeds, strict=True)]
    return GeneratedClip(motion, segments[0].action if len(segments) == 1 else "transition", done, mean_speed,
                         direction, contacts, info)


def default_turn(direction: str, turn_rate: float, duration: float, speed_hint: float, leg: float) -> float:
    """The heading rate (rad/s) of a direction: `turn_rate` when given, else a left/right turn of radius
    ~2 legs (a quarter turn over the clip without a speed hint), a full circle, or none."""
    if turn_rate:
        return turn_rate
    if direction in ("left", "right"):
        rate = 0.5 * speed_hint / max(leg, 1e-3) if speed_hint else np.pi / 2 / duration
        return min(rate, np.pi / duration) * (1 if direction == "left" else -1)
    if direction == "circle":
        return 2 * np.pi / duration
    return 0.0
