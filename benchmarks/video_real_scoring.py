"""bench_video_real's measures against the footage itself: the fit seen through the camera it fitted
(stored on the action by Motion From Video), its landmarks against hand-labelled keypoints (PCK), its
deformed mesh's silhouette against the video's mask (IoU), and an overlay sheet of both.

A landmark is a point on a bone of the user's rig: `along` 0 is the bone's head, 1 its tail (a hoof is
the tail of the lowest leg bone). Frames are the video's (0-based); the action's frame at the same
moment is found from both frame rates.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import bpy
import numpy as np

from kirin.benchmarks import motion_real_support as support
from kirin.kirin_addon.core.camera import PinholeCamera
from kirin.kirin_addon.core.raster import rasterize_faces
from kirin.kirin_addon.eval.footage import Labels, labelled_pck, mask_iou
from kirin.operators.scene_io.mesh import evaluated_mesh_vertices


@dataclass(frozen=True)
class Landmark:
    bone: str
    along: float = 0.0  # 0: the bone's head, 1: its tail


# The labels' joints on the Quaternius Bull (the bison film shows its right flank).
BULL = {"head": Landmark("Head"), "tail_base": Landmark("Tail1"),  # (the Head bone is a token length)
        "shoulder.R": Landmark("FrontUpperLeg.R"), "hip.R": Landmark("BackLeg.R"),
        **{f"front_knee.{s}": Landmark(f"FrontLowerLeg.{s}") for s in "LR"},
        **{f"front_foot.{s}": Landmark(f"FF.{s}") for s in "LR"},  # the hooves hang from the foot controls
        **{f"hock.{s}": Landmark(f"BackLowerLeg.{s}") for s in "LR"},
        **{f"back_foot.{s}": Landmark(f"FFB.{s}") for s in "LR"}}
# ... and on the Quaternius Birb (the cockatoo's head, beak, neck and wing roots).
BIRB = {"head": Landmark("Head", 0.5), "beak": Landmark("Head", 1.0), "neck": Landmark("Neck"),
        **{f"shoulder.{s}": Landmark(f"UpperArm.{s}") for s in "LR"}}


def write_keypoints(labels: Labels, landmarks: dict[str, Landmark], path: Path) -> Path:
    """The labels as a keypoints file for Motion From Video: each landmark at a bone's head (`along` 0)
    named by its bone; those along a bone are left out (keypoints are joint heads)."""
    rows = ["frame,joint,x,y,confidence"]
    for frame in labels.frames:
        for joint, (x, y, confidence) in labels.points[frame].items():
            mark = landmarks.get(joint)
            if mark is not None and mark.along == 0.0:
                rows.append(f"{frame},{mark.bone},{x},{y},{confidence}")
    path.write_text("\n".join(rows) + "\n")
    return path


def fitted_camera(action) -> tuple[PinholeCamera, tuple[int, int]]:
    """The camera Motion From Video stored on its action (armature space) and the video's size."""
    stored = action.get("kirin_video_camera")
    if stored is None:
        raise support.Unmeasurable("the action carries no fitted camera")
    camera = PinholeCamera(stored["focal"], list(stored["center"]),
                           np.reshape(list(stored["rotation"]), (3, 3)), list(stored["translation"]))
    return camera, tuple(int(v) for v in stored["image_size"])


def go_to_video_frame(video_frame: int, video_fps: float, first_action_frame: int) -> None:
    """The scene at the moment the video shows `video_frame` (a sub-frame where the rates differ)."""
    scene = bpy.context.scene
    moment = first_action_frame + video_frame / video_fps * scene.render.fps / scene.render.fps_base
    scene.frame_set(int(np.floor(moment)), subframe=float(moment - np.floor(moment)))


def landmark_pixels(arm: bpy.types.Object, camera: PinholeCamera,
                    landmarks: dict[str, Landmark]) -> dict[str, np.ndarray]:
    """Each landmark's pixel at the scene's current frame."""
    out = {}
    for name, mark in landmarks.items():
        bone = arm.pose.bones.get(mark.bone)
        if bone is None:
            continue
        point = np.array(bone.head) * (1 - mark.along) + np.array(bone.tail) * mark.along  # armature space
        out[name] = camera.project(point)
    return out


