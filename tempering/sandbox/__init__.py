"""Run untrusted code in full isolation, fast: see docs/threat-model.md.

    with Sandbox() as sb:
        r = sb.run("print(1 + 1)")            # ExecResult(status="ok", stdout="2\\n", ...)
        with sb.session("bash") as s:         # a workspace that persists across runs
            s.write_file("a.txt", "hi")
            s.run("cat a.txt")

Names resolve lazily: the fork server imports this package too, and every module it
loads makes each fork (and so each run) slower.
"""

__all__ = ["ExecResult", "LANGUAGES", "Limits", "Sandbox", "Session", "shared_sandbox"]


def __getattr__(name: str):
    if name in ("Sandbox", "shared_sandbox"):
        from . import client

        return getattr(client, name)
    if name == "Session":
        from .session import Session

        return Session
    if name == "Limits":
        from .limits import Limits

        return Limits
    if name == "LANGUAGES":
        from .languages import LANGUAGES

        return LANGUAGES
    if name == "ExecResult":
        from ..types import ExecResult

        return ExecResult
    raise AttributeError(f"module 'tempering.sandbox' has no attribute {name!r}")
