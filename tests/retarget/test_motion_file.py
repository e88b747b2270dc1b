"""A motion file's conventions read from the file itself (kirin_addon/retarget/motion_file.py), on BVH text
written here: one walking skeleton written Y-up in metres, Z-up in centimetres, facing another way, and
with a folded zero pose that only its root's rotation stands up (as the Character Creator CMU takes are);
and the clip retargeted from each onto one target stands upright on the target's floor."""

from __future__ import annotations

import numpy as np
import pytest

from kirin.kirin_addon.core.canonical import detect_canonical_frame
from kirin.kirin_addon.core.motion import joint_positions
from kirin.kirin_addon.core.rotations import euler_to_matrix, matrix_to_euler
from kirin.kirin_addon.io.files import declared_unit, file_world_matrix, load_motion_file
from kirin.kirin_addon.library.procedural import BipedSpec, build_biped
from kirin.kirin_addon.retarget.motion_file import guess_unit, read_conventions, retarget_file_motion

# The skeleton in canonical axes (+Z up, facing −Y, its left on +X), metres: (name, parent, offset).
SKELETON = [
    ("Hips", None, (0.0, 0.0, 0.95)),
    ("Spine", "Hips", (0.0, 0.0, 0.15)), ("Chest", "Spine", (0.0, 0.0, 0.2)),
    ("Neck", "Chest", (0.0, 0.0, 0.2)), ("Head", "Neck", (0.0, 0.0, 0.1)),
]
for side, sign in (("Left", 1.0), ("Right", -1.0)):
    SKELETON += [
        (f"{side}Shoulder", "Chest", (0.05 * sign, 0.0, 0.15)),
        (f"{side}Arm", f"{side}Shoulder", (0.12 * sign, 0.0, 0.0)),
        (f"{side}ForeArm", f"{side}Arm", (0.28 * sign, 0.0, 0.0)),
        (f"{side}Hand", f"{side}ForeArm", (0.25 * sign, 0.0, 0.0)),
        (f"{side}UpLeg", "Hips", (0.1 * sign, 0.0, -0.05)),
        (f"{side}Leg", f"{side}UpLeg", (0.0, 0.0, -0.42)),
        (f"{side}Foot", f"{side}Leg", (0.0, 0.0, -0.42)),
        (f"{side}ToeBase", f"{side}Foot", (0.0, -0.12, -0.05)),
    ]
END_SITES = {"Head": (0.0, 0.0, 0.15), "LeftHand": (0.08, 0.0, 0.0), "RightHand": (-0.08, 0.0, 0.0),
             "LeftToeBase": (0.0, -0.05, 0.0), "RightToeBase": (0.0, -0.05, 0.0)}
FRAMES, FPS = 90, 30.0
STRIDE_HZ, SPEED = 0.9, 1.1  # a walk: strides per second, metres per second


def _about_x(angle: float) -> np.ndarray:
    return euler_to_matrix(np.array([angle, 0.0, 0.0]))


def _walk_pose(name: str, t: float) -> np.ndarray:
    """Canonical world rotation of a joint at time t relative to its parent (legs swing about X)."""
    phase = 2 * np.pi * STRIDE_HZ * t
    if name.endswith("UpLeg"):
        sign = 1.0 if name.startswith("Left") else -1.0
        return _about_x(0.45 * sign * np.sin(phase))
    if name.endswith("Leg"):
        sign = 1.0 if name.startswith("Left") else -1.0
        return _about_x(0.5 * max(0.0, np.sin(phase * sign + 1.0)))
    return np.eye(3)


def write_bvh(path, axes: np.ndarray, scale: float, folded: np.ndarray | None = None) -> None:
    """The walking skeleton as BVH: canonical vectors written as `axes @ v * scale` (file axes, file units).
    `folded`: a rotation (file axes) the zero pose is turned by; the root's rotation turns it back upright
    in every frame, so only the motion stands."""
    fold = np.eye(3) if folded is None else folded
    lines, depth = ["HIERARCHY"], 0
    children = {name: [n for n, p, _ in SKELETON if p == name] for name, _, _ in SKELETON}

    def emit(name: str) -> None:
        nonlocal depth
        pad = "  " * depth
        offset = dict((n, o) for n, _, o in SKELETON)[name]
        keyword = "ROOT" if name == "Hips" else "JOINT"
        vec = fold @ axes @ np.array(offset) * scale if name != "Hips" else np.zeros(3)
        values = " ".join(f"{v:.6f}" for v in vec)
        lines.extend([f"{pad}{keyword} {name}", f"{pad}{{", f"{pad}  OFFSET {values}"])
        channels = "6 Xposition Yposition Zposition" if name == "Hips" else "3"
        lines.append(f"{pad}  CHANNELS {channels} Zrotation Yrotation Xrotation")
        depth += 1
        for child in children[name]:
            emit(child)
        if name in END_SITES:
            end = fold @ axes @ np.array(END_SITES[name]) * scale
            offset = " ".join(f"{v:.6f}" for v in end)
            lines.extend([f"{pad}  End Site", f"{pad}  {{", f"{pad}    OFFSET {offset}", f"{pad}  }}"])
        depth -= 1
        lines.append(f"{pad}}}")

    emit("Hips")
    lines += ["MOTION", f"Frames: {FRAMES}", f"Frame Time: {1.0 / FPS:.6f}"]
    order = _file_order(children)
    for frame in range(FRAMES):
        t = frame / FPS
        root = axes @ np.array([0.0, -SPEED * t, 0.95]) * scale
        row = list(root)
        for name in order:
            # A canonical rotation in file axes; under a folded zero pose the root turns the body upright
            # (fold⁻¹) and every other joint's rotation is seen through the fold.
            local = fold @ axes @ _walk_pose(name, t) @ axes.T @ fold.T
            if name == "Hips":
                local = fold.T
            x, y, z = np.degrees(matrix_to_euler(local, "XYZ"))
            row += [z, y, x]
        lines.append(" ".join(f"{v:.6f}" for v in row))
    path.write_text("\n".join(lines) + "\n")


