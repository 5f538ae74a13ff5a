"""`code/docstring-v1` families over integers: digits, divisibility and small number theory."""

from __future__ import annotations

import random

from .family import fam, kinds


def _digits(r: random.Random, hi: int = 7, alphabet: str = "0123456789") -> int:
    """A non-negative integer of up to `hi` digits, drawn from `alphabet` so digits repeat."""
    return int("".join(r.choice(alphabet) for _ in range(r.randint(1, hi))))


def _square_ish(r: random.Random) -> int:
    root = r.randint(0, 30)
    return r.choice([root * root, root * root + r.choice([-1, 1, 2]), -root * root - 1])


def _two_moduli(r: random.Random) -> dict:
    p = r.randint(2, 6)
    return {"p": p, "q": r.choice([x for x in range(3, 9) if x != p])}


ARMSTRONG = (0, 1, 5, 9, 153, 370, 371, 407, 1634, 8208, 9474)
"""Numbers equal to the sum of their digits' powers (and a few one-digit ones): the inputs
a random draw would almost never hit."""


NUMBERS = (
    fam("digit_square_sum", "digit_square_sum sum_digit_squares square_digits_total", ("n num number: int",), "int",
        ("Return the sum of the squares of the decimal digits of the non-negative integer {a}.",
         "Square each digit of {a} (a non-negative integer) and add the squares up."),
        "return sum(int(x) ** 2 for x in str({a}))", lambda r, p: [_digits(r, 5)]),
    fam("count_digit", "count_digit digit_occurrences count_digit_in", ("n num value: int",), "int",
        ("Return how many times the digit {d} appears in the decimal form of {a} (the sign is ignored).",
         "Count the {d}s among the digits of abs({a})."),
        "return str(abs({a})).count('{d}')", lambda r, p: [_digits(r, 7, f"{p['d']}{p['d']}0123456789")
                                                         * r.choice([1, -1])],
        lambda r: {"d": r.randint(0, 9)}),
    fam("next_multiple", "next_multiple round_up_to_multiple ceil_multiple", ("n num value: int",), "int",
        ("Return the smallest multiple of {k} that is greater than or equal to {a}.",
         "Round {a} up to the nearest multiple of {k_w} (a multiple of {k} stays as it is)."),
        "return -(-{a} // {k}) * {k}", lambda r, p: [r.randint(-40, 100)], lambda r: {"k": r.randint(3, 12)}),
    fam("lcm", "lcm least_common_multiple lowest_common_multiple", ("a m first: int", "b n second: int"), "int",
        ("Return the least common multiple of the positive integers {a} and {b}.",
         "Return the smallest positive integer that both {a} and {b} divide ({a} and {b} are positive)."),
        "g, h = {a}, {b}\n    while h:\n        g, h = h, g % h\n    return {a} // g * {b}",
        lambda r, p: [r.randint(1, 30), r.randint(1, 30)]),
    fam("alternating_digit_sum", "alternating_digit_sum alternating_sum signed_digit_sum",
        ("n num number: int",), "int",
        ("Return the alternating sum of the digits of the non-negative integer {a}, read from the left: the "
         "first digit minus the second plus the third, and so on.",
         "Add the digits of {a} at even positions (counting from 0 at the left) and subtract the others."),
        "return sum(int(x) if i % 2 == 0 else -int(x) for i, x in enumerate(str({a})))",
        lambda r, p: [_digits(r, 6)]),
    fam("is_perfect_square", "is_perfect_square is_square perfect_square", ("n num value: int",), "bool",
        ("Return True if {a} is the square of an integer, else False. Negative numbers are not squares.",
         "Decide whether some integer k has k * k == {a}."),
        "import math\n    return {a} >= 0 and math.isqrt({a}) ** 2 == {a}", lambda r, p: [_square_ish(r)]),
    fam("sum_multiples_below", "sum_multiples_below multiples_sum sum_of_multiples", ("limit n bound: int",), "int",
        ("Return the sum of all positive integers below {a} that are divisible by {p} or by {q}.",
         "Add up every number from 1 to {a} - 1 that is a multiple of {p} or a multiple of {q} (or both)."),
        "return sum(x for x in range(1, {a}) if x % {p} == 0 or x % {q} == 0)", lambda r, p: [r.randint(0, 60)],
        _two_moduli),
    fam("proper_divisor_sum", "proper_divisor_sum aliquot_sum sum_proper_divisors", ("n num number: int",), "int",
        ("Return the sum of the divisors of the positive integer {a} that are smaller than {a}.",
         "Add up every positive divisor of {a} except {a} itself ({a} >= 1)."),
        "return sum(x for x in range(1, {a}) if {a} % x == 0)", lambda r, p: [r.randint(1, 150)]),
    fam("count_set_bits", "count_set_bits popcount count_ones", ("n num value: int",), "int",
        ("Return how many 1 bits the binary form of the non-negative integer {a} has.",
         "Write {a} (non-negative) in base 2 and count the ones."),
        "return bin({a}).count('1')", lambda r, p: [r.randint(0, 4000)]),
    fam("largest_arrangement", "largest_arrangement max_digit_order biggest_rearrangement",
        ("n num number: int",), "int",
        ("Return the largest number that can be written with exactly the digits of the non-negative integer {a}.",
         "Rearrange the digits of {a} (non-negative) to make the biggest possible number, and return it."),
        "return int(''.join(sorted(str({a}), reverse=True)))", lambda r, p: [_digits(r, 6)]),
    fam("is_armstrong", "is_armstrong is_narcissistic armstrong_number", ("n num number: int",), "bool",
        ("Return True if the non-negative integer {a} equals the sum of its decimal digits, each raised to the "
         "power of the number of digits (as 153 = 1**3 + 5**3 + 3**3), else False.",
         "Let d be the number of digits of {a} (non-negative). Decide whether {a} is the sum of the d-th powers "
         "of its digits."),
        "digits = str({a})\n    return {a} == sum(int(x) ** len(digits) for x in digits)",
        lambda r, p: [r.choice([r.randint(0, 9999), r.choice(ARMSTRONG)])]),
)

FAMILIES = kinds(numbers=NUMBERS)
