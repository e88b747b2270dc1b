"""Constrained alignment of two unordered trees, for the joint mapping (`joint_mapping`).

`align_trees` finds the best one-to-one set of (target, source) joint pairs by dynamic programming
over both hierarchies (Zhang's constrained alignment of unordered trees, with a bipartite
assignment at each branching; see the `joint_mapping` module docstring), where a target subtree may
instead go, at a penalty, into the best source subtree unrelated to its parent's image.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.rig import Rig

GAP = 0.3  # cost of skipping a joint between mapped ones
ANCESTRY = 1.0  # cost of a mapped joint whose image is not below its nearest mapped ancestor's image


def _hungarian_min(cost: np.ndarray) -> list[tuple[int, int]]:
    """Minimum-cost assignment of every row of an (n, m) matrix with n <= m (numpy fallback)."""
    n, m = cost.shape
    u, v = np.zeros(n + 1), np.zeros(m + 1)
    owner = np.zeros(m + 1, dtype=np.int64)  # row (1-based) assigned to each column; column 0 is virtual
    way = np.zeros(m + 1, dtype=np.int64)
    for row in range(1, n + 1):
        owner[0] = row
        col = 0
        reduced = np.full(m + 1, np.inf)
        used = np.zeros(m + 1, dtype=bool)
        while owner[col] != 0:
            used[col] = True
            r = owner[col]
            free = ~used
            free[0] = False
            candidate = cost[r - 1] - u[r] - v[1:]
            better = free[1:] & (candidate < reduced[1:])
            reduced[1:][better] = candidate[better]
            way[1:][better] = col
            masked = np.where(free, reduced, np.inf)
            nxt = int(np.argmin(masked))
            delta = masked[nxt]
            u[owner[used]] += delta
            v[used] -= delta
            reduced[free] -= delta
            col = nxt
        while col:
            prev = way[col]
            owner[col] = owner[prev]
            col = prev
    return [(int(owner[c]) - 1, c - 1) for c in range(1, m + 1) if owner[c]]


def _assign_max(weights: np.ndarray) -> list[tuple[int, int]]:
    """Maximum-weight assignment (rows to distinct columns) of a small non-negative matrix."""
    try:  # scipy is there outside Blender; inside Blender only numpy is guaranteed
        from scipy.optimize import linear_sum_assignment
    except ImportError:
        linear_sum_assignment = None
    if linear_sum_assignment is not None:
        rows, cols = linear_sum_assignment(-weights)
        return list(zip(rows.tolist(), cols.tolist(), strict=True))
    if weights.shape[0] <= weights.shape[1]:
        return _hungarian_min(-weights)
    return [(r, c) for c, r in _hungarian_min(-weights.T)]


def _close(a: float, b: float) -> bool:
    return bool(np.isfinite(a)) and abs(a - b) <= 1e-9 * (1.0 + abs(a) + abs(b))


def _tree_tables(children: list[list[int]]) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Nodes grouped by height (leaves first), children padded with the sentinel index len(children)
    (one past the last node), and the child counts."""
    count = len(children)
    height = np.zeros(count, dtype=np.int64)
    order: list[int] = []
    stack = [count - 1]  # the virtual root is last and above everything
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(children[node])
    for node in reversed(order):
        if children[node]:
            height[node] = 1 + max(height[c] for c in children[node])
    levels = [np.flatnonzero(height == h) for h in range(int(height.max()) + 1)]
    width = max(1, max(len(k) for k in children))
    padded = np.full((count, width), count, dtype=np.int64)
    for node, kids in enumerate(children):
        padded[node, : len(kids)] = kids
    return levels, padded, np.array([len(k) for k in children])


def _unrelated(children: list[list[int]]) -> np.ndarray:
    """(n, n) bool: neither node is in the other's subtree (the last node is the virtual root)."""
    count = len(children)
    below = np.eye(count, dtype=bool)  # [a, j]: j is in a's subtree
    order, stack = [], [count - 1]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(children[node])
    for node in reversed(order):
        for c in children[node]:
            below[node] |= below[c]
    return ~(below | below.T)


