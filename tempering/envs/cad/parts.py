"""Part families for `cad/parts-v1`: a drawing in words, and the tcad script that builds it.

Each family draws round dimensions (mm) from the rng and returns (spec text, reference
script, broken script). The broken script is the reference with one dimension off by a
fifth: it builds a plausible part that is not the one asked for. Levels (families in
brackets are HELD_OUT: only the unseen split draws them, training never sees them):

    1  plate, rod                                     one primitive
    2  tube, plate_hole, [u_channel]                  one cut
    3  corner_holes, stepped_shaft, slotted_plate,    several features placed by coordinates
       [flanged_bushing]
    4  flange, l_bracket, [hex_standoff]              polar patterns, unions of cut parts,
                                                      intersections of rotated boxes
    5  rounded_plate, gusset, [pocket_block]          fillets, cuts at an angle, blind pockets,
                                                      counterbores

With the env's option composed (a share), level 3 also draws `composed` parts: a plate or block
with 2-3 features (holes, pockets, cut-outs, bosses, blocks) side by side, one sentence and
one script line each, so training teaches the moves rather than the families' shapes.
"""

from __future__ import annotations

import random

FRAME = ("Units are millimetres. Parts sit on the XY plane: centred on the origin in x and y, "
         "with the bottom face at z = 0, unless the drawing says otherwise.")


def _n(v: float) -> str:
    return f"{v:g}"


def _plate(r: random.Random, k: float = 1.0):
    x, y, t = r.choice(range(30, 101, 5)), r.choice(range(20, 81, 5)), r.choice(range(3, 13))
    spec = f"A rectangular plate {_n(x * k)} mm long (x), {y} mm wide (y) and {t} mm thick (z)."
    return spec, f"result = box({_n(x * k)}, {y}, {t})"


def _rod(r: random.Random, k: float = 1.0):
    d, h = r.choice(range(6, 41, 2)), r.choice(range(10, 101, 5))
    return (f"A solid round rod of diameter {_n(d * k)} mm and length {h} mm, its axis along z.",
            f"result = cylinder({_n(d * k)}, {h})")


def _tube(r: random.Random, k: float = 1.0):
    d_out, h = r.choice(range(20, 61, 2)), r.choice(range(10, 81, 5))
    d_in = r.choice(range(6, d_out - 5, 2))
    return (f"A tube {h} mm long along z, outer diameter {d_out} mm, with a through bore of "
            f"diameter {_n(d_in * k)} mm on its axis.",
            f"result = cylinder({d_out}, {h}) - cylinder({_n(d_in * k)}, {h})")


