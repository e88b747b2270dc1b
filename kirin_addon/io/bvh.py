"""BVH (Biovision hierarchy) reader: a Rig and a Motion from a .bvh file.

BVH joints have no orientation of their own: every joint's rest frame is the file's world frame,
and each frame's channels give the joint's rotation relative to its parent. Kirin bones need an
orientation (Y along the bone), so the loader picks one per bone and converts the animation
through world deltas, which are independent of that choice (see motion.py).

Choices made here:
- every ROOT/JOINT is a bone; End Sites only give the tail of their joint;
- tail = head + mean of the non-zero child offsets (End Sites included); when the children are
  symmetric and cancel out, the longest child; without children, a short bone (5 % of the body
  size) along the parent direction;
- bone roll: Blender's zero-roll convention for a bone along head→tail (`rig.rig_from_bones`);
- channels rotate in the order they are listed (R = R_first · R_second · R_third, i.e. intrinsic);
- the root position is OFFSET + the position channels; position channels of non-root joints are
  ignored (Motion carries one root trajectory), as are those of secondary roots.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from ..core.motion import Motion, motion_from_world_deltas
from ..core.rig import Rig, rig_from_bones
from ..core.rotations import quat_from_axis_angle, quat_identity, quat_multiply

_AXES = {"x": 0, "y": 1, "z": 2}
_FALLBACK_LENGTH = 0.05  # of the body size, for bones without any child offset


class BvhError(ValueError):
    """A BVH file that cannot be read; the message is user-facing."""


@dataclass
class _Joint:
    name: str
    parent: int
    offset: np.ndarray = field(default_factory=lambda: np.zeros(3))
    channels: list[str] = field(default_factory=list)
    end_sites: list[np.ndarray] = field(default_factory=list)
    column: int = 0  # first column of this joint's channels in a frame row


def unique_names(names: list[str]) -> list[str]:
    """Make names unique the way Blender does ("name", "name.001", ...), keeping order."""
    seen: set[str] = set()
    out = []
    for name in names:
        base = name or "bone"
        candidate, n = base, 0
        while candidate in seen:
            n += 1
            candidate = f"{base}.{n:03d}"
        seen.add(candidate)
        out.append(candidate)
    return out


def _parse_hierarchy(lines: list[str]) -> tuple[list[_Joint], int]:
    """Joints in file order and the index of the line after the hierarchy."""
    joints: list[_Joint] = []
    stack: list[tuple[str, int]] = []  # ("joint", index) or ("end", owner joint index)
    pending: tuple[str, int] | None = None
    for number, raw in enumerate(lines):
        tokens = raw.split()
        if not tokens:
            continue
        key = tokens[0].upper()
        if key == "MOTION":
            if stack or pending is not None:
                raise BvhError(f"Unbalanced braces before MOTION (line {number + 1}).")
            return joints, number
        if key == "HIERARCHY":
            continue
        if key in ("ROOT", "JOINT"):
            name_tokens = [t for t in tokens[1:] if t != "{"]
            parent = stack[-1][1] if stack and stack[-1][0] == "joint" else -1
            if key == "JOINT" and parent < 0:
                raise BvhError(f"JOINT outside of a joint block (line {number + 1}).")
            joints.append(_Joint(" ".join(name_tokens), parent if key == "JOINT" else -1))
            pending = ("joint", len(joints) - 1)
            tokens = ["{"] if tokens[-1] == "{" else []
        elif key == "END":
            if not stack or stack[-1][0] != "joint":
                raise BvhError(f"End Site outside of a joint (line {number + 1}).")
            pending = ("end", stack[-1][1])
            tokens = ["{"] if tokens[-1] == "{" else []
        elif key == "OFFSET":
            if not stack or len(tokens) < 4:
                raise BvhError(f"Malformed OFFSET (line {number + 1}).")
            offset = np.array([float(v) for v in tokens[1:4]])
            kind, owner = stack[-1]
            if kind == "joint":
                joints[owner].offset = offset
            else:
                joints[owner].end_sites.append(offset)
            continue
        elif key == "CHANNELS":
            if not stack or stack[-1][0] != "joint":
                raise BvhError(f"CHANNELS outside of a joint (line {number + 1}).")
            count = int(tokens[1])
            channels = [t.lower() for t in tokens[2:2 + count]]
            if len(channels) != count:
                raise BvhError(f"CHANNELS lists fewer than {count} channels (line {number + 1}).")
            for channel in channels:
                if channel[:1] not in _AXES or channel[1:] not in ("position", "rotation"):
                    raise BvhError(f"Unknown channel '{channel}' (line {number + 1}).")
            joints[stack[-1][1]].channels = channels
            continue
        for token in tokens:
            if token == "{":
                if pending is None:
                    raise BvhError(f"Unexpected '{{' (line {number + 1}).")
                stack.append(pending)
                pending = None
            elif token == "}":
                if not stack:
                    raise BvhError(f"Unexpected '}}' (line {number + 1}).")
                stack.pop()
            else:
                raise BvhError(f"Unexpected '{token}' in the hierarchy (line {number + 1}).")
    raise BvhError("No MOTION section.")


def _parse_motion(lines: list[str], joints: list[_Joint]) -> tuple[np.ndarray, float]:
    """(frames, channels) values and the frame time."""
    frames = frame_time = None
    body_start = len(lines)
    for number, raw in enumerate(lines):
        text = raw.strip()
        low = text.lower()
        if low.startswith("frames:"):
            frames = int(text.split(":", 1)[1])
        elif low.startswith("frame time:"):
            frame_time = float(text.split(":", 1)[1])
            body_start = number + 1
            break
        elif text:
            raise BvhError(f"Expected 'Frames:' and 'Frame Time:' after MOTION, got '{text[:40]}'.")
    if frames is None or frame_time is None:
        raise BvhError("The MOTION section lacks 'Frames:' or 'Frame Time:'.")
    if not frame_time > 0:
        raise BvhError(f"Frame Time must be positive, got {frame_time}.")
    width = sum(len(j.channels) for j in joints)
    values = np.array(" ".join(lines[body_start:]).split(), dtype=np.float64)
    available = values.size // width if width else frames
    # Truncated files are common (exporters that stop mid-write): keep the complete rows.
    frames = min(frames, available)
    if frames <= 0:
        raise BvhError("The BVH file has no motion frames.")
    data = values[: frames * width].reshape(frames, width) if width else np.zeros((frames, 0))
    return data, frame_time


def frame_rate(frame_time: float) -> float:
    fps = 1.0 / frame_time
    # Frame times are printed with few digits (.0083333): snap to an integer rate when that is
    # clearly what was meant, but keep genuine NTSC-like rates such as 29.97.
    nearest = round(fps)
    return float(nearest) if nearest > 0 and abs(fps - nearest) < 1e-4 * fps else fps


def _build_rig(joints: list[_Joint], scale: float) -> Rig:
    count = len(joints)
    parents = np.array([j.parent for j in joints], dtype=np.int64)
    offsets = np.array([j.offset for j in joints]) * scale
    heads = np.zeros((count, 3))
    for index in range(count):  # file order is parents-first
        p = parents[index]
        heads[index] = offsets[index] + (heads[p] if p >= 0 else 0.0)
    ends = [heads[i] + e * scale for i, j in enumerate(joints) for e in j.end_sites]
    points = np.concatenate([heads, np.array(ends).reshape(-1, 3)])
    size = float(np.max(points.max(0) - points.min(0))) or max(abs(scale), 1.0)
    eps = 1e-6 * size

    child_offsets: list[list[np.ndarray]] = [[e * scale for e in j.end_sites] for j in joints]
    for index in range(count):
        if parents[index] >= 0:
            child_offsets[parents[index]].append(offsets[index])

    tails = np.zeros((count, 3))
    for index in range(count):
        candidates = [o for o in child_offsets[index] if np.linalg.norm(o) > eps]
        if candidates:
            vector = np.mean(candidates, axis=0)
            if np.linalg.norm(vector) <= 0.1 * max(np.linalg.norm(c) for c in candidates):
                vector = max(candidates, key=lambda c: float(np.linalg.norm(c)))
        else:
            p = parents[index]
            direction = np.array([0.0, 1.0, 0.0])
            if p >= 0:
                for candidate in (heads[index] - heads[p], tails[p] - heads[p]):
                    if np.linalg.norm(candidate) > eps:
                        direction = candidate / np.linalg.norm(candidate)
                        break
            vector = direction * _FALLBACK_LENGTH * size
        tails[index] = heads[index] + vector

    # Bone Y along head→tail with Blender's zero-roll convention (rig_from_bones).
    return rig_from_bones(unique_names([j.name for j in joints]), parents, heads, tails)


def _local_rotations(joints: list[_Joint], data: np.ndarray) -> np.ndarray:
    """(T,J,4) quaternions of each joint relative to its parent, channels in listed order."""
    frames = data.shape[0]
    local = quat_identity((frames, len(joints)))
    for index, joint in enumerate(joints):
        q = quat_identity((frames,))
        for k, channel in enumerate(joint.channels):
            if channel.endswith("rotation"):
                axis = np.zeros(3)
                axis[_AXES[channel[0]]] = 1.0
                angle = np.radians(data[:, joint.column + k])
                q = quat_multiply(q, quat_from_axis_angle(axis, angle))
        local[:, index] = q
    return local


def load_bvh(path: str | os.PathLike, scale: float = 1.0) -> tuple[Rig, Motion]:
    """Read a BVH file; `scale` multiplies all offsets and positions (e.g. 0.01 for cm → m)."""
    with open(path, "rb") as handle:
        text = handle.read().decode("utf-8", errors="replace")
    lines = text.splitlines()
    joints, motion_line = _parse_hierarchy(lines)
    if not joints:
        raise BvhError("The BVH file has no joints.")
    column = 0
    for joint in joints:
        joint.column = column
        column += len(joint.channels)
    data, frame_time = _parse_motion(lines[motion_line + 1:], joints)
    rig = _build_rig(joints, scale)

    # World rotation of each joint; BVH rest orientations are all the identity, so this is
    # already the world delta D = W · W_rest⁻¹.
    local = _local_rotations(joints, data)
    world = np.empty_like(local)
    for index, joint in enumerate(joints):
        world[:, index] = local[:, index] if joint.parent < 0 else quat_multiply(
            world[:, joint.parent], local[:, index])

    root = joints[rig.main_root]
    root_positions = np.repeat(root.offset[None], data.shape[0], axis=0)
    for k, channel in enumerate(root.channels):
        if channel.endswith("position"):
            root_positions[:, _AXES[channel[0]]] += data[:, root.column + k]
    root_positions = root_positions * scale
    motion = motion_from_world_deltas(rig, world, root_positions, frame_rate(frame_time))
    return rig, motion
