"""Benchmark the Generate Motion backend as the add-on uses it: a `kirin serve` subprocess and the
standard-library client, on a procedural quadruped or a glTF character (`--rig`, e.g. the Fox).

- cold start: process launch → listening → model loaded → first 120-frame result decoded (goal on
  the CPU: ≤ 5 s to the first result);
- warm generation: submit → result decoded, median of --repeats, with the backend's own job time;
- backend resident memory (RSS now and peak, Linux /proc);
- client/transfer overhead: (client time − backend job time) / client time, and the client time
  against `MotionModel.generate` run in this process with the same settings (this run's ratio).

Run: .venv/bin/python benchmarks/bench_backend.py [--frames 120] [--repeats 3] [--threads 1]
     [--rig ../shared/assets/khronos_fox/Fox.glb --prompt "a fox trotting forward"]
The machine is shared: seconds vary between runs; the ratios measured within one run are what count.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from kirin.kirin_addon.backend.process import BackendLaunch, start_backend
from kirin.kirin_addon.backend.protocol import generate_to_json
from kirin.kirin_addon.generate.request import GenerateRequest
from kirin.kirin_addon.library.families.build import build_creature

PROMPT = "a dog trotting forward"  # the default; --prompt


def memory_mb(pid: int) -> dict[str, float | None]:
    """Resident set size now and at its peak (MB), from /proc (None elsewhere)."""
    out: dict[str, float | None] = {"rss_mb": None, "peak_rss_mb": None}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                out["rss_mb"] = int(line.split()[1]) / 1024
            elif line.startswith("VmHWM:"):
                out["peak_rss_mb"] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return out


def in_process(args: argparse.Namespace, creature) -> dict[str, float]:
    """The same generation without HTTP: load the model here and call generate directly."""
    import torch

    from kirin.kirin_addon.generate.pipeline import GeneratePipeline
    from kirin.models.motion.bank import load_bank
    from kirin.models.motion.generator import DEFAULT_MODEL, MotionModel

    if args.threads:
        torch.set_num_threads(args.threads)
    started = time.perf_counter()
    model = MotionModel.load(DEFAULT_MODEL, backend="auto")
    pipeline = GeneratePipeline(model, bank=load_bank(None if args.bank == "none" else args.bank))
    if args.threads and model.backend == "onnxruntime":
        from kirin.models.onnx import OnnxDenoiser

        model.runner = OnnxDenoiser(DEFAULT_MODEL / "denoiser.onnx", threads=args.threads)
    _ = model.text_encoder
    load = time.perf_counter() - started
    prepared = pipeline.prepare(creature.rig, creature.mesh)
    times = []
    for seed in range(args.repeats + 1):  # the first is a warm-up
        started = time.perf_counter()
        pipeline.run(
            prepared,
            GenerateRequest(args.prompt, frames=args.frames, seed=seed, variants=args.variants),
        )
        times.append(time.perf_counter() - started)
    return {"load_s": load, "generate_s": statistics.median(times[1:])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=120)
    parser.add_argument("--variants", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="model threads in both processes (0: default)")
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--seed", type=int, default=3, help="which procedural quadruped")
    parser.add_argument("--bank", default="default",
                        help="motion bank: 'default' (what Generate Motion uses) or 'none' (diffusion only)")
    parser.add_argument("--poll", type=float, default=0.5, help="long-poll length of GenerationJob.wait (s)")
    parser.add_argument("--json", help="also write the numbers here")
    parser.add_argument("--rig", help="a glTF character (its skin and mesh) instead of the quadruped")
    parser.add_argument("--prompt", default=PROMPT)
    args = parser.parse_args()
    creature = build_creature("quadruped", args.seed)
    if args.rig:
        from types import SimpleNamespace

        from kirin.kirin_addon.io.gltf import load_gltf

        asset = load_gltf(args.rig)
        creature = SimpleNamespace(rig=asset.rig, mesh=asset.mesh)

    # ---------------------------------------------------------------- cold: launch to first result
    started = time.perf_counter()
    process = start_backend(sys.executable, BackendLaunch(device=args.device, threads=args.threads,
                                                          extra_args=["--bank", args.bank]), timeout=300)
    listening = time.perf_counter() - started
    client = process.client
    try:
        health = client.wait_ready(timeout=300, interval=0.02)
        ready = time.perf_counter() - started
        job = client.generate(
            creature.rig,
            GenerateRequest(args.prompt, frames=args.frames, variants=args.variants),
            mesh=creature.mesh,
        )
        first = job.wait(timeout=600, interval=args.poll)
        cold = time.perf_counter() - started
        memory_after_first = memory_mb(process.pid)

        # ------------------------------------------------------------ warm: submit to decoded result
        client_times, job_times, model_times, encode_times, sizes = [], [], [], [], []
        for seed in range(args.repeats):
            t0 = time.perf_counter()
            body = generate_to_json(
                creature.rig,
                GenerateRequest(args.prompt, frames=args.frames, variants=args.variants, seed=seed),
                creature.mesh,
            )
            encode_times.append(time.perf_counter() - t0)
            sizes.append(len(json.dumps(body)))
            job = client.generate(
                creature.rig,
                GenerateRequest(args.prompt, frames=args.frames, variants=args.variants, seed=seed),
                mesh=creature.mesh,
            )
            result = job.wait(timeout=600, interval=args.poll)
            client_times.append(time.perf_counter() - t0)
            job_times.append(result.seconds_job)
            model_times.append(result.seconds_model)
        memory = memory_mb(process.pid)
    finally:
        process.stop()

    local = in_process(args, creature)
    warm, warm_job = statistics.median(client_times), statistics.median(job_times)
    overhead = (warm - warm_job) / warm
    numbers = {
        "frames": args.frames,
        "variants": args.variants,
        "joints": creature.rig.joint_count,
        "rig": args.rig or f"procedural quadruped {args.seed}",
        "mesh_vertices": creature.mesh.vertex_count if creature.mesh is not None else 0,
        "device": health.get("device"),
        "backend": health.get("backend"),
        "cold_listening_s": listening,
        "cold_model_ready_s": ready,
        "cold_first_result_s": cold,
        "first_result_seconds_job": first.seconds_job,
        "warm_client_s": warm,
        "warm_backend_job_s": warm_job,
        "warm_backend_model_s": statistics.median(model_times),
        "bank": args.bank,
        "warm_client_overhead_share": overhead,
        "request_encode_s": statistics.median(encode_times),
        "request_bytes": statistics.median(sizes),
        "in_process_load_s": local["load_s"],
        "in_process_generate_s": local["generate_s"],
        "client_vs_in_process": warm / local["generate_s"],
        "backend_rss_mb": memory["rss_mb"],
        "backend_peak_rss_mb": memory["peak_rss_mb"],
        "backend_rss_after_first_mb": memory_after_first["rss_mb"],
    }
    print(f"{numbers['rig']}: {numbers['joints']} joints, {numbers['mesh_vertices']} vertices; "
          f"{args.frames} frames x {args.variants} variant(s); bank {args.bank}; "
          f"device {numbers['device']} ({numbers['backend']})")
    print(f"cold start: listening {listening:.2f} s, model ready {ready:.2f} s, first result {cold:.2f} s "
          f"(goal <= 5 s on the CPU: {'met' if cold <= 5 else 'NOT met'})")
    print(f"warm generation through the backend: {warm:.3f} s (backend job {warm_job:.3f} s, of which the "
          f"model {statistics.median(model_times):.3f} s)")
    print(f"in-process MotionModel.generate: {local['generate_s']:.3f} s "
          f"(model load {local['load_s']:.2f} s)")
    print(f"client/transfer overhead: {overhead:.1%} of the client's time (request "
          f"{numbers['request_bytes'] / 1e6:.2f} MB, encoded in {numbers['request_encode_s'] * 1e3:.1f} ms; "
          f"long polls of {args.poll:g} s)")
    print(f"backend vs in-process: {warm / local['generate_s']:.2f}x "
          "(includes the backend's metrics, encoding and polling)")
    if memory["rss_mb"] is not None:
        print(f"backend resident memory: {memory['rss_mb']:.0f} MB (peak {memory['peak_rss_mb']:.0f} MB)")
    if args.json:
        Path(args.json).write_text(json.dumps(numbers, indent=2))


if __name__ == "__main__":
    main()
