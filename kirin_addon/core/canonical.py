"""The canonical frame: +Z up, facing −Y, the creature's left on +X, unit body size.

A `CanonicalFrame` is the similarity x_c = scale · R · (x − origin) from a rig's *armature
space* into that frame: R is a proper rotation, `scale` makes the body size 1 (the largest extent
of the rest heads and tails) and `origin` is the main root's projection onto the floor (the
lowest rest joint, or the mesh's lowest vertex when a mesh is given).

`detect_canonical_frame` chooses R among the 24 axis-aligned orientations. Each hypothesis (up u,
forward f, left l = u × f) gets a weighted sum of cues computed from the rest pose alone, in the
rig's own axes, so that the choice follows the rig however it is turned, scaled or placed:

* side names — joints named left/right (".L", "Left", "_R_" …) lie towards the creature's left;
* mirror symmetry — the lateral axis is the one across which the joints mirror onto themselves
  (flat rigs and straight chains mirror trivially and say nothing);
* ground — standing, two or more separate legs touch the lowest plane, spread apart, with the
  centre of mass lifted above and over them, and more legs beat fewer (a dog on four feet, not on
  its hind legs and tail); a snake lies on it. Heads, faces, tails, fingers, wings and trunk
  joints ("Spine", "Hips", "Body") are never legs, so a rig on its face, back or tail gets none
  of this credit;
* foot names — feet, toes, paws, hooves and leg IK targets are the lowest joints, the rest of the
  body well above them;
* hanging limbs — legs hang down from hips and shoulders: the share of limb length pointing down;
* head and tail — the face (jaw, mouth, nose, beak …) or head leads the tail end (or the root),
  or, on a creature standing on two legs, tops it; "front"/"hind" limb names agree;
* toes — toes reach forward of the ankle;
* high front — a standing horizontal body (a quadruped) holds its head end above its tail end.

A small prior for the Blender convention (world +Z up, −Y forward) only breaks ties: it decides
for rigs without the evidence (an unnamed fish spine, a bare cylinder), and
`CanonicalFrame.confidence` — the evidence margin over the runner-up — says when it may have
(`CanonicalFrame.guessed`). Rigs read from a +Y-up file outside Blender (glTF, most BVH) should
pass `Y_UP_TO_Z_UP` as `world_matrix`, so that the prior knows which way is up.

The engine never imports bpy; this module uses numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .rest_pose_cues import AXES, RestPoseEvidence, body_joints, gather_evidence
from .rig import Rig
from .rotations import axis_rotations
from .skinning import SkinnedMesh

AXIS_NAMES = ("+X", "-X", "+Y", "-Y", "+Z", "-Z")  # the order of rest_pose_cues.AXES

# glTF and most BVH files are +Y up, facing +Z: this is how Blender's importers turn them (+Y → +Z,
# +Z → −Y). Pass it as `world_matrix` for such a rig read from a file, outside Blender.
Y_UP_TO_Z_UP = np.array([
    [1.0, 0.0, 0.0, 0.0],
    [0.0, 0.0, -1.0, 0.0],
    [0.0, 1.0, 0.0, 0.0],
    [0.0, 0.0, 0.0, 1.0],
])
Y_UP_TO_Z_UP.flags.writeable = False

# Weights of the evidence (each cue scores in [−1, 1] or [0, 1] before weighting).
W_SIDE_NAMES = 3.0
W_SYMMETRY = 2.0
W_GROUND = 2.0
W_FOOT_NAMES = 1.5
W_HANGING = 1.5
W_HEAD_TAIL = 1.5
W_TOES = 0.75
W_HIGH_FRONT = 0.75
# The prior: up along world +Z, forward along world −Y. Its largest effect on a comparison is
# PRIOR_SPAN, so evidence margins above that can never be overturned by it.
W_PRIOR_UP = 0.25
W_PRIOR_FORWARD = 0.125
PRIOR_SPAN = W_PRIOR_UP + W_PRIOR_FORWARD


def axis_vector(name: str) -> np.ndarray:
    """Unit vector of an axis label: "+X", "-Y", "Z" (= "+Z") …"""
    label = str(name).strip().upper()
    if label in ("X", "Y", "Z"):
        label = "+" + label
    if label not in AXIS_NAMES:
        raise ValueError(f"Unknown axis {name!r}; use one of {', '.join(AXIS_NAMES)}.")
    vector = np.zeros(3)
    vector["XYZ".index(label[1])] = 1.0 if label[0] == "+" else -1.0
    return vector


def axis_name(vector: np.ndarray) -> str:
    """Label of the signed coordinate axis nearest to a vector (inverse of `axis_vector`)."""
    k = int(np.argmax(np.abs(vector)))
    return ("+" if vector[k] > 0 else "-") + "XYZ"[k]


@dataclass(frozen=True, eq=False)
class CanonicalFrame:
    """x_c = scale · rotation · (x − origin) for x in armature space.

    `up_axis` / `forward_axis` name the rig's up and forward in world axes (the armature's axes
    after its world matrix; armature axes when there is none). `confidence` is the evidence margin
    of the chosen orientation over the best other one (inf when overrides fixed it); `notes` lists
    the evidence behind the choice.
    """

    rotation: np.ndarray  # (3,3) proper rotation, armature axes -> canonical axes
    scale: float  # canonical units per armature unit (1 / body size)
    origin: np.ndarray  # (3,) armature-space point that maps to the canonical origin
    up_axis: str = "+Z"
    forward_axis: str = "-Y"
    confidence: float = float("inf")
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        rotation = np.array(self.rotation, dtype=np.float64).reshape(3, 3)
        origin = np.array(self.origin, dtype=np.float64).reshape(3)
        rotation.flags.writeable = False
        origin.flags.writeable = False
        object.__setattr__(self, "rotation", rotation)
        object.__setattr__(self, "origin", origin)
        object.__setattr__(self, "scale", float(self.scale))

    @property
    def guessed(self) -> bool:
        """True when the evidence was too weak and the Blender-convention prior may have decided."""
        return self.confidence <= PRIOR_SPAN

    def matrix(self) -> np.ndarray:
        """4x4 similarity from armature space to the canonical frame."""
        out = np.eye(4)
        out[:3, :3] = self.scale * self.rotation
        out[:3, 3] = -self.scale * (self.rotation @ self.origin)
        return out

    def inverse_matrix(self) -> np.ndarray:
        """4x4 similarity from the canonical frame back to armature space."""
        out = np.eye(4)
        out[:3, :3] = self.rotation.T / self.scale
        out[:3, 3] = self.origin
        return out

    def to_canonical_points(self, points: np.ndarray) -> np.ndarray:
        """Armature-space points (…,3) in the canonical frame."""
        points = np.asarray(points, dtype=np.float64)
        return self.scale * ((points - self.origin) @ self.rotation.T)

    def from_canonical_points(self, points: np.ndarray) -> np.ndarray:
        """Canonical points (…,3) back in armature space."""
        points = np.asarray(points, dtype=np.float64)
        return (points @ self.rotation) / self.scale + self.origin

    def to_canonical_rotations(self, rotations: np.ndarray) -> np.ndarray:
        """Armature-space rotations (world deltas, …,3,3) in canonical axes: Rc · R · Rcᵀ."""
        rotations = np.asarray(rotations, dtype=np.float64)
        return self.rotation @ rotations @ self.rotation.T

    def from_canonical_rotations(self, rotations: np.ndarray) -> np.ndarray:
        """Canonical rotations (…,3,3) back in armature axes: Rcᵀ · R · Rc."""
        rotations = np.asarray(rotations, dtype=np.float64)
        return self.rotation.T @ rotations @ self.rotation


@dataclass
class CanonicalRig:
    """A rig brought into the canonical frame, with the frame that maps it back."""

    rig: Rig  # canonical rig (metres become body sizes)
    frame: CanonicalFrame
    feet: np.ndarray  # foot candidate joints (planted at rest)


def skin_deform(rig: Rig, mesh: SkinnedMesh | None) -> Rig:
    """The rig with the bones no vertex of its skin follows marked as not deforming: Blender's importers
    mark every bone Deform, pole targets and IK controls too (a rig without a weighted skin as it is)."""
    if mesh is None or not np.any(mesh.joint_weights > 0):
        return rig
    weighted = np.zeros(rig.joint_count, dtype=bool)
    followed = mesh.joint_indices[mesh.joint_weights > 0]
    weighted[followed[followed < rig.joint_count]] = True
    deform = rig.deform & weighted
    if np.array_equal(deform, rig.deform):
        return rig
    return Rig(list(rig.names), rig.parents, rig.rest, rig.tails, deform, rig.connected, rig.local_rest)


def canonical_rig(rig: Rig, frame: CanonicalFrame | None = None,
                  mesh: SkinnedMesh | None = None) -> CanonicalRig:
    """The rig in its canonical frame (`detect_canonical_frame` when no frame is given); with its skin
    (`mesh`), the bones nothing follows do not deform (`skin_deform`): controls are told by that."""
    rig = skin_deform(rig, mesh)
    if frame is None:
        frame = detect_canonical_frame(rig)
        if mesh is not None and _soles_lead_back(rig, mesh, frame):
            back = axis_name(-axis_vector(frame.forward_axis))
            turned = detect_canonical_frame(rig, up=frame.up_axis, forward=back)
            frame = replace(turned, confidence=FEET_DECIDE_BELOW,
                            notes=(*frame.notes, "forward: the way the skin's feet reach"))
    canonical = rig.transformed(frame.matrix())
    return CanonicalRig(canonical, frame, np.asarray(canonical.foot_candidates(), dtype=np.int64))


# Below this evidence margin of the chosen forward over its opposite (same up), the skin's feet have the
# last word: a rig whose names say nothing of head and tail (numbered bones) and whose rest pose does not
# tell its ends apart (a man standing straight) faces the way its feet reach.
FEET_DECIDE_BELOW = 1.0
SOLE = 0.02  # body sizes above the floor: the skin's soles
SOLES_LEAD = 0.01  # body sizes: the soles reach this far forward of their bones' heads, or back, to tell


def _soles_lead_back(rig: Rig, mesh: SkinnedMesh, frame: CanonicalFrame) -> bool:
    """Whether the skin's soles reach backward of the bones they hang from (toes point the other way:
    the frame is the wrong way round), where the bones alone barely chose the forward."""
    ranked = {(up, forward): score for up, forward, score, _ in rank_orientations(rig)}
    opposite = axis_name(-axis_vector(frame.forward_axis))
    margin = ranked[(frame.up_axis, frame.forward_axis)] - ranked.get((frame.up_axis, opposite), -np.inf)
    if margin >= FEET_DECIDE_BELOW or not np.any(mesh.joint_weights > 0):
        return False
    points = frame.to_canonical_points(mesh.vertices)
    sole = np.flatnonzero(points[:, 2] <= points[:, 2].min() + SOLE)
    owner = mesh.dominant_joints()[sole]
    heads = frame.to_canonical_points(rig.heads)
    lead = -float(np.mean(points[sole, 1] - heads[owner, 1]))  # canonical forward is −Y
    return lead < -SOLES_LEAD


def procedural_frame(rig: Rig) -> CanonicalFrame:
    """The frame of a procedural creature (kirin_addon/library), built canonical (metres, +Z up, −Y
    forward, feet at z = 0): only scaled to unit body size."""
    return CanonicalFrame(np.eye(3), 1.0 / rig.body_size, np.zeros(3), notes=("procedural",))


# ---------------------------------------------------------------------------- axes
_PROPER_PERMUTATIONS = axis_rotations()


@dataclass(frozen=True)
class _Hypothesis:
    up_name: str
    forward_name: str
    up: np.ndarray
    forward: np.ndarray
    left: np.ndarray
    lateral: int  # index of the left axis
    up_index: int  # index of `up` in AXIS_NAMES
    prior: float


def _hypotheses() -> list[_Hypothesis]:
    """The 24 (up, forward) pairs of perpendicular signed axes, with the Blender prior of each."""
    out = []
    for a, up in enumerate(AXES):
        for b, forward in enumerate(AXES):
            if a // 2 == b // 2:
                continue
            left = np.cross(up, forward)
            prior = W_PRIOR_UP * float(up[2] > 0.5) + W_PRIOR_FORWARD * float(forward[1] < -0.5)
            out.append(_Hypothesis(AXIS_NAMES[a], AXIS_NAMES[b], up, forward, left,
                                   int(np.argmax(np.abs(left))), a, prior))
    return out


_HYPOTHESES = _hypotheses()
_ORIENTATIONS = [(h.up, h.forward) for h in _HYPOTHESES]


def _world_rotation(world_matrix: np.ndarray | None) -> np.ndarray:
    """The proper rotation of an object matrix (its scale removed)."""
    if world_matrix is None:
        return np.eye(3)
    linear = np.asarray(world_matrix, dtype=np.float64)[:3, :3]
    if not np.all(np.isfinite(linear)) or np.linalg.det(linear) <= 0:
        raise ValueError("The armature's world matrix is singular or mirrored (negative scale).")
    u, _, vt = np.linalg.svd(linear)
    return u @ vt


def _nearest_axes(rotation: np.ndarray) -> np.ndarray:
    """The axis permutation nearest to a rotation: which world axis each armature axis plays."""
    scores = [float(np.sum(p * rotation)) for p in _PROPER_PERMUTATIONS]
    return _PROPER_PERMUTATIONS[int(np.argmax(scores))]


def _frame_rows(up: np.ndarray, forward: np.ndarray) -> np.ndarray:
    """Rotation whose rows are the canonical axes (left, back, up) in source coordinates."""
    return np.stack([np.cross(up, forward), -forward, up])



# ---------------------------------------------------------------------------- detection
def _score(evidence: RestPoseEvidence, index: int) -> dict[str, float]:
    """The weighted evidence for one (up, forward) hypothesis, cue by cue."""
    hypothesis = _HYPOTHESES[index]
    up, forward, left, a = hypothesis.up, hypothesis.forward, hypothesis.left, hypothesis.up_index
    quality, lateral = evidence.symmetry, hypothesis.lateral
    # How much better the lateral axis mirrors than the best other axis.
    symmetry = float(quality[lateral] - max(quality[k] for k in range(3) if k != lateral))
    # The head leads the body (quadrupeds, fish) or, on a creature standing on two legs, tops it
    # (bipeds); behind and below it is wrong. Standing shows in the ground, the hanging legs or
    # the feet below the body.
    upright = 0.0
    if evidence.legs[a] <= 2.5:
        upright = max(float(evidence.ground[a]), float(evidence.hanging[a]), float(evidence.foot_lift[a]))
    head = max(float(evidence.head_tail @ forward), upright * float(evidence.head_tail @ up))
    return {
        "side": W_SIDE_NAMES * float(evidence.side @ left),
        "symmetry": W_SYMMETRY * symmetry,
        "ground": W_GROUND * float(evidence.ground[a]),
        "foot_lift": W_FOOT_NAMES * float(evidence.foot_lift[a]),
        "hanging": W_HANGING * float(evidence.hanging[a]),
        "head_tail": W_HEAD_TAIL * float(np.clip(head / 0.3, -1.0, 1.0)),
        "toes": W_TOES * float(np.clip((evidence.toes[a] @ forward) / 0.05, -1.0, 1.0)),
        # Only for a body standing on its legs: a fish's tail may curl up or down.
        "high_front": W_HIGH_FRONT * float(evidence.ground[a] * evidence.high_front[index]),
    }


def _override(value: str | None) -> np.ndarray | None:
    if value is None or str(value).strip().upper() in ("", "AUTO"):
        return None
    return axis_vector(value)


def rank_orientations(
    rig: Rig,
    world_matrix: np.ndarray | None = None,
    up: str | None = None,
    forward: str | None = None,
) -> list[tuple[str, str, float, dict[str, float]]]:
    """Every allowed (up, forward) in world axes with its evidence score and the cues behind it,
    best first (ties broken by the Blender-convention prior): what detection chose from."""
    relabel = _nearest_axes(_world_rotation(world_matrix))
    up_fixed, forward_fixed = _override(up), _override(forward)
    if up_fixed is not None and forward_fixed is not None and abs(float(up_fixed @ forward_fixed)) > 0.5:
        raise ValueError(f"Up {up} and forward {forward} must be perpendicular axes.")
    evidence = gather_evidence(rig, rig.heads @ relabel.T, rig.tails @ relabel.T, _ORIENTATIONS)
    ranked = []
    for index, h in enumerate(_HYPOTHESES):
        if (up_fixed is not None and not np.array_equal(h.up, up_fixed)) or (
                forward_fixed is not None and not np.array_equal(h.forward, forward_fixed)):
            continue
        parts = _score(evidence, index)
        ranked.append((h.up_name, h.forward_name, sum(parts.values()), parts, h.prior))
    ranked.sort(key=lambda item: -(item[2] + item[4]))
    return [item[:4] for item in ranked]


def detect_canonical_frame(
    rig: Rig,
    world_matrix: np.ndarray | None = None,
    up: str | None = None,
    forward: str | None = None,
    mesh_vertices: np.ndarray | None = None,
) -> CanonicalFrame:
    """Detect the canonical frame of a rig at rest (the module docstring lists the evidence).

    `world_matrix` is the armature object's 4x4 matrix (rotation × uniform scale + translation;
    None = identity). Detection reasons in world axes — the prior is world +Z up, and the `up` /
    `forward` overrides ("+X" … "-Z"; None or "AUTO" to detect) name world axes and are obeyed
    exactly — but the frame returned maps *armature-space* coordinates: the world matrix is folded
    in. The candidate axes are the armature's own axes, each named after the world axis it lies
    nearest to, so the frame follows the rig even on an object turned off-axis in the scene; for
    an axis-aligned object (the usual case: a glTF import is turned 90° about X) the names are the
    exact world axes. The world matrix's scale and translation cancel out (unit body size, origin
    on the rig). A mirrored or singular world matrix, an unknown axis or an up not perpendicular
    to forward raise ValueError.

    `mesh_vertices` (N,3), optional, in armature space: the skinned mesh at rest. It sets the floor
    (hence the origin), since soles lie below the ankle joints. The orientation comes from the
    joints alone: bellies, wings and hair made the ground cue worse, not better, in trials.

    Body size is the largest extent of the rest heads and tails along the canonical axes; IK pole
    and aim targets ("pole", "target" in the name), which float off the body, are left out.
    """
    ranked = rank_orientations(rig, world_matrix, up, forward)
    up_label, forward_label, score, parts = ranked[0]
    confidence = float("inf") if len(ranked) == 1 else score - max(item[2] for item in ranked[1:])

    relabel = _nearest_axes(_world_rotation(world_matrix))
    rotation = _frame_rows(axis_vector(up_label), axis_vector(forward_label)) @ relabel
    up_armature = rotation[2]
    joints = body_joints(rig)
    body = np.concatenate([rig.heads[joints], rig.tails[joints]])
    canonical = body @ rotation.T
    body_size = float(np.max(canonical.max(0) - canonical.min(0)))
    if mesh_vertices is not None and len(np.asarray(mesh_vertices).reshape(-1, 3)):
        floor = float(np.min(np.asarray(mesh_vertices, dtype=np.float64).reshape(-1, 3) @ up_armature))
    else:
        floor = float(np.min(body @ up_armature))
    root = rig.heads[rig.main_root]
    origin = root - (float(root @ up_armature) - floor) * up_armature
    notes = tuple(f"{k}={v:+.2f}" for k, v in parts.items() if abs(v) >= 0.005)
    return CanonicalFrame(rotation, 1.0 / body_size, origin, up_label, forward_label, confidence, notes)
