"""Training tensors for Auto-Bind's learned weights, from tools/bind_weight_data.py's characters.

Each character gives its sampled vertices' features (kirin_addon/bind/weight_features.py) and, for
the deformation loss, the vertex at rest, its candidate bones' rigid moves in every frame (started
from the moves that best reproduce the artist's deformed mesh, then fitted with the weights) and
where the artist's mesh has it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ...kirin_addon.bind.weight_features import WeightFeatures, weight_features
from ...kirin_addon.core.rig import Rig
from .. import geometry

CLASSICAL_KEYS = {"heat": "weights_heat", "blend": "weights_heat+prior", "transfer": "weights_robust"}


@dataclass
class Character:
    """One re-bound character as tools/bind_weight_data.py wrote it."""

    name: str
    family: str
    vertices: np.ndarray  # (V,3) world = the fitted rig's space
    triangles: np.ndarray
    rest: np.ndarray  # (J,4,4) fitted rig
    tails: np.ndarray
    parents: np.ndarray
    deform: np.ndarray
    moves: np.ndarray  # (T,J,4,4) fitted bones' best rigid moves (frame 0: rest)
    truth: np.ndarray  # (T,V,3) the artist's deformed mesh
    weights: dict[str, np.ndarray]  # classical sets and "artist", (V,J)

    @classmethod
    def load(cls, path: Path) -> Character:
        data = np.load(path)
        weights = {name: data[key] for name, key in CLASSICAL_KEYS.items()} | {"artist": data["artist"]}
        return cls(str(data["name"]), str(data["family"]), data["vertices"], data["triangles"], data["rest"],
                   data["tails"], data["parents"], data["deform"], data["moves"], data["truth"], weights)

    @property
    def diagonal(self) -> float:
        return float(np.linalg.norm(np.ptp(self.vertices, axis=0)))

    def features(self) -> WeightFeatures:
        return weight_features(self.vertices, self.triangles, self.rig, self.weights)

    @property
    def rig(self) -> Rig:
        names = [str(j) for j in range(len(self.parents))]
        return Rig(names, self.parents, self.rest, self.tails, self.deform)


@dataclass
class PairTensors:
    """Sampled vertices of many characters, ready for the loss. Positions are in diagonals of their
    character; a candidate's bone is a row of the move table (`bone`: the characters' bones one
    after the other)."""

    features: torch.Tensor  # (N,K,F)
    valid: torch.Tensor  # (N,K) bool
    rest: torch.Tensor  # (N,3) the vertex at rest
    bone: torch.Tensor  # (N,K) long: row of each candidate's bone in the move table
    truth: torch.Tensor  # (N,T,3) the artist's deformed vertex
    character: torch.Tensor  # (N,) index into `names`
    names: list[str]
    classical: dict[str, torch.Tensor]  # (N,K) each classical set's weights on the candidates

    def __len__(self) -> int:
        return len(self.valid)

    def take(self, rows: torch.Tensor) -> PairTensors:
        return PairTensors(self.features[rows], self.valid[rows], self.rest[rows], self.bone[rows],
                           self.truth[rows], self.character[rows], self.names,
                           {k: v[rows] for k, v in self.classical.items()})


class MoveTable(torch.nn.Module):
    """Every character bone's rigid move in every frame: the stored best moves (the artist's
    weights' best pose) times a learned correction about the bone's head, so training fits the
    pose to the weights as the weights-alone measure does (each weight set gets its best pose)."""

    def __init__(self, moves: torch.Tensor, heads: torch.Tensor):
        super().__init__()
        self.register_buffer("moves", moves)  # (B,T,3,4) in diagonals
        self.register_buffer("heads", heads)  # (B,3)
        self.turn = torch.nn.Parameter(torch.zeros(moves.shape[:2] + (3,)))  # rotation vectors
        self.shift = torch.nn.Parameter(torch.zeros(moves.shape[:2] + (3,)))

    def affine(self) -> torch.Tensor:
        """(B,T,3,4) every bone's move in every frame: the correction about its head, then the stored move."""
        turn = geometry.rotvec_to_matrix(self.turn)  # (B,T,3,3)
        head = self.heads[:, None, :, None]  # (B,1,3,1)
        offset = (head - turn @ head)[..., 0] + self.shift  # x → turn·x + offset
        stored = self.moves[..., :3]
        return torch.cat([stored @ turn, (stored @ offset[..., None] + self.moves[..., 3:])], dim=-1)

    def blend(self, weights: torch.Tensor, pairs: PairTensors) -> torch.Tensor:
        """(N,T,3) each vertex moved by its candidates' moves blended with `weights` (N,K): one
        sparse (N,B) × (B,T·12) product, so the gradient never scatters per vertex and candidate."""
        count, candidates = pairs.bone.shape
        rows = torch.arange(count)[:, None].expand(count, candidates).reshape(-1)
        blend = torch.sparse_coo_tensor(torch.stack([rows, pairs.bone.reshape(-1)]), weights.reshape(-1),
                                        (count, len(self.moves)), check_invariants=False)
        affine = self.affine()
        moves = torch.sparse.mm(blend, affine.reshape(len(affine), -1)).reshape(count, *affine.shape[1:])
        return torch.einsum("ntab,nb->nta", moves[..., :3], pairs.rest) + moves[..., 3]


