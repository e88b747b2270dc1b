"""Whether a clip is broken — frozen, exploded, floating, sinking or rest-posed — in an animator's words.

Generate Motion never writes a broken clip (generate/guard.py asks this module about every variant) and
the smoke benchmark (benchmarks/smoke_every_rig.py) sorts every generated clip of every rig file by it.
A clip is given as joint positions (T,J,3) with the rig's parents, its body size and floor, and where
they are known the feet's points (foot joints or the soles of the deformed mesh) and mesh vertices; all
thresholds are in body sizes and seconds, so a ×100 armature or a 24 fps clip reads the same.

- **frozen**: nothing moves. Each frame's joints are laid rigidly onto the first frame's (Kabsch), which
  takes out travel and turning; a clip whose every joint then stays within `frozen` (1 %) of a body size
  of where it is most of the time is a statue, standing or sliding; a clip asked for something in place
  (an idle that only breathes, a tail wag), within `frozen_still` (0.05 %). A legged locomotion clip
  whose feet stay within `frozen_legs` (3 %) of where they are relative to the body never steps,
  whatever else moves.
- **exploded**: the body (the mean of the joints, or of the vertices) faster than `root_speed` (20) body
  sizes per second in any frame; a joint or vertex further than `reach` (4) body sizes from the body;
  or bones that stretch: a bone's length (joint to parent, the joints a clip moves on purpose — IK
  controls, a body riding on a floor-level root — left out) changing by more than `stretch` (5 %).
- **floating**: a legged locomotion clip (walk, trot, run, gallop… — not a flight, a swim or a jump)
  whose feet are planted less than `planted` (5 %) of the time, read with eval/gait.py's contact rules
  (the benchmark's measure): the soles near the floor and slow.
- **sinking**: the lowest point (a vertex where the mesh is given, else a joint but a root: a root bone
  that carries the rig from the floor is a handle) below the floor by more than `sinking` (2 %) of a body
  size on more than `sinking_share` (10 %) of the frames: one toe dipping through at a push-off is
  penetration the metrics report, a body that goes through the floor is broken. A swim or a flight has
  no floor to keep above (`floor` None): a fish bobs and a dragon beats its wings below where it hovers.
- **rest-posed** (`rest_posed`, the benchmark's: it needs the rig's own clips): arms or wings held out
  sideways — their lateral elevation, the angle between the limb and the body's mid-plane — where the
  rig's own clips never hold them, by more than `rest_margin` (20°): a T-posed knight walking with its
  arms out, a bird walking with its wings spread (the message says when the limb is held as the rest
  pose holds it).

numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .gait import FootTrack, GaitInput, contacts

KINDS = ("frozen", "exploded", "floating", "sinking", "rest_posed")


@dataclass(frozen=True)
class BrokenLimits:
    """Where a clip counts as broken (module docstring); lengths in body sizes."""

    frozen: float = 0.01  # every joint's largest excursion with the body laid still
    frozen_still: float = 0.0005  # the same for a clip asked for something in place (an idle breathes)
    frozen_legs: float = 0.03  # a walk's feet relative to the body
    root_speed: float = 20.0  # body sizes per second
    reach: float = 4.0  # a point this far from the body has flown off
    stretch: float = 0.05  # relative change of a bone's length
    short_bone: float = 0.01  # bones shorter than this are too short to tell a stretch from rounding
    planted: float = 0.05  # share of the time a walk's feet are planted, at least
    sinking: float = 0.02  # depth below the floor
    sinking_share: float = 0.10  # of the frames
    rest_margin: float = 20.0  # degrees beyond the range of the rig's own clips


@dataclass(frozen=True)
class Finding:
    """What is wrong with a clip: its kind (KINDS), what an animator is told, and the number behind it."""

    kind: str
    message: str
    value: float


@dataclass(frozen=True)
class ClipShape:
    """A clip as the guard sees it. `positions` (T,J,3) joint heads, `parents` (J,); `up` +Z. `feet`
    (F,T,3): the points that plant (soles or foot joints) with the floor at `floor` (None: there is none
    to keep above — a swim, a flight — and feet find theirs as eval/gait.py does); `legged`: the clip
    asks for legged locomotion (its feet must plant). `vertices` (T,V,3): the deformed mesh, where
    known; `still`: the clip is asked for something in place (no locomotion), which may move very
    little. `free`:
    joints whose offset from their parent the clip moves on purpose. `names`: the joints' names, for
    the messages."""

    positions: np.ndarray
    parents: np.ndarray
    fps: float
    body_size: float = 1.0
    floor: float | None = 0.0
    feet: np.ndarray | None = None
    legged: bool = False
    vertices: np.ndarray | None = None
    still: bool = False
    free: Sequence[int] = ()
    names: Sequence[str] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        positions = np.asarray(self.positions, dtype=np.float64)
        if positions.ndim != 3 or positions.shape[2] != 3 or len(positions) < 2:
            raise ValueError(f"positions must be (T,J,3) with T >= 2, got {positions.shape}")
        if not (self.fps > 0 and self.body_size > 0):
            raise ValueError("fps and body_size must be positive")
        object.__setattr__(self, "positions", positions)
        object.__setattr__(self, "parents", np.asarray(self.parents, dtype=np.int64))
        for name in ("feet", "vertices"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, np.asarray(value, dtype=np.float64))

    @property
    def points(self) -> np.ndarray:
        """(T,P,3) what the body is made of: the mesh where known, else the joints."""
        return self.vertices if self.vertices is not None and self.vertices.shape[1] else self.positions

    @cached_property
    def body(self) -> np.ndarray:
        """(T,3) the body's path: the mean of its points."""
        return self.points.mean(axis=1)

    def name(self, joint: int) -> str:
        return self.names[joint] if joint < len(self.names) else f"joint {joint}"


