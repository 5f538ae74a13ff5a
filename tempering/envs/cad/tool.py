"""The CAD tool: build a part script in the sandbox, then measure what it built.

Two sandboxed runs per attempt, so the script can never touch the measurement:

    build     the script (untrusted) runs with tcad; the harness writes the mesh of its
              `result` to part.mesh, which comes back as plain bytes
    measure   a fresh run (no untrusted code) loads that mesh into the kernel, builds the
              target from the reference script, and prints the geometry facts as JSON:
              closed solid or not, volume, surface area, size, bodies, through-holes
              (genus), triangles, and the overlap of the two (intersection over union)

Whatever the script does (crash the kernel, loop, eat memory, write a fake part.mesh), the
worst it gets is its own geometry measured honestly or an error with the run's output.
"""

from __future__ import annotations

import ast
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from tempering.sandbox import Limits

TCAD_SOURCE = (Path(__file__).with_name("tcad.py")).read_text()
API = ast.get_docstring(ast.parse(TCAD_SOURCE)).split("\n\n")[2]
"""tcad's API lines (its docstring's third paragraph), for prompts: the host never imports tcad."""
MAX_TRIANGLES = 200_000
LIMITS = Limits(wall_s=15.0, cpu_s=15.0, memory_mb=768, processes=16, disk_mb=64)

BUILD = f'''
import struct, sys, traceback
import tcad

def fail(kind, text):
    sys.stderr.write(f"{{kind}}: {{text}}\\n")
    sys.exit(3)

namespace = {{"__name__": "__main__"}}
try:
    exec(compile(open("part.py").read(), "part.py", "exec"), namespace)
except SystemExit:
    raise
except BaseException as e:
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == "part.py"]
    where = "".join(traceback.format_list(frames[-2:]))
    fail(type(e).__name__, f"{{e}}\\n{{where}}".rstrip())
result = namespace.get("result")
if result is None:
    fail("NoResult", "the script must assign the finished part to a variable named result")
if not isinstance(result, tcad.Part):
    fail("NotAPart", f"result is a {{type(result).__name__}}, not a part made with tcad (box(), cylinder(), ...)")
if result.solid.is_empty():
    fail("EmptyPart", "result is empty: the cuts removed all of it, or the parts of an intersection do not meet")
mesh = result.solid.to_mesh()
verts = mesh.vert_properties[:, :3].astype("<f4")
tris = mesh.tri_verts.astype("<u4")
if len(tris) > {MAX_TRIANGLES}:
    fail("TooComplex", f"the part has {{len(tris)}} triangles; the limit is {MAX_TRIANGLES}")
with open("part.mesh", "wb") as f:
    f.write(struct.pack("<II", len(verts), len(tris)) + verts.tobytes() + tris.tobytes())
'''

MEASURE = '''
import json, struct
import numpy as np
import manifold3d as m3
import tcad

def facts(solid):
    b = solid.bounding_box()
    bodies = solid.decompose()
    return {"volume": solid.volume(), "area": solid.surface_area(), "min": list(b[:3]),
            "size": [b[3] - b[0], b[4] - b[1], b[5] - b[2]], "bodies": len(bodies),
            "holes": sum(max(0, p.genus()) for p in bodies), "triangles": solid.num_tri()}

def load(data):
    if len(data) < 8:
        return None, "part.mesh is truncated"
    nv, nt = struct.unpack_from("<II", data)
    if len(data) != 8 + 12 * nv + 12 * nt:
        return None, "part.mesh has the wrong length for its header"
    verts = np.frombuffer(data, "<f4", 3 * nv, 8).reshape(-1, 3)
    tris = np.frombuffer(data, "<u4", 3 * nt, 8 + 12 * nv).reshape(-1, 3)
    if nt == 0 or not np.isfinite(verts).all() or int(tris.max()) >= nv:
        return None, "part.mesh holds no valid triangles"
    solid = m3.Manifold(m3.Mesh(vert_properties=np.array(verts, np.float32), tri_verts=np.array(tris, np.uint32)))
    status = solid.status()
    if status != m3.Error.NoError:
        return None, f"the mesh is not a closed solid ({status.name})"
    if solid.is_empty():
        return None, "the part is empty (nothing left after the cuts?)"
    return solid, ""

namespace = {"__name__": "target"}
try:
    exec(compile(open("target.py").read(), "target.py", "exec"), namespace)
    target = namespace["result"].solid
    assert not target.is_empty(), "the target part is empty"
except Exception as e:
    print(json.dumps({"target_error": f"{type(e).__name__}: {e}"}))
    raise SystemExit(0)
out = {"target": facts(target)}
part, problem = load(open("part.mesh", "rb").read())
if part is None:
    out.update(closed=False, problem=problem)
else:
    union = (part + target).volume()
    out.update(closed=True, part=facts(part), iou=(part ^ target).volume() / union if union > 0 else 0.0)
print(json.dumps(out))
'''


