"""A motion file's conventions read from the file itself (kirin_addon/retarget/motion_file.py), on BVH text
written here: one walking skeleton written Y-up in metres, Z-up in centimetres, facing another way, and
with a folded zero pose that only its root's rotation stands up (as the Character Creator CMU takes are);
and the clip retargeted from each onto one target stands upright on the target's floor."""

from __future__ import annotations

import numpy as np
import pytest

from kirin.kirin_addon.core.canonical import detect_canonical_frame
from kirin.kirin_addon.core.motion import forward_kinematics, joint_positions
from kirin.kirin_addon.core.rotations import euler_to_matrix, matrix_to_euler
from kirin.kirin_addon.core.skinning import SkinnedMesh
from kirin.kirin_addon.io.files import declared_unit, file_world_matrix, load_motion_file
from kirin.kirin_addon.library.procedural import BipedSpec, build_biped
from kirin.kirin_addon.retarget.motion_file import guess_unit, read_conventions, retarget_file_motion

from assets_support import ASSETS

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
STRIDE_HZ = 0.9  # a walk's strides per second


def _about_x(angle: float) -> np.ndarray:
    return euler_to_matrix(np.array([angle, 0.0, 0.0]))


def _thigh(name: str, t: float) -> float:
    """The thigh's swing about X (rad): the left leg forward when the right is back."""
    sign = 1.0 if name.startswith("Left") else -1.0
    return 0.45 * sign * np.sin(2 * np.pi * STRIDE_HZ * t)


def _swinging(name: str, t: float) -> float:
    """How far into its swing a leg is (0 in stance): its foot moves forward relative to the hips."""
    sign = 1.0 if name.startswith("Left") else -1.0
    return max(0.0, -sign * np.cos(2 * np.pi * STRIDE_HZ * t))


def _walk_pose(name: str, t: float) -> np.ndarray:
    """Canonical rotation of a joint at time t relative to its parent: thighs swing, a swinging leg's knee
    bends while its thigh is behind (its foot clears the floor), a standing leg stays straight."""
    if name.endswith("UpLeg"):
        return _about_x(_thigh(name, t))
    if name.endswith("Leg"):
        side = name[: -len("Leg")]
        return _about_x(2.0 * max(0.0, _thigh(side, t)) * (_swinging(side, t) > 0.0))
    return np.eye(3)


def _root_path(frames: int) -> np.ndarray:
    """(T,3) the hips (canonical, metres) carried by the straight standing leg: its foot does not move
    (planted, as a walk's is), so the hips go forward as fast as that foot goes back under them, and as
    high as the leg reaches."""
    leg = 0.84
    times = np.arange(frames) / FPS
    stance = [("Left" if _swinging("Left", t) == 0.0 else "Right") for t in times]
    angle = np.array([_thigh(side, t) for side, t in zip(stance, times, strict=True)])
    behind = leg * np.sin(angle)  # the standing foot's distance behind the hips (canonical +y)
    step = np.abs(np.diff(behind, prepend=behind[0]))  # the hips move forward by what the foot moves back
    height = 0.06 + 0.05 + leg * np.cos(angle)  # ankle height + hip offset + the leg
    return np.stack([np.zeros(frames), -np.cumsum(step), height], axis=1)


def write_bvh(path, axes: np.ndarray, scale: float, folded: np.ndarray | None = None,
              skeleton: list | None = None) -> None:
    """The walking skeleton as BVH: canonical vectors written as `axes @ v * scale` (file axes, file units).
    `folded`: a rotation (file axes) the zero pose is turned by; the root's rotation turns it back upright
    in every frame, so only the motion stands. `skeleton`: its joints (default SKELETON)."""
    skeleton = SKELETON if skeleton is None else skeleton
    fold = np.eye(3) if folded is None else folded
    lines, depth = ["HIERARCHY"], 0
    children = {name: [n for n, p, _ in skeleton if p == name] for name, _, _ in skeleton}

    def emit(name: str) -> None:
        nonlocal depth
        pad = "  " * depth
        offset = dict((n, o) for n, _, o in skeleton)[name]
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
    hips = _root_path(FRAMES)
    for frame in range(FRAMES):
        t = frame / FPS
        row = list(axes @ hips[frame] * scale)
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


def _game_rig():
    """A biped whose feet hang from a root bone on the floor, as game rigs' foot controls do (their legs
    end at the shins), under a root that lies on the floor."""
    from kirin.kirin_addon.core.rig import rig_from_bones

    rig = build_biped(BipedSpec(naming="rigify", height=1.6))
    names = ["root"] + rig.names
    parents = np.concatenate([[-1], np.where(rig.parents >= 0, rig.parents + 1, 0)])
    for side in ("L", "R"):
        parents[names.index(f"DEF-foot.{side}")] = 0  # the foot control under the root
    heads = np.concatenate([[[0.0, 0.0, 0.0]], rig.heads])
    tails = np.concatenate([[[0.0, -0.2, 0.0]], rig.tails])
    return rig_from_bones(names, parents, heads, tails)


def test_a_foot_control_under_the_root_goes_where_the_shin_takes_it(tmp_path):
    """The source's foot hangs from its shin, the target's from its root: carried by the shin's image, it
    stays at the shin's end (by its rest offset) instead of gliding with the root; no connected bone is
    given a location (Blender would ignore it)."""
    path = tmp_path / "walk.bvh"
    write_bvh(path, Y_UP_FACING_Z, 1.0)
    target = _game_rig()
    frame = detect_canonical_frame(target)
    out = retarget_file_motion(_read(path), target, frame)
    motion = out.result.motion
    assert motion.translations is not None
    assert not np.any(motion.translations[:, target.connected])
    points = joint_positions(target, motion)
    for side in ("L", "R"):
        shin, foot = target.index(f"DEF-shin.{side}"), target.index(f"DEF-foot.{side}")
        gap = np.linalg.norm(points[:, foot] - points[:, shin], axis=1)
        rest = np.linalg.norm(target.heads[foot] - target.heads[shin])
        assert np.allclose(gap, rest, rtol=1e-6)  # hangs from the shin, not from the root
        assert np.ptp(points[:, foot, 1]) > 0.5  # and walks
    assert set(out.held) == {"DEF-foot.L", "DEF-foot.R"}


def test_feet_down_follow_the_source_foot(tmp_path):
    """While the source's foot is down, the target's foot moves as the source's does, scaled as the root
    path is, however its legs' proportions differ from the source's: where the source's foot is planted
    the target's stays (almost) put — it slides less than half as much as the plain retargeted foot,
    under 0.05 body sizes a second (what is left: a straight standing leg whose foot is just out of
    reach) — and over the frames the foot is down its velocity is the source's, scaled, with under
    0.6 of the plain foot's median error (the rest: the same straight leg out of reach)."""
    from kirin.kirin_addon.retarget import feet, retargeter

    path = tmp_path / "walk.bvh"
    write_bvh(path, Y_UP_FACING_Z, 1.0)
    conventions = _read(path)
    target = build_biped(BipedSpec(naming="rigify", height=1.6, leg_ratio=0.45, knee_bend_deg=15))
    frame = detect_canonical_frame(target)
    pair = retargeter.retarget_pair(conventions.rig, conventions.motion, target, None, conventions.frame,
                                    frame)
    rest = retargeter.rest_alignment(pair.source, pair.target, pair.mapped)
    align, aligned = feet.feet_to_ground(pair, rest)
    pose = retargeter.target_pose(pair, align)
    retargeter.ground_pose(pair, pose)
    foot = target.index("DEF-foot.L")
    before = pose.positions(pair.target)[:, foot, :2]
    held = feet.hold_feet(pair, pose, aligned)
    assert set(held) == {target.index("DEF-foot.L"), target.index("DEF-foot.R")}
    after = pose.positions(pair.target)[:, foot, :2]
    source = forward_kinematics(pair.source, pair.motion)[:, pair.source.index("LeftFoot"), :3, 3]
    speed = np.linalg.norm(np.gradient(source[:, :2], axis=0), axis=1) * FPS
    down = feet._contacts(source[:, 2])
    planted = down & (speed < 0.05)
    assert 0.2 < planted.mean() < 0.8 and 0.3 < down.mean() < 0.9
    still = planted[1:] & planted[:-1]
    slide_before = np.linalg.norm(np.diff(before, axis=0), axis=1)[still].mean() * FPS
    slide_after = np.linalg.norm(np.diff(after, axis=0), axis=1)[still].mean() * FPS
    assert slide_after < 0.6 * slide_before and slide_after < 0.05
    inside = down[1:] & down[:-1]  # both frames down: the blend is whole
    wanted = pose.root_scale * np.diff(source[:, :2], axis=0)
    error_before = np.median(np.linalg.norm(np.diff(before, axis=0) - wanted, axis=1)[inside]) * FPS
    error_after = np.median(np.linalg.norm(np.diff(after, axis=0) - wanted, axis=1)[inside]) * FPS
    assert error_after < 0.6 * error_before, (error_after, error_before)


def _sole_heights(target, motion, soles: dict) -> np.ndarray:
    """(T,) the lowest of the sole points (rest, each carried rigidly by its bone) per frame."""
    pose = forward_kinematics(target, motion)
    lowest = []
    for joint, points in soles.items():
        local = (points - target.heads[joint]) @ target.rest_rotations[joint]  # rest → the bone's axes
        carried = pose[:, joint, None, :3, 3] + local @ np.swapaxes(pose[:, joint, :3, :3], 1, 2)
        lowest.append(carried[..., 2].min(axis=1))
    return np.min(lowest, axis=0)


