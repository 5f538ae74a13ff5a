"""Reading shell command lines well enough to tell package installs from real work.

A Dockerfile `RUN` line mixes two kinds of commands: package installs (`apt-get install
jq`, `pip install numpy`), which need a network and root and which this runner can only
honour by finding the package already on the host, and everything else (`mkdir`, a setup
script), which runs in the sandbox. `split_commands` cuts a line at its top-level `&&`,
`;` and newlines; `classify` says what one piece asks for. Anything it cannot read with
confidence (an install inside `if`, `||`, a subshell) comes back as "complex", and the
caller skips the task rather than guess.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

APT = ("apt-get", "apt", "aptitude")
PIP_INSTALLERS = ("pip", "pip3")
OTHER_MANAGERS = ("apk", "yum", "dnf", "zypper", "pacman", "conda", "mamba", "npm", "cargo", "gem")
_APT_VALUE_OPTS = {"-o", "-t", "--target-release", "-c", "--config-file"}
_PIP_VALUE_OPTS = {"-i", "--index-url", "--extra-index-url", "-c", "--constraint", "-t", "--target", "--prefix",
                   "--root", "-f", "--find-links", "--trusted-host", "--python", "--platform", "--python-version",
                   "--cache-dir", "--src"}
_COMPOUND = {"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "{", "}",
             "function", "select"}
_INSTALL_WORD = re.compile(r"(?<![\w./-])(apt-get|apt|aptitude|pip3?|uv|apk|yum|dnf|conda)(?![\w.-])")
_REQ_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class Command:
    """What one simple command asks for."""

    kind: str
    """"apt" (packages), "python" (pip requirements), "requirements-file", "noop" (package
    bookkeeping such as `apt-get update`), "shell" (real work), "manager" (a package
    manager this runner cannot stand in for) or "complex" (not readable with confidence)."""
    names: tuple[str, ...] = ()
    text: str = ""


def split_commands(line: str) -> list[tuple[str, str]] | None:
    """(command, separator after it) for each top-level piece of `line`, or None when the
    line has shell structure (compound commands, unbalanced quotes) that splitting would break."""
    pieces: list[tuple[str, str]] = []
    buf: list[str] = []
    quote = ""
    depth = 0
    i = 0
    while i < len(line):
        c = line[i]
        if quote == "'":
            quote = "" if c == "'" else quote
        elif c == "\\" and i + 1 < len(line):
            buf.append(line[i:i + 2])
            i += 2
            continue
        elif quote == '"':
            quote = "" if c == '"' else quote
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif depth == 0 and (line.startswith("&&", i) or c in ";\n"):
            sep = "&&" if c == "&" else c
            pieces.append(("".join(buf).strip(), sep))
            buf = []
            i += len(sep)
            continue
        buf.append(c)
        i += 1
    if quote or depth:
        return None
    pieces.append(("".join(buf).strip(), ""))
    pieces = [(cmd, sep) for cmd, sep in pieces if cmd]
    for cmd, _ in pieces:
        first = cmd.split(None, 1)[0]
        if first in _COMPOUND or first.endswith("()"):
            return None
    return pieces


def _words(text: str) -> list[str] | None:
    try:
        return shlex.split(text, comments=False)
    except ValueError:
        return None


def _strip_prefix(words: list[str]) -> list[str]:
    """Drop `VAR=value` assignments, `sudo`, `env` and `command` before the program name."""
    while words and (re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]) or words[0] in ("sudo", "env", "command")):
        words = words[1:]
    return words


def _operands(args: list[str], value_opts: set[str]) -> list[str]:
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in value_opts:
            skip = True
        elif not a.startswith("-"):
            out.append(a)
    return out


def _requirement(spec: str) -> str | None:
    """The distribution name of a pip requirement (`numpy==2.3.1` -> `numpy`)."""
    m = _REQ_NAME.match(spec.strip())
    return m.group(0).lower() if m else None


def classify(text: str) -> Command:
    """What the simple command `text` asks for (see Command.kind)."""
    words = _words(text)
    if words is None or any(op in text for op in ("||", "|&", "`")) and _INSTALL_WORD.search(text):
        return Command("complex", text=text)
    words = _strip_prefix(words)
    if not words:
        return Command("noop", text=text)
    prog = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    if prog in ("python", "python3") and args[:2] == ["-m", "pip"]:
        prog, args = "pip", args[2:]
    if prog == "uv" and args[:1] == ["pip"]:
        prog, args = "pip", args[1:]
    if prog == "uv" and args[:1] == ["add"]:
        prog, args = "pip", ["install", *args[1:]]
    if prog in APT:
        ops = _operands(args, _APT_VALUE_OPTS)
        if ops[:1] == ["install"]:
            return Command("apt", tuple(p.split("=")[0].split(":")[0] for p in ops[1:]), text)
        return Command("noop", text=text)
    if prog in PIP_INSTALLERS:
        if "-r" in args or "--requirement" in args:
            i = args.index("-r" if "-r" in args else "--requirement")
            return Command("requirements-file", tuple(args[i + 1:i + 2]), text)
        ops = _operands(args, _PIP_VALUE_OPTS)
        if ops[:1] == ["install"]:
            names = tuple(n for n in (_requirement(s) for s in ops[1:]) if n)
            return Command("python", names, text)
        return Command("noop", text=text)
    if prog in OTHER_MANAGERS:
        return Command("manager", (prog,), text)
    if prog == "rm" and all(a.startswith(("/var/lib/apt", "/var/cache/apt", "-")) for a in args):
        return Command("noop", text=text)
    if _INSTALL_WORD.search(" ".join(words[1:])) and any(w in APT + PIP_INSTALLERS for w in words[1:]):
        return Command("complex", text=text)
    return Command("shell", text=text)


def requirement_lines(text: str) -> list[str]:
    """Requirement names from a requirements.txt (comments, options and blank lines dropped)."""
    names = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            name = _requirement(line)
            if name:
                names.append(name)
    return names


def shorten(text: str, width: int = 100) -> str:
    """One line of at most `width` characters, for reasons and reports."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."