@dataclass
class _Alignment:
    """Tables of the alignment's dynamic programme (see align_trees). Index n_t / n_s is a rig's
    virtual root, n_t + 1 / n_s + 1 the padding's sentinel, which never wins a max."""

    t_kids: list[list[int]]
    s_kids: list[list[int]]
    gain: np.ndarray  # [t, s]: the pair's score where positive, else −inf
    unrelated: np.ndarray  # source joints (with the virtual root), see _unrelated
    gap: float
    penalty: float
    d: np.ndarray  # [t, s]: best alignment of t's subtree into s's subtree
    f: np.ndarray  # [t, s]: of t's child forest into s's child forest
    escape: np.ndarray  # [c, s]: c's subtree placed outside s's subtree and line, less the penalty (≥ 0)

    def fill_escapes(self, rows: np.ndarray) -> None:
        """Escapes of finished rows: the best d[c, s'] over s' unrelated to s, less the penalty."""
        width = self.unrelated.shape[0]
        for c in rows:
            best = np.where(self.unrelated, self.d[c, :width][None, :], -np.inf).max(axis=1)
            self.escape[c, :width] = np.maximum(best - self.penalty, 0.0)

    def escape_target(self, c: int, s: int) -> int:
        width = self.unrelated.shape[0]
        return int(np.argmax(np.where(self.unrelated[s], self.d[c, :width], -np.inf)))

    def matching(self, t: int, s: int) -> tuple[float, list[tuple[int, int]], list[int]]:
        """t's children into s's children (distinct subtrees), or each elsewhere at the penalty:
        the value, the pairs of children and the escaped children."""
        tk, sk = self.t_kids[t], self.s_kids[s]
        escapes = self.escape[tk, s]
        value = float(escapes.sum())
        pairs: list[tuple[int, int]] = []
        if tk and sk:
            gains = self.d[np.ix_(tk, sk)] - escapes[:, None]
            if len(tk) == 1 or len(sk) == 1:
                picked = [np.unravel_index(int(np.argmax(gains)), gains.shape)]
            else:
                picked = _assign_max(np.maximum(gains, 0.0))
            picked = [(int(r), int(c)) for r, c in picked if gains[r, c] > 0.0]
            value += float(sum(gains[r, c] for r, c in picked))
            pairs = [(tk[r], sk[c]) for r, c in picked]
        placed = {a for a, _ in pairs}
        return value, pairs, [c for c, e in zip(tk, escapes, strict=True) if c not in placed and e > 0.0]


def _new_alignment(score: np.ndarray, t_kids: list[list[int]], s_kids: list[list[int]], gap: float,
                   penalty: float) -> _Alignment:
    nt, ns = score.shape
    gain = np.full((nt + 1, ns + 1), -np.inf)
    gain[:nt, :ns] = np.where(score > 0.0, score, -np.inf)
    tables = [np.full((nt + 2, ns + 2), -np.inf) for _ in range(2)]
    return _Alignment(t_kids, s_kids, gain, _unrelated(s_kids), gap, penalty, *tables,
                      np.zeros((nt + 2, ns + 2)))


def _fill_block(al: _Alignment, ts: np.ndarray, tp: np.ndarray, tc: np.ndarray, ss: np.ndarray,
                sp: np.ndarray, sc: np.ndarray) -> None:
    """d and f for target joints ts (children tp, counts tc) against source joints ss, in bulk."""
    d, f, gap = al.d, al.f, al.gap
    escapes = al.escape[tp[:, :, None], ss[None, None, :]]  # (a, width_t, b); 0 for the padding
    # Children matched to children (one target child, or one source child, in bulk), the other
    # children placed elsewhere at the penalty.
    one_t = d[tp[:, :1, None], sp[None, :, :]].max(axis=-1) - escapes[:, 0]  # (a, b)
    one_s = (d[tp[:, :, None], sp[None, :, 0]] - escapes).max(axis=1)
    match = escapes.sum(axis=1) + np.maximum(np.where(tc == 1, one_t, np.where(sc == 1, one_s, 0.0)), 0.0)
    for i, j in zip(*np.nonzero((tc >= 2) & (sc >= 2)), strict=True):
        match[i, j] = al.matching(int(ts[i]), int(ss[j]))[0]
    block_f = np.maximum.reduce([
        match,
        f[ts[:, None, None], sp[None]].max(axis=-1) - gap,  # source joint skipped
        f[tp[:, :, None], ss[None, None, :]].max(axis=1) - gap,  # target joint skipped
    ])
    f[np.ix_(ts, ss)] = block_f
    d[np.ix_(ts, ss)] = np.maximum.reduce([
        block_f + al.gain[np.ix_(ts, ss)],
        block_f - 2.0 * gap,
        np.zeros_like(block_f),
        d[ts[:, None, None], sp[None]].max(axis=-1) - gap,
        d[tp[:, :, None], ss[None, None, :]].max(axis=1) - gap,
    ])


