"""Auto-Bind's headline (issue 20): the held-out characters' weights, alone and end to end.

For every character of data/bind_heldout.txt (no fit, training or calibration sees them), as
benchmarks/bench_autobind.py measures a character: record the artist's deformed mesh over its clips,
strip the rig, fit the template (the family its asset set names, else detected), and skin the mesh
with each weight set — ours learned ("learned"), ours today ("heat+prior", Auto-Bind's "blend"),
Blender's bone heat (Automatic Weights on the welded mesh) — plus the artist's own weights moved
onto the fitted bones.

- **Weights alone** (the headline): for each weight set, the fitted bones posed to best reproduce
  the artist's own deformation (bench_autobind.best_pose_errors), then the mean vertex error in % of
  the diagonal. What is left is the weights' error, and the fitted bones' layout.
- **End to end**: the artist's clips retargeted onto the fitted rig, then deformed by each set.

Goals (held-out): ours by weights alone ≤ 0.5× bone heat's error median and ≤ 1.5× the artist's
own weights' error median (the medians over the characters).

Run: .venv/bin/python benchmarks/bench_autobind_heldout.py [--only Cow ...] [--json out.json]
     (2 cores: about a minute a character)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from kirin.kirin_addon.io.scratch import private_blender_resources

private_blender_resources("kirin-bench-")

import bpy  # noqa: E402
import numpy as np  # noqa: E402

from kirin.benchmarks import bench_autobind as bench  # noqa: E402

SETS = ("learned", "heat+prior", "BoneHeat")  # ours learned, ours today, Blender's bone heat
COLUMNS = (("learned", "learned"), ("heat+prior", "today"), ("BoneHeat", "bone heat"), ("artist", "artist"))
GOAL_VS_BONE_HEAT, GOAL_VS_ARTIST = 0.5, 1.5


def heldout_rows(assets: Path, only: list[str] | None) -> list[tuple[str, Path, str | None]]:
    held = bench.held_out(assets)
    return [row for row in bench.skeleton_rows(assets, only) if row[1] in held]


def measure_character(name: str, source: Path, family: str | None, frames: int) -> dict:
    """One held-out character, as bench_autobind.benchmark_character measures it. Where no fitted
    joint maps to an artist's joint (the retarget has nothing to move: some blob monsters) there is no
    end-to-end number, and the artist's weights go onto the fitted bones by nearest joint."""
    start = time.perf_counter()
    subject, _ = bench.record_subject(name, source, frames, np.random.default_rng(0))
    fitted = bench.fit_skeleton(subject, family)
    skins = bench.skin_all(subject, fitted, SETS)
    row = {"character": name, "source": str(source), "family_asked": family or "detect",
           "family": fitted.fit.family, "fit_quality": fitted.fit.quality,
           "vertices": int(len(subject.vertices)),
           "poses": subject.pose_source, "skeleton": bench.skeleton_chamfer(subject, fitted)}
    try:
        result = bench.retarget_poses(subject, fitted, align_rest=False)
    except ValueError as exc:
        mapping, row["retarget"] = {}, f"not measured: {exc}"
    else:
        mapping = dict(result.mapping)
        poses = bench.forward_kinematics(fitted.rig, result.motion)
        row["methods"] = {m: bench.measure(subject, fitted, w, poses) for m, (w, _, _) in skins.items()}
    artist = bench.mapped_artist_weights(subject, fitted, mapping)
    if "methods" in row:
        row["floor"] = bench.measure(subject, fitted, artist, poses)
    row["best_pose"] = bench.best_pose_errors(subject, fitted, skins, artist)
    row["seconds"] = {"weights": {m: s for m, (_, s, _) in skins.items()},
                      "total": time.perf_counter() - start}
    return row