# ----------------------------------------------------------------------------- frozen
def laid_still(points: np.ndarray) -> np.ndarray:
    """(T,P,3) each frame's points moved rigidly onto the first frame's (Kabsch: rotation about their
    centroid, then translation): what is left is the motion of the parts relative to each other."""
    centred = points - points.mean(axis=1, keepdims=True)
    reference = centred[0]
    cross = np.einsum("tpi,pj->tij", centred, reference)
    u, _, vt = np.linalg.svd(cross)
    sign = np.sign(np.linalg.det(np.einsum("tij,tjk->tik", u, vt)))
    u[:, :, 2] *= sign[:, None]
    rotation = np.einsum("tij,tjk->tik", u, vt)  # row vectors: x @ rotation lays x onto the reference
    return np.einsum("tpi,tij->tpj", centred, rotation) + points[0].mean(axis=0)


def excursions(points: np.ndarray) -> np.ndarray:
    """(P,) how far each point strays from its median place over the clip."""
    return np.linalg.norm(points - np.median(points, axis=0, keepdims=True), axis=-1).max(axis=0)


def _travel(clip: ClipShape) -> float:
    body = clip.body
    return float(np.linalg.norm(body[-1, :2] - body[0, :2])) / clip.body_size


def frozen(clip: ClipShape, limits: BrokenLimits = BrokenLimits()) -> Finding | None:
    """Nothing moves but the whole body, or a walk's feet never step (module docstring)."""
    still = laid_still(clip.positions)
    moves = float(excursions(still).max()) / clip.body_size
    travel = _travel(clip)
    how = f"the body slides {travel:.1f} body sizes" if travel > 0.05 else "it stands"
    if moves < (limits.frozen_still if clip.still else limits.frozen):
        return Finding("frozen", f"the clip froze: nothing moved ({how} with every joint held within "
                       f"{100 * moves:.1f} % of its size of one pose)", moves)
    if clip.legged and clip.feet is not None and len(clip.feet):
        # The feet against the body: the joints' rigid motion taken out of the soles as well.
        feet = clip.feet - clip.positions.mean(axis=1)[None]
        stepping = float(np.max([excursions(f[:, None])[0] for f in feet])) / clip.body_size
        if stepping < limits.frozen_legs:
            return Finding("frozen", f"the legs froze: the feet never step ({how}; no foot moves more "
                           f"than {100 * stepping:.1f} % of the body's size)", stepping)
    return None


# ----------------------------------------------------------------------------- exploded
def bone_stretch(clip: ClipShape, limits: BrokenLimits = BrokenLimits()) -> tuple[float, int]:
    """The largest relative change of a bone's length over the clip (longest over shortest, less one),
    and its joint (-1: none measured); bones shorter than `limits.short_bone` and the clip's free joints
    are left out."""
    child = np.flatnonzero(clip.parents >= 0)
    child = child[~np.isin(child, np.asarray(clip.free, dtype=np.int64))]
    if child.size == 0:
        return 0.0, -1
    lengths = np.linalg.norm(clip.positions[:, child] - clip.positions[:, clip.parents[child]], axis=-1)
    typical = np.median(lengths, axis=0)
    keep = typical > limits.short_bone * clip.body_size
    if not np.any(keep):
        return 0.0, -1
    shortest = lengths.min(axis=0)[keep]
    change = (lengths.max(axis=0)[keep] - shortest) / np.maximum(shortest, 1e-12)
    worst = int(np.argmax(change))
    return float(change[worst]), int(child[keep][worst])


