"""How close a fitted skeleton is to an artist's: Chamfer distances between joints (CD-J2J) and between
bones (CD-B2B), as RigNet and Puppeteer report them, here in % of the mesh's bounding-box diagonal.

- CD-J2J: the mean, over each skeleton's joints, of the distance to the other skeleton's nearest joint,
  averaged over both directions.
- CD-B2B: the same between bones, a bone being the segment from a joint to its parent joint; each
  bone is sampled at evenly spaced points and a sample's distance is to the other skeleton's nearest
  bone (point to segment, exact).

Only the joints that carry the skin count on the artist's side (`skinning_joints`): IK targets, pole
targets and control roots move no vertex and no fit is asked to find them. A joint whose parent does not
count hangs from its nearest ancestor that does. numpy + scipy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from ..core.rig import Rig

SAMPLES_PER_BONE = 10  # points along each bone where the bone distances are read


@dataclass(frozen=True)
class Skeleton:
    """Joint positions (J,3) and bones as (B,2) indices into them (child, parent)."""

    joints: np.ndarray
    bones: np.ndarray

    @classmethod
    def of_rig(cls, rig: Rig, keep: np.ndarray | None = None) -> Skeleton:
        """The rig's joint heads where `keep` (J,) bool (None: all), each joint's bone to its nearest
        kept ancestor."""
        keep = np.ones(rig.joint_count, bool) if keep is None else np.asarray(keep, bool)
        index = np.full(rig.joint_count, -1)
        index[keep] = np.arange(int(keep.sum()))
        bones = []
        for j in np.flatnonzero(keep):
            parent = int(rig.parents[j])
            while parent >= 0 and not keep[parent]:
                parent = int(rig.parents[parent])
            if parent >= 0:
                bones.append((index[j], index[parent]))
        return cls(np.asarray(rig.heads, np.float64)[keep], np.array(bones, np.int64).reshape(-1, 2))


def skinning_joints(joint_weights: np.ndarray) -> np.ndarray:
    """(J,) bool: the joints that carry some of the skin's weight ((V,J) dense weights)."""
    return np.asarray(joint_weights).sum(axis=0) > 0


def _bone_samples(skeleton: Skeleton) -> np.ndarray:
    t = np.linspace(0.0, 1.0, SAMPLES_PER_BONE)[:, None]
    heads, tails = skeleton.joints[skeleton.bones[:, 0]], skeleton.joints[skeleton.bones[:, 1]]
    return (heads[:, None] * (1 - t) + tails[:, None] * t).reshape(-1, 3)


def _to_segments(points: np.ndarray, skeleton: Skeleton) -> np.ndarray:
    """(N,) each point's distance to the nearest bone of `skeleton`."""
    a, b = skeleton.joints[skeleton.bones[:, 0]], skeleton.joints[skeleton.bones[:, 1]]
    ab = b - a
    length = np.maximum((ab * ab).sum(-1), 1e-30)
    best = np.full(len(points), np.inf)
    for start in range(0, len(points), 2048):  # bounded memory on big skeletons
        p = points[start:start + 2048, None, :]
        t = np.clip(((p - a) * ab).sum(-1) / length, 0.0, 1.0)
        d = np.linalg.norm(p - (a + t[..., None] * ab), axis=-1)
        best[start:start + 2048] = d.min(axis=1)
    return best


def joint_chamfer(a: Skeleton, b: Skeleton) -> float:
    """CD-J2J in the skeletons' units."""
    if not len(a.joints) or not len(b.joints):
        raise ValueError("Both skeletons need joints to compare.")
    ab = cKDTree(b.joints).query(a.joints)[0].mean()
    ba = cKDTree(a.joints).query(b.joints)[0].mean()
    return float(0.5 * (ab + ba))


def bone_chamfer(a: Skeleton, b: Skeleton) -> float:
    """CD-B2B in the skeletons' units."""
    if not len(a.bones) or not len(b.bones):
        raise ValueError("Both skeletons need bones to compare.")
    return float(0.5 * (_to_segments(_bone_samples(a), b).mean() + _to_segments(_bone_samples(b), a).mean()))


def skeleton_distances(fitted: Skeleton, artist: Skeleton, diagonal: float) -> dict[str, float]:
    """CD-J2J and CD-B2B in % of `diagonal` (the mesh's bounding-box diagonal), and each direction of
    the joints' (fitted → artist: joints the fit put where the artist has none; artist → fitted: the
    artist's joints the fit missed)."""
    if not diagonal > 0:
        raise ValueError("The mesh's diagonal must be positive.")
    scale = 100.0 / diagonal
    return {"cd_j2j_pct": joint_chamfer(fitted, artist) * scale,
            "cd_b2b_pct": bone_chamfer(fitted, artist) * scale,
            "fitted_to_artist_pct": float(cKDTree(artist.joints).query(fitted.joints)[0].mean()) * scale,
            "artist_to_fitted_pct": float(cKDTree(fitted.joints).query(artist.joints)[0].mean()) * scale}
