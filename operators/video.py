"""Extract Motion From Video: a driving video (+ keypoints, Movie Clip tracks, silhouettes) → the
backend's sequence fit → a new Action on the selected armature.

The synchronous and modal paths (Esc cancels, status-bar progress) are `backend_task.BackendOperator`'s;
nothing in the scene changes until the result is written, all in one step, so a cancelled or failed
job leaves the scene as it was and one Undo removes a finished one. The backend reads the video (and
the keypoints file and mask folder) from their paths; Movie Clip tracks are read here (scene_io) and
sent as pixel positions per video frame. As for Generate Motion, the rig (and its skinned mesh) go out
in the canonical frame (+Z up, −Y forward, unit size) and the motion is brought back to armature space
before `scene_io.action.write_action` keys it; the backend resamples it to the scene's frame rate.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, StringProperty

from ..kirin_addon.backend.client import BackendClient
from ..kirin_addon.backend.results import ExtractResult
from ..kirin_addon.core.camera import PinholeCamera
from ..kirin_addon.core.rig import Rig
from ..kirin_addon.video.request import SILHOUETTE_SOURCES, ExtractRequest, ExtractRequestError
from . import scene_io
from .backend_task import BackendOperator, BackendTask, Written, start_task
from .common import NAME_LIMIT, CharacterInput, NeedsArmature, connect
from .properties import FACING_ITEMS, SILHOUETTE_ITEMS
from .scene_change import SceneChange, show_frames
from .scene_io.action import keyed_locations, write_action
from .scene_io.rig import deforming_armature
from .scene_io.tracks import movie_clip_tracks, read_movie_clip_tracks


# ----------------------------------------------------------------------------- the request
@dataclass
class VideoSettings:
    """What the user asked for in the panel (or a script, in the operator's properties)."""

    video: str
    first: int  # 1-based video frame
    last: int  # 0: to the end
    stride: int
    keypoints: str
    silhouettes: str  # a SILHOUETTE_ITEMS key
    masks: str
    clip: str  # Movie Clip name
    epochs: int
    idm: bool
    mediapipe: bool = False
    gait: str = "auto"
    facing: str = "AUTO"  # a FACING_ITEMS key


@dataclass
class VideoInput(CharacterInput):
    """A checked Extract Motion From Video request, read from the scene."""

    extraction: ExtractRequest | None = None  # absolute paths; at the scene's frame rate
    frame_start: int = 1
    clip: str | None = None  # Movie Clip name
    warnings: list[str] = field(default_factory=list)


def _existing(path: str, what: str, folder: bool = False) -> str:
    full = os.path.abspath(bpy.path.abspath(path))
    if not os.path.exists(full):
        raise scene_io.SceneError(f"The {what} {full} does not exist.")
    if folder and not os.path.isdir(full):
        raise scene_io.SceneError(f"The {what} {full} is not a folder.")
    if not folder and not os.path.isfile(full):
        raise scene_io.SceneError(f"The {what} {full} is not a file.")
    return full


def clip_file(clip) -> str:
    return os.path.abspath(bpy.path.abspath(clip.filepath, library=clip.library))


def read_tracks(clip, assignments, rig: Rig) -> dict[str, np.ndarray]:
    """Bone → (N,2) pixel positions of the Movie Clip tracks assigned to bones in the panel."""
    chosen = [(item.name, item.bone) for item in assignments if item.bone]
    if not chosen:
        return {}
    names = set(rig.names)
    unknown = sorted({bone for _, bone in chosen if bone not in names})
    if unknown:
        raise scene_io.SceneError(f"Tracks are assigned to bones the armature does not have: "
                                  f"{', '.join(map(repr, unknown[:5]))}.")
    bones = [bone for _, bone in chosen]
    twice = sorted({b for b in bones if bones.count(b) > 1})
    if twice:
        raise scene_io.SceneError(f"More than one track follows {', '.join(map(repr, twice[:5]))}: "
                                  "assign one track per bone.")
    points, _ = read_movie_clip_tracks(clip, [track for track, _ in chosen])
    out = {}
    for track, bone in chosen:
        if not np.any(np.isfinite(points[track]).all(-1)):
            raise scene_io.SceneError(f"The track '{track}' of '{clip.name}' has no enabled marker.")
        out[bone] = points[track]
    return out


def read_request(context, settings: VideoSettings) -> VideoInput:
    """Check the input and read the scene; SceneError (a user-facing message) for bad input."""
    try:
        asked = ExtractRequest(settings.video, settings.first - 1, settings.last or None,
                               int(settings.stride), epochs=settings.epochs, idm=bool(settings.idm),
                               mediapipe=bool(settings.mediapipe), gait=settings.gait.strip(),
                               facing=settings.facing.lower()).check()
    except ExtractRequestError as exc:
        raise scene_io.SceneError(str(exc)) from None
    movie = _movie_clip(settings.clip)
    video = _driving_video(settings.video, movie)
    keypoints = settings.keypoints.strip()
    keypoints_path = _existing(keypoints, "keypoints file") if keypoints else None
    silhouettes = _silhouettes(settings.silhouettes, settings.masks)
    _, rig = deforming_armature(context)
    tracks = read_tracks(movie, context.scene.kirin.video_tracks, rig) if movie is not None else {}
    scene = context.scene
    extraction = replace(asked, video=video, keypoints=keypoints_path, tracks=tracks, silhouettes=silhouettes,
                         fps=float(scene.render.fps / scene.render.fps_base), epochs=int(settings.epochs))
    if not extraction.has_evidence:
        raise scene_io.SceneError("Nothing to fit to: give a keypoints file, use MediaPipe Pose (humanoid "
                                  "rigs), assign Movie Clip tracks to bones, or use silhouettes.")
    # The mesh: None for the bones' capsules.
    return VideoInput.from_scene(context, extraction=extraction, frame_start=int(scene.frame_start),
                                 clip=movie.name if movie is not None else None)


def _movie_clip(name: str):
    """The Movie Clip of that name (None for no name); SceneError when there is none."""
    if not name:
        return None
    movie = bpy.data.movieclips.get(name)
    if movie is None:
        raise scene_io.SceneError(f"There is no Movie Clip named '{name}'.")
    return movie


def _driving_video(path: str, movie) -> str:
    """The driving video's absolute path: the one given, else the Movie Clip's; SceneError when there is
    none, it is missing, or the Movie Clip shows another file."""
    video = (path or "").strip()
    if not video:
        if movie is None:
            raise scene_io.SceneError("Choose a driving video file (or a Movie Clip).")
        video = clip_file(movie)
    video = _existing(video, "driving video")
    if movie is not None and os.path.normcase(clip_file(movie)) != os.path.normcase(video):
        shown = os.path.basename(clip_file(movie))
        raise scene_io.SceneError(f"The Movie Clip '{movie.name}' shows {shown}, not the driving video "
                                  f"{os.path.basename(video)}: its tracks would not match.")
    return video


def _silhouettes(source: str, masks: str) -> str:
    """The request's silhouette source from the panel's (a SILHOUETTE_ITEMS key) and mask folder."""
    key = source.upper()
    if key not in {item[0] for item in SILHOUETTE_ITEMS}:
        raise scene_io.SceneError(f"Unknown silhouette source {source!r}.")
    if key != "MASKS":
        return key.lower()
    if not masks.strip():
        raise scene_io.SceneError("Choose the folder of mask images (or another silhouette source).")
    return _existing(masks, "mask folder", folder=True)


# ----------------------------------------------------------------------------- the job (no bpy)
class VideoTask(BackendTask):
    """One extraction job seen from the add-on (no bpy data touched: tested without timers)."""

    def __init__(self, client: BackendClient, request: VideoInput):
        self.request = request
        super().__init__(client.extract_motion(request.canonical_rig, request.extraction, request.mesh),
                         f"extracting motion from '{os.path.basename(request.extraction.video)}'")

    def motion(self, result: ExtractResult):
        """The motion in armature space."""
        return result.motion.transformed(np.linalg.inv(self.request.to_canonical))

    def camera(self, result: ExtractResult) -> PinholeCamera | None:
        """The camera the fit sees the video through, in armature space (None: the backend sent none)."""
        fields = result.camera
        if not isinstance(fields, dict):
            return None
        try:
            camera = PinholeCamera(fields["focal"], fields["center"], fields["rotation"],
                                   fields["translation"])
        except (KeyError, TypeError, ValueError):
            return None
        return camera.transformed(np.linalg.inv(self.request.to_canonical))


def named_files(extraction: ExtractRequest) -> tuple[str, ...]:
    """The files and folders the backend is to read for this extraction (the local backend may read
    their folders: the user picked them)."""
    masks = extraction.silhouettes if extraction.silhouettes not in SILHOUETTE_SOURCES else None
    return tuple(str(p) for p in (extraction.video, extraction.keypoints, masks) if p)


# ----------------------------------------------------------------------------- writing
def action_name(request: VideoInput) -> str:
    text = f"Kirin: {os.path.basename(request.extraction.video)}"
    return text.encode()[:NAME_LIMIT].decode(errors="ignore")


def write_result(context, task: VideoTask, result: ExtractResult, set_frame_range: bool = True):
    """The motion as a new Action on the armature (the previous one kept); returns it."""
    request = task.request
    arm, rig = request.armature_to_write("during the extraction")
    motion = task.motion(result)
    keyed_locations(rig, motion)
    with SceneChange(context.scene) as change:
        change.keep_animation(arm)
        action = write_action(arm, rig, motion, action_name(request),
                                       frame_start=request.frame_start)
        extraction = request.extraction
        action["kirin_video"] = extraction.video
        stop = -1 if extraction.stop is None else extraction.stop
        action["kirin_video_frames"] = [extraction.start, stop, extraction.stride]  # 0-based, stop, stride
        camera = task.camera(result)
        if camera is not None:  # how the fit saw the video: to render or measure the take over the footage
            action["kirin_video_camera"] = camera_property(camera, result.report.get("image_size"))
        if set_frame_range:
            show_frames(context.scene, request.frame_start, motion.frame_count)
    return action


def camera_property(camera: PinholeCamera, image_size) -> dict:
    """The fitted camera as an ID property (OpenCV convention, armature space, the video's pixels)."""
    out = {"focal": camera.focal, "center": [float(v) for v in camera.center],
           "rotation": [float(v) for v in camera.rotation.ravel()],
           "translation": [float(v) for v in camera.translation]}
    if isinstance(image_size, (list, tuple)) and len(image_size) == 2:
        out["image_size"] = [int(v) for v in image_size]
    return out


def report_of(task: VideoTask, result: ExtractResult, action) -> dict:
    request = task.request
    extraction = request.extraction
    return {
        "action": action.name,
        "armature": request.armature,
        "video": extraction.video,
        "frames": result.motion.frame_count,
        "fps": extraction.fps,
        "bones": request.rig.joint_count,
        "mesh": request.mesh is not None,
        "keypoints": extraction.keypoints,
        "mediapipe": extraction.mediapipe,
        "gait": extraction.gait,
        "facing": extraction.facing,
        "tracks": sorted(extraction.tracks or {}),
        "silhouettes": extraction.silhouettes,
        "epochs": extraction.epochs,
        "seconds_backend": result.seconds,
        "seconds_submit_to_action": time.perf_counter() - task.started,
        "backend_report": result.report,
    }


# ----------------------------------------------------------------------------- the operators
class KIRIN_OT_motion_from_video(NeedsArmature, BackendOperator, bpy.types.Operator):
    """Fit a new Action on the selected armature to a driving video (keypoints file, Movie Clip tracks
    assigned to bones, silhouettes) with Kirin's backend; the previous action is kept"""

    bl_idname = "kirin.motion_from_video"
    bl_label = "Extract Motion From Video"
    bl_options = {"REGISTER", "UNDO"}

    # Unset properties are taken from the panel (scene settings).
    video: StringProperty(name="Video", subtype="FILE_PATH")
    first: IntProperty(name="First frame", default=1, description="First video frame (1: the first)")
    last: IntProperty(name="Last frame", default=0, description="Last video frame (0: to the end)")
    stride: IntProperty(name="Stride", default=1)
    keypoints: StringProperty(name="Keypoints", subtype="FILE_PATH")
    silhouettes: EnumProperty(name="Silhouettes", items=SILHOUETTE_ITEMS, default="BACKGROUND")
    masks: StringProperty(name="Masks", subtype="DIR_PATH")
    clip: StringProperty(name="Movie Clip", description="Name of the Movie Clip whose tracks follow bones")
    epochs: IntProperty(name="Epochs", default=20)
    idm: BoolProperty(name="Inverse-dynamics start", default=False)
    mediapipe: BoolProperty(name="MediaPipe Pose", default=False)
    gait: StringProperty(name="Gait", default="auto")
    facing: EnumProperty(name="Facing", items=FACING_ITEMS, default="AUTO")
    timeout: FloatProperty(name="Timeout (s)", default=3600.0, min=1.0, options={"HIDDEN", "SKIP_SAVE"})

    def _settings(self, context) -> VideoSettings:
        scene = context.scene.kirin
        panel = {"video": scene.driving_video, "first": scene.video_first, "last": scene.video_last,
                 "stride": scene.video_stride, "keypoints": scene.video_keypoints,
                 "silhouettes": scene.video_silhouettes, "masks": scene.video_masks,
                 "clip": scene.video_clip.name if scene.video_clip is not None else "",
                 "epochs": scene.video_epochs, "idm": scene.video_idm, "mediapipe": scene.video_mediapipe,
                 "gait": scene.video_gait, "facing": scene.video_facing}
        return VideoSettings(**{name: getattr(self, name) if self.properties.is_property_set(name) else value
                                for name, value in panel.items()})

    def _start(self, context) -> VideoTask | None:
        def make() -> VideoTask:
            request = read_request(context, self._settings(context))
            return VideoTask(connect(context, named_files(request.extraction)), request)

        return start_task(self, make)

    def _write(self, context, task: VideoTask, result: ExtractResult) -> Written:
        action = write_result(context, task, result)
        written = Written(report_of(task, result, action))
        error = result.report.get("reprojection_px_median")
        written.say("INFO", f"'{action.name}': {result.motion.frame_count} frames from "
                    f"{result.report.get('video_frames', '?')} video frames in "
                    f"{time.perf_counter() - task.started:.1f} s"
                    + (f" (median reprojection error {error:.1f} px)" if error is not None else ""))
        note = result.report.get("idm")
        if isinstance(note, str):
            written.say("WARNING", f"Inverse-dynamics start {note}.")
        return written


class KIRIN_OT_list_video_tracks(bpy.types.Operator):
    """List the Movie Clip's tracks to assign them to bones (a track named like a bone follows it)"""

    bl_idname = "kirin.list_video_tracks"
    bl_label = "List Tracks"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        if context.scene.kirin.video_clip is None:
            cls.poll_message_set("Choose a Movie Clip first.")
            return False
        return True

    def execute(self, context):
        settings = context.scene.kirin
        clip = settings.video_clip
        old = {item.name: item.bone for item in settings.video_tracks}
        obj = context.active_object
        arm = obj.find_armature() if obj is not None and obj.type == "MESH" else obj
        bones = {b.name for b in arm.data.bones} if arm is not None and arm.type == "ARMATURE" else set()
        settings.video_tracks.clear()
        for track in movie_clip_tracks(clip):
            item = settings.video_tracks.add()
            item.name = track.name
            item.bone = old.get(track.name) or (track.name if track.name in bones else "")
        assigned = sum(bool(item.bone) for item in settings.video_tracks)
        self.report({"INFO"}, f"'{clip.name}': {len(settings.video_tracks)} tracks, {assigned} assigned to "
                    "bones.")
        return {"FINISHED"}


CLASSES = (KIRIN_OT_motion_from_video, KIRIN_OT_list_video_tracks)
