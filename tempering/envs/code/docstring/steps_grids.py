"""`code/steps-v1` families over grids (lists of lists) and small simulations (a position, a
level, a score or a circle changed by a list of moves or commands under stated rules)."""

from __future__ import annotations

import random

from .family import every_kth, fam, ints, word


def grid(r: random.Random, rows: tuple[int, int] = (1, 4), cols: tuple[int, int] = (1, 4), hi: int = 9,
         empty: float = 0.0) -> list[list[int]]:
    """A rectangular grid of values 0..hi, a cell 0 with probability `empty` besides."""
    width = r.randint(*cols)
    return [[0 if r.random() < empty else r.randint(0, hi) for _ in range(width)] for _ in range(r.randint(*rows))]


def _ragged(r: random.Random) -> list[list[int]]:
    return [ints(r, 0, 4, -3, 6) for _ in range(r.randint(0, 4))]


def _counter_commands(r: random.Random) -> list[str]:
    return [r.choice(("inc", "inc", "inc", "dec", "double", "double", "reset", "wait")) for _ in range(r.randint(0, 8))]


def _throws(r: random.Random, p: dict) -> list[list[int]]:
    """Throws that, half the time, hit 0 exactly somewhere, a bust or two among them."""
    if r.random() < 0.5:
        return [[r.randint(1, 9) for _ in range(r.randint(0, 8))]]
    out, left = [], p["start"]
    while left > 0:
        if r.random() < 0.2:
            out.append(left + r.randint(1, 3))  # a bust
        step = r.randint(1, min(left, 9))
        out.append(step)
        left -= step
    return [out + [r.randint(1, 9) for _ in range(r.randint(0, 2))]]


def _rally(r: random.Random, p: dict) -> list[str]:
    alphabet = r.choice(("AAB", "ABB", "AB"))
    return ["".join(r.choice(alphabet) for _ in range(r.randint(p["k"] - 1, 12)))]


