"""Generated motion against the authored clips of held-out rigs, measured on the deformed mesh.

Issues 17 and 31's "measure first". For each held-out authored rig (motion_real_sets: issue 17's
Quaternius animals, dinosaurs, monsters, a goblin and a robot, and issue 31's held-out rigs of every
source — a mech, the rat, two more monsters, the Mesh2Motion horse, CesiumMan, RobotExpressive, the
luanti spider — which no training run, bank or calibration sees) and each CMU subject-07 walk (joints
only), the rig's own clips are read as actions (walk, run/gallop, idle,
eat, attack, jump, death, hit: `describe_clip_name` of the action's name, or of the trial's text in
cmu_descriptions.csv), one clip per kind. Each gets a prompt (--prompt-style: "caption", the library's
canonical paraphrase, "A husky walks."; "heldout", the held-out caption style; "label", the raw clip
name). Generation runs the panel's path: the scene's Kirin settings (prompt, frames, seed, one variant)
and `bpy.ops.kirin.generate_motion`, its backend started from the checkout's .venv.

Both the generated action and the authored clip are then measured the same way
(`kirin_addon/eval/gait.py`): each foot's sole (the lowest ~10 % of the vertices weighted mostly to the
foot's bones; motion_real_support's docstring says how the feet are found) tracked on the evaluated mesh,
the mesh centroid as the body path, the rest mesh's lowest vertex as the floor. An authored clip is
first cut to its motion (a BVH's opening T-pose frame and a hold at the end left out:
`support.motion_span`). An authored locomotion clip that walks in place is a loop: it is cycled to
--frames frames (and at least twice) so it spans as many strides as the generated one; a take that
travels (the CMU walks) plays once, over its own length — cycled, its body would jump back to its start
at each wrap; other clips play once. Generated clips always have --frames frames: every measure is a
rate or a share, so the lengths need not match. A CMU take is drawn from the side of the way it walks
(`support.posed_forward`), each bone a box square to it. Game clips walk in place: a clip whose body
does not travel, authored or generated, is read by gait.py's in-place rule (a foot is planted while it
moves backward relative to the body in the lower half of its height range; each foot on its own belt,
the body on the median belt: stride and travel come from those belts; the row's treadmill_speed is the
authored median belt, in body sizes/s). Clips that travel keep the ground rule. Locomotion cases get
`gait_verdict(generated, authored, kind)`.

The table prints generated/authored per measure; the summary line the share of locomotion cases that
are gait-like (by issue 17's bounds, and by issue 31's looser ones: eval/gait.HELD_OUT_RULES) and the
median ratio generated/authored of each measure over them, overall, source by source
(motion_real_sets.SOURCES) and over issue 17's set alone. A filmstrip per case
(--filmstrips DIR, default docs/motion_real; Workbench, fixed orthographic side camera, checker floor):
8 frames of the authored clip (once) above 8 of the generated one. These are renders of third-party
assets: never committed (.gitignore).

The main job's output is measured the same way: --measure-blend out/kirin.blend (its "Kirin:" actions).

Run: .venv/bin/python benchmarks/bench_motion_real.py [--rigs Husky Dog 007_0] [--issue17] [--files F…]
     [--frames 96] [--seed 0]
     [--prompt-style caption|heldout|label] [--no-filmstrips] [--filmstrips DIR] [--json out.json]
     [--assets ../shared/assets] [--device cpu] [--threads 0]
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
from kirin.benchmarks import motion_real_recall as recall_support  # noqa: E402
from kirin.benchmarks import motion_real_sets as sets  # noqa: E402
from kirin.benchmarks import motion_real_support as support  # noqa: E402
from kirin.kirin_addon.eval.gait import (  # noqa: E402
    HELD_OUT_RULES,
    FootTrack,
    GaitInput,
    gait_verdict,
    measure_gait,
)
from kirin.kirin_addon.eval.gait import KINDS as VERDICT_KINDS  # noqa: E402
from kirin.kirin_addon.library.captions.heldout import heldout_caption  # noqa: E402
from kirin.kirin_addon.library.captions.paraphrase import paraphrases  # noqa: E402
from kirin.operators.headless import common as headless  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT.parent / "shared" / "assets"
FILMSTRIPS = ROOT / "docs" / "motion_real"
PROMPT_STYLES = ("caption", "heldout", "label")
# The measures of the table, in its order, with their column heads and formats.
COLUMNS = (("duty", "duty", ".2f"), ("frequency_hz", "Hz", ".2f"), ("contralateral", "contra", "+.2f"),
           ("contralateral_phase", "c.ph", ".2f"), ("diagonal", "diag", "+.2f"),
           ("diagonal_phase", "d.ph", ".2f"),
           ("stance_slide", "slide", ".3f"), ("penetration", "pen", ".3f"), ("travel_speed", "speed", ".2f"),
           ("stride_length", "stride", ".2f"), ("swing_amplitude", "swing", ".2f"),
           ("foot_lift", "lift", ".3f"), ("jerk", "jerk", ".0f"))
RATIO_KEYS = ("duty", "frequency_hz", "stance_slide", "travel_speed", "stride_length", "swing_amplitude",
              "foot_lift", "jerk", "jerk_smoothed")
VERDICT_ALIASES = {"canter": "gallop", "bound": "gallop", "pace": "walk"}


@dataclass
class Options:
    frames: int = 96
    seed: int = 0
    prompt_style: str = "caption"
    filmstrips: Path | None = FILMSTRIPS
    locomotion_only: bool = False
    two_segments: bool = True  # a "walks, then runs" case on rigs with both clips
    recall: list | None = None  # other actions' cases are collected here for the evaluator's R@1
    authored_length: bool = False  # other actions generated as long as the rig's own clip, not `frames`


# ----------------------------------------------------------------------------- cases
def rig_files(assets: Path, rigs: list[str] | None = None, issue17: bool = False) -> list[Path]:
    """The held-out rig files (every source's, or with `issue17` issue 17's alone) and CMU walks present
    under `assets`, filtered by substrings of the path."""
    listed = support.RIG_FILES if issue17 else sets.held_out_relative()
    files = [assets / f for f in listed if (assets / f).exists()] + sorted(assets.glob(support.CMU_GLOB))
    if rigs:
        files = [f for f in files if any(r.lower() in str(f.relative_to(assets)).lower() for r in rigs)]
    return files


def prompt_for(clip: support.Clip, style: str, seed: int) -> str:
    if style == "label":
        return clip.label.replace("_", " ")
    if style == "heldout":
        return heldout_caption(clip.description, seed)
    return paraphrases(clip.description, n=1, seed=seed)[0]


def verdict_kind(clip: support.Clip) -> str:
    """The gait the verdict checks: the clip's action word where gait.py knows it, else its kind."""
    word = VERDICT_ALIASES.get(clip.action_word, clip.action_word)
    return word if word in VERDICT_KINDS else clip.kind