def fit_mask(character: support.Character, camera: PinholeCamera, size: tuple[int, int]) -> np.ndarray:
    """(H,W) bool: the deformed mesh at the scene's current frame seen through the camera."""
    mask = np.zeros((size[1], size[0]), bool)
    for part in character.parts:
        if part.bone is not None:
            continue
        vertices = evaluated_mesh_vertices(part.obj, character.arm)
        part.obj.data.calc_loop_triangles()
        triangles = np.array([tri.vertices[:] for tri in part.obj.data.loop_triangles], np.int64)
        face, _ = rasterize_faces(camera.project(vertices), camera.depth(vertices), triangles, size)
        mask |= face >= 0
    return mask


def score_labels(character: support.Character, camera: PinholeCamera, labels: Labels,
                 landmarks: dict[str, Landmark], video_fps: float, first: int) -> tuple[float, int, dict]:
    """(PCK, points scored, the predicted pixels per labelled frame)."""
    predicted = {}
    for frame in labels.frames:
        go_to_video_frame(frame, video_fps, first)
        predicted[frame] = landmark_pixels(character.arm, camera, landmarks)
    pck, count = labelled_pck(predicted, labels)
    return pck, count, predicted


def resized(camera: PinholeCamera, size: tuple[int, int], width: int) -> PinholeCamera:
    """The camera for the video's frames shrunk from `size` (w,h) to `width` pixels across."""
    scale = width / size[0]
    return PinholeCamera(camera.focal * scale, camera.center * scale, camera.rotation, camera.translation)


def silhouette_iou(character: support.Character, camera: PinholeCamera, size: tuple[int, int],
                   masks: np.ndarray, video_fps: float, first: int, every: int = 4) -> float:
    """Mean IoU of the fit's rendered mesh against the video's masks (T,h,w) on every `every`-th frame
    that has a mask (the render at the masks' size)."""
    height, width = masks.shape[1:]
    small = resized(camera, size, width)
    scores = []
    for frame in range(0, len(masks), every):
        if not masks[frame].any():
            continue
        go_to_video_frame(frame, video_fps, first)
        scores.append(mask_iou(fit_mask(character, small, (width, height)), masks[frame] > 0.5))
    return float(np.mean(scores)) if scores else 0.0


def overlay_sheet(character: support.Character, camera: PinholeCamera, size: tuple[int, int],
                  video_frames: np.ndarray, labels: Labels, predicted: dict, video_fps: float, first: int,
                  path: Path, columns: int = 4) -> Path:
    """The labelled frames (`video_frames` (T,h,w,3) the video's at any size; `size` the video's own),
    the fit's mesh tinted over each, the labels (green) joined to the fit's landmarks (red)."""
    from PIL import Image, ImageDraw

    frames = labels.frames
    height, width = video_frames.shape[1:3]
    scale = width / size[0]
    camera = resized(camera, size, width)
    rows = -(-len(frames) // columns)
    sheet = Image.new("RGB", (columns * width, rows * height), (255, 255, 255))
    for k, frame in enumerate(frames):
        go_to_video_frame(frame, video_fps, first)
        image = video_frames[min(frame, len(video_frames) - 1)].astype(np.float32)
        mask = fit_mask(character, camera, (width, height))
        image[mask] = 0.55 * image[mask] + 0.45 * np.array([230.0, 120.0, 40.0])
        picture = Image.fromarray(image.astype(np.uint8))
        draw = ImageDraw.Draw(picture)
        for joint, (x, y, _) in labels.points[frame].items():
            x, y = x * scale, y * scale
            guess = predicted.get(frame, {}).get(joint)
            if guess is not None and np.all(np.isfinite(guess)):
                guess = np.asarray(guess) * scale
                draw.line([(x, y), tuple(guess)], fill=(255, 255, 0), width=1)
                draw.ellipse([guess[0] - 3, guess[1] - 3, guess[0] + 3, guess[1] + 3], fill=(220, 0, 0))
            draw.ellipse([x - 3, y - 3, x + 3, y + 3], fill=(0, 200, 0))
        draw.text((4, 4), f"video frame {frame}", fill=(255, 0, 0))
        sheet.paste(picture, ((k % columns) * width, (k // columns) * height))
    sheet.save(path)
    return path
