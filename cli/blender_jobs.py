"""The `kirin` commands that run Blender headless through the extension's own operators (`retarget`,
`generate`, `bind`, `extract`): their parsers, and handlers that hand a job to its runner in
operators/headless/ and print the runner's summary."""

from __future__ import annotations

import argparse
import json
from dataclasses import fields

from ..kirin_addon.bind.request import BIND_WEIGHTS, DEFAULT_BIND_WEIGHTS
from ..kirin_addon.core.creature import FAMILIES

DEVICES = ("auto", "cpu", "cuda")


def add_backend_arguments(parser: argparse.ArgumentParser, python_help: str) -> None:
    """--backend-python, --device, --threads: the backend preferences of a job that calls the backend."""
    parser.add_argument("--backend-python", help=python_help)
    parser.add_argument("--device", choices=DEVICES, default="auto", help="backend device")
    parser.add_argument("--threads", type=int, default=0, help="backend CPU threads (0: its default)")


def _backend_options(args: argparse.Namespace):
    from ..operators.headless.common import BackendOptions

    return BackendOptions(python=args.backend_python, device=args.device, threads=args.threads)


def _preview_resolution(size: str) -> tuple[int, int]:
    """"480x270" → (480, 270)."""
    width, _, height = size.partition("x")
    return int(width), int(height)


def _print_summary(summary: dict) -> int:
    print(json.dumps(summary, indent=2))
    return 0


def _job(job_type: type, args: argparse.Namespace, **given):
    """A `job_type` job: each field from the command-line argument of its name, unless `given`."""
    named = {f.name: getattr(args, f.name) for f in fields(job_type) if f.name not in given}
    return job_type(**named, **given)


def _cmd_retarget(args: argparse.Namespace) -> int:
    # Imported when run: only these commands need Blender (the bpy module) in the environment.
    from ..operators.headless.common import PreviewOptions
    from ..operators.headless.retarget import RetargetJob, run_retarget

    preview = PreviewOptions(path=args.preview, resolution=_preview_resolution(args.preview_size))
    return _print_summary(run_retarget(_job(RetargetJob, args, report=args.json, preview=preview)))


def _cmd_generate(args: argparse.Namespace) -> int:
    from ..operators.headless.common import PreviewOptions
    from ..operators.headless.generate import GenerateJob, run_generate

    preview = PreviewOptions(path=args.preview, still=args.still,
                             resolution=_preview_resolution(args.preview_size))
    return _print_summary(run_generate(_job(GenerateJob, args, rig_file=args.rig, report=args.json,
                                            preview=preview, backend=_backend_options(args))))


def _cmd_bind(args: argparse.Namespace) -> int:
    from ..operators.headless.bind import BindJob, run_bind

    return _print_summary(run_bind(_job(BindJob, args, mesh_file=args.mesh, report=args.json,
                                        backend=_backend_options(args))))


def _cmd_extract(args: argparse.Namespace) -> int:
    from ..operators.headless.video import ExtractJob, run_extract

    return _print_summary(run_extract(_job(ExtractJob, args, rig_file=args.rig, report=args.json,
                                           backend=_backend_options(args))))


def _add_retarget_parser(sub: argparse._SubParsersAction) -> None:
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


def _add_generate_parser(sub: argparse._SubParsersAction) -> None:
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
    add_backend_arguments(gen, "Python of the backend environment (default: this checkout's .venv)")
    gen.add_argument("--creature-seed", type=int, default=0, help="which built-in creature (no --rig)")
    gen.set_defaults(func=_cmd_generate)


def _add_bind_parser(sub: argparse._SubParsersAction) -> None:
    bind = sub.add_parser("bind", help="Auto-Bind an unrigged mesh headless: fitted skeleton + skin weights")
    bind.add_argument("--mesh", help="mesh file: .glb/.gltf/.fbx/.obj/.ply/.stl/.blend; a rig in it is "
                                     "stripped (default: the built-in procedural creature's body)")
    bind.add_argument("--template", choices=FAMILIES, help="template family (default: detect the best)")
    bind.add_argument("--weights", choices=BIND_WEIGHTS, default=DEFAULT_BIND_WEIGHTS,
                      help="bone heat pulled to the template's weights, bone heat, the template's, or "
                           "those re-weighed by the network learned from artists' weights")
    bind.add_argument("--method", choices=("robust", "nearest"), default="robust",
                      help="weight transfer (of the template's weights)")
    bind.add_argument("--max-influences", type=int, default=4, dest="max_influences")
    bind.add_argument("--prompt", help="then Generate Motion on the new rig with this prompt")
    bind.add_argument("--frames", type=int, default=48, help="frames to generate with --prompt")
    bind.add_argument("--out", required=True, help="the .blend to write")
    bind.add_argument("--json", help="write a JSON report (template, fit quality, masks, timings)")
    add_backend_arguments(bind, "Python of the backend environment (default: the .venv)")
    bind.add_argument("--creature-seed", type=int, default=0, help="which built-in creature (no --mesh)")
    bind.set_defaults(func=_cmd_bind)


def _add_extract_parser(sub: argparse._SubParsersAction) -> None:
    ext = sub.add_parser("extract", help="Extract Motion From Video headless: a driving video → a new Action "
                                         "on a character, in a .blend")
    ext.add_argument("--rig", help="character file: .glb/.gltf/.fbx/.bvh/.blend (default: a built-in "
                                   "procedural creature, see --creature)")
    ext.add_argument("--video", required=True, help="the driving video (any container/codec FFmpeg reads)")
    ext.add_argument("--keypoints", help="2D keypoints file (JSON/CSV: frame, joint, x, y, confidence)")
    ext.add_argument("--silhouettes", default="background",
                     help="background (subtraction; a static or slow camera), stills (each frame on its own: "
                          "a subject that never leaves its place), none, or a folder of masks")
    ext.add_argument("--start", type=int, default=0, help="first video frame (0-based)")
    ext.add_argument("--stop", type=int, help="video frame to stop before (default: the end)")
    ext.add_argument("--stride", type=int, default=1, help="use every n-th frame")
    ext.add_argument("--epochs", type=int, help="fit epochs (default: the panel's, 20)")
    ext.add_argument("--idm", action="store_true", help="start from the rig's inverse-dynamics model")
    ext.add_argument("--gait", default="auto",
                     help="the gait the fit starts from at the video's stride: auto, none, or words naming "
                          "one ('gallop')")
    ext.add_argument("--facing", default="auto", choices=("auto", "left", "right", "toward", "away"),
                     help="where the creature's head points in the video's first frame (a silhouette "
                          "cannot tell front from back)")
    ext.add_argument("--mediapipe", action="store_true",
                     help="humanoid rigs: MediaPipe Pose keypoints (needs the backend's .venv-mediapipe)")
    ext.add_argument("--fps", type=int, default=30, help="scene frame rate; the motion is resampled to it")
    ext.add_argument("--out", required=True, help="the .blend to write")
    ext.add_argument("--json", help="write a JSON report (frames, evidence, reprojection error, timings)")
    add_backend_arguments(ext, "Python of the backend environment (default: the .venv)")
    ext.add_argument("--creature", choices=FAMILIES, default="quadruped", help="built-in creature (no --rig)")
    ext.add_argument("--creature-seed", type=int, default=0, help="which built-in creature (no --rig)")
    ext.set_defaults(func=_cmd_extract)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Register `retarget`, `generate`, `bind` and `extract` (in the order `kirin --help` lists them)."""
    _add_retarget_parser(sub)
    _add_generate_parser(sub)
    _add_bind_parser(sub)
    _add_extract_parser(sub)
