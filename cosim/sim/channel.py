"""Length-prefixed pickled messages over a pair of pipes (the client and the co-simulation server).

The server finds its ends in ``VTA_COSIM_FDS`` ("<read fd>,<write fd>"). ``recv`` returns None when
the other side has closed its end (it exited, or it is shutting the server down).
"""

from __future__ import annotations

import os
import pickle
import struct
from typing import Any

__all__ = ["Channel", "FDS_ENV"]

FDS_ENV = "VTA_COSIM_FDS"
_HEADER = struct.Struct("<Q")


class Channel:
    def __init__(self, read_fd: int, write_fd: int):
        self.read_fd, self.write_fd = read_fd, write_fd

    @classmethod
    def from_env(cls) -> Channel:
        r, w = (int(x) for x in os.environ[FDS_ENV].split(","))
        return cls(r, w)

    def send(self, message: object) -> None:
        data = pickle.dumps(message)
        view = memoryview(_HEADER.pack(len(data)) + data)
        while view:
            view = view[os.write(self.write_fd, view):]

    def recv(self) -> Any:
        header = self._read(_HEADER.size)
        if header is None:
            return None
        body = self._read(_HEADER.unpack(header)[0])
        return None if body is None else pickle.loads(body)

    def _read(self, n: int):
        parts, left = [], n
        while left:
            chunk = os.read(self.read_fd, left)
            if not chunk:
                return None
            parts.append(chunk)
            left -= len(chunk)
        return b"".join(parts)

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            try:
                os.close(fd)
            except OSError:
                pass
