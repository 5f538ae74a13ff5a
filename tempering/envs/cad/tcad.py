"""tcad: the small CAD API scripts in `cad/parts-v1` are written against.

This file runs only inside the sandbox (it is copied into each run's workspace), on the
manifold3d kernel from the sandbox library: exact mesh booleans whose results are always
closed solids. It imports nothing from tempering. Units are millimetres.

    box(x, y, z)             footprint x by y centred on the origin, from z = 0 up to z
    cylinder(d, h)           diameter d, axis along z, centred on the origin, z = 0 up to h
    rounded_box(x, y, z, r)  a box whose four vertical edges are rounded with radius r
    sphere(d)                diameter d, centred on the origin
    a + b, a - b, a & b      union, difference (cut b out of a), intersection
    part.at(x, y, z)         the part moved by (x, y, z)
    part.rotate(x=0, y=0, z=0)   rotated about the origin, in degrees, x then y then z
"""

from __future__ import annotations

import math

import manifold3d as m3

SEGMENTS = 64
"""Facets per full circle: candidate and target round features are cut the same way."""
SIZE_LIMIT = 10_000.0
"""Largest dimension (mm) any primitive may have; a bigger one is an error, not a huge mesh."""


def _number(name: str, key: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise TypeError(f"{name}: {key} must be a number, got {v!r}")
    return v


def _xyz(name: str, x, y, z) -> tuple[float, float, float]:
    return (_number(name, "x", x), _number(name, "y", y), _number(name, "z", z))


def _dims(name: str, **dims: float) -> None:
    for key, v in dims.items():
        _number(name, key, v)
        if not 0 < v <= SIZE_LIMIT:
            raise ValueError(f"{name}: {key} must be above 0 and at most {SIZE_LIMIT:g} mm, got {v:g}")


class Part:
    """A closed solid. Combine with + - &; move with at(); turn with rotate()."""

    def __init__(self, solid: m3.Manifold) -> None:
        self.solid = solid

    def __add__(self, other: "Part") -> "Part":
        return Part(self.solid + _solid(other, "+"))

    def __sub__(self, other: "Part") -> "Part":
        return Part(self.solid - _solid(other, "-"))

    def __and__(self, other: "Part") -> "Part":
        return Part(self.solid ^ _solid(other, "&"))

    def at(self, x: float = 0.0, y: float = 0.0, z: float = 0.0) -> "Part":
        return Part(self.solid.translate(_xyz("at", x, y, z)))

    def rotate(self, x: float = 0.0, y: float = 0.0, z: float = 0.0) -> "Part":
        return Part(self.solid.rotate(_xyz("rotate", x, y, z)))

    @property
    def volume(self) -> float:
        return self.solid.volume()

    @property
    def size(self) -> tuple[float, float, float]:
        b = self.solid.bounding_box()
        return (b[3] - b[0], b[4] - b[1], b[5] - b[2])

    def __repr__(self) -> str:
        x, y, z = self.size
        return f"Part(size={x:.3g} x {y:.3g} x {z:.3g} mm, volume={self.volume:.6g} mm^3)"


def _solid(other, op: str) -> m3.Manifold:
    if not isinstance(other, Part):
        raise TypeError(f"Part {op} {type(other).__name__}: both sides must be parts (box(), cylinder(), ...)")
    return other.solid


def box(x: float, y: float, z: float) -> Part:
    _dims("box", x=x, y=y, z=z)
    return Part(m3.Manifold.cube((x, y, z)).translate((-x / 2, -y / 2, 0)))


def cylinder(d: float, h: float) -> Part:
    _dims("cylinder", d=d, h=h)
    return Part(m3.Manifold.cylinder(h, d / 2, d / 2, SEGMENTS))


def sphere(d: float) -> Part:
    _dims("sphere", d=d)
    return Part(m3.Manifold.sphere(d / 2, SEGMENTS))


def rounded_box(x: float, y: float, z: float, r: float) -> Part:
    _dims("rounded_box", x=x, y=y, z=z, r=r)
    if 2 * r >= min(x, y):
        raise ValueError(f"rounded_box: the radius r={r:g} must be less than half the shorter side ({min(x, y) / 2:g})")
    corners = [m3.Manifold.cylinder(z, r, r, SEGMENTS).translate((sx * (x / 2 - r), sy * (y / 2 - r), 0))
               for sx in (-1, 1) for sy in (-1, 1)]
    return Part(m3.Manifold.batch_hull(corners))
