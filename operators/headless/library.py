"""`kirin data ingest` and `kirin data preview`, the Blender side of the motion library: authored
files read through Blender's importers into clips, and a grid of clips encoded into an MP4."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import bpy

from ...kirin_addon.io.bvh import frame_rate
from ..scene_io.action import action_channelbag, read_action
from ..scene_io.arrays import object_matrix
from ..scene_io.rig import read_rig
from .common import import_rig_file, video_output


def _bvh_fps(path: Path) -> float:
    """Blender's BVH importer keys one frame per BVH frame; the rate is in the file."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if line.strip().lower().startswith("frame time"):
                return frame_rate(float(line.split(":")[1]))
    raise ValueError(f"{path.name}: no 'Frame Time' line.")


def armature_actions(arm: bpy.types.Object) -> list:
    """Actions that animate this armature's bones (as left by an importer)."""
    found = []
    for action in bpy.data.actions:
        bag = action_channelbag(action, arm)
        if bag is not None and any(fc.data_path.startswith("pose.bones") for fc in bag.fcurves):
            found.append(action)
    return found


def ingest_files(source: str) -> list[Path]:
    """The BVH/glTF/FBX files `source` names: itself when it is one such file, else every one under it."""
    from ...kirin_addon.library import ingest

    path = Path(source)
    if path.is_file():
        if path.suffix.lower() not in ingest.INGEST_EXTENSIONS:
            raise ValueError(f"{path.name} is not a BVH, glTF or FBX file.")
        return [path]
    if not path.is_dir():
        raise ValueError(f"No file or folder {source}.")
    files = sorted(p for p in path.rglob("*") if p.suffix.lower() in ingest.INGEST_EXTENSIONS)
    if not files:
        raise ValueError(f"No BVH, glTF or FBX files under {source}.")
    return files


def run_ingest(source: str, out: str, captions_csv: str | None = None, fps: float | None = 30.0,
               test_rigs: tuple[str, ...] = (), seed: int = 0) -> dict:
    """Import a BVH/glTF/FBX file, or every one under a folder, with Blender's importers and write one
    clip per action (resampled to `fps`; None keeps each file's rate), captioned from the CSV and/or
    species + action name."""
    from ...kirin_addon.library import ingest

    table = ingest.CaptionTable.read(captions_csv) if captions_csv else ingest.CaptionTable()
    files = ingest_files(source)
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    written, skipped = [], []
    for index, path in enumerate(files):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        try:
            arm, _ = import_rig_file(str(path))
            rig = read_rig(arm)
        except (ValueError, RuntimeError) as exc:
            skipped.append({"file": path.name, "reason": str(exc)})
            continue
        scene = bpy.context.scene
        scene_fps = scene.render.fps / scene.render.fps_base
        source_fps = _bvh_fps(path) if path.suffix.lower() == ".bvh" else scene_fps
        species = table.species.get(path.stem) or ingest.species_from_file(path)
        family = table.family.get(path.stem) or ingest.guess_family(rig, object_matrix(arm))
        split = "test" if path.stem in test_rigs else "train"
        actions = armature_actions(arm)
        # Clips are stored in Blender's world axes (Z-up), whatever the armature object's turn.
        world = object_matrix(arm)
        world_rig = rig.transformed(world)
        if not actions:
            skipped.append({"file": path.name, "reason": "no animation"})
        for action in actions:
            motion = read_action(arm, rig, action, fps=source_fps).transformed(world)
            if motion.frame_count < 2:
                skipped.append({"file": path.name, "action": action.name, "reason": "a single frame"})
                continue
            label = ingest.clip_label(action.name)
            if fps:
                motion = motion.resampled(fps)
            clip_path = ingest.write_ingested_clip(
                out_dir, ingest.SourceFile(path, species, family, split), action.name, world_rig, motion,
                table.for_clip(path.stem, label), seed + index)
            written.append({"clip": clip_path.name, "file": path.name, "action": action.name,
                            "species": species, "family": family, "split": split,
                            "frames": motion.frame_count, "frame_start": int(action.frame_range[0])})
        print(f"[{index + 1}/{len(files)}] {path.name}: {len(actions)} clips", flush=True)
    return {"clips": written, "skipped": skipped, "out": str(out_dir.resolve())}


def encode_frames(frame_dir: str, out: str, fps: int = 30) -> str:
    """Encode frame_*.png (one size) into an MP4 with Blender's sequencer and FFmpeg."""
    frames = sorted(Path(frame_dir).glob("frame_*.png"))
    if not frames:
        raise ValueError(f"No frames in {frame_dir}.")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    editor = scene.sequence_editor_create()
    strip = editor.strips.new_image("grid", str(frames[0]), 1, 1)
    for frame in frames[1:]:
        strip.elements.append(frame.name)
    from ...kirin_addon.library.render import read_png

    height, width, _ = read_png(frames[0]).shape
    scene.render.resolution_x, scene.render.resolution_y = width, height
    scene.render.resolution_percentage = 100
    scene.render.fps = fps
    scene.frame_start, scene.frame_end = 1, len(frames)
    scene.view_settings.view_transform = "Standard"
    video_output(scene, os.path.abspath(out))
    bpy.ops.render.render(animation=True)
    return os.path.abspath(out)


def run_preview(library: str, out: str, count: int = 9, frames: int = 90, cell: int = 160) -> dict:
    """`kirin data preview`: a grid of clips of a library folder rendered into an MP4."""
    from ...kirin_addon.io.clip import find_clips
    from ...kirin_addon.library.preview import pick_clips, render_grid_frames

    paths = find_clips(library)
    if not paths:
        raise ValueError(f"No clips (.npz) under {library}.")
    chosen = pick_clips(paths, count)
    frame_dir = Path(tempfile.mkdtemp(prefix="kirin-grid-"))
    n = render_grid_frames(chosen, frame_dir, cell=cell, frames=frames)
    video = encode_frames(str(frame_dir), out)
    return {"video": video, "frames": n, "clips": [str(p) for p in chosen]}
