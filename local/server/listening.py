"""The listening socket of `chatguard serve`, in a module that imports nothing heavy: the
command binds it before the runtime starts, so a taken port is reported at once."""

from __future__ import annotations

import socket

BACKLOG = 2048  # connections the kernel queues before we accept them


def listen(address: tuple[str, int]) -> socket.socket:
    """A listening socket with a real backlog; port 0 = a free port."""
    host, port = address
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock
