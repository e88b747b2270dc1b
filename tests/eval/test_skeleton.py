"""Skeleton distances (kirin_addon/eval/skeleton.py): CD-J2J and CD-B2B on skeletons with known
answers, the artist's joints that carry no skin left out, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from kirin.kirin_addon.core.rig import Rig
from kirin.kirin_addon.eval.skeleton import (
    Skeleton,
    bone_chamfer,
    joint_chamfer,
    skeleton_distances,
    skinning_joints,
)


def _rig(heads, parents) -> Rig:
    heads = np.asarray(heads, np.float64)
    rest = np.repeat(np.eye(4)[None], len(heads), 0)
    rest[:, :3, 3] = heads
    return Rig([f"j{i}" for i in range(len(heads))], np.array(parents), rest, heads + [0.0, 0.0, 0.1])


def _line(y: float = 0.0) -> Skeleton:
    return Skeleton.of_rig(_rig([[0, y, 0], [1, y, 0], [2, y, 0]], [-1, 0, 1]))


def test_the_same_skeleton_is_at_zero_and_a_shifted_one_at_the_shift() -> None:
    assert joint_chamfer(_line(), _line()) == 0.0 and bone_chamfer(_line(), _line()) == 0.0
    assert joint_chamfer(_line(), _line(0.2)) == pytest.approx(0.2)
    assert bone_chamfer(_line(), _line(0.2)) == pytest.approx(0.2)


def test_bones_are_compared_along_their_length_not_at_their_ends() -> None:
    """A chain cut at other joints along the same line has its joints off, its bones on the line."""
    cut = Skeleton.of_rig(_rig([[0, 0, 0], [0.5, 0, 0], [2, 0, 0]], [-1, 0, 1]))
    assert joint_chamfer(_line(), cut) == pytest.approx(0.5 / 3)  # (0.5 one way, 0.5 the other) / 3 each
    assert bone_chamfer(_line(), cut) == pytest.approx(0.0, abs=1e-12)


def test_joints_without_skin_are_left_out_and_bones_hang_from_the_nearest_kept_ancestor() -> None:
    rig = _rig([[0, 0, 0], [0, 0, 5], [1, 0, 0], [2, 0, 0]], [-1, 0, 1, 2])  # joint 1: a control far off
    weights = np.array([[1.0, 0, 0, 0], [0, 0, 0.5, 0.5], [0, 0, 0, 1.0]])
    keep = skinning_joints(weights)
    assert keep.tolist() == [True, False, True, True]
    skeleton = Skeleton.of_rig(rig, keep)
    assert skeleton.bones.tolist() == [[1, 0], [2, 1]]  # joint 2 hangs from joint 0 now
    assert joint_chamfer(skeleton, _line()) == 0.0 and bone_chamfer(skeleton, _line()) == 0.0


def test_the_distances_in_percent_of_the_diagonal_say_which_side_is_off() -> None:
    extra = Skeleton.of_rig(_rig([[0, 0, 0], [1, 0, 0], [2, 0, 0], [1, 3, 0]], [-1, 0, 1, 1]))
    out = skeleton_distances(extra, _line(), diagonal=10.0)
    assert out["artist_to_fitted_pct"] == 0.0
    assert out["fitted_to_artist_pct"] == pytest.approx(100 * 3 / 4 / 10)
    assert out["cd_j2j_pct"] == pytest.approx(0.5 * out["fitted_to_artist_pct"])
    assert out["cd_b2b_pct"] > 0


def test_bad_input_is_refused() -> None:
    empty = Skeleton(np.zeros((0, 3)), np.zeros((0, 2), np.int64))
    with pytest.raises(ValueError, match="joints"):
        joint_chamfer(empty, _line())
    with pytest.raises(ValueError, match="bones"):
        bone_chamfer(_line(), empty)
    with pytest.raises(ValueError, match="diagonal"):
        skeleton_distances(_line(), _line(), 0.0)
