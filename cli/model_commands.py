"""The `kirin` subcommands that need torch (`data cache`, `train`, `export`, `eval-train`, `eval`), imported
only when run."""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import fields, is_dataclass
from pathlib import Path

from ..models.config import from_dict, load_config
from ..models.motion.config import TrainConfig


def cache(args: argparse.Namespace) -> int:
    import torch

    from ..models.data.cache import build_cache
    from ..models.encoders.image import load_image_encoder
    from ..models.encoders.text import load_text_encoder

    # One thread: on a busy 2-core machine, two torch threads make the text encoder 10-30x slower.
    torch.set_num_threads(args.threads)

    summary = build_cache(
        args.sources,
        args.out,
        load_text_encoder(),
        load_image_encoder(args.image_encoder),
        max_clips=args.max_clips,
        workers=args.workers,
        progress=not args.quiet,
    )
    print(json.dumps(summary, indent=2))
    return 0


def _parse_value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def apply_overrides(config, items: list[str] | None) -> None:
    """`--set key=value` on a config dataclass; dotted keys reach nested configs (model.width=96), a
    JSON object replaces a whole nested config, a JSON list fills a tuple field."""
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"--set wants key=value, got {item!r}")
        key, value = item.split("=", 1)
        *parents, last = key.split(".")
        target = config
        for part in parents:
            target = getattr(target, part, None)
            if not is_dataclass(target):
                raise ValueError(f"Unknown config section {part!r} in {key!r}")
        known = {f.name for f in fields(target)}
        if last not in known:
            raise ValueError(f"Unknown config key {key!r}; known: {', '.join(sorted(known))}")
        parsed, current = _parse_value(value), getattr(target, last)
        if is_dataclass(current) and isinstance(parsed, dict):
            parsed = from_dict(type(current), parsed)
        elif isinstance(current, tuple) and isinstance(parsed, list):
            parsed = tuple(parsed)
        setattr(target, last, parsed)


def take_given(config, args: argparse.Namespace, names: tuple[str, ...]) -> None:
    """Set the config fields `names` from the command-line arguments of those names that were given."""
    for name in names:
        value = getattr(args, name, None)
        if value is not None:
            setattr(config, name, value)


def add_run_arguments(parser: argparse.ArgumentParser, set_example: str = "model.width=96",
                      batch: bool = False) -> None:
    """--steps (--batch) --max-seconds --threads --set --quiet: the options every training command has."""
    parser.add_argument("--steps", type=int)
    if batch:
        parser.add_argument("--batch", type=int)
    parser.add_argument("--max-seconds", type=float, dest="max_seconds")
    parser.add_argument("--threads", type=int)
    parser.add_argument("--set", action="append", help=f"override a config key: --set {set_example}")
    parser.add_argument("--quiet", action="store_true")


def train_config(args: argparse.Namespace) -> TrainConfig:
    """The config file (if any), then --data/--out/--steps, then `--set key=value`."""
    config = load_config(args.config, TrainConfig) if args.config else TrainConfig()
    if args.data:
        config.data = list(args.data)
    take_given(config, args, ("out", "steps", "max_seconds", "threads"))
    apply_overrides(config, args.set)
    return config


def train(args: argparse.Namespace) -> int:
    from ..models.motion.train import train as run

    result = run(train_config(args), progress=not args.quiet)
    print(json.dumps(result, indent=2))
    return 0


def export(args: argparse.Namespace) -> int:
    from ..models.motion.export import export_onnx
    from ..models.motion.generator import MotionModel

    model = MotionModel.load(args.model)
    path = export_onnx(model.net, args.out or f"{args.model}/denoiser.onnx")
    result = {"onnx": str(path)}
    if args.int8:
        from ..models.onnx import quantize_int8

        result["int8"] = str(quantize_int8(path))
    print(json.dumps(result))
    return 0


