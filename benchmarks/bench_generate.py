"""Benchmark Generate Motion: 120 frames on a 64-joint rig by construction (a gait prompt: the gait
controllers on the rig's legs), and the network with the default sampler (onnxruntime and torch),
against the same network with the 1000-step ancestral sampler.

Run: .venv/bin/python benchmarks/bench_generate.py [--model models/weights/motion] [--full]
Prints seconds and the ratios measured in this run (the machine is shared; only ratios matter).
Without --full the ancestral sampler runs `--ancestral-calls` guided steps and is extrapolated to
1000 (every step costs the same: one batched guided network call).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from kirin.kirin_addon.core.rig import Rig
from kirin.kirin_addon.generate.pipeline import GeneratePipeline, SamplingOptions
from kirin.kirin_addon.generate.request import GenerateRequest
from kirin.kirin_addon.library.families.build import build_creature
from kirin.models.config import DiffusionConfig
from kirin.models.motion.bank import open_default_bank
from kirin.models.motion.config import DenoiserConfig
from kirin.models.motion.denoiser import Denoiser
from kirin.models.motion.export import export_onnx
from kirin.models.motion.generator import DEFAULT_MODEL, MotionModel
from kirin.models.onnx import OnnxDenoiser, quantize_int8


def rig_with_joints(rig: Rig, count: int) -> Rig:
    """Extend the rig's last chain with more bones of the same direction until it has `count` joints."""
    names, parents = list(rig.names), list(rig.parents)
    rest, tails = [m for m in rig.rest], list(rig.tails)
    while len(names) < count:
        last = len(names) - 1
        step = tails[last] - rest[last][:3, 3]
        matrix = rest[last].copy()
        matrix[:3, 3] = tails[last]
        names.append(f"extra.{len(names):03d}")
        parents.append(last)
        rest.append(matrix)
        tails.append(tails[last] + step)
    count_now = len(names)
    return Rig(names, np.array(parents), np.array(rest), np.array(tails), np.ones(count_now, bool),
               np.ones(count_now, bool))


def timed(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=str(DEFAULT_MODEL))
    parser.add_argument("--frames", type=int, default=120)
    parser.add_argument("--joints", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ancestral-calls", type=int, default=40)
    parser.add_argument("--full", action="store_true", help="run all 1000 ancestral steps")
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    folder = Path(args.model)
    if (folder / "model.json").exists():
        model = MotionModel.load(folder)
        source = str(folder)
    else:  # speed does not depend on the weights
        config = DenoiserConfig()
        model = MotionModel(Denoiser(config).eval(), config, DiffusionConfig(), np.zeros(14), np.ones(14))
        source = "untrained default config"
    creature = build_creature("dragon", 0)
    rig = rig_with_joints(creature.rig, args.joints)
    pipeline = GeneratePipeline(model)
    prepared = pipeline.prepare(rig)
    steps, guidance = model.diffusion_config.sample_steps, model.diffusion_config.guidance
    prompt = "a dragon walking forward"

    def run(sampler: str = "ddim") -> None:  # the network (a gait prompt would be made by construction)
        pipeline.run(
            prepared,
            GenerateRequest(prompt, frames=args.frames, seed=0),
            SamplingOptions(clean=False, sampler=sampler, construct=False, guard=False),
        )

    def constructed() -> None:  # what Generate Motion does with a gait prompt: the gait controllers
        made = pipeline.run(prepared, GenerateRequest(prompt, frames=args.frames, seed=0))
        assert made[0].report.get("path") == "constructed"

    construct_seconds = timed(constructed, args.repeats)
    torch_seconds = timed(run, args.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        onnx_path = export_onnx(model.net, Path(tmp) / "denoiser.onnx")
        model.runner = OnnxDenoiser(quantize_int8(onnx_path))
        int8_seconds = timed(run, args.repeats)
        runner = OnnxDenoiser(onnx_path)
        model.runner = runner
        onnx_seconds = timed(run, args.repeats)
        # Ancestral sampler: time a number of its guided calls and extrapolate, or run it all.
        diffusion = model.diffusion
        full_steps = diffusion.steps
        if not args.full:
            diffusion.steps = args.ancestral_calls
        start = time.perf_counter()
        run("ancestral")
        ancestral = (time.perf_counter() - start) * full_steps / diffusion.steps
        diffusion.steps = full_steps
        # Generate Motion with the default bank (kirin bank build), when there is one: a prompt the
        # bank answers (the clip retargeted and cleaned up) and one it does not (the network).
        bank = open_default_bank()
        retrieval_seconds = {}
        if bank is not None:
            for label, text in (("retrieved", "A dragon walks forward at a steady pace."),
                                ("not found", "a dragon juggling three oranges")):
                def generate_with_bank(text: str = text) -> None:
                    pipeline.run(
                        prepared,
                        GenerateRequest(text, frames=args.frames, seed=0),
                        SamplingOptions(bank=bank),
                    )

                retrieval_seconds[label] = timed(generate_with_bank, args.repeats)
        model.runner = model.net

    print(f"model: {source}; rig: {rig.joint_count} joints; {args.frames} frames; DDIM {steps} steps, "
          f"guidance {guidance}; onnxruntime providers {runner.providers}")
    longer = onnx_seconds / construct_seconds
    print(f"by construction (a gait prompt, the gait controllers): {construct_seconds:.3f} s  "
          f"(budget 0.5 s on a 2-core CPU); the network takes {longer:.1f}x as long")
    print(f"default sampler, onnxruntime: {onnx_seconds:.3f} s  (budget 1 s on a 2-core CPU)")
    print(f"default sampler, onnxruntime int8: {int8_seconds:.3f} s")
    print(f"default sampler, torch:       {torch_seconds:.3f} s")
    print(f"1000-step ancestral, onnxruntime: {ancestral:.1f} s "
          f"({'measured' if args.full else f'{args.ancestral_calls} calls extrapolated'})")
    print(f"speed-up of the default sampler over ancestral: {ancestral / onnx_seconds:.1f}x (goal >= 10x)")
    print(f"onnxruntime vs torch: {torch_seconds / onnx_seconds:.2f}x")
    for label, seconds in retrieval_seconds.items():
        print(f"Generate Motion with the default bank, prompt {label}: {seconds:.3f} s "
              f"({seconds / onnx_seconds:.2f}x the default sampler; clean-up included)")
    if not retrieval_seconds:
        print("no default bank (kirin bank build): retrieval not timed")


if __name__ == "__main__":
    main()