def exploded(clip: ClipShape, limits: BrokenLimits = BrokenLimits()) -> Finding | None:
    """The body shoots off, a part flies away, or bones stretch (module docstring)."""
    points = clip.points
    if not np.all(np.isfinite(points)) or not np.all(np.isfinite(clip.positions)):
        return Finding("exploded", "the clip exploded: it holds positions that are not numbers", float("inf"))
    body = clip.body
    speed = float(np.linalg.norm(np.diff(body, axis=0), axis=-1).max()) * clip.fps / clip.body_size
    if speed > limits.root_speed:
        return Finding("exploded", f"the clip exploded: the body shoots off at {speed:.0f} body sizes a "
                       f"second (a gallop covers about 3)", speed)
    far = float(np.linalg.norm(points - body[:, None], axis=-1).max()) / clip.body_size
    if far > limits.reach:
        return Finding("exploded", f"the clip exploded: part of the body flies {far:.1f} body sizes away "
                       "from it", far)
    stretch, joint = bone_stretch(clip, limits)
    if stretch > limits.stretch:
        return Finding("exploded", f"the clip exploded: the bone {clip.name(joint)!r} stretches by "
                       f"{100 * stretch:.0f} %", stretch)
    return None


# ----------------------------------------------------------------------------- floating, sinking
def planted_share(clip: ClipShape) -> float:
    """The share of the frames the feet are planted, mean over feet (eval/gait.py's contact rules)."""
    feet = tuple(FootTrack(f"foot{k}", "centre", "hind", points) for k, points in enumerate(clip.feet))
    gait = GaitInput(clip.fps, feet, clip.body, clip.body_size, clip.floor)
    masks = contacts(gait)
    return float(np.mean([np.mean(mask) for mask in masks.values()]))


def floating(clip: ClipShape, limits: BrokenLimits = BrokenLimits()) -> Finding | None:
    """A walk (or any legged locomotion) whose feet hardly touch the ground."""
    if not clip.legged or clip.feet is None or not len(clip.feet):
        return None
    share = planted_share(clip)
    if share >= limits.planted:
        return None
    floor = float(np.percentile(clip.feet[..., 2].min(axis=0), 10)) if clip.floor is None else clip.floor
    lowest = float(np.min(clip.feet[..., 2]) - floor) / clip.body_size
    above = ""
    if lowest > 0.02:
        above = f"; the lowest foot stays {100 * lowest:.0f} % of its size above the floor"
    return Finding("floating", f"the creature floats: its feet are planted {100 * share:.0f} % of the time "
                   f"(a walk plants each foot about half of it){above}", share)


def solid_points(clip: ClipShape) -> np.ndarray:
    """(T,P,3) what must stay above the floor: the mesh, else the joints but the roots (a root bone that
    carries the rig from the floor is a handle, not the body)."""
    if clip.vertices is not None and clip.vertices.shape[1]:
        return clip.vertices
    inside = clip.parents >= 0
    return clip.positions[:, inside] if np.any(inside) else clip.positions


def depths(clip: ClipShape) -> np.ndarray:
    """(T,) how far the body's lowest point is below the floor each frame (body sizes; zeros without a
    floor)."""
    if clip.floor is None:
        return np.zeros(len(clip.positions))
    return (clip.floor - solid_points(clip)[..., 2].min(axis=1)) / clip.body_size


def sinking(clip: ClipShape, limits: BrokenLimits = BrokenLimits()) -> Finding | None:
    """The body goes through the floor (module docstring); a clip with no floor (a swim, a flight) cannot."""
    depth = depths(clip)
    deep = depth > limits.sinking
    share = float(np.mean(deep))
    if share <= limits.sinking_share:
        return None
    what = "mesh" if clip.vertices is not None else "skeleton"
    return Finding("sinking", f"the creature sinks through the floor: its {what} goes "
                   f"{100 * float(depth.max()):.0f} % of its size below it, for {100 * share:.0f} % of the "
                   "clip", float(depth.max()))