def _plate_hole(r: random.Random, k: float = 1.0):
    x, y, t = r.choice(range(30, 101, 5)), r.choice(range(30, 81, 5)), r.choice(range(3, 13))
    d = r.choice(range(4, min(x, y) // 2, 2))
    return (f"A plate {x} x {y} x {t} mm (x, y, z) with one through hole of diameter {_n(d * k)} mm "
            f"at its centre.",
            f"result = box({x}, {y}, {t}) - cylinder({_n(d * k)}, {t})")


def _corner_holes(r: random.Random, k: float = 1.0):
    x, y, t = r.choice(range(40, 121, 10)), r.choice(range(30, 91, 10)), r.choice(range(4, 13))
    e, d = r.choice((5, 6, 8, 10)), r.choice((3, 4, 5, 6))
    cx, cy = x / 2 - e * k, y / 2 - e * k
    return (f"A plate {x} x {y} x {t} mm (x, y, z) with four through holes of diameter {d} mm, "
            f"one near each corner, each hole's centre {e} mm in from both adjacent edges.",
            f"result = box({x}, {y}, {t})\n"
            f"for sx in (-1, 1):\n    for sy in (-1, 1):\n"
            f"        result = result - cylinder({d}, {t}).at(sx * {_n(cx)}, sy * {_n(cy)}, 0)")


def _stepped_shaft(r: random.Random, k: float = 1.0):
    d1, h1 = r.choice(range(20, 51, 2)), r.choice(range(10, 41, 5))
    d2, h2 = r.choice(range(8, d1 - 3, 2)), r.choice(range(10, 61, 5))
    return (f"A stepped shaft along z: a {d1} mm diameter section {h1} mm long from z = 0, then a "
            f"{_n(d2 * k)} mm diameter section {h2} mm long on top of it, both on the same axis.",
            f"result = cylinder({d1}, {h1}) + cylinder({_n(d2 * k)}, {h2}).at(0, 0, {h1})")


def _flange(r: random.Random, k: float = 1.0):
    D, t = r.choice(range(60, 141, 10)), r.choice(range(6, 16, 2))
    bore = r.choice(range(16, D // 2 - 4, 2))
    n, hole = r.choice((3, 4, 6, 8)), r.choice((5, 6, 8))
    bc = r.choice(range((bore + D) // 2 - 4, (bore + D) // 2 + 5, 2))
    start = r.choice((0, 15, 30, 45))
    return (f"A round flange: a disc of diameter {D} mm and thickness {t} mm with a central through "
            f"bore of diameter {bore} mm, and {n} through holes of diameter {hole} mm evenly spaced on "
            f"a bolt circle of diameter {_n(bc * k)} mm, the first at {start} degrees from the +x axis "
            f"(counter-clockwise).",
            f"import math\nresult = cylinder({D}, {t}) - cylinder({bore}, {t})\n"
            f"for i in range({n}):\n    a = math.radians({start} + i * 360 / {n})\n"
            f"    result = result - cylinder({hole}, {t}).at({_n(bc * k / 2)} * math.cos(a), "
            f"{_n(bc * k / 2)} * math.sin(a), 0)")


def _l_bracket(r: random.Random, k: float = 1.0):
    x, y, t = r.choice(range(40, 101, 10)), r.choice(range(30, 61, 10)), r.choice(range(4, 11, 2))
    h, d = r.choice(range(30, 81, 10)), r.choice((4, 5, 6, 8))
    hx = (t + x / 2) / 2
    return (f"An L-bracket: a base plate {x} x {y} x {t} mm (x, y, z); on its -x end an upright wall "
            f"{t} mm thick (x), {y} mm wide (y) and {_n(h * k)} mm tall in total (z, measured from z = 0), "
            f"flush with the plate's -x, +y and -y faces. The base has one through hole of diameter {d} mm "
            f"centred in y, at x = {_n(hx)}.",
            f"base = box({x}, {y}, {t}) - cylinder({d}, {t}).at({_n(hx)}, 0, 0)\n"
            f"wall = box({t}, {y}, {_n(h * k)}).at({_n(-x / 2 + t / 2)}, 0, 0)\n"
            f"result = base + wall")


def _rounded_plate(r: random.Random, k: float = 1.0):
    x, y, t = r.choice(range(40, 121, 10)), r.choice(range(30, 81, 10)), r.choice(range(4, 13, 2))
    rad, d = r.choice((3, 4, 5, 6, 8)), r.choice(range(6, 17, 2))
    return (f"A plate {x} x {y} x {t} mm (x, y, z) whose four vertical edges are rounded with a "
            f"fillet radius of {_n(rad * k)} mm, with a through hole of diameter {d} mm at its centre.",
            f"result = rounded_box({x}, {y}, {t}, {_n(rad * k)}) - cylinder({d}, {t})")


def _pocket_block(r: random.Random, k: float = 1.0):
    x, y, z = r.choice(range(40, 101, 10)), r.choice(range(30, 81, 10)), r.choice(range(15, 41, 5))
    px, py = r.choice(range(10, x - 15, 5)), r.choice(range(10, y - 15, 5))
    depth = r.choice(range(4, z - 5))
    cb, cbd, hole = r.choice((10, 12, 14)), r.choice((3, 4, 5)), r.choice((5, 6, 8))
    hx = (px / 2 + x / 2) / 2 + 2
    return (f"A block {x} x {y} x {z} mm (x, y, z). Into its top face: a rectangular pocket {px} x {py} mm "
            f"and {_n(depth * k)} mm deep, centred in x and y. At x = {_n(hx)}, y = 0: a through hole of "
            f"diameter {hole} mm, counterbored from the top to diameter {cb} mm and {cbd} mm deep.",
            f"result = box({x}, {y}, {z}) - box({px}, {py}, {_n(depth * k)}).at(0, 0, {_n(z - depth * k)})\n"
            f"result = result - cylinder({hole}, {z}).at({_n(hx)}, 0, 0)\n"
            f"result = result - cylinder({cb}, {cbd}).at({_n(hx)}, 0, {z - cbd})")


def _u_channel(r: random.Random, k: float = 1.0):
    x, y = r.choice(range(40, 121, 10)), r.choice(range(20, 61, 5))
    h, t = r.choice(range(15, 41, 5)), r.choice((2, 3, 4, 5))
    return (f"A U-channel {x} mm long along x: a base {y} mm wide (y) and {t} mm thick (z), with two side "
            f"walls {t} mm thick along its +y and -y edges, {_n(h * k)} mm tall in total (z, measured from "
            f"z = 0); open at the top and at both ends.",
            f"result = box({x}, {y}, {_n(h * k)}) - box({x}, {y - 2 * t}, {_n(h * k - t)}).at(0, 0, {t})")


def _slotted_plate(r: random.Random, k: float = 1.0):
    x, y, t = r.choice(range(50, 121, 10)), r.choice(range(30, 81, 10)), r.choice(range(3, 11))
    w = r.choice((6, 8, 10, 12))
    length = r.choice(range(w + 10, int(x * 0.7) + 1, 5)) * k
    c = (length - w) / 2  # the ends' centres
    return (f"A plate {x} x {y} x {t} mm (x, y, z) with one through slot at its centre: straight sides and "
            f"round ends, {_n(length)} mm long overall along x and {w} mm wide.",
            f"slot = box({_n(2 * c)}, {w}, {t}) + cylinder({w}, {t}).at({_n(-c)}, 0, 0) + "
            f"cylinder({w}, {t}).at({_n(c)}, 0, 0)\n"
            f"result = box({x}, {y}, {t}) - slot")


def _flanged_bushing(r: random.Random, k: float = 1.0):
    df, tf = r.choice(range(30, 81, 5)), r.choice((3, 4, 5, 6, 8))
    ds, h = r.choice(range(16, df - 9, 2)), r.choice(range(15, 61, 5))
    d = r.choice(range(6, ds - 5, 2))
    return (f"A flanged bushing along z: a flange (a disc) {df} mm in diameter and {tf} mm thick from z = 0, "
            f"and a sleeve of outside diameter {_n(ds * k)} mm on top of it, on the same axis; {h} mm long in "
            f"total (flange included), with a through bore of diameter {d} mm on its axis.",
            f"result = cylinder({df}, {tf}) + cylinder({_n(ds * k)}, {h}) - cylinder({d}, {h})")


def _hex_standoff(r: random.Random, k: float = 1.0):
    s, h = r.choice(range(8, 31, 2)), r.choice(range(10, 51, 5))
    d = r.choice(range(3, s // 2 + 2))
    return (f"A hex standoff {h} mm tall along z: a regular hexagonal prism {_n(s * k)} mm across flats, two of "
            f"its flats parallel to the x axis, with a through hole of diameter {d} mm on its axis.",
            f"bar = box({_n(2 * s * k)}, {_n(s * k)}, {h})\n"
            f"result = bar & bar.rotate(z=60) & bar.rotate(z=120)\n"
            f"result = result - cylinder({d}, {h})")


def _gusset(r: random.Random, k: float = 1.0):
    a, b, t = r.choice(range(30, 91, 6)) * k, r.choice(range(30, 91, 6)), r.choice((4, 5, 6, 8, 10))
    d = r.choice((4, 5, 6, 8))
    return (f"A triangular gusset plate {t} mm thick (z): a right triangle with its right-angle corner at the "
            f"origin, one leg {_n(a)} mm long along +x and the other {b} mm long along +y, with a through hole "
            f"of diameter {d} mm centred on the triangle's centroid (x = {_n(a / 3)}, y = {_n(b / 3)}).",
            f"import math\nc = math.hypot({_n(a)}, {b})\n"
            f"plate = box({_n(a)}, {b}, {t}).at({_n(a / 2)}, {_n(b / 2)}, 0)\n"
            f"angle = math.degrees(math.atan2({b}, {_n(a)}))\n"
            f"beyond = box(2 * c, 2 * c, {t}).at(0, c, 0).rotate(z=-angle).at({_n(a)}, 0, 0)\n"
            f"result = plate - beyond - cylinder({d}, {t}).at({_n(a / 3)}, {_n(b / 3)}, 0)")


_ON_TOP = ("through_hole", "blind_hole", "pocket", "cutout", "boss", "block")


def _feature(r: random.Random, kind: str, x: int, y: int, w: int, base_y: int, t: int, k: float):
    """One feature of a composed part in a cell `w` mm wide centred at x, on a base `t` thick:
    (its words, its script line). `k` scales its first size (the broken part's)."""
    if kind in ("through_hole", "blind_hole", "boss"):
        d = r.choice(range(4, min(w, base_y) - 7, 2))
        depth = r.choice(range(2, t)) if kind == "blind_hole" else 0
        h = r.choice(range(4, 21, 2))
        py = r.choice(range(-(base_y // 2 - d // 2 - 3), base_y // 2 - d // 2 - 2))
        at, dk = f"x = {x}, y = {py}", _n(d * k)
        if kind == "through_hole":
            return f"a through hole of diameter {dk} mm at {at}", f"result = result - cylinder({dk}, {t}).at({x}, {py}, 0)"
        if kind == "blind_hole":
            return (f"a hole of diameter {dk} mm and {depth} mm deep, drilled into the top face at {at}",
                    f"result = result - cylinder({dk}, {depth}).at({x}, {py}, {t - depth})")
        return (f"a round boss of diameter {dk} mm standing {h} mm above the top face, centred at {at}",
                f"result = result + cylinder({dk}, {h}).at({x}, {py}, {t})")
    a, b = r.choice(range(4, w - 5, 2)), r.choice(range(4, base_y - 7, 2))
    depth, h = r.choice(range(2, t)), r.choice(range(4, 21, 2))
    py = r.choice(range(-(base_y // 2 - b // 2 - 3), base_y // 2 - b // 2 - 2))
    at, ak = f"x = {x}, y = {py}", _n(a * k)
    if kind == "pocket":
        return (f"a rectangular pocket {ak} x {b} mm (x, y) and {depth} mm deep, cut into the top face, centred at {at}",
                f"result = result - box({ak}, {b}, {depth}).at({x}, {py}, {t - depth})")
    if kind == "cutout":
        return (f"a rectangular through cut-out {ak} x {b} mm (x, y), centred at {at}",
                f"result = result - box({ak}, {b}, {t}).at({x}, {py}, 0)")
    return (f"a block {ak} x {b} x {h} mm (x, y, z) standing on the top face, centred at {at}",
            f"result = result + box({ak}, {b}, {h}).at({x}, {py}, {t})")


def _composed(r: random.Random, k: float = 1.0):
    """A plate or block with two or three features side by side along x, each in its own cell:
    one sentence of the drawing per feature and one line of script per sentence. It teaches the
    moves (cut a hole or a pocket, add a boss or a block, place it by coordinates) apart from any
    one family's shape, so reading a new drawing is composing them."""
    n = r.choice((2, 3))
    w = r.choice(range(20, 41, 4))
    x, y, t = n * w, r.choice(range(24, 61, 4)), r.choice(range(4, 21, 2))
    kinds = [r.choice(_ON_TOP) for _ in range(n)]
    parts = [_feature(r, kind, -x // 2 + w // 2 + i * w, y, w, y, t, k if i == 0 else 1.0)
             for i, kind in enumerate(kinds)]
    base = "plate" if t <= 10 else "block"
    spec = (f"A {base} {x} x {y} x {t} mm (x, y, z) with " + "; ".join(words for words, _ in parts) + ".")
    return spec, "\n".join([f"result = box({x}, {y}, {t})"] + [line for _, line in parts])


COMPOSED = "composed"
"""A train-and-test family the env draws only with the option composed > 0 (level 3): parts
composed of 2-3 features from the trained moves, so the skill is the moves, not ten shapes."""

FAMILIES = {  # name -> (level, builder(rng, k) -> (spec, script)); k scales one dimension
    "plate": (1, _plate), "rod": (1, _rod),
    "tube": (2, _tube), "plate_hole": (2, _plate_hole), "u_channel": (2, _u_channel),
    "corner_holes": (3, _corner_holes), "stepped_shaft": (3, _stepped_shaft), "slotted_plate": (3, _slotted_plate),
    "flanged_bushing": (3, _flanged_bushing),
    "flange": (4, _flange), "l_bracket": (4, _l_bracket), "hex_standoff": (4, _hex_standoff),
    "rounded_plate": (5, _rounded_plate), "pocket_block": (5, _pocket_block), "gusset": (5, _gusset),
}
HELD_OUT = ("u_channel", "flanged_bushing", "hex_standoff", "pocket_block")
"""Families only the unseen split draws: one per level from 2 up, each built with moves the
trained families teach (box cuts, coaxial cylinders, rotated boxes, counterbores)."""
BROKEN_SCALE = 1.2


def family(name: str):
    """(level, builder) of a family, FAMILIES' or the composed one."""
    return (3, _composed) if name == COMPOSED else FAMILIES[name]


def draw(family_name: str, seed: str) -> tuple[str, str, str]:
    """(drawing text, reference script, broken script) of one part; deterministic in seed."""
    _, build = family(family_name)
    spec, script = build(random.Random(seed))
    _, broken = build(random.Random(seed), BROKEN_SCALE)
    return spec, script, broken
