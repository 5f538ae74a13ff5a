"""How a `cad/parts-v1` drawing is worded: five styles, written apart, of the same facts.

A family's builder (parts.py) says *what* the drawing states as `Words`: a template's name
and its values, one number per dimension. `render(words, style)` words it in one style:

    classic          the sentence each family has always had (the default prompts, bit for bit)
    features_first   the holes, bores and bosses first, then the stock they are in
    bulleted         a titled list, one dimension per line
    dims_first       overall size first, then the kind of part; other synonyms (bore, recess,
                     pad, pipe), and positions from other references: the +x end, a hole
                     pattern's pitch, a slot's end centres, a tube's wall
    callout          a terse engineering callout: `PLATE 40x30x5 (X x Y x Z), DIA 6 THRU AT CENTRE`

TRAINED_STYLES are the ones `wording: varied` trains and tests on; HELD_OUT_STYLES are the
ones `wording: held_out` keeps for its test and unseen splits, never in training (env.py).
Sizes stay in millimetres in every style (the frame says so); only how they are written
varies. A field named `a__b` restates field `a` from another reference (the hole's distance
from the +x end instead of its x): tests check that every style states every fact of the
classic sentence, directly or restated, and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

STYLES = ("classic", "features_first", "bulleted", "dims_first", "callout")
TRAINED_STYLES = STYLES[:3]
HELD_OUT_STYLES = STYLES[3:]


@dataclass(frozen=True)
class Words:
    """What a drawing states, before it is worded: the template's name and the values it fills
    in (mm or degrees; a composed part's `features` are Words of their own)."""

    name: str
    values: dict


_XYZ = "mm (x, y, z)"
TEMPLATES: dict[str, tuple[str, str, str, str, str]] = {  # name -> one template per STYLES entry
    "plate": (
        "A rectangular plate {x} mm long (x), {y} mm wide (y) and {t} mm thick (z).",
        "A flat slab {t} mm thick (z), {x} mm along x and {y} mm along y, with no holes.",
        "Rectangular plate:\n- length along x: {x} mm\n- width along y: {y} mm\n- thickness along z: {t} mm",
        "Overall {x}mm (x) by {y}mm (y) by {t}mm (z): a plain rectangular plate.",
        "PLATE {x}x{y}x{t} (X x Y x Z)."),
    "rod": (
        "A solid round rod of diameter {d} mm and length {h} mm, its axis along z.",
        "A solid cylinder standing on its end: {d} mm in diameter and {h} mm tall along z.",
        "Round bar, axis along z:\n- diameter: {d} mm\n- length: {h} mm",
        "{h}mm long and {d}mm across: a solid pin standing upright on the XY plane, its axis along z.",
        "ROUND BAR DIA {d} x {h} LG, AXIS Z."),
    "tube": (
        "A tube {h} mm long along z, outer diameter {d_out} mm, with a through bore of diameter {d_in} mm on its axis.",
        "A through bore of {d_in} mm diameter runs along the axis of a round tube {d_out} mm in outside diameter "
        "and {h} mm long, its axis along z.",
        "Tube, axis along z:\n- outside diameter: {d_out} mm\n- inside diameter (through): {d_in} mm\n- length: {h} mm",
        "{h} mm long along z and {d_out} mm across the outside: a pipe whose wall is {d_in__wall} mm thick, "
        "hollow right through on its axis.",
        "TUBE OD {d_out} x {h} LG, AXIS Z, ID {d_in} THRU."),
    "plate_hole": (
        "A plate {x} x {y} x {t} " + _XYZ + " with one through hole of diameter {d} mm at its centre.",
        "One through hole, {d} mm in diameter, at the centre of a plate {x} x {y} x {t} " + _XYZ + ".",
        "Plate with a centre hole:\n- size: {x} x {y} x {t} " + _XYZ + "\n- hole: {d} mm diameter, through, "
        "at the centre of the plate",
        "{x} mm by {y} mm, {t} mm thick (x by y by z): a plate with one {d} mm bore through it, its centre "
        "{x__half} mm from the -x edge and {y__half} mm from the -y edge.",
        "PLATE {x}x{y}x{t} (X x Y x Z), DIA {d} THRU AT CENTRE."),
    "corner_holes": (
        "A plate {x} x {y} x {t} " + _XYZ + " with four through holes of diameter {d} mm, one near each corner, "
        "each hole's centre {e} mm in from both adjacent edges.",
        "Four through holes of {d} mm diameter, one per corner, each centred {e} mm from both edges that meet "
        "there, in a plate {x} x {y} x {t} " + _XYZ + ".",
        "Plate with four corner holes:\n- size: {x} x {y} x {t} " + _XYZ + "\n- holes: 4, each {d} mm diameter, "
        "through\n- hole centres: x = -{e__cx} and +{e__cx}, y = -{e__cy} and +{e__cy} (from the plate's centre)",
        "{x} x {y} mm, {t} mm thick (x by y by z): a plate drilled through with four {d} mm holes at the corners "
        "of a rectangle {e__pitch_x} mm (x) by {e__pitch_y} mm (y) centred on the plate.",
        "PLATE {x}x{y}x{t} (X x Y x Z), 4x DIA {d} THRU, {e} FROM EDGES, ONE AT EACH CORNER."),
    "stepped_shaft": (
        "A stepped shaft along z: a {d1} mm diameter section {h1} mm long from z = 0, then a {d2} mm diameter "
        "section {h2} mm long on top of it, both on the same axis.",
        "A spigot {d2} mm in diameter and {h2} mm long stands on a base section {d1} mm in diameter and {h1} mm "
        "long, on the same axis: a stepped shaft along z, its bottom at z = 0.",
        "Stepped shaft, axis along z, from z = 0 upward:\n- first section: diameter {d1} mm, length {h1} mm\n"
        "- second section: diameter {d2} mm, length {h2} mm",
        "{h2__total} mm long overall along z: a shaft {d1} mm in diameter for its first {h1} mm from z = 0, "
        "stepping down to {d2} mm in diameter for the rest, all on one axis.",
        "STEPPED SHAFT, AXIS Z: DIA {d1} x {h1} LG FROM Z 0, THEN DIA {d2} x {h2} LG ON TOP, COAXIAL."),
    "slotted_plate": (
        "A plate {x} x {y} x {t} " + _XYZ + " with one through slot at its centre: straight sides and round ends, "
        "{length} mm long overall along x and {w} mm wide.",
        "A through slot with straight sides and fully rounded ends, {length} mm long overall along x and {w} mm "
        "wide, cut at the centre of a plate {x} x {y} x {t} " + _XYZ + ".",
        "Slotted plate:\n- size: {x} x {y} x {t} " + _XYZ + "\n- slot: through, at the centre, straight sides "
        "and semicircular ends\n- slot length overall (x): {length} mm\n- slot width (y): {w} mm",
        "{x} x {y} x {t} mm (x by y by z): a plate with a through slot {w} mm wide in its middle, running along x, "
        "its ends full semicircles whose centres are {length__centres} mm apart.",
        "PLATE {x}x{y}x{t} (X x Y x Z), SLOT {w} WIDE x {length} LG OVERALL ALONG X, FULL R ENDS, THRU, CENTRED."),
    "flange": (
        "A round flange: a disc of diameter {D} mm and thickness {t} mm with a central through bore of diameter "
        "{bore} mm, and {n} through holes of diameter {hole} mm evenly spaced on a bolt circle of diameter {bc} mm, "
        "the first at {start} degrees from the +x axis (counter-clockwise).",
        "{n} bolt holes of {hole} mm diameter, evenly spaced on a pitch circle of {bc} mm diameter with the first "
        "at {start} degrees counter-clockwise from +x, and a centre bore of {bore} mm, all through a round disc "
        "{D} mm in diameter and {t} mm thick.",
        "Round flange:\n- disc: diameter {D} mm, thickness {t} mm\n- centre bore: diameter {bore} mm, through\n"
        "- bolt holes: {n}, each {hole} mm diameter, through, evenly spaced\n- bolt circle radius: {bc__radius} mm\n"
        "- first hole: {start} degrees counter-clockwise from the +x axis",
        "{D} mm across and {t} mm thick: a flange disc with a {bore} mm through bore in the middle and {n} equally "
        "spaced through holes of {hole} mm on a {bc} mm bolt circle, one of them at {start} degrees "
        "counter-clockwise from the +x axis.",
        "FLANGE DIA {D} x {t} THK; DIA {bore} THRU AT CENTRE; {n}x DIA {hole} THRU EQ SP ON {bc} PCD, "
        "FIRST AT {start} DEG CCW FROM +X."),
    "l_bracket": (
        "An L-bracket: a base plate {x} x {y} x {t} " + _XYZ + "; on its -x end an upright wall {t} mm thick (x), "
        "{y} mm wide (y) and {h} mm tall in total (z, measured from z = 0), flush with the plate's -x, +y and -y "
        "faces. The base has one through hole of diameter {d} mm centred in y, at x = {hx}.",
        "A through hole of {d} mm diameter, centred in y, {hx__from_wall} mm from the outer (-x) face of the wall, "
        "in the base of an L-bracket: a base plate {x} x {y} x {t} " + _XYZ + " with an upright wall on its -x "
        "end, {t} mm thick (x), as wide as the base ({y} mm) and {h} mm tall overall from z = 0, flush with the "
        "base's -x, +y and -y faces.",
        "L-bracket:\n- base plate: {x} x {y} x {t} " + _XYZ + "\n- upright wall on the base's -x end: {t} mm "
        "thick (x), {y} mm wide (y), {h} mm tall from z = 0, flush with the base's -x, +y and -y faces\n"
        "- one through hole in the base: diameter {d} mm, at x = {hx}, y = 0",
        "{x} mm (x) by {y} mm (y) base, {t} mm thick, with an upright {t} mm wall along its whole -x end rising to "
        "{h} mm overall height from z = 0, flush with the base's -x, +y and -y faces: an L-bracket. One {d} mm "
        "hole goes through the base on its centre line in y, {hx__from_end} mm in from the base's +x end.",
        "L-BRACKET: BASE {x}x{y}x{t} (X x Y x Z); WALL {t} THK AT -X END, FULL WIDTH, {h} HIGH OVERALL FROM Z 0, "
        "FLUSH -X/+Y/-Y; DIA {d} THRU BASE AT X {hx}, Y 0."),
    "rounded_plate": (
        "A plate {x} x {y} x {t} " + _XYZ + " whose four vertical edges are rounded with a fillet radius of "
        "{rad} mm, with a through hole of diameter {d} mm at its centre.",
        "Four vertical edges rounded to a {rad} mm radius and one {d} mm through hole in the middle, on a plate "
        "{x} x {y} x {t} " + _XYZ + ".",
        "Plate with rounded corners:\n- size: {x} x {y} x {t} " + _XYZ + "\n- radius of the four vertical "
        "edges: {rad} mm\n- centre hole: diameter {d} mm, through",
        "{x} by {y} by {t} mm (x by y by z): a plate whose corners, seen from above, are rounded to a radius of "
        "{rad} mm, bored through its middle with a {d} mm hole.",
        "PLATE {x}x{y}x{t} (X x Y x Z), 4x R{rad} ON VERTICAL EDGES, DIA {d} THRU AT CENTRE."),
    "gusset": (
        "A triangular gusset plate {t} mm thick (z): a right triangle with its right-angle corner at the origin, "
        "one leg {a} mm long along +x and the other {b} mm long along +y, with a through hole of diameter {d} mm "
        "centred on the triangle's centroid (x = {cx}, y = {cy}).",
        "A through hole of {d} mm diameter at the centroid (x = {cx}, y = {cy}) of a right-triangular gusset plate "
        "{t} mm thick (z), its right-angle corner at the origin and its legs {a} mm along +x and {b} mm along +y.",
        "Gusset plate:\n- shape: right triangle, right-angle corner at the origin\n- leg along +x: {a} mm\n"
        "- leg along +y: {b} mm\n- thickness (z): {t} mm from z = 0\n- hole: diameter {d} mm, through, at the "
        "centroid (x = {cx}, y = {cy})",
        "{a} mm along +x by {b} mm along +y, {t} mm thick: a triangular gusset whose right-angle corner sits at "
        "the origin and whose third side joins (x = {a}, y = 0) to (x = 0, y = {b}); one {d} mm hole goes through "
        "it at its centroid, (x = {cx}, y = {cy}).",
        "GUSSET, RIGHT TRIANGLE, {t} THK: RIGHT-ANGLE CORNER AT ORIGIN, LEGS {a} ALONG +X AND {b} ALONG +Y; "
        "DIA {d} THRU AT CENTROID (X {cx}, Y {cy})."),
    "u_channel": (
        "A U-channel {x} mm long along x: a base {y} mm wide (y) and {t} mm thick (z), with two side walls {t} mm "
        "thick along its +y and -y edges, {h} mm tall in total (z, measured from z = 0); open at the top and at "
        "both ends.",
        "Two side walls {t} mm thick, rising to {h} mm overall from z = 0 along the +y and -y edges of a base "
        "{y} mm wide (y) and {t} mm thick (z): a U-channel {x} mm long along x, open at the top and at both ends.",
        "U-channel, open at the top and at both ends:\n- length (x): {x} mm\n- overall width (y): {y} mm\n"
        "- overall height (z, from z = 0): {h} mm\n- thickness of the base and of both side walls: {t} mm",
        "{x} mm long (x) and {h} mm tall overall (z): a channel of U section with a {t} mm thick floor and two "
        "{t} mm thick walls, {y__inside} mm apart on the inside (y), open on top and at both ends.",
        "U-CHANNEL {x} LG (X), {y} WIDE (Y) x {h} HIGH (Z) OVERALL, BASE AND WALLS {t} THK, OPEN TOP AND ENDS."),
    "flanged_bushing": (
        "A flanged bushing along z: a flange (a disc) {df} mm in diameter and {tf} mm thick from z = 0, and a "
        "sleeve of outside diameter {ds} mm on top of it, on the same axis; {h} mm long in total (flange "
        "included), with a through bore of diameter {d} mm on its axis.",
        "A through bore of {d} mm on the axis of a flanged bushing along z: a flange {df} mm in diameter and "
        "{tf} mm thick at z = 0, and a sleeve of {ds} mm outside diameter above it, {h} mm long in total with "
        "the flange.",
        "Flanged bushing, axis along z:\n- flange: diameter {df} mm, thickness {tf} mm, from z = 0\n"
        "- sleeve: outside diameter {ds} mm, on top of the flange\n- overall length: {h} mm (flange included)\n"
        "- bore: diameter {d} mm, through",
        "{h} mm long overall along z: a bushing with a {df} mm diameter flange {tf} mm thick at its base (z = 0) "
        "and a {ds} mm diameter sleeve {h__sleeve} mm long above it, bored right through on its axis at {d} mm.",
        "FLANGED BUSHING, AXIS Z: FLANGE DIA {df} x {tf} THK AT Z 0; SLEEVE OD {ds} ON TOP; {h} LG OVERALL; "
        "DIA {d} BORE THRU."),
    "hex_standoff": (
        "A hex standoff {h} mm tall along z: a regular hexagonal prism {s} mm across flats, two of its flats "
        "parallel to the x axis, with a through hole of diameter {d} mm on its axis.",
        "A through hole of {d} mm diameter on the axis of a hexagonal standoff {h} mm tall along z, {s} mm "
        "across flats, with two flats parallel to the x axis.",
        "Hex standoff, axis along z:\n- regular hexagon: {s} mm across flats, two flats parallel to x\n"
        "- height: {h} mm\n- centre hole: diameter {d} mm, through",
        "{h} mm tall (z) and {s} mm across the flats: a six-sided spacer with two of its corners on the x axis, "
        "drilled right through its axis at {d} mm.",
        "HEX STANDOFF {s} A/F x {h} LG, AXIS Z, FLATS PARALLEL TO X, DIA {d} THRU."),
    "pocket_block": (
        "A block {x} x {y} x {z} " + _XYZ + ". Into its top face: a rectangular pocket {px} x {py} mm and "
        "{depth} mm deep, centred in x and y. At x = {hx}, y = 0: a through hole of diameter {hole} mm, "
        "counterbored from the top to diameter {cb} mm and {cbd} mm deep.",
        "A rectangular pocket {px} x {py} mm (x, y), {depth} mm deep, centred in the top face, and a through hole "
        "of {hole} mm at x = {hx}, y = 0 with a counterbore {cb} mm in diameter and {cbd} mm deep from the top, "
        "all in a block {x} x {y} x {z} " + _XYZ + ".",
        "Block with a pocket and a counterbored hole:\n- block: {x} x {y} x {z} " + _XYZ + "\n- pocket in the top "
        "face: {px} x {py} mm (x, y), {depth} mm deep, centred\n- hole: diameter {hole} mm, through, at x = {hx}, "
        "y = 0\n- counterbore from the top: diameter {cb} mm, {cbd} mm deep",
        "{x} x {y} x {z} mm (x by y by z): a block with a centred {px} x {py} mm (x by y) recess sunk {depth} mm "
        "into its top, and a counterbored through hole ({hole} mm, counterbore {cb} mm across and {cbd} mm deep "
        "from the top) on its centre line in y, {hx__from_end} mm in from the +x face.",
        "BLOCK {x}x{y}x{z} (X x Y x Z); POCKET {px}x{py} x {depth} DP, CENTRED IN TOP FACE; DIA {hole} THRU, "
        "C'BORE DIA {cb} x {cbd} DP FROM TOP, AT X {hx}, Y 0."),
    "composed": (
        "A {base} {x} x {y} x {t} " + _XYZ + " with {features}.",
        "{features}, all on a {base} {x} x {y} x {t} " + _XYZ + ".",
        "A {base} {x} x {y} x {t} " + _XYZ + ", with:\n- {features}",
        "{x} x {y} x {t} mm (x by y by z), a {base}. {features}.",
        "{base__caps} {x}x{y}x{t} (X x Y x Z); {features}."),
    # a composed part's features; positions are of the feature's centre
    "through_hole": (
        "a through hole of diameter {d} mm at x = {x}, y = {y}",
        "a through-hole of {d} mm diameter at (x = {x}, y = {y})",
        "through hole: diameter {d} mm, centre at x = {x}, y = {y}",
        "a bore of {d} mm right through, {x__from_end} mm from the -x end, y = {y}",
        "DIA {d} THRU AT X {x}, Y {y}"),
    "blind_hole": (
        "a hole of diameter {d} mm and {depth} mm deep, drilled into the top face at x = {x}, y = {y}",
        "a blind hole of {d} mm diameter, {depth} mm deep into the top face, at (x = {x}, y = {y})",
        "blind hole from the top face: diameter {d} mm, depth {depth} mm, centre at x = {x}, y = {y}",
        "a hole of {d} mm drilled {depth} mm down from the top, not through, {x__from_end} mm from the -x end, "
        "y = {y}",
        "DIA {d} x {depth} DP FROM TOP AT X {x}, Y {y}"),
    "boss": (
        "a round boss of diameter {d} mm standing {h} mm above the top face, centred at x = {x}, y = {y}",
        "a cylindrical stud {d} mm in diameter rising {h} mm from the top face at (x = {x}, y = {y})",
        "boss on the top face: diameter {d} mm, height {h} mm, centre at x = {x}, y = {y}",
        "a cylinder {d} mm across and {h} mm tall standing on the top, {x__from_end} mm from the -x end, y = {y}",
        "BOSS DIA {d} x {h} HIGH ON TOP AT X {x}, Y {y}"),
    "pocket": (
        "a rectangular pocket {a} x {b} mm (x, y) and {depth} mm deep, cut into the top face, centred at "
        "x = {x}, y = {y}",
        "a pocket {a} x {b} mm (x, y), {depth} mm deep into the top face, at (x = {x}, y = {y})",
        "pocket in the top face: {a} x {b} mm (x, y), {depth} mm deep, centre at x = {x}, y = {y}",
        "a recess {a} by {b} mm (x by y) sunk {depth} mm into the top, {x__from_end} mm from the -x end, y = {y}",
        "POCKET {a}x{b} x {depth} DP IN TOP AT X {x}, Y {y}"),
    "cutout": (
        "a rectangular through cut-out {a} x {b} mm (x, y), centred at x = {x}, y = {y}",
        "a rectangular window {a} x {b} mm (x, y) cut right through at (x = {x}, y = {y})",
        "through cut-out: {a} x {b} mm (x, y), centre at x = {x}, y = {y}",
        "a rectangular opening {a} by {b} mm (x by y) through the whole thickness, {x__from_end} mm from the -x "
        "end, y = {y}",
        "CUT-OUT {a}x{b} THRU AT X {x}, Y {y}"),
    "block": (
        "a block {a} x {b} x {h} mm (x, y, z) standing on the top face, centred at x = {x}, y = {y}",
        "a raised pad {a} x {b} mm (x, y) and {h} mm high on the top face, at (x = {x}, y = {y})",
        "block on the top face: {a} x {b} x {h} " + _XYZ + ", centre at x = {x}, y = {y}",
        "a rectangular pad {a} by {b} by {h} mm (x by y by z) on top, {x__from_end} mm from the -x end, y = {y}",
        "PAD {a}x{b}x{h} ON TOP AT X {x}, Y {y}"),
}
_JOINS = {"classic": "; ", "features_first": "; ", "bulleted": "\n- ", "dims_first": ". ", "callout": "; "}
"""How a composed part's features are joined in each style (dims_first: one sentence each)."""


def _n(v: float) -> str:
    return f"{v:g}"


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _fill(words: Words, style: str) -> str:
    values = {k: v if isinstance(v, str) else _n(v) for k, v in words.values.items() if k != "features"}
    if "features" in words.values:
        said = [_fill(f, style) for f in words.values["features"]]
        join = _JOINS[style]
        values["features"] = join.join(_cap(s) if join == ". " else s for s in said)
    return TEMPLATES[words.name][STYLES.index(style)].format(**values)


def render(words: Words, style: str = "classic") -> str:
    """The drawing's text in one of STYLES."""
    if style not in STYLES:
        raise ValueError(f"unknown wording style {style!r}: use one of {', '.join(STYLES)}")
    return _cap(_fill(words, style))