GRIDS = (
    fam("heaviest_row", "heaviest_row best_row_index max_sum_row", ("grid table matrix: List[List[int]]",), "int",
        ("Return the index of the row of {a} whose numbers add up to the largest total. If several rows tie, "
         "return the smallest of their indices. An empty row sums to 0, and a grid with no rows gives -1.",
         "Sum each row of {a} (rows may have different lengths, an empty one summing to 0) and return the "
         "position of the row with the biggest sum, the first such row on a tie, or -1 when {a} is empty."),
        "best, best_total = -1, None\n    for i, row in enumerate({a}):\n        total = sum(row)\n"
        "        if best_total is None or total > best_total:\n            best, best_total = i, total\n"
        "    return best",
        lambda r, p: [_ragged(r)]),
    fam("column_totals", "column_totals sum_columns totals_by_column", ("grid table matrix: List[List[int]]",),
        "List[int]",
        ("Return the list of column sums of {a}. Rows may have different lengths: the result has one entry per "
         "position of the longest row, and a row too short to reach a column adds nothing to it. A grid with no "
         "rows, or only empty rows, gives [].",
         "Add up {a} column by column: entry j of the result is the sum of row[j] over the rows long enough to "
         "have a position j. The result is as long as the longest row of {a}."),
        "width = max((len(row) for row in {a}), default=0)\n    sums = [0] * width\n    for row in {a}:\n"
        "        for j, x in enumerate(row):\n            sums[j] += x\n    return sums",
        lambda r, p: [_ragged(r)]),
    fam("count_summits", "count_summits grid_peaks count_high_cells", ("heights terrain grid: List[List[int]]",),
        "int",
        ("{a} is a rectangular grid of heights. Count the cells that are strictly higher than each of their "
         "neighbours above, below, to the left and to the right. Cells on the border have fewer neighbours, the "
         "only cell of a 1x1 grid counts, and diagonal cells are not neighbours.",
         "Return how many cells of {a}, a rectangular grid, beat all of their up to four orthogonal neighbours "
         "(the cells directly above, below, left and right that exist). A cell equal to one of its neighbours "
         "does not count."),
        "count = 0\n    for i, row in enumerate({a}):\n        for j, h in enumerate(row):\n"
        "            near = [{a}[i + di][j + dj] for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1))\n"
        "                    if 0 <= i + di < len({a}) and 0 <= j + dj < len(row)]\n"
        "            if all(h > x for x in near):\n                count += 1\n    return count",
        lambda r, p: [grid(r, hi=4)]),
    fam("path_sum", "path_sum walk_total collect_along_path",
        ("grid board cells: List[List[int]]", "moves route directions: str"), "int",
        ("Walk over {a}, a rectangular grid, starting on the top-left cell and following {b}: 'U' moves up one "
         "row, 'D' down one row, 'L' left one column and 'R' right one column. A move that would leave the grid "
         "is skipped. Return the sum of the values of the cells stood on: the starting cell, plus the cell "
         "reached by every move made (a cell counts again each time it is entered).",
         "Start at row 0, column 0 of {a} with a total equal to that cell's value. For each letter of {b} (U, D, "
         "L or R for up, down, left, right), step to the neighbouring cell in that direction and add its value "
         "to the total, unless the step would go off the grid, in which case stay put and add nothing. Return "
         "the total."),
        "steps = {{\"U\": (-1, 0), \"D\": (1, 0), \"L\": (0, -1), \"R\": (0, 1)}}\n    row = col = 0\n"
        "    total = {a}[0][0]\n    for move in {b}:\n        nr, nc = row + steps[move][0], col + steps[move][1]\n"
        "        if 0 <= nr < len({a}) and 0 <= nc < len({a}[0]):\n            row, col = nr, nc\n"
        "            total += {a}[row][col]\n    return total",
        lambda r, p: [grid(r), word(r, 0, 8, "UDLR")]),
    fam("apply_gravity", "apply_gravity settle_columns drop_tiles", ("grid board: List[List[int]]",),
        "List[List[int]]",
        ("{a} is a rectangular grid in which 0 marks an empty cell. Let every non-zero value fall straight down "
         "its column as far as it can, and return the new grid: each column holds its non-zero values at the "
         "bottom, in the same top-to-bottom order as before, with 0s above them. {a} itself is not changed.",
         "Return a copy of {a}, a rectangular grid, in which, column by column, the non-zero values have sunk "
         "to the bottom rows, keeping their order from top to bottom, and the 0s (empty cells) fill the top."),
        "height = len({a})\n    width = len({a}[0]) if {a} else 0\n    out = [[0] * width for _ in range(height)]\n"
        "    for j in range(width):\n        column = [{a}[i][j] for i in range(height) if {a}[i][j] != 0]\n"
        "        for i, value in enumerate(column):\n            out[height - len(column) + i][j] = value\n"
        "    return out",
        lambda r, p: [grid(r, (0, 4), hi=5, empty=0.5)]),
    fam("count_visible", "count_visible visible_trees trees_in_view", ("heights forest grid: List[List[int]]",),
        "int",
        ("{a} is a rectangular grid of tree heights. A tree can be seen from outside the grid when, in at least "
         "one of the four directions along its row or column, every tree between it and the edge is strictly "
         "shorter than it. Trees on the edge can always be seen. Return how many trees can be seen.",
         "Count the cells of {a}, a rectangular grid, that are strictly taller than all the cells to their left, "
         "or all the cells to their right, or all the cells above, or all the cells below them. A cell with no "
         "cells at all on one of these sides (a border cell) always counts."),
        "seen = 0\n    for i, row in enumerate({a}):\n        for j, h in enumerate(row):\n"
        "            column = [line[j] for line in {a}]\n"
        "            sides = (row[:j], row[j + 1:], column[:i], column[i + 1:])\n"
        "            if any(all(x < h for x in side) for side in sides):\n                seen += 1\n    return seen",
        lambda r, p: [grid(r, (1, 5), (1, 5), hi=5)]),
    fam("rim_total", "rim_total edge_sum frame_sum", ("grid table: List[List[int]]",), "int",
        ("Return the sum of the cells on the outer edge of {a}, a rectangular grid: the first and last rows and "
         "the first and last columns, each cell counted once even where they meet. In a grid with one row or "
         "one column every cell is on the edge; a grid with no rows gives 0.",
         "Add up the border cells of {a}, a rectangular grid, that is the cells in row 0, in the last row, in "
         "column 0 or in the last column; a corner cell is added once. Cells inside the border are left out."),
        "total = 0\n    for i, row in enumerate({a}):\n        for j, x in enumerate(row):\n"
        "            if i in (0, len({a}) - 1) or j in (0, len(row) - 1):\n                total += x\n"
        "    return total",
        lambda r, p: [grid(r, (0, 5), (1, 5))]),
)

