"""Issue 31's metamorphic convention measure: every rig of RIGS × every mutation that applies
(benchmarks/convention_mutations.py), the engine's walk measured on the deformed mesh in the original's
frame (benchmarks/convention_measure.py); a table of what moved beyond the bounds (duty, frequency and
travel speed by more than 10 %, left/right coupling by more than 0.1, or a refusal that differs) and the
pass count per mutation. No Blender, no network.

Run: OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_conventions.py [--rigs 5] [--only NAME …]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # `kirin` importable from a checkout

from kirin.benchmarks.convention_measure import ASSETS, RIGS, compare, measure, rig_case  # noqa: E402
from kirin.benchmarks.convention_mutations import mutations  # noqa: E402


def _stats(outcome) -> str:
    if outcome.refused:
        return f"refused ({outcome.refused}: {outcome.message[:70]})"
    s = outcome.stats
    freq = "-" if s["frequency_hz"] is None else f"{s['frequency_hz']:.2f}"
    coupling = "-" if s["contralateral"] is None else f"{s['contralateral']:+.2f}"
    return (f"duty {s['duty']:.2f}  freq {freq} Hz  L/R {coupling}  speed {s['travel_speed']:.3f}"
            f"  heading {s['heading']:+.0f}°")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rigs", type=int, default=len(RIGS), help="the first N rigs of RIGS")
    parser.add_argument("--only", nargs="*", default=None, help="only these mutations")
    parser.add_argument("--match", default=None, help="only rigs whose path contains this")
    args = parser.parse_args()
    passed: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    started = time.perf_counter()
    for path, creature in RIGS[:args.rigs]:
        if args.match and args.match not in path:
            continue
        if not (ASSETS / path).exists():
            print(f"{path}: missing, skipped")
            continue
        case = rig_case(path, creature)
        print(f"{path} ({case.rig.joint_count} bones): {_stats(case.original)}")
        for mutant in mutations(case.rig, case.mesh, case.body):
            if args.only and mutant.name not in args.only:
                continue
            outcome = measure(mutant, case.probe, creature)
            moved = compare(case.original, outcome)
            passed[mutant.name][0] += not moved
            passed[mutant.name][1] += 1
            verdict = "pass" if not moved else f"FAIL {Path(path).stem}: " + ", ".join(moved)
            print(f"    {mutant.name:16s} {verdict}")
    print("\npasses per mutation:")
    for name, (good, total) in passed.items():
        print(f"    {name:16s} {good}/{total}")
    good = sum(p[0] for p in passed.values())
    total = sum(p[1] for p in passed.values())
    print(f"all: {good}/{total} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
