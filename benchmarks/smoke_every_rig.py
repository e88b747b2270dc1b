"""The smoke over every rig file: each one's locomotion prompt generated, and every clip sorted broken or not.

Issue 31's "0 broken clips". Every glTF/GLB/FBX file under ../shared/assets (and one CMU BVH skeleton per
folder) is imported headless, its feet and soles found as bench_motion_real finds them (motion_real_support;
a rig without feet — a fish, a snake, a blob — is taken as it is), and asked for its locomotion through the
panel's settings and `bpy.ops.kirin.generate_motion` (one backend, the checkout's .venv, reused across rigs):
what the rig's own clips suggest — a walk where they walk (or only trot, run, gallop), else a swim, a
flight, a slither or crawl, a hop — else a walk ("a husky walking forward", "a koi swimming forward").

Each clip the operator writes is classified on the deformed mesh (kirin_addon/eval/broken.py, the
thresholds Generate's own guard uses): **frozen**, **exploded**, **floating** (a legged prompt whose soles
are planted < 5 % of the time, eval/gait.py's contacts on the soles, the rest mesh's lowest vertex the
floor), **sinking** (the mesh more than 2 % of body size under that floor on more than 10 % of the frames;
a swim or a flight has no floor), and **rest-posed**: arms or wings (rig_roles' arms: bipeds and
two-legged birds) held out sideways where the rig's own clips never hold them (`spread_angles` over the
rig's own clips of the same locomotion, else over all its clips but a T/A-pose or rest "clip", else for a
walk of a rig with no clips 0–50°, against the generated clip's median; 20° of margin). A request the
operator refuses (its message) is not broken but counted on its own; an import that fails, or an operator
that fails without a clear message (the backend crashed, timed out), is an error. A skeleton without mesh
(BVH) stands on the floor of the pose it was generated from (its rest, or the take's frame the operator
names); the gap to where its take stands is reported (`take_floor_gap`, body sizes).

The control: the rig's own clip of the same locomotion (played once) is judged the same way, so the
line under the table says how many artists' clips the classes would call broken — and each row keeps the
numbers behind the classes (`measures`: the largest joint excursion with the body laid still, top speed,
reach, bone stretch, planted share, depth) for the generated and the authored clip.

Prints a table per source (quaternius, quaternius_fbx, quaternius_monsters, mesh2motion, khronos_*,
threejs_robotexpressive, luanti_spider, cmu) and the line "broken N of M" (M: the clips written).

Run: nice .venv/bin/python benchmarks/smoke_every_rig.py [--rigs Husky mesh2motion] [--frames 72]
     [--json out/smoke.json] [--threads 2] [--no-bvh] [--assets ../shared/assets]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from kirin.kirin_addon.io.scratch import private_blender_resources

private_blender_resources("kirin-smoke-")

import bpy  # noqa: E402
import numpy as np  # noqa: E402

from kirin.benchmarks import motion_real_support as support  # noqa: E402
from kirin.kirin_addon.core.motion import joint_positions  # noqa: E402
from kirin.kirin_addon.eval.broken import (  # noqa: E402
    KINDS,
    ClipShape,
    LimbPair,
    classify,
    measures,
    rest_posed,
    spread_angles,
)
from kirin.kirin_addon.generate.guard import asks_for_legs, asks_to_leave_the_floor  # noqa: E402
from kirin.kirin_addon.generate.rig_roles import RoleError, detect_roles  # noqa: E402
from kirin.kirin_addon.library.captions.clip_names import describe_clip_name  # noqa: E402
from kirin.kirin_addon.library.ingest import species_from_file  # noqa: E402
from kirin.operators.headless import common as headless  # noqa: E402
from kirin.operators.scene_io.action import read_action  # noqa: E402
from kirin.operators.scene_io.arrays import object_matrix  # noqa: E402
from kirin.operators.scene_io.rig import evaluated_pose  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT.parent / "shared" / "assets"
RIG_SUFFIXES = (".glb", ".gltf", ".fbx")
BVH_SKELETONS = ("bvh_cmu_01_01/01_01.bvh", "bvh_cmu_subjects_01_07/002_01.bvh")  # one per skeleton
# The locomotion a rig's own clips suggest, in this order of preference, and the prompt's word for it.
LOCOMOTION = (("walk", "walking"), ("trot", "trotting"), ("run", "running"), ("gallop", "galloping"),
              ("swim", "swimming"), ("fly", "flying"), ("slither", "slithering"), ("winding", "slithering"),
              ("crawl", "crawling"), ("hop", "hopping"))
# What a creature without legs does, by what its file's name says it is: a snake's "Walk" is a slither.
LEGLESS = ((re.compile(r"snake|serpent|worm|eel"), "slithering"),
           (re.compile(r"fish|whale|shark|dolphin|koi|tuna|piranha|puffer|ray|orca"), "swimming"))
# Arms of a rig with no clips of its own: where a walking figure holds them (degrees out from the body).
WALKING_ARMS = np.array([[0.0, 0.0], [50.0, 50.0]])
NOT_A_CLIP = re.compile(r"t[-_ ]?pose|a[-_ ]?pose|rest|bind|reference|^pose$", re.IGNORECASE)
# Messages of a backend or operator that failed rather than refused: an error, not a refusal.
FAILED = re.compile(r"internal error|backend stopped|timed out|time-out|traceback", re.IGNORECASE)
OUTCOMES = ("ok", "broken", "refused", "error")
AUTHORED_SAMPLES = 24  # frames read of each authored clip for the range its arms are held in
TRACKED_VERTICES = 1500  # deformed vertices kept per frame (evenly strided)


@dataclass
class Options:
    frames: int = 72
    seed: int = 0
    timeout: float = 180.0
    filmstrips: Path | None = None  # a filmstrip of each written clip here (renders of third-party assets)


# ----------------------------------------------------------------------------- files and prompts
def rig_files(assets: Path, rigs: list[str] | None = None, bvh: bool = True) -> list[Path]:
    """Every rig file under `assets` (and the BVH skeletons), filtered by substrings of the path."""
    files = sorted(p for p in assets.rglob("*") if p.suffix.lower() in RIG_SUFFIXES and p.is_file())
    if bvh:
        files += [assets / f for f in BVH_SKELETONS if (assets / f).is_file()]
    if rigs:
        files = [f for f in files if any(r.lower() in str(f.relative_to(assets)).lower() for r in rigs)]
    return files


def species_of(path: Path) -> str:
    """What the file's name says the creature is ('bird-animations.glb' → 'bird')."""
    return species_from_file(re.sub(r"[-_ ]?animations?$", "", path.stem, flags=re.IGNORECASE)
                             .replace("-", "_") + path.suffix)


