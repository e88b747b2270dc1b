"""Driving video → motion on the user's own rig (issue 8, part 3): the pipeline, given its optimiser.

`VideoPipeline(fitter, idm)` runs an Extract Motion From Video job: the clip's 2D evidence
(gather.py: a keypoints file, MediaPipe Pose, Movie Clip tracks, silhouettes), the motion the fit
starts from (initial_motion.py: the rig's inverse-dynamics model, else the rig's gait at the stride
the silhouettes show, else the rig's standing pose, else the rest pose), then the fit
(`VideoPipeline.fit`): plan → the fitter's optimisation → map back. The fitter is the torch sequence
optimisation (models/video/fitter.py, its unknowns, loss and schedule described there), given as an
object with the small protocol of fit_protocol.py; the inverse-dynamics model (models/video/idm.py)
is given as its loader.

The fit's plan, in the canonical frame of the rig (core/canonical.py: +Z up, −Y forward, body size 1):

* the evidence checked (fit_evidence.py) and the body the fit moves (fit_body.py): foot controls and
  pole targets outside the body carried by the joints they follow, the legs' planted joints standing
  on the ground (generate/rig_roles.py), a capsule per deforming bone;
* the starts: the given motions (an inverse-dynamics prediction, a gait at the phases of its cycle)
  as world deltas; without one, the rig's standing pose (T- and A-pose arms hanging: an arm held out
  at rest points at a side camera, and a fit from there can swing it forward instead of down), else
  the rest pose;
* the camera, when none is given (fit_start.estimate_camera): focal `config.focal` or max(W, H) pixels,
  principal point at the image centre, level (no roll). Where the evidence has a horizon
  (kirin_addon/video/ground.py) and silhouettes, the tilt puts the horizon on its row and the height
  puts the floor on the row the silhouettes stand on; otherwise `camera_elevation_deg` of downward
  tilt. It looks at the rig's rest root from its side (which side does not matter: the heading search
  turns the body), at the distance where the median 2D extent of the evidence matches the rig's extent;
* global translation, estimated separately and then combined (fit_start.initial_root_path): per frame
  the confidence-weighted 2D centroid of the keypoints (the silhouette's where a frame has fewer than
  three), averaged over three frames, back-projected at the depth at which the evidence's 2D spread
  matches the spread of the same joints of the rig in body lengths (median over the clip), then slid
  along its ray to the rest height above the ground plane where the view is steep enough. This path
  initialises the root of every heading hypothesis; the rigid stage and the full fit refine it;
* the rigid stage (fit_rigid.py): for each of `init_yaws` headings and each start, on `rigid_frames`
  frames, a per-frame root rotation and translation are fitted and the hypothesis with the lowest data
  loss wins (a creature seen from the side fits its mirror image badly but gradient descent does not
  turn a body around; the user's `facing` bars the headings that look the other way); the winner is
  refined on all frames. Then the full fit.

Mapped back (fit_finish.py): with an estimated camera the world is turned about the vertical and
shifted along the ground, camera included (the images do not change), so that the motion starts at
the rig's rest position facing its own forward. `VideoFitResult.motion` is on the user's rig in
armature space (rotations through the inverse-bind correction of `motion_from_world_deltas`, fps =
evidence.fps) and `camera` in the same armature space, such that
`camera.project(joint_positions(rig, motion))` reproduces the fit — for a given camera and a scale
k ≠ 1 that is the given camera moved towards the rig's canonical origin by 1/k (the same images: the
motion is on the user's rig, not on one k times bigger); `scale` = k.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..core.camera import PinholeCamera
from ..core.canonical import CanonicalRig, canonical_rig, detect_canonical_frame
from ..core.motion import Motion, joint_positions
from ..core.rig import Rig
from ..core.rig_reduction import RigReduction, reduce_rig
from ..core.skinning import SkinnedMesh
from .evidence import Evidence2D
from .fit_body import fit_body
from .fit_config import VideoFitConfig, VideoFitError, VideoFitResult, report_progress
from .fit_evidence import check_evidence
from .fit_finish import align_start, on_user_rig, reprojection_px, with_followers
from .fit_protocol import FitStart, VideoFitter
from .fit_rigid import heading_paths, heading_yaws, rigid_stage
from .fit_start import estimate_camera, start_deltas
from .gather import EvidenceSources, Report, VideoClip, gather_evidence
from .initial_motion import IDMLoader, fit_config, gait_starts_for, idm_start, standing_start
from .request import GAIT_NONE, ExtractRequest


@dataclass
class VideoRun:
    """What a job's pipeline gives back: the evidence it fitted to (and the keypoints among it), the fit,
    notes on what was used and why, and the seconds each step took."""

    evidence: Evidence2D
    keypoints: tuple[np.ndarray, np.ndarray] | None
    fit: VideoFitResult
    notes: dict[str, Any]
    timings: dict[str, float]


class VideoPipeline:
    """Extract Motion From Video, given its optimiser (`fitter`) and, where the backend has one, the
    loader of the rig's inverse-dynamics model (`idm`: load(rig, mesh, progress=...) → a model with
    predict(silhouettes, image_size=, fps=) → Motion)."""

    def __init__(self, fitter: VideoFitter, idm: IDMLoader | None = None):
        self.fitter = fitter
        self.idm = idm

    def run(self, rig: Rig, mesh: SkinnedMesh | None, request: ExtractRequest, clip: VideoClip,
            sources: EvidenceSources, report: Report) -> VideoRun:
        """The job on a read clip: the evidence (the clip's pixels are let go), the start (the
        inverse-dynamics model, else the gait), the fit."""
        report(0.05, "gathering the 2D evidence")
        t = time.perf_counter()
        timings: dict[str, float] = {}
        notes: dict[str, Any] = {}
        evidence, keypoints = gather_evidence(rig, clip, sources, report, notes)
        timings["evidence"] = time.perf_counter() - t

        init = None
        if request.idm:
            init = idm_start(self.idm, rig, mesh, evidence, report, notes)
        starts = None
        if init is None and request.gait.strip().casefold() != GAIT_NONE:
            starts = gait_starts_for(rig, mesh, request.gait, evidence, notes)
        report(0.15, "fitting the motion")
        t = time.perf_counter()

        def progress(fraction: float, *_: Any) -> None:  # what report raises (a cancel) stops the fit
            report(0.15 + 0.8 * min(max(float(fraction), 0.0), 1.0), "fitting the motion")

        config = fit_config(request, gait=starts is not None)
        if starts is not None:  # the gait holds the legs where the evidence is silent
            init = starts.motions
        fit = self.fit(rig, evidence, mesh=mesh, config=config, init=init, progress=progress)
        timings["fit"] = time.perf_counter() - t
        return VideoRun(evidence, keypoints, fit, notes, timings)

    def fit(self, rig: Rig, evidence, mesh: SkinnedMesh | None = None, config: VideoFitConfig | None = None,
            init: Motion | Sequence[Motion] | None = None, camera: PinholeCamera | None = None,
            progress: Callable[[float], None] | None = None) -> VideoFitResult:
        """Fit a motion of `rig` to 2D evidence of a video (see the module docstring).

        `evidence`: an `Evidence2D` (image_size (W,H), fps, points (T,J,2) px with NaN where unknown,
        confidence (T,J), silhouettes (T,h,w) or None), one keypoint column per rig joint (its head).
        `init`: a starting motion on the rig (same frame count; e.g. the inverse-dynamics model's
        prediction), or several (a gait at the phases of its cycle: the rigid stage keeps the one, and
        the heading, that explain the evidence best); the rig's standing pose otherwise (its rest where
        the controllers cannot stand it). `camera`: the video's camera in armature space; estimated when
        None. `progress(fraction)` is called as the fit goes; an
        exception it raises stops the fit and propagates."""
        started = time.perf_counter()
        config = config or VideoFitConfig()
        rig.validate()
        ev = check_evidence(evidence, rig, config)
        frames = ev.points.shape[0]
        starts = _checked_starts(rig, init, frames)
        frame = detect_canonical_frame(rig, up=config.up_axis, forward=config.forward_axis,
                                       mesh_vertices=None if mesh is None else mesh.vertices)
        canon = canonical_rig(rig, frame)
        # A rig of more than 64 bones: the fit moves its bones that matter, the feet and every joint
        # the video shows among them; the rest ride on them.
        seen = np.flatnonzero((ev.weights > 0).any(axis=0))
        reduction = reduce_rig(rig, keep=np.concatenate([canon.feet, seen]))
        if reduction.reduced:
            return self._fit_carried(reduction, evidence, mesh, replace(config, up_axis=frame.up_axis,
                                     forward_axis=frame.forward_axis), starts, camera, progress)
        body = fit_body(canon, mesh, config.radius_share)
        model = self.fitter.body(body)
        report_progress(progress, 0.0)

        # Initial poses (canonical world deltas, (P,T,J,3,3): one per start) and camera.
        deltas0, start_pose = _start_poses(canon, rig, mesh, starts, ev.fps, frames)
        estimated = camera is None
        camera_c, grounded = estimate_camera(ev, body, model.floor, config) if estimated else \
            (camera.transformed(frame.matrix()), False)
        config = config if grounded else replace(config, settled=0.0)  # only a ground the footage shows
        fit_scale = (not estimated) if config.fit_scale is None else bool(config.fit_scale)
        fit_scale = fit_scale and body.feet.size > 0
        problem = model.problem(ev, camera_c, config, deltas0)
        # The init's root path is in the given camera's world: it starts the first heading hypothesis.
        init_path = frame.to_canonical_points(starts[0].root_positions) if starts and not estimated else None
        paths = heading_paths(model, body, ev, deltas0[0], init_path, camera_c, heading_yaws(config))
        chosen, turns6, root0, yaw = rigid_stage(problem, deltas0, paths, body.trunk, camera_c, config,
                                                 progress)
        fitted = problem.fit(FitStart(chosen, turns6, root0, fit_scale), progress)

        # Back to the user's rig.
        deltas_c, root_c = fitted.deltas, fitted.root
        camera_fit = PinholeCamera(camera_c.focal, camera_c.center, camera_c.rotation,
                                   camera_c.translation / fitted.scale)
        if estimated and config.align_start:
            deltas_c, root_c, camera_fit = align_start(body, deltas_c, root_c, camera_fit)
        motion, camera_arm = on_user_rig(rig, frame, deltas_c, root_c, camera_fit, ev.fps)
        if body.tops:  # foot controls and pole targets go where the legs carried them
            motion = with_followers(rig, frame, model, body.tops, deltas_c, root_c, motion)
        reprojection = reprojection_px(camera_arm.project(joint_positions(rig, motion)), ev)
        seconds = time.perf_counter() - started
        report = {
            "frames": frames,
            "joints": rig.joint_count,
            "joints_with_evidence": int(np.count_nonzero((ev.weights > 0).any(0))),
            "silhouettes": ev.masks is not None,
            "camera_estimated": estimated,
            "camera_from_ground": grounded,
            "scale_fitted": fit_scale,
            "heading_deg": float(np.degrees(yaw)),
            "starts": len(deltas0),
            "start_pose": start_pose,
            "start_chosen": chosen,
            "steps": config.epochs * config.steps_per_epoch,
            "rigid_steps": config.rigid_steps,
            "losses": fitted.losses,
            "reprojection_px": float(np.nanmean(reprojection)) if np.isfinite(reprojection).any() else None,
            "seconds_per_frame": seconds / frames,
        }
        report_progress(progress, 1.0)
        return VideoFitResult(motion, camera_arm, fitted.scale, reprojection, seconds, report)

    def _fit_carried(self, reduction: RigReduction, evidence: Evidence2D, mesh: SkinnedMesh | None,
                     config: VideoFitConfig, starts: list[Motion], camera: PinholeCamera | None,
                     progress: Callable[[float], None] | None) -> VideoFitResult:
        """The fit of a big rig's bones that matter (`config` fixes the whole rig's axes), on the
        whole rig: the left-out bones (fingers, face, twist bones) ride on their anchors from the
        standing pose; the camera and scale are the fit's."""
        started = time.perf_counter()
        keep = reduction.keep
        small_mesh = None if mesh is None else reduction.reduce_mesh(mesh)
        small_starts = [reduction.reduce_motion(start) for start in starts] or None
        fit = self.fit(reduction.rig, _reduced_evidence(evidence, keep), mesh=small_mesh, config=config,
                       init=small_starts, camera=camera, progress=progress)
        seconds = time.perf_counter() - started
        frames = fit.motion.frame_count
        report = {**fit.report, "joints": reduction.full.joint_count, "joints_fitted": int(keep.size),
                  "seconds_per_frame": seconds / max(frames, 1)}
        return VideoFitResult(reduction.expand_motion(fit.motion), fit.camera, fit.scale, fit.reprojection_px,
                              seconds, report)