def _file_order(children: dict) -> list[str]:
    order, stack = [], ["Hips"]
    while stack:
        name = stack.pop(0)
        order.append(name)
        stack = children[name] + stack
    return order


# File axes: rows are where canonical x, y, z go (file = axes @ canonical).
Y_UP_FACING_Z = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])  # the BVH custom
Z_UP_FACING_MINUS_Y = np.eye(3)
Y_UP_FACING_X = np.array([[0.0, -1.0, 0.0], [0.0, 0.0, 1.0], [-1.0, 0.0, 0.0]])  # facing +X
FOLD = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])  # zero pose lying along the file's Z


def _read(path):
    rig, motion, _ = load_motion_file(path)
    return read_conventions(rig, motion, file_world_matrix(path), unit=declared_unit(path))


@pytest.mark.parametrize(("axes", "scale", "up", "forward", "unit"), [
    (Y_UP_FACING_Z, 1.0, "+Y", "+Z", "m"),
    (Z_UP_FACING_MINUS_Y, 100.0, "+Z", "-Y", "cm"),
    (Y_UP_FACING_X, 100.0, "+Y", "+X", "cm"),
])
def test_up_forward_and_units_are_read_from_the_skeleton(tmp_path, axes, scale, up, forward, unit):
    path = tmp_path / "walk.bvh"
    write_bvh(path, axes, scale)
    conventions = _read(path)
    assert (conventions.up_axis, conventions.forward_axis, conventions.unit) == (up, forward, unit)
    assert conventions.reference is None  # its zero pose stands: the file's own rest is kept
    assert conventions.height * {"m": 1.0, "cm": 0.01}[unit] == pytest.approx(1.74, abs=0.02)  # joints' span
    assert unit in conventions.describe() and f"facing {forward}" in conventions.describe()


def test_a_folded_zero_pose_is_replaced_by_a_pose_that_stands(tmp_path):
    path = tmp_path / "folded.bvh"
    write_bvh(path, Y_UP_FACING_Z, 100.0, folded=FOLD)
    rig, motion, _ = load_motion_file(path)
    from_rest = detect_canonical_frame(rig, world_matrix=file_world_matrix(path))
    assert from_rest.up_axis != "+Z"  # the zero pose lies: read from it, the clip would lie on its side
    conventions = _read(path)
    assert conventions.up_axis == "+Y" and conventions.forward_axis == "+Z" and conventions.unit == "cm"
    assert conventions.reference is not None
    # The re-based clip is the same motion: every joint where the file puts it.
    assert np.allclose(joint_positions(conventions.rig, conventions.motion), joint_positions(rig, motion),
                       atol=1e-6 * conventions.height)


def test_units_are_guessed_for_a_body_of_human_size():
    assert guess_unit(1.6) == "m" and guess_unit(170.0) == "cm" and guess_unit(29.0) == "CMU"
    assert guess_unit(1700.0) == "mm" and guess_unit(0.02) is None


@pytest.mark.parametrize("case", ["y_up_m", "z_up_cm", "facing_x", "folded"])
def test_every_convention_retargets_upright_onto_the_floor(tmp_path, case):
    axes, scale, folded = {"y_up_m": (Y_UP_FACING_Z, 1.0, None),
                           "z_up_cm": (Z_UP_FACING_MINUS_Y, 100.0, None),
                           "facing_x": (Y_UP_FACING_X, 100.0, None),
                           "folded": (Y_UP_FACING_Z, 100.0, FOLD)}[case]
    path = tmp_path / f"{case}.bvh"
    write_bvh(path, axes, scale, folded)
    target = build_biped(BipedSpec(naming="rigify", arm_pose="A", height=1.6))
    frame = detect_canonical_frame(target)
    out = retarget_file_motion(_read(path), target, frame)
    assert out.result.mapped_count >= 12
    points = frame.to_canonical_points(joint_positions(target, out.result.motion))
    rest = target.transformed(frame.matrix())
    hips, head = target.index("DEF-pelvis"), target.index("DEF-head")
    trunk = points[:, head] - points[:, hips]
    tilt = np.degrees(np.arccos(trunk[:, 2] / np.linalg.norm(trunk, axis=1)))
    assert tilt.max() < 10.0  # upright (the walk does not lean)
    lowest = points[:, :, 2].min(axis=1)
    assert abs(np.percentile(lowest, 5) - rest.heads[:, 2].min()) < 0.02  # on the floor …
    assert np.ptp(points[:, hips, 2]) < 0.05  # … travelling horizontally
    travel = points[-1, hips] - points[0, hips]
    assert travel[1] < -0.5 * abs(travel[0]) and np.linalg.norm(travel[:2]) > 0.5  # forward (−Y), far
