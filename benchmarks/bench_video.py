"""Driving video → motion (issue 8) with ground truth: authored clips rendered with a known camera.

For each rig of ../shared/assets with authored clips — the Khronos Fox (Walk, Run) and CesiumMan
(its one clip) — read with the engine's glTF reader (no Blender):

1. the authored cycles walk in place, which no static-camera background subtraction can see: each
   is looped to whole cycles of at least --min-frames frames (or to --frames) and its root carried
   forward --travel body sizes over them (poses untouched); then the clip is rendered to video
   (kirin_addon/video_synth.render_motion: the skinned mesh shaded over a static textured
   background) through a known camera — a three-quarter view,
   --view-deg from the creature's front, 15° above the ground, framing the whole clip — written
   as MP4 with video_io.write_video and read back with video_io.read_video, so the reading path
   and the codec's artefacts are part of the test;
2. evidence is extracted four ways: "sil" silhouettes only (silhouettes.background_silhouettes on
   the decoded frames); "sparse" a few tracked joints (--tracks: the end effectors — paws, hands, head,
   tail tip — then others by farthest point sampling; their projected heads + --noise px Gaussian
   noise, lost while occluded);
   "sil+sparse" both; "full" every joint as a keypoint detector would give it (--noise px where
   visible, 3× the noise at confidence 0.3 where occluded); on humanoid rigs (CesiumMan) "mediapipe"
   MediaPipe Pose's landmarks on the decoded frames (kirin_addon/video/mediapipe_pose.py, in .venv-mediapipe;
   skipped with a note where it is not installed) and "sil+mediapipe" with silhouettes;
3. three methods: "idm" the rig's inverse-dynamics model alone (models/video/idm.py, trained for the rig
   on its own renders and cached under ~/.cache/kirin/idm or --cache; needs silhouettes), "opt"
   the sequence optimisation from the rig's standing pose (kirin_addon/video/pipeline.VideoPipeline.fit
   given models/video/fitter.TorchVideoFitter: `fit_motion` below), "idm+opt" the optimisation initialised
   with the IDM's prediction. The camera is given to every method (known-camera setting; with
   --estimate-camera fit_motion estimates it and the IDM assumes the camera the fit estimates,
   `idm.default_camera`);
4. metrics on the deforming joints: 2D PCK@0.1 (a joint's projection — through the method's
   camera — within 0.1 × the diagonal of the ground-truth 2D joints' bounding box), scale-
   normalised 3D MPJPE (per frame: both skeletons relative to the body root, the shallowest deforming
   joint; the prediction scaled by the least-squares factor onto the truth; mean joint distance in
   % of the rig's body size — orientation errors count), and seconds per frame of each method.
   IDM training is printed separately and amortised over every frame the rig is evaluated on
   (all clips × evidence types that use it).

Verdicts: PCK@0.1 ≥ 0.9 with silhouettes + sparse tracks (best of opt and idm+opt); ≤ 1 s per frame
(idm+opt with silhouettes + sparse tracks, training excluded; with it amortised on its own line).

Run: .venv/bin/python benchmarks/bench_video.py [--rigs fox cesiumman] [--frames N] [--epochs 20]
     [--evidence sil sparse sil+sparse full] [--methods idm opt idm+opt] [--json out.json]
     [--idm-samples 3000] [--idm-epochs 25] [--no-prior] [--cache DIR] [--estimate-camera]
The machine is shared (a training job may run): times are what this run measured.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from kirin.kirin_addon.core.motion import Motion, joint_positions
from kirin.kirin_addon.io.gltf import load_gltf
from kirin.kirin_addon.video.evidence import Evidence2D, combine
from kirin.kirin_addon.video.fit_config import VideoFitConfig
from kirin.kirin_addon.video.pipeline import VideoPipeline
from kirin.kirin_addon.video.silhouettes import background_silhouettes
from kirin.kirin_addon.video.synth import Framing, SyntheticVideo, frame_camera, render_motion
from kirin.kirin_addon.video.tracks import tracks_evidence
from kirin.kirin_addon.video.video_io import read_video, write_video
from kirin.models.video.fitter import TorchVideoFitter
from kirin.models.video.idm import IDM, IDMConfig, default_camera, default_frame
from kirin.models.video.idm_train import IDMTrainConfig, load_or_train_idm

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT.parent / "shared" / "assets"
RIGS = {  # name: (file under assets, clips)
    "fox": ("khronos_fox/Fox.glb", ("Walk", "Run")),
    "cesiumman": ("khronos_cesiumman/CesiumMan.glb", ("animation_0",)),
}
EVIDENCE = ("sil", "sparse", "sil+sparse", "full", "mediapipe", "sil+mediapipe")
DEFAULT_EVIDENCE = ("sil", "sparse", "sil+sparse", "full", "mediapipe")
METHODS = ("idm", "opt", "idm+opt")
fit_motion = VideoPipeline(TorchVideoFitter()).fit
PCK_GOAL = 0.9
SECONDS_GOAL = 1.0


@dataclass
class Row:
    rig: str
    clip: str
    evidence: str
    method: str
    frames: int
    pck: float
    mpjpe: float  # % of body size
    seconds_per_frame: float
    reprojection_px: float | None = None
    notes: dict = field(default_factory=dict)


# ----------------------------------------------------------------------------- metrics
def body_joints(rig) -> np.ndarray:
    """The deforming joints (all joints when none is marked)."""
    deform = np.asarray(rig.deform, bool)
    return np.flatnonzero(deform) if deform.any() else np.arange(rig.joint_count)


def pck(predicted_2d: np.ndarray, truth_2d: np.ndarray, threshold: float = 0.1) -> float:
    """Share of joints within threshold × the truth's per-frame 2D bounding-box diagonal."""
    diagonal = np.linalg.norm(truth_2d.max(axis=1) - truth_2d.min(axis=1), axis=-1)  # (T,)
    error = np.linalg.norm(predicted_2d - truth_2d, axis=-1)
    return float(np.mean(error <= threshold * diagonal[:, None]))


