"""Auto-Bind and Transfer Weights: meshes → the backend (template fit, weight transfer) → armature,
vertex groups and an Armature modifier.

Both run in the backend (scipy, torch) through `backend_task.BackendOperator`: modal with Esc and
status-bar progress on a click, synchronous for scripts and headless runs. Nothing in the scene
changes until the result is written, in one undo step. Meshes travel in world space; Auto-Bind's
armature is created at the world origin, so its bones' rest transforms are the fitted bind
transforms B_j as they are, and the Armature modifier then deforms the mesh by G_jt · B_j⁻¹.

Vertices that did not take the source surface's weights are shown as vertex groups ("Kirin
Rejected", "Kirin Inpainted", "Kirin Fallback"; weight 1 where it applies), which Show Transfer
Mask opens in Weight Paint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

import bpy
import numpy as np
from bpy.props import EnumProperty, FloatProperty

from ..kirin_addon.backend.results import BindResult, TransferResult, WeightSet
from ..kirin_addon.bind.request import BindRequest, BindRequestError, TransferRequest
from . import scene_io
from .backend_task import BackendOperator, BackendTask, Written, start_task
from .common import connect
from .properties import FAMILY_ITEMS
from .scene_change import SceneChange
from .scene_io.mesh import read_surface, read_vertex_groups, write_mask_group, write_vertex_groups
from .scene_io.rig import create_armature

Checked = TypeVar("Checked", BindRequest, TransferRequest)
MASKS = {"rejected": "Kirin Rejected", "inpainted": "Kirin Inpainted", "fallback": "Kirin Fallback"}


def transfer_options(settings) -> dict:
    """Transfer settings of the panel (scene.kirin) as backend options."""
    return {
        "method": settings.weight_method.lower(),
        "max_distance": float(settings.max_distance),
        "max_angle": float(settings.max_angle),
        "smooth_iterations": int(settings.smooth_iterations),
        "max_influences": int(settings.max_influences),
    }


def write_masks(obj: bpy.types.Object, weights: WeightSet) -> dict[str, int]:
    """The mask vertex groups of one result; the number of vertices in each."""
    masks = {"rejected": ~weights.matched, "inpainted": weights.inpainted, "fallback": weights.fallback}
    for key, mask in masks.items():
        write_mask_group(obj, MASKS[key], mask)
    return {key: int(mask.sum()) for key, mask in masks.items()}


def _checked(request: Checked) -> Checked:
    """The request's own check (BindRequest, TransferRequest), its error as the SceneError the operator
    reports."""
    try:
        return request.check()
    except BindRequestError as exc:
        raise scene_io.SceneError(str(exc)) from None


def _unbound(obj: bpy.types.Object) -> None:
    """SceneError unless `obj` is a mesh no armature deforms yet (Auto-Bind makes a new rig)."""
    if obj is None or obj.type != "MESH":
        raise scene_io.SceneError("Select the mesh to bind.")
    for modifier in obj.modifiers:
        if modifier.type == "ARMATURE" and modifier.object is not None:
            raise scene_io.SceneError(
                f"'{obj.name}' is already bound to '{modifier.object.name}': remove its Armature modifier "
                "to bind it anew, or use Transfer Weights to re-skin it."
            )


# ----------------------------------------------------------------------------- Auto-Bind
@dataclass
class BindInput:
    meshes: list[str]  # object names, the active mesh first: the pieces of one character
    counts: list[int]  # each piece's vertices; the request's vertices are theirs one piece after another
    binding: BindRequest  # world space
    left_out: dict[str, str] = field(default_factory=dict)  # selected meshes not bound, and why

    @property
    def mesh(self) -> str:
        return self.meshes[0]


def meshes_to_bind(context) -> tuple[list[bpy.types.Object], dict[str, str]]:
    """The active mesh first, then the other selected meshes (a character's body, eyes, horns, armour:
    bound together to one rig); and the selected meshes left out, with why (no faces). SceneError when
    the active object is not a mesh, a piece is bound already, or no piece has faces."""
    active = context.active_object
    _unbound(active)
    others = sorted((o for o in context.selected_objects if o.type == "MESH" and o is not active),
                    key=lambda o: o.name)
    for obj in others:
        _unbound(obj)
    pieces, left_out = [], {}
    for obj in [active] + others:
        if len(obj.data.polygons) == 0:
            left_out[obj.name] = "no faces"
        else:
            pieces.append(obj)
    if not pieces:
        raise scene_io.SceneError(f"'{active.name}' has no faces: Auto-Bind needs a surface.")
    return pieces, left_out


def read_bind_input(context, family: str) -> BindInput:
    """The selected meshes' surfaces in world space, one after another, as one Auto-Bind request."""
    settings = context.scene.kirin
    pieces, left_out = meshes_to_bind(context)
    surfaces = [read_surface(obj) for obj in pieces]
    offsets = np.cumsum([0] + [len(v) for v, _ in surfaces])
    vertices = np.concatenate([v for v, _ in surfaces])
    triangles = np.concatenate([t + start for (_, t), start in zip(surfaces, offsets, strict=False)])
    binding = _checked(BindRequest(vertices, triangles, None if family == "auto" else family,
                                   settings.bind_weights.lower(), transfer_options(settings)))
    return BindInput([o.name for o in pieces], [len(v) for v, _ in surfaces], binding, left_out)


