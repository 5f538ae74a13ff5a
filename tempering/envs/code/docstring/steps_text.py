"""`code/steps-v1` families over text with rules: formatting, small formats to parse, and
word-by-word rewrites, each a loop with branches rather than one library call."""

from __future__ import annotations

import random

from .family import fam, mixed_case, word


def _amount(r: random.Random) -> list[int]:
    digits = r.randint(1, 9)
    n = r.randint(10 ** (digits - 1) if digits > 1 else 0, 10 ** digits - 1)
    return [-n if r.random() < 0.25 else n]


def _settings(r: random.Random, p: dict) -> list[str]:
    parts = []
    for _ in range(r.randint(0, 5)):
        key, roll = r.choice(("mode", "size", "debug", "user")), r.random()
        if roll < 0.4:
            parts.append(f"{key}{p['eq']}{r.randint(0, 99)}")
        elif roll < 0.65:
            parts.append(f"{key}{p['eq']}{r.choice(('on', 'off', 'fast'))}")
        elif roll < 0.8:
            parts.append(f" {key} {p['eq']} {r.randint(0, 9)} ")
        else:
            parts.append(r.choice(("junk", "", f"{p['eq']}x", f"{key}{p['eq']}")))
    return [p["sep"].join(parts)]


def _formula(r: random.Random) -> list[str]:
    tokens = [r.choice(("+", "-", "*", "/", "(", ")", str(r.randint(0, 120)), str(r.randint(0, 9))))
              for _ in range(r.randint(0, 7))]
    return ["".join(t + r.choice(("", "", " ")) for t in tokens)]


def _title(r: random.Random) -> list[str]:
    pool = ("the", "a", "of", "and", "in", "on", "to", "an", "war", "sea", "old", "man", "peace", "night", "garden")
    return [" ".join(mixed_case(r, r.choice(pool)) for _ in range(r.randint(0, 6)))]


PIG_WORDS = ("string", "apple", "glove", "egg", "rhythm", "chair", "under", "sky", "tree", "oak", "smile", "it",
             "quiet", "psst")


def _duration(r: random.Random) -> list[str]:
    return ["".join(f"{r.randint(0, 59)}{r.choice('dhms')}" for _ in range(r.randint(0, 4)))]