def normalised_mpjpe(predicted: np.ndarray, truth: np.ndarray, root: int, body_size: float) -> float:
    """Mean joint error (% of body size) after root alignment and a per-frame least-squares scale."""
    p = predicted - predicted[:, root:root + 1]
    g = truth - truth[:, root:root + 1]
    scale = np.sum(p * g, axis=(1, 2)) / np.maximum(np.sum(p * p, axis=(1, 2)), 1e-12)
    error = np.linalg.norm(scale[:, None, None] * p - g, axis=-1)
    return float(100.0 * error.mean() / body_size)


def evaluate(rig, motion: Motion, camera, video: SyntheticVideo) -> tuple[float, float]:
    joints = body_joints(rig)
    predicted = joint_positions(rig, motion)[:, joints]
    truth = video.joints[:, joints]
    projected = camera.project(predicted)
    root = int(np.argmin(rig.depth[joints]))  # the body root: the shallowest deforming joint
    return pck(projected, video.keypoints[:, joints]), normalised_mpjpe(predicted, truth, root, rig.body_size)


# ----------------------------------------------------------------------------- evidence
def tracked_joints(rig, count: int) -> np.ndarray:
    """`count` deforming joints an animator would track: the end effectors (paws, hands, head, tail
    tip), then joints spread over the rest by farthest point sampling."""
    candidates = body_joints(rig)
    heads = rig.heads[candidates]
    leaves = [k for k, j in enumerate(candidates) if j in set(np.asarray(rig.end_effectors).tolist())]
    chosen: list[int] = []
    distance = np.full(len(candidates), np.inf)
    pool = leaves if leaves else list(range(len(candidates)))
    while len(chosen) < min(count, len(candidates)):
        if not set(pool) - set(chosen):
            pool = list(range(len(candidates)))
        options = [k for k in pool if k not in chosen]
        if chosen:
            k = options[int(np.argmax(distance[options]))]
        else:  # start from the joint furthest from the body's centre
            k = options[int(np.argmax(np.linalg.norm(heads[options] - heads.mean(axis=0), axis=1)))]
        chosen.append(k)
        distance = np.minimum(distance, np.linalg.norm(heads - heads[k], axis=1))
    return np.sort(candidates[chosen])


def build_evidence(kind: str, rig, video: SyntheticVideo, silhouettes: np.ndarray, tracked: np.ndarray,
                   noise: float, rng: np.random.Generator, detected: tuple | None = None) -> Evidence2D:
    frames, joints = video.keypoints.shape[:2]
    tracks = keypoints = None
    if "mediapipe" in kind:
        keypoints = detected
    if "sparse" in kind:
        found = {}
        for j in tracked:
            points = video.keypoints[:, j] + rng.normal(0.0, noise, (frames, 2))
            found[int(j)] = np.where(video.visibility[:, j, None], points, np.nan)
        tracks = tracks_evidence(found, frames, joints)
    if kind == "full":
        visible = video.visibility[..., None]
        spread = np.where(visible, noise, 3 * noise)
        points = video.keypoints + rng.normal(0.0, 1.0, video.keypoints.shape) * spread
        keypoints = (points, np.where(video.visibility, 1.0, 0.3))
    use_silhouettes = silhouettes if kind.startswith("sil") else None
    return combine(video.size, video.fps, joints, keypoints=keypoints, tracks=tracks,
                   silhouettes=use_silhouettes)


