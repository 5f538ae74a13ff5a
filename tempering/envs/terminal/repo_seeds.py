"""The seed modules repository tasks are made from, and how their generated tests call them.

Each seed is a small pure-Python standard-library module that is copied, renamed, into a
one-package repository (textwrap becomes `wrapkit`, ...). A seed names, per public function,
a maker that draws one call from a seeded `random.Random`: a Python snippet whose last line
is an expression, with the package under its repository name `P`:

    P.wrap('the quick brown fox', width=7)
    h = [5, 1, 4]\nP.heapify(h)\nh

Expected values are whatever the original module returns (see repo_gen.py); the makers only
choose inputs that reach many branches, so that most bugs show in some test.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

Maker = Callable[[random.Random], str]
"""rng -> a snippet that uses the package as `P`."""


@dataclass(frozen=True)
class Seed:
    module: str
    """The standard-library module the package is copied from."""
    package: str
    """Its name in the repository."""
    about: str
    """One line for the README."""
    makers: tuple[tuple[str, Maker], ...]
    """(function, maker) per tested function, in a fixed order."""


LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _word(r: random.Random, lo: int = 1, hi: int = 9, alphabet: str = LETTERS) -> str:
    return "".join(r.choice(alphabet) for _ in range(r.randint(lo, hi)))


def _text(r: random.Random) -> str:
    """Prose with the things wrapping cares about: long words, hyphens, sentence ends, tabs."""
    words = []
    for _ in range(r.randint(3, 14)):
        kind = r.random()
        if kind < 0.1:
            words.append(_word(r, 12, 22))
        elif kind < 0.2:
            words.append(_word(r, 2, 6) + "-" + _word(r, 2, 7))
        elif kind < 0.3:
            words.append(_word(r, 1, 7).capitalize() + r.choice(".!?"))
        else:
            words.append(_word(r, 1, 8))
    seps = [r.choice([" ", " ", " ", "  ", "\t", "\n"]) for _ in words[1:]]
    return words[0] + "".join(s + w for s, w in zip(seps, words[1:]))


def _wrap_kwargs(r: random.Random) -> str:
    options = ["break_long_words=False", "break_on_hyphens=False", "initial_indent='* '",
               "subsequent_indent='  '", "fix_sentence_endings=True", "drop_whitespace=False", "tabsize=4",
               "expand_tabs=False", "replace_whitespace=False", f"max_lines={r.randint(1, 3)}",
               "placeholder=' ~'"]
    chosen = r.sample(options, r.choice([0, 0, 1, 1, 2]))
    return "".join(", " + o for o in chosen)


def _lines(r: random.Random) -> str:
    margin = r.choice(["", "  ", "    ", "\t", " \t"])
    out = []
    for _ in range(r.randint(2, 5)):
        k = r.random()
        out.append("" if k < 0.15 else "   " if k < 0.25 else margin + r.choice(["", "  ", " "]) * (k > 0.7)
                   + _word(r, 1, 6) + r.choice(["", " " + _word(r, 1, 5)]))
    return "\n".join(out) + r.choice(["", "\n"])


TEXTWRAP = Seed("textwrap", "wrapkit", "Text wrapping and filling.", (
    ("wrap", lambda r: f"P.wrap({_text(r)!r}, width={r.randint(4, 24)}{_wrap_kwargs(r)})"),
    ("fill", lambda r: f"P.fill({_text(r)!r}, width={r.randint(6, 30)}{_wrap_kwargs(r)})"),
    ("shorten", lambda r: f"P.shorten({_text(r)!r}, width={r.randint(8, 40)}"
                          + r.choice(["", ", placeholder='...'", ", placeholder=' [+]'"]) + ")"),
    ("dedent", lambda r: f"P.dedent({_lines(r)!r})"),
    ("indent", lambda r: f"P.indent({_lines(r)!r}, {r.choice(['> ', '  ', '# '])!r}"
                         + r.choice(["", "", ", lambda line: True", ", lambda line: 'a' in line"]) + ")"),
))


def _unit(r: random.Random) -> float:
    return r.choice([0.0, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0])


def _rgb(r: random.Random) -> str:
    a, b, c = _unit(r), _unit(r), _unit(r)
    shape = r.random()
    if shape < 0.15:
        b = c = a  # grey
    elif shape < 0.3:
        b = a  # a tie for the largest or smallest channel
    return f"{a!r}, {b!r}, {c!r}"


def _hue(r: random.Random) -> float:
    return round((r.randint(0, 5) + r.choice([0.0, 0.25, 0.5, 0.75])) / 6, 4)


COLORSYS = Seed("colorsys", "colorkit", "Conversions between colour systems.", (
    ("rgb_to_yiq", lambda r: f"P.rgb_to_yiq({_rgb(r)})"),
    ("yiq_to_rgb", lambda r: f"P.yiq_to_rgb({_unit(r)!r}, {r.choice([-0.5, -0.2, 0.0, 0.2, 0.5])!r}, "
                             f"{r.choice([-0.5, -0.1, 0.0, 0.3, 0.5])!r})"),
    ("rgb_to_hls", lambda r: f"P.rgb_to_hls({_rgb(r)})"),
    ("hls_to_rgb", lambda r: f"P.hls_to_rgb({_hue(r)!r}, {_unit(r)!r}, {r.choice([0.0, 0.3, 0.5, 1.0])!r})"),
    ("rgb_to_hsv", lambda r: f"P.rgb_to_hsv({_rgb(r)})"),
    ("hsv_to_rgb", lambda r: f"P.hsv_to_rgb({_hue(r)!r}, {r.choice([0.0, 0.4, 1.0])!r}, {_unit(r)!r})"),
))


def _pattern(r: random.Random) -> str:
    pieces = []
    for _ in range(r.randint(1, 5)):
        k = r.random()
        pieces.append("*" if k < 0.25 else "?" if k < 0.4 else
                      r.choice(["[abc]", "[!ab]", "[a-c]", "[]a]", "[!]x]", "[x-z.]", "[a-]", "[", "[!"])
                      if k < 0.6 else _word(r, 1, 3, "abcx."))
    return "".join(pieces)


def _name_for(r: random.Random, pattern: str) -> str:
    """A name that often matches `pattern`, sometimes nearly."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            out.append(_word(r, 0, 3, "abcx."))
        elif c == "?":
            out.append(r.choice("abcx."))
        elif c == "[" and "]" in pattern[i + 2:]:
            j = pattern.index("]", i + 2)
            out.append(r.choice("abcxyz.-]"))
            i = j
        else:
            out.append(c)
        i += 1
    name = "".join(out)
    if name and r.random() < 0.3:
        k = r.randrange(len(name))
        name = name[:k] + r.choice("abcxy") + name[k + 1:]
    return name


