"""The object shapes a class latent selects (``ident3d.scene.SHAPES``), as numpy meshes.

Every shape but the teapot is made here from a formula (no download, nothing to license) and
normalised like the teapot: centred on the origin, its largest bounding-box side equal to the
teapot's local one, so that the object scale of 1.5 in Blender gives every shape the teapot's
size of 4.4421 scene units. Suzanne (``monkey``) comes from Blender's own generator, so it is
normalised inside Blender with ``normalise``.
"""

from __future__ import annotations

import numpy as np

from ident3d.render.teapot import TARGET_MAX, TARGET_MIN, teapot_mesh

SIZE = float((TARGET_MAX - TARGET_MIN).max())  # largest local side of the teapot
SEGMENTS = 32  # around the axis of the round shapes
SMOOTH = frozenset({"teapot", "monkey", "sphere", "torus"})  # smooth shading; the rest is faceted

Mesh = tuple[np.ndarray, list[list[int]]]


def normalise(vertices: np.ndarray) -> np.ndarray:
    """Centre the bounding box on the origin and scale its largest side to the teapot's."""
    low, high = vertices.min(0), vertices.max(0)
    return (vertices - (low + high) / 2) * (SIZE / (high - low).max())


def _ring(radius: float, z: float, n: int = SEGMENTS) -> np.ndarray:
    angle = np.linspace(0, 2 * np.pi, n, endpoint=False)
    return np.stack([radius * np.cos(angle), radius * np.sin(angle), np.full(n, z)], axis=1)


def cube() -> Mesh:
    v = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float)
    faces = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]]
    return v, faces


def cylinder() -> Mesh:
    n = SEGMENTS
    v = np.vstack([_ring(1, -1), _ring(1, 1)])
    sides = [[i, (i + 1) % n, n + (i + 1) % n, n + i] for i in range(n)]
    return v, [*sides, list(range(n - 1, -1, -1)), list(range(n, 2 * n))]


def cone() -> Mesh:
    n = SEGMENTS
    v = np.vstack([_ring(1, -1), [[0, 0, 1]]])
    sides = [[i, (i + 1) % n, n] for i in range(n)]
    return v, [*sides, list(range(n - 1, -1, -1))]


def sphere(rings: int = SEGMENTS // 2) -> Mesh:
    n = SEGMENTS
    polar = np.linspace(0, np.pi, rings + 1)[1:-1]
    v = np.vstack([[[0, 0, 1]], *[_ring(np.sin(p), np.cos(p)) for p in polar], [[0, 0, -1]]])
    bottom = len(v) - 1

    def at(ring: int, i: int) -> int:
        return 1 + ring * n + i % n

    faces = [[0, at(0, i), at(0, i + 1)] for i in range(n)]
    faces += [[at(r, i), at(r + 1, i), at(r + 1, i + 1), at(r, i + 1)]
              for r in range(rings - 2) for i in range(n)]
    faces += [[at(rings - 2, i + 1), at(rings - 2, i), bottom] for i in range(n)]
    return v, faces


def _midpoint(points: list[np.ndarray], cache: dict[tuple[int, int], int], a: int, b: int) -> int:
    """Index of the point halfway between points a and b, pushed onto the unit sphere."""
    key = (min(a, b), max(a, b))
    if key not in cache:
        p = points[a] + points[b]
        points.append(p / np.linalg.norm(p))
        cache[key] = len(points) - 1
    return cache[key]


def icosphere(subdivisions: int = 1) -> Mesh:
    t = (1 + 5 ** 0.5) / 2
    v = [[-1, t, 0], [1, t, 0], [-1, -t, 0], [1, -t, 0], [0, -1, t], [0, 1, t], [0, -1, -t], [0, 1, -t],
         [t, 0, -1], [t, 0, 1], [-t, 0, -1], [-t, 0, 1]]
    faces = [[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11], [1, 5, 9], [5, 11, 4],
             [11, 10, 2], [10, 7, 6], [7, 1, 8], [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8], [3, 8, 9],
             [4, 9, 5], [2, 4, 11], [6, 2, 10], [8, 6, 7], [9, 8, 1]]
    points = [np.array(p, float) / np.linalg.norm(p) for p in v]
    for _ in range(subdivisions):
        middle: dict[tuple[int, int], int] = {}
        finer = []
        for a, b, c in faces:
            ab, bc, ca = (_midpoint(points, middle, *edge) for edge in ((a, b), (b, c), (c, a)))
            finer += [[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]
        faces = finer
    return np.array(points), faces


def torus(minor: float = 0.35) -> Mesh:
    n, m = SEGMENTS, SEGMENTS // 2
    angle = np.linspace(0, 2 * np.pi, m, endpoint=False)
    v = np.vstack([_ring(1 + minor * np.cos(a), minor * np.sin(a)) for a in angle])
    faces = [[k * n + i, k * n + (i + 1) % n, ((k + 1) % m) * n + (i + 1) % n, ((k + 1) % m) * n + i]
             for k in range(m) for i in range(n)]
    return v, faces


BUILDERS = {"cube": cube, "cylinder": cylinder, "cone": cone, "sphere": sphere, "icosphere": icosphere,
            "torus": torus}


def shape_mesh(name: str) -> Mesh:
    """Vertices (normalised) and faces of a shape; the teapot as it always was."""
    if name == "teapot":
        return teapot_mesh()
    vertices, faces = BUILDERS[name]()
    return normalise(np.asarray(vertices, float)), faces