def source_of(path: Path, assets: Path) -> str:
    top = path.relative_to(assets).parts[0]
    return "cmu" if top.startswith("bvh_cmu") else top


def prompt_for(species: str, labels: list[str], feet: int) -> str:
    """The locomotion the rig's own clips suggest (LOCOMOTION's order), else what a legless creature of
    its name does (LEGLESS), else a walk; a legged gait of a creature with fewer than two feet and such a
    name is that creature's own way (the Quaternius snake's "Walk")."""
    words = set()
    for label in labels:
        words.add(describe_clip_name(label, species, "").action)
        words.update(w for w in re.split(r"[^a-z]+", label.lower()) if w)
    legless = next((gerund for pattern, gerund in LEGLESS if pattern.search(species)), None)
    for word, gerund in LOCOMOTION:
        if word in words or any(w.startswith(word) for w in words):
            if legless and feet < 2 and asks_for_legs(gerund):
                break
            return f"a {species} {gerund} forward"
    return f"a {species} {legless or 'walking'} forward"


def authored_clip(actions: list, prompt: str, every: bool = False):
    """The rig's own clip of the prompt's locomotion (its shortest name that has the word), or None;
    `every`: all of them (a list)."""
    gerund = prompt.split()[-2]
    stem = next((word for word, g in LOCOMOTION if g == gerund), gerund)
    found = [a for a in actions
             if stem in support.clip_label(a.name).lower() and not a.name.startswith("Kirin:")]
    if every:
        return found
    return min(found, key=lambda a: (len(support.clip_label(a.name)), a.name)) if found else None