# ----------------------------------------------------------------------------- measuring
def gait_input(character: support.Character, tracks: support.Tracks, fps: float) -> GaitInput:
    feet = tuple(FootTrack(f.name, f.side, f.end, tracks.soles[k]) for k, f in enumerate(character.feet))
    return GaitInput(fps, feet, tracks.body, character.body_size, character.floor, tracks.vertices)


def measure(character: support.Character, action, frames: list[int]):
    """(GaitMeasures, Tracks) of `action` played at `frames` (an in-place clip is read on belts by
    gait.py itself)."""
    support.use_action(character.arm, action)
    tracks = support.track(character, frames)
    return measure_gait(gait_input(character, tracks, scene_fps())), tracks


def measure_authored(character: support.Character, action, frames: int, loop: bool):
    """(frames played, GaitMeasures, Tracks) of an authored clip: played once, and when it is a loop
    that does not travel (an in-place game cycle) cycled to `frames` frames so it spans as many strides
    as the generated clip, and at least twice (a loop of one stride has two touchdowns per foot only
    then). A take that travels is measured over its own length: cycling it would carry the body back to
    its start at every wrap. Frames that are not motion (`support.motion_span`: a BVH's opening T-pose,
    a hold at the end) are left out first."""
    once = support.clip_frames(action, 0, loop)
    measures, tracks = measure(character, action, once)
    span = support.motion_span(tracks, character.body_size, loop)
    if (span.start, span.stop) != (0, len(once)):
        once = once[span]
        measures, tracks = measure(character, action, once)
    tracks.clip_length = len(once)
    if not loop or not measures.in_place:
        return once, measures, tracks
    cycled = [once[k % len(once)] for k in range(max(frames, 2 * len(once)))]
    measures, tracks = measure(character, action, cycled)
    tracks.clip_length = len(once)
    return cycled, measures, tracks


