"""BVH loader: joint positions from the Rig/Motion equal a direct BVH forward kinematics."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kirin.kirin_addon.core.motion import Motion, joint_positions
from kirin.kirin_addon.io.bvh import BvhError, load_bvh, unique_names

from assets_support import ASSETS

CMU = ASSETS / "bvh_cmu_01_01" / "01_01.bvh"


def _reference_fk(text: str) -> tuple[list[str], np.ndarray]:
    """Plain BVH forward kinematics: 4x4 chains of OFFSET · position · Euler rotations."""
    tokens = text.split()
    names, parents, offsets, channels = [], [], [], []
    stack: list[int] = []
    i = 0
    in_end = 0
    while tokens[i] != "MOTION":
        tok = tokens[i]
        if tok in ("ROOT", "JOINT"):
            names.append(tokens[i + 1])
            parents.append(stack[-1] if stack else -1)
            offsets.append(None)
            channels.append([])
            stack.append(len(names) - 1)
            i += 3  # name and "{"
            continue
        if tok == "End":
            in_end += 1
            i += 3  # "Site" and "{"
            continue
        if tok == "OFFSET":
            if not in_end:
                offsets[stack[-1]] = np.array(tokens[i + 1:i + 4], float)
            i += 4
            continue
        if tok == "CHANNELS":
            count = int(tokens[i + 1])
            channels[stack[-1]] = tokens[i + 2:i + 2 + count]
            i += 2 + count
            continue
        if tok == "}":
            if in_end:
                in_end -= 1
            else:
                stack.pop()
        i += 1
    frames = int(tokens[i + 2])
    values = np.array(tokens[i + 6:], float).reshape(frames, -1)

    def axis_rotation(axis: str, degrees: np.ndarray) -> np.ndarray:
        a = np.radians(degrees)
        c, s = np.cos(a), np.sin(a)
        m = np.zeros((a.size, 4, 4))
        m[:, 3, 3] = 1
        x, y = {"X": (1, 2), "Y": (2, 0), "Z": (0, 1)}[axis]
        k = 3 - x - y
        m[:, k, k] = 1
        m[:, x, x], m[:, x, y], m[:, y, x], m[:, y, y] = c, -s, s, c
        return m

    world = np.zeros((frames, len(names), 4, 4))
    column = 0
    for j, chans in enumerate(channels):
        local = np.repeat(np.eye(4)[None], frames, 0)
        local[:, :3, 3] = offsets[j]
        for name in chans:
            v = values[:, column]
            column += 1
            if name.endswith("position"):
                if parents[j] < 0:
                    local[:, "XYZ".index(name[0]), 3] += v
            else:
                local = local @ axis_rotation(name[0], v)
        world[:, j] = local if parents[j] < 0 else world[:, parents[j]] @ local
    return names, world[..., :3, 3]


def test_cmu_matches_reference_fk() -> None:
    if not CMU.is_file():
        pytest.skip("../shared/assets is missing")
    rig, motion = load_bvh(CMU)
    rig.validate()
    names, expected = _reference_fk(CMU.read_text())
    assert rig.names == names
    assert motion.fps == 120.0 and motion.frame_count == expected.shape[0] == 2752
    positions = joint_positions(rig, motion)
    size = rig.body_size
    assert np.abs(positions - expected).max() < 1e-6 * size
    # Rest pose: heads are the summed offsets, Y axes along the bones.
    assert np.allclose(joint_positions(rig, Motion.rest(rig))[0], rig.heads)
    y = rig.rest_rotations[:, :, 1]
    assert np.allclose(y, (rig.tails - rig.heads) / rig.lengths[:, None])
    assert np.allclose(np.linalg.det(rig.rest_rotations), 1.0)


def test_scale_and_file_order() -> None:
    if not CMU.is_file():
        pytest.skip("../shared/assets is missing")
    rig, motion = load_bvh(CMU)
    small_rig, small_motion = load_bvh(CMU, scale=0.01)
    assert np.allclose(small_rig.heads, rig.heads * 0.01)
    assert np.allclose(joint_positions(small_rig, small_motion), joint_positions(rig, motion) * 0.01)
    assert np.allclose(small_motion.rotations, motion.rotations)


SYNTHETIC = """HIERARCHY
ROOT pelvis
{
  OFFSET 1 2 3
  CHANNELS 6 Zposition Xrotation Xposition Yrotation Yposition Zrotation
  JOINT spine {
    OFFSET 0 10 0
    CHANNELS 3 Yrotation Xrotation Zrotation
    JOINT head
    {
      OFFSET 0 5 1
      CHANNELS 2 Xrotation Zrotation
    }
  }
  JOINT leg
  {
    OFFSET 3 -1 0
    CHANNELS 3 Xrotation Yrotation Zrotation
    JOINT leg
    {
      OFFSET 0 -8 0
      CHANNELS 1 Xrotation
      End Site
      {
        OFFSET 0 0 4
      }
    }
  }
  JOINT tip
  {
    OFFSET 0 0 0
    CHANNELS 3 Zrotation Xrotation Yrotation
  }
}
MOTION
Frames: 4
Frame Time: 0.0333333
"""


def test_synthetic_channel_orders(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    values = rng.uniform(-170, 170, size=(4, 6 + 3 + 2 + 3 + 1 + 3))
    text = SYNTHETIC + "\n".join(" ".join(f"{v:.6f}" for v in row) for row in values) + "\n"
    path = tmp_path / "synthetic.bvh"
    path.write_text(text)
    rig, motion = load_bvh(path)
    rig.validate()
    assert rig.names == ["pelvis", "spine", "head", "leg", "leg.001", "tip"]
    assert list(rig.parents) == [-1, 0, 1, 0, 3, 0]
    assert motion.fps == 30.0
    _, expected = _reference_fk(text)
    assert np.abs(joint_positions(rig, motion) - expected).max() < 1e-9 * rig.body_size
    # Leaf without End Site: a short bone along the parent direction; End Site gives the tail.
    assert np.allclose(rig.tails[4], rig.heads[4] + [0, 0, 4])
    assert 0 < rig.lengths[5] < 0.1 * rig.body_size
    assert np.allclose(rig.tails[1], rig.heads[1] + [0, 5, 1])


def test_truncated_and_bad_files(tmp_path: Path) -> None:
    path = tmp_path / "short.bvh"
    path.write_text(SYNTHETIC + " ".join(["0"] * 18 * 2 + ["1", "2"]))
    _, motion = load_bvh(path)
    assert motion.frame_count == 2  # the incomplete third row is dropped
    path.write_text(SYNTHETIC)
    with pytest.raises(BvhError, match="no motion frames"):
        load_bvh(path)
    path.write_text(SYNTHETIC.replace("Xrotation Zrotation\n", "Xrotation Wobble\n"))
    with pytest.raises(BvhError, match="channel"):
        load_bvh(path)
    path.write_text("HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\n")
    with pytest.raises(BvhError):
        load_bvh(path)


def test_unique_names() -> None:
    assert unique_names(["a", "a", "b", "a", ""]) == ["a", "a.001", "b", "a.002", "bone"]