def mediapipe_evidence(rig, frames: np.ndarray, video: SyntheticVideo, info: dict) -> tuple | None:
    """MediaPipe Pose's keypoints of a humanoid rig on the decoded frames, their own PCK@0.1 against
    the truth in `info`; None (with a note) for other rigs or without MediaPipe."""
    from kirin.kirin_addon.video.mediapipe_pose import (
        MediaPipeError,
        find_mediapipe_python,
        mediapipe_keypoints,
    )

    if find_mediapipe_python() is None:
        info["mediapipe"] = "not installed (.venv-mediapipe): skipped"
        return None
    try:
        points, confidence, report = mediapipe_keypoints(frames, rig, video.size)
    except MediaPipeError as exc:
        info["mediapipe"] = f"skipped: {exc}"
        return None
    mapped = sorted(set(report["bones"].values()), key=rig.names.index)
    joints = [rig.names.index(n) for n in mapped]
    found = confidence[:, joints] > 0
    truth = video.keypoints[:, joints]
    diagonal = np.linalg.norm(video.keypoints.max(1) - video.keypoints.min(1), axis=-1)[:, None]
    error = np.linalg.norm(points[:, joints] - truth, axis=-1)
    within = error <= 0.1 * np.broadcast_to(diagonal, error.shape)
    report["keypoint_pck"] = float(np.mean(within[found]))
    report["keypoint_share"] = float(found.mean())
    info["mediapipe"] = report
    print(f"  MediaPipe: a person in {report['frames_detected']} of {report['frames']} frames "
          f"({report['frames_flipped']} upside down dropped), {len(joints)} bones, keypoints PCK@0.1 "
          f"{report['keypoint_pck']:.3f} where found ({report['keypoint_share']:.0%} of them), "
          f"{report['seconds_per_frame']:.3f} s/frame", flush=True)
    return points, confidence


# ----------------------------------------------------------------------------- one clip
def locomote(rig, mesh, motion: Motion, travel: float, frames: int) -> Motion:
    """The clip played (looped as needed) for `frames` frames, its root carried forward `travel`
    body sizes over them (the authored cycles walk in place, and background subtraction needs a
    subject that moves across the picture)."""
    repeats = max(1, math.ceil(frames / motion.frame_count))
    frame = default_frame(rig, mesh)
    forward = frame.rotation.T @ np.array([0.0, -1.0, 0.0])
    share = np.arange(frames) / max(frames - 1, 1) - 0.5
    root = np.tile(motion.root_positions, (repeats, 1))[:frames]
    root = root + share[:, None] * forward * travel * rig.body_size
    moved = None if motion.translations is None else np.tile(motion.translations, (repeats, 1, 1))[:frames]
    return Motion(motion.fps, root, np.tile(motion.rotations, (repeats, 1, 1))[:frames], moved)


def three_quarter_camera(rig, mesh, motion: Motion, size: tuple[int, int], view_deg: float):
    """The known camera: --view-deg from the creature's front (towards its left), 15° up, framing
    every vertex of the clip."""
    from kirin.kirin_addon.video.synth import skinned_vertices

    frame = default_frame(rig, mesh)
    a, e = np.radians(view_deg), np.radians(15.0)
    direction_c = np.array([np.sin(a) * np.cos(e), -np.cos(a) * np.cos(e), np.sin(e)])
    direction = frame.rotation.T @ direction_c
    up = frame.rotation.T @ np.array([0.0, 0.0, 1.0])
    vertices, _ = skinned_vertices(rig, mesh, motion)
    framing = Framing(fov_deg=40.0, fill=0.92)
    return frame_camera(vertices[:, ::3], size, up=up, direction=direction, framing=framing)