def _fnmatch(r: random.Random, fn: str) -> str:
    pat = _pattern(r)
    return f"P.{fn}({_name_for(r, pat)!r}, {pat!r})"


FNMATCH = Seed("fnmatch", "globkit", "Shell-style filename pattern matching.", (
    ("fnmatch", lambda r: _fnmatch(r, "fnmatch")),
    ("fnmatchcase", lambda r: _fnmatch(r, "fnmatchcase")),
    ("filter", lambda r: (lambda pat: f"P.filter({[_name_for(r, pat) for _ in range(r.randint(2, 5))]!r}, "
                                      f"{pat!r})")(_pattern(r))),
    ("translate", lambda r: f"P.translate({_pattern(r)!r})"),
))


def _shell_word(r: random.Random) -> str:
    k = r.random()
    w = _word(r, 1, 6)
    if k < 0.15:
        return f"'{w} {_word(r, 1, 4)}'"
    if k < 0.3:
        return f'"{w} \\"{_word(r, 1, 3)}\\""'
    if k < 0.4:
        return f"{w}\\ {_word(r, 1, 3)}"
    if k < 0.47:
        return "''"
    if k < 0.55:
        return f"{w}='{_word(r, 1, 4)}'"
    if k < 0.6:
        return r.choice(["a&&b", "x|y", "(z)", "c;d"])
    return w


def _command(r: random.Random) -> str:
    line = " ".join(_shell_word(r) for _ in range(r.randint(1, 6)))
    if r.random() < 0.25:
        line += " # " + _word(r, 1, 6)
    if r.random() < 0.08:
        line += r.choice([" 'open", ' "open', " end\\"])
    return line