class BindTask(BackendTask):
    def __init__(self, client, request: BindInput):
        self.request = request
        more = len(request.meshes) - 1
        what = f"'{request.mesh}'" + (f" and {more} more" if more else "")
        super().__init__(client.auto_bind(request.binding), f"binding {what}")


def _piece_weights(weights: WeightSet, start: int, stop: int) -> WeightSet:
    return WeightSet(weights.joint_indices[start:stop], weights.joint_weights[start:stop],
                     weights.matched[start:stop], weights.inpainted[start:stop], weights.fallback[start:stop],
                     weights.stats)


def write_bind(context, request: BindInput, result: BindResult) -> tuple[bpy.types.Object, dict]:
    """The fitted armature at the world origin; each piece's vertex groups, modifier and parent."""
    pieces = [bpy.data.objects.get(name) for name in request.meshes]
    for name, obj, count in zip(request.meshes, pieces, request.counts, strict=True):
        if obj is None or obj.type != "MESH" or len(obj.data.vertices) != count:
            raise scene_io.SceneError(f"The mesh '{name}' changed while it was being bound; run Auto-Bind "
                                      "again.")
    result.rig.validate()
    body = pieces[0]
    collection = body.users_collection[0] if body.users_collection else context.scene.collection
    names = list(result.rig.names)
    counts = dict.fromkeys(MASKS, 0)
    with SceneChange(context.scene) as change:
        for obj in pieces:
            change.keep_vertex_groups(obj)
            change.keep_modifiers(obj)
            change.keep_parent(obj)
        arm = create_armature(result.rig, f"{body.name} Rig", collection)
        arm["kirin_template"] = result.family
        arm["kirin_fit_quality"] = result.quality
        start = 0
        for obj, count in zip(pieces, request.counts, strict=True):
            weights = _piece_weights(result.weights, start, start + count)
            start += count
            write_vertex_groups(obj, names, weights.joint_indices, weights.joint_weights)
            for key, value in write_masks(obj, weights).items():
                counts[key] += value
            modifier = obj.modifiers.new("Armature", "ARMATURE")
            modifier.object = arm
            world = obj.matrix_world.copy()
            obj.parent = arm
            obj.matrix_parent_inverse = arm.matrix_world.inverted()
            obj.matrix_world = world
    return arm, counts


class NeedsActiveMesh:
    """Operators on the active mesh: greyed out, with `mesh_hint` as the reason, without one."""

    mesh_hint = "Select a mesh."

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        if obj is None or obj.type != "MESH":
            cls.poll_message_set(cls.mesh_hint)
            return False
        return True


