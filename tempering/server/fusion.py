"""SandboxFusion's `/run_code`, answered by Tempering's sandbox.

The request and response follow SandboxFusion's documented models (its `RunCodeRequest`,
`RunCodeResponse`, `CommandRunResult`), so its PyPI client and verl's `sandbox_fusion`
reward call this service unchanged. Inside, a request becomes one `Sandbox.run` and the
`ExecResult` is written back in SandboxFusion's words:

    status          Success (every step exited 0), Failed (a step did not), SandboxError
                    (the sandbox itself failed: never the program's fault)
    compile_result  C/C++ only: Finished with its return code, or TimeLimitExceeded
    run_result      Finished (any exit code; a limit that killed the program gives a
                    negative one), TimeLimitExceeded, or absent when the compile failed

What is not covered: SandboxFusion's other languages (go, java, nodejs, ...), `/run_jupyter`
and its dataset endpoints. Each is answered with a 4xx that names what is unsupported,
never a silent fallback.
"""

from __future__ import annotations

import base64
import binascii
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tempering.sandbox.languages import LANGUAGES
from tempering.sandbox.limits import Limits
from tempering.types import ExecResult

from .native import utf8_only

UNSUPPORTED_PATHS = ("/run_jupyter", "/submit", "/get_prompts", "/get_prompt_by_id", "/list_datasets",
                     "/list_ids")
"""SandboxFusion endpoints this service does not serve; each gets a 4xx that says so."""


class RequestError(ValueError):
    """A request this service cannot serve as asked; the message names the field and the fix."""


class RunCodeRequest(BaseModel):
    """SandboxFusion's request (its defaults). Fields it does not have are refused by name."""

    model_config = ConfigDict(extra="forbid")

    code: str = Field(..., examples=['print("hello")'], description="the program to run")
    language: str = Field(..., examples=["python"], description=f"one of {', '.join(LANGUAGES)}")
    compile_timeout: float = Field(10, description="seconds the C/C++ compile step may take")
    run_timeout: float = Field(10, description="seconds the program may run (wall and CPU)")
    memory_limit_MB: int = Field(-1, description="memory of the whole run in MB; -1: the sandbox's default")
    stdin: str | None = Field(None, description="text given to the program on stdin")
    files: dict[str, str | None] = Field({}, description="path -> base64 content, written before the run")
    fetch_files: list[str] = Field([], description="paths brought back base64-encoded in `files`")

    @model_validator(mode="before")
    @classmethod
    def unicode_text(cls, data):
        return utf8_only(data)


class CommandRunResult(BaseModel):
    status: Literal["Finished", "Error", "TimeLimitExceeded"]
    execution_time: float | None = None
    return_code: int | None = None
    stdout: str | None = None
    stderr: str | None = None


class RunCodeResponse(BaseModel):
    status: Literal["Success", "Failed", "SandboxError"]
    message: str
    compile_result: CommandRunResult | None = None
    run_result: CommandRunResult | None = None
    executor_pod_name: str | None = None
    files: dict[str, str] = {}


def to_call(req: RunCodeRequest, defaults: Limits) -> tuple[dict, Limits]:
    """Sandbox.run's keyword arguments and limits for `req`; RequestError names a bad field."""
    if req.language not in LANGUAGES:
        raise RequestError(f"language {req.language!r} is not supported by this sandbox: it runs "
                           f"{', '.join(LANGUAGES)}")
    for name in ("run_timeout", "compile_timeout"):
        if not 0 < getattr(req, name) <= 3600:
            raise RequestError(f"{name} must be in (0, 3600] seconds, got {getattr(req, name)}")
    if req.memory_limit_MB != -1 and not 16 <= req.memory_limit_MB <= 65536:
        raise RequestError(f"memory_limit_MB must be -1 (the default) or 16..65536, got {req.memory_limit_MB}")
    files = {}
    for path, content in req.files.items():
        if content is None:
            continue
        try:
            files[path] = base64.b64decode(content, validate=True)
        except (binascii.Error, ValueError):
            raise RequestError(f"files[{path!r}] is not base64: send each file's bytes base64-encoded") from None
    compiled = req.language in ("c", "cpp")
    limits = defaults.with_(
        wall_s=req.run_timeout, cpu_s=req.run_timeout,
        memory_mb=defaults.memory_mb if req.memory_limit_MB == -1 else req.memory_limit_MB,
        compile_wall_s=req.compile_timeout if compiled else None,
        compile_cpu_s=req.compile_timeout if compiled else None)
    call = {"code": req.code, "language": req.language, "stdin": req.stdin or "", "files": files,
            "fetch": list(req.fetch_files)}
    return call, limits


def to_response(r: ExecResult, language: str, replica: str) -> RunCodeResponse:
    """`r` in SandboxFusion's words (module docstring)."""
    files = {k: base64.b64encode(v).decode() for k, v in r.files.items()}
    if r.status == "sandbox_error":
        return RunCodeResponse(status="SandboxError", message=r.detail or "the sandbox failed",
                               executor_pod_name=replica, files=files)
    compile_result = None
    if language in ("c", "cpp"):
        if r.detail.startswith("compile"):
            status = "TimeLimitExceeded" if r.status == "timeout" else "Finished"
            code = None if status == "TimeLimitExceeded" else (r.exit_code if r.exit_code else 1)
            compile_result = CommandRunResult(status=status, execution_time=r.wall_s, return_code=code,
                                              stdout=r.stdout, stderr=r.stderr)
            return RunCodeResponse(status="Failed", message=r.detail, compile_result=compile_result,
                                   executor_pod_name=replica, files=files)
        compile_result = CommandRunResult(status="Finished", return_code=0, stdout="", stderr="")
    if r.status == "timeout":
        run = CommandRunResult(status="TimeLimitExceeded", execution_time=r.wall_s, stdout=r.stdout, stderr=r.stderr)
    else:
        # A limit that killed the program (memory, output, a signal) still "finished" in
        # SandboxFusion's sense; its return code is never 0, so the run counts as Failed.
        code = r.exit_code if r.exit_code is not None else -1
        if r.status != "ok" and code == 0:
            code = -1
        run = CommandRunResult(status="Finished", execution_time=r.wall_s, return_code=code, stdout=r.stdout,
                               stderr=r.stderr)
    ok = r.status == "ok"
    return RunCodeResponse(status="Success" if ok else "Failed", message="" if ok else (r.detail or r.status),
                           compile_result=compile_result, run_result=run, executor_pod_name=replica, files=files)
