"""The `kirin pose` subcommands (need torch): build a pose bank, train the pose prior, export it."""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

from .model_commands import add_run_arguments, apply_overrides, take_given


def bank(args: argparse.Namespace) -> int:
    from ..models.data.cache import FeatureCache
    from ..models.pose.data import build_pose_bank, save_pose_bank

    started = time.perf_counter()
    entries = build_pose_bank(FeatureCache(args.cache), args.min_change, progress=not args.quiet)
    save_pose_bank(entries, args.out)
    summary = {
        "rigs": len(entries),
        "poses": int(sum(len(e.poses) for e in entries)),
        "heldout": [e.name for e in entries if e.heldout],
        "broken": [e.name for e in entries if e.broken],
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(summary, indent=2))
    return 0


def train(args: argparse.Namespace) -> int:
    from ..models.config import load_config
    from ..models.pose.config import PoseTrainConfig
    from ..models.pose.train import train_pose_prior

    config = load_config(args.config, PoseTrainConfig) if args.config else PoseTrainConfig()
    take_given(config, args, ("data", "out", "steps", "max_seconds", "threads"))
    apply_overrides(config, args.set)
    if not config.data:
        raise ValueError("Give the feature cache the bank was built from (--data)")
    print(json.dumps(train_pose_prior(config, args.bank, progress=not args.quiet)))
    return 0


def export(args: argparse.Namespace) -> int:
    """Copy trained weights + card into a model folder and write the ONNX graph next to them,
    checked against torch on a random input."""
    import numpy as np
    import torch
    from safetensors.torch import load_file

    from ..models.onnx import OnnxDenoiser
    from ..models.pose.config import PoseDenoiserConfig
    from ..models.pose.denoiser import PoseDenoiser
    from ..models.pose.export import POSE_ONNX_INPUTS, export_pose_onnx, pose_example_inputs

    source, out = Path(args.weights), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in ("pose_denoiser.safetensors", "model.json"):
        if source.resolve() != out.resolve():
            shutil.copyfile(source / name, out / name)
    card = json.loads((out / "model.json").read_text())
    net = PoseDenoiser(PoseDenoiserConfig(**card["model"]))
    net.load_state_dict(load_file(str(out / "pose_denoiser.safetensors")))
    net.eval()
    path = export_pose_onnx(net, out / "pose_denoiser.onnx")
    example = pose_example_inputs(net, batch=3, joints=11)
    with torch.no_grad():
        expected = net(**example).numpy()
    got = OnnxDenoiser(path, inputs=POSE_ONNX_INPUTS)(**example).numpy()
    difference = float(np.abs(got - expected).max())
    print(json.dumps({"onnx": str(path), "max_difference": difference}))
    return 0 if difference < 1e-3 else 1


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Register `pose bank`, `pose train` and `pose export`."""
    pose = sub.add_parser("pose", help="the pose prior (Pose Space): data, training, export").add_subparsers(
        dest="pose_command", required=True
    )
    b = pose.add_parser("bank", help="static poses of a feature cache's clips, per rig (ViPS filters)")
    b.add_argument("--cache", required=True)
    b.add_argument("--out", required=True, help="an .npz file")
    b.add_argument("--min-change", type=float, default=0.02, dest="min_change")
    b.add_argument("--quiet", action="store_true")
    b.set_defaults(func=bank)
    t = pose.add_parser("train", help="train the pose prior (resumes from OUT/checkpoint.pt)")
    t.add_argument("--bank", required=True, help="from `kirin pose bank`")
    t.add_argument("--data", nargs="*", help="the feature cache the bank was built from")
    t.add_argument("--config", help="JSON PoseTrainConfig (models/pose/config.py)")
    t.add_argument("--out")
    add_run_arguments(t)
    t.set_defaults(func=train)
    e = pose.add_parser("export", help="weights folder → a shipped model folder with ONNX")
    e.add_argument("--weights", required=True, help="e.g. runs/pose/weights")
    e.add_argument("--out", default="models/weights/pose")
    e.set_defaults(func=export)
