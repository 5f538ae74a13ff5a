"""A task's Dockerfile, honoured without Docker as far as it can be, and no further.

`parse` reads the instructions (continuations, comments, exec form, BuildKit heredocs).
`interpret` turns them into a `Build`: steps that recreate the image's task files in a
sandbox session whose workspace shows at /app, plus what the image would have installed
(`Need`s the host must already meet), or the `problem` that makes the task unbuildable here.

Honoured: FROM (recorded; the host's programs stand in for the base image), WORKDIR (at
or under /app), ENV and ARG, COPY and ADD of local files (modes kept, `--chmod` applied,
heredoc sources), RUN (package installs become Needs; the rest runs in the sandbox with
/bin/sh, as Docker would). Ignored with a note: CMD, ENTRYPOINT, EXPOSE, LABEL, USER,
VOLUME, HEALTHCHECK, SHELL, STOPSIGNAL, `--chown`. Refused (the task is skipped): a second
FROM (multi-stage), COPY --from, ADD of URLs or archives, paths outside /app, package
managers other than apt and pip, installs inside shell structure this reader cannot split.
"""

from __future__ import annotations

import json
import posixpath
import re
import secrets
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from .commands import classify, requirement_lines, shorten, split_commands
from .host import Need

ROOT = "/app"
"""Where the sandbox shows the task's workspace (see sandbox.paths.TASK_DIRS)."""
IGNORED = ("CMD", "ENTRYPOINT", "EXPOSE", "LABEL", "MAINTAINER", "USER", "VOLUME", "HEALTHCHECK", "SHELL",
           "STOPSIGNAL", "ONBUILD")
BASE_PROGRAMS = (("python", "python3"), ("node", "node"), ("golang", "go"), ("rust", "cargo"),
                 ("openjdk", "java"), ("temurin", "java"), ("ruby", "ruby"), ("perl", "perl"))
"""Base images whose main program must exist on the host (matched against the image name)."""
_HEREDOC = re.compile(r"<<(-?)([\"']?)([A-Za-z_][A-Za-z0-9_]*)\2")
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


@dataclass(frozen=True)
class Instruction:
    op: str
    args: str
    line: int
    heredocs: tuple[tuple[str, str], ...] = ()
    """(delimiter, body) of each `<<WORD` in the instruction, in order."""

    def short(self, width: int = 70) -> str:
        text = f"{self.op} {' '.join(self.args.split())}"
        return text if len(text) <= width else text[: width - 3] + "..."


@dataclass(frozen=True)
class Step:
    """One build step: a bash script run in the session with `env` and cwd `workdir`,
    after `files` (staged sources, workspace-relative) are written."""

    what: str
    script: str
    files: dict[str, bytes] = field(default_factory=dict)
    env: tuple[tuple[str, str], ...] = ()
    workdir: str = ROOT


@dataclass(frozen=True)
class Build:
    base: str = ""
    workdir: str = ROOT
    env: tuple[tuple[str, str], ...] = ()
    steps: tuple[Step, ...] = ()
    needs: tuple[Need, ...] = ()
    notes: tuple[str, ...] = ()
    problem: str | None = None
    """Why this image cannot be recreated without Docker; None when it can."""


def parse(text: str) -> list[Instruction]:
    """The instructions of a Dockerfile, continuation lines joined, comments dropped."""
    lines = text.splitlines()
    out: list[Instruction] = []
    i = 0
    while i < len(lines):
        raw = lines[i]
        start = i
        i += 1
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        parts = [raw]
        while parts[-1].rstrip().endswith("\\") and i < len(lines):
            parts[-1] = parts[-1].rstrip()[:-1]
            while i < len(lines) and lines[i].lstrip().startswith("#"):
                i += 1  # comment lines inside a continuation are dropped, as Docker does
            if i < len(lines):
                parts.append(lines[i])
                i += 1
        joined = " ".join(p.strip() for p in parts if p.strip()).strip()
        op, _, args = joined.partition(" ")
        heredocs = []
        for m in _HEREDOC.finditer(args if op.upper() in ("RUN", "COPY", "ADD") else ""):
            strip_tabs, word = m.group(1) == "-", m.group(3)
            body = []
            while i < len(lines) and (lines[i].lstrip("\t") if strip_tabs else lines[i]) != word:
                body.append(lines[i].lstrip("\t") if strip_tabs else lines[i])
                i += 1
            i += 1  # the delimiter line
            heredocs.append((word, "".join(b + "\n" for b in body)))
        out.append(Instruction(op.upper(), args.strip(), start + 1, tuple(heredocs)))
    return out


def _expand(text: str, env: dict[str, str]) -> str:
    """Docker's variable substitution: $VAR, ${VAR}, ${VAR:-default}."""
    return _VAR.sub(lambda m: env.get(m.group(1) or m.group(3), m.group(2) or ""), text)


def _exec_form(args: str) -> list[str] | None:
    if args.startswith("["):
        try:
            value = json.loads(args)
        except ValueError:
            return None
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return value
    return None


def _container_path(path: str, workdir: str) -> str:
    return posixpath.normpath(posixpath.join(workdir, path))


