"""`code/synth-v1`: procedurally generated Python function tasks for training, so training
never touches an evaluation set. Each family is one line of spec: a signature, a
docstring with parameters, a reference solution (a template, filled with the same
parameters) and an input generator. A task shows three examples in its docstring; its
hidden tests are ten more inputs, some of them edge cases. Expected outputs come from the
reference solution, our own code, executed in this process.

The families are grouped by kind (strings, lists, numbers, dicts, parsing, recursion,
grids). UNSEEN_FAMILIES, one or two of each kind, are held out: only the `unseen` split
draws them, so a model that learnt the skill rather than the templates still solves them."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any, Callable

from ...types import Message, Task
from .verify import CodeTask

ENV_ID = "code/synth-v1"
N_VISIBLE, N_HIDDEN = 3, 10
INSTRUCTION = (
    "Write the following Python function. Reply with the whole function, including its "
    "signature, in one ```python code block.\n\n```python\n{prompt}```"
)


def _word(r: random.Random, lo: int = 0, hi: int = 8, alphabet: str = "abcdefghij") -> str:
    return "".join(r.choice(alphabet) for _ in range(r.randint(lo, hi)))


def _ints(r: random.Random, lo: int = 0, hi: int = 8, a: int = -20, b: int = 20) -> list[int]:
    return [r.randint(a, b) for _ in range(r.randint(lo, hi))]


def _sentence(r: random.Random) -> str:
    return " ".join(_word(r, 1, 6) for _ in range(r.randint(0, 6)))


@dataclass(frozen=True)
class Family:
    name: str
    signature: str  # "def {fn}(s: str) -> int:"
    doc: str
    solution: str  # the body, indented 4 spaces, may use {params}
    params: Callable[[random.Random], dict]
    args: Callable[[random.Random, dict], list]
    kind: str = ""
    """strings, lists, numbers, dicts, parsing, recursion or grids (set by `_kinds`)."""


def _f(name, signature, doc, solution, args, params=lambda r: {}):
    return Family(name, signature, doc, solution, params, args)


def _kinds(**kinds: tuple[Family, ...]) -> tuple[Family, ...]:
    return tuple(replace(f, kind=kind) for kind, families in kinds.items() for f in families)


def _nested(r: random.Random, depth: int = 3) -> list:
    """A list of small ints and lists like it, up to `depth` levels below the top."""
    return [_nested(r, depth - 1) if depth and r.random() < 0.35 else r.randint(-9, 9) for _ in range(r.randint(0, 4))]


def _grid(r: random.Random, values) -> list[list[int]]:
    """0 to 4 rows of the same length, 1 to 4 cells each."""
    cols = r.randint(1, 4)
    return [[r.choice(values) for _ in range(cols)] for _ in range(r.randint(0, 4))]


def _anagram_words(r: random.Random) -> list[str]:
    """Up to six words, each a shuffle of one of three base words, so groups form."""
    bases = [_word(r, 1, 4, "abcd") for _ in range(3)]
    return ["".join(r.sample(b, len(b))) for b in (r.choice(bases) for _ in range(r.randint(0, 6)))]


def _duration(r: random.Random) -> str:
    parts = [(r.randint(0, 23), "h"), (r.randint(0, 59), "m"), (r.randint(0, 59), "s")]
    kept = [p for p in parts if r.random() < 0.6] or [r.choice(parts)]
    return "".join(f"{n}{unit}" for n, unit in kept)


def _ranges(r: random.Random) -> str:
    out = []
    for _ in range(r.randint(0, 4)):
        a = r.randint(0, 20)
        out.append(f"{a}-{a + r.randint(0, 3)}" if r.random() < 0.5 else str(a))
    return ",".join(out)


FAMILIES: tuple[Family, ...] = _kinds(  # kind -> its families; Family.kind says which
    strings=(
        _f("count_char", "(s: str) -> int", "Return how many times the character {c!r} occurs in s.",
           "return s.count({c!r})", lambda r, p: [_word(r, 0, 12, "abcde")], lambda r: {"c": r.choice("abcde")}),
        _f("reverse_words", "(s: str) -> str", "Return s with the order of its space-separated words reversed (single spaces).",
           "return ' '.join(reversed(s.split()))", lambda r, p: [_sentence(r)]),
        _f("capitalize_words", "(s: str) -> str", "Return s with the first letter of every space-separated word upper-cased.",
           "return ' '.join(w[:1].upper() + w[1:] for w in s.split(' '))", lambda r, p: [_sentence(r)]),
        _f("is_palindrome", "(s: str) -> bool", "Return True if s reads the same forwards and backwards.",
           "return s == s[::-1]", lambda r, p: [r.choice([_word(r, 0, 5, "ab"), (lambda w: w + w[::-1])(_word(r, 0, 4, "abc"))])]),
        _f("count_vowels", "(s: str) -> int", "Return the number of vowels (a, e, i, o, u, either case) in s.",
           "return sum(ch in 'aeiouAEIOU' for ch in s)", lambda r, p: [_word(r, 0, 12, "aAbeEiouxyz")]),
        _f("remove_char", "(s: str) -> str", "Return s with every {c!r} removed.",
           "return s.replace({c!r}, '')", lambda r, p: [_word(r, 0, 12, "abcd")], lambda r: {"c": r.choice("abcd")}),
        _f("repeat_chars", "(s: str) -> str", "Return s with every character repeated {k} times.",
           "return ''.join(ch * {k} for ch in s)", lambda r, p: [_word(r, 0, 6)], lambda r: {"k": r.randint(2, 4)}),
        _f("longest_word", "(s: str) -> str", "Return the longest space-separated word in s (the first one on ties; '' if none).",
           "return max(s.split(), key=len, default='')", lambda r, p: [_sentence(r)]),
        _f("caesar", "(s: str) -> str", "Shift every lowercase letter in s forward by {k} places in the alphabet, wrapping around; leave other characters alone.",
           "return ''.join(chr((ord(c) - 97 + {k}) % 26 + 97) if 'a' <= c <= 'z' else c for c in s)",
           lambda r, p: [_word(r, 0, 10, "abxyz -!")], lambda r: {"k": r.randint(1, 25)}),
        _f("run_length", "(s: str) -> str", "Run-length encode s: each run of a repeated character becomes the character followed by the run length, e.g. 'aaab' -> 'a3b1'.",
           "out = ''\n    i = 0\n    while i < len(s):\n        j = i\n        while j < len(s) and s[j] == s[i]:\n            j += 1\n        out += s[i] + str(j - i)\n        i = j\n    return out",
           lambda r, p: [_word(r, 0, 10, "aab")]),
        _f("char_histogram", "(s: str) -> dict", "Return a dict mapping each character of s to how many times it occurs.",
           "counts = {{}}\n    for ch in s:\n        counts[ch] = counts.get(ch, 0) + 1\n    return counts", lambda r, p: [_word(r, 0, 10, "abc")]),
        _f("swap_case", "(s: str) -> str", "Return s with upper-case letters made lower-case and lower-case letters made upper-case.",
           "return s.swapcase()", lambda r, p: [_word(r, 0, 10, "aBcDeF1 ")]),
        _f("first_repeated", "(s: str) -> str", "Return the first character of s that appeared earlier in s, or '' if there is none.",
           "seen = set()\n    for ch in s:\n        if ch in seen:\n            return ch\n        seen.add(ch)\n    return ''", lambda r, p: [_word(r, 0, 8, "abcdefg")]),
        _f("is_anagram", "(a: str, b: str) -> bool", "Return True if a and b contain the same characters the same number of times.",
           "return sorted(a) == sorted(b)", lambda r, p: (lambda w: [w, r.choice(["".join(r.sample(w, len(w))), _word(r, 0, 6, "abc")])])(_word(r, 0, 6, "abc"))),
        _f("pad_left", "(s: str) -> str", "Return s padded on the left with {c!r} to length {n} (unchanged if it is already at least that long).",
           "return s.rjust({n}, {c!r})", lambda r, p: [_word(r, 0, 9)], lambda r: {"n": r.randint(3, 8), "c": r.choice("0*.")}),
    ),
    lists=(
        _f("sum_above", "(xs: list) -> int", "Return the sum of the numbers in xs that are greater than {k}.",
           "return sum(x for x in xs if x > {k})", lambda r, p: [_ints(r)], lambda r: {"k": r.randint(-5, 5)}),
        _f("count_multiples", "(xs: list) -> int", "Return how many numbers in xs are divisible by {k}.",
           "return sum(1 for x in xs if x % {k} == 0)", lambda r, p: [_ints(r)], lambda r: {"k": r.randint(2, 6)}),
        _f("second_largest", "(xs: list) -> int", "Return the second largest distinct number in xs, or None if there are fewer than two distinct numbers.",
           "d = sorted(set(xs))\n    return d[-2] if len(d) >= 2 else None", lambda r, p: [_ints(r, 0, 6, -5, 5)]),
        _f("running_sum", "(xs: list) -> list", "Return the list of running totals of xs.",
           "out, t = [], 0\n    for x in xs:\n        t += x\n        out.append(t)\n    return out", lambda r, p: [_ints(r)]),
        _f("dedupe", "(xs: list) -> list", "Return xs without repeated elements, keeping the first occurrence of each, in order.",
           "out = []\n    for x in xs:\n        if x not in out:\n            out.append(x)\n    return out", lambda r, p: [_ints(r, 0, 10, 0, 5)]),
        _f("rotate", "(xs: list) -> list", "Return xs rotated {k} places to the right (the last element moves to the front).",
           "if not xs:\n        return []\n    k = {k} % len(xs)\n    return xs[-k:] + xs[:-k] if k else list(xs)", lambda r, p: [_ints(r)], lambda r: {"k": r.randint(1, 5)}),
        _f("chunk", "(xs: list) -> list", "Split xs into consecutive lists of {k} elements (the last may be shorter).",
           "return [xs[i:i + {k}] for i in range(0, len(xs), {k})]", lambda r, p: [_ints(r)], lambda r: {"k": r.randint(2, 4)}),
        _f("interleave", "(a: list, b: list) -> list", "Return the elements of a and b alternately (a first); the rest of the longer list goes at the end.",
           "out = []\n    for i in range(max(len(a), len(b))):\n        if i < len(a):\n            out.append(a[i])\n        if i < len(b):\n            out.append(b[i])\n    return out",
           lambda r, p: [_ints(r, 0, 5), _ints(r, 0, 5)]),
        _f("max_gap", "(xs: list) -> int", "Return the largest difference between two neighbouring elements of sorted(xs), or 0 for fewer than two elements.",
           "s = sorted(xs)\n    return max((b - a for a, b in zip(s, s[1:])), default=0)", lambda r, p: [_ints(r)]),
        _f("evens_then_odds", "(xs: list) -> list", "Return the even numbers of xs followed by the odd ones, each group in its original order.",
           "return [x for x in xs if x % 2 == 0] + [x for x in xs if x % 2]", lambda r, p: [_ints(r)]),
        _f("clip", "(xs: list) -> list", "Return xs with every number below {lo} raised to {lo} and every number above {hi} lowered to {hi}.",
           "return [min(max(x, {lo}), {hi}) for x in xs]", lambda r, p: [_ints(r)], lambda r: (lambda lo: {"lo": lo, "hi": lo + r.randint(2, 15)})(r.randint(-10, 0))),
        _f("pairwise_sums", "(xs: list) -> list", "Return the sums of each pair of neighbouring elements of xs.",
           "return [a + b for a, b in zip(xs, xs[1:])]", lambda r, p: [_ints(r)]),
        _f("index_of_max", "(xs: list) -> int", "Return the index of the largest number in xs (the first on ties), or -1 if xs is empty.",
           "return xs.index(max(xs)) if xs else -1", lambda r, p: [_ints(r, 0, 8, 0, 9)]),
        _f("flatten_once", "(xss: list) -> list", "Flatten one level: return the elements of the inner lists of xss in order.",
           "return [x for xs in xss for x in xs]", lambda r, p: [[_ints(r, 0, 3) for _ in range(r.randint(0, 4))]]),
        _f("longest_increasing_run", "(xs: list) -> int", "Return the length of the longest run of strictly increasing consecutive elements of xs (0 for an empty list).",
           "best = cur = 0\n    for i, x in enumerate(xs):\n        cur = cur + 1 if i and x > xs[i - 1] else 1\n        best = max(best, cur)\n    return best",
           lambda r, p: [_ints(r, 0, 10, 0, 9)]),
    ),
    numbers=(
        _f("digit_sum", "(n: int) -> int", "Return the sum of the decimal digits of abs(n).",
           "return sum(int(d) for d in str(abs(n)))", lambda r, p: [r.randint(-10**6, 10**6)]),
        _f("is_prime", "(n: int) -> bool", "Return True if n is a prime number.",
           "if n < 2:\n        return False\n    i = 2\n    while i * i <= n:\n        if n % i == 0:\n            return False\n        i += 1\n    return True",
           lambda r, p: [r.randint(-3, 120)]),
        _f("gcd", "(a: int, b: int) -> int", "Return the greatest common divisor of a and b (non-negative; gcd(0, 0) is 0).",
           "a, b = abs(a), abs(b)\n    while b:\n        a, b = b, a % b\n    return a", lambda r, p: [r.randint(-60, 60), r.randint(-60, 60)]),
        _f("collatz_steps", "(n: int) -> int", "Return how many steps the Collatz process (n -> n/2 if even, else 3n+1) takes to reach 1 from n >= 1.",
           "steps = 0\n    while n != 1:\n        n = n // 2 if n % 2 == 0 else 3 * n + 1\n        steps += 1\n    return steps", lambda r, p: [r.randint(1, 200)]),
        _f("to_base", "(n: int) -> str", "Return the non-negative integer n written in base {b} (digits 0-9).",
           "if n == 0:\n        return '0'\n    out = ''\n    while n:\n        out = str(n % {b}) + out\n        n //= {b}\n    return out", lambda r, p: [r.randint(0, 500)], lambda r: {"b": r.randint(2, 9)}),
        _f("count_divisors", "(n: int) -> int", "Return how many positive divisors the positive integer n has.",
           "return sum(1 for d in range(1, n + 1) if n % d == 0)", lambda r, p: [r.randint(1, 300)]),
        _f("fizzbuzz_word", "(n: int) -> str", "Return 'Fizz' if n is divisible by {a}, 'Buzz' if by {b}, 'FizzBuzz' if by both, else str(n).",
           "if n % {a} == 0 and n % {b} == 0:\n        return 'FizzBuzz'\n    if n % {a} == 0:\n        return 'Fizz'\n    if n % {b} == 0:\n        return 'Buzz'\n    return str(n)",
           lambda r, p: [r.randint(1, 60)], lambda r: (lambda a: {"a": a, "b": r.choice([x for x in range(2, 8) if x != a])})(r.randint(2, 7))),
        _f("reverse_number", "(n: int) -> int", "Return n with its decimal digits reversed, keeping the sign (e.g. -120 -> -21).",
           "sign = -1 if n < 0 else 1\n    return sign * int(str(abs(n))[::-1])", lambda r, p: [r.randint(-10**5, 10**5)]),
        _f("round_to_multiple", "(x: int) -> int", "Return the multiple of {k} nearest to x (the larger one on ties).",
           "return (x + {k} // 2) // {k} * {k} if {k} % 2 else ((x * 2 + {k}) // (2 * {k})) * {k}", lambda r, p: [r.randint(-100, 100)], lambda r: {"k": r.randint(2, 10)}),
        _f("triangle_number", "(n: int) -> int", "Return the sum 1 + 2 + ... + n for n >= 0.",
           "return n * (n + 1) // 2", lambda r, p: [r.randint(0, 1000)]),
    ),
    dicts=(
        _f("invert_dict", "(d: dict) -> dict", "Return a dict mapping each value of d to the sorted list of keys that have it.",
           "out = {{}}\n    for k, v in d.items():\n        out.setdefault(v, []).append(k)\n    return {{v: sorted(ks) for v, ks in out.items()}}",
           lambda r, p: [{_word(r, 1, 3): r.randint(0, 3) for _ in range(r.randint(0, 5))}]),
        _f("merge_sum", "(a: dict, b: dict) -> dict", "Merge two dicts of numbers: a key in both maps to the sum of its two values.",
           "out = dict(a)\n    for k, v in b.items():\n        out[k] = out.get(k, 0) + v\n    return out",
           lambda r, p: [{r.choice("abcde"): r.randint(-5, 5) for _ in range(r.randint(0, 4))} for _ in range(2)]),
        _f("key_of_max", "(d: dict) -> str", "Return the key with the largest value (the smallest such key on ties), or None if d is empty.",
           "if not d:\n        return None\n    m = max(d.values())\n    return min(k for k, v in d.items() if v == m)",
           lambda r, p: [{r.choice("abcdef"): r.randint(0, 4) for _ in range(r.randint(0, 5))}]),
        _f("filter_dict", "(d: dict) -> dict", "Return the items of d whose value is at least {k}.",
           "return {{k: v for k, v in d.items() if v >= {k}}}", lambda r, p: [{r.choice("abcdef"): r.randint(0, 9) for _ in range(r.randint(0, 6))}],
           lambda r: {"k": r.randint(1, 8)}),
        _f("group_by_length", "(words: list) -> dict", "Return a dict mapping each word length to the list of words of that length, in their original order.",
           "out = {{}}\n    for w in words:\n        out.setdefault(len(w), []).append(w)\n    return out", lambda r, p: [[_word(r, 1, 5) for _ in range(r.randint(0, 6))]]),
        _f("group_by_first_letter", "(words: list) -> dict", "Return a dict mapping each first letter to the list of words that start with it, in their original order (empty strings are left out).",
           "out = {{}}\n    for w in words:\n        if w:\n            out.setdefault(w[0], []).append(w)\n    return out",
           lambda r, p: [[_word(r, 0, 4, "abc") for _ in range(r.randint(0, 6))]]),
        _f("group_anagrams", "(words: list) -> list", "Group the words that are anagrams of each other: return a list of groups, each a list of words in their original order, the groups in the order of their first word.",
           "groups = {{}}\n    for w in words:\n        groups.setdefault(''.join(sorted(w)), []).append(w)\n    return list(groups.values())",
           lambda r, p: [_anagram_words(r)]),
    ),
    parsing=(
        _f("parse_csv_sum", "(line: str) -> int", "line holds integers separated by {sep!r}; return their sum (0 for an empty line).",
           "return sum(int(x) for x in line.split({sep!r}) if x.strip())",
           lambda r, p: [p["sep"].join(str(x) for x in _ints(r))], lambda r: {"sep": r.choice([",", ";", "|"])}),
        _f("parse_key_values", "(text: str) -> dict", "text holds 'key=value' pairs separated by '&'; return them as a dict of strings (later keys win).",
           "out = {{}}\n    for part in text.split('&'):\n        if '=' in part:\n            k, v = part.split('=', 1)\n            out[k] = v\n    return out",
           lambda r, p: ["&".join(f"{_word(r, 1, 3)}={_word(r, 0, 3)}" for _ in range(r.randint(0, 4)))]),
        _f("count_words", "(text: str) -> int", "Return the number of words in text, where words are runs of letters (anything else separates them).",
           "import re\n    return len(re.findall('[A-Za-z]+', text))", lambda r, p: [_word(r, 0, 20, "ab c,.!1")]),
        _f("extract_numbers", "(text: str) -> list", "Return the non-negative integers written in text, in order, as ints.",
           "import re\n    return [int(x) for x in re.findall('[0-9]+', text)]", lambda r, p: [_word(r, 0, 16, "ab 0123456789-")]),
        _f("balanced_brackets", "(s: str) -> bool", "Return True if the brackets (), [] and {{}} in s are balanced and properly nested.",
           "pairs = {{')': '(', ']': '[', '}}': '{{'}}\n    stack = []\n    for ch in s:\n        if ch in '([{{':\n            stack.append(ch)\n        elif ch in pairs:\n            if not stack or stack.pop() != pairs[ch]:\n                return False\n    return not stack",
           lambda r, p: [_word(r, 0, 8, "()[]{}")]),
        _f("time_to_minutes", "(t: str) -> int", "t is a time 'HH:MM' (24-hour); return the minutes since midnight.",
           "h, m = t.split(':')\n    return int(h) * 60 + int(m)", lambda r, p: [f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}"]),
        _f("roman_to_int", "(s: str) -> int", "Convert a Roman numeral (I, V, X, L, C, D, M, subtractive notation) to an integer.",
           "vals = {{'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}}\n    total = 0\n    for i, ch in enumerate(s):\n        v = vals[ch]\n        total += -v if i + 1 < len(s) and vals[s[i + 1]] > v else v\n    return total",
           lambda r, p: [_roman(r.randint(1, 3999))]),
        _f("parse_duration", "(s: str) -> int", "s is a duration such as '1h30m', '45s' or '2h5s': hours (h), minutes (m) and seconds (s), each part optional but in that order. Return the total number of seconds.",
           "import re\n    h, m, sec = re.fullmatch('(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?', s).groups()\n    return int(h or 0) * 3600 + int(m or 0) * 60 + int(sec or 0)",
           lambda r, p: [_duration(r)]),
        _f("parse_ranges", "(s: str) -> list", "s lists numbers and ranges separated by commas, such as '1-3,5,8-9'. Return every number it names, in order (a range a-b includes both ends; '' names none).",
           "out = []\n    for part in s.split(','):\n        if '-' in part:\n            a, b = part.split('-')\n            out += range(int(a), int(b) + 1)\n        elif part:\n            out.append(int(part))\n    return out",
           lambda r, p: [_ranges(r)]),
        _f("snake_to_camel", "(s: str) -> str", "Convert a snake_case name to camelCase: drop each underscore and upper-case the letter after it; the first word stays as it is.",
           "first, *rest = s.split('_')\n    return first + ''.join(w[:1].upper() + w[1:] for w in rest)",
           lambda r, p: ["_".join(_word(r, 1, 5) for _ in range(r.randint(1, 4)))]),
    ),
    recursion=(
        _f("flatten_deep", "(xs: list) -> list", "Flatten xs, nested to any depth: return every element that is not a list, in order.",
           "out = []\n    for x in xs:\n        out += flatten_deep(x) if isinstance(x, list) else [x]\n    return out",
           lambda r, p: [_nested(r)]),
        _f("nesting_depth", "(xs: list) -> int", "Return how deeply xs is nested: 1 for a list with no lists in it (an empty one too), else 1 + the depth of its deepest inner list.",
           "return 1 + max((nesting_depth(x) for x in xs if isinstance(x, list)), default=0)", lambda r, p: [_nested(r)]),
        _f("sum_nested", "(xs: list) -> int", "xs holds numbers and lists like itself, nested to any depth; return the sum of every number in it.",
           "return sum(sum_nested(x) if isinstance(x, list) else x for x in xs)", lambda r, p: [_nested(r)]),
        _f("count_subset_sums", "(xs: list) -> int", "Return how many subsets of the elements of xs (chosen by position, the empty subset included) sum to {k}.",
           "def go(i, left):\n        if i == len(xs):\n            return int(left == 0)\n        return go(i + 1, left) + go(i + 1, left - xs[i])\n    return go(0, {k})",
           lambda r, p: [_ints(r, 0, 8, -3, 6)], lambda r: {"k": r.randint(0, 8)}),
    ),
    grids=(
        _f("transpose", "(m: list) -> list", "m is a matrix: a list of rows of equal length. Return its transpose (row i of the result is column i of m); [] for an empty matrix.",
           "return [list(col) for col in zip(*m)]", lambda r, p: [_grid(r, range(-5, 10))]),
        _f("diagonals_sum", "(m: list) -> int", "m is a square matrix (n rows of n numbers). Return the sum of its main diagonal and its anti-diagonal, counting the centre element of an odd-sized matrix once.",
           "n = len(m)\n    return sum(m[i][i] + m[i][n - 1 - i] for i in range(n)) - (m[n // 2][n // 2] if n % 2 else 0)",
           lambda r, p: (lambda n: [[[r.randint(-5, 9) for _ in range(n)] for _ in range(n)]])(r.randint(0, 5))),
        _f("count_islands", "(grid: list) -> int", "grid is a list of rows of 0s and 1s. Return the number of islands: groups of 1s joined up, down, left or right.",
           "seen = set()\n    def fill(i, j):\n        if not (0 <= i < len(grid) and 0 <= j < len(grid[i])) or grid[i][j] != 1 or (i, j) in seen:\n            return\n        seen.add((i, j))\n        for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):\n            fill(i + di, j + dj)\n    count = 0\n    for i in range(len(grid)):\n        for j in range(len(grid[i])):\n            if grid[i][j] == 1 and (i, j) not in seen:\n                fill(i, j)\n                count += 1\n    return count",
           lambda r, p: [_grid(r, (0, 1))]),
    ),
)


def _roman(n: int) -> str:
    out = ""
    for v, s in ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"),
                 (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")):
        while n >= v:
            out, n = out + s, n - v
    return out


def _indent_doc(doc: str) -> str:
    return "\n".join(("    " + line) if line else "" for line in doc.splitlines())


def build(family: Family, rng: random.Random) -> CodeTask:
    """One task of `family`: prompt with three examples, ten hidden cases."""
    p = family.params(rng)
    fn = family.name
    solution = f"def {fn}{family.signature}:\n    " + family.solution.format(**p) + "\n"
    ns: dict[str, Any] = {}
    exec(compile(solution, f"<{fn}>", "exec"), ns)  # our own reference code, not model output
    ref = ns[fn]
    seen, cases = set(), []
    for _ in range(200):
        args = family.args(rng, p)
        key = repr(args)
        if key in seen:
            continue
        seen.add(key)
        cases.append({"args": args, "expected": ref(*[_copy(a) for a in args])})
        if len(cases) == N_VISIBLE + N_HIDDEN:
            break
    visible, hidden = cases[:N_VISIBLE], cases[N_VISIBLE:]
    examples = "".join(f"\n>>> {fn}({', '.join(repr(a) for a in c['args'])})\n{c['expected']!r}" for c in visible)
    doc = family.doc.format(**p) + examples
    prompt = f"def {fn}{family.signature}:\n" + f'    """{_indent_doc(doc).lstrip()}\n    """\n'
    return CodeTask(id=f"{fn}", prompt=prompt, entry_point=fn, cases=tuple(hidden), reference=solution,
                    metadata={"family": family.name, "visible": visible, "params": p})


N_STRONG = 30
"""Inputs of the stronger check (held-back verification): new ones, drawn apart from the task's."""