def character_pairs(character: Character, rows: np.ndarray) -> dict[str, np.ndarray]:
    """The pair arrays of `rows` (vertex indices) of one character (bones indexed in its own rig)."""
    found = character.features()
    candidates = found.candidates[rows]
    truth = np.swapaxes(character.truth[:, rows], 0, 1) / character.diagonal
    classical = {name: np.take_along_axis(w[rows], candidates, axis=1)
                 for name, w in character.weights.items()}
    return {"features": found.features[rows], "valid": found.valid[rows],
            "rest": character.vertices[rows] / character.diagonal, "bone": candidates, "truth": truth,
            **{f"classical_{k}": v for k, v in classical.items()}}


def load_pairs(files: list[Path], per_character: int, seed: int) -> tuple[PairTensors, MoveTable]:
    """Up to `per_character` vertices of each character file (seeded), all in one set of tensors,
    and the move table of all their bones."""
    parts, names, moves, heads, offset = [], [], [], [], 0
    for n, path in enumerate(files):
        character = Character.load(path)
        rng = np.random.default_rng([seed, n])
        count = len(character.vertices)
        rows = np.sort(rng.choice(count, min(per_character, count), replace=False))
        pairs = character_pairs(character, rows)
        pairs["bone"] = pairs["bone"] + offset
        pairs["character"] = np.full(len(rows), n)
        parts.append(pairs)
        names.append(character.name)
        scaled = np.swapaxes(character.moves[:, :, :3, :], 0, 1).copy()  # (J,T,3,4)
        scaled[..., 3] /= character.diagonal
        moves.append(scaled)
        heads.append(character.rest[:, :3, 3] / character.diagonal)
        offset += len(character.rest)
    joined = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    tensor = {k: torch.from_numpy(np.asarray(v, dtype=np.float32 if v.dtype.kind == "f" else v.dtype))
              for k, v in joined.items()}
    classical = {k.removeprefix("classical_"): v for k, v in tensor.items() if k.startswith("classical_")}
    pairs = PairTensors(tensor["features"], tensor["valid"], tensor["rest"], tensor["bone"].long(),
                        tensor["truth"], tensor["character"].long(), names, classical)
    table = MoveTable(torch.from_numpy(np.concatenate(moves)).float(),
                      torch.from_numpy(np.concatenate(heads)).float())
    return pairs, table


def deformation_error(weights: torch.Tensor, pairs: PairTensors, table: MoveTable) -> torch.Tensor:
    """(N,) mean over the posed frames of |Σ_k w_k · move_k(x) − artist(x)|, in diagonals."""
    blended = table.blend(weights, pairs)
    return torch.linalg.norm(blended - pairs.truth, dim=-1)[:, 1:].mean(dim=1)
