"""`temper sandbox serve`: one sandbox replica on uvicorn.

Loopback by default. Without a token (`--no-token`) it serves loopback only: anyone who
can reach a tokenless replica can run code on it (confined, but on your machine's CPU).
SIGTERM drains: the listening socket closes, requests already in flight finish (their
runs complete and are answered), new requests on open connections get 503, then the fork
server stops.
"""

from __future__ import annotations

import ipaddress
import os
import socket

from tempering.errors import ConfigError

from .admission import read_tokens


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(host: str = "127.0.0.1", port: int = 8080, workers: int = 4, token_file: str | None = None,
          no_token: bool = False, name: str | None = None, per_token: int = 0, queue: int = 256,
          max_request_mb: float = 16.0, log_level: str = "warning", ready_file: str | None = None) -> int:
    import uvicorn

    from tempering.sandbox import Sandbox

    from .app import Settings, create_app

    tokens = read_tokens(token_file, os.environ.get("TEMPERING_SANDBOX_TOKEN"))
    if not tokens and not no_token:
        raise ConfigError("no token: give --token-file FILE or set TEMPERING_SANDBOX_TOKEN, or pass --no-token "
                          "to serve without authentication (loopback only)")
    if tokens and no_token:
        raise ConfigError("--no-token was given but tokens were too (--token-file or TEMPERING_SANDBOX_TOKEN): "
                          "choose one")
    if no_token and not is_loopback(host):
        raise ConfigError(f"--no-token serves loopback only, but --host is {host}: give a token to serve "
                          "on other interfaces")
    if workers < 1 or queue < 0 or max_request_mb <= 0:
        raise ConfigError("--workers must be >= 1, --queue >= 0 and --max-request-mb > 0")
    sandbox = Sandbox(pool_size=workers).start()  # fails here, before the port opens, if it cannot isolate
    settings = Settings(tokens=tokens, name=name or f"{socket.gethostname()}:{port}", workers=workers,
                        per_token=per_token, queue=queue, max_request_bytes=int(max_request_mb * 2**20))
    app = create_app(settings, sandbox)
    service = app.state.service

    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame) -> None:
            service.draining = True
            super().handle_exit(sig, frame)
            # uvicorn re-raises the signal after its shutdown, which would kill this process
            # before the fork server is closed below; a drained replica exits 0 instead.
            self._captured_signals.clear()

        async def startup(self, sockets=None) -> None:
            await super().startup(sockets)
            if ready_file and self.started:  # tests and supervisors learn the bound port here
                port_now = self.servers[0].sockets[0].getsockname()[1]
                with open(ready_file + ".tmp", "w") as f:
                    f.write(f"{port_now}\n")
                os.replace(ready_file + ".tmp", ready_file)

    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, timeout_keep_alive=30,
                            limit_concurrency=None, lifespan="off")
    try:
        Server(config).run()
    finally:
        service.sessions.close_all()
        sandbox.close()
    return 0