def strong_cases(code: CodeTask) -> list[dict]:
    """N_STRONG more cases of the task's family and parameters, none of them the visible or
    hidden ones, expected outputs from the reference: a check that answers tuned to the
    task's own tests do not pass."""
    family = _BY_NAME[code.metadata["family"]]
    ns: dict[str, Any] = {}
    exec(compile(code.reference, f"<{code.entry_point}>", "exec"), ns)  # our own reference code
    ref = ns[code.entry_point]
    rng = random.Random(f"strong|{code.prompt}")
    seen = {repr(c["args"]) for c in (*code.metadata["visible"], *(code.cases or ()))}
    cases = []
    for _ in range(20 * N_STRONG):
        args = family.args(rng, code.metadata["params"])
        if repr(args) in seen:
            continue
        seen.add(repr(args))
        cases.append({"args": args, "expected": ref(*[_copy(a) for a in args])})
        if len(cases) == N_STRONG:
            break
    return cases


def _copy(v):
    import copy

    return copy.deepcopy(v)


UNSEEN_FAMILIES = ("caesar", "longest_word", "rotate", "longest_increasing_run", "to_base", "collatz_steps",
                   "invert_dict", "roman_to_int", "parse_ranges", "nesting_depth", "transpose")
"""Families only the unseen split draws, in both code envs: one or two of each kind, each
beside trained families of its kind, so `unseen` asks for the skill on a function never
trained on, not for a topic never seen."""
FAMILY_NAMES = tuple(f.name for f in FAMILIES if f.name not in UNSEEN_FAMILIES)
"""The families train and test draw."""
_BY_NAME = {f.name: f for f in FAMILIES}


def family_generators(by_name: dict, trained: tuple[str, ...], unseen: tuple[str, ...], make, instruction: str):
    """(generate, generate_unseen) for a code env made of families: each draws `family`, or one
    of its pool the rng picks, builds it with `make(family, rng)` and asks for it in `instruction`."""

    def draw(rng: random.Random, family: str | None, pool: tuple[str, ...]) -> Task:
        fam = by_name[family or rng.choice(pool)]
        code = make(fam, rng)
        return Task(id=code.id, domain="code", prompt=(Message("user", instruction.format(prompt=code.prompt)),),
                    reference=code, metadata={"family": fam.name, "kind": fam.kind, "entry_point": code.entry_point})

    return (lambda rng, family: draw(rng, family, trained)), (lambda rng, family: draw(rng, family, unseen))


generate, generate_unseen = family_generators(_BY_NAME, FAMILY_NAMES, UNSEEN_FAMILIES, build, INSTRUCTION)
"""A task of `family`, or of a trained (held-out, for the unseen split) family the rng picks."""