def _start_poses(canon: CanonicalRig, rig: Rig, mesh: SkinnedMesh | None, starts: list[Motion], fps: float,
                 frames: int) -> tuple[np.ndarray, str]:
    """(P,T,J,3,3) canonical world deltas of the fit's starts: the given motions, else the rig's standing
    pose, else its rest; and which of the three ("given", "standing", "rest")."""
    standing = None if starts else standing_start(canon, rig, mesh, fps)
    kind = "given" if starts else "standing" if standing is not None else "rest"
    return start_deltas(rig, canon.frame, starts, frames, standing), kind


def _reduced_evidence(evidence: Evidence2D, keep: np.ndarray) -> Evidence2D:
    """The evidence of the kept joints only."""
    return replace(evidence, points=np.asarray(evidence.points)[:, keep],
                   confidence=np.asarray(evidence.confidence)[:, keep])


def _checked_starts(rig: Rig, init: Motion | Sequence[Motion] | None, frames: int) -> list[Motion]:
    """The starting motions given, each checked against the rig and the evidence's frame count."""
    starts = [] if init is None else [init] if isinstance(init, Motion) else list(init)
    for start in starts:
        start.check_rig(rig)
        if start.frame_count != frames:
            raise VideoFitError(f"The initial motion has {start.frame_count} frames but the video evidence "
                                f"has {frames}.")
    return starts