# ----------------------------------------------------------------------------- the rig's arms
def arm_pair(character: support.Character) -> LimbPair | None:
    """The rig's arms or wings (rig_roles' arms: a biped's or a two-legged bird's), where it has both."""
    try:
        roles = detect_roles(character.standing.transformed(character.frame.matrix()))
    except RoleError:
        return None
    arms = [[j for j in arm if j < character.rig.joint_count] for arm in roles.arms]
    if len(arms) != 2 or min(len(a) for a in arms) < 2:
        return None
    left, right = sorted(arms, key=lambda arm: -roles.rig.heads[arm[-1], 0])  # left on +X
    names = " ".join(character.rig.names[j].lower() for j in left)
    return LimbPair("wings" if "wing" in names else "arms", (left[0], left[-1]), (right[0], right[-1]))


def authored_angles(character: support.Character, actions: list, pair: LimbPair) -> np.ndarray:
    """(N,2) how far out the rig's own clips hold its arms, over AUTHORED_SAMPLES frames of each clip
    (a T-pose or rest 'clip' left out): the keys read as they are, no scene evaluation."""
    out = []
    for action in actions:
        if NOT_A_CLIP.search(support.clip_label(action.name)) or action.name.startswith("Kirin:"):
            continue
        start, end = action.frame_range
        frames = np.unique(np.round(np.linspace(start, end, AUTHORED_SAMPLES)))
        try:
            motion = read_action(character.arm, character.rig, action, frames=frames)
        except Exception:  # noqa: BLE001 — an action that animates another object says nothing here
            continue
        out.append(spread_angles(joint_positions(character.rig, motion), pair))
    return np.concatenate(out) if out else np.zeros((0, 2))


# ----------------------------------------------------------------------------- generating, tracking
def generate(character: support.Character, prompt: str, options: Options) -> tuple[object, dict]:
    """Generate Motion through the panel's settings and operator: the new action and the report."""
    headless.activate(character.arm)
    scene = bpy.context.scene
    scene.frame_start = 1
    settings = scene.kirin
    settings.prompt, settings.frames = prompt, options.frames
    settings.seed, settings.variants = options.seed, 1
    run = headless.run_operator(bpy.ops.kirin.generate_motion, "Generate Motion did not finish",
                                timeout=options.timeout)
    return character.arm.animation_data.action, run


