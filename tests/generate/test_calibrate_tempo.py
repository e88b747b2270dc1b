"""tools/calibrate_tempo.py chooses the tempo table's bandwidth, prior weight and species-size exponent by
the error on a pack it has not seen: a species' size is kept where it predicts the artists' tempi, and
dropped where it does not."""

from __future__ import annotations

import numpy as np

from kirin.kirin_addon.generate.rig_shape import FEATURES
from kirin.kirin_addon.generate.tempo import LEG_METRES, TEMPI
from kirin.tools.calibrate_tempo import choose, median_duties, scales_of

SPECIES = ["rat", "cat", "fox", "dog", "wolf", "deer", "donkey", "zebra", "cow", "horse", "stegosaurus",
           "apatosaurus"]


def _rigs(frequency_of) -> list[dict]:
    rng = np.random.default_rng(7)
    rigs = []
    for k, species in enumerate(SPECIES):
        walk = float(frequency_of(LEG_METRES[species], rng))
        rigs.append({"rig": f"pack{k}/{species}", "family": "quadruped", "species": species,
                     "shape": list(rng.normal(size=len(FEATURES))),
                     "walk": {"frequency": walk, "duty": 0.55},
                     "run": {"frequency": 1.9 * walk, "duty": 0.4}})
    return rigs


def _chosen_exponent(rigs: list[dict]) -> float:
    return choose(rigs, scales_of(rigs), median_duties(rigs))[2]


def test_a_species_size_that_sets_the_tempo_is_kept():
    walk = TEMPI[("quadruped", "walk")].frequency
    rigs = _rigs(lambda leg, rng: walk * leg**-0.5 * np.exp(rng.normal(0.0, 0.05)))
    assert _chosen_exponent(rigs) >= 0.3


def test_a_species_size_the_artists_ignore_is_dropped():
    walk = TEMPI[("quadruped", "walk")].frequency
    rigs = _rigs(lambda leg, rng: walk * np.exp(rng.normal(0.0, 0.25)))
    assert _chosen_exponent(rigs) == 0.0
