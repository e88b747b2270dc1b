"""The `kirin` command line. Blender-side jobs run headless through the extension's own operators."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..core.creature import FAMILIES


def _headless():
    # Imported lazily: only these commands need Blender (the bpy module) in the environment.
    from ...operators.headless import common

    return common


def _cmd_retarget(args: argparse.Namespace) -> int:
    width, _, height = args.preview_size.partition("x")
    summary = _headless().run_retarget(args.source, args.target, args.out, preview=args.preview,
                                       report=args.json, clip=args.clip,
                                       preview_resolution=(int(width), int(height)), fps=args.fps)
    print(json.dumps(summary, indent=2))
    return 0


def _cmd_generate(args: argparse.Namespace) -> int:
    width, _, height = args.preview_size.partition("x")
    summary = _headless().run_generate(
        args.rig, args.prompt, args.out, image=args.image, frames=args.frames, variants=args.variants,
        seed=args.seed, guidance=args.guidance, loop=args.loop, preview=args.preview, report=args.json,
        fps=args.fps, preview_resolution=(int(width), int(height)), backend_python=args.backend_python,
        device=args.device, threads=args.threads, creature_seed=args.creature_seed, still=args.still)
    print(json.dumps(summary, indent=2))
    return 0


def _cmd_bind(args: argparse.Namespace) -> int:
    from ...operators.headless.bind import run_bind

    summary = run_bind(
        args.mesh, args.out, template=args.template, method=args.method, weights=args.weights,
        max_influences=args.max_influences,
        prompt=args.prompt, frames=args.frames, report=args.json, backend_python=args.backend_python,
        device=args.device, threads=args.threads, creature_seed=args.creature_seed)
    print(json.dumps(summary, indent=2))
    return 0


def _cmd_extract(args: argparse.Namespace) -> int:
    from ...operators.headless.video import run_extract

    summary = run_extract(
        args.rig, args.video, args.out, keypoints=args.keypoints, silhouettes=args.silhouettes,
        start=args.start, stop=args.stop, stride=args.stride, epochs=args.epochs, fps=args.fps,
        report=args.json, backend_python=args.backend_python, device=args.device, threads=args.threads,
        creature=args.creature, creature_seed=args.creature_seed, idm=args.idm, mediapipe=args.mediapipe)
    print(json.dumps(summary, indent=2))
    return 0


def _cmd_info(args: argparse.Namespace) -> int:
    from ..core.canonical import detect_canonical_frame
    from ..io.files import file_world_matrix, load_motion_file

    rig, motion, name = load_motion_file(args.file, args.clip)
    frame = detect_canonical_frame(rig, world_matrix=file_world_matrix(args.file))
    print(json.dumps({
        "clip": name, "frames": motion.frame_count, "fps": motion.fps, **rig.summary(),
        "up_axis": frame.up_axis, "forward_axis": frame.forward_axis,
        "mirror_pairs": len(rig.mirror_pairs), "joint_names": rig.names,
    }, indent=2))
    return 0


def _cmd_ingest(args: argparse.Namespace) -> int:
    report = _headless().run_ingest(args.folder, args.out, captions_csv=args.captions, fps=args.fps,
                                    test_rigs=tuple(filter(None, args.test_rigs.split(","))), seed=args.seed)
    summary = {"clips": len(report["clips"]), "skipped": report["skipped"], "out": report["out"]}
    (Path(args.out) / "ingest_report.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(summary, indent=2))
    return 0


def _cmd_build(args: argparse.Namespace) -> int:
    from ..library.build import BuildConfig, build_library

    config = BuildConfig(clips=args.clips, seed=args.seed, workers=args.workers, fps=args.fps,
                         zero_shot_family=args.zero_shot_family)
    stats = build_library(args.out, config, progress=not args.quiet)
    print(json.dumps({k: stats[k] for k in ("clips", "seconds", "clips_per_family", "clips_per_split")},
                     indent=2))
    return 0


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from ..library.calibration import measure_authored, measure_generated, report_markdown

    authored = measure_authored(args.authored)
    if not authored:
        raise ValueError(f"No authored quadruped walk/gallop/run clips found in {args.authored}.")
    generated = measure_generated(seeds=range(args.seeds))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report_markdown(authored, generated, authored_dir=args.authored, seeds=args.seeds))
    print(json.dumps({"authored": len(authored), "generated": len(generated), "out": str(out)}, indent=2))
    return 0


def _cmd_preview(args: argparse.Namespace) -> int:
    print(json.dumps(_headless().run_preview(args.library, args.out, count=args.count, frames=args.frames),
                     indent=2))
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    # Imported lazily: the server needs FastAPI, uvicorn and torch, which no other command does.
    from ..backend.server.app import serve

    return serve(args)


def _add_serve_parser(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser("serve", help="run the local inference backend of Generate Motion (HTTP + token)")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to listen on (default 127.0.0.1; 0.0.0.0 for a GPU box others reach)")
    serve.add_argument("--port", type=int, default=0, help="port (default 0: a free one, printed)")
    serve.add_argument("--token-file", help="where to write the session token (0600; default: a private file "
                                            "under $XDG_RUNTIME_DIR or the temp folder)")
    serve.add_argument("--url-file", help="write {url, pid, token_file} as JSON here once listening")
    serve.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                       help="cuda (onnxruntime-gpu), cpu, or auto (CUDA when present)")
    serve.add_argument("--threads", type=int, default=0, help="CPU threads for the model (0: the default)")
    serve.add_argument("--model", help="motion model folder (default: the shipped one)")
    serve.add_argument("--pose-model", dest="pose_model", help="pose prior folder (default: the shipped one)")
    serve.add_argument("--bank", default="default",
                       help="motion bank to retrieve from: 'default' (when built), a cache folder or 'none'")
    serve.add_argument("--max-jobs", type=int, default=256, help="queued + unfetched jobs held at most")
    serve.add_argument("--parent-pid", type=int,
                       help="shut down when this process ends (the add-on's Blender)")
    serve.add_argument("--log-level", default="warning", choices=("debug", "info", "warning", "error"))
    serve.set_defaults(func=_cmd_serve)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kirin", description="Kirin: animate any rigged creature.")
    sub = parser.add_subparsers(dest="command", required=True)
    ret = sub.add_parser("retarget", help="retarget a motion file onto a character; write a .blend")
    ret.add_argument("--source", help="BVH, glTF/GLB or Kirin .npz motion (default: a built-in walk)")
    ret.add_argument("--clip", help="animation name inside a glTF source")
    ret.add_argument("--target", help="character file: .glb/.gltf/.fbx/.bvh/.blend (default: built-in)")
    ret.add_argument("--out", required=True, help="the .blend to write")
    ret.add_argument("--preview", help="render a Cycles CPU preview (.mp4, or a PNG path prefix)")
    ret.add_argument("--fps", type=int, default=30, help="scene frame rate; the motion is resampled to it")
    ret.add_argument("--preview-size", default="480x270", help="preview resolution WxH")
    ret.add_argument("--json", help="write a JSON report (frames, bones, timings)")
    ret.set_defaults(func=_cmd_retarget)
    gen = sub.add_parser("generate", help="Generate Motion on a character headless: new Actions in a .blend")
    gen.add_argument("--rig", help="character file: .glb/.gltf/.fbx/.blend (default: a built-in procedural "
                                   "quadruped with its skinned mesh)")
    gen.add_argument("--prompt", default="a wolf trotting forward", help="what the creature should do")
    gen.add_argument("--image", help="optional reference image (PNG, JPEG...)")
    gen.add_argument("--frames", type=int, default=96, help="frames to generate (at --fps)")
    gen.add_argument("--variants", type=int, default=3,
                     help="variants: the first becomes the active action, the others muted NLA takes")
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--guidance", type=float, default=0.0, help="prompt guidance (0: the model's default)")
    gen.add_argument("--loop", action="store_true", help="make the motion loop")
    gen.add_argument("--fps", type=int, default=30, help="scene frame rate")
    gen.add_argument("--out", required=True, help="the .blend to write")
    gen.add_argument("--preview", help="render the variants side by side (Cycles CPU; .mp4 or a PNG prefix)")
    gen.add_argument("--preview-size", default="480x270", help="preview resolution WxH")
    gen.add_argument("--still", help="render the preview's middle frame as a PNG")
    gen.add_argument("--json", help="write a JSON report (device, timings, per-variant metrics)")
    gen.add_argument("--backend-python",
                     help="Python of the backend environment (default: this checkout's .venv)")
    gen.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="backend device")
    gen.add_argument("--threads", type=int, default=0, help="backend CPU threads (0: its default)")
    gen.add_argument("--creature-seed", type=int, default=0, help="which built-in creature (no --rig)")
    gen.set_defaults(func=_cmd_generate)
    bind = sub.add_parser("bind", help="Auto-Bind an unrigged mesh headless: fitted skeleton + skin weights")
    bind.add_argument("--mesh", help="mesh file: .glb/.gltf/.fbx/.obj/.ply/.stl/.blend; a rig in it is "
                                     "stripped (default: the built-in procedural creature's body)")
    bind.add_argument("--template", choices=FAMILIES, help="template family (default: detect the best)")
    bind.add_argument("--weights", choices=("blend", "heat", "transfer"), default="blend",
                      help="bone heat pulled to the template's weights, bone heat, or the template's")
    bind.add_argument("--method", choices=("robust", "nearest"), default="robust",
                      help="weight transfer (of the template's weights)")
    bind.add_argument("--max-influences", type=int, default=4, dest="max_influences")
    bind.add_argument("--prompt", help="then Generate Motion on the new rig with this prompt")
    bind.add_argument("--frames", type=int, default=48, help="frames to generate with --prompt")
    bind.add_argument("--out", required=True, help="the .blend to write")
    bind.add_argument("--json", help="write a JSON report (template, fit quality, masks, timings)")
    bind.add_argument("--backend-python", help="Python of the backend environment (default: the .venv)")
    bind.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="backend device")
    bind.add_argument("--threads", type=int, default=0, help="backend CPU threads (0: its default)")
    bind.add_argument("--creature-seed", type=int, default=0, help="which built-in creature (no --mesh)")
    bind.set_defaults(func=_cmd_bind)
    ext = sub.add_parser("extract", help="Extract Motion From Video headless: a driving video → a new Action "
                                         "on a character, in a .blend")
    ext.add_argument("--rig", help="character file: .glb/.gltf/.fbx/.bvh/.blend (default: a built-in "
                                   "procedural creature, see --creature)")
    ext.add_argument("--video", required=True, help="the driving video (any container/codec FFmpeg reads)")
    ext.add_argument("--keypoints", help="2D keypoints file (JSON/CSV: frame, joint, x, y, confidence)")
    ext.add_argument("--silhouettes", default="background",
                     help="background (subtraction; a static or slow camera), none, or a folder of masks")
    ext.add_argument("--start", type=int, default=0, help="first video frame (0-based)")
    ext.add_argument("--stop", type=int, help="video frame to stop before (default: the end)")
    ext.add_argument("--stride", type=int, default=1, help="use every n-th frame")
    ext.add_argument("--epochs", type=int, help="fit epochs (default: the panel's, 20)")
    ext.add_argument("--idm", action="store_true", help="start from the rig's inverse-dynamics model")
    ext.add_argument("--mediapipe", action="store_true",
                     help="humanoid rigs: MediaPipe Pose keypoints (needs the backend's .venv-mediapipe)")
    ext.add_argument("--fps", type=int, default=30, help="scene frame rate; the motion is resampled to it")
    ext.add_argument("--out", required=True, help="the .blend to write")
    ext.add_argument("--json", help="write a JSON report (frames, evidence, reprojection error, timings)")
    ext.add_argument("--backend-python", help="Python of the backend environment (default: the .venv)")
    ext.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="backend device")
    ext.add_argument("--threads", type=int, default=0, help="backend CPU threads (0: its default)")
    ext.add_argument("--creature", choices=FAMILIES, default="quadruped", help="built-in creature (no --rig)")
    ext.add_argument("--creature-seed", type=int, default=0, help="which built-in creature (no --rig)")
    ext.set_defaults(func=_cmd_extract)
    info = sub.add_parser("info", help="describe a motion file: joints, frames, detected axes")
    info.add_argument("file")
    info.add_argument("--clip")
    info.set_defaults(func=_cmd_info)
    data = sub.add_parser("data", help="build and ingest the motion library")
    data_sub = data.add_subparsers(dest="data_command", required=True)
    ingest = data_sub.add_parser("ingest", help="BVH/glTF/FBX files → library clips via Blender's importers")
    ingest.add_argument("folder")
    ingest.add_argument("--out", required=True, help="folder for the .npz clips and ingest_report.json")
    ingest.add_argument("--captions", help="CSV with columns file, clip, caption (optional species, family)")
    ingest.add_argument("--fps", type=float, default=30.0, help="dataset frame rate")
    ingest.add_argument("--test-rigs", default="", help="comma-separated file stems kept as the test split")
    ingest.add_argument("--seed", type=int, default=0)
    ingest.set_defaults(func=_cmd_ingest)
    build = data_sub.add_parser("build", help="generate the procedural library (deterministic by seed)")
    build.add_argument("--out", required=True)
    build.add_argument("--clips", type=int, default=1000)
    build.add_argument("--seed", type=int, default=0)
    build.add_argument("--fps", type=float, default=30.0)
    build.add_argument("--workers", type=int, default=2)
    build.add_argument("--zero-shot-family", default="dragon", help="family held out whole for tests")
    build.add_argument("--quiet", action="store_true", help="no progress bar")
    build.set_defaults(func=_cmd_build)
    calibrate = data_sub.add_parser("calibrate", help="compare procedural gaits with authored clips")
    calibrate.add_argument("--authored", required=True, help="folder of .npz clips from `kirin data ingest`")
    calibrate.add_argument("--out", default="docs/calibration.md", help="the markdown report to write")
    calibrate.add_argument("--seeds", type=int, default=8, help="procedural quadrupeds to generate")
    calibrate.set_defaults(func=_cmd_calibrate)
    preview = data_sub.add_parser("preview", help="render a grid of clips as skinned meshes into an MP4")
    preview.add_argument("library", help="folder of .npz clips")
    preview.add_argument("--out", required=True, help="the .mp4 to write")
    preview.add_argument("--count", type=int, default=9)
    preview.add_argument("--frames", type=int, default=90)
    preview.set_defaults(func=_cmd_preview)
    _add_serve_parser(sub)
    # Subcommands that need torch import the models only when run.
    from . import model_commands, pose_commands

    model_commands.add_parsers(sub, data_sub)
    pose_commands.add_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        print(f"kirin: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