SIMULATION = (
    fam("spilled_water", "spilled_water overflow_total tank_overflow", ("flows changes amounts: List[int]",), "int",
        ("A tank holds at most {cap} litres and starts empty. The numbers of {a} are applied in order: a "
         "positive number pours that many litres in, a negative one drains that many out. Water above {cap} "
         "litres spills over and is lost, and draining more than the tank holds just empties it. Return the "
         "total number of litres spilled.",
         "Simulate a tank of capacity {cap}, empty at first. After adding each change of {a} to the level: if "
         "the level is above {cap}, the excess spills and the level becomes {cap}; if it is below 0, it becomes "
         "0. Return the sum of all the excess that spilled."),
        "level = spilled = 0\n    for x in {a}:\n        level += x\n        if level > {cap}:\n"
        "            spilled += level - {cap}\n            level = {cap}\n        elif level < 0:\n"
        "            level = 0\n    return spilled",
        lambda r, p: [ints(r, 0, 7, -5, 8)], lambda r: {"cap": r.randint(5, 12)}),
    fam("walker_distance", "walker_distance turtle_distance distance_after_commands",
        ("commands program path: str",), "int",
        ("A walker starts at (0, 0) facing north. It reads {a} one character at a time: 'F' moves one unit "
         "forward, 'L' turns 90 degrees to the left and 'R' 90 degrees to the right; any other character is "
         "ignored. Return the Manhattan distance (|x| + |y|) between the start and the point where it ends.",
         "Follow {a}, a program for a turtle that starts at the origin heading north: F steps forward one unit "
         "in the current heading, L and R turn a quarter turn left or right on the spot. Return how far the "
         "turtle ends up from the origin, measured as the absolute x offset plus the absolute y offset."),
        "x = y = 0\n    dx, dy = 0, 1\n    for ch in {a}:\n        if ch == \"F\":\n            x, y = x + dx, y + dy\n"
        "        elif ch == \"L\":\n            dx, dy = -dy, dx\n        elif ch == \"R\":\n"
        "            dx, dy = dy, -dx\n    return abs(x) + abs(y)",
        lambda r, p: [word(r, 0, 10, "FFFLR")]),
    fam("turns_to_zero", "turns_to_zero countdown_finish checkout_turn", ("throws scores: List[int]",), "int",
        ("A player starts with {start} points and subtracts the score of each throw in {a}, in order. A throw "
         "worth more than the points left is a bust: it is ignored and the points stay as they were. Return the "
         "number of the throw (counting from 1) that brings the points to exactly 0, or -1 if they never reach "
         "0.",
         "Count down from {start}: take away each value of {a} in turn, skipping any value larger than what is "
         "left. Return the 1-based position of the value that makes the count exactly zero, or -1 when zero is "
         "never reached."),
        "left = {start}\n    for turn, x in enumerate({a}, 1):\n        if x <= left:\n            left -= x\n"
        "            if left == 0:\n                return turn\n    return -1",
        _throws, lambda r: {"start": r.randint(8, 16)}),
    fam("duel_winner", "duel_winner card_battle compare_hands",
        ("hand_a player_one alice: List[int]", "hand_b player_two bob: List[int]"), "str",
        ("Two players turn over cards at the same time, {a}[i] against {b}[i]. The higher card wins the round "
         "and equal cards win nothing; play stops when either list runs out. Return 'first' if the owner of {a} "
         "won more rounds, 'second' if the owner of {b} did, and 'tie' otherwise.",
         "Compare {a} and {b} position by position, for as many positions as the shorter list has, and count "
         "the positions where {a} is larger and those where {b} is larger. Return 'first' when {a} wins more "
         "positions, 'second' when {b} does, and 'tie' when the counts are equal."),
        "wins_a = wins_b = 0\n    for x, y in zip({a}, {b}):\n        if x > y:\n            wins_a += 1\n"
        "        elif y > x:\n            wins_b += 1\n    if wins_a == wins_b:\n        return \"tie\"\n"
        "    return \"first\" if wins_a > wins_b else \"second\"",
        lambda r, p: [ints(r, 0, 6, 1, 6), ints(r, 0, 6, 1, 6)]),
    fam("run_counter", "run_counter counter_after final_count", ("commands ops: List[str]",), "int",
        ("A counter starts at 0 and carries out {a} in order: 'inc' adds {k}, 'dec' subtracts {k} but never "
         "takes it below 0 (it stops at 0), 'double' multiplies it by 2 and 'reset' sets it back to 0. Any other "
         "command is ignored. Return the final value.",
         "Apply the commands of {a} to a counter that starts at zero. 'inc' raises it by {k_w}; 'dec' lowers it "
         "by {k_w}, down to zero at the lowest; 'double' doubles it; 'reset' makes it zero; other commands do "
         "nothing. Return the counter's value at the end."),
        "value = 0\n    for cmd in {a}:\n        if cmd == \"inc\":\n            value += {k}\n"
        "        elif cmd == \"dec\":\n            value = max(0, value - {k})\n        elif cmd == \"double\":\n"
        "            value *= 2\n        elif cmd == \"reset\":\n            value = 0\n    return value",
        lambda r, p: [_counter_commands(r)], lambda r: {"k": r.randint(1, 3)}),
    fam("game_winner", "game_winner match_winner who_won_game", ("points rallies: str",), "str",
        ("{a} lists who won each point of a game, 'A' or 'B'. A player wins the game as soon as they have at "
         "least {k} points and at least two more than the other player; any later points are ignored. Return "
         "'A' or 'B' for the winner, or '' if the game is not decided yet.",
         "Score the points in {a} one by one ('A' is a point for player A, 'B' for player B). The first time a "
         "player has {k_w} or more points and leads by two or more, that player has won: return their letter. "
         "If that never happens, return ''."),
        "a_points = b_points = 0\n    for p in {a}:\n        if p == \"A\":\n            a_points += 1\n"
        "        else:\n            b_points += 1\n        if max(a_points, b_points) >= {k} and "
        "abs(a_points - b_points) >= 2:\n            return \"A\" if a_points > b_points else \"B\"\n    return \"\"",
        _rally, lambda r: {"k": r.randint(3, 5)}),
    fam("last_in_circle", "last_in_circle circle_survivor counting_out", ("n count size: int",), "int",
        ("There are {a} people in a circle, numbered 1 to {a}. Counting starts at person 1 and goes round the "
         "circle; the {kth} person counted leaves, and counting starts again from the next person still in the "
         "circle. This repeats until one person is left. Return that person's number.",
         "Put the numbers 1 to {a} in a circle. Starting from 1, count {k_w} places round the circle (the "
         "starting number counts as the first place) and remove the number you land on; then count again "
         "starting from the number after it. When only one number remains, return it."),
        "circle = list(range(1, {a} + 1))\n    i = 0\n    while len(circle) > 1:\n"
        "        i = (i + {k} - 1) % len(circle)\n        circle.pop(i)\n    return circle[0]",
        lambda r, p: [r.randint(1, 40)], every_kth),
)
