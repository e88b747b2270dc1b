"""Panel buttons whose capability lands with later work.

They are registered so the panel shows the whole workflow, but `poll` is always False and the
tooltip says what they wait for: none of them pretends to work.
"""

from __future__ import annotations

import bpy


def _pending(idname: str, label: str, waits_for: str) -> type:
    def poll(cls, context):
        cls.poll_message_set(f"{label} is not available yet: {waits_for}.")
        return False

    def execute(self, context):
        self.report({"ERROR"}, f"{label} is not available yet: {waits_for}.")
        return {"CANCELLED"}

    return type(
        "KIRIN_OT_" + idname.split(".")[1],
        (bpy.types.Operator,),
        {
            "bl_idname": idname,
            "bl_label": label,
            "bl_description": f"Not available yet: {waits_for}",
            "poll": classmethod(poll),
            "execute": execute,
        },
    )


CLASSES = (
    _pending("kirin.motion_from_video", "Motion From Video", "arrives with video motion extraction"),
)