TEXT_RULES = (
    fam("group_thousands", "group_thousands with_separators format_grouped", ("n number amount: int",), "str",
        ("Write the integer {a} in decimal with its digits grouped in threes from the right, the groups "
         "separated by {sep!r}. A negative number keeps its minus sign in front of the first group, and a "
         "number of three digits or fewer has no separator.",
         "Return the decimal digits of {a} as a string, inserting {sep!r} between every group of three digits "
         "counted from the right-hand end (so the leftmost group may have one, two or three digits). Put '-' in "
         "front when {a} is negative."),
        "digits = str(abs({a}))\n    groups = []\n    while len(digits) > 3:\n        groups.insert(0, digits[-3:])\n"
        "        digits = digits[:-3]\n    groups.insert(0, digits)\n    sign = \"-\" if {a} < 0 else \"\"\n"
        "    return sign + {sep!r}.join(groups)",
        lambda r, p: _amount(r), lambda r: {"sep": r.choice((",", ".", " ", "_"))}),
    fam("parse_settings", "parse_settings read_options settings_from_text", ("text line spec: str",), "dict",
        ("Parse {a}, a list of settings separated by {sep!r}, each written as key{eq}value, and return them as "
         "a dict. Spaces around keys and values are removed. A part without {eq!r}, or with an empty key, is "
         "skipped. A key given twice keeps its last value. A value made only of digits becomes an int; any "
         "other value, even an empty one, stays a string.",
         "Split {a} on {sep!r} into parts. For each part that contains {eq!r}, the text before the first {eq!r} "
         "is the key and the text after it the value, both stripped of surrounding spaces; skip the part if the "
         "key is empty. Store key -> value in a dict (later parts overwrite earlier ones), turning values that "
         "consist only of digits into ints. Return the dict."),
        "settings = {{}}\n    for part in {a}.split({sep!r}):\n        if {eq!r} not in part:\n            continue\n"
        "        key, value = part.split({eq!r}, 1)\n        key, value = key.strip(), value.strip()\n"
        "        if key:\n            settings[key] = int(value) if value.isdigit() else value\n    return settings",
        _settings, lambda r: {"sep": r.choice((";", ",", "&")), "eq": r.choice(("=", ":"))}),
    fam("split_tokens", "split_tokens tokenize_formula lex_expression", ("formula expression source: str",),
        "List[str]",
        ("Split {a}, an arithmetic expression, into tokens and return them as a list of strings. A token is "
         "either a whole run of consecutive digits (a number) or one of the characters + - * / ( ). Spaces "
         "separate tokens but are not tokens themselves.",
         "Read {a} character by character. Digits that follow each other form one number token; each of + - * "
         "/ ( ) is a token on its own; a space ends the current number and is dropped. Return the tokens, in "
         "order, as strings."),
        "tokens, number = [], \"\"\n    for ch in {a} + \" \":\n        if ch.isdigit():\n            number += ch\n"
        "            continue\n        if number:\n            tokens.append(number)\n            number = \"\"\n"
        "        if ch != \" \":\n            tokens.append(ch)\n    return tokens",
        lambda r, p: _formula(r)),
    fam("headline_case", "headline_case title_with_small_words format_title", ("title heading phrase: str",),
        "str",
        ("Capitalise {a} as a title, by these rules. Every word is written with its first letter in upper case "
         "and the rest in lower case, except the short words a, an, and, in, of, on, the and to, which are "
         "written all in lower case unless they are the first or the last word. Words are separated by single "
         "spaces.",
         "Return {a} in headline style: words are split on spaces and joined again with single spaces; a word "
         "that is one of a, an, and, in, of, on, the, to (in any case) and is neither the first nor the last "
         "word becomes all lower case, and every other word gets an upper-case first letter followed by lower "
         "case."),
        "small = (\"a\", \"an\", \"and\", \"in\", \"of\", \"on\", \"the\", \"to\")\n    parts = {a}.split()\n"
        "    out = []\n    for i, part in enumerate(parts):\n"
        "        if part.lower() in small and 0 < i < len(parts) - 1:\n            out.append(part.lower())\n"
        "        else:\n            out.append(part[:1].upper() + part[1:].lower())\n    return \" \".join(out)",
        lambda r, p: _title(r)),
    fam("pig_latin", "pig_latin to_pig_latin piglatinize", ("sentence text phrase: str",), "str",
        ("Translate each word of {a} (lower-case words separated by single spaces) into Pig Latin and return "
         "them joined by single spaces. A word that starts with a vowel (a, e, i, o or u) gets '{vowel_suffix}' "
         "added. Otherwise the consonants before its first vowel move to the end of the word, followed by "
         "'{suffix}'; a word with no vowel at all just gets '{suffix}' added.",
         "Rewrite every word of {a}: find its first vowel (a, e, i, o, u). If that is the first letter, append "
         "'{vowel_suffix}'. If not, move the letters before it to the end and append '{suffix}'; if the word has "
         "no vowel, append '{suffix}' to it unchanged. Return the rewritten words separated by single spaces."),
        "out = []\n    for w in {a}.split():\n        i = 0\n        while i < len(w) and w[i] not in \"aeiou\":\n"
        "            i += 1\n        out.append(w + \"{vowel_suffix}\" if i == 0 else w[i:] + w[:i] + \"{suffix}\")\n"
        "    return \" \".join(out)",
        lambda r, p: [" ".join(r.choice(PIG_WORDS) for _ in range(r.randint(0, 4)))],
        lambda r: {"suffix": r.choice(("ay", "ey")), "vowel_suffix": r.choice(("way", "yay", "hay"))}),
    fam("duration_seconds", "duration_seconds parse_duration seconds_in_span", ("duration text span: str",), "int",
        ("{a} is a duration such as '1h30m' or '2d5s': numbers, each followed by a unit letter, 'd' (days), "
         "'h' (hours), 'm' (minutes) or 's' (seconds). Units may come in any order and more than once. Return "
         "the total number of seconds; an empty string gives 0.",
         "Convert {a}, a duration, to seconds. It is a sequence of parts, each a whole number written in digits "
         "followed by one of d, h, m or s (worth 86400, 3600, 60 and 1 seconds). Add up the parts, however many "
         "there are and in whatever order, and return the sum."),
        "unit = {{\"d\": 86400, \"h\": 3600, \"m\": 60, \"s\": 1}}\n    total, digits = 0, \"\"\n    for ch in {a}:\n"
        "        if ch.isdigit():\n            digits += ch\n        else:\n"
        "            total += int(digits) * unit[ch]\n            digits = \"\"\n    return total",
        lambda r, p: _duration(r)),
    fam("keypad_digits", "keypad_digits phone_digits letters_to_keys", ("word text name: str",), "str",
        ("Convert {a} to the digits of a phone keypad: a, b and c are 2; d, e, f are 3; g, h, i are 4; j, k, l "
         "are 5; m, n, o are 6; p, q, r, s are 7; t, u, v are 8 and w, x, y, z are 9, upper- and lower-case "
         "letters alike. Every other character is kept as it is.",
         "Replace each letter of {a} by the key that carries it on a phone (2: abc, 3: def, 4: ghi, 5: jkl, "
         "6: mno, 7: pqrs, 8: tuv, 9: wxyz), ignoring case, and leave digits, dashes and all other characters "
         "unchanged. Return the result."),
        "keys = (\"abc\", \"def\", \"ghi\", \"jkl\", \"mno\", \"pqrs\", \"tuv\", \"wxyz\")\n    out = \"\"\n"
        "    for ch in {a}:\n        digit = ch\n        for number, letters in enumerate(keys, 2):\n"
        "            if ch.lower() in letters:\n                digit = str(number)\n        out += digit\n"
        "    return out",
        lambda r, p: [mixed_case(r, word(r, 1, 8, "abcdefghijklmnopqrstuvwxyz-1"))]),
)
