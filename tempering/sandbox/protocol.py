"""Length-prefixed JSON frames between the caller, the fork server and each run's monitor.
Bytes travel base64-encoded; nothing is ever unpickled."""

from __future__ import annotations

import base64
import json
import socket
import struct

MAX_FRAME = 512 * 2**20


def send(sock: socket.socket, obj: dict) -> None:
    raw = json.dumps(obj, separators=(",", ":")).encode()
    sock.sendall(struct.pack("!I", len(raw)) + raw)


def reply(sock: socket.socket | None, obj: dict) -> None:
    """`send`, for answers whose reader may be gone already (or never was: None)."""
    if sock is None:
        return
    try:
        send(sock, obj)
    except OSError:
        pass


def send_fd(fd: int, obj: dict) -> None:
    """`send` on a bare file descriptor."""
    import os

    raw = json.dumps(obj, separators=(",", ":")).encode()
    view = memoryview(struct.pack("!I", len(raw)) + raw)
    while view:
        view = view[os.write(fd, view):]


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    parts, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise EOFError("channel closed")
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def recv(sock: socket.socket) -> dict:
    (n,) = struct.unpack("!I", _recv_exact(sock, 4))
    if n > MAX_FRAME:
        raise ValueError(f"frame of {n} bytes is larger than {MAX_FRAME}")
    return json.loads(_recv_exact(sock, n))


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unb64(text: str) -> bytes:
    return base64.b64decode(text)
