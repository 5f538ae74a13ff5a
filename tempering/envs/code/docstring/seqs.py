"""`code/docstring-v1` families over lists: filtering, aggregation, ordering and intervals."""

from __future__ import annotations

import random

from .family import ORDINALS, every_kth, fam, ints, kinds, words

def _kth(r: random.Random) -> dict:
    k = r.randint(1, 3)
    return {"k": k, "k0": k - 1, "nth": ORDINALS[k]}


def _length_order(r: random.Random) -> dict:
    return r.choice([{"sign": "", "order": "shortest to longest"}, {"sign": "-", "order": "longest to shortest"}])


def _intervals(r: random.Random, lo: int = 0, hi: int = 5) -> list[tuple[int, int]]:
    out = []
    for _ in range(r.randint(lo, hi)):
        start = r.randint(0, 15)
        out.append((start, start + r.randint(0, 5)))
    return out


LISTS = (
    fam("sum_every_kth", "sum_every_kth sum_strided stride_sum", ("numbers values nums: List[int]",), "int",
        ("Return the sum of the elements of {a} at positions 0, {k}, {k2}, ... (every {kth} element, starting "
         "with the first).",
         "Add up the first element of {a} and every {kth} element after it."),
        "return sum({a}[::{k}])", lambda r, p: [ints(r, 0, 10)], every_kth),
    fam("product_nonzero", "product_nonzero nonzero_product multiply_nonzero", ("numbers values: List[int]",), "int",
        ("Return the product of the non-zero numbers in {a} (1 if there are none).",
         "Multiply together every element of {a} that is not 0. An empty product is 1."),
        "total = 1\n    for x in {a}:\n        if x != 0:\n            total *= x\n    return total",
        lambda r, p: [ints(r, 0, 6, -4, 5)]),
    fam("drop_multiples", "drop_multiples remove_multiples without_multiples", ("numbers nums values: List[int]",),
        "List[int]",
        ("Return the numbers of {a} that are not divisible by {k}, in their original order.",
         "Remove from {a} every number that is a multiple of {k_w} and return the rest as a new list."),
        "return [x for x in {a} if x % {k} != 0]", lambda r, p: [ints(r, 0, 9, -12, 20)],
        lambda r: {"k": r.randint(2, 5)}),
    fam("square_positives", "square_positives squares_of_positives positive_squares",
        ("numbers values nums: List[int]",), "List[int]",
        ("Return the squares of the positive numbers in {a}, in order.",
         "Keep the numbers of {a} that are greater than zero and return the list of their squares."),
        "return [x * x for x in {a} if x > 0]", lambda r, p: [ints(r)]),
    fam("spread", "spread value_range max_minus_min", ("numbers values readings: List[int]",), "int",
        ("Return the difference between the largest and the smallest number in {a}, or 0 if {a} is empty.",
         "{fn} returns max({a}) - min({a}); for an empty list it returns 0."),
        "return max({a}) - min({a}) if {a} else 0", lambda r, p: [ints(r, 0, 7, -30, 30)]),
    fam("differences", "differences deltas steps_between", ("numbers values series: List[int]",), "List[int]",
        ("Return the list of differences between each element of {a} and the element before it. The result is "
         "one element shorter than {a} (empty for fewer than two elements).",
         "For each i from 1 on, compute {a}[i] - {a}[i - 1]; return these differences as a list."),
        "return [y - x for x, y in zip({a}, {a}[1:])]", lambda r, p: [ints(r)]),
    fam("replace_negatives", "replace_negatives clamp_negatives fix_negatives", ("numbers values: List[int]",),
        "List[int]",
        ("Return a copy of {a} in which every negative number is replaced by {v}.",
         "Replace each element of {a} that is below zero with {v} and return the new list."),
        "return [{v} if x < 0 else x for x in {a}]", lambda r, p: [ints(r)], lambda r: {"v": r.choice([0, -1, 99])}),
    fam("split_on", "split_on split_at_value split_list", ("values numbers items: List[int]",), "List[List[int]]",
        ("Split {a} at every occurrence of {sep}: return the list of the runs of elements between them. The "
         "{sep}s themselves are dropped and runs may be empty, as with str.split.",
         "Cut {a} into pieces wherever the value {sep} appears and return the pieces (without the {sep}s), "
         "keeping empty pieces."),
        "out = [[]]\n    for x in {a}:\n        if x == {sep}:\n            out.append([])\n        else:\n"
        "            out[-1].append(x)\n    return out",
        lambda r, p: [ints(r, 0, 8, 0, 4)], lambda r: {"sep": r.randint(0, 3)}),
    fam("longest_streak", "longest_streak longest_run max_streak", ("values numbers flips: List[int]",), "int",
        ("Return the length of the longest run of equal neighbouring elements in {a} (0 for an empty list).",
         "Find the longest stretch of {a} in which every element equals the one before it, and return its "
         "length; an empty list gives 0."),
        "best = cur = 0\n    for i, x in enumerate({a}):\n        cur = cur + 1 if i and x == {a}[i - 1] else 1\n"
        "        best = max(best, cur)\n    return best",
        lambda r, p: [ints(r, 0, 10, 0, 2)]),
    fam("last_index", "last_index last_position rfind_value", ("values numbers items: List[int]", "target value x: int"),
        "int",
        ("Return the index of the last occurrence of {b} in {a}, or -1 if {b} does not occur.",
         "Search {a} from the end and return the position of {b}; return -1 when {b} is not in {a}."),
        "for i in range(len({a}) - 1, -1, -1):\n        if {a}[i] == {b}:\n            return i\n    return -1",
        lambda r, p: [ints(r, 0, 8, 0, 4), r.randint(0, 4)]),
    fam("above_average", "above_average above_mean greater_than_mean", ("numbers scores values: List[int]",),
        "List[int]",
        ("Return the elements of {a} that are strictly greater than the average of {a}, in their original order.",
         "Compute the mean of {a} and keep only the numbers above it (an empty list gives an empty list)."),
        "return [x for x in {a} if x * len({a}) > sum({a})]", lambda r, p: [ints(r)]),
    fam("elementwise_max", "elementwise_max pairwise_max max_of_pairs",
        ("first xs left: List[int]", "second ys right: List[int]"), "List[int]",
        ("Return a list whose i-th element is the larger of {a}[i] and {b}[i]; stop at the end of the shorter "
         "list.",
         "Walk through {a} and {b} together and keep the bigger number at each position, for as many positions "
         "as the shorter list has."),
        "return [max(x, y) for x, y in zip({a}, {b})]", lambda r, p: [ints(r, 0, 6), ints(r, 0, 6)]),
    fam("window_sums", "window_sums moving_sums sliding_sums", ("numbers values: List[int]",), "List[int]",
        ("Return the sums of every window of {k} consecutive elements of {a}, from left to right (an empty list "
         "if {a} has fewer than {k} elements).",
         "Slide a window of width {k_w} along {a} and return the sum of each window position."),
        "return [sum({a}[i:i + {k}]) for i in range(len({a}) - {k} + 1)]", lambda r, p: [ints(r)],
        lambda r: {"k": r.randint(2, 3)}),
)

