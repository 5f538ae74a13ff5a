"""Context compression for long tasks: fit a growing conversation into a token budget.

Every attempt at a long task adds a code version and a test log to the conversation; the
model needs only part of it to make its next move. What `compress` keeps:

    verbatim     the system message and the task goal (the first user message)
    in full      the latest reply (the current version of the work) and the latest
                 feedback (what is wrong with it); if even these do not fit, the feedback's
                 middle is cut first, keeping its head and its tail, where errors are
    reduced      older replies to their key decisions (def/class signatures and lines
                 marked "Decision:", "Summary:" or "Plan:"); older feedback to its error
                 lines (each with its traceback's last frame); verbose logs are dropped
    dropped      the oldest turns, when the rest is still too long, replaced by one note

The stages apply in that order and stop as soon as the conversation fits; one that
already fits comes back unchanged. Tokens are the sum of `count_tokens` over the
messages' contents: chat-template tokens are not counted, so leave room for them in
`budget`. Pure and deterministic. What is dropped is lost to the prompt, not to the
task: long envs keep every version in an ArtifactStore the model can RECALL from.
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

from tempering.errors import TaskError
from tempering.types import Message

CountTokens = Callable[[str], int]

MAX_LINE = 200
"""Characters kept of one line of a reduced message."""

_SIGNATURE = re.compile(r"^\s*(?:async\s+def|def|class)\s+\w+")
_DECISION = re.compile(r"^\s*(?:#\s*)?(?:decision|summary|plan)\s*:", re.I)
_ERROR = re.compile(r"[A-Za-z]*(?:Error|Exception)\b|\berror:|\bassert|\bFAIL|\bfailed\b")
_FRAME = re.compile(r'^\s*File ".*", line \d+')


def compress(messages: Sequence[Message], count_tokens: CountTokens, budget: int) -> list[Message]:
    """`messages` fitted into `budget` tokens: the goal, the latest reply and feedback,
    and the key decisions and errors of older turns (see the module docstring)."""
    messages = list(messages)
    if _size(messages, count_tokens) <= budget:
        return messages
    head, body = _split_goal(messages)
    if _size(head, count_tokens) > budget:
        raise TaskError(f"the task goal alone takes {_size(head, count_tokens)} tokens, more than the context "
                        f"budget of {budget} tokens: raise the budget or shorten the task's prompt")
    latest = _latest(body)
    reduced = [m if i in latest else _reduce(m, count_tokens) for i, m in enumerate(body)]
    turns = _older_turns(body, latest)
    for n_dropped in range(len(turns) + 1):
        gone = {i for turn in turns[:n_dropped] for i in turn}
        out = head + _note(n_dropped) + [m for i, m in enumerate(reduced) if i not in gone]
        if _size(out, count_tokens) <= budget:
            return out
    # Only the goal, the note and the latest reply and feedback are left: cut the last two.
    # Where room is scarce (the note would take over a tenth of it) the note gives way.
    room, note = budget - _size(head, count_tokens), _note(len(turns))
    if _size(note, count_tokens) * 10 > room:
        note = []
    room -= _size(note, count_tokens)
    return head + note + _fit_latest([body[i] for i in sorted(latest)], count_tokens, room)


def reduce_reply(text: str) -> str:
    """An older reply's key decisions: its def/class signatures and marked decision lines."""
    keep = [line.rstrip() for line in text.splitlines() if _SIGNATURE.match(line) or _DECISION.match(line)]
    if not keep:
        return "[earlier reply elided]"
    return "\n".join(["[earlier reply, reduced to its key decisions]", *_clip(keep)])


def reduce_feedback(text: str) -> str:
    """Older feedback's error lines, each after its traceback's last frame; the rest dropped."""
    lines, keep, frame = text.splitlines(), [], []
    i = 0
    while i < len(lines):
        line = lines[i]
        if _FRAME.match(line):
            frame = [line.strip()]
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if nxt.startswith("    ") and not _FRAME.match(nxt):  # the frame's source line
                frame.append(nxt.strip())
                i += 1
        elif not line.startswith("Traceback") and _ERROR.search(line):
            keep += frame + [line.strip()]
            frame = []
        i += 1
    if not keep:
        return "[earlier feedback elided: no errors in it]"
    return "\n".join(["[earlier feedback, reduced to its errors]", *_clip(keep)])


