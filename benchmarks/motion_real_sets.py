"""The rig sets of issue 17's benchmark, without Blender: the held-out rigs no training run, bank or
calibration sees, and the calibration rigs (every other rig with authored clips, CMU subjects 01–06)."""

from __future__ import annotations

from pathlib import Path

# Held out: no training run, bank or calibration sees these files.
RIG_FILES = (
    "quaternius/animals_pack/Husky.glb",
    "quaternius/dinosaurs_pack/Stegosaurus.glb",
    "quaternius_fbx/farm_animals_animated_/Zebra.fbx",
    "quaternius_fbx/animal_pack_vol2/Cat.fbx",
    "quaternius_fbx/animal_pack_vol2/Dog.fbx",
    "quaternius_fbx/goblin_animated/Goblin.fbx",
    "quaternius_fbx/animated_robot/Robot.fbx",
    "quaternius_monsters/big/Yeti.glb",
    "quaternius_monsters/big/Dino.glb",
)
CMU_GLOB = "bvh_cmu_subjects_01_07/007_*.bvh"
# The calibration set (issue 17 item 3): every other rig with authored clips, the CMU subjects 01–06.
CALIBRATION_GLOBS = ("quaternius/animals_pack/*.glb", "quaternius/dinosaurs_pack/*.glb",
                     "quaternius/modular_men/*.gl*", "quaternius/modular_women/*.gl*",
                     "quaternius_fbx/*/*.fbx",
                     "quaternius_monsters/big/*.glb", "khronos_fox/*.glb", "khronos_cesiumman/*.gl*",
                     "threejs_robotexpressive/*.glb", "luanti_spider/*.gl*",
                     "bvh_cmu_subjects_01_07/00[1-6]_*.bvh")


def held_out_files(assets: Path) -> set[Path]:
    """The held-out rig files under `assets`."""
    return {assets / f for f in RIG_FILES} | set(assets.glob(CMU_GLOB))


def calibration_files(assets: Path) -> list[Path]:
    """The rigs gaits are calibrated on: CALIBRATION_GLOBS under `assets`, never a held-out one."""
    held_out = held_out_files(assets)
    found = sorted({f for pattern in CALIBRATION_GLOBS for f in assets.glob(pattern)})
    return [f for f in found if f not in held_out]


def is_held_out(path: str | Path, assets: Path) -> bool:
    """Whether a file (under `assets`) is one of the held-out rigs."""
    return Path(path) in held_out_files(assets)