def run_clip(name: str, clip: str, asset, motion: Motion, idm: IDM | None, args,
             rng: np.random.Generator) -> tuple[list[Row], dict]:
    rig, mesh = asset.rig, asset.mesh
    camera = three_quarter_camera(rig, mesh, motion, args.size, args.view_deg)
    started = time.perf_counter()
    video = render_motion(rig, mesh, motion, camera, args.size, background="textured", seed=args.seed)
    render_seconds = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as folder:
        path = write_video(Path(folder) / f"{name}_{clip}.mp4", video.frames, motion.fps)
        decoded = read_video(path)
    if decoded.frame_count != motion.frame_count or decoded.size != video.size:
        raise RuntimeError(f"The MP4 read back has {decoded.frame_count} frames of {decoded.size}, "
                           f"rendered {motion.frame_count} of {video.size}")
    codec_error = float(np.abs(decoded.frames.astype(float) - video.frames).mean())
    started = time.perf_counter()
    silhouettes = background_silhouettes(decoded.frames)
    silhouette_seconds = time.perf_counter() - started
    small = silhouettes >= 0.5
    rows_at = ((np.arange(small.shape[1]) + 0.5) * video.masks.shape[1] / small.shape[1]).astype(int)
    cols_at = ((np.arange(small.shape[2]) + 0.5) * video.masks.shape[2] / small.shape[2]).astype(int)
    truth = video.masks[:, rows_at][:, :, cols_at]
    iou = float((small & truth).sum() / max((small | truth).sum(), 1))
    tracked = tracked_joints(rig, args.tracks)
    info = {"render_seconds_per_frame": render_seconds / motion.frame_count, "codec_mean_abs": codec_error,
            "silhouette_seconds_per_frame": silhouette_seconds / motion.frame_count, "silhouette_iou": iou,
            "tracked": [rig.names[j] for j in tracked]}
    given_camera = None if args.estimate_camera else camera
    # Without the camera the IDM assumes the one the fit would estimate (its projections still land
    # on the image: it places the root on the ray through the crop).
    idm_camera = camera
    if given_camera is None and idm is not None:
        idm_camera = default_camera(rig, idm.frame, args.size)
    config = VideoFitConfig(epochs=args.epochs)
    detected = None
    if any("mediapipe" in kind for kind in args.evidence):
        detected = mediapipe_evidence(rig, decoded.frames, video, info)
    rows: list[Row] = []
    for kind in args.evidence:
        if "mediapipe" in kind and detected is None:
            continue
        evidence = build_evidence(kind, rig, video, silhouettes, tracked, args.noise, rng, detected)
        initial = None
        idm_seconds = 0.0
        if idm is not None and evidence.silhouettes is not None and {"idm", "idm+opt"} & set(args.methods):
            started = time.perf_counter()
            initial = idm.predict(evidence.silhouettes, camera=idm_camera, image_size=evidence.image_size,
                                  fps=evidence.fps)
            idm_seconds = time.perf_counter() - started
        for method in args.methods:
            if method in ("idm", "idm+opt") and initial is None:
                continue  # the IDM reads silhouettes
            if method == "idm":
                result_motion, result_camera, seconds, extra = initial, idm_camera, idm_seconds, {}
            else:
                started = time.perf_counter()
                start = initial if method == "idm+opt" else None
                settings = config if start is None else replace(config, init_yaws=args.idm_yaws)
                result = fit_motion(rig, evidence, mesh, settings, init=start, camera=given_camera)
                seconds = time.perf_counter() - started + (idm_seconds if method == "idm+opt" else 0.0)
                result_motion, result_camera = result.motion, result.camera
                extra = {"reprojection_px": result.report.get("reprojection_px"),
                         "heading_deg": result.report.get("heading_deg"), "scale": float(result.scale)}
            score, error = evaluate(rig, result_motion, result_camera, video)
            rows.append(Row(name, clip, kind, method, motion.frame_count, score, error,
                            seconds / motion.frame_count, extra.pop("reprojection_px", None), extra))
            print(f"  {name:10s} {clip:12s} {kind:10s} {method:8s} PCK@0.1 {score:5.3f}  "
                  f"MPJPE {error:6.2f} %  {seconds / motion.frame_count:6.3f} s/frame", flush=True)
    return rows, info