def scene_fps() -> float:
    render = bpy.context.scene.render
    return render.fps / render.fps_base


def generate(character: support.Character, prompt: str, options: Options) -> tuple[bpy.types.Action, dict]:
    """Generate Motion through the panel's settings and operator; the new action and the run's report."""
    headless.activate(character.arm)
    scene = bpy.context.scene
    scene.frame_start = 1
    settings = scene.kirin
    settings.prompt, settings.frames = prompt, options.frames
    settings.seed, settings.variants = options.seed, 1
    run = headless.run_operator(bpy.ops.kirin.generate_motion,
                                "Generate Motion failed (Blender printed the reason above)",
                                error=support.Unmeasurable)
    return character.arm.animation_data.action, run


def reference_problem(authored, kind: str, clip_kind: str, feet: int) -> str | None:
    """Why an authored locomotion clip is not a usable reference (None when it is): it must read as the
    gait it is named — a stride frequency, a walk's feet down at least 0.45 of the cycle, and for walks
    and runs of two- and four-legged rigs (not gallops) left and right alternating (≤ −0.5)."""
    if authored.frequency_hz is None:
        return "no stride frequency"
    if clip_kind == "walk" and authored.duty < 0.45:
        return f"walk duty {authored.duty:.2f} < 0.45"
    alternating = kind != "gallop" and feet in (2, 4)
    if alternating and (authored.contralateral is None or authored.contralateral > -0.5):
        return f"left/right not alternating ({authored.contralateral})"
    return None


def ratio(generated, authored) -> float | None:
    if generated is None or authored is None or abs(authored) < 1e-12:
        return None
    return float(generated) / float(authored)


def feet_row(character: support.Character) -> list[dict]:
    rig = character.rig
    return [{"name": f.name, "side": f.side, "end": f.end, "bone": rig.names[f.joints[0]],
             "sole_vertices": int(sum(len(v) for v in f.sole.values())) or len(f.sole_joints)}
            for f in character.feet]


def run_case(character: support.Character, clip: support.Clip, options: Options) -> dict:
    """One clip: authored and generated measured, verdict (locomotion), filmstrip; the row."""
    action = bpy.data.actions[clip.action]
    loop = clip.kind in support.LOCOMOTION
    prompt = prompt_for(clip, options.prompt_style, options.seed)
    row = {"rig": character.path.stem, "clip": clip.action, "kind": clip.kind, "prompt": prompt,
           "fps": scene_fps(), "feet": feet_row(character), "reason": None}
    began = time.perf_counter()
    authored_frames, authored, authored_tracks = measure_authored(character, action, options.frames, loop)
    once = authored_frames[:authored_tracks.clip_length]
    frames = len(once) if options.authored_length and not loop else options.frames
    made, run = generate(character, prompt, replace(options, frames=max(frames, 8)))
    row["seconds_generate"] = round(time.perf_counter() - began, 3)
    variant = run["variants"][0]
    row.update({key: variant.get(key) for key in ("path", "tempo", "rig_shape")})
    generated_frames = list(range(1, max(frames, 8) + 1))
    generated, generated_tracks = measure(character, made, generated_frames)
    row.update(frames={"authored": len(authored_frames), "authored_clip": len(once),
                       "generated": len(generated_frames)},
               authored=authored.as_dict(), generated=generated.as_dict(),
               ratios={k: ratio(getattr(generated, k), getattr(authored, k)) for k in RATIO_KEYS})
    row["treadmill_speed"] = authored.belt_speed  # body sizes/s; None for a clip that travels
    row["verdict"] = gait_verdict(generated, authored, verdict_kind(clip)) if loop else None
    row["verdict_held_out"] = (gait_verdict(generated, authored, verdict_kind(clip), HELD_OUT_RULES)
                               if loop else None)
    row["verdict_kind"] = verdict_kind(clip) if loop else None
    feet = len(character.feet)
    problem = reference_problem(authored, verdict_kind(clip), clip.kind, feet) if loop else None
    row["reference_usable"] = None if not loop else problem is None
    row["reference_problem"] = problem
    if options.filmstrips is not None:
        bounds = (np.minimum(authored_tracks.lo, generated_tracks.lo),
                  np.maximum(authored_tracks.hi, generated_tracks.hi))
        strips = [filmstrips.Strip(action, once, f"authored: {clip.label}"),
                  filmstrips.Strip(made, generated_frames, f"generated: {prompt}")]
        name = f"{character.path.stem}_{clip.label}".replace(" ", "_").replace("|", "_")
        heading = support.posed_forward(character, authored_tracks)
        path = filmstrips.filmstrip(character, strips, bounds, options.filmstrips / f"{name}.png", heading)
        row["filmstrip"] = str(path)
    if options.recall is not None and not loop:
        options.recall.append(recall_support.read_case(character, clip, prompt, made, action, once))
    row["seconds"] = round(time.perf_counter() - began, 3)
    return row


