"""The filmstrips of bench_motion_real: an orthographic side camera (Workbench, checker floor), 8
frames of each clip side by side, a box per bone for a rig without mesh. The camera is fixed; for a
clip that travels further than FOLLOW body sizes it keeps its view and scale but follows the body
(the checker floor shows the travel and any sliding), so the figure stays large enough to read."""

from __future__ import annotations

import math
import os
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import bpy
import numpy as np

from kirin.benchmarks.motion_real_support import Character, forward_axis, use_action
from kirin.operators.scene_io.arrays import object_matrix
from kirin.operators.scene_io.rig import evaluated_pose

FOLLOW = 3.0  # body sizes of travel beyond which the camera follows the body


@contextmanager
def quiet():
    """Blender's own prints (a render's "Saved: …") kept off stdout."""
    sys.stdout.flush()
    saved = os.dup(1)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 1)
        try:
            yield
        finally:
            os.dup2(saved, 1)
            os.close(saved)


@dataclass
class Strip:
    """One row of a filmstrip: an action, the frames it shows and its caption."""

    action: object
    frames: list[int]
    caption: str


def stick_figure(character: Character) -> bpy.types.Object:
    """A box per bone, skinned rigidly, for a rig without mesh (render only)."""
    rig, arm = character.rig, character.arm
    verts, faces, owner = [], [], []
    width = 0.012 / character.frame.scale
    for j in range(rig.joint_count):
        head, tail = rig.heads[j], rig.tails[j]
        if np.linalg.norm(tail - head) < 1e-6:
            continue
        base = len(verts)
        along = (tail - head) / np.linalg.norm(tail - head)
        side = np.cross(along, [1.0, 0.0, 0.0] if abs(along[0]) < 0.9 else [0.0, 1.0, 0.0])
        side /= np.linalg.norm(side)
        other = np.cross(along, side)  # the box's cross-section is square to the bone, whatever the rest
        for a in (head, tail):
            for dx, dy in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                verts.append(a + width * (dx * side + dy * other))
                owner.append(j)
        faces += [(base + a, base + b, base + 4 + b, base + 4 + a)
                  for a, b in ((0, 1), (1, 2), (2, 3), (3, 0))]
    mesh = bpy.data.meshes.new("Kirin Sticks")
    mesh.from_pydata([tuple(v) for v in verts], [], faces)
    obj = bpy.data.objects.new("Kirin Sticks", mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.parent = arm
    groups = {}
    for v, j in enumerate(owner):
        name = rig.names[j]
        if name not in groups:
            groups[name] = obj.vertex_groups.new(name=name)
        groups[name].add([v], 1.0, "REPLACE")
    obj.modifiers.new("Armature", "ARMATURE").object = arm
    return obj


def _checker_floor(centre: np.ndarray, half: float, height: float, square: float) -> None:
    count = max(2, min(60, int(math.ceil(2 * half / square))))
    size = 2 * half / count
    for parity, shade in ((0, 0.78), (1, 0.45)):
        verts, faces = [], []
        for i in range(count):
            for k in range(count):
                if (i + k) % 2 != parity:
                    continue
                x0, y0 = centre[0] - half + i * size, centre[1] - half + k * size
                base = len(verts)
                verts += [(x0, y0, height), (x0 + size, y0, height), (x0 + size, y0 + size, height),
                          (x0, y0 + size, height)]
                faces.append((base, base + 1, base + 2, base + 3))
        mesh = bpy.data.meshes.new(f"Kirin Floor {parity}")
        mesh.from_pydata(verts, [], faces)
        obj = bpy.data.objects.new(f"Kirin Floor {parity}", mesh)
        obj.color = (shade, shade, shade, 1.0)
        bpy.context.scene.collection.objects.link(obj)


def _camera(character: Character, lo: np.ndarray, hi: np.ndarray, aspect: float,
            ahead: np.ndarray) -> tuple[bpy.types.Object, np.ndarray]:
    """An orthographic camera from the creature's left of `ahead` (horizontal), a little above, framing
    lo–hi; the camera and its offset from the point it looks at."""
    left = np.cross([0.0, 0.0, 1.0], ahead)
    left /= np.linalg.norm(left)
    centre = (lo + hi) / 2
    extent = hi - lo
    view = left + 0.3 * np.array([0.0, 0.0, 1.0])
    view /= np.linalg.norm(view)
    data = bpy.data.cameras.new("Kirin Strip")
    data.type = "ORTHO"
    width = abs(float(extent @ ahead)) + 0.15 * character.body_size
    height = float(extent[2]) + 0.15 * character.body_size
    data.ortho_scale = max(width, height * aspect) * 1.1
    distance = float(np.linalg.norm(extent)) * 2 + character.body_size
    data.clip_start, data.clip_end = distance * 1e-3, distance * 4
    camera = bpy.data.objects.new("Kirin Strip", data)
    bpy.context.scene.collection.objects.link(camera)
    camera.location = centre + view * distance
    from mathutils import Vector

    camera.rotation_euler = Vector(-view).to_track_quat("-Z", "Y").to_euler()
    bpy.context.scene.camera = camera
    return camera, view * distance


def _body_centre(character: Character) -> np.ndarray:
    """The world centre of the posed skeleton's joints at the current frame."""
    world = object_matrix(character.arm)
    heads = evaluated_pose(character.arm, character.rig)[:, :3, 3]
    return heads.mean(axis=0) @ world[:3, :3].T + world[:3, 3]


def _setup_render(size: tuple[int, int]) -> None:
    scene = bpy.context.scene
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.display.shading.light = "STUDIO"
    scene.display.shading.color_type = "OBJECT"
    scene.render.resolution_x, scene.render.resolution_y = size
    scene.render.resolution_percentage = 100
    scene.render.image_settings.file_format = "PNG"
    scene.render.film_transparent = False
    world = bpy.data.worlds.new("Kirin Strip World")
    world.color = (0.93, 0.93, 0.95)
    scene.world = world


def filmstrip(character: Character, strips: list[Strip], bounds: tuple[np.ndarray, np.ndarray], path: Path,
              ahead: np.ndarray | None = None, panels: int = 8, size: tuple[int, int] = (240, 150)) -> Path:
    """`panels` frames of each strip side by side, one row per strip (top first), a fixed camera from the
    left of `ahead` (the way the figure walks; default the rest pose's forward)."""
    from PIL import Image, ImageDraw

    added = [stick_figure(character)] if not character.parts else []
    bodies = [p.obj for p in character.parts] + added
    for obj in bodies:
        obj.color = (0.85, 0.45, 0.15, 1.0)
    lo, hi = bounds
    half = float(np.max(hi[:2] - lo[:2])) / 2 + 0.6 * character.body_size
    _checker_floor((lo + hi) / 2, half, character.floor, 0.25 * character.body_size)
    _setup_render(size)
    follow = float(np.max(hi[:2] - lo[:2])) > FOLLOW * character.body_size
    if follow:  # frame one body, on the path's height range
        middle = (lo + hi) / 2
        reach = np.array([character.body_size, character.body_size, 0.0]) * 0.8
        frame_lo, frame_hi = np.r_[middle[:2], lo[2]] - reach, np.r_[middle[:2], hi[2]] + reach
    else:
        frame_lo, frame_hi = lo, hi
    camera, offset = _camera(character, frame_lo, frame_hi, size[0] / size[1],
                             forward_axis(character) if ahead is None else ahead)
    height = (lo[2] + hi[2]) / 2
    sheet = Image.new("RGB", (size[0] * panels, (size[1] + 18) * len(strips)), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    scene = bpy.context.scene
    with tempfile.TemporaryDirectory(prefix="kirin-strip-") as tmp:
        for row, strip in enumerate(strips):
            use_action(character.arm, strip.action)
            picks = np.linspace(0, len(strip.frames) - 1, panels).round().astype(int)
            for col, k in enumerate(picks):
                scene.frame_set(strip.frames[k])
                if follow:
                    centre = _body_centre(character)
                    camera.location = np.r_[centre[:2], height] + offset
                scene.render.filepath = str(Path(tmp) / f"{row}_{col}.png")
                with quiet():
                    bpy.ops.render.render(write_still=True)
                with Image.open(scene.render.filepath) as image:
                    sheet.paste(image.convert("RGB"), (col * size[0], row * (size[1] + 18) + 18))
            draw.text((4, row * (size[1] + 18) + 3), strip.caption, fill=(0, 0, 0))
    path.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(path)
    for name in [o.name for o in bpy.data.objects if o.name.startswith(("Kirin Floor", "Kirin Strip"))] + \
            [o.name for o in added]:
        bpy.data.objects.remove(bpy.data.objects[name])
    return path


def filmstrip_of_blend(blend: Path, out: Path, prefix: str = "Kirin:", panels: int = 8) -> Path:
    """The filmstrip of every action of a .blend whose name starts with `prefix` (the main job's
    variants, `kirin generate --out`), one row each, from the side of the way the creature walks."""
    from kirin.benchmarks import motion_real_support as support
    from kirin.operators.headless import common as headless

    character, actions = support.load_character(blend, headless.import_rig_file)
    chosen = sorted((a for a in actions if a.name.startswith(prefix)), key=lambda a: a.name)
    if not chosen:
        raise SystemExit(f"{blend} has no action named '{prefix}…'.")
    strips, tracks = [], []
    for action in chosen:
        frames = support.clip_frames(action, 0, False)
        use_action(character.arm, action)
        tracks.append(support.track(character, frames))
        strips.append(Strip(action, frames, action.name.removeprefix(prefix).strip()))
    bounds = (np.min([t.lo for t in tracks], axis=0), np.max([t.hi for t in tracks], axis=0))
    ahead = support.posed_forward(character, tracks[0])
    return filmstrip(character, strips, bounds, out, ahead, panels)


if __name__ == "__main__":  # python -m kirin.benchmarks.motion_real_filmstrip BLEND OUT.png
    import argparse

    parser = argparse.ArgumentParser(description=filmstrip_of_blend.__doc__.split("\n\n")[0])
    parser.add_argument("blend", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--prefix", default="Kirin:")
    parser.add_argument("--panels", type=int, default=8)
    args = parser.parse_args()
    print(filmstrip_of_blend(args.blend, args.out, args.prefix, args.panels))
