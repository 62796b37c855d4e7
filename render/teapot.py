"""The Utah teapot as a triangle/quad mesh, tessellated with numpy from Newell's Bezier patches.

Blender ships no teapot. Newell's public-domain patch data (``data/newell_teapot.txt``) is
tessellated, welded, rotated so that the spout points to (+x, -y), and scaled and re-centred so that
its bounding box equals the original 3DIdent mesh's local bounding box (docs/facts.md, "Scene");
the object scale of 1.5 is applied in Blender and gives the 4.4421 size of ``ident3d.scene``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

DATA = Path(__file__).with_name("data") / "newell_teapot.txt"
# Local bounding box of the original 3DIdent teapot mesh, before the object scale of 1.5.
TARGET_MIN = np.array([-1.4021, -1.5593, -0.9067])
TARGET_MAX = np.array([1.5593, 1.4021, 1.0926])
OBJECT_SCALE = 1.5


def read_patches(path: Path = DATA) -> tuple[np.ndarray, np.ndarray]:
    """Control points (306, 3) and patches (32, 4, 4) of control-point indices."""
    rows = [line.split() for line in path.read_text().splitlines() if line and line[0] != "#"]
    n_vertices = int(rows[0][1])
    vertices = np.array(rows[1:1 + n_vertices], dtype=np.float64)
    n_patches = int(rows[1 + n_vertices][1])
    patches = np.array(rows[2 + n_vertices:2 + n_vertices + n_patches], dtype=np.int64)
    return vertices, patches.reshape(-1, 4, 4)


def bernstein(t: np.ndarray) -> np.ndarray:
    """Cubic Bernstein basis at parameters t, shape (len(t), 4)."""
    t = t[:, None]
    return np.hstack([(1 - t) ** 3, 3 * t * (1 - t) ** 2, 3 * t**2 * (1 - t), t**3])


def tessellate(vertices: np.ndarray, patches: np.ndarray, steps: int) -> tuple[np.ndarray, list]:
    """Evaluate every patch on a (steps+1)^2 grid; weld equal points; drop degenerate faces."""
    basis = bernstein(np.linspace(0.0, 1.0, steps + 1))
    # points[p, i, j] = sum_ab B_a(u_i) B_b(v_j) P[p, a, b]
    points = np.einsum("ia,jb,pabk->pijk", basis, basis, vertices[patches])
    flat = points.reshape(-1, 3)
    _, first, welded = np.unique(np.round(flat, 6), axis=0, return_index=True, return_inverse=True)
    welded = welded.reshape(points.shape[:3])
    order = np.argsort(first)  # keep vertices in patch order for a stable mesh
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    mesh_vertices = flat[first[order]]
    ids = rank[welded]
    faces = []
    for p in range(len(patches)):
        for i in range(steps):
            for j in range(steps):
                quad = [ids[p, i, j], ids[p, i + 1, j], ids[p, i + 1, j + 1], ids[p, i, j + 1]]
                unique = list(dict.fromkeys(quad))
                if len(unique) >= 3:
                    faces.append(unique)
    return mesh_vertices, faces


@cache
def teapot_mesh(steps: int = 10) -> tuple[np.ndarray, tuple[tuple[int, ...], ...]]:
    """Vertices (V, 3) in the original mesh's local frame, and faces as index tuples."""
    control, patches = read_patches()
    vertices, faces = tessellate(control, patches, steps)
    # Newell's spout points to +x; the 3DIdent teapot's spout points to (+x, -y).
    c, s = np.cos(-np.pi / 4), np.sin(-np.pi / 4)
    vertices = vertices @ np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])
    low, high = vertices.min(0), vertices.max(0)
    vertices = TARGET_MIN + (vertices - low) * (TARGET_MAX - TARGET_MIN) / (high - low)
    return vertices, tuple(tuple(int(i) for i in f) for f in faces)
