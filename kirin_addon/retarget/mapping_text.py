"""The editable text form of a joint mapping ("target = source" lines) and the checks of a mapping."""

from __future__ import annotations

from ..core.rig import Rig
from .joint_names import parse_joint_name

__all__ = ["mapping_to_text", "mapping_from_text", "validate_mapping"]

_HEADER = "# Kirin joint mapping: one 'target = source' line per target joint; 'target =' keeps it at rest."


def mapping_to_text(mapping: dict[str, str | None]) -> str:
    """One "target = source" line per joint ("target =" for unmapped), after a comment header."""
    lines = [_HEADER]
    lines.extend(f"{t} = {s}" if s else f"{t} =" for t, s in mapping.items())
    return "\n".join(lines) + "\n"


def mapping_from_text(text: str, source: Rig, target: Rig) -> dict[str, str | None]:
    """Parse mapping_to_text's format; every target joint is in the result (missing lines: None).

    Blank lines and lines starting with '#' are ignored. Raises ValueError naming the first bad
    line: no '=', an unknown target or source joint, or a target listed twice.
    """
    targets, sources = set(target.names), set(source.names)
    mapping: dict[str, str | None] = {name: None for name in target.names}
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            raise ValueError(f"Line {number} ('{line}'): expected 'target = source'.")
        # Names may contain '=' in theory: take the split whose two sides are known joints.
        splits = [(line[:i].strip(), line[i + 1:].strip()) for i, ch in enumerate(line) if ch == "="]
        valid = [(t, s) for t, s in splits if t in targets and (not s or s in sources)]
        if not valid:
            left, right = splits[0]
            if left not in targets:
                raise ValueError(f"Line {number} ('{line}'): '{left}' is not a joint of the target rig.")
            raise ValueError(f"Line {number} ('{line}'): '{right}' is not a joint of the source rig.")
        name, value = valid[0]
        if name in seen:
            raise ValueError(f"Line {number} ('{line}'): target joint '{name}' was already mapped "
                             f"on line {seen[name]}.")
        seen[name] = number
        mapping[name] = value or None
    return mapping


def validate_mapping(mapping: dict[str, str | None], source: Rig, target: Rig) -> list[str]:
    """Raise ValueError if the mapping names joints the rigs lack; return warnings otherwise.

    Target joints missing from the mapping count as unmapped. Warnings (for the user, not
    errors): a source joint followed by several target joints, a pair on opposite sides by
    name, a pair that reverses ancestry.
    """
    if not isinstance(mapping, dict):
        raise ValueError("A joint mapping must be a dict of target joint → source joint or None.")
    targets, sources = set(target.names), set(source.names)
    for t, s in mapping.items():
        if t not in targets:
            raise ValueError(f"Mapping names '{t}', which is not a joint of the target rig.")
        if s is not None and not isinstance(s, str):
            raise ValueError(f"Mapping of '{t}' must be a source joint name or None, got {s!r}.")
        if s and s not in sources:
            raise ValueError(f"Mapping sends '{t}' to '{s}', which is not a joint of the source rig.")
    warnings: list[str] = []
    users: dict[str, list[str]] = {}
    for t, s in mapping.items():
        if s:
            users.setdefault(s, []).append(t)
    for s, ts in users.items():
        if len(ts) > 1:
            warnings.append(f"Source joint '{s}' drives several target joints: {', '.join(ts)}.")
    for t, s in mapping.items():
        if s and parse_joint_name(t).side * parse_joint_name(s).side < 0:
            warnings.append(f"'{t}' follows '{s}', which is on the other side.")
    # Ancestry: the source image of a joint's nearest mapped ancestor should be an ancestor of its image.
    image = {target.index(t): source.index(s) for t, s in mapping.items() if s}
    for t, s in image.items():
        a = int(target.parents[t])
        while a >= 0 and a not in image:
            a = int(target.parents[a])
        if a < 0 or image[a] == s:
            continue
        p = int(source.parents[s])
        while p >= 0 and p != image[a]:
            p = int(source.parents[p])
        if p < 0:
            warnings.append(f"'{target.names[t]}' follows '{source.names[s]}', which is not below "
                            f"'{source.names[image[a]]}' (followed by its ancestor '{target.names[a]}').")
    return warnings