# ----------------------------------------------------------------------------- tables
def table(rows: list[Row], idm_train: dict[str, float], frames_per_rig: dict[str, int]) -> str:
    lines = [f"{'rig':10s} {'clip':12s} {'evidence':10s} {'method':8s} {'frames':>6s} {'PCK@0.1':>8s} "
             f"{'MPJPE %':>8s} {'s/frame':>8s} {'+train':>8s}"]
    for r in rows:
        amortised = r.seconds_per_frame
        if r.method != "opt" and r.rig in idm_train:
            amortised += idm_train[r.rig] / max(frames_per_rig[r.rig], 1)
        lines.append(f"{r.rig:10s} {r.clip:12s} {r.evidence:10s} {r.method:8s} {r.frames:6d} {r.pck:8.3f} "
                     f"{r.mpjpe:8.2f} {r.seconds_per_frame:8.3f} {amortised:8.3f}")
    return "\n".join(lines)


def summary(rows: list[Row]) -> str:
    """Per evidence × method, frame-weighted over every clip."""
    lines = [f"{'evidence':10s} {'method':8s} {'frames':>6s} {'PCK@0.1':>8s} {'MPJPE %':>8s} {'s/frame':>8s}"]
    for kind in EVIDENCE:
        for method in METHODS:
            chosen = [r for r in rows if r.evidence == kind and r.method == method]
            if not chosen:
                continue
            weights = np.array([r.frames for r in chosen], float)
            pck_, mpjpe, seconds = (float(np.average([getattr(r, key) for r in chosen], weights=weights))
                                    for key in ("pck", "mpjpe", "seconds_per_frame"))
            lines.append(f"{kind:10s} {method:8s} {int(weights.sum()):6d} {pck_:8.3f} {mpjpe:8.2f} "
                         f"{seconds:8.3f}")
    return "\n".join(lines)


def verdicts(rows: list[Row], idm_train: dict[str, float], frames_per_rig: dict[str, int]) -> dict:
    out: dict = {}
    target = [r for r in rows if r.evidence == "sil+sparse" and r.method in ("opt", "idm+opt")]
    if target:
        best = {}
        for method in ("opt", "idm+opt"):
            chosen = [r for r in target if r.method == method]
            if chosen:
                best[method] = float(np.average([r.pck for r in chosen], weights=[r.frames for r in chosen]))
        method = max(best, key=best.get)
        out["pck"] = {"value": best[method], "method": method, "goal": PCK_GOAL,
                      "pass": best[method] >= PCK_GOAL}
    timed = [r for r in rows if r.evidence == "sil+sparse" and r.method == "idm+opt"] or \
        [r for r in rows if r.evidence == "sil+sparse" and r.method == "opt"]
    if timed:
        frames = sum(r.frames for r in timed)
        seconds = sum(r.seconds_per_frame * r.frames for r in timed) / frames
        amortised = seconds
        if timed[0].method == "idm+opt":
            amortised += sum(idm_train.values()) / max(sum(frames_per_rig.values()), 1)
        out["seconds"] = {"value": seconds, "with_training": amortised, "method": timed[0].method,
                          "goal": SECONDS_GOAL, "pass": seconds <= SECONDS_GOAL}
    return out


