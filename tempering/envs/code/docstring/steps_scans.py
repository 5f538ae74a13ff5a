"""`code/steps-v1` families over sequences: one pass with state (scans) and stacks.

Each reference body is a small algorithm of 4-12 lines, not a one-line expression: a loop
that carries a running total, a best-so-far, a last-seen position or a stack.
"""

from __future__ import annotations

import random

from .family import fam, ints, word


def _balanced_or_not(r: random.Random) -> list[int]:
    """A list that often has a balance point: a side, a middle element, the side shuffled."""
    if r.random() < 0.5:
        return [ints(r, 0, 7, -3, 5)]
    side = ints(r, 0, 3, 0, 5)
    other = side[:]
    r.shuffle(other)
    return [side + [r.randint(-3, 5)] + other]


def brackets(r: random.Random, mistakes: float = 0.25, letters: bool = True) -> str:
    """Up to 10 characters from ([< and their partners: mostly well nested, with a wrong or
    stray closing bracket at rate `mistakes`, and a letter now and then if `letters`."""
    out, stack = [], []
    for _ in range(r.randint(0, 10)):
        roll = r.random()
        if letters and roll < 0.15:
            out.append(r.choice("xy"))
        elif roll < 0.6 and (stack or r.random() < mistakes):
            partner = ")]>"["([<".index(stack.pop())] if stack else r.choice(")]>")
            out.append(r.choice(")]>") if r.random() < mistakes else partner)
        else:
            stack.append(r.choice("([<"))
            out.append(stack[-1])
    return "".join(out)


def _postfix(r: random.Random, depth: int = 3) -> str:
    if depth == 0 or r.random() < 0.35:
        return str(r.randint(0, 9))
    return f"{_postfix(r, depth - 1)} {_postfix(r, depth - 1)} {r.choice('+-*')}"


def _edits(r: random.Random) -> list[str]:
    pool = ("type cat", "type dog", "type sun", "type red", "undo", "undo", "redo")
    return [r.choice(pool) for _ in range(r.randint(0, 8))]


def _browsing(r: random.Random) -> list[str]:
    pool = ("visit news", "visit mail", "visit maps", "visit shop", "back", "back", "forward")
    return [r.choice(pool) for _ in range(r.randint(0, 8))]


def _stack_program(r: random.Random) -> list[str]:
    return [r.choice(("pop", "pop", "dup", f"push {r.randint(0, 9)}", f"push {r.randint(0, 9)}"))
            for _ in range(r.randint(1, 8))]


