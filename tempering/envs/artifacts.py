"""The artifacts of a long task, and how the agent asks for them back.

Every turn of a long task leaves artifacts: the code version the model wrote, the log of
running it. Context compression drops old ones from the prompt; the store keeps them all,
keyed by (subtask, turn, name), so the agent can ask for any of them by writing a line of
its reply:

    RECALL parse/3/code      the code of subtask "parse" at turn 3
    RECALL parse/code        the latest code of subtask "parse"
    RECALL log               the latest log of any subtask

`answer_recalls` turns such a reply into the messages that answer it. The store is plain
data in memory; `to_dict`/`from_dict` persist it (e.g. into a trajectory or a run's state).
"""

from __future__ import annotations

import builtins
import re
from dataclasses import asdict, dataclass

from tempering.errors import TaskError
from tempering.types import Message

_RECALL = re.compile(r"^[ \t]*RECALL[ \t]+(\S+)[ \t]*$", re.M)
_NAME = re.compile(r"^[^/\s]+$")
SHOWN = 20
"""At most this many refs are listed when a recall names no artifact."""


@dataclass(frozen=True)
class Artifact:
    """One saved piece of work: what subtask `subtask` produced at `turn`, called `name`."""

    subtask: str
    turn: int
    name: str
    text: str

    @property
    def ref(self) -> str:
        """How a RECALL line names it: subtask/turn/name."""
        return f"{self.subtask}/{self.turn}/{self.name}"


class ArtifactStore:
    """Artifacts keyed by (subtask, turn, name), kept in the order they were put."""

    def __init__(self) -> None:
        self._items: dict[tuple[str, int, str], Artifact] = {}

    def put(self, subtask: str, turn: int, name: str, text: str) -> Artifact:
        """Save `text`; a second put under the same key replaces the first."""
        for label, value in (("subtask", subtask), ("name", name)):
            if not _NAME.match(value):
                raise TaskError(f"artifact {label} {value!r} must be non-empty, without '/' or whitespace")
        if not isinstance(turn, int) or turn < 0:
            raise TaskError(f"artifact turn must be a non-negative int, got {turn!r}")
        key = (subtask, turn, name)
        self._items.pop(key, None)  # a replaced artifact becomes the latest
        self._items[key] = artifact = Artifact(subtask, turn, name, text)
        return artifact

    def get(self, subtask: str, turn: int, name: str) -> str | None:
        """The text saved under (subtask, turn, name), or None."""
        artifact = self._items.get((subtask, turn, name))
        return None if artifact is None else artifact.text

    def latest(self, name: str, subtask: str | None = None) -> Artifact | None:
        """The artifact called `name` put last (of `subtask`, when given), or None."""
        for artifact in reversed(self._items.values()):
            if artifact.name == name and subtask in (None, artifact.subtask):
                return artifact
        return None

    def list(self) -> builtins.list[Artifact]:
        """Every artifact, oldest first."""
        return builtins.list(self._items.values())

    def find(self, ref: str) -> Artifact | None:
        """Resolve a RECALL reference: name, subtask/name or subtask/turn/name."""
        parts = ref.split("/")
        if len(parts) == 1:
            return self.latest(parts[0])
        if len(parts) == 2:
            return self.latest(parts[1], subtask=parts[0])
        if len(parts) == 3 and parts[1].isdigit():
            return self._items.get((parts[0], int(parts[1]), parts[2]))
        return None

    def __len__(self) -> int:
        return len(self._items)

    def to_dict(self) -> dict:
        """Plain, JSON-ready data that `from_dict` restores."""
        return {"artifacts": [asdict(a) for a in self._items.values()]}

    @classmethod
    def from_dict(cls, data: dict) -> "ArtifactStore":
        """The store `to_dict` saved."""
        store = cls()
        try:
            for a in data["artifacts"]:
                store.put(a["subtask"], a["turn"], a["name"], a["text"])
        except (KeyError, TypeError) as e:
            raise TaskError(f"malformed artifact store: missing or bad field {e}; "
                            "expected {'artifacts': [{subtask, turn, name, text}, ...]}") from None
        return store


def parse_recalls(reply: str) -> list[str]:
    """The references a reply asks for, one per `RECALL <ref>` line, in order, each once.

    >>> parse_recalls("let me look\\nRECALL parse/2/code\\nRECALL log")
    ['parse/2/code', 'log']
    """
    return list(dict.fromkeys(_RECALL.findall(reply)))


def answer_recalls(store: ArtifactStore, reply: str) -> list[Message]:
    """One user message per artifact the reply asks for: its text, or, for a reference
    that names none, which artifacts there are."""
    answers = []
    for ref in parse_recalls(reply):
        artifact = store.find(ref)
        if artifact is not None:
            answers.append(Message("user", f"RECALL {artifact.ref}:\n{artifact.text}"))
        else:
            answers.append(Message("user", f"RECALL {ref}: no such artifact; available: {_available(store)}"))
    return answers


def _available(store: ArtifactStore) -> str:
    refs = [a.ref for a in store.list()]
    if not refs:
        return "none yet"
    more = f" (and {len(refs) - SHOWN} older)" if len(refs) > SHOWN else ""
    return ", ".join(refs[-SHOWN:]) + more