def measures(clip: ClipShape, limits: BrokenLimits = BrokenLimits()) -> dict[str, float | None]:
    """The numbers the classes are decided by (body sizes, seconds): the largest joint excursion with the
    body laid still, the body's top speed, the farthest point from it, the worst bone stretch, the share
    of the time the feet are planted (legged clips) and the depth below the floor exceeded on
    `sinking_share` of the frames: for benchmarks, to show how far a clip is from each bar."""
    body = clip.body
    planted = planted_share(clip) if clip.legged and clip.feet is not None and len(clip.feet) else None
    return {"moves": float(excursions(laid_still(clip.positions)).max()) / clip.body_size,
            "speed": float(np.linalg.norm(np.diff(body, axis=0), axis=-1).max()) * clip.fps / clip.body_size,
            "reach": float(np.linalg.norm(clip.points - body[:, None], axis=-1).max()) / clip.body_size,
            "stretch": bone_stretch(clip, limits)[0], "planted": planted,
            "depth": float(np.percentile(depths(clip), 100 * (1 - limits.sinking_share)))}


def classify(clip: ClipShape, limits: BrokenLimits = BrokenLimits()) -> list[Finding]:
    """Everything that is broken about a clip (empty: nothing); an exploded clip is not asked more."""
    blown = exploded(clip, limits)
    if blown is not None:
        return [blown]
    found = [frozen(clip, limits), floating(clip, limits), sinking(clip, limits)]
    return [f for f in found if f is not None]


# ----------------------------------------------------------------------------- rest-posed
@dataclass(frozen=True)
class LimbPair:
    """A left and a right arm (or wing): each from its first joint (clavicle, shoulder) to its last."""

    name: str  # "arms", "wings"
    left: tuple[int, int]
    right: tuple[int, int]


def spread_angles(positions: np.ndarray, pair: LimbPair) -> np.ndarray:
    """(T,2) degrees each limb of the pair is held out from the body's mid-plane (0: along the body or
    hanging, 90: straight out sideways); the mid-plane's normal is the line from the right limb's first
    joint to the left's, frame by frame."""
    positions = np.asarray(positions, dtype=np.float64)
    across = positions[:, pair.left[0]] - positions[:, pair.right[0]]
    across /= np.maximum(np.linalg.norm(across, axis=-1, keepdims=True), 1e-12)
    out = []
    for top, end in (pair.left, pair.right):
        limb = positions[:, end] - positions[:, top]
        limb /= np.maximum(np.linalg.norm(limb, axis=-1, keepdims=True), 1e-12)
        out.append(np.degrees(np.arcsin(np.clip(np.abs(np.sum(limb * across, axis=-1)), 0.0, 1.0))))
    return np.stack(out, axis=1)


def rest_posed(generated: np.ndarray, authored: np.ndarray, what: str = "arms",
               rest: np.ndarray | None = None, limits: BrokenLimits = BrokenLimits()) -> Finding | None:
    """A clip whose limbs (spread_angles, (T,2)) are held, for most of it, outside the range the rig's
    own clips hold them in (`authored`: their frames' angles, (N,2); its 2nd–98th percentiles) by more
    than `limits.rest_margin` degrees. `rest` (2,): the rest pose's angles, where known: the message
    says when the limb is held as the rest pose holds it (within `limits.rest_margin` / 2)."""
    generated, authored = np.asarray(generated, np.float64), np.asarray(authored, np.float64)
    if not len(generated) or not len(authored):
        return None
    low, high = np.percentile(authored, 2, axis=0), np.percentile(authored, 98, axis=0)
    held = np.median(generated, axis=0)
    for k, side in enumerate(("left", "right")):
        if low[k] - limits.rest_margin <= held[k] <= high[k] + limits.rest_margin:
            continue
        as_rest = rest is not None and abs(held[k] - float(rest[k])) <= limits.rest_margin / 2
        how = " (as the rest pose holds it)" if as_rest else ""
        return Finding("rest_posed", f"the {what} are held where the rig's own clips never hold them: the "
                       f"{side} one {held[k]:.0f}° out from the body{how}, where its own clips hold it "
                       f"{low[k]:.0f}–{high[k]:.0f}°", float(held[k]))
    return None


def describe(findings: Sequence[Finding]) -> str:
    """One sentence for the animator: every finding, the first first."""
    if not findings:
        return "nothing is broken"
    text = "; ".join(f.message for f in findings)
    return text[0].upper() + text[1:] + "."