class KIRIN_OT_auto_bind(NeedsActiveMesh, BackendOperator, bpy.types.Operator):
    """Fit a template skeleton to the selected unrigged meshes (one character's pieces) and skin them: a
    new armature, vertex groups and an Armature modifier (runs in Kirin's backend)"""

    bl_idname = "kirin.auto_bind"
    bl_label = "Auto-Bind"
    bl_options = {"REGISTER", "UNDO"}

    family: EnumProperty(name="Template", items=FAMILY_ITEMS, default="AUTO")
    timeout: FloatProperty(name="Timeout (s)", default=900.0, min=1.0, options={"HIDDEN", "SKIP_SAVE"})

    mesh_hint = "Select the mesh to bind."

    def _start(self, context) -> BindTask | None:
        settings = context.scene.kirin
        family = (self.family if self.properties.is_property_set("family") else settings.bind_family).lower()
        return start_task(self, lambda: BindTask(connect(context), read_bind_input(context, family)))

    def _write(self, context, task: BindTask, result: BindResult) -> Written:
        request = task.request
        arm, counts = write_bind(context, request, result)
        written = Written({"mesh": request.mesh, "meshes": list(request.meshes),
                           "left_out": dict(request.left_out), "armature": arm.name, "family": result.family,
                           "quality": result.quality, "chamfer": result.chamfer, "scores": result.scores,
                           "method": result.method, "bones": result.rig.joint_count,
                           "vertices": int(request.binding.vertices.shape[0]), "masks": counts,
                           "seconds_backend": result.seconds, "weights": result.weights.stats})
        chamfer = result.chamfer.get("mean")
        pieces = len(request.meshes)
        text = (f"'{request.mesh}'" + (f" and {pieces - 1} more mesh(es)" if pieces > 1 else "")
                + f" bound to a {result.family} template ({result.rig.joint_count} "
                f"bones), fit {result.quality}"
                + (f" (Chamfer {100 * chamfer:.2f} % of its size)" if chamfer else "")
                + f"; {counts['inpainted']} vertices inpainted"
                + "".join(f"; '{name}' left out ({why})" for name, why in request.left_out.items()))
        if result.quality == "poor":
            written.say("WARNING", text + ": check the skeleton, or pick the template by hand")
        else:
            written.say("INFO", text)
        return written


# ----------------------------------------------------------------------------- Transfer Weights
@dataclass
class TransferInput:
    source: str
    groups: list[str]
    targets: list[str]


class TransferTask(BackendTask):
    def __init__(self, client, request: TransferInput, transfer: TransferRequest):
        self.request = request
        super().__init__(client.transfer_weights(transfer), f"transferring weights from '{request.source}'")


def read_transfer(context) -> tuple[TransferInput, TransferRequest]:
    """Source (the active mesh, its vertex groups) and targets (the other selected meshes), with the
    panel's transfer options."""
    source = context.active_object
    if source is None or source.type != "MESH":
        raise scene_io.SceneError("Make the mesh whose weights you want to copy the active object.")
    targets = [o for o in context.selected_objects if o.type == "MESH" and o != source]
    if not targets:
        raise scene_io.SceneError("Select the meshes to re-skin, then the source mesh last (active).")
    names, indices, weights = read_vertex_groups(source)
    own = {i for i, n in enumerate(names) if n in MASKS.values()}  # never transfer our own masks
    weights = np.where(np.isin(indices, list(own)), 0.0, weights)
    if not np.any(weights > 0):
        raise scene_io.SceneError(f"'{source.name}' has no vertex weights to transfer.")
    vertices, triangles = read_surface(source)
    if triangles.shape[0] == 0:
        raise scene_io.SceneError(f"'{source.name}' has no faces to transfer from.")
    surfaces = [(o.name, *read_surface(o)) for o in targets]
    request = TransferInput(source.name, names, [o.name for o in targets])
    transfer = _checked(TransferRequest(vertices, triangles, names, indices, weights, surfaces,
                                        transfer_options(context.scene.kirin)))
    return request, transfer