ORDERING = (
    fam("sort_by_length", "sort_by_length order_by_length length_sort", ("words names: List[str]",), "List[str]",
        ("Return the words of {a} sorted from {order}; words of the same length keep their original order.",
         "Sort {a} by length, {order}. Equally long words stay in the order they had."),
        "return sorted({a}, key=lambda x: {sign}len(x))", lambda r, p: [words(r)], _length_order),
    fam("sort_by_last_char", "sort_by_last_char sort_by_ending order_by_last_letter", ("words names: List[str]",),
        "List[str]",
        ("Return the (non-empty) strings of {a} sorted by their last character; strings that end in the same "
         "character keep their original order.",
         "Order {a} alphabetically by the final letter of each word, keeping ties in their original order."),
        "return sorted({a}, key=lambda x: x[-1])", lambda r, p: [words(r, 0, 6, "abcdef")]),
    fam("merge_sorted", "merge_sorted merge_lists combine_sorted", ("first xs left: List[int]",
                                                                    "second ys right: List[int]"), "List[int]",
        ("{a} and {b} are each sorted in ascending order. Return one ascending list holding all the elements of "
         "both.",
         "Merge the two ascending lists {a} and {b} into a single ascending list (repeated values are kept)."),
        "return sorted({a} + {b})", lambda r, p: [sorted(ints(r, 0, 5)), sorted(ints(r, 0, 5))]),
    fam("covered_length", "covered_length union_length total_coverage", ("intervals spans segments: "
                                                                         "List[Tuple[int, int]]",), "int",
        ("{a} is a list of intervals (start, end) with start <= end. Return the total length of the number line "
         "they cover, counting overlapping parts once.",
         "Each pair in {a} is an interval from start to end. Return the length of their union."),
        "total, reach = 0, None\n    for lo, hi in sorted({a}):\n        if reach is None or lo > reach:\n"
        "            total += hi - lo\n            reach = hi\n        elif hi > reach:\n"
        "            total += hi - reach\n            reach = hi\n    return total",
        lambda r, p: [_intervals(r)]),
    fam("intervals_overlap", "intervals_overlap overlaps ranges_intersect",
        ("first span_a a: Tuple[int, int]", "second span_b b: Tuple[int, int]"), "bool",
        ("{a} and {b} are closed intervals (start, end) with start <= end. Return True if they share at least "
         "one point, else False.",
         "Return whether the closed intervals {a} and {b} overlap; intervals that only touch at an end do "
         "overlap."),
        "return {a}[0] <= {b}[1] and {b}[0] <= {a}[1]", lambda r, p: _intervals(r, 2, 2)),
    fam("kth_smallest", "kth_smallest nth_smallest select_smallest", ("numbers values: List[int]",), "int",
        ("Return the {nth} smallest number in {a}, counting repeated values separately (that is, sorted({a})"
         "[{k0}]). {a} has at least {k} elements.",
         "Sort a copy of {a} in ascending order and return the element at position {k0}."),
        "return sorted({a})[{k0}]", lambda r, p: [ints(r, p["k"], 8)], _kth),
    fam("rank_elements", "rank_elements dense_rank ranks", ("numbers scores values: List[int]",), "List[int]",
        ("Replace every number of {a} by its rank among the distinct values of {a}: the smallest value has "
         "rank 1, the next larger value rank 2, and so on. Equal numbers share a rank.",
         "Return, for each element of {a}, how many distinct values of {a} are less than or equal to it."),
        "order = sorted(set({a}))\n    return [order.index(x) + 1 for x in {a}]", lambda r, p: [ints(r, 0, 7, 0, 9)]),
    fam("sort_by_abs", "sort_by_abs order_by_magnitude abs_sort", ("numbers values readings: List[int]",),
        "List[int]",
        ("Return the numbers of {a} sorted by absolute value, smallest first; numbers with the same absolute "
         "value keep their original order.",
         "Order {a} by distance from zero. Ties (such as 3 and -3) stay in the order they had in {a}."),
        "return sorted({a}, key=abs)", lambda r, p: [ints(r, 0, 8, -6, 6)]),
    fam("insert_sorted", "insert_sorted insert_in_order sorted_insert",
        ("sorted_values numbers ordered: List[int]", "value new x: int"), "List[int]",
        ("{a} is sorted in ascending order. Return a new sorted list with {b} inserted into it.",
         "Insert {b} into the ascending list {a} at the place that keeps it ascending; return the new list."),
        "return sorted({a} + [{b}])", lambda r, p: [sorted(ints(r, 0, 6)), r.randint(-9, 9)]),
)

FAMILIES = kinds(lists=LISTS, ordering=ORDERING)