def eval_train(args: argparse.Namespace) -> int:
    from ..models.eval.evaluator import EvaluatorTrainConfig, train_evaluator

    config = EvaluatorTrainConfig(data=list(args.data), out=args.out, export=args.export or "")
    take_given(config, args, ("steps", "max_seconds", "threads", "batch"))
    apply_overrides(config, args.set)
    print(json.dumps(train_evaluator(config, progress=not args.quiet), indent=2))
    return 0


# The EvalConfig fields `kirin eval` takes as given, from its arguments of the same names.
EVAL_AS_GIVEN = ("cache", "split", "samples", "steps", "guidance", "mm_prompts", "mm_repeats", "smooth",
                 "backend", "seed", "threads", "strength")


def evaluate(args: argparse.Namespace) -> int:
    from ..models.eval.evaluate import REFERENCE_ROWS, ROWS, EvalConfig, format_table, write_report
    from ..models.eval.evaluate import evaluate as run

    config = EvalConfig(
        model=args.model or "",
        rows=tuple(args.rows) if args.rows else ROWS if args.model else REFERENCE_ROWS,
        clean=not args.no_clean,
        skin=not args.no_skin,
        bank=args.bank or "",
        **{name: getattr(args, name) for name in EVAL_AS_GIVEN},
    )
    if args.evaluator:
        config.evaluator = args.evaluator
    report = run(config, progress=not args.quiet)
    if args.json:
        write_report(report, args.json)
    print(format_table(report))
    return 0


def bounds(args: argparse.Namespace) -> int:
    from ..models.data.cache import FeatureCache
    from ..models.eval.evaluate import data_bounds

    found = data_bounds(FeatureCache(args.cache), args.split, args.samples, args.quantile)
    if args.model:
        card_path = Path(args.model) / "model.json"
        card = json.loads(card_path.read_text())
        card["bounds"] = found
        card_path.write_text(json.dumps(card, indent=2) + "\n")
    print(json.dumps(found, indent=2))
    return 0


def bank_build(args: argparse.Namespace) -> int:
    import torch

    from ..models.motion.bank import build_bank

    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    cache = build_bank(
        args.out, clips=args.clips, seed=args.seed, workers=args.workers, progress=not args.quiet
    )
    print(json.dumps({"bank": str(cache), "seconds": round(time.perf_counter() - started, 1)}))
    return 0


def _add_cache_parser(data_sub: argparse._SubParsersAction) -> None:
    c = data_sub.add_parser("cache", help="features of clip folders for training (needs torch)")
    c.add_argument("sources", nargs="+", help="clip folders from `kirin data build` / `kirin data ingest`")
    c.add_argument("--out", required=True)
    c.add_argument("--max-clips", type=int)
    c.add_argument("--workers", type=int, default=1)
    c.add_argument("--image-encoder", help="a local ONNX image encoder (default EfficientNet-Lite0)")
    c.add_argument("--threads", type=int, default=1, help="torch threads for the encoders")
    c.add_argument("--quiet", action="store_true")
    c.set_defaults(func=cache)


def _add_training_parsers(sub: argparse._SubParsersAction) -> None:
    """`train` (the motion model), `export` (its ONNX) and `eval-train` (the text-motion evaluator)."""
    t = sub.add_parser("train", help="train the motion model (resumes; torchrun for several processes)")
    t.add_argument("--config", help="JSON TrainConfig (models/motion/config.py)")
    t.add_argument("--data", nargs="*", help="feature caches")
    t.add_argument("--out")
    add_run_arguments(t)
    t.set_defaults(func=train)
    e = sub.add_parser("export", help="export a trained denoiser to ONNX")
    e.add_argument("--model", required=True, help="folder with denoiser.safetensors and model.json")
    e.add_argument("--out")
    e.add_argument("--int8", action="store_true", help="also write a dynamic int8 quantised copy")
    e.set_defaults(func=export)
    v = sub.add_parser("eval-train", help="train the text-motion evaluator (resumes) on feature caches")
    v.add_argument("--data", nargs="+", required=True, help="feature caches (train split)")
    v.add_argument("--out", default="runs/evaluator", help="checkpoint, log, weights and card")
    v.add_argument("--export", help="also write the final weights + card here, e.g. models/weights/evaluator")
    add_run_arguments(v, set_example="lr=5e-4 or model.width=96", batch=True)
    v.set_defaults(func=eval_train)


