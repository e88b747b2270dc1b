"""Kirin — animate any rigged creature (Blender extension entry point).

Nothing heavy happens at import: bpy is only touched inside register()/unregister(), so the
engine (`kirin_addon`) can be imported from this package in a plain Python environment.
"""


def register() -> None:
    from . import operators, panels

    operators.register()
    panels.register()


def unregister() -> None:
    from . import operators, panels

    panels.unregister()
    operators.unregister()
