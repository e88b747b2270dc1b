"""How far apart artists' tempi are: the bound a tempo chosen from the creature alone cannot pass.

Issue 31 asks every source's held-out locomotion to step within ×/÷1.5 of the artist's own stride
frequency. A tempo is chosen from what the rig is (its family, its build, the species the prompt names),
never from who made it. Where artists animate the same creature at tempi further apart than 1.5² (one
value cannot be within ×/÷1.5 of both), no such choice passes both. This prints, from the committed
calibration table and a held-out run of bench_motion_real.py:

- per family and kind, the authored frequencies of every rig (calibration and held-out) and the share of
  them that the best single frequency (chosen knowing all of them) keeps within the bound;
- the species animated by more than one artist, with the ratio of their tempi.

    .venv/bin/python benchmarks/bench_motion_real.py --no-filmstrips --no-recall --json held.json
    .venv/bin/python tools/tempo_spread.py held.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from kirin.kirin_addon.generate.tempo import TABLE_PATH, species_in

RATIO = 1.5  # issue 31: stride frequency within ×/÷ this of the artist's
RUN_KINDS = ("run", "gallop", "trot", "canter")


def authored(held_out: Path) -> list[dict]:
    """Every authored walk and run: {"rig", "family", "species", "kind", "frequency", "set"}."""
    out = []
    for rig in json.loads(TABLE_PATH.read_text())["rigs"]:
        for kind in ("walk", "run"):
            if kind in rig:
                out.append({"rig": rig["rig"], "family": rig["family"], "species": rig.get("species"),
                            "kind": kind, "frequency": rig[kind]["frequency"], "set": "calibration"})
    for row in json.loads(held_out.read_text())["rows"]:
        if row.get("verdict") is None or row.get("segment") or not row.get("rig_shape"):
            continue
        frequency = (row.get("authored") or {}).get("frequency_hz")
        if frequency:
            kind = "run" if row["verdict_kind"] in RUN_KINDS else "walk"
            out.append({"rig": row["file"].split("assets/")[-1], "family": row["rig_shape"]["family"],
                        "species": species_in(row["prompt"]), "kind": kind, "frequency": float(frequency),
                        "set": "held out"})
    return out


def best_share(frequencies: np.ndarray) -> tuple[float, float]:
    """(the frequency that keeps most of `frequencies` within ×/÷RATIO, that share)."""
    candidates = np.exp(np.linspace(np.log(frequencies.min()), np.log(frequencies.max()), 400))
    shares = [np.mean(np.abs(np.log(frequencies / c)) <= np.log(RATIO) + 1e-9) for c in candidates]
    k = int(np.argmax(shares))
    return float(candidates[k]), float(shares[k])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("held_out", type=Path, help="bench_motion_real.py --json of the held-out run")
    clips = authored(parser.parse_args().held_out)
    groups: dict[tuple[str, str], list[dict]] = {}
    for clip in clips:
        groups.setdefault((clip["family"], clip["kind"]), []).append(clip)
    print("family/kind: authored stride frequency (Hz) of every rig; the best single frequency's share "
          f"within x/÷{RATIO}")
    for (family, kind), members in sorted(groups.items()):
        frequencies = np.array([m["frequency"] for m in members])
        value, share = best_share(frequencies)
        print(f"  {family}/{kind}: {len(members)} rigs, {frequencies.min():.2f}-{frequencies.max():.2f} Hz; "
              f"at best {100 * share:.0f} % (at {value:.2f} Hz)")
    print(f"species animated by several artists (a ratio over {RATIO**2:.2f} cannot be met on both):")
    by_species: dict[tuple[str, str], list[dict]] = {}
    for clip in clips:
        if clip["species"]:
            by_species.setdefault((clip["species"], clip["kind"]), []).append(clip)
    for (species, kind), members in sorted(by_species.items()):
        packs = {m["rig"].split("/")[0] for m in members}
        if len(packs) < 2:
            continue
        frequencies = [m["frequency"] for m in members]
        listed = ", ".join(f"{m['rig']} {m['frequency']:.2f}" for m in members)
        print(f"  {species} {kind}: ratio {max(frequencies) / min(frequencies):.2f} ({listed})")


if __name__ == "__main__":
    main()