def errors_of(row: dict) -> dict[str, dict[str, float]]:
    """Mean error (%) of each set, weights alone ("alone") and end to end ("retargeted")."""
    best = row["best_pose"]
    alone = {m: best["methods"][m]["mean"] for m in SETS} | {"artist": best["references"]["artist"]["mean"]}
    if "methods" not in row:
        return {"alone": alone}
    retargeted = {m: row["methods"][m]["mean"] for m in SETS} | {"artist": row["floor"]["mean"]}
    return {"alone": alone, "retargeted": retargeted}




def summary(rows: list[dict]) -> dict:
    """Medians over the characters and the goals' verdicts (ratios of the medians, and the median and
    count of each character's own ratio)."""
    out: dict = {}
    for kind in ("alone", "retargeted"):
        errors = [r["errors"][kind] for r in rows if kind in r["errors"]]
        medians = {key: float(np.median([e[key] for e in errors])) for key, _ in COLUMNS}
        own = {ref: [e["learned"] / e[ref] for e in errors] for ref in ("BoneHeat", "artist", "heat+prior")}
        out[kind] = {"characters": len(errors), "median_pct": medians,
                     "learned_over_bone_heat": medians["learned"] / medians["BoneHeat"],
                     "learned_over_artist": medians["learned"] / medians["artist"],
                     "today_over_bone_heat": medians["heat+prior"] / medians["BoneHeat"],
                     "artist_over_bone_heat": medians["artist"] / medians["BoneHeat"],
                     "per_character_median": {k: float(np.median(v)) for k, v in own.items()},
                     "within_half_bone_heat": int(sum(v <= GOAL_VS_BONE_HEAT for v in own["BoneHeat"])),
                     "learned_beats_today": int(sum(v < 1.0 for v in own["heat+prior"]))}
    alone = out["alone"]
    ok = (alone["learned_over_bone_heat"] <= GOAL_VS_BONE_HEAT
          and alone["learned_over_artist"] <= GOAL_VS_ARTIST)
    out["goal"] = (f"{'PASS' if ok else 'FAIL'}: weights alone, learned ≤ {GOAL_VS_BONE_HEAT}× bone heat's "
                   f"median ({alone['learned_over_bone_heat']:.2f}×) and ≤ {GOAL_VS_ARTIST}× the artist's "
                   f"({alone['learned_over_artist']:.2f}×), n={len(rows)}")
    return out


def line(row: dict) -> str:
    cells = [f"{row['character']:<40}", f"{row['family']:<10}"]
    for kind in ("alone", "retargeted"):
        errors = row["errors"].get(kind)
        if errors is None:
            cells += [f"{'–':>6}"] * len(COLUMNS) + [f"{'–':>5}"]
            continue
        cells += [f"{errors[key]:6.2f}" for key, _ in COLUMNS]
        cells.append(f"{errors['learned'] / errors['BoneHeat']:5.2f}")
    cd = row["skeleton"]["cd_j2j_pct"]
    return "  ".join(cells) + f"  {cd:5.2f}  {row['seconds']['total']:5.0f}"


def header() -> str:
    names = [f"{label[:6]:>6}" for _, label in COLUMNS]
    return "  ".join([f"{'character (held out)':<40}", f"{'template':<10}", *names, "L/BH ", *names, "L/BH ",
                      "CD-J2J", "    s"]) + "\n" + (" " * 52 + "weights alone (best pose), mean % of diagonal"
                                         + " " * 4 + "end to end (retargeted clips)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assets", type=Path, default=bench.DEFAULT_ASSETS)
    parser.add_argument("--only", nargs="+")
    parser.add_argument("--frames", type=int, default=16)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    subjects = heldout_rows(args.assets, args.only)
    if not subjects:
        print(f"No held-out characters under {args.assets}.", file=sys.stderr)
        return 1
    print(header(), flush=True)
    rows = []
    for name, source, family in subjects:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        row = measure_character(name, source, family, args.frames)
        row["errors"] = errors_of(row)
        rows.append(row)
        print(line(row), flush=True)
    result = summary(rows)
    for kind in ("alone", "retargeted"):
        print(f"{kind}: {json.dumps(result[kind])}")
    print(result["goal"])
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"characters": rows, "summary": result}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