def write_transfer(context, request: TransferInput, result: TransferResult) -> dict[str, dict]:
    """Vertex groups on every target (replacing groups of the same names) and, where the source is
    deformed by an armature and the target is not, the same Armature modifier."""
    source = bpy.data.objects.get(request.source)
    armature = None
    if source is not None:
        armature = next((m.object for m in source.modifiers if m.type == "ARMATURE" and m.object), None)
    out = {}
    for name in request.targets:
        obj = bpy.data.objects.get(name)
        weights = result.targets[name]
        if obj is None or obj.type != "MESH" or len(obj.data.vertices) != weights.joint_indices.shape[0]:
            raise scene_io.SceneError(f"The mesh '{name}' changed during the transfer; run it again.")
    with SceneChange(context.scene) as change:
        for name in request.targets:
            change.keep_vertex_groups(bpy.data.objects[name])
            change.keep_modifiers(bpy.data.objects[name])
        for name in request.targets:
            out[name] = _write_target(bpy.data.objects[name], result.groups, result.targets[name], armature)
    return out


def _write_target(obj: bpy.types.Object, groups: list[str], weights: WeightSet, armature) -> dict:
    """One target's transferred groups and masks (and the source's Armature modifier where it has none)."""
    used = sorted(set(weights.joint_indices[weights.joint_weights > 0].tolist()))
    write_vertex_groups(obj, groups, weights.joint_indices, weights.joint_weights, only=used)
    counts = write_masks(obj, weights)
    if armature is not None and not any(m.type == "ARMATURE" and m.object for m in obj.modifiers):
        modifier = obj.modifiers.new("Armature", "ARMATURE")
        modifier.object = armature
    return {**counts, "vertices": int(weights.joint_indices.shape[0]), "groups": len(used),
            "stats": weights.stats}


class KIRIN_OT_transfer_weights(NeedsActiveMesh, BackendOperator, bpy.types.Operator):
    """Copy the active mesh's skin weights onto the other selected meshes (robust transfer with
    weight inpainting, or nearest vertices); runs in Kirin's backend"""

    bl_idname = "kirin.transfer_weights"
    bl_label = "Transfer Weights"
    bl_options = {"REGISTER", "UNDO"}

    timeout: FloatProperty(name="Timeout (s)", default=900.0, min=1.0, options={"HIDDEN", "SKIP_SAVE"})

    mesh_hint = "Select the target meshes, then the weighted source mesh last (active)."

    def _start(self, context) -> TransferTask | None:
        def make() -> TransferTask:
            request, transfer = read_transfer(context)
            return TransferTask(connect(context), request, transfer)

        return start_task(self, make)

    def _write(self, context, task: TransferTask, result: TransferResult) -> Written:
        counts = write_transfer(context, task.request, result)
        inpainted = sum(c["inpainted"] for c in counts.values())
        fallback = sum(c["fallback"] for c in counts.values())
        written = Written({"source": task.request.source, "targets": counts, "method": result.method,
                           "seconds_backend": result.seconds})
        written.say("INFO", f"Weights of '{task.request.source}' on {len(counts)} mesh(es) in "
                    f"{result.seconds:.1f} s ({result.method}): {inpainted} vertices inpainted"
                    + (f", {fallback} on pieces far from the source" if fallback else ""))
        return written


class KIRIN_OT_show_transfer_mask(bpy.types.Operator):
    """Show which vertices did not take the source's weights directly (Weight Paint, weight 1 = yes)"""

    bl_idname = "kirin.show_transfer_mask"
    bl_label = "Show Transfer Mask"
    bl_options = {"REGISTER", "UNDO"}

    mask: EnumProperty(name="Mask", items=[(k.upper(), v, "") for k, v in MASKS.items()], default="INPAINTED")

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        if obj is None or obj.type != "MESH" or not any(obj.vertex_groups.get(n) for n in MASKS.values()):
            cls.poll_message_set("Run Auto-Bind or Transfer Weights on this mesh first.")
            return False
        return True

    def execute(self, context):
        obj = context.active_object
        group = obj.vertex_groups.get(MASKS[self.mask.lower()])
        if group is None:
            self.report({"INFO"}, f"No vertex of '{obj.name}' is in '{MASKS[self.mask.lower()]}'.")
            return {"CANCELLED"}
        obj.vertex_groups.active_index = group.index
        if context.mode != "PAINT_WEIGHT":
            bpy.ops.object.mode_set(mode="WEIGHT_PAINT")
        return {"FINISHED"}


CLASSES = (KIRIN_OT_auto_bind, KIRIN_OT_transfer_weights, KIRIN_OT_show_transfer_mask)
