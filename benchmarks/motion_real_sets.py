"""The rig sets of the motion benchmarks, without Blender: the held-out rigs no training run, bank or
calibration sees, source by source, and the calibration rigs (every other rig with authored locomotion).

Issue 17 held out nine Quaternius rigs and the CMU subject 07 (`RIG_FILES`, `CMU_GLOB`: its 21/28 check
keeps reading them). Issue 31 asks for held-out rigs from every source with authored locomotion, at
least one in four of each source's rigs (`HELD_OUT_BY_SOURCE`); they join the held-out set everywhere
(`held_out_files`), so they leave the calibration set too.
"""

from __future__ import annotations

from pathlib import Path

# Issue 17's held-out rigs.
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

# Each source's folders under ../shared/assets (a file belongs to the first source whose prefix it has).
SOURCES = {
    "quaternius": ("quaternius/",),
    "quaternius_fbx": ("quaternius_fbx/",),
    "quaternius_monsters": ("quaternius_monsters/",),
    "mesh2motion": ("mesh2motion/",),
    "khronos": ("khronos_fox/", "khronos_cesiumman/", "khronos_riggedsimple/"),
    "threejs": ("threejs_robotexpressive/",),
    "luanti": ("luanti_spider/",),
    "cmu": ("bvh_cmu_subjects_01_07/", "bvh_cmu_01_01/"),
}
# Issue 31's held-out rigs, at least one in four of each source's rigs with authored legged locomotion
# (the counts in the comments). A source of one rig holds it out whole.
HELD_OUT_BY_SOURCE = {
    # 15 legged rigs with walks (animals, dinosaurs, the rat, two mechs): issue 17's two and a mech
    # walking on two bird-like legs, and the rat.
    "quaternius": ("quaternius/animals_pack/Husky.glb", "quaternius/dinosaurs_pack/Stegosaurus.glb",
                   "quaternius/mech_pack/Leela.glb", "quaternius/easy_enemies_pack/Rat.glb"),
    # about 18 legged rigs with walks or runs: issue 17's five.
    "quaternius_fbx": RIG_FILES[2:7],
    # 16 big monsters with walks and runs: issue 17's two and two more.
    "quaternius_monsters": ("quaternius_monsters/big/Yeti.glb", "quaternius_monsters/big/Dino.glb",
                            "quaternius_monsters/big/Orc.glb", "quaternius_monsters/big/Frog.glb"),
    # a fox, a horse and a bird walk (the shark swims, the snake slithers): the horse.
    "mesh2motion": ("mesh2motion/horse-animations.glb",),
    # the Khronos fox and CesiumMan: CesiumMan (a walking biped; the README's retarget target).
    "khronos": ("khronos_cesiumman/CesiumMan.glb",),
    "threejs": ("threejs_robotexpressive/RobotExpressive.glb",),
    "luanti": ("luanti_spider/gltf_spider_animated.gltf",),
    "cmu": (),  # the subject 07 (CMU_GLOB)
}
# What the single unnamed clip of a file is (its file's stem → the text read as its action), where the
# clip's name says nothing: CesiumMan's clip has no name, the spider's is 'ArmatureAction' (both walk).
CLIP_TEXTS = {"CesiumMan": "walk", "gltf_spider_animated": "walk"}
# The calibration set: every other rig with authored locomotion, of every source.
CALIBRATION_GLOBS = ("quaternius/animals_pack/*.glb", "quaternius/dinosaurs_pack/*.glb",
                     "quaternius/easy_enemies_pack/*.glb", "quaternius/mech_pack/*.glb",
                     "quaternius/modular_men/*.gl*", "quaternius/modular_women/*.gl*",
                     "quaternius_fbx/*/*.fbx",
                     "quaternius_monsters/big/*.glb", "mesh2motion/*.glb",
                     "khronos_fox/*.glb", "khronos_cesiumman/*.gl*",
                     "threejs_robotexpressive/*.glb", "luanti_spider/*.gl*",
                     "bvh_cmu_subjects_01_07/00[1-6]_*.bvh")


def source_of(path: str | Path, assets: Path | None = None) -> str:
    """The source a rig file comes from (SOURCES), from its path under `assets` ('other' if none)."""
    relative = Path(path)
    if assets is not None and relative.is_relative_to(assets):
        relative = relative.relative_to(assets)
    text = relative.as_posix()
    for source, prefixes in SOURCES.items():
        if any(text.startswith(prefix) or f"/{prefix}" in text for prefix in prefixes):
            return source
    return "other"


def held_out_relative() -> tuple[str, ...]:
    """Every held-out rig file (issue 17's and issue 31's), relative to the assets folder, in order."""
    files = list(RIG_FILES)
    for listed in HELD_OUT_BY_SOURCE.values():
        files += [f for f in listed if f not in files]
    return tuple(files)


def held_out_files(assets: Path) -> set[Path]:
    """The held-out rig files under `assets`."""
    return {assets / f for f in held_out_relative()} | set(assets.glob(CMU_GLOB))


def calibration_files(assets: Path) -> list[Path]:
    """The rigs gaits are calibrated on: CALIBRATION_GLOBS under `assets`, never a held-out one."""
    held_out = held_out_files(assets)
    found = sorted({f for pattern in CALIBRATION_GLOBS for f in assets.glob(pattern)})
    return [f for f in found if f not in held_out]


def is_held_out(path: str | Path, assets: Path) -> bool:
    """Whether a file (under `assets`) is one of the held-out rigs."""
    return Path(path) in held_out_files(assets)