SCANS = (
    fam("first_prefix_over", "first_index_over total_passes_at prefix_crossing",
        ("numbers amounts values: List[int]", "limit threshold bound: int"), "int",
        ("Add up {a} from left to right and return the index of the first element at which the "
         "running total becomes strictly greater than {b}. Return -1 if the total never exceeds {b}, which "
         "includes the empty list.",
         "Walk through {a} keeping a running sum. As soon as the sum is greater than {b}, return the 0-based "
         "position of the element just added. If that never happens, return -1."),
        "total = 0\n    for i, x in enumerate({a}):\n        total += x\n        if total > {b}:\n"
        "            return i\n    return -1",
        lambda r, p: [ints(r, 0, 7, -3, 6), r.randint(0, 10)]),
    fam("longest_run_below", "longest_run_below longest_low_stretch max_calm_stretch",
        ("readings values levels: List[int]", "limit ceiling cap: int"), "int",
        ("Return the length of the longest stretch of consecutive elements of {a} that are all strictly less "
         "than {b}. Return 0 if no element is below {b} or {a} is empty.",
         "A run is an unbroken sequence of neighbouring elements of {a} that each stay below {b} (strictly); an "
         "element equal to or above {b} ends the run. Return the length of the longest run, or 0 when there is "
         "none."),
        "best = current = 0\n    for x in {a}:\n        if x < {b}:\n            current += 1\n"
        "            best = max(best, current)\n        else:\n            current = 0\n    return best",
        lambda r, p: [ints(r, 0, 9, 0, 9), r.randint(2, 7)]),
    fam("count_new_highs", "count_new_highs count_records record_breakers", ("scores heights values: List[int]",),
        "int",
        ("Count the elements of {a} that are strictly greater than every element before them. The first "
         "element always counts; an empty list gives 0.",
         "Reading {a} from left to right, a value sets a record when it is strictly larger than all the values "
         "read before it. Return how many records are set, counting the first value as one. A value equal to "
         "the best so far does not set a record."),
        "best = None\n    count = 0\n    for x in {a}:\n        if best is None or x > best:\n            best = x\n"
        "            count += 1\n    return count",
        lambda r, p: [ints(r, 0, 8, -5, 9)]),
    fam("largest_drop", "largest_drop deepest_fall max_decline", ("prices values levels: List[int]",), "int",
        ("Return the largest fall in {a}: the biggest value of {a}[i] - {a}[j] over positions i < j. Return 0 "
         "if the values never fall, which includes an empty list and a single element.",
         "Keep track of the highest value seen so far while walking through {a}; at each element the fall is "
         "that highest value minus the element. Return the biggest fall found, or 0 when {a} never goes down."),
        "peak = None\n    worst = 0\n    for x in {a}:\n        if peak is None or x > peak:\n            peak = x\n"
        "        worst = max(worst, peak - x)\n    return worst",
        lambda r, p: [ints(r, 0, 8, 0, 20)]),
    fam("direction_changes", "count_turns direction_changes count_reversals", ("values heights series: List[int]",),
        "int",
        ("Count how often {a} changes direction. Each element is compared with the one before it: the step is "
         "up if it is larger and down if it is smaller, and flat steps (equal neighbours) are skipped. Return "
         "how many times an up step is followed by a down step, or a down step by an up step, flat steps in "
         "between not mattering.",
         "Walk along {a}, ignore every pair of equal neighbours and note whether each other step goes up or "
         "down. Return the number of steps whose direction differs from that of the previous step that was not "
         "flat. Lists with fewer than three elements give 0."),
        "changes = last = 0\n    for x, y in zip({a}, {a}[1:]):\n        step = (y > x) - (y < x)\n"
        "        if step != 0:\n            if last != 0 and step != last:\n                changes += 1\n"
        "            last = step\n    return changes",
        lambda r, p: [ints(r, 0, 9, 0, 5)]),
    fam("balance_index", "balance_index pivot_position equal_sides_index", ("weights values numbers: List[int]",),
        "int",
        ("Return the first index i such that the elements before position i add up to the same total as the "
         "elements after it. The element at i belongs to neither side, and an empty side sums to 0. Return -1 "
         "if there is no such index.",
         "Find the leftmost position in {a} where everything to its left sums to the same value as everything "
         "to its right, the element itself not counted on either side. Return -1 when no position balances."),
        "left = 0\n    total = sum({a})\n    for i, x in enumerate({a}):\n        if left == total - left - x:\n"
        "            return i\n        left += x\n    return -1",
        lambda r, p: _balanced_or_not(r)),
    fam("closest_repeat", "closest_repeat nearest_duplicate_gap min_repeat_distance",
        ("values items numbers: List[int]",), "int",
        ("Return the smallest distance between two equal elements of {a}, where positions i and j are j - i "
         "apart. Return -1 if no value occurs twice.",
         "Among all pairs of positions of {a} that hold the same value, find the pair closest together and "
         "return how far apart they are (the difference of their indices). If all values differ, return -1."),
        "last = {{}}\n    best = -1\n    for i, x in enumerate({a}):\n"
        "        if x in last and (best == -1 or i - last[x] < best):\n            best = i - last[x]\n"
        "        last[x] = i\n    return best",
        lambda r, p: [ints(r, 0, 8, 0, 6)]),
)

