"""Process accounting for the benchmarks: programs started (the kernel's process-events connector, root only) and
the CPU time of a process tree whose daemons (conmon) are reparented to this process (a child subreaper)."""

from __future__ import annotations

import collections
import ctypes
import os
import resource
import socket
import struct
import threading
from pathlib import Path

_NETLINK_CONNECTOR, _CN_IDX_PROC, _CN_VAL_PROC = 11, 1, 1
_PROC_CN_MCAST_LISTEN, _PROC_EVENT_EXEC, _NLMSG_DONE = 1, 2, 3
_NLMSG = struct.Struct("=IHHII")
_CN_MSG = struct.Struct("=IIIIHH")
_EVENT = struct.Struct("=IIQII")  # what, cpu, timestamp, then for an exec: pid, tgid
_PR_SET_CHILD_SUBREAPER = 36


class ExecCounter:
    """Counts the programs exec'd by name (`comm`) while `counting`, of this process's tree only (its
    descendants, orphans reparented to it included): other work on a shared machine is not counted."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.counting = False
        self._sock: socket.socket | None = None

    def start(self) -> bool:
        try:
            sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_CONNECTOR)
            sock.bind((0, _CN_IDX_PROC))
            op = struct.pack("=I", _PROC_CN_MCAST_LISTEN)
            cn = _CN_MSG.pack(_CN_IDX_PROC, _CN_VAL_PROC, 0, 0, len(op), 0) + op
            sock.send(_NLMSG.pack(_NLMSG.size + len(cn), _NLMSG_DONE, 0, 0, os.getpid()) + cn)
        except OSError:
            return False
        self._sock = sock
        threading.Thread(target=self._listen, daemon=True).start()
        return True

    def _listen(self) -> None:
        assert self._sock is not None
        while True:
            data = self._sock.recv(65536)
            offset = 0
            while offset + _NLMSG.size <= len(data):
                length = _NLMSG.unpack_from(data, offset)[0]
                event = offset + _NLMSG.size + _CN_MSG.size
                if event + _EVENT.size <= len(data):
                    what, _, _, _, tgid = _EVENT.unpack_from(data, event)
                    if what == _PROC_EVENT_EXEC and self.counting and _descends_from_us(tgid):
                        self.counts[_comm(tgid)] += 1
                offset += max(length, _NLMSG.size)


def _descends_from_us(pid: int) -> bool:
    me = os.getpid()
    for _ in range(64):
        if pid == me:
            return True
        if pid <= 1:
            return False
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def become_subreaper() -> None:
    """Orphans of our descendants (conmon double-forks) become our children: their CPU is counted when reaped."""
    ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def reap_orphans(keep: int) -> None:
    """Reap every ended child except `keep` (the service, which its Popen waits for)."""
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if info is None or info.si_pid == keep:
            return
        os.waitpid(info.si_pid, 0)


def tree_cpu_seconds(service_pid: int) -> float:
    """CPU of the service, of the children it waited for (podman calls) and of the orphans reaped here."""
    fields = Path(f"/proc/{service_pid}/stat").read_text().rsplit(")", 1)[1].split()
    own = sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own + reaped.ru_utime + reaped.ru_stime
