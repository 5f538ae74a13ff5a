"""`code/docstring-v1` families over strings: transforms and counting."""

from __future__ import annotations

import random

from .family import every_kth, fam, ints, kinds, mixed_case, sentence, word


def _spaced(r: random.Random) -> str:
    """Words joined by one to three spaces, sometimes with spaces around them."""
    text = "".join(word(r) + " " * r.randint(1, 3) for _ in range(r.randint(0, 4)))
    return mixed_case(r, (" " if r.random() < 0.3 else "") + text.rstrip(" " if r.random() < 0.6 else ""))


def _titled(r: random.Random) -> str:
    return " ".join(w.capitalize() if r.random() < 0.5 else w for w in sentence(r).split())


def _alternate(r: random.Random) -> dict:
    first = r.choice(["upper", "lower"])
    return {"first": first, "other": "lower" if first == "upper" else "upper"}


STRINGS = (
    fam("mask_digits", "mask_digits hide_digits censor_digits", ("s text message: str",), "str",
        ("Return {a} with every digit replaced by {ch!r}.",
         "Given a string {a}, replace each decimal digit in it with {ch!r} and return the result.",
         "Hide the digits of {a}: every character from '0' to '9' becomes {ch!r}; other characters stay as they are."),
        "return ''.join({ch!r} if x.isdigit() else x for x in {a})",
        lambda r, p: [word(r, 0, 10, "ab1 29x-")], lambda r: {"ch": r.choice("*#x?")}),
    fam("keep_letters", "keep_letters only_letters strip_non_letters", ("s text raw: str",), "str",
        ("Return only the letters of {a}, in order, dropping digits, spaces and punctuation.",
         "Remove every character of {a} that is not a letter and return what is left.",
         "Given a string {a}, return a new string made of its alphabetic characters only."),
        "return ''.join(x for x in {a} if x.isalpha())", lambda r, p: [mixed_case(r, word(r, 0, 10, "abc 1,.!9d"))]),
    fam("initials", "initials get_initials make_initials", ("name full_name phrase: str",), "str",
        ("Return the initials of {a}: the first letter of each space-separated word, upper-cased, each followed "
         "by {sep!r}.",
         "Build the initials of the words in {a}. Take the first character of every word, make it upper-case "
         "and put {sep!r} after it.",
         "{fn} takes a string {a} of words separated by spaces and returns their first letters in upper case, "
         "each one followed by {sep!r}."),
        "return ''.join(x[0].upper() + {sep!r} for x in {a}.split())",
        lambda r, p: [sentence(r, 0, 4)], lambda r: {"sep": r.choice(".-_")}),
    fam("collapse_runs", "collapse_runs squeeze_repeats remove_adjacent_repeats", ("s text: str",), "str",
        ("Return {a} with every run of the same character shortened to a single character.",
         "Collapse consecutive repeated characters of {a}, so that 'aaab' becomes 'ab'.",
         "Given a string {a}, drop each character that is equal to the character just before it."),
        "return ''.join(x for i, x in enumerate({a}) if i == 0 or {a}[i - 1] != x)",
        lambda r, p: [word(r, 0, 10, "aab c")]),
    fam("alternate_case", "alternate_case zigzag_case wave_case", ("s text word: str",), "str",
        ("Return {a} with the characters at even positions (0, 2, 4, ...) in {first} case and the others in "
         "{other} case.",
         "Change the case of {a} character by character: {first} case for the first character, {other} case "
         "for the second, {first} for the third, and so on."),
        "return ''.join(x.{first}() if i % 2 == 0 else x.{other}() for i, x in enumerate({a}))",
        lambda r, p: [mixed_case(r, word(r, 0, 9, "abcde xy"))], _alternate),
    fam("shout_long_words", "shout_long_words emphasize_long_words upper_long_words", ("sentence text s: str",), "str",
        ("Return {a} with every word longer than {k} characters written in capital letters; words are "
         "separated by single spaces.",
         "In the sentence {a} (words separated by single spaces), upper-case each word that has more than "
         "{k_w} letters and leave the other words alone."),
        "return ' '.join(x.upper() if len(x) > {k} else x for x in {a}.split(' '))",
        lambda r, p: [sentence(r)], lambda r: {"k": r.randint(3, 6)}),
    fam("truncate_words", "truncate_words shorten_words clip_words", ("text sentence s: str",), "str",
        ("Shorten every space-separated word of {a} to its first {k} characters and return the words joined by "
         "single spaces.",
         "Return the words of {a} cut to at most {k_w} characters each, separated by one space."),
        "return ' '.join(x[:{k}] for x in {a}.split())", lambda r, p: [_spaced(r).lower()],
        lambda r: {"k": r.randint(1, 4)}),
    fam("slugify", "slugify make_slug to_slug", ("title text heading: str",), "str",
        ("Turn {a} into a slug: lower-case it and join its words (runs of non-space characters) with {sep!r}.",
         "Return {a} in lower case with its words separated by {sep!r} instead of spaces. Leading, trailing "
         "and repeated spaces disappear."),
        "return {sep!r}.join({a}.lower().split())", lambda r, p: [_spaced(r)], lambda r: {"sep": r.choice("-_")}),
    fam("rotate_left", "rotate_left shift_left rotate_string", ("s text word: str",), "str",
        ("Rotate {a} to the left by {k} places: the first {k} characters move to the end. The shift wraps "
         "around, so rotating by the length of the string gives it back; an empty string stays empty.",
         "Move the first {k_w} characters of {a} to its end, wrapping around when {a} is shorter than that "
         "(a shift by len({a}) changes nothing)."),
        "if not {a}:\n        return {a}\n    i = {k} % len({a})\n    return {a}[i:] + {a}[:i]",
        lambda r, p: [word(r, 0, 7)], lambda r: {"k": r.randint(1, 4)}),
    fam("every_kth_char", "every_kth_char sample_chars skip_chars", ("s text: str",), "str",
        ("Return the characters of {a} at positions 0, {k}, {k2}, ... (every {kth} character, starting with "
         "the first).",
         "Keep the first character of {a} and then every {kth} character after it; return them as a string."),
        "return {a}[::{k}]", lambda r, p: [word(r, 0, 12)], every_kth),
    fam("mirror", "mirror mirrored reflect", ("s text word: str",), "str",
        ("Return {a} followed by {a} reversed, so that the result reads the same in both directions.",
         "Append the reverse of {a} to {a} and return the result."),
        "return {a} + {a}[::-1]", lambda r, p: [word(r, 0, 6)]),
)