def test_rigid_soles_stay_above_the_floor(tmp_path):
    """A rigid foot (no toe bone: a monster's, a robot's) turned as the source's foot turns pitches its toes
    through the floor; given its skin, the foot is lifted by its leg until its sole clears the floor (it
    pivots about its toes), its rotation unchanged. Without the skin the same sole sinks over 1 % of the
    body's height."""
    path = tmp_path / "walk.bvh"
    write_bvh(path, Y_UP_FACING_Z, 1.0)
    target = _game_rig()
    height = float(np.ptp(target.heads[:, 2]))
    floor = float(target.heads[:, 2].min()) - 0.01  # soles lie under the joints
    soles, vertices, joints = {}, [], []
    for side in ("L", "R"):
        foot = target.index(f"DEF-foot.{side}")
        heel, toe = target.heads[foot], target.tails[foot]
        points = np.array([heel + s * (toe - heel) * [1, 1, 0] for s in np.linspace(-0.3, 1.6, 12)])
        points[:, 2] = floor
        soles[foot] = points
        vertices.append(points)
        joints.append(np.full(len(points), foot))
    owners = np.concatenate(joints)
    skin = SkinnedMesh(np.concatenate(vertices), np.zeros((0, 3)), owners[:, None], np.ones((len(owners), 1)))
    frame = detect_canonical_frame(target)
    bare = retarget_file_motion(_read(path), target, frame)
    skinned = retarget_file_motion(_read(path), target, frame, skin=skin)
    sunk = floor - _sole_heights(target, bare.result.motion, soles).min()
    assert sunk > 0.01 * height, sunk
    assert _sole_heights(target, skinned.result.motion, soles).min() > floor - 0.002 * height
    assert set(skinned.lifted) == {"DEF-foot.L", "DEF-foot.R"}
    turned = [forward_kinematics(target, out.result.motion)[:, list(soles), :3, :3]
              for out in (bare, skinned)]
    assert np.allclose(turned[0], turned[1], atol=1e-6)  # the foot turns as it did: lifted, not flattened


def test_a_clip_of_a_body_unlike_the_rig_is_refused_with_a_clear_message(tmp_path):
    """A body without legs or arms (a serpent's spine) onto a person: the automatic map drives no leg and
    little else, so the clip would slide a statue about; nothing is made, and the message says why."""
    path = tmp_path / "spine.bvh"
    write_bvh(path, Y_UP_FACING_Z, 1.0, skeleton=SKELETON[:5])
    target = build_biped(BipedSpec(naming="rigify", height=1.6))
    with pytest.raises(ValueError, match="No leg of the rig matched"):
        retarget_file_motion(_read(path), target, detect_canonical_frame(target))


def test_an_upper_body_clip_drives_the_arms_without_the_legs(tmp_path):
    """An upper body's capture (no legs) drives no leg either, but the spine, head and arms: it is made."""
    upper = [joint for joint in SKELETON if "Leg" not in joint[0] and "Foot" not in joint[0]
             and "Toe" not in joint[0]]
    path = tmp_path / "upper.bvh"
    write_bvh(path, Y_UP_FACING_Z, 1.0, skeleton=upper)
    target = build_biped(BipedSpec(naming="rigify", height=1.6))
    out = retarget_file_motion(_read(path), target, detect_canonical_frame(target))
    mapped = {name for name, source in out.result.mapping.items() if source}
    assert {"DEF-upper_arm.L", "DEF-upper_arm.R"} <= mapped
    assert not any("thigh" in name or "shin" in name for name in mapped)


@pytest.mark.skipif(not (ASSETS / "bvh_cmu_01_01").is_dir(), reason="needs ../shared/assets (CMU BVH)")
def test_a_held_foot_lifts_off_when_the_source_foot_does():
    """A CMU walk on the CMU skeleton stands 4 % of the body's size too low; the feet are lifted to the floor
    while down, and the lift goes on through the swing, so a foot leaves the floor when the source's does:
    it is down (within 1 or 2 % of the body's size of its lowest) for as much of the clip as the source's.
    Faded out at toe-off, the lift pulled the rising foot back to the floor: down 0.64 of the clip where
    the actor's is 0.47."""
    source_path = ASSETS / "bvh_cmu_subjects_01_07" / "007_04.bvh"
    target_path = ASSETS / "bvh_cmu_01_01" / "01_01.bvh"
    conventions = _read(source_path)
    target, _, _ = load_motion_file(target_path)
    frame = detect_canonical_frame(target)
    out = retarget_file_motion(conventions, target, frame)
    made = frame.to_canonical_points(forward_kinematics(target, out.result.motion)[..., :3, 3])
    acted = conventions.frame.to_canonical_points(
        forward_kinematics(conventions.rig, conventions.motion)[..., :3, 3])
    for side in ("Left", "Right"):
        ours = made[:, target.index(f"{side}Foot"), 2]
        theirs = acted[:, conventions.rig.index(out.result.mapping[f"{side}Foot"]), 2]
        ours = ours - np.percentile(ours, 5)
        theirs = (theirs - np.percentile(theirs, 5)) / np.ptp(theirs) * np.ptp(ours)  # the same swing height
        for band in (0.01, 0.02):
            assert abs(np.mean(ours < band) - np.mean(theirs < band)) < 0.03, (side, band)
