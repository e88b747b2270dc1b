"""The N-panel draws in every state a user sees it in, and every property it shows exists."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from blender_support import activate, headless


class Recorder:
    """Stands in for a panel's `layout`: records what is drawn and checks each property by name."""

    def __init__(self, shown: list[str]):
        self.shown = shown

    def prop(self, data, name, **_):
        assert name in data.bl_rna.properties, f"{type(data).__name__} has no property '{name}'"
        self.shown.append(name)

    def prop_search(self, data, name, search_data, search_name, **_):
        assert name in data.bl_rna.properties and search_name in search_data.bl_rna.properties
        self.shown.append(name)

    def operator(self, idname, **_):
        category, name = idname.split(".")
        assert hasattr(getattr(__import__("bpy").ops, category), name), idname
        self.shown.append(idname)

        return SimpleNamespace()  # the operator's properties: `row.operator(...).mask = "INPAINTED"`

    def template_list(self, *args, **_):
        self.shown.append(args[0])

    def row(self, **_):
        return self

    def column(self, **_):
        return self

    def grid_flow(self, **_):
        return self

    def label(self, **_):
        """Text only: nothing to check."""

    def separator(self, **_):
        """Space only: nothing to check."""


class StandIn:
    """The panel instance Blender would pass as `self`: the panel class's methods, our layout."""

    def __init__(self, panel: type, layout: Recorder):
        self.panel, self.layout = panel, layout

    def __getattr__(self, name):
        attr = getattr(self.panel, name)
        return attr.__get__(self) if callable(attr) else attr


def _draw_all(bpy) -> list[str]:
    shown: list[str] = []
    for name in ("KIRIN_PT_main", "KIRIN_PT_generate", "KIRIN_PT_video", "KIRIN_PT_motion_file",
                 "KIRIN_PT_pose_space", "KIRIN_PT_binding", "KIRIN_PT_nla"):
        panel = getattr(bpy.types, name)
        if hasattr(panel, "poll") and not panel.poll(bpy.context):
            continue
        panel.draw(StandIn(panel, Recorder(shown)), bpy.context)
    return shown


@pytest.mark.parametrize("mode", ["nothing selected", "armature", "pose mode"])
def test_every_panel_draws_and_shows_real_properties(blender, mode):
    bpy = blender
    if mode != "nothing selected":
        arm, _meshes = headless.builtin_creature(0)
        activate(arm)
        if mode == "pose mode":
            bpy.ops.object.mode_set(mode="POSE")
    shown = _draw_all(bpy)
    assert {"prompt", "frames", "driving_video", "motion_file", "bind_family", "nla_track"} <= set(shown)
    assert "kirin.generate_motion" in shown and "kirin.bake_to_nla" in shown
    if mode != "nothing selected":
        assert {"up_axis", "forward_axis", "pose_strength", "kirin.walk_between_keys"} <= set(shown)