def run_two_segments(character: support.Character, first: support.Clip, second: support.Clip,
                     options: Options) -> list[dict]:
    """A two-segment prompt ("A husky walks, then runs."), twice --frames long: each half measured on its
    own against the rig's authored clip of that gait (one row per half, `segment` 1 and 2)."""
    prompt = f"A {character.species} walks, then runs."
    frames = options.frames
    made, _ = generate(character, prompt, Options(2 * frames, options.seed, options.prompt_style, None))
    rows = []
    for k, clip in enumerate((first, second)):
        action = bpy.data.actions[clip.action]
        _, authored, _ = measure_authored(character, action, frames, True)
        generated, _ = measure(character, made, list(range(1 + k * frames, 1 + (k + 1) * frames)))
        kind = verdict_kind(clip)
        problem = reference_problem(authored, kind, clip.kind, len(character.feet))
        rows.append({"rig": character.path.stem, "clip": clip.action, "kind": clip.kind, "prompt": prompt,
                     "segment": k + 1, "feet": feet_row(character), "reason": None,
                     "authored": authored.as_dict(), "generated": generated.as_dict(),
                     "ratios": {key: ratio(getattr(generated, key), getattr(authored, key))
                                for key in RATIO_KEYS},
                     "verdict": gait_verdict(generated, authored, kind), "verdict_kind": kind,
                     "verdict_held_out": gait_verdict(generated, authored, kind, HELD_OUT_RULES),
                     "reference_usable": problem is None, "reference_problem": problem})
    return rows


def run_file(path: Path, options: Options, descriptions: dict[str, str]) -> list[dict]:
    """Every case of one rig file; a file or case that cannot be measured gives a row with the reason."""
    support.clear_scene()
    base = {"rig": path.stem, "file": str(path)}
    try:
        character, actions = support.load_character(path, headless.import_rig_file)
    except Exception as exc:  # noqa: BLE001 — an import error is a reported case, not a crash
        return [{**base, "clip": None, "kind": None, "reason": f"{type(exc).__name__}: {exc}"}]
    texts = {a.name: descriptions[path.stem] for a in actions if path.stem in descriptions}
    clips = support.read_clips(character, actions, texts)
    if options.locomotion_only:
        clips = [clip for clip in clips if clip.kind in support.LOCOMOTION]
    if not clips:
        return [{**base, "clip": None, "kind": None,
                 "reason": f"no clip reads as a known action ({', '.join(a.name for a in actions)})"}]
    rows = []
    for clip in clips:
        try:
            rows.append({**base, **run_case(character, clip, options)})
        except Exception as exc:  # noqa: BLE001 — one failed case must not drop the others
            reason = f"{type(exc).__name__}: {exc}"
            rows.append({**base, "clip": clip.action, "kind": clip.kind, "reason": reason})
    by_kind = {clip.kind: clip for clip in clips}
    if options.two_segments and {"walk", "run"} <= set(by_kind):
        try:
            halves = run_two_segments(character, by_kind["walk"], by_kind["run"], options)
            rows += [{**base, **row} for row in halves]
        except Exception as exc:  # noqa: BLE001
            rows.append({**base, "clip": "walk, then run", "kind": "walk", "segment": 1,
                         "reason": f"{type(exc).__name__}: {exc}"})
    return rows


# ----------------------------------------------------------------------------- report
def _cell(generated: dict, authored: dict, key: str, fmt: str) -> str:
    def one(value) -> str:
        return "–" if value is None else format(value, fmt)

    return f"{one(generated.get(key))}/{one(authored.get(key))}"