STACKS = (
    fam("first_bad_bracket", "first_bad_bracket mismatch_position bracket_error_index", ("text code line: str",),
        "int",
        ("{a} may contain the brackets ( ) [ ] < > and other characters, which are ignored. Each closing "
         "bracket must close the most recently opened bracket that is still open, and be of the same type. "
         "Return the index of the first closing bracket that breaks this rule, including a closing bracket met "
         "when nothing is open. Return -1 if none breaks it, even when some brackets are never closed.",
         "Scan {a} keeping a stack of the open brackets '(', '[' and '<'. A ')', ']' or '>' must match the "
         "bracket on top of the stack, which it then removes. Return the position of the first closing bracket "
         "that finds the stack empty or the wrong kind on top; return -1 if there is none. Brackets left open "
         "at the end do not matter, and all other characters are skipped."),
        "match = dict(zip(\")]>\", \"([<\"))\n    stack = []\n    for i, ch in enumerate({a}):\n"
        "        if ch in \"([<\":\n            stack.append(ch)\n"
        "        elif ch in match and (not stack or stack.pop() != match[ch]):\n            return i\n    return -1",
        lambda r, p: [brackets(r)]),
    fam("closing_suffix", "closing_suffix missing_closers complete_brackets", ("prefix opened text: str",), "str",
        ("{a} is made of the brackets (, [ and < and their partners ), ] and >, and every closing bracket in it "
         "closes the most recently opened bracket still open. Return the string of closing brackets that closes "
         "all the brackets still open, innermost first, or '' if nothing is open.",
         "Return what must be appended to {a} so that every bracket in it is closed: for each bracket still open "
         "at the end of {a}, its partner (')' for '(', ']' for '[', '>' for '<'), the most recently opened one "
         "first. {a} holds only these six characters, and each closing bracket in it is correct."),
        "partner = dict(zip(\"([<\", \")]>\"))\n    stack = []\n    for ch in {a}:\n        if ch in partner:\n"
        "            stack.append(ch)\n        else:\n            stack.pop()\n"
        "    return \"\".join(partner[ch] for ch in reversed(stack))",
        lambda r, p: [brackets(r, 0.0, letters=False)]),
    fam("replay_edits", "replay_edits apply_edits final_text", ("commands actions edits: List[str]",), "str",
        ("Replay {a}, a list of editor commands, and return the final text: the words typed, joined by single "
         "spaces. 'type W' adds the word W at the end. 'undo' removes the last word still in the text and keeps "
         "it for redo; with an empty text it does nothing. 'redo' puts back the word most recently undone; it "
         "does nothing when there is nothing to redo. Every 'type' forgets all words kept for redo.",
         "The text starts empty. For each entry of {a}: 'type W' appends the word W and clears the redo list; "
         "'undo' moves the last word of the text onto the redo list (if the text has a word); 'redo' moves the "
         "most recently undone word back to the end of the text (if the redo list is not empty). Return the "
         "words of the final text separated by single spaces ('' if there are none)."),
        "words, undone = [], []\n    for cmd in {a}:\n        if cmd == \"undo\":\n            if words:\n"
        "                undone.append(words.pop())\n        elif cmd == \"redo\":\n            if undone:\n"
        "                words.append(undone.pop())\n        else:\n            words.append(cmd[5:])\n"
        "            undone.clear()\n    return \" \".join(words)",
        lambda r, p: [_edits(r)]),
    fam("postfix_value", "postfix_value eval_postfix rpn_result", ("expression expr tokens: str",), "int",
        ("{a} is an arithmetic expression in postfix notation: non-negative integers and the operators +, - "
         "and *, separated by single spaces, each operator applying to the two values computed before it. "
         "Return its value. For '-' the earlier value is the left operand, so '7 2 -' is 5. The expression is "
         "always well formed.",
         "Evaluate {a}, an expression in reverse Polish notation. Read its space-separated tokens from left to right: a "
         "number is pushed on a stack; an operator (+, - or *) pops the top value y, then the value x below it, "
         "and pushes x + y, x - y or x * y. Return the one value left at the end."),
        "stack = []\n    for token in {a}.split():\n        if token.isdigit():\n            stack.append(int(token))\n"
        "        elif token == \"+\":\n            stack.append(stack.pop() + stack.pop())\n"
        "        elif token == \"-\":\n            right = stack.pop()\n            stack.append(stack.pop() - right)\n"
        "        else:\n            stack.append(stack.pop() * stack.pop())\n    return stack[0]",
        lambda r, p: [_postfix(r)]),
    fam("cancel_pairs", "cancel_pairs remove_adjacent_pairs reduce_pairs", ("text word letters: str",), "str",
        ("Repeatedly delete two equal characters standing next to each other in {a} until no such pair is left, "
         "and return what remains. Deleting one pair can bring two equal characters together, which then go "
         "too.",
         "Process {a} from left to right with a stack: when the character on top of the stack equals the next "
         "character, pop it and drop the next character as well; otherwise push the next character. Return the "
         "characters left on the stack, bottom to top, as a string."),
        "stack = []\n    for ch in {a}:\n        if stack and stack[-1] == ch:\n            stack.pop()\n"
        "        else:\n            stack.append(ch)\n    return \"\".join(stack)",
        lambda r, p: [word(r, 0, 9, r.choice(("ab", "abc")))]),
    fam("current_page", "current_page page_after_clicks browse_history", ("actions history clicks: List[str]",),
        "str",
        ("Replay {a}, a list of browser actions, and return the page shown at the end. The browser starts on "
         "'{home}'. 'visit P' opens page P: the page shown until then goes onto the back list and the forward "
         "list is emptied. 'back' takes the page most recently put on the back list off it and shows it, putting "
         "the current page onto the forward list; 'forward' does the same with the two lists swapped. 'back' or "
         "'forward' with an empty list does nothing.",
         "A browser shows '{home}' and keeps a back stack and a forward stack, both empty at first. For each "
         "entry of {a}: 'visit P' pushes the current page on the back stack, clears the forward stack and "
         "shows P; 'back' (when the back stack is not empty) pushes the current page on the forward stack and "
         "shows the page popped from the back stack; 'forward' works the same way with the stacks swapped. "
         "Return the page shown after the last action."),
        "back, ahead, page = [], [], \"{home}\"\n    for cmd in {a}:\n        if cmd == \"back\" and back:\n"
        "            ahead.append(page)\n            page = back.pop()\n        elif cmd == \"forward\" and ahead:\n"
        "            back.append(page)\n            page = ahead.pop()\n        elif cmd.startswith(\"visit \"):\n"
        "            back.append(page)\n            page, ahead = cmd[6:], []\n    return page",
        lambda r, p: [_browsing(r)], lambda r: {"home": r.choice(("home", "start", "index"))}),
    fam("popped_values", "popped_values stack_pops run_stack", ("commands ops program: List[str]",), "List[int]",
        ("Run {a}, a list of stack commands, starting from an empty stack, and return the list of values the 'pop' "
         "commands take off, in order. 'push N' puts the integer N on top. 'pop' removes the top value, or gives "
         "-1 when the stack is empty. 'dup' pushes a copy of the top value and does nothing on an empty stack.",
         "Each entry of {a} is 'push N', 'pop' or 'dup'. Push puts N on a stack; dup copies the top value "
         "onto the stack if there is one; pop takes the top value off and records it, recording -1 instead when "
         "the stack is empty. Return the recorded values in the order they were recorded."),
        "stack, popped = [], []\n    for cmd in {a}:\n        if cmd == \"pop\":\n"
        "            popped.append(stack.pop() if stack else -1)\n        elif cmd == \"dup\":\n"
        "            if stack:\n                stack.append(stack[-1])\n        else:\n"
        "            stack.append(int(cmd.split()[1]))\n    return popped",
        lambda r, p: [_stack_program(r)]),
)