def _inside_root(path: str) -> bool:
    return path == ROOT or path.startswith(ROOT + "/")


class _Interpreter:
    def __init__(self, context: Path) -> None:
        self.context = context.resolve()
        self.stage = f".tb-stage-{secrets.token_hex(6)}"
        self.env: dict[str, str] = {}
        self.args: dict[str, str] = {}
        self.workdir = ROOT
        self.base = ""
        self.steps: list[Step] = []
        self.needs: list[Need] = []
        self.notes: list[str] = []

    def step(self, what: str, script: str, files: dict[str, bytes] | None = None) -> None:
        env = {**self.args, **self.env}
        self.steps.append(Step(what, script, files or {}, tuple(env.items()), self.workdir))

    # -- instructions; each returns a problem or None

    def FROM(self, ins: Instruction) -> str | None:
        if self.base:
            return f"line {ins.line}: a second FROM (multi-stage build) needs Docker"
        self.base = ins.args.split()[0] if ins.args else ""
        name = self.base.rsplit("/", 1)[-1]
        for key, program in BASE_PROGRAMS:
            if name.startswith(key):
                self.needs.append(Need("command", program, f"FROM {self.base}"))
        return None

    def WORKDIR(self, ins: Instruction) -> str | None:
        path = _container_path(_expand(ins.args, {**self.args, **self.env}), self.workdir)
        if not _inside_root(path):
            return f"line {ins.line}: WORKDIR {path}: the sandbox shows task files only at {ROOT}"
        self.workdir = path
        self.step(ins.short(), f"mkdir -p -- {shlex.quote(path)}")
        return None

    def ENV(self, ins: Instruction) -> str | None:
        words = shlex.split(ins.args)
        if words and "=" not in words[0]:
            pairs = [(words[0], " ".join(words[1:]))]
        else:
            pairs = [tuple(w.split("=", 1)) for w in words if "=" in w]
        for key, value in pairs:
            self.env[key] = _expand(value, {"PATH": "/usr/bin:/bin", **self.args, **self.env})
        return None

    def ARG(self, ins: Instruction) -> str | None:
        name, _, default = ins.args.partition("=")
        self.args[name.strip()] = default.strip().strip("\"'")
        return None

    def ADD(self, ins: Instruction) -> str | None:
        words = shlex.split(ins.args)
        for w in words:
            if re.match(r"(https?|git)://", w) or w.startswith("git@"):
                return f"line {ins.line}: ADD from a URL needs network"
            if re.search(r"\.(tar|tgz|tar\.gz|tar\.xz|tar\.bz2|txz|tbz2)$", w) and w is not words[-1]:
                return f"line {ins.line}: ADD of an archive (auto-extracted by Docker) is not supported"
        return self.COPY(ins)

    def COPY(self, ins: Instruction) -> str | None:
        words = _exec_form(ins.args) or shlex.split(_expand(ins.args, {**self.args, **self.env}))
        chmod = None
        while words and words[0].startswith("--"):
            flag = words.pop(0)
            if flag.startswith("--from"):
                return f"line {ins.line}: COPY --from (another image or stage) needs Docker"
            if flag.startswith("--chmod="):
                chmod = int(flag.split("=", 1)[1], 8)
            elif flag.startswith("--chown"):
                self.notes.append(f"line {ins.line}: --chown ignored (one user in the sandbox)")
        if len(words) < 2:
            return f"line {ins.line}: COPY needs a source and a destination"
        dest = _container_path(words[-1], self.workdir) + ("/" if words[-1].endswith("/") else "")
        if not _inside_root(dest.rstrip("/") or "/"):
            return f"line {ins.line}: COPY to {dest}: the sandbox shows task files only at {ROOT}"
        sources: list[tuple[str, dict[str, tuple[bytes, int]], bool]] = []  # (name, files, is_dir)
        heredocs = dict(ins.heredocs)
        for src in words[:-1]:
            m = _HEREDOC.fullmatch(src)
            if m:
                sources.append((posixpath.basename(dest.rstrip("/")), {"": (heredocs[m.group(3)].encode(), 0o644)},
                                False))
                continue
            problem = self._context_sources(src, sources, ins.line)
            if problem:
                return problem
        into_dir = dest.endswith("/") or len(sources) > 1
        self._place(ins.short(), sources, dest.rstrip("/") or "/", into_dir, chmod)
        return None

    def _context_sources(self, src: str, sources: list, line: int) -> str | None:
        matches = sorted(self.context.glob(src)) if any(c in src for c in "*?[") else [self.context / src]
        if not matches or not all(m.exists() for m in matches):
            return f"line {line}: COPY source {src!r} is not in the task directory"
        for m in matches:
            real = m.resolve()
            if real != self.context and self.context not in real.parents:
                return f"line {line}: COPY source {src!r} leaves the task directory"
            if real.is_dir():
                files = {}
                for f in sorted(real.rglob("*")):
                    if f.is_symlink() or not (f.resolve() == self.context or self.context in f.resolve().parents):
                        return f"line {line}: COPY source {src!r} holds a link leaving the task directory"
                    if f.is_file():
                        files[f.relative_to(real).as_posix()] = (f.read_bytes(), f.stat().st_mode & 0o7777)
                sources.append((real.name, files, True))
            else:
                sources.append((real.name, {"": (real.read_bytes(), real.stat().st_mode & 0o7777)}, False))
        return None

    def _place(self, what: str, sources: list, dest: str, into_dir: bool, chmod: int | None) -> None:
        """A script that moves staged sources to `dest` with Docker's rules: a directory's
        contents go into dest; a file goes into dest when dest is (or is to be) a
        directory, else becomes dest."""
        files: dict[str, bytes] = {}
        q = shlex.quote
        lines = ["set -e", f"S={q(ROOT + '/' + self.stage)}"]
        for i, (name, entries, is_dir) in enumerate(sources):
            staged = f"{self.stage}/{i}"
            for rel, (data, mode) in entries.items():
                path = f"{staged}/{rel}" if rel else staged
                files[path] = data
                # The agent is not root as in Docker: its own files must stay writable to it.
                lines.append(f"chmod {(chmod if chmod is not None else mode) | 0o600:o} -- {q(ROOT + '/' + path)}")
            if is_dir:
                lines.append(f"mkdir -p -- {q(dest)} \"$S/{i}\" && cp -a -- \"$S/{i}/.\" {q(dest)}/")
            elif into_dir:
                lines.append(f"mkdir -p -- {q(dest)} && mv -f -- \"$S/{i}\" {q(dest + '/' + name)}")
            else:
                lines.append(f"if [ -d {q(dest)} ]; then mv -f -- \"$S/{i}\" {q(dest + '/' + name)}; "
                             f"else mkdir -p -- \"$(dirname -- {q(dest)})\" && mv -f -- \"$S/{i}\" {q(dest)}; fi")
        lines.append('rm -rf -- "$S"')
        self.step(what, "\n".join(lines), files)

    def RUN(self, ins: Instruction) -> str | None:
        exec_form = _exec_form(ins.args)
        if exec_form is not None:
            text = shlex.join(exec_form)
        elif ins.args.startswith("<<") and len(ins.heredocs) == 1:
            text = ins.heredocs[0][1]
        else:
            text = "\n".join([ins.args, *(body + word for word, body in ins.heredocs)])
        pieces = split_commands(text)
        if pieces is None:
            if classify(text).kind in ("shell", "noop") and not re.search(r"\b(apt-get|apt|pip3?|uv)\s", text):
                self.step(ins.short(), f"/bin/sh -c {shlex.quote(text)}")
                return None
            return f"line {ins.line}: RUN has package installs inside shell structure this runner cannot split"
        kept: list[str] = []
        for cmd_text, sep in pieces:
            cmd = classify(cmd_text)
            origin = shorten(f"RUN {cmd_text}")
            if cmd.kind == "apt":
                self.needs += [Need("apt", p, origin) for p in cmd.names]
            elif cmd.kind == "python":
                self.needs += [Need("python", p, origin) for p in cmd.names]
            elif cmd.kind == "requirements-file":
                problem = self._requirements_file(cmd.names, origin, ins.line)
                if problem:
                    return problem
            elif cmd.kind == "manager":
                return f"line {ins.line}: RUN uses {cmd.names[0]}, a package manager this runner cannot stand in for"
            elif cmd.kind == "complex":
                return f"line {ins.line}: RUN mixes package installs with shell structure: {cmd_text[:60]!r}"
            elif cmd.kind == "shell":
                kept.append(cmd_text + (f" {sep} " if sep in ("&&", ";") else ("\n" if sep else "")))
        if kept:
            script = "".join(kept).strip().removesuffix("&&").removesuffix(";").rstrip()
            self.step(ins.short(), f"/bin/sh -c {shlex.quote(script)}")
        return None

    def _requirements_file(self, names: tuple[str, ...], origin: str, line: int) -> str | None:
        candidates = [self.context / n for n in names] + [self.context / posixpath.basename(n) for n in names]
        found = next((c for c in candidates if c.is_file()), None)
        if found is None:
            return f"line {line}: {origin}: the requirements file is not in the task directory"
        self.needs += [Need("python", r, origin) for r in requirement_lines(found.read_text())]
        return None


def interpret(instructions: list[Instruction], context: Path) -> Build:
    """The build plan for `instructions`, with `context` (the task directory) as the build context."""
    it = _Interpreter(context)
    for ins in instructions:
        handler = getattr(it, ins.op, None) if ins.op.isupper() and ins.op.isalpha() else None
        if ins.op in IGNORED:
            it.notes.append(f"line {ins.line}: {ins.op} ignored")
            continue
        if handler is None:
            return Build(base=it.base, problem=f"line {ins.line}: unknown Dockerfile instruction {ins.op}")
        problem = handler(ins)
        if problem:
            return Build(base=it.base, needs=tuple(it.needs), problem=problem)
    if not it.base:
        return Build(problem="the Dockerfile has no FROM line")
    return Build(it.base, it.workdir, tuple(it.env.items()), tuple(it.steps), tuple(it.needs), tuple(it.notes))