def table(rows: list[dict]) -> str:
    """One line per case: generated/authored for each measure, then the verdict."""
    heads = ["case", "kind", "feet", *(h for _, h, _ in COLUMNS), "verdict"]
    lines = [" | ".join(heads), "-" * 120]
    for row in rows:
        case = f"{row['rig']}/{support.clip_label(row['clip'] or '-')}"
        if row.get("segment"):
            case += f" (walk, then run: part {row['segment']})"
        if row.get("reason"):
            lines.append(f"{case} | {row.get('kind') or '-'} | not measured: {row['reason']}")
            continue
        cells = [_cell(row["generated"], row["authored"], key, fmt) for key, _, fmt in COLUMNS]
        verdict = row.get("verdict")
        if verdict is None:
            text = "-"
        else:
            failed = [k for k, v in verdict.items() if not v and k != "gait_like"]
            text = "gait-like" if verdict["gait_like"] else "fails " + ",".join(failed)
            if not row.get("reference_usable", True):
                text = f"not a usable reference ({row['reference_problem']}); {text}"
        lines.append(" | ".join([case, row["kind"], str(len(row["feet"])), *cells, text]))
    return "\n".join(lines)


def summary(rows: list[dict]) -> dict:
    """Share of locomotion cases that are gait-like; median generated/authored ratio per measure."""
    locomotion = [r for r in rows if r.get("verdict") is not None and not r.get("segment")]
    judged = [r for r in locomotion if r.get("reference_usable")]
    halves = [r for r in rows
              if r.get("segment") and r.get("verdict") is not None and r.get("reference_usable")]
    medians = {}
    for key in RATIO_KEYS:
        values = [r["ratios"][key] for r in judged if r["ratios"].get(key) is not None]
        medians[key] = float(np.median(values)) if values else None
    return {"cases": len(rows), "measured": sum(1 for r in rows if not r.get("reason")),
            "not_measured": sum(1 for r in rows if r.get("reason")), "locomotion": len(judged),
            "unusable_reference": len(locomotion) - len(judged),
            "gait_like": sum(1 for r in judged if r["verdict"]["gait_like"]),
            "gait_like_held_out_rules": sum(1 for r in judged if r["verdict_held_out"]["gait_like"]),
            "checks_passed": {k: sum(1 for r in judged if r["verdict"][k]) for k in
                              (judged[0]["verdict"] if judged else {})},
            "median_ratio": medians,
            "two_segment_halves": len(halves),
            "two_segment_gait_like": sum(1 for r in halves if r["verdict"]["gait_like"])}


def by_source(rows: list[dict], assets: Path) -> dict[str, dict]:
    """`summary` of each source's rows (motion_real_sets.SOURCES), in the sources' order."""
    grouped: dict[str, list[dict]] = {}
    for row in rows:
        grouped.setdefault(sets.source_of(row["file"], assets), []).append(row)
    order = list(sets.SOURCES) + ["other"]
    return {source: summary(grouped[source]) for source in order if source in grouped}


def summary_line(info: dict) -> str:
    ratios = ", ".join(f"{k} {v:.2f}" for k, v in info["median_ratio"].items() if v is not None)
    share = f"{info['gait_like']}/{info['locomotion']}" if info["locomotion"] else "0/0"
    halves = f"; two-segment halves gait-like: {info['two_segment_gait_like']}/{info['two_segment_halves']}"
    share += f" ({info['gait_like_held_out_rules']}/{info['locomotion']} by issue 31's bounds)"
    return (f"locomotion cases gait-like: {share} (excluded: {info['unusable_reference']} whose authored "
            f"clip is not a usable reference); measured {info['measured']}/{info['cases']} cases; "
            f"median generated/authored over locomotion: {ratios or '-'}{halves}")


def recall_line(info: dict) -> str:
    if "reason" in info:
        return f"other actions: {info['reason']}"
    ratio = "–" if info["ratio_r1"] is None else f"{info['ratio_r1']:.2f}"
    actions = ", ".join(info["actions"])
    return (f"other actions ({info['cases']} cases: {actions}), the evaluator's R@1: generated "
            f"{info['generated_r1']:.2f}, authored {info['authored_r1']:.2f} (ratio {ratio}; chance "
            f"{info['chance_r1']:.2f}); R@3 {info['generated_r3']:.2f} / {info['authored_r3']:.2f}")


