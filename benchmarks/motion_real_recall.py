"""R@1 of the held-out rigs' other actions (idle, eat, attack, jump, death, hit) in the shipped
evaluator's space (models/weights/evaluator): each generated clip's prompt ranked among the prompts
of the other cases (of other actions), beside the same for the rig's own authored clip of the action.
Issue 17: the generated R@1 should reach 0.8× the authored one.

The motions are read from the scene (the generated Action and the authored one, at the evaluator's
30 fps), their features computed on the rig in its canonical frame, as the cache computes them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kirin.kirin_addon.core.canonical import CanonicalFrame, canonical_rig
from kirin.kirin_addon.core.motion import Motion
from kirin.kirin_addon.core.rig import Rig
from kirin.kirin_addon.core.skinning import SkinnedMesh
from kirin.kirin_addon.eval.distributions import r_precision

EVALUATOR_FPS = 30.0


@dataclass
class RecallCase:
    label: str  # the action (distractors are prompts of other actions)
    prompt: str
    rig: Rig  # armature space
    frame: CanonicalFrame
    mesh: SkinnedMesh | None
    generated: Motion
    authored: Motion


def read_case(character, clip, prompt: str, made, authored_action, authored_frames: list[int]) -> RecallCase:
    """One case from the scene: the generated action over its range, the authored one over its frames."""
    import bpy

    from kirin.operators.scene_io.action import read_action
    from kirin.operators.scene_io.mesh import read_armature_skin

    arm, rig = character.arm, character.rig
    generated = read_action(arm, rig, made, fps=EVALUATOR_FPS)
    authored = read_action(arm, rig, authored_action, fps=EVALUATOR_FPS,
                                    frame_range=(min(authored_frames), max(authored_frames)))
    mesh = read_armature_skin(bpy.context, arm, rig)
    return RecallCase(clip.kind, prompt, rig, character.frame, mesh, generated, authored)


def recall(cases: list[RecallCase]) -> dict:
    """R@1 (and R@3) of the generated and the authored motions against the cases' prompts."""
    from kirin.kirin_addon.generate.features import motion_features
    from kirin.models.data.cache import rig_arrays
    from kirin.models.encoders.text import load_text_encoder
    from kirin.models.eval.evaluator import TextMotionEvaluator

    if len({c.label for c in cases}) < 2:
        return {"cases": len(cases), "reason": "fewer than two actions: nothing to rank against"}
    evaluator = TextMotionEvaluator.load()
    text = load_text_encoder()
    generated, authored = [], []
    for case in cases:
        canon = canonical_rig(case.rig, case.frame)
        arrays = rig_arrays(canon, case.mesh, text)
        generated.append((motion_features(canon, case.rig, case.generated).features, arrays))
        authored.append((motion_features(canon, case.rig, case.authored).features, arrays))
    texts = evaluator.embed_texts([c.prompt for c in cases])
    labels = [c.label for c in cases]
    ours_embedded, theirs_embedded = evaluator.embed_motions(generated), evaluator.embed_motions(authored)
    ours = r_precision(ours_embedded, texts, labels)
    theirs = r_precision(theirs_embedded, texts, labels)
    return {
        "cases": len(cases),
        "actions": sorted(set(labels)),
        "generated_r1": float(ours[0]), "generated_r3": float(ours[2]),
        "authored_r1": float(theirs[0]), "authored_r3": float(theirs[2]),
        "ratio_r1": float(ours[0] / theirs[0]) if theirs[0] > 0 else None,
        "chance_r1": float(np.mean([1.0 / (1 + min(31, sum(lb != c.label for lb in labels)))
                                    for c in cases])),
        "first_by_action": {label: {"generated": _first(ours_embedded, texts, labels, label),
                                    "authored": _first(theirs_embedded, texts, labels, label)}
                            for label in sorted(set(labels))},
    }


def _first(motions: np.ndarray, texts: np.ndarray, labels: list[str], label: str) -> float:
    """Share of `label`'s cases whose own prompt is the nearest among their own and every other action's."""
    hits = []
    for i, own in enumerate(labels):
        if own != label:
            continue
        others = [k for k, other in enumerate(labels) if other != own]
        mine = np.linalg.norm(motions[i] - texts[i])
        hits.append(bool(np.all(np.linalg.norm(motions[i][None] - texts[others], axis=-1) > mine)))
    return float(np.mean(hits)) if hits else float("nan")