def _backtrack(al: _Alignment, nt: int, ns: int) -> list[tuple[int, int]]:
    """The pairs of the optimum, re-deriving which option gave each table entry."""
    d, f, gap = al.d, al.f, al.gap

    def f_options(t: int, s: int) -> list[tuple[float, tuple]]:
        options: list[tuple[float, tuple]] = [(al.matching(t, s)[0], ("match",))]
        options += [(f[t, c] - gap, ("f", t, c)) for c in al.s_kids[s]]
        options += [(f[c, s] - gap, ("f", c, s)) for c in al.t_kids[t]]
        return options

    def d_options(t: int, s: int) -> list[tuple[float, tuple]]:
        options: list[tuple[float, tuple]] = [(f[t, s] + al.gain[t, s], ("map",)),
                                              (f[t, s] - 2.0 * gap, ("f", t, s))]
        options += [(d[t, c] - gap, ("d", t, c)) for c in al.s_kids[s]]
        options += [(d[c, s] - gap, ("d", c, s)) for c in al.t_kids[t]]
        return options

    result: list[tuple[int, int]] = []
    stack: list[tuple] = [("d", nt, ns)]
    while stack:
        what, t, s = stack.pop()
        table, options = (d, d_options) if what == "d" else (f, f_options)
        if table[t, s] <= 0.0:
            continue
        action = next((a for value, a in options(t, s) if _close(value, table[t, s])), None)
        if action is None:  # cannot happen: the optimum is one of the options
            raise AssertionError("joint alignment backtracking failed")
        if action[0] == "map":
            result.append((t, s))
            stack.append(("f", t, s))
        elif action[0] == "match":
            _, pairs, escaped = al.matching(t, s)
            stack.extend(("d", a, b) for a, b in pairs if d[a, b] > 0.0)
            stack.extend(("d", c, al.escape_target(c, s)) for c in escaped)
        else:
            stack.append(action)
    return result


def align_trees(score: np.ndarray, target: Rig, source: Rig, gap: float = GAP, penalty: float = ANCESTRY,
                 fixed: np.ndarray | None = None) -> list[tuple[int, int]]:
    """Best set of (target, source) pairs, ancestry kept where it pays.

    Maximises the sum of the pairs' scores minus `gap` for every joint skipped between mapped
    ones (so a chain maps contiguously where it can: the foot, not the toe, follows a foot) and
    minus `penalty` for every target subtree placed outside the image of its parent's subtree
    (ears beside the head, legs beside the hips, an IK foot outside the leg chain).
    D[t, s]: best alignment of the subtree of t into the subtree of s; F[t, s]: of t's child
    forest into s's child forest, where each child either goes into a distinct child subtree of
    s or, at the penalty, into the best subtree unrelated to s. Each rig gets a virtual root above
    its roots. The tables are filled a block of (target height, source height) at a time,
    children before parents. Subtrees placed elsewhere may claim a source joint twice: the
    caller keeps the better pair. The subtrees of `fixed` target joints (helper bones) stay in place.
    """
    nt, ns = target.joint_count, source.joint_count
    t_kids = [list(k) for k in target.children] + [[int(r) for r in target.roots]]
    s_kids = [list(k) for k in source.children] + [[int(r) for r in source.roots]]
    t_levels, t_pad, t_count = _tree_tables(t_kids)
    s_levels, s_pad, s_count = _tree_tables(s_kids)
    al = _new_alignment(score, t_kids, s_kids, gap, penalty)
    movable = np.ones(nt + 1, dtype=bool)
    if fixed is not None:
        movable[:nt] = ~fixed
    for ts in t_levels:
        for ss in s_levels:
            _fill_block(al, ts, t_pad[ts], t_count[ts][:, None], ss, s_pad[ss], s_count[ss][None, :])
        al.fill_escapes(ts[movable[ts]])
    return _backtrack(al, nt, ns)