@dataclass(frozen=True)
class Measured:
    """What the tool says about one script: `error` (the script's own failure, for the
    model to read) or the facts of the part and the target, and their overlap."""

    status: str  # ok | script_error | timeout | memory | not_closed | tool_error | bad_task | sandbox_error
    error: str = ""
    part: dict | None = None
    target: dict | None = None
    iou: float = 0.0


def require_kernel() -> None:
    """Fail clearly, before any run, where the sandbox library lacks the geometry kernel."""
    from tempering.errors import SandboxUnavailable
    from tempering.sandbox.client import sandbox_library

    lib = sandbox_library()
    if lib is None or not any(Path(lib).glob("manifold3d*.so")) or not (Path(lib) / "numpy").is_dir():
        raise SandboxUnavailable(
            f"the CAD tool needs manifold3d and numpy in the sandbox library ({lib or 'none found'}): run "
            f"`make setup`, or `pip install --target {sys.prefix}/sandbox-lib manifold3d numpy` "
            f"(or point TEMPERING_SANDBOX_LIB at a directory holding them)")


def measure(script: str, target_script: str, sandbox) -> Measured:
    """Build `script` in the sandbox and measure its part against `target_script`'s."""
    require_kernel()
    built = sandbox.run(BUILD, files={"tcad.py": TCAD_SOURCE, "part.py": script}, limits=LIMITS,
                        fetch=["part.mesh"])
    if built.status != "ok":
        # sandbox_error is the sandbox's failure, not the script's (envs/infra.py)
        status = built.status if built.status in ("timeout", "memory", "sandbox_error") else "script_error"
        text = built.stderr.strip() or built.detail or built.status
        if built.status == "timeout":
            text = f"the script ran past the tool's time limit ({built.detail})"
        elif built.status == "memory":
            text = f"the script ran out of memory ({built.detail})"
        elif built.exit_code is not None and built.exit_code < 0:  # (no exit code: the sandbox failed)
            text = f"the CAD tool crashed (exit {built.exit_code}): {text}"
        return Measured(status, error=_tail(text))
    mesh = built.files.get("part.mesh")
    if mesh is None:
        return Measured("script_error", error="the script exited before the part was built (did it call exit()?)")
    got = sandbox.run(MEASURE, files={"tcad.py": TCAD_SOURCE, "part.mesh": mesh, "target.py": target_script},
                      limits=LIMITS)
    if got.status != "ok":
        return Measured("sandbox_error" if got.status == "sandbox_error" else "tool_error",
                        error=_tail(got.stderr.strip() or got.detail or got.status))
    facts = json.loads(got.stdout)
    if "target_error" in facts:
        return Measured("bad_task", error=f"the task's reference script does not build: {facts['target_error']}")
    if not facts["closed"]:
        return Measured("not_closed", error=facts["problem"], target=facts["target"])
    return Measured("ok", part=facts["part"], target=facts["target"], iou=facts["iou"])


def _tail(text: str, lines: int = 6, width: int = 300) -> str:
    return "\n".join(line[:width] for line in text.splitlines()[-lines:])
