"""Benchmark Blender I/O: bulk Action writing vs a keyframe_insert loop, and reading a skinned mesh.

Run: .venv/bin/python benchmarks/bench_blender_io.py   (prints ratios measured in the same run)
"""

from __future__ import annotations

import statistics
import time

from kirin.kirin_addon.io.scratch import private_blender_resources

private_blender_resources("kirin-bench-")

import bpy  # noqa: E402
import numpy as np  # noqa: E402

from kirin.kirin_addon.core.motion import Motion  # noqa: E402
from kirin.kirin_addon.core.rig import rig_from_bones  # noqa: E402
from kirin.kirin_addon.core.rotations import quat_from_axis_angle  # noqa: E402
from kirin.kirin_addon.core.skinning import SkinnedMesh  # noqa: E402
from kirin.operators.scene_io.action import write_action  # noqa: E402
from kirin.operators.scene_io.mesh import create_skinned_mesh, read_skinned_mesh  # noqa: E402
from kirin.operators.scene_io.rig import create_armature  # noqa: E402

BONES, FRAMES, VERTICES, REPEATS = 60, 240, 100_000, 3


def tree_rig(count: int):
    """Five chains of `count / 5` bones fanning out from a root, like limbs and a tail."""
    names, parents, heads, tails = ["root"], [-1], [[0, 0, 1]], [[0, 0, 1.1]]
    per_chain = (count - 1) // 5
    for c in range(5):
        angle = 2 * np.pi * c / 5
        direction = np.array([np.cos(angle), np.sin(angle), -0.3])
        parent = 0
        for k in range(per_chain):
            names.append(f"chain{c}.{k:02d}")
            parents.append(parent)
            head = np.array([0, 0, 1.0]) + direction * 0.05 * k
            heads.append(head)
            tails.append(head + direction * 0.05)
            parent = len(names) - 1
    return rig_from_bones(names, parents, np.array(heads, float), np.array(tails, float))


def timed(fn) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    rig = tree_rig(BONES + 1)
    arm = create_armature(rig, "bench")
    rng = np.random.default_rng(0)
    rotations = quat_from_axis_angle(rng.normal(size=(FRAMES, rig.joint_count, 3)),
                                     rng.uniform(-1, 1, (FRAMES, rig.joint_count)))
    motion = Motion(30.0, rig.heads[0] + rng.normal(size=(FRAMES, 3)) * 0.1, rotations)

    def bulk() -> None:
        write_action(arm, rig, motion, "bulk")

    def keyframe_insert_loop() -> None:
        arm.animation_data_clear()
        arm.animation_data_create().action = bpy.data.actions.new("loop")
        pose_bones = [arm.pose.bones[n] for n in rig.names]
        for t in range(FRAMES):
            for j, pose_bone in enumerate(pose_bones):
                pose_bone.rotation_quaternion = rotations[t, j]
                pose_bone.keyframe_insert("rotation_quaternion", frame=t + 1)
            pose_bones[0].location = motion.root_positions[t] - rig.heads[0]
            pose_bones[0].keyframe_insert("location", frame=t + 1)

    fast, slow = timed(bulk), timed(keyframe_insert_loop)
    print(f"write {FRAMES} frames x {rig.joint_count} bones: bulk {fast:.4f} s, keyframe_insert loop "
          f"{slow:.4f} s, speed-up {slow / fast:.1f}x (target >= 20x)")

    # A 100k-vertex mesh, 4 weights per vertex, skinned to the same rig.
    count = VERTICES
    mesh = SkinnedMesh(
        rng.normal(size=(count, 3)),
        rng.integers(0, count, size=(count * 2, 3)),
        rng.integers(0, rig.joint_count, size=(count, 4)),
        np.round(rng.dirichlet(np.ones(4), size=count), 2),
    )
    build = timed(lambda: create_skinned_mesh(mesh, arm, rig, "bench mesh"))
    body = bpy.data.objects["bench mesh"]
    read = timed(lambda: read_skinned_mesh(body, arm, rig))

    def per_vertex_baseline() -> None:
        co = [tuple(v.co) for v in body.data.vertices]
        groups = [[(g.group, g.weight) for g in v.groups] for v in body.data.vertices]
        assert len(co) == len(groups)

    baseline = timed(per_vertex_baseline)
    print(f"build a {count}-vertex skinned mesh: {build:.3f} s")
    print(f"read a {count}-vertex skinned mesh (vertices, triangles, weights): {read:.3f} s; "
          f"a plain per-vertex Python read of co + groups: {baseline:.3f} s ({baseline / read:.1f}x slower)")


if __name__ == "__main__":
    main()
