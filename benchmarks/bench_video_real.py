"""Motion From Video on real footage (issue 19): what a user gets from a real video, the way the panel
makes it, with a filmstrip and an overlay sheet per case (docs/video_real/: derived from third-party
footage, so not committed). docs/video_real.md has the results.

Cases (../shared/assets), each with what an animator would pick in the panel:
- Muybridge's galloping bison (`video_muybridge_buffalo`: a fixed side camera, the film's plates one
  after another) onto the Quaternius Bull: silhouettes "Each frame alone", gait "gallop", facing right.
- The imageio cockatoo (`video_cockatoo`: hand-held close-ups of a cockatoo's head) onto the
  Quaternius Birb: background subtraction, gait "auto", facing toward the camera.

Each runs through the Motion From Video operator (no keypoints, camera estimated), then:
- the fit (kirin_addon/eval/footage.py): the share of frames whose body stays upright (pitch and roll
  within 25° of the rest pose's, up axis up), the largest tilt, the root's largest step between frames
  and how many steps exceed 0.2 body sizes;
- its footfall frequency on the deformed mesh's soles (kirin_addon/eval/gait.py, as issue 17 measures
  generated motion), against the video's stride frequency read from its own silhouettes;
- PCK@0.1 on the keypoints hand-labelled in data/video_real/ (video_real_scoring.py: the rig's
  landmarks through the camera the fit stored on its action), from silhouettes alone and, in two more
  extractions, with half the labelled frames given as keypoints and the other half scored;
- the IoU of the fit's deformed mesh against the video's masks; seconds per frame.

Issue 19's bounds: upright ≥ 95 % of frames, no root jump, footfall frequency within 15 % of the
video's, PCK@0.1 ≥ 0.6 from silhouettes and ≥ 0.85 with keypoints, ≤ 1 s per frame.

Run: .venv/bin/python benchmarks/bench_video_real.py [--cases buffalo cockatoo] [--stop N] [--json out.json]
     [--gait none] [--facing AUTO] [--no-folds] [--no-filmstrips]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from kirin.kirin_addon.io.scratch import private_blender_resources

private_blender_resources("kirin-bench-")

import bpy  # noqa: E402
import numpy as np  # noqa: E402

from kirin.benchmarks import motion_real_filmstrip as filmstrips  # noqa: E402
from kirin.benchmarks import motion_real_support as support  # noqa: E402
from kirin.benchmarks import video_real_scoring as scoring  # noqa: E402
from kirin.benchmarks.bench_motion_real import gait_input  # noqa: E402
from kirin.kirin_addon.core.canonical import canonical_rig  # noqa: E402
from kirin.kirin_addon.eval.footage import (  # noqa: E402
    UPRIGHT_DEG,
    measure_fit,
    read_labels,
    silhouette_stride_hz,
)
from kirin.kirin_addon.eval.gait import measure_gait  # noqa: E402
from kirin.kirin_addon.generate.rig_roles import detect_roles  # noqa: E402
from kirin.kirin_addon.video.silhouettes import background_silhouettes  # noqa: E402
from kirin.kirin_addon.video.stills import still_silhouettes  # noqa: E402
from kirin.kirin_addon.video.video_io import read_video  # noqa: E402
from kirin.operators.headless import common as headless  # noqa: E402
from kirin.operators.scene_io.rig import evaluated_pose  # noqa: E402

ASSETS = Path(__file__).resolve().parents[2] / "shared" / "assets"
FREQUENCY_TOLERANCE = 0.15  # the fit's footfall frequency within this share of the video's
PANELS, PANEL = 8, (240, 150)  # the filmstrip: frames shown, each panel's size
STRIPS = Path(__file__).resolve().parents[1] / "docs" / "video_real"
LABELS = Path(__file__).resolve().parents[1] / "data" / "video_real"
PCK_SILHOUETTES = 0.6  # issue 19: PCK@0.1 on the labelled frames from silhouettes alone
PCK_KEYPOINTS = 0.85  # ... and with the other labelled frames' keypoints given
OVERLAY_SIDE = 400  # the overlay sheet's frames, longest side


@dataclass(frozen=True)
class Case:
    name: str
    video: str  # under the assets
    rig: str  # under the assets
    silhouettes: str  # the operator's silhouette source (a SILHOUETTE_ITEMS key)
    labels: str  # the hand-labelled keypoints, under the repository's data/video_real/
    landmarks: dict  # label → scoring.Landmark on the rig
    gait: str = "auto"  # the operator's gait (what the animator would type)
    facing: str = "AUTO"  # the operator's facing (what the animator would pick)


CASES = {
    "buffalo": Case("buffalo", "video_muybridge_buffalo/buffalo_running_1883.mp4",
                    "quaternius/animals_pack/Bull.glb", "STILLS",  # the bison never leaves the plates
                    "buffalo_keypoints.csv", scoring.BULL, "gallop", "RIGHT"),
    "cockatoo": Case("cockatoo", "video_cockatoo/cockatoo.mp4", "quaternius_monsters/big/Birb.glb",
                     "BACKGROUND", "cockatoo_keypoints.csv", scoring.BIRB, "auto", "TOWARD"),
}


def extract(character: support.Character, video: Path, stop: int | None, case: Case,
            keypoints: Path | None = None) -> tuple[object, float]:
    """The operator's new action and the seconds the extraction took (the panel's defaults)."""
    headless.activate(character.arm)
    scene = bpy.context.scene
    scene.frame_start = scene.frame_end = 1
    started = time.perf_counter()
    result = bpy.ops.kirin.motion_from_video(video=str(video), first=1, last=stop or 0, stride=1,
                                            silhouettes=case.silhouettes, gait=case.gait,
                                            facing=case.facing, keypoints=str(keypoints or ""))
    if result != {"FINISHED"}:
        raise support.Unmeasurable("Motion From Video failed (Blender printed the reason above)")
    return character.arm.animation_data.action, time.perf_counter() - started


def body_track(character: support.Character, frames: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """((T,3,3) the body joint's rotations and (T,3) positions in the rig's canonical frame, (3,3) its
    rest rotation): the pelvis, the joint the gait controllers move the body by."""
    rig, canonical = character.rig, character.frame
    pelvis = detect_roles(canonical_rig(rig, canonical).rig).pelvis
    rotations, positions = [], []
    for frame in frames:
        bpy.context.scene.frame_set(frame)
        pose = evaluated_pose(character.arm, rig)[pelvis]
        rotations.append(canonical.rotation @ pose[:3, :3] / np.linalg.norm(pose[:3, 0]))
        positions.append(canonical.to_canonical_points(pose[None, :3, 3])[0])
    rest = canonical.rotation @ rig.rest[pelvis, :3, :3]
    return np.array(rotations), np.array(positions), rest


def video_masks(case: Case, video: Path, stop: int | None) -> tuple[np.ndarray, float]:
    """The video's silhouettes (T,h,w) bool, made as the case's fit makes them, and its frame rate."""
    clip = read_video(video, stop=stop, max_side=256)
    cut = still_silhouettes if case.silhouettes == "STILLS" else background_silhouettes
    return cut(clip.frames) > 0.5, clip.fps


def filmstrip(character: support.Character, action, frames: list[int], tracks: support.Tracks, video: Path,
              stop: int | None, path: Path) -> Path:
    """The video's frames (top row) over the fit's at the same moments (a fixed side camera)."""
    from PIL import Image

    fit = filmstrips.filmstrip(character, [filmstrips.Strip(action, frames, "fit")], (tracks.lo, tracks.hi),
                               path, panels=PANELS, size=PANEL)
    clip = read_video(video, stop=stop)
    scene_fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
    picks = np.linspace(0, len(frames) - 1, PANELS).round().astype(int)
    with Image.open(fit) as below:
        sheet = Image.new("RGB", (below.width, below.height + PANEL[1]), (255, 255, 255))
        sheet.paste(below, (0, PANEL[1]))
    for col, k in enumerate(picks):  # the video frame at the same time as the fit's frame
        index = min(int(round((frames[k] - frames[0]) / scene_fps * clip.fps)), len(clip.frames) - 1)
        image = Image.fromarray(clip.frames[index]).convert("RGB")
        image.thumbnail(PANEL)
        sheet.paste(image, (col * PANEL[0] + (PANEL[0] - image.width) // 2, (PANEL[1] - image.height) // 2))
    sheet.save(path)
    return path


def keypoint_folds(character: support.Character, case: Case, video: Path, stop: int | None, labels,
                   video_fps: float) -> tuple[float, int]:
    """PCK on each half of the labelled frames with the other half's labels given as keypoints (two
    extractions; the silhouettes as ever): (PCK over both halves, points scored)."""
    import tempfile

    frames = labels.frames
    hits = count = 0
    with tempfile.TemporaryDirectory() as folder:
        for fold in (0, 1):
            given = labels.subset(frames[fold::2])
            scored = labels.subset(frames[1 - fold::2])
            path = scoring.write_keypoints(given, case.landmarks, Path(folder) / f"fold{fold}.csv")
            action, _ = extract(character, video, stop, case, keypoints=path)
            support.use_action(character.arm, action)
            camera, _ = scoring.fitted_camera(action)
            start = int(round(action.frame_range[0]))
            pck, points, _ = scoring.score_labels(character, camera, scored, case.landmarks, video_fps, start)
            hits, count = hits + pck * points, count + points
    return (hits / count if count else 0.0), count


def run_case(case: Case, assets: Path, stop: int | None, strips: Path | None, folds: bool = True) -> dict:
    support.clear_scene()
    character, _ = support.load_character(assets / case.rig, headless.import_rig_file)
    video = assets / case.video
    action, seconds = extract(character, video, stop, case)
    start, end = (int(round(v)) for v in action.frame_range)
    frames = list(range(start, end + 1))
    support.use_action(character.arm, action)
    body, root, rest = body_track(character, frames)
    fit = measure_fit(body, rest, root, body_size=1.0)  # the canonical frame's unit is the body size
    tracks = support.track(character, frames)
    render = bpy.context.scene.render
    gait = measure_gait(gait_input(character, tracks, render.fps / render.fps_base))
    masks, video_fps = video_masks(case, video, stop)
    stride_hz = silhouette_stride_hz(masks, video_fps)
    camera, size = scoring.fitted_camera(action)
    labels = read_labels(LABELS / case.labels) if (LABELS / case.labels).is_file() else None
    pck, scored, predicted = (None, 0, {}) if labels is None else \
        scoring.score_labels(character, camera, labels, case.landmarks, video_fps, start)
    iou = scoring.silhouette_iou(character, camera, size, masks, video_fps, start)
    ratio = None if (gait.frequency_hz is None or not stride_hz) else gait.frequency_hz / stride_hz
    checks = {
        "upright >= 95 %": fit.upright_share >= 0.95,
        "no root jump": fit.root_jumps == 0,
        "footfall within 15 %": ratio is not None and abs(ratio - 1.0) <= FREQUENCY_TOLERANCE,
        "<= 1 s per frame": seconds / len(frames) <= 1.0,
        "PCK@0.1 >= 0.6": pck is not None and pck >= PCK_SILHOUETTES,
    }
    pck_keypoints = None
    if folds and labels is not None:
        pck_keypoints, _ = keypoint_folds(character, case, video, stop, labels, video_fps)
        support.use_action(character.arm, action)
    checks["PCK@0.1 >= 0.85 with keypoints"] = pck_keypoints is not None and pck_keypoints >= PCK_KEYPOINTS
    strip = overlay = None
    if strips is not None:
        strip = str(filmstrip(character, action, frames, tracks, video, stop, strips / f"{case.name}.png"))
        if labels is not None:
            shown = read_video(video, stop=stop, max_side=OVERLAY_SIDE).frames
            overlay = str(scoring.overlay_sheet(character, camera, size, shown, labels, predicted, video_fps,
                                                start, strips / f"{case.name}_overlay.png"))
    return {"case": case.name, "video": case.video, "rig": case.rig, "frames": len(frames),
            "filmstrip": strip, "overlay": overlay, "pck": pck, "pck_points": scored, "iou": iou,
            "pck_keypoints_given": pck_keypoints,
            "video_fps": video_fps, "seconds": seconds, "seconds_per_frame": seconds / len(frames),
            "fit": fit.as_dict(), "footfall_hz": gait.frequency_hz, "video_stride_hz": stride_hz,
            "footfall_ratio": ratio, "duty": gait.duty, "checks": checks}


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def report(rows: list[dict]) -> str:
    lines = [f"case | frames | upright (±{UPRIGHT_DEG:.0f}°) | worst tilt | max root step | jumps | "
             "footfall Hz fit/video | PCK@0.1 (points) | with keypoints | IoU | s/frame | verdict", "-" * 130]
    for row in rows:
        if "reason" in row:
            lines.append(f"{row['case']} | not measured: {row['reason']}")
            continue
        fit = row["fit"]
        hz = "–" if row["footfall_hz"] is None else f"{row['footfall_hz']:.2f}"
        video_hz = "–" if row["video_stride_hz"] is None else f"{row['video_stride_hz']:.2f}"
        failed = [name for name, ok in row["checks"].items() if not ok]
        verdict = "passes" if not failed else "fails " + ", ".join(failed)
        lines.append(f"{row['case']} | {row['frames']} | {fit['upright_share']:.2f} | "
                     f"{fit['worst_tilt_deg']:.0f}° | {fit['max_root_step']:.2f} | {fit['root_jumps']} | "
                     f"{hz}/{video_hz} | {'–' if row['pck'] is None else format(row['pck'], '.2f')} "
                     f"({row['pck_points']}) | {_share(row['pck_keypoints_given'])} | {row['iou']:.2f} | "
                     f"{row['seconds_per_frame']:.2f} | {verdict}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assets", type=Path, default=ASSETS)
    parser.add_argument("--cases", nargs="*", default=sorted(CASES), choices=sorted(CASES))
    parser.add_argument("--stop", type=int, default=None, help="video frames to use (default: all)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--filmstrips", type=Path, default=STRIPS,
                        help="where the video-over-fit filmstrips go (PNG per case)")
    parser.add_argument("--no-filmstrips", action="store_true")
    parser.add_argument("--no-folds", action="store_true",
                        help="skip the two extractions with half the labels given as keypoints")
    parser.add_argument("--gait", help="the gait every case asks for instead of its own ('none': no gait)")
    parser.add_argument("--facing", choices=("AUTO", "LEFT", "RIGHT", "TOWARD", "AWAY"),
                        help="the facing every case gives instead of its own")
    args = parser.parse_args(argv)
    if not args.assets.is_dir():
        print(f"{args.assets} is absent: nothing to measure")
        return 0
    module = headless.start_with_backend(headless.BackendOptions(None, "cpu", 0))
    rows = []
    try:
        for name in args.cases:
            case = CASES[name]
            case = replace(case, gait=args.gait or case.gait, facing=args.facing or case.facing)
            try:
                rows.append(run_case(case, args.assets, args.stop,
                                     None if args.no_filmstrips else args.filmstrips, not args.no_folds))
            except Exception as exc:  # noqa: BLE001 — one case that cannot be measured is a reported row
                rows.append({"case": name, "reason": f"{type(exc).__name__}: {exc}"})
    finally:
        headless.disable_extension(module)
    print(report(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