# ----------------------------------------------------------------------------- main
def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assets", type=Path, default=ASSETS)
    parser.add_argument("--rigs", nargs="*", help="substrings of the rig files' paths (Husky, 007_0, …)")
    parser.add_argument("--frames", type=int, default=96,
                        help="generated frames (authored in-place loops are cycled to as many)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--prompt-style", choices=PROMPT_STYLES, default="caption")
    parser.add_argument("--filmstrips", type=Path, default=FILMSTRIPS)
    parser.add_argument("--no-filmstrips", action="store_true")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--actions-at-authored-length", action="store_true",
                        help="generate the other actions as long as the rig's own clip of each (the "
                             "evaluator then compares clips of one length); default: --frames")
    parser.add_argument("--no-recall", action="store_true",
                        help="skip the evaluator's R@1 of the other actions")
    parser.add_argument("--measure-blend", type=Path,
                        help="only measure the 'Kirin:' actions of a .blend (the main job's --out)")
    parser.add_argument("--blend-fps", type=float, default=30.0, help="the frame rate they were made at")
    parser.add_argument("--files", nargs="*", type=Path,
                        help="these rig files (under --assets) instead of the held-out ones: to look at a "
                             "calibration rig, never for the held-out numbers")
    parser.add_argument("--issue17", action="store_true",
                        help="issue 17's held-out rigs alone (default: every source's held-out rigs)")
    parser.add_argument("--calibration", action="store_true",
                        help="the calibration rigs (every other authored rig, CMU 01–06), locomotion only")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=0)
    return parser.parse_args(argv)


def measure_blend(path: Path, fps: float, prefix: str = "Kirin:") -> list[dict]:
    """The gait of each action of a .blend named `prefix`… (the main job's variants, `kirin generate
    --out`), measured on its deformed mesh at `fps` (the frame rate it was generated at)."""
    character, actions = support.load_character(path, headless.import_rig_file)
    render = bpy.context.scene.render
    render.fps, render.fps_base = int(round(fps)), 1.0
    rows = []
    for action in sorted((a for a in actions if a.name.startswith(prefix)), key=lambda a: a.name):
        measures, _ = measure(character, action, support.clip_frames(action, 0, False))
        rows.append({"action": action.name, **measures.as_dict()})
        print(f"{action.name}: " + ", ".join(f"{k} {v:.2f}" for k, v in measures.as_dict().items()
                                           if k in ("duty", "frequency_hz", "contralateral", "diagonal",
                                                    "stance_slide", "penetration", "travel_speed")
                                           and v is not None))
    return rows


def main(argv: list[str] | None = None) -> dict:
    args = parse(argv)
    if args.measure_blend:
        return {"rows": measure_blend(args.measure_blend, args.blend_fps)}
    strips = None if args.no_filmstrips else args.filmstrips
    options = Options(args.frames, args.seed, args.prompt_style, strips, locomotion_only=args.calibration,
                      two_segments=not args.calibration, recall=None if args.no_recall else [],
                      authored_length=args.actions_at_authored_length)
    files = (support.calibration_files(args.assets) if args.calibration
             else rig_files(args.assets, args.rigs, args.issue17))
    if args.files:
        files = [f if f.is_absolute() else args.assets / f for f in args.files]
    if args.calibration and args.rigs:
        files = [f for f in files if any(r.lower() in str(f).lower() for r in args.rigs)]
    if not files:
        sys.exit(f"No held-out rig under {args.assets} matches {args.rigs or 'anything'}.")
    began = time.perf_counter()
    module = headless.start_with_backend(headless.BackendOptions(device=args.device, threads=args.threads))
    rows: list[dict] = []
    try:
        descriptions = {**support.cmu_descriptions(args.assets / support.CMU_DESCRIPTIONS), **sets.CLIP_TEXTS}
        for path in files:
            rows += run_file(path, options, descriptions)
    finally:
        headless.disable_extension(module)
    info = {**summary(rows), "seconds": round(time.perf_counter() - began, 1), "frames": args.frames,
            "seed": args.seed, "prompt_style": args.prompt_style}
    info["by_source"] = by_source(rows, args.assets)
    issue17 = {str(args.assets / f) for f in support.RIG_FILES}
    info["issue17"] = summary([r for r in rows if r["file"] in issue17 or "007_" in Path(r["file"]).stem])
    if options.recall:
        info["other_actions"] = recall_support.recall(options.recall)
    print(table(rows))
    print(summary_line(info))
    for source, part in info["by_source"].items():
        print(f"  {source}: {summary_line(part)}")
    print(f"  issue 17's held-out set: {summary_line(info['issue17'])}")
    if "other_actions" in info:
        print(recall_line(info["other_actions"]))
    print(f"{len(rows)} cases in {info['seconds']:.0f} s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"summary": info, "rows": rows}, indent=2))
    return {"summary": info, "rows": rows}


if __name__ == "__main__":
    main()
