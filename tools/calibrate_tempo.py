"""Write kirin_addon/generate/tempo_rigs.json, the calibration rigs' own tempi by their build.

Reads the JSON of a calibration run (every rig with authored clips but the held-out ones):

    .venv/bin/python benchmarks/bench_motion_real.py --calibration --no-filmstrips --no-recall \
        --json calib.json
    .venv/bin/python tools/calibrate_tempo.py calib.json

Each rig whose authored walk or run is a usable reference gives its build (rig_shape.FEATURES, as the
generation read it) and that clip's stride frequency and stance share, measured on its mesh. The
bandwidth and the prior's weight are chosen by leave-one-rig-out error of the log frequency and the
stance share; the error when a whole pack (folder) is left out is printed beside it, as the error for a
rig unlike any calibration rig's.
"""

from __future__ import annotations

import argparse
import json
import sys
from itertools import product
from pathlib import Path

import numpy as np

from kirin.benchmarks.motion_real_sets import is_held_out
from kirin.kirin_addon.generate.rig_shape import FEATURES, RigShape
from kirin.kirin_addon.generate.tempo import PRIOR_GAIT, TABLE_PATH, TEMPI, TempoTable

ASSETS = Path(__file__).resolve().parents[2] / "shared" / "assets"
BANDWIDTHS = (0.1, 0.2, 0.35, 0.5, 0.75, 1.0)
PRIOR_WEIGHTS = (0.25, 0.5, 1.0, 2.0, 4.0)
DUTY_WEIGHT = 3.0  # a stance share 0.1 off counts as a frequency 35 % off


def rig_name(path: str, assets: Path) -> str:
    try:
        return str(Path(path).relative_to(assets).with_suffix(""))
    except ValueError:
        return Path(path).stem


def table_rigs(rows: list[dict], assets: Path) -> list[dict]:
    """One entry per rig: its family, build, and the authored walk and run that are usable references."""
    rigs: dict[str, dict] = {}
    for row in rows:
        if row.get("reason") or not row.get("rig_shape") or not row.get("reference_usable"):
            continue
        if row.get("segment") or row.get("kind") not in ("walk", "run"):
            continue
        if is_held_out(row["file"], assets):
            raise SystemExit(f"{row['file']} is a held-out rig: this is not a calibration run")
        shape = row["rig_shape"]
        name = rig_name(row["file"], assets)
        entry = rigs.setdefault(name, {"rig": name, "family": shape["family"],
                                       "shape": [shape[key] for key in FEATURES]})
        authored = row["authored"]
        entry[row["kind"]] = {"frequency": round(authored["frequency_hz"], 4),
                              "duty": round(authored["duty"], 4)}
    return sorted(rigs.values(), key=lambda rig: rig["rig"])


def scales_of(rigs: list[dict]) -> dict[str, list[float]]:
    """Per family, each feature's unit: its spread over the family's rigs (a constant one counts 1)."""
    out = {}
    for family in sorted({rig["family"] for rig in rigs}):
        values = np.array([rig["shape"] for rig in rigs if rig["family"] == family])
        spread = values.std(axis=0)
        out[family] = [round(float(s), 4) if s > 1e-3 else 1.0 for s in spread]
    return out


def pack_of(name: str) -> str:
    return str(Path(name).parent)


def median_duties(rigs: list[dict]) -> dict[str, float]:
    """Per family and kind, the median stance share over the packs (each pack's median counts once)."""
    out = {}
    for family, kind in PRIOR_GAIT:
        packs: dict[str, list[float]] = {}
        for rig in rigs:
            if rig["family"] == family and kind in rig:
                packs.setdefault(pack_of(rig["rig"]), []).append(rig[kind]["duty"])
        if packs:
            out[f"{family}/{kind}"] = round(float(np.median([np.median(v) for v in packs.values()])), 4)
    return out


def errors(table: TempoTable, leave_pack: bool) -> tuple[float, float]:
    """Mean |log frequency| and |stance share| errors, each rig predicted without itself (or its pack)."""
    log_errors, duty_errors = [], []
    for rig in table.rigs:
        others = [r for r in table.rigs if (pack_of(r["rig"]) if leave_pack else r["rig"]) !=
                  (pack_of(rig["rig"]) if leave_pack else rig["rig"])]
        held = TempoTable(others, table.scales, table.median_duty, table.bandwidth, table.prior_weight)
        shape = RigShape(rig["family"], tuple(rig["shape"]))
        for kind in ("walk", "run"):
            if kind not in rig or (rig["family"], kind) not in PRIOR_GAIT:
                continue
            prior = TEMPI[(rig["family"], PRIOR_GAIT[(rig["family"], kind)])].frequency
            factor, duty, _ = held.shift(shape, kind, prior)
            log_errors.append(abs(np.log(prior * factor / rig[kind]["frequency"])))
            base = table.median_duty.get(f"{rig['family']}/{kind}", rig[kind]["duty"])
            duty_errors.append(abs(base + duty - rig[kind]["duty"]))
    return float(np.mean(log_errors)), float(np.mean(duty_errors))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("calibration", type=Path, help="bench_motion_real.py --calibration --json output")
    parser.add_argument("--assets", type=Path, default=ASSETS)
    parser.add_argument("--out", type=Path, default=TABLE_PATH)
    args = parser.parse_args(argv)
    rigs = table_rigs(json.loads(args.calibration.read_text())["rows"], args.assets.resolve())
    if not rigs:
        print("no usable authored walk or run with a rig shape in", args.calibration, file=sys.stderr)
        return 2
    scales, duties = scales_of(rigs), median_duties(rigs)
    prior_only = TempoTable(rigs, scales, duties, 1.0, 1e9)
    print(f"{len(rigs)} rigs; the family's tempo alone: error log-frequency, duty "
          f"{errors(prior_only, False)[0]:.3f}, {errors(prior_only, False)[1]:.3f}")
    best = None
    for bandwidth, weight in product(BANDWIDTHS, PRIOR_WEIGHTS):
        table = TempoTable(rigs, scales, duties, bandwidth, weight)
        (f_rig, d_rig), (f_pack, d_pack) = errors(table, False), errors(table, True)
        print(f"bandwidth {bandwidth:.2f} prior {weight:.2f}: leave a rig out {f_rig:.3f}, {d_rig:.3f}; "
              f"leave its pack out {f_pack:.3f}, {d_pack:.3f}")
        score = f_rig + DUTY_WEIGHT * d_rig
        if best is None or score < best[0]:
            best = (score, bandwidth, weight)
    _, bandwidth, weight = best
    print(f"chosen: bandwidth {bandwidth}, prior weight {weight}")
    data = {"about": "written by tools/calibrate_tempo.py from a bench_motion_real.py --calibration run; "
                     "authored stride frequency (Hz) and stance share of each calibration rig, by its build",
            "features": list(FEATURES), "bandwidth": bandwidth, "prior_weight": weight,
            "scales": scales, "median_duty": duties, "rigs": rigs}
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print("wrote", args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
