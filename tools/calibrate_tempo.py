"""Write kirin_addon/generate/tempo_rigs.json, the calibration rigs' own tempi by their build.

Reads the JSON of a calibration run (every rig with authored clips but the held-out ones):

    .venv/bin/python benchmarks/bench_motion_real.py --calibration --no-filmstrips --no-recall \
        --json calib.json
    .venv/bin/python tools/calibrate_tempo.py calib.json

Each rig whose authored walk or run is a usable reference gives its build (rig_shape.FEATURES, as the
generation read it), the species its prompt names, and that clip's stride frequency and stance share,
measured on its mesh. The error of a choice is that of the log frequency plus DUTY_WEIGHT times that of
the stance share, each rig predicted without its own clips (a rig left out: a user's rig with a twin among
the calibration rigs) or without its whole pack (a new artist's rig).

- the species-size exponent: the smallest whose best error on a new pack is within one standard error of
  the best (the one-standard-error rule: a species' size must earn its place);
- the bandwidth and the prior's weight: the least error with a rig left out, of the choices whose error on
  a new pack is within a standard error of the family's tempo alone (a twin's tempo is taken where there
  is one, and a new artist's rig is not made worse off than with no table).
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
from kirin.kirin_addon.generate.tempo import PRIOR_GAIT, TABLE_PATH, TEMPI, TempoTable, species_in, tempo_of

ASSETS = Path(__file__).resolve().parents[2] / "shared" / "assets"
BANDWIDTHS = (0.1, 0.2, 0.35, 0.5, 0.75, 1.0)
PRIOR_WEIGHTS = (0.25, 0.5, 1.0, 2.0, 4.0)
SIZE_EXPONENTS = (0.0, 0.1, 0.2, 0.3, 0.5)  # 0.5: Froude's
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
                                       "species": species_in(row.get("prompt") or ""),
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


def errors(table: TempoTable, leave_pack: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per authored clip, |log frequency| and |stance share| errors, each rig predicted as the generator
    predicts it (its build, the species its prompt names) without itself (or its pack)."""
    log_errors, duty_errors = [], []
    for rig in table.rigs:
        others = [r for r in table.rigs if (pack_of(r["rig"]) if leave_pack else r["rig"]) !=
                  (pack_of(rig["rig"]) if leave_pack else rig["rig"])]
        held = TempoTable(others, table.scales, table.median_duty, table.bandwidth, table.prior_weight,
                          table.size_exponent)
        shape = RigShape(rig["family"], tuple(rig["shape"]))
        for kind in ("walk", "run"):
            if kind not in rig or (rig["family"], kind) not in PRIOR_GAIT:
                continue
            gait = PRIOR_GAIT[(rig["family"], kind)]
            prior = TEMPI[(rig["family"], gait)]
            tempo = tempo_of(rig["family"], gait, species=rig.get("species"), shape=shape, table=held)
            log_errors.append(abs(np.log(tempo.frequency / rig[kind]["frequency"])))
            duty_errors.append(abs(tempo.overrides.duty - prior.overrides.duty +
                                   table.median_duty.get(f"{rig['family']}/{kind}", rig[kind]["duty"]) -
                                   rig[kind]["duty"]))
    return np.array(log_errors), np.array(duty_errors)


def _score(log_errors: np.ndarray, duty_errors: np.ndarray) -> np.ndarray:
    return log_errors + DUTY_WEIGHT * duty_errors


def _standard_error(scores: np.ndarray) -> float:
    return float(scores.std(ddof=1) / np.sqrt(len(scores)))


def choose(rigs: list[dict], scales: dict, duties: dict) -> tuple[float, float, float]:
    """(bandwidth, prior weight, size exponent) by the module docstring's rules."""
    family = _score(*errors(TempoTable(rigs, scales, duties, 1.0, 1e9, 0.0), True))
    print(f"{len(rigs)} rigs; the family's tempo alone, a pack left out: score {family.mean():.3f}")
    pack: dict[tuple[float, float, float], np.ndarray] = {}
    rig: dict[tuple[float, float, float], float] = {}
    for exponent, bandwidth, weight in product(SIZE_EXPONENTS, BANDWIDTHS, PRIOR_WEIGHTS):
        table = TempoTable(rigs, scales, duties, bandwidth, weight, exponent)
        (f_rig, d_rig), (f_pack, d_pack) = errors(table, False), errors(table, True)
        pack[(exponent, bandwidth, weight)] = _score(f_pack, d_pack)
        rig[(exponent, bandwidth, weight)] = float(_score(f_rig, d_rig).mean())
        print(f"size exponent {exponent:.1f} bandwidth {bandwidth:.2f} prior {weight:.2f}: leave its pack "
              f"out {f_pack.mean():.3f}, {d_pack.mean():.3f}; leave a rig out {f_rig.mean():.3f}, "
              f"{d_rig.mean():.3f}")
    # The exponent: the smallest whose best leave-a-pack-out score is within a standard error of the best.
    best = {e: min(float(v.mean()) for k, v in pack.items() if k[0] == e) for e in SIZE_EXPONENTS}
    lowest = min(pack.values(), key=lambda v: float(v.mean()))
    exponent = min(e for e, score in best.items() if score <= float(lowest.mean()) + _standard_error(lowest))
    for e, score in sorted(best.items()):
        print(f"size exponent {e:.1f}: best leave-a-pack-out score {score:.3f}")
    # Then the neighbours: the best for a rig with a twin among the calibration rigs (a rig left out), of
    # those no worse on a new pack than the family's tempo alone (within a standard error).
    bound = float(family.mean()) + _standard_error(family)
    allowed = [k for k, v in pack.items() if k[0] == exponent and float(v.mean()) <= bound]
    _, bandwidth, weight = min(allowed, key=lambda k: rig[k]) if allowed else (exponent, 1.0, 1e9)
    print(f"a new pack: the family's tempo alone {family.mean():.3f} ± {_standard_error(family):.3f}, "
          f"the chosen table {pack[(exponent, bandwidth, weight)].mean():.3f}; a rig left out "
          f"{rig[(exponent, bandwidth, weight)]:.3f}")
    return bandwidth, weight, exponent


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
    bandwidth, weight, exponent = choose(rigs, scales, duties)
    print(f"chosen: bandwidth {bandwidth}, prior weight {weight}, size exponent {exponent}")
    data = {"about": "written by tools/calibrate_tempo.py from a bench_motion_real.py --calibration run; "
                     "authored stride frequency (Hz) and stance share of each calibration rig, by its build",
            "features": list(FEATURES), "bandwidth": bandwidth, "prior_weight": weight,
            "size_exponent": exponent,
            "scales": scales, "median_duty": duties, "rigs": rigs}
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print("wrote", args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
