"""`code/docstring-v1` families over small text formats and dicts: parse a line, build a mapping."""

from __future__ import annotations

import random

from .family import fam, ints, kinds, word, words


def _assignments(r: random.Random, p: dict) -> list[str]:
    return [p["sep"].join(f"{word(r, 1, 3, 'xyzabc')}={r.randint(0, 20)}" for _ in range(r.randint(0, 4)))]


def _version(r: random.Random) -> str:
    return ".".join(str(r.choice([0, 1, 2, 10])) for _ in range(r.randint(1, 3)))


def _signed_sum(r: random.Random) -> str:
    out = str(r.randint(0, 30))
    for _ in range(r.randint(0, 4)):
        out += r.choice("+-") + str(r.randint(0, 30))
    return out


def _tagged_text(r: random.Random, mark: str) -> str:
    return " ".join(mark + word(r) if r.random() < 0.4 else word(r) for _ in range(r.randint(0, 6)))


def _rows(r: random.Random) -> list[str]:
    width = 3
    return [",".join(word(r, 1, 4) for _ in range(width)) for _ in range(r.randint(0, 4))]


def _pairs(r: random.Random, sep: str) -> list[str]:
    return [f"{r.choice(['ann', 'bo', 'cy', 'dee'])}{sep}{r.randint(0, 9)}" for _ in range(r.randint(0, 5))]


def _name_amounts(r: random.Random) -> list[tuple[str, int]]:
    return [(r.choice(["north", "south", "east"]), r.randint(-5, 20)) for _ in range(r.randint(0, 5))]