COUNTING = (
    fam("count_long_words", "count_long_words long_word_count num_long_words", ("text sentence s: str",), "int",
        ("Return how many space-separated words in {a} have at least {k} characters.",
         "Count the words of {a} whose length is {k} or more.",
         "{fn} returns the number of words in {a} with {k_w} or more letters."),
        "return sum(1 for x in {a}.split() if len(x) >= {k})", lambda r, p: [_spaced(r)],
        lambda r: {"k": r.randint(3, 6)}),
    fam("count_doubles", "count_doubles double_count count_repeats", ("s text: str",), "int",
        ("Count the positions where a character of {a} equals the character right after it.",
         "Return how many neighbouring pairs of characters in {a} are the same character."),
        "return sum(1 for i in range(len({a}) - 1) if {a}[i] == {a}[i + 1])", lambda r, p: [word(r, 0, 10, "aabb")]),
    fam("count_capitalized", "count_capitalized capital_words count_title_words", ("text sentence: str",), "int",
        ("Return the number of words in {a} that begin with an upper-case letter.",
         "Count the space-separated words of {a} whose first character is a capital letter."),
        "return sum(1 for x in {a}.split() if x[0].isupper())", lambda r, p: [_titled(r)]),
    fam("count_in_range", "count_in_range count_between in_range_count",
        ("numbers nums values: List[int]",), "int",
        ("Return how many numbers in {a} lie between {lo} and {hi}, both included.",
         "Count the elements x of {a} with {lo} <= x <= {hi}."),
        "return sum(1 for x in {a} if {lo} <= x <= {hi})", lambda r, p: [ints(r)],
        lambda r: (lambda lo: {"lo": lo, "hi": lo + r.randint(1, 8)})(r.randint(-6, 3))),
    fam("count_sign_changes", "count_sign_changes sign_flips count_flips", ("numbers readings values: List[int]",),
        "int",
        ("Count the pairs of neighbouring elements of {a} where one is negative and the other is positive.",
         "Return how many times the sign flips between consecutive numbers of {a}; a pair with a zero in it "
         "is not a flip."),
        "return sum(1 for x, y in zip({a}, {a}[1:]) if x * y < 0)", lambda r, p: [ints(r, 0, 8, -3, 3)]),
    fam("count_peaks", "count_peaks peak_count num_peaks", ("heights values numbers: List[int]",), "int",
        ("Return how many elements of {a} are strictly greater than both of their neighbours. The first and "
         "last elements have only one neighbour and never count.",
         "A peak of {a} is an element with a smaller element on each side. Return the number of peaks."),
        "return sum(1 for i in range(1, len({a}) - 1) if {a}[i - 1] < {a}[i] > {a}[i + 1])",
        lambda r, p: [ints(r, 0, 9, 0, 5)]),
    fam("most_common_char", "most_common_char most_frequent_char top_char", ("s text: str",), "str",
        ("Return the character that occurs most often in {a}; on a tie, the one that occurs first in {a}. "
         "Return '' for an empty string.",
         "Find the most frequent character of {a}. If several are equally frequent, return the earliest of "
         "them; if {a} is empty, return ''."),
        "if not {a}:\n        return ''\n    return max({a}, key={a}.count)", lambda r, p: [word(r, 0, 9, "abcd")]),
    fam("count_words_with", "count_words_with words_containing count_containing", ("text sentence: str",), "int",
        ("Return how many words of {a} contain the letter {ch!r}.",
         "Count the space-separated words in {a} that have at least one {ch!r} in them."),
        "return sum(1 for x in {a}.split() if {ch!r} in x)", lambda r, p: [_spaced(r).lower()],
        lambda r: {"ch": r.choice("aeiost")}),
    fam("count_fixed_points", "count_fixed_points fixed_points count_in_place", ("values numbers perm: List[int]",),
        "int",
        ("Return how many positions i of {a} hold the value i (positions count from 0).",
         "Count the indices i for which {a}[i] == i."),
        "return sum(1 for i, x in enumerate({a}) if x == i)", lambda r, p: [ints(r, 0, 8, 0, 6)]),
)

FAMILIES = kinds(strings=STRINGS, counting=COUNTING)
