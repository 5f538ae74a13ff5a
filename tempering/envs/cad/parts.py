"""Part families for `cad/parts-v1`: a drawing in words, and the tcad script that builds it.

Each family draws round dimensions (mm) from the rng and returns what its drawing states
(`wording.Words`, worded in any of wording.STYLES) and the reference script; `draw` gives
(spec text, reference script, broken script). The broken script is the reference with one dimension off by a
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

from tempering.envs.cad.wording import Words, render

FRAME = ("Units are millimetres. Parts sit on the XY plane: centred on the origin in x and y, "
         "with the bottom face at z = 0, unless the drawing says otherwise.")


def _n(v: float) -> str:
    return f"{v:g}"


def _plate(r: random.Random, k: float = 1.0):
    x, y, t = r.choice(range(30, 101, 5)), r.choice(range(20, 81, 5)), r.choice(range(3, 13))
    return Words("plate", dict(x=x * k, y=y, t=t)), f"result = box({_n(x * k)}, {y}, {t})"


def _rod(r: random.Random, k: float = 1.0):
    d, h = r.choice(range(6, 41, 2)), r.choice(range(10, 101, 5))
    return Words("rod", dict(d=d * k, h=h)), f"result = cylinder({_n(d * k)}, {h})"


def _tube(r: random.Random, k: float = 1.0):
    d_out, h = r.choice(range(20, 61, 2)), r.choice(range(10, 81, 5))
    d_in = r.choice(range(6, d_out - 5, 2))
    return (Words("tube", dict(h=h, d_out=d_out, d_in=d_in * k, d_in__wall=(d_out - d_in * k) / 2)),
            f"result = cylinder({d_out}, {h}) - cylinder({_n(d_in * k)}, {h})")


def _plate_hole(r: random.Random, k: float = 1.0):
    x, y, t = r.choice(range(30, 101, 5)), r.choice(range(30, 81, 5)), r.choice(range(3, 13))
    d = r.choice(range(4, min(x, y) // 2, 2))
    return (Words("plate_hole", dict(x=x, y=y, t=t, d=d * k, x__half=x / 2, y__half=y / 2)),
            f"result = box({x}, {y}, {t}) - cylinder({_n(d * k)}, {t})")


def _corner_holes(r: random.Random, k: float = 1.0):
    x, y, t = r.choice(range(40, 121, 10)), r.choice(range(30, 91, 10)), r.choice(range(4, 13))
    e, d = r.choice((5, 6, 8, 10)), r.choice((3, 4, 5, 6))
    cx, cy = x / 2 - e * k, y / 2 - e * k
    return (Words("corner_holes", dict(x=x, y=y, t=t, d=d, e=e, e__cx=cx, e__cy=cy, e__pitch_x=2 * cx,
                                       e__pitch_y=2 * cy)),
            f"result = box({x}, {y}, {t})\n"
            f"for sx in (-1, 1):\n    for sy in (-1, 1):\n"
            f"        result = result - cylinder({d}, {t}).at(sx * {_n(cx)}, sy * {_n(cy)}, 0)")


def _stepped_shaft(r: random.Random, k: float = 1.0):
    d1, h1 = r.choice(range(20, 51, 2)), r.choice(range(10, 41, 5))
    d2, h2 = r.choice(range(8, d1 - 3, 2)), r.choice(range(10, 61, 5))
    return (Words("stepped_shaft", dict(d1=d1, h1=h1, d2=d2 * k, h2=h2, h2__total=h1 + h2)),
            f"result = cylinder({d1}, {h1}) + cylinder({_n(d2 * k)}, {h2}).at(0, 0, {h1})")


def _flange(r: random.Random, k: float = 1.0):
    D, t = r.choice(range(60, 141, 10)), r.choice(range(6, 16, 2))
    bore = r.choice(range(16, D // 2 - 4, 2))
    n, hole = r.choice((3, 4, 6, 8)), r.choice((5, 6, 8))
    bc = r.choice(range((bore + D) // 2 - 4, (bore + D) // 2 + 5, 2))
    start = r.choice((0, 15, 30, 45))
    return (Words("flange", dict(D=D, t=t, bore=bore, n=n, hole=hole, bc=bc * k, bc__radius=bc * k / 2,
                                 start=start)),
            f"import math\nresult = cylinder({D}, {t}) - cylinder({bore}, {t})\n"
            f"for i in range({n}):\n    a = math.radians({start} + i * 360 / {n})\n"
            f"    result = result - cylinder({hole}, {t}).at({_n(bc * k / 2)} * math.cos(a), "
            f"{_n(bc * k / 2)} * math.sin(a), 0)")


def _l_bracket(r: random.Random, k: float = 1.0):
    x, y, t = r.choice(range(40, 101, 10)), r.choice(range(30, 61, 10)), r.choice(range(4, 11, 2))
    h, d = r.choice(range(30, 81, 10)), r.choice((4, 5, 6, 8))
    hx = (t + x / 2) / 2
    return (Words("l_bracket", dict(x=x, y=y, t=t, h=h * k, d=d, hx=hx, hx__from_wall=hx + x / 2,
                                    hx__from_end=x / 2 - hx)),
            f"base = box({x}, {y}, {t}) - cylinder({d}, {t}).at({_n(hx)}, 0, 0)\n"
            f"wall = box({t}, {y}, {_n(h * k)}).at({_n(-x / 2 + t / 2)}, 0, 0)\n"
            f"result = base + wall")


def _rounded_plate(r: random.Random, k: float = 1.0):
    x, y, t = r.choice(range(40, 121, 10)), r.choice(range(30, 81, 10)), r.choice(range(4, 13, 2))
    rad, d = r.choice((3, 4, 5, 6, 8)), r.choice(range(6, 17, 2))
    return (Words("rounded_plate", dict(x=x, y=y, t=t, rad=rad * k, d=d)),
            f"result = rounded_box({x}, {y}, {t}, {_n(rad * k)}) - cylinder({d}, {t})")


def _pocket_block(r: random.Random, k: float = 1.0):
    x, y, z = r.choice(range(40, 101, 10)), r.choice(range(30, 81, 10)), r.choice(range(15, 41, 5))
    px, py = r.choice(range(10, x - 15, 5)), r.choice(range(10, y - 15, 5))
    depth = r.choice(range(4, z - 5))
    cb, cbd, hole = r.choice((10, 12, 14)), r.choice((3, 4, 5)), r.choice((5, 6, 8))
    hx = (px / 2 + x / 2) / 2 + 2
    return (Words("pocket_block", dict(x=x, y=y, z=z, px=px, py=py, depth=depth * k, hx=hx, hx__from_end=x / 2 - hx,
                                       hole=hole, cb=cb, cbd=cbd)),
            f"result = box({x}, {y}, {z}) - box({px}, {py}, {_n(depth * k)}).at(0, 0, {_n(z - depth * k)})\n"
            f"result = result - cylinder({hole}, {z}).at({_n(hx)}, 0, 0)\n"
            f"result = result - cylinder({cb}, {cbd}).at({_n(hx)}, 0, {z - cbd})")


def _u_channel(r: random.Random, k: float = 1.0):
    x, y = r.choice(range(40, 121, 10)), r.choice(range(20, 61, 5))
    h, t = r.choice(range(15, 41, 5)), r.choice((2, 3, 4, 5))
    return (Words("u_channel", dict(x=x, y=y, t=t, h=h * k, y__inside=y - 2 * t)),
            f"result = box({x}, {y}, {_n(h * k)}) - box({x}, {y - 2 * t}, {_n(h * k - t)}).at(0, 0, {t})")


def _slotted_plate(r: random.Random, k: float = 1.0):
    x, y, t = r.choice(range(50, 121, 10)), r.choice(range(30, 81, 10)), r.choice(range(3, 11))
    w = r.choice((6, 8, 10, 12))
    length = r.choice(range(w + 10, int(x * 0.7) + 1, 5)) * k
    c = (length - w) / 2  # the ends' centres
    return (Words("slotted_plate", dict(x=x, y=y, t=t, length=length, w=w, length__centres=2 * c)),
            f"slot = box({_n(2 * c)}, {w}, {t}) + cylinder({w}, {t}).at({_n(-c)}, 0, 0) + "
            f"cylinder({w}, {t}).at({_n(c)}, 0, 0)\n"
            f"result = box({x}, {y}, {t}) - slot")


def _flanged_bushing(r: random.Random, k: float = 1.0):
    df, tf = r.choice(range(30, 81, 5)), r.choice((3, 4, 5, 6, 8))
    ds, h = r.choice(range(16, df - 9, 2)), r.choice(range(15, 61, 5))
    d = r.choice(range(6, ds - 5, 2))
    return (Words("flanged_bushing", dict(df=df, tf=tf, ds=ds * k, h=h, h__sleeve=h - tf, d=d)),
            f"result = cylinder({df}, {tf}) + cylinder({_n(ds * k)}, {h}) - cylinder({d}, {h})")


def _hex_standoff(r: random.Random, k: float = 1.0):
    s, h = r.choice(range(8, 31, 2)), r.choice(range(10, 51, 5))
    d = r.choice(range(3, s // 2 + 2))
    return (Words("hex_standoff", dict(h=h, s=s * k, d=d)),
            f"bar = box({_n(2 * s * k)}, {_n(s * k)}, {h})\n"
            f"result = bar & bar.rotate(z=60) & bar.rotate(z=120)\n"
            f"result = result - cylinder({d}, {h})")


def _gusset(r: random.Random, k: float = 1.0):
    a, b, t = r.choice(range(30, 91, 6)) * k, r.choice(range(30, 91, 6)), r.choice((4, 5, 6, 8, 10))
    d = r.choice((4, 5, 6, 8))
    return (Words("gusset", dict(t=t, a=a, b=b, d=d, cx=a / 3, cy=b / 3)),
            f"import math\nc = math.hypot({_n(a)}, {b})\n"
            f"plate = box({_n(a)}, {b}, {t}).at({_n(a / 2)}, {_n(b / 2)}, 0)\n"
            f"angle = math.degrees(math.atan2({b}, {_n(a)}))\n"
            f"beyond = box(2 * c, 2 * c, {t}).at(0, c, 0).rotate(z=-angle).at({_n(a)}, 0, 0)\n"
            f"result = plate - beyond - cylinder({d}, {t}).at({_n(a / 3)}, {_n(b / 3)}, 0)")


_ON_TOP = ("through_hole", "blind_hole", "pocket", "cutout", "boss", "block")


def _feature(r: random.Random, kind: str, x: int, length: int, w: int, base_y: int, t: int, k: float):
    """One feature of a composed part in a cell `w` mm wide centred at x, on a base `length` long
    (x) and `t` thick: (its Words, its script line). `k` scales its first size (the broken part's)."""
    at = dict(x=x, x__from_end=x + length / 2)
    if kind in ("through_hole", "blind_hole", "boss"):
        d = r.choice(range(4, min(w, base_y) - 7, 2))
        depth = r.choice(range(2, t)) if kind == "blind_hole" else 0
        h = r.choice(range(4, 21, 2))
        py = r.choice(range(-(base_y // 2 - d // 2 - 3), base_y // 2 - d // 2 - 2))
        dk = _n(d * k)
        if kind == "through_hole":
            return Words(kind, dict(at, y=py, d=d * k)), f"result = result - cylinder({dk}, {t}).at({x}, {py}, 0)"
        if kind == "blind_hole":
            return (Words(kind, dict(at, y=py, d=d * k, depth=depth)),
                    f"result = result - cylinder({dk}, {depth}).at({x}, {py}, {t - depth})")
        return Words(kind, dict(at, y=py, d=d * k, h=h)), f"result = result + cylinder({dk}, {h}).at({x}, {py}, {t})"
    a, b = r.choice(range(4, w - 5, 2)), r.choice(range(4, base_y - 7, 2))
    depth, h = r.choice(range(2, t)), r.choice(range(4, 21, 2))
    py = r.choice(range(-(base_y // 2 - b // 2 - 3), base_y // 2 - b // 2 - 2))
    ak = _n(a * k)
    if kind == "pocket":
        return (Words(kind, dict(at, y=py, a=a * k, b=b, depth=depth)),
                f"result = result - box({ak}, {b}, {depth}).at({x}, {py}, {t - depth})")
    if kind == "cutout":
        return Words(kind, dict(at, y=py, a=a * k, b=b)), f"result = result - box({ak}, {b}, {t}).at({x}, {py}, 0)"
    return Words(kind, dict(at, y=py, a=a * k, b=b, h=h)), f"result = result + box({ak}, {b}, {h}).at({x}, {py}, {t})"


def _composed(r: random.Random, k: float = 1.0):
    """A plate or block with two or three features side by side along x, each in its own cell:
    one sentence of the drawing per feature and one line of script per sentence. It teaches the
    moves (cut a hole or a pocket, add a boss or a block, place it by coordinates) apart from any
    one family's shape, so reading a new drawing is composing them."""
    n = r.choice((2, 3))
    w = r.choice(range(20, 41, 4))
    x, y, t = n * w, r.choice(range(24, 61, 4)), r.choice(range(4, 21, 2))
    kinds = [r.choice(_ON_TOP) for _ in range(n)]
    parts = [_feature(r, kind, -x // 2 + w // 2 + i * w, x, w, y, t, k if i == 0 else 1.0)
             for i, kind in enumerate(kinds)]
    base = "plate" if t <= 10 else "block"
    words = Words("composed", dict(base=base, base__caps=base.upper(), x=x, y=y, t=t,
                                   features=tuple(said for said, _ in parts)))
    return words, "\n".join([f"result = box({x}, {y}, {t})"] + [line for _, line in parts])


COMPOSED = "composed"
"""A train-and-test family the env draws only with the option composed > 0 (level 3): parts
composed of 2-3 features from the trained moves, so the skill is the moves, not ten shapes."""

FAMILIES = {  # name -> (level, builder(rng, k) -> (Words, script)); k scales one dimension
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


def draw(family_name: str, seed: str, style: str = "classic") -> tuple[str, str, str]:
    """(drawing text in `style`, reference script, broken script) of one part; deterministic in
    seed. The style changes the words only: the part, and so the scripts, are the seed's."""
    _, build = family(family_name)
    words, script = build(random.Random(seed))
    _, broken = build(random.Random(seed), BROKEN_SCALE)
    return render(words, style), script, broken
