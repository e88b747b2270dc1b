"""The `kirin` commands of motion files and the motion library: `info` (describe a motion file) and
`data` (`build` the procedural library, `ingest` authored files through Blender's importers,
`calibrate` procedural gaits against authored clips, `preview` a grid of clips); parsers and handlers."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _cmd_info(args: argparse.Namespace) -> int:
    from ..kirin_addon.core.canonical import detect_canonical_frame
    from ..kirin_addon.io.files import file_world_matrix, load_motion_file

    rig, motion, name = load_motion_file(args.file, args.clip)
    frame = detect_canonical_frame(rig, world_matrix=file_world_matrix(args.file))
    print(json.dumps({
        "clip": name, "frames": motion.frame_count, "fps": motion.fps, **rig.summary(),
        "up_axis": frame.up_axis, "forward_axis": frame.forward_axis,
        "mirror_pairs": len(rig.mirror_pairs), "joint_names": rig.names,
    }, indent=2))
    return 0


def _cmd_ingest(args: argparse.Namespace) -> int:
    # Imported when run: ingest and preview need Blender (the bpy module) in the environment.
    from ..operators.headless.library import run_ingest

    report = run_ingest(args.source, args.out, captions_csv=args.captions, fps=args.fps,
                        test_rigs=tuple(filter(None, args.test_rigs.split(","))), seed=args.seed)
    summary = {"clips": len(report["clips"]), "skipped": report["skipped"], "out": report["out"]}
    (Path(args.out) / "ingest_report.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(summary, indent=2))
    return 0


def _cmd_build(args: argparse.Namespace) -> int:
    from ..kirin_addon.library.build import BuildConfig, build_library

    config = BuildConfig(clips=args.clips, seed=args.seed, workers=args.workers, fps=args.fps,
                         zero_shot_family=args.zero_shot_family)
    stats = build_library(args.out, config, progress=not args.quiet)
    print(json.dumps({k: stats[k] for k in ("clips", "seconds", "clips_per_family", "clips_per_split")},
                     indent=2))
    return 0


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from ..kirin_addon.library.calibration import measure_authored, measure_generated, report_markdown

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
    from ..operators.headless.library import run_preview

    print(json.dumps(run_preview(args.library, args.out, count=args.count, frames=args.frames), indent=2))
    return 0


def _add_info_parser(sub: argparse._SubParsersAction) -> None:
    info = sub.add_parser("info", help="describe a motion file: joints, frames, detected axes")
    info.add_argument("file")
    info.add_argument("--clip")
    info.set_defaults(func=_cmd_info)


def _add_data_parsers(data_sub: argparse._SubParsersAction) -> None:
    ingest = data_sub.add_parser("ingest", help="BVH/glTF/FBX files → library clips via Blender's importers")
    ingest.add_argument("source", help="a BVH/glTF/FBX file, or a folder searched for them")
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


def add_parsers(sub: argparse._SubParsersAction) -> argparse._SubParsersAction:
    """Register `info` and `data`; returns `data`'s subcommands, for the groups that add to them."""
    _add_info_parser(sub)
    data = sub.add_parser("data", help="build and ingest the motion library")
    data_sub = data.add_subparsers(dest="data_command", required=True)
    _add_data_parsers(data_sub)
    return data_sub