# ----------------------------------------------------------------------------- main
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rigs", nargs="+", default=list(RIGS), choices=list(RIGS))
    parser.add_argument("--frames", type=int, default=0,
                        help="frames per clip (0: whole loops of the clip, at least --min-frames)")
    parser.add_argument("--epochs", type=int, default=VideoFitConfig().epochs, help="fit_motion epochs")
    parser.add_argument("--evidence", nargs="+", default=list(DEFAULT_EVIDENCE), choices=EVIDENCE)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--size", type=int, nargs=2, default=(640, 360), metavar=("W", "H"))
    parser.add_argument("--view-deg", type=float, default=70.0,
                        help="camera azimuth from the creature's front (degrees)")
    parser.add_argument("--travel", type=float, default=3.0,
                        help="body sizes the creature walks forward over a clip (the cycles are in place)")
    parser.add_argument("--min-frames", type=int, default=40, help="clips shorter than this are looped")
    parser.add_argument("--tracks", type=int, default=6, help="joints tracked in the sparse evidence")
    parser.add_argument("--noise", type=float, default=1.5, help="px of Gaussian noise on tracks/keypoints")
    parser.add_argument("--idm-samples", type=int, default=IDMTrainConfig().samples)
    parser.add_argument("--idm-epochs", type=int, default=IDMTrainConfig().epochs)
    parser.add_argument("--idm-time", type=float, default=IDMTrainConfig().time_limit,
                        help="IDM training time limit, seconds")
    parser.add_argument("--no-prior", action="store_true", help="train the IDM without the pose prior")
    parser.add_argument("--cache", help="IDM cache folder (default ~/.cache/kirin/idm)")
    parser.add_argument("--idm-yaws", type=int, default=VideoFitConfig().init_yaws,
                        help="headings fit_motion tries from the IDM's start (1: keep the IDM's)")
    parser.add_argument("--estimate-camera", action="store_true", help="fit_motion estimates the camera")
    parser.add_argument("--assets", default=str(ASSETS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write every row, the IDM reports and the verdicts here")
    args = parser.parse_args(argv)
    args.size = (int(args.size[0]), int(args.size[1]))
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    torch.set_num_threads(1)
    rng = np.random.default_rng(args.seed)
    rows: list[Row] = []
    clips_info: dict = {}
    idm_reports: dict = {}
    idm_train: dict[str, float] = {}
    frames_per_rig: dict[str, int] = {}
    for name in args.rigs:
        relative, clip_names = RIGS[name]
        path = Path(args.assets) / relative
        if not path.exists():
            print(f"{name}: {path} is missing, skipped")
            continue
        asset = load_gltf(path)
        idm = None
        if {"idm", "idm+opt"} & set(args.methods):
            config = IDMTrainConfig(samples=args.idm_samples, epochs=args.idm_epochs,
                                    time_limit=args.idm_time, prior=not args.no_prior, seed=args.seed)
            started = time.perf_counter()
            idm = load_or_train_idm(asset.rig, asset.mesh, config, IDMConfig(), cache_dir=args.cache,
                                    progress=None)
            loaded_seconds = time.perf_counter() - started
            report = dict(idm.card.get("report", {}))
            report["load_or_train_seconds"] = loaded_seconds
            idm_reports[name] = report
            idm_train[name] = float(report.get("seconds", loaded_seconds))
            cached = " from the cache" if loaded_seconds < 0.5 * idm_train[name] else ""
            held = {k: report.get(f"held_out_{k}_error", float("nan"))
                    for k in ("position", "rest", "oriented_rest")}
            print(f"{name}: IDM {report.get('samples')} renders, {report.get('epochs')} epochs, trained in "
                  f"{idm_train[name]:.1f} s (poses {report.get('pose_seconds')} s, renders "
                  f"{report.get('render_seconds')} s, network {report.get('train_seconds')} s; this run "
                  f"{loaded_seconds:.1f} s{cached}); held-out joint error {held['position']:.3f} body sizes "
                  f"(rest pose from the front {held['rest']:.3f}, with the true orientation "
                  f"{held['oriented_rest']:.3f})", flush=True)
        for clip in clip_names:
            authored = asset.clips[clip]
            frames = args.frames or authored.frame_count * math.ceil(args.min_frames / authored.frame_count)
            motion = locomote(asset.rig, asset.mesh, authored, args.travel, frames)
            clip_rows, info = run_clip(name, clip, asset, motion, idm, args, rng)
            rows += clip_rows
            clips_info[f"{name}/{clip}"] = info
            uses = sum(1 for kind in args.evidence if kind.startswith("sil"))
            frames_per_rig[name] = frames_per_rig.get(name, 0) + motion.frame_count * max(uses, 1)
    print()
    print("Per clip (s/frame: the method; +train: with the rig's IDM training amortised over its frames)")
    print(table(rows, idm_train, frames_per_rig))
    print()
    print("Summary over clips (frame-weighted)")
    print(summary(rows))
    for name, seconds in idm_train.items():
        frames = max(frames_per_rig.get(name, 0), 1)
        print(f"IDM training {name}: {seconds:.1f} s, amortised {seconds / frames:.3f} s/frame over {frames} "
              "evaluated frames")
    result = verdicts(rows, idm_train, frames_per_rig)
    print()
    if "pck" in result:
        v = result["pck"]
        print(f"VERDICT PCK@0.1 with silhouettes + sparse tracks: {v['value']:.3f} ({v['method']}) "
              f"{'PASS' if v['pass'] else 'FAIL'} (goal ≥ {PCK_GOAL})")
    if "seconds" in result:
        v = result["seconds"]
        print(f"VERDICT time per frame ({v['method']}, silhouettes + sparse tracks): {v['value']:.3f} s "
              f"{'PASS' if v['pass'] else 'FAIL'} (goal ≤ {SECONDS_GOAL} s; with IDM training amortised "
              f"{v['with_training']:.3f} s)")
    out = {"rows": [r.__dict__ for r in rows], "clips": clips_info, "idm": idm_reports, "verdicts": result,
           "args": {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(args).items()}}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=_plain))
    return out


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return str(value)


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