def _add_bank_parser(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser("bank", help="the library Generate Motion retrieves from").add_subparsers(
        dest="bank_command", required=True
    )
    bb = b.add_parser("build", help="build the default bank (a procedural library and its feature cache)")
    bb.add_argument("--out", help="folder (default: $KIRIN_BANK or ~/.cache/kirin/bank)")
    bb.add_argument("--clips", type=int, default=1200)
    bb.add_argument("--seed", type=int, default=7)
    bb.add_argument("--workers", type=int, default=2)
    bb.add_argument("--threads", type=int, default=1, help="torch threads for the encoders")
    bb.add_argument("--quiet", action="store_true")
    bb.set_defaults(func=bank_build)


def _add_evaluation_parsers(sub: argparse._SubParsersAction) -> None:
    """`bounds` (a model's per-clip metric bounds) and `eval` (the evaluation table)."""
    d = sub.add_parser("bounds", help="per-clip metric bounds of a model, from the library's own clips")
    d.add_argument("--cache", required=True, help="feature cache whose clips set the bounds")
    d.add_argument("--model", help="motion model folder: its model.json gets the bounds")
    d.add_argument("--split", default="test", choices=["test", "zero_shot", "authored", "train"])
    d.add_argument("--samples", type=int, default=400)
    d.add_argument("--quantile", type=float, default=0.95)
    d.set_defaults(func=bounds)
    r = sub.add_parser("eval", help="Kirin's evaluation table (R-Precision, FID, ...) of a motion model")
    r.add_argument("--model", help="motion model folder; without it only ground truth and retrieval rows")
    r.add_argument("--cache", required=True, help="feature cache whose clips are evaluated")
    r.add_argument("--evaluator", help="text-motion evaluator folder (default: the shipped one)")
    r.add_argument("--split", default="test", choices=["test", "zero_shot", "authored", "train"])
    r.add_argument("--samples", type=int, default=0, help="clips evaluated (a fixed random subset; 0: all)")
    r.add_argument("--steps", type=int, help="DDIM steps (model default)")
    r.add_argument("--guidance", type=float, help="classifier-free guidance scale (model default)")
    r.add_argument("--mm-prompts", type=int, default=8, dest="mm_prompts", help="prompts for Multimodality")
    r.add_argument("--mm-repeats", type=int, default=4, dest="mm_repeats", help="generations per such prompt")
    r.add_argument("--rows", nargs="+", help="rows to compute (default: all)")
    r.add_argument("--no-clean", action="store_true", dest="no_clean", help="skip the foot-lock clean-up")
    r.add_argument("--no-skin", action="store_true", dest="no_skin", help="no mesh features")
    r.add_argument("--smooth", type=float, default=1.0, help="temporal smoothing sigma in frames (0: off)")
    r.add_argument("--bank", help="feature cache to retrieve from: generation starts from its closest clip")
    r.add_argument(
        "--strength", type=float, default=0.0, help="noise on a retrieved clip (0: as is, 1: ignored)"
    )
    r.add_argument("--backend", default="torch", choices=["torch", "onnx"])
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--json", help="write the report here")
    r.add_argument("--quiet", action="store_true")
    r.set_defaults(func=evaluate)


def add_parsers(sub: argparse._SubParsersAction, data_sub: argparse._SubParsersAction) -> None:
    """Register the torch-side subcommands on the `kirin` parser (arguments only; nothing imported):
    `data cache`, then `train`, `export`, `eval-train`, `bank`, `bounds`, `eval` (as `kirin --help`
    lists them)."""
    _add_cache_parser(data_sub)
    _add_training_parsers(sub)
    _add_bank_parser(sub)
    _add_evaluation_parsers(sub)