def track(character: support.Character, frames: list[int]) -> tuple[np.ndarray, np.ndarray | None,
                                                                   np.ndarray]:
    """Per frame: world joint heads (T,J,3), deformed vertices (T,V,3) (None without mesh) and each
    foot's sole (F,T,3)."""
    scene, arm = bpy.context.scene, character.arm
    world = object_matrix(arm)
    joints, vertices, soles = [], [], []
    for frame in frames:
        scene.frame_set(frame)
        joints.append(evaluated_pose(arm, character.rig)[:, :3, 3] @ world[:3, :3].T + world[:3, 3])
        if character.parts:
            verts = {p.obj.name: support.part_vertices(p, arm) for p in character.parts}
            every = np.concatenate(list(verts.values()))
            vertices.append(every[:: max(1, len(every) // TRACKED_VERTICES)])
            soles.append([np.concatenate([verts[n][i] for n, i in f.sole.items()]).mean(0)
                          for f in character.feet])
        else:
            soles.append([joints[-1][f.sole_joints].mean(0) for f in character.feet])
    feet = np.swapaxes(np.array(soles).reshape(len(frames), len(character.feet), 3), 0, 1)
    return np.array(joints), (np.array(vertices) if vertices else None), feet


def pose_floor(character: support.Character, actions: list, frame: int | None) -> float:
    """World height of the lowest joint (roots left out, as eval/broken.py leaves them out of a skeleton)
    of the pose a skeleton's clip was generated from: its take's pose at `frame` (a BVH whose rest lies
    flat is generated from the pose of its take that stands best: the operator says which frame), else
    its rest pose."""
    world = object_matrix(character.arm)
    take = next((a for a in actions if not a.name.startswith("Kirin:")), None)
    if frame is None or take is None:
        heads = character.standing.heads
    else:
        support.use_action(character.arm, take)
        bpy.context.scene.frame_set(frame)
        heads = evaluated_pose(character.arm, character.rig)[:, :3, 3]
    heads = heads[character.rig.parents >= 0] @ world[:3, :3].T + world[:3, 3]
    return float(heads[:, 2].min())


def free_joints(character: support.Character, action) -> tuple[int, ...]:
    """Joints the action moves by their location (IK controls, a body riding on a floor-level root)."""
    motion = read_action(character.arm, character.rig, action)
    if motion.translations is None:
        return ()
    return tuple(int(j) for j in np.flatnonzero(np.abs(motion.translations).max(axis=(0, 2)) > 1e-9))


def judge(character: support.Character, action, frames: list[int], prompt: str) -> tuple[list, np.ndarray,
                                                                                     dict]:
    """The findings (eval/broken.py) of `action` played at `frames` on the deformed mesh, its joints
    (T,J,3) and the numbers behind the classes (a swim or a flight has no floor, as in the guard)."""
    support.use_action(character.arm, action)
    joints, vertices, feet = track(character, frames)
    render = bpy.context.scene.render
    legged = asks_for_legs(prompt) and len(character.feet) > 0
    floor = None if asks_to_leave_the_floor(prompt) else character.floor
    clip = ClipShape(joints, character.rig.parents, render.fps / render.fps_base, character.body_size,
                     floor, feet if len(character.feet) else None, legged, vertices,
                     free=free_joints(character, action), names=tuple(character.rig.names))
    numbers = {k: None if v is None else round(v, 4) for k, v in measures(clip).items()}
    return classify(clip), joints, numbers


def held_out(character: support.Character, actions: list, joints: np.ndarray,
             prompt: str) -> tuple[list, dict]:
    """Rest-posed arms or wings: the generated clip's (`joints`) against the rig's own clips, or for a rig
    with no clips of its own and a walk, against WALKING_ARMS; the finding (or none) and what was read."""
    pair = arm_pair(character)
    if pair is None:
        return [], {}
    own = authored_clip(actions, prompt, every=True)
    authored = authored_angles(character, own, pair) if own else authored_angles(character, actions, pair)
    if not len(authored) and pair.name == "arms" and asks_for_legs(prompt):
        authored = WALKING_ARMS
    angles = spread_angles(joints, pair)
    rest = spread_angles(character.standing.heads[None], pair)[0]
    read = {"limbs": pair.name, "held": [round(float(a), 1) for a in np.median(angles, axis=0)],
            "rest": [round(float(a), 1) for a in rest], "own": "same locomotion" if own else "every clip"}
    if not len(authored):
        return [], read
    read["own_clips"] = [[round(float(v), 1) for v in np.percentile(authored, q, axis=0)] for q in (2, 98)]
    found = rest_posed(angles, authored, pair.name, rest)
    return ([] if found is None else [found]), read


def as_rows(findings: list) -> list[dict]:
    return [{"kind": f.kind, "message": f.message, "value": round(float(f.value), 4)} for f in findings]


def control(character: support.Character, actions: list, prompt: str) -> dict | None:
    """The rig's own clip of the prompt's locomotion judged the same way (played once over its range):
    what the classes call broken among artists' clips."""
    action = authored_clip(actions, prompt)
    if action is None:
        return None
    frames = support.clip_frames(action, 0, False)
    if len(frames) < 4:
        return None
    findings, _, numbers = judge(character, action, frames, prompt)
    return {"clip": action.name, "findings": as_rows(findings), "measures": numbers}


# ----------------------------------------------------------------------------- one file
def run_file(path: Path, assets: Path, options: Options) -> dict:
    """One rig file: imported, its prompt generated, the clip judged; the row."""
    row = {"rig": str(path.relative_to(assets)), "source": source_of(path, assets), "prompt": None,
           "outcome": "error", "findings": [], "message": None}
    began = time.perf_counter()
    try:
        character, actions = support.load_character(path, headless.import_rig_file, strict=False)
    except Exception as exc:  # noqa: BLE001 — a file that cannot be imported is a row, not a crash
        row["message"] = f"import: {type(exc).__name__}: {exc}"
        return row
    species = "person" if path.suffix.lower() == ".bvh" else species_of(path)
    labels = [support.clip_label(a.name) for a in actions]
    prompt = prompt_for(species, labels, len(character.feet))
    row.update(prompt=prompt, feet=len(character.feet), clips=labels, up=character.frame.up_axis)
    take_floor = character.floor
    try:
        made, run = generate(character, prompt, options)
    except RuntimeError as exc:
        text = str(exc).strip().removeprefix("Error:").strip()
        row.update(outcome="error" if FAILED.search(text) else "refused", message=text)
    else:
        judge_generated(row, character, actions, (made, run), options)
    character.floor = take_floor  # the rig's own clip stands where it was imported
    row["authored"] = control(character, actions, prompt)
    row["seconds"] = round(time.perf_counter() - began, 2)
    return row


def judge_generated(row: dict, character: support.Character, actions: list, made_run: tuple,
                    options: Options) -> None:
    """The generated clip's findings (and what the operator said of it) into `row`."""
    made, run = made_run
    variant = run["variants"][0]
    row.update(path=(variant.get("path") or "network"), guard=variant.get("guard"))
    if not character.parts:  # a skeleton (BVH): the floor of the pose it was generated from
        reference = re.search(r"from its pose at frame (\d+)", " ".join(run.get("warnings") or []))
        floor = pose_floor(character, actions, int(reference.group(1)) if reference else None)
        row["take_floor_gap"] = round((character.floor - floor) / character.body_size, 3)
        character.floor = floor
    frames = list(range(1, options.frames + 1))
    findings, joints, row["measures"] = judge(character, made, frames, row["prompt"])
    rest, row["arms"] = held_out(character, actions, joints, row["prompt"])
    row["findings"] = as_rows(findings + rest)
    row["outcome"] = "broken" if row["findings"] else "ok"
    if options.filmstrips is not None:
        row["filmstrip"] = str(strip_of(character, made, frames, joints, row, options.filmstrips))


def strip_of(character: support.Character, made, frames: list[int], joints: np.ndarray, row: dict,
             folder: Path) -> Path:
    """The generated clip's filmstrip (bench_motion_real's camera: from its side, following the body over
    a checker floor), captioned with the prompt and the verdict: to look at every rig's clip."""
    from kirin.benchmarks import motion_real_filmstrip as filmstrips

    flat = joints.reshape(-1, 3)
    verdict = "ok" if row["outcome"] == "ok" else "BROKEN " + ", ".join(f["kind"] for f in row["findings"])
    strip = filmstrips.Strip(made, frames, f"{row['prompt']} ({row.get('path')}): {verdict}")
    name = row["rig"].replace("/", "_").rsplit(".", 1)[0]
    bounds = (flat.min(axis=0), flat.max(axis=0))
    return filmstrips.filmstrip(character, [strip], bounds, folder / f"{name}.png")


# ----------------------------------------------------------------------------- report
def summary(rows: list[dict]) -> dict:
    written = [r for r in rows if r["outcome"] in ("ok", "broken")]
    broken = [r for r in written if r["outcome"] == "broken"]
    by_kind = {k: sorted(r["rig"] for r in broken if any(f["kind"] == k for f in r["findings"]))
               for k in KINDS}
    sources = {}
    for source in sorted({r["source"] for r in rows}):
        mine = [r for r in rows if r["source"] == source]
        sources[source] = {o: sum(1 for r in mine if r["outcome"] == o) for o in OUTCOMES}
    authored = [r["authored"] for r in rows if r.get("authored")]
    control = {"clips": len(authored), "broken": sorted(f"{r['rig']}:{r['authored']['clip']}" for r in rows
                                                       if r.get("authored") and r["authored"]["findings"])}
    return {"rigs": len(rows), "written": len(written), "broken": len(broken), "authored_control": control,
            "refused": sum(1 for r in rows if r["outcome"] == "refused"),
            "errors": sum(1 for r in rows if r["outcome"] == "error"),
            "by_kind": {k: len(v) for k, v in by_kind.items()}, "broken_by_kind": by_kind, "sources": sources}


def table(rows: list[dict]) -> str:
    lines = []
    for source in sorted({r["source"] for r in rows}):
        lines += [f"== {source}", "rig | feet | prompt | made | verdict"]
        for r in (r for r in rows if r["source"] == source):
            if r["outcome"] in ("refused", "error"):
                verdict = f"{r['outcome'].upper()}: {r['message']}"
            elif r["findings"]:
                verdict = "BROKEN " + "; ".join(f"{f['kind']}: {f['message']}" for f in r["findings"])
            else:
                verdict = "ok"
            own = r.get("authored")
            if own:
                kinds = ",".join(f["kind"] for f in own["findings"]) or "ok"
                verdict += f" || own {support.clip_label(own['clip'])}: {kinds}"
            lines.append(f"{r['rig']} | {r.get('feet', '-')} | {r['prompt'] or '-'} | {r.get('path', '-')} | "
                         f"{verdict}")
    return "\n".join(lines)


def summary_line(info: dict) -> str:
    kinds = ", ".join(f"{k} {v}" for k, v in info["by_kind"].items())
    per_source = "; ".join(f"{s} {v['broken']}/{v['ok'] + v['broken']}" for s, v in info["sources"].items())
    control = info["authored_control"]
    return (f"broken {info['broken']} of {info['written']} ({kinds}); refused with a message "
            f"{info['refused']}, errors {info['errors']}, rig files {info['rigs']}; per source: "
            f"{per_source}\n"
            f"control: the rigs' own clips of the same locomotion called broken {len(control['broken'])} of "
            f"{control['clips']}" + (f" ({', '.join(control['broken'])})" if control["broken"] else ""))


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assets", type=Path, default=ASSETS)
    parser.add_argument("--rigs", nargs="*", help="substrings of the rig files' paths (Husky, mesh2motion…)")
    parser.add_argument("--frames", type=int, default=72)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-bvh", action="store_true", help="leave out the CMU BVH skeletons")
    parser.add_argument("--filmstrips", type=Path, help="a filmstrip of each written clip in this folder")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=0, help="the backend's CPU threads (0: its default)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse(argv)
    files = rig_files(args.assets, args.rigs, bvh=not args.no_bvh)
    if not files:
        sys.exit(f"No rig file under {args.assets} matches {args.rigs or 'anything'}.")
    options = Options(args.frames, args.seed, filmstrips=args.filmstrips)
    began = time.perf_counter()
    module = headless.start_with_backend(headless.BackendOptions(device=args.device, threads=args.threads))
    rows = []
    try:
        for path in files:
            rows.append(run_file(path, args.assets, options))
            row = rows[-1]
            print(f"[{len(rows)}/{len(files)}] {row['rig']}: {row['outcome']} "
                  f"({row.get('seconds', 0):.1f} s)", flush=True)
    finally:
        headless.disable_extension(module)
    info = {**summary(rows), "seconds": round(time.perf_counter() - began, 1), "frames": args.frames,
            "seed": args.seed}
    print(table(rows))
    print(summary_line(info))
    print(f"{len(rows)} rig files in {info['seconds']:.0f} s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"summary": info, "rows": rows}, indent=2))
    return {"summary": info, "rows": rows}


if __name__ == "__main__":
    main()