def cut_middle(text: str, count_tokens: CountTokens, limit: int) -> str:
    """`text` in at most `limit` tokens: whole lines dropped from its middle (about a third
    of the kept lines from the head, the rest from the tail, where errors are), or
    characters when single lines are too long; "" when not even the marker fits."""
    if count_tokens(text) <= limit:
        return text
    lines = text.splitlines()
    if len(lines) > 1:
        k = _largest_fit(len(lines), lambda k: count_tokens(_cut(lines, k, "lines", "\n")) <= limit)
        if k:
            return _cut(lines, k, "lines", "\n")
    chars = list(text)
    k = _largest_fit(len(chars), lambda k: count_tokens(_cut(chars, k, "characters", "")) <= limit)
    return "" if k is None else _cut(chars, k, "characters", "")


def _size(messages: Sequence[Message], count_tokens: CountTokens) -> int:
    return sum(count_tokens(m.content) for m in messages)


def _split_goal(messages: list[Message]) -> tuple[list[Message], list[Message]]:
    """(everything up to and including the first user message, the rest)."""
    first_user = next((i for i, m in enumerate(messages) if m.role == "user"), None)
    if first_user is None:
        first_user = next((i for i, m in enumerate(messages) if m.role != "system"), len(messages)) - 1
    return messages[:first_user + 1], messages[first_user + 1:]


def _latest(body: list[Message]) -> set[int]:
    """Indices of the latest reply and the latest feedback."""
    replies = [i for i, m in enumerate(body) if m.role == "assistant"]
    feedback = [i for i, m in enumerate(body) if m.role != "assistant"]
    return set(replies[-1:] + feedback[-1:])


def _reduce(message: Message, count_tokens: CountTokens) -> Message:
    """The reduced form of an older message, unless that is no shorter."""
    text = reduce_reply(message.content) if message.role == "assistant" else reduce_feedback(message.content)
    return Message(message.role, text) if count_tokens(text) < count_tokens(message.content) else message


def _older_turns(body: list[Message], latest: set[int]) -> list[list[int]]:
    """The older messages grouped into turns (a reply and the feedback after it), oldest first."""
    turns: list[list[int]] = []
    for i, m in enumerate(body):
        if i in latest:
            continue
        if m.role == "assistant" or not turns:
            turns.append([i])
        else:
            turns[-1].append(i)
    return turns


def _note(n_dropped: int) -> list[Message]:
    if not n_dropped:
        return []
    return [Message("user", f"[{n_dropped} earlier turn{'s' if n_dropped != 1 else ''} elided to fit the context]")]


def _fit_latest(kept: list[Message], count_tokens: CountTokens, room: int) -> list[Message]:
    """The latest reply and feedback in `room` tokens: the feedback is cut first, but keeps
    at least half the room while the reply is too long; empty messages are left out."""
    reply = next((m.content for m in kept if m.role == "assistant"), "")
    feedback = next((m.content for m in kept if m.role != "assistant"), "")
    feedback = cut_middle(feedback, count_tokens, max(room - count_tokens(reply), room // 2))
    reply = cut_middle(reply, count_tokens, room - count_tokens(feedback))
    texts = [reply if m.role == "assistant" else feedback for m in kept]
    return [Message(m.role, text) for m, text in zip(kept, texts) if text]


def _cut(units: list[str], keep: int, what: str, joiner: str) -> str:
    head = (keep + 1) // 3
    tail = keep - head
    marker = f"[... {len(units) - keep} {what} dropped ...]"
    if not joiner:
        marker = f"\n{marker}\n"
    return joiner.join([*units[:head], marker, *units[len(units) - tail:]])


def _largest_fit(n: int, fits: Callable[[int], bool]) -> int | None:
    """The largest k in [0, n) with fits(k), by bisection (fits should grow false with k);
    None when not even fits(0). The answer is always one fits() accepted."""
    if not fits(0):
        return None
    lo, hi = 0, n - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _clip(lines: list[str]) -> list[str]:
    """Distinct lines, in order, each at most MAX_LINE characters."""
    return [line if len(line) <= MAX_LINE else line[:MAX_LINE] + "..." for line in dict.fromkeys(lines)]