SHLEX = Seed("shlex", "shellkit", "A lexical analyser for shell-like syntax.", (
    ("split", lambda r: f"P.split({_command(r)!r}" + r.choice(["", "", ", comments=True", ", posix=False"]) + ")"),
    ("quote", lambda r: f"P.quote({r.choice(['', _word(r), _word(r) + ' ' + _word(r), _word(r) + chr(39) + _word(r), '$' + _word(r), _word(r) + '*', 'a' + chr(34) + 'b', '-' + _word(r)])!r})"),  # noqa: E501
    ("join", lambda r: f"P.join({[r.choice([_word(r), _word(r) + ' x', '', _word(r) + chr(39)]) for _ in range(r.randint(1, 4))]!r})"),  # noqa: E501
    ("shlex", lambda r: f"list(P.shlex({_command(r)!r}" + r.choice(["", ", posix=True", ", punctuation_chars=True"])
                        + "))"),
))


def _sorted_ints(r: random.Random) -> list[int]:
    return sorted(r.randint(0, 9) for _ in range(r.randint(0, 8)))


def _bounds(r: random.Random, a: list[int]) -> str:
    if not a or r.random() < 0.6:
        return ""
    lo = r.randint(0, len(a))
    return f", {lo}, {r.randint(lo, len(a))}" if r.random() < 0.6 else f", lo={lo}"


def _bisect(r: random.Random, fn: str) -> str:
    a = _sorted_ints(r)
    if r.random() < 0.2:
        pairs = [(x, _word(r, 1, 2)) for x in a]
        return f"P.{fn}({pairs!r}, {r.randint(0, 9)}, key=lambda t: t[0])"
    return f"P.{fn}({a!r}, {r.choice(a) if a and r.random() < 0.5 else r.randint(-1, 10)}{_bounds(r, a)})"


def _insort(r: random.Random, fn: str) -> str:
    a = _sorted_ints(r)
    if r.random() < 0.2:
        pairs = [(x, _word(r, 1, 2)) for x in a]
        return f"a = {pairs!r}\nP.{fn}(a, ({r.randint(0, 9)}, 'new'), key=lambda t: t[0])\na"
    return f"a = {a!r}\nP.{fn}(a, {r.choice(a) if a and r.random() < 0.5 else r.randint(-1, 10)}{_bounds(r, a)})\na"


BISECT = Seed("bisect", "bisectkit", "Bisection algorithms for sorted lists.", (
    ("bisect_left", lambda r: _bisect(r, "bisect_left")),
    ("bisect_right", lambda r: _bisect(r, "bisect_right")),
    ("insort_left", lambda r: _insort(r, "insort_left")),
    ("insort_right", lambda r: _insort(r, "insort_right")),
))


def _ints(r: random.Random, lo: int = 0, hi: int = 9) -> list[int]:
    return [r.randint(-5, 20) for _ in range(r.randint(lo, hi))]


HEAPQ = Seed("heapq", "heapkit", "Heap queue algorithms.", (
    ("heapify", lambda r: f"h = {_ints(r)!r}\nP.heapify(h)\nh"),
    ("heappush", lambda r: f"h = []\nfor x in {_ints(r, 1)!r}:\n    P.heappush(h, x)\nh"),
    ("heappop", lambda r: f"h = {_ints(r, 1)!r}\nP.heapify(h)\n[P.heappop(h) for _ in range(len(h))]"),
    ("heappushpop", lambda r: f"h = {_ints(r, 1)!r}\nP.heapify(h)\n(P.heappushpop(h, {r.randint(-5, 20)}), h)"),
    ("heapreplace", lambda r: f"h = {_ints(r, 1)!r}\nP.heapify(h)\n(P.heapreplace(h, {r.randint(-5, 20)}), h)"),
    ("nlargest", lambda r: f"P.nlargest({r.randint(0, 6)}, {_ints(r)!r}"
                           + r.choice(["", "", ", key=abs", ", key=lambda x: -x"]) + ")"),
    ("nsmallest", lambda r: f"P.nsmallest({r.randint(0, 6)}, {_ints(r)!r}"
                            + r.choice(["", "", ", key=abs", ", key=lambda x: x % 7"]) + ")"),
    ("merge", lambda r: "list(P.merge(" + ", ".join(repr(sorted(_ints(r, 0, 5))) for _ in range(r.randint(1, 3)))
                        + r.choice(["", ", key=lambda x: x // 3"]) + "))"),
))

