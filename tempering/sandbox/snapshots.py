"""Snapshots of a session's workspace: copies made by a helper process forked from the
server that drops to the unprivileged host uid first, so a hostile workspace (links,
fifos, odd names) can't make it touch anything the sandboxed runs couldn't."""

from __future__ import annotations

import os
import socket

from . import filesystem, protocol, run


def start_copy(op: str, session: str, index: int, channel: socket.socket) -> int:
    """Snapshot (workspace -> snapshot `index`) or restore (the reverse) in a child
    process; it answers on `channel`. Returns the child's pid for the server to reap."""
    base = f"{filesystem.SESSIONS}/{session}"
    snap, ws = f"{base}/snap/{index}", f"{base}/ws"
    if op == "snapshot":
        cmds = [["/usr/bin/rm", "-rf", snap], ["/usr/bin/mkdir", snap], ["/usr/bin/cp", "-a", ws + "/.", snap]]
    else:
        cmds = [["/usr/bin/find", ws, "-mindepth", "1", "-delete"], ["/usr/bin/cp", "-a", snap + "/.", ws]]
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        run.close_fds_except([channel.fileno()])
        run.drop_to_host_uid()
        if op == "restore" and not os.path.isdir(snap):
            raise FileNotFoundError(f"no snapshot {index} in this session")
        for cmd in cmds:
            child = os.fork()
            if child == 0:
                os.execve(cmd[0], cmd, {"PATH": run.RUN_PATH, "LC_ALL": "C.UTF-8"})
            rc = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
            if rc != 0:
                raise OSError(f"{' '.join(cmd[:2])} exited with {rc}")
        protocol.send(channel, {"ok": True})
        code = 0
    except BaseException as e:  # noqa: BLE001 - the caller gets every failure
        try:
            protocol.send(channel, {"error": f"{type(e).__name__}: {e}"})
        except OSError:
            pass
    os._exit(code)