PARSING = (
    fam("dimensions_product", "dimensions_product volume_from_size size_product", ("size dims spec: str",), "int",
        ("{a} is a size written like '3{sep}4{sep}5': positive whole numbers separated by {sep!r}. Return the "
         "product of the numbers.",
         "Multiply together the numbers in the string {a}, which are separated by {sep!r} (for example "
         "'2{sep}6' gives 12)."),
        "total = 1\n    for part in {a}.split({sep!r}):\n        total *= int(part)\n    return total",
        lambda r, p: [p["sep"].join(str(r.randint(1, 9)) for _ in range(r.randint(1, 4)))],
        lambda r: {"sep": r.choice(["x", "*", " by "])}),
    fam("sum_assignments", "sum_assignments total_of_assignments assignment_sum", ("line text settings: str",), "int",
        ("{a} holds assignments such as 'x=3{sep}y=10', separated by {sep!r}. Return the sum of the assigned "
         "numbers (0 if {a} is empty).",
         "Each part of {a} between {sep!r} separators has the form name=number. Add up the numbers."),
        "return sum(int(part.split('=')[1]) for part in {a}.split({sep!r}) if part)", _assignments,
        lambda r: {"sep": r.choice(";,&")}),
    fam("hex_to_rgb", "hex_to_rgb parse_hex_color color_components", ("color colour code: str",),
        "Tuple[int, int, int]",
        ("{a} is a colour written as '#' followed by six hexadecimal digits. Return its red, green and blue "
         "values as a tuple of three integers.",
         "Parse the colour code {a} ('#RRGGBB', hexadecimal, either case) into the tuple (red, green, blue)."),
        "return tuple(int({a}[i:i + 2], 16) for i in (1, 3, 5))",
        lambda r, p: ["#" + "".join(r.choice("0123456789abcdefABCDEF") for _ in range(6))]),
    fam("compare_versions", "compare_versions version_cmp cmp_versions",
        ("v1 version_a first_version: str", "v2 version_b second_version: str"), "int",
        ("Compare two version strings such as '1.10.2', made of numbers separated by dots. Return -1 if {a} is "
         "older than {b}, 1 if it is newer and 0 if they are equal. Parts are compared as numbers from the "
         "left, and a missing part counts as 0.",
         "Return 1, 0 or -1 as version {a} is greater than, equal to or less than version {b}. Versions are "
         "dot-separated numbers; compare them part by part as integers, padding the shorter one with zeros."),
        "x = [int(part) for part in {a}.split('.')]\n    y = [int(part) for part in {b}.split('.')]\n"
        "    x += [0] * (len(y) - len(x))\n    y += [0] * (len(x) - len(y))\n    return (x > y) - (x < y)",
        lambda r, p: [_version(r), _version(r)]),
    fam("clock_to_seconds", "clock_to_seconds seconds_since_midnight time_in_seconds", ("clock t stamp: str",), "int",
        ("{a} is a time of day written 'HH:MM:SS'. Return the number of seconds since midnight.",
         "Convert the 24-hour time {a} (hours, minutes and seconds separated by colons) to seconds after "
         "00:00:00."),
        "h, m, sec = {a}.split(':')\n    return int(h) * 3600 + int(m) * 60 + int(sec)",
        lambda r, p: [f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}"]),
    fam("tagged_words", "tagged_words extract_tags find_tags", ("text post message: str",), "List[str]",
        ("Return the words of {a} that start with {mark!r}, without the {mark!r}, in the order they appear.",
         "Words in {a} are separated by spaces. Collect those beginning with {mark!r} and return them with "
         "that first character removed."),
        "return [x[1:] for x in {a}.split() if x.startswith({mark!r})]", lambda r, p: [_tagged_text(r, p["mark"])],
        lambda r: {"mark": r.choice("#@$")}),
    fam("signed_sum", "signed_sum evaluate_sum add_and_subtract", ("expr expression formula: str",), "int",
        ("{a} is a sum written without spaces, such as '12+5-3': non-negative whole numbers joined by '+' and "
         "'-'. Return its value.",
         "Evaluate {a}, a chain of whole numbers with '+' or '-' between them (no spaces, no brackets)."),
        "import re\n    return sum(int(t) for t in re.findall('[+-]?[0-9]+', {a}))", lambda r, p: [_signed_sum(r)]),
    fam("csv_column", "csv_column get_column column_values", ("rows lines records: List[str]",), "List[str]",
        ("Each string in {a} is a row of comma-separated fields. Return the field at position {i} (counting "
         "from 0) of every row, in order.",
         "Split every line of {a} on commas and return the list of the {nth} fields."),
        "return [line.split(',')[{i}] for line in {a}]", lambda r, p: [_rows(r)],
        lambda r: (lambda i: {"i": i, "nth": ("first", "second", "third")[i]})(r.randint(0, 2))),
)

DICTS = (
    fam("word_lengths", "word_lengths length_map lengths_by_word", ("text sentence: str",), "Dict[str, int]",
        ("Return a dict that maps each word of {a} (words are separated by spaces) to its length.",
         "Build a dictionary from the space-separated words of {a} to the number of characters in each."),
        "return dict((x, len(x)) for x in {a}.split())", lambda r, p: [" ".join(words(r))]),
    fam("parity_counts", "parity_counts count_even_odd even_odd_totals", ("numbers values nums: List[int]",),
        "Dict[str, int]",
        ("Return a dict with the keys 'even' and 'odd' giving how many numbers in {a} are even and how many "
         "are odd.",
         "Count the even and the odd elements of {a}; return them as {{'even': ..., 'odd': ...}}."),
        "return dict(even=sum(1 for x in {a} if x % 2 == 0), odd=sum(1 for x in {a} if x % 2))",
        lambda r, p: [ints(r)]),
    fam("positions_of", "positions_of index_map where_each", ("values items numbers: List[int]",),
        "Dict[int, List[int]]",
        ("Return a dict mapping each value in {a} to the list of indices where it occurs, in increasing order.",
         "For every distinct element of {a}, list the positions at which it appears; return these lists in a "
         "dict keyed by the element."),
        "out = dict()\n    for i, x in enumerate({a}):\n        out.setdefault(x, []).append(i)\n    return out",
        lambda r, p: [ints(r, 0, 8, 0, 4)]),
    fam("keys_with_value", "keys_with_value keys_for_value find_keys",
        ("table mapping scores: Dict[str, int]", "value target wanted: int"), "List[str]",
        ("Return the keys of {a} whose value equals {b}, sorted alphabetically.",
         "Find every key of the dict {a} that maps to {b} and return them in alphabetical order."),
        "return sorted(x for x in {a} if {a}[x] == {b})",
        lambda r, p: [{word(r, 1, 3, "abcde"): r.randint(0, 3) for _ in range(r.randint(0, 5))}, r.randint(0, 3)]),
    fam("first_letter_counts", "first_letter_counts initial_counts count_by_initial", ("words names: List[str]",),
        "Dict[str, int]",
        ("Return a dict mapping each first letter to the number of words in {a} that start with it.",
         "Group the (non-empty) words of {a} by their first character and count each group."),
        "out = dict()\n    for x in {a}:\n        out[x[0]] = out.get(x[0], 0) + 1\n    return out",
        lambda r, p: [words(r, 0, 6, "abcab")]),
    fam("pairs_to_dict", "pairs_to_dict tally_pairs parse_tallies", ("entries pairs records: List[str]",),
        "Dict[str, int]",
        ("Each string in {a} looks like 'name{sep}number'. Return a dict mapping each name to its number; when a "
         "name appears more than once, add its numbers up.",
         "Turn the 'name{sep}count' strings of {a} into a dict from name to the total of its counts."),
        "out = dict()\n    for item in {a}:\n        key, num = item.split({sep!r})\n"
        "        out[key] = out.get(key, 0) + int(num)\n    return out",
        lambda r, p: [_pairs(r, p["sep"])], lambda r: {"sep": r.choice(":=")}),
    fam("max_per_key", "max_per_key best_per_name largest_by_key", ("sales readings records: List[Tuple[str, int]]",),
        "Dict[str, int]",
        ("{a} is a list of (name, amount) pairs. Return a dict mapping each name to the largest amount paired "
         "with it.",
         "For each name in the (name, amount) pairs of {a}, keep its biggest amount; return a dict of them."),
        "out = dict()\n    for name, amount in {a}:\n        if name not in out or amount > out[name]:\n"
        "            out[name] = amount\n    return out",
        lambda r, p: [_name_amounts(r)]),
    fam("invert_unique", "invert_unique reverse_mapping swap_keys_values", ("mapping table codes: Dict[str, int]",),
        "Dict[int, str]",
        ("The values of {a} are all different. Return the dict that maps each value back to its key.",
         "Swap the keys and values of {a} (no two keys share a value)."),
        "return dict((v, k) for k, v in {a}.items())",
        lambda r, p: [dict(zip(words(r, 0, 4, "abcdefgh"), r.sample(range(10), 4)))]),
)

FAMILIES = kinds(parsing=PARSING, dicts=DICTS)