def _markup(r: random.Random) -> str:
    """Text with the characters escaping cares about, alone and inside words and tags."""
    pieces = [r.choice(["<", ">", "&", '"', "'", "<b>", "</p>", "a & b", "x<y", "&amp;"]) if r.random() < 0.4
              else _word(r, 1, 5) for _ in range(r.randint(1, 6))]
    return r.choice(["", " "]).join(pieces)


REFS = ("&amp;", "&lt;", "&gt;", "&quot;", "&#39;", "&#x27;", "&#60;", "&#X3c;", "&nbsp;", "&copy;", "&eacute;",
        "&amp", "&lt", "&notit;", "&notin;", "&#0;", "&#x80;", "&#150;", "&#xD800;", "&#1114112;", "&#65", "&#x41",
        "&unknown;", "&", "&#;", "&#x;", "&ThickSpace;", "&AMP;", "&#x1F600;", "&#11;")
"""Character references: named, decimal and hex, with and without the semicolon, and the
ones HTML5 replaces or rejects (0, surrogates, beyond U+10FFFF, the Windows-1252 block)."""


def _escaped(r: random.Random) -> str:
    return "".join(r.choice(REFS) if r.random() < 0.5 else _word(r, 1, 4) for _ in range(r.randint(1, 6)))


HTML = Seed("html", "markupkit", "Escaping and unescaping HTML text.", (
    ("escape", lambda r: f"P.escape({_markup(r)!r}" + r.choice(["", "", ", quote=False", ", quote=True"]) + ")"),
    ("unescape", lambda r: f"P.unescape({_escaped(r)!r})"),
))


def _graph(r: random.Random, cycle: bool = False) -> dict[str, list[str]]:
    """node -> its predecessors: a DAG (edges only from nodes drawn earlier), or with a cycle
    a <-> b; some nodes appear only as another's predecessor."""
    nodes = r.sample("abcdefgh", r.randint(2, 7))
    graph = {n: sorted(r.sample(nodes[:i], r.randint(0, min(i, 2)))) for i, n in enumerate(nodes)}
    if cycle:
        graph[nodes[1]] = sorted(set(graph[nodes[1]]) | {nodes[0]})
        graph[nodes[0]] = [nodes[1]]
    return {n: preds for n, preds in graph.items() if preds or r.random() < 0.6}


def _adds(r: random.Random) -> str:
    calls = "".join(f"ts.add({n!r}{''.join(', ' + repr(p) for p in preds)})\n"
                    for n, preds in _graph(r, cycle=r.random() < 0.2).items())
    return f"ts = P.TopologicalSorter()\n{calls}list(ts.static_order())"


def _rounds(r: random.Random) -> str:
    return (f"ts = P.TopologicalSorter({_graph(r)!r})\nts.prepare()\nrounds = []\nwhile ts.is_active():\n"
            f"    rounds.append(sorted(ts.get_ready()))\n    ts.done(*rounds[-1])\nrounds")


def _done(r: random.Random) -> str:
    bad = r.choice(["", "", "ts.done('z')\n", "ts.done(first[0])\n"])  # unknown, or done twice: ValueError
    return (f"ts = P.TopologicalSorter({_graph(r)!r})\nts.prepare()\nfirst = sorted(ts.get_ready())\n"
            f"ts.done(first[0])\n{bad}(first, sorted(ts.get_ready()), ts.is_active())")


GRAPHLIB = Seed("graphlib", "graphkit", "Topological sorting of graphs.", (
    ("static_order", lambda r: f"list(P.TopologicalSorter({_graph(r, cycle=r.random() < 0.2)!r}).static_order())"),
    ("add", _adds),
    ("get_ready", _rounds),
    ("done", _done),
    ("prepare", lambda r: f"P.TopologicalSorter({_graph(r, cycle=r.random() < 0.6)!r}).prepare()"),
))

SEEDS: dict[str, Seed] = {s.module: s for s in (TEXTWRAP, COLORSYS, FNMATCH, SHLEX, BISECT, HEAPQ, HTML, GRAPHLIB)}
UNSEEN_MODULES = ("heapq", "shlex")
"""Seed modules only the unseen split draws: a priority queue beside the trained bisect and
graphlib, a lexer beside the trained fnmatch, textwrap and html."""
TRAINED_MODULES = tuple(m for m in SEEDS if m not in UNSEEN_MODULES)
"""The seed modules train and test draw."""
