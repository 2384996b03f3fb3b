"""The command server of a sandbox's PID 1 (`sandbox-init`): requests in frames, commands spawned, killed and
swept, each command's exit code reported. `Server(relay=True)` also relays a command's stdio in frames (Kubernetes),
otherwise the command runs on the pipes passed with its request (Podman)."""
import errno
import json
import os
import selectors
import signal
import struct
import time

HEADER = struct.Struct("!BII")  # kind, command id, payload length
SPAWN, KILL, SWEEP, DATA, EOF = 1, 2, 3, 4, 5  # host -> box
EXIT, SWEPT, OUT, ERR, FAIL, HELLO = 16, 17, 18, 19, 20, 21  # box -> host
MAX_FRAME = 1 << 20
CHUNK = 65536
DRAIN_AFTER_EXIT = 1 << 20  # output still read once a command exited: what it wrote before (a pipe's worth)
# Right after a fork bomb the pids limit refuses a spawn until the killed processes are reaped, which a busy
# machine delays: retry, reaping, for this long (the sweep's own wait is bounded by the host's SANDBOX_SWEEP_REAP_S).
SPAWN_RETRY_S = 5.0
# Input relayed to a command that does not read it waits here (--serve): a command leaving more than this unread
# is killed, saying so, rather than growing this process to the box's memory limit. The host sends its own bound
# (SANDBOX_STDIN_PENDING_BYTES) with each request; this is the default.
STDIN_PENDING_MAX = 64 << 20


def frame(kind, ident, payload=b""):
    return HEADER.pack(kind, ident, len(payload)) + payload


def reap_one():
    """(pid, exit code) of one ended child, or None."""
    try:
        pid, status = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return None
    if pid == 0:
        return None
    code = os.waitstatus_to_exitcode(status)
    return pid, (128 - code if code < 0 else code)


class Server:
    """Spawns, kills and sweeps on request; reports each command's exit code."""

    def __init__(self, send, relay):
        self.send, self.relay = send, relay  # relay: stdio goes through frames (--serve), not passed pipes
        self.pids = {}  # pid -> command id
        self.procs = {}  # command id -> pid
        self.sel = selectors.DefaultSelector()
        self.outputs = {}  # command id -> {fd: kind}
        self.stdin = {}  # command id -> [fd, pending bytes, eof wanted]
        self.stdin_max = {}  # command id -> bytes it may leave unread

    def handle(self, kind, ident, payload, fds):
        if kind == SPAWN:
            request = json.loads(payload)
            if request.get("sweep_s"):
                self.sweep(float(request["sweep_s"]))
            self.stdin_max[ident] = int(request.get("stdin_max") or STDIN_PENDING_MAX)
            self.spawn(ident, [str(a) for a in request["argv"]], bool(request.get("stdin")), fds)
        elif kind == KILL:
            if ident in self.procs:
                with_suppressed(os.killpg, self.procs[ident], signal.SIGKILL)
        elif kind == SWEEP:
            self.sweep(float(json.loads(payload)["sweep_s"]))
            self.send(frame(SWEPT, ident))
        elif kind in (DATA, EOF) and self.relay:
            self.feed(ident, payload, kind == EOF)
        else:
            raise ValueError(f"unknown request kind {kind}")

    def spawn(self, ident, argv, stdin, passed):
        """Start `argv` on the pipes passed with its request (the caller closes those) or on relayed ones."""
        if not self.relay and len(passed) != (3 if stdin else 2):
            raise ValueError("a spawn request without its pipes")
        opened = self.relay_pipes(ident, stdin) if self.relay else []
        if not stdin:
            opened.insert(0, os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC))
        fds = opened + list(passed) if not self.relay else opened
        try:
            pid = self.spawn_retrying(argv, fds)
        except OSError as exc:
            with_suppressed(os.write, fds[2], f"sandbox: cannot start {argv[0]}: {exc.strerror}\n".encode())
            self.finish(ident, 127 if exc.errno == errno.ENOENT else 126)
            return
        finally:
            for fd in opened:
                os.close(fd)
        self.pids[pid], self.procs[ident] = ident, pid

    def spawn_retrying(self, argv, fds):
        actions = [(os.POSIX_SPAWN_DUP2, fd, i) for i, fd in enumerate(fds)]
        deadline = time.monotonic() + SPAWN_RETRY_S
        while True:
            try:
                return os.posix_spawnp(argv[0], argv, os.environ, file_actions=actions, setsid=True)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise
                self.reap()
                time.sleep(0.01)

    def relay_pipes(self, ident, stdin):
        """The command's end of three pipes whose other ends this server relays in frames."""
        mine = {}
        fds = []
        if stdin:
            r, w = os.pipe2(os.O_CLOEXEC)
            os.set_blocking(w, False)
            self.stdin[ident] = [w, bytearray(), False]
            fds.append(r)
        for kind in (OUT, ERR):
            r, w = os.pipe2(os.O_CLOEXEC)
            os.set_blocking(r, False)
            mine[r] = kind
            self.sel.register(r, selectors.EVENT_READ, ("out", ident))
            fds.append(w)
        self.outputs[ident] = mine
        return fds

    def feed(self, ident, data, eof):
        state = self.stdin.get(ident)
        if state is None:
            return  # the command ended: what was still coming for it is dropped
        state[1] += data
        state[2] = state[2] or eof
        self.push(ident)
        if ident in self.stdin and len(self.stdin[ident][1]) > self.stdin_max.get(ident, STDIN_PENDING_MAX):
            self.overfed(ident)

    def overfed(self, ident):
        """Kill a command that left more input unread than it may; its stderr says why."""
        self.send(frame(ERR, ident, f"sandbox: input left unread beyond {self.stdin_max.get(ident)} bytes; "
                                    "the command was killed\n".encode()))
        self.stdin[ident][1:] = [bytearray(), True]
        self.push(ident)
        if ident in self.procs:
            with_suppressed(os.killpg, self.procs[ident], signal.SIGKILL)

    def push(self, ident):
        fd, pending, eof = self.stdin[ident]
        try:
            while pending:
                del pending[: os.write(fd, pending[:CHUNK])]  # a bytearray drops its head without a copy
        except BlockingIOError:
            pass
        except OSError:  # the command closed its stdin: drop the rest
            pending.clear()
            eof = self.stdin[ident][2] = True
        events = selectors.EVENT_WRITE if pending else 0
        registered = fd in self.sel.get_map()
        if registered and not events:
            self.sel.unregister(fd)
        elif events and not registered:
            self.sel.register(fd, events, ("in", ident))
        if eof and not pending:
            del self.stdin[ident]
            os.close(fd)

    def relay_output(self, fd, ident, limit):
        """Relay up to `limit` bytes of a command's output; at its end of file, end the stream."""
        kind = self.outputs[ident][fd]
        while limit > 0:
            try:
                data = os.read(fd, min(CHUNK, limit))
            except BlockingIOError:
                return
            limit -= len(data)
            self.send(frame(kind, ident, data))
            if not data:
                self.sel.unregister(fd)
                os.close(fd)
                del self.outputs[ident][fd]
                return

    def reap(self):
        while (ended := reap_one()) is not None:
            ident = self.pids.pop(ended[0], None)
            if ident is not None:
                del self.procs[ident]
                self.finish(ident, ended[1])

    def finish(self, ident, code):
        for fd in list(self.outputs.get(ident, ())):
            if fd in self.outputs[ident]:
                self.relay_output(fd, ident, DRAIN_AFTER_EXIT)
            if fd in self.outputs[ident]:  # still open (a background process holds it): end it here
                self.send(frame(self.outputs[ident].pop(fd), ident))
                self.sel.unregister(fd)
                os.close(fd)
        self.outputs.pop(ident, None)
        self.stdin_max.pop(ident, None)
        if ident in self.stdin:
            fd = self.stdin.pop(ident)[0]
            if fd in self.sel.get_map():
                self.sel.unregister(fd)
            os.close(fd)
        self.send(frame(EXIT, ident, json.dumps({"code": code}).encode()))

    def sweep(self, bound_s):
        """Kill every process but PID 1 and this one, then wait (at most `bound_s`) until they are gone: the pids
        limit counts a killed process until it is reaped."""
        with_suppressed(os.kill, -1, signal.SIGKILL)
        deadline = time.monotonic() + bound_s
        while time.monotonic() < deadline:
            self.reap()
            if len([p for p in os.listdir("/proc") if p.isdigit()]) <= (1 if os.getpid() == 1 else 2):
                return
            time.sleep(0.001)


def refused(server, kind, ident, payload, fds):
    """Handle one request; one no host sends ends the channel, after a FAIL frame saying why."""
    try:
        server.handle(kind, ident, payload, fds)
    except (ValueError, KeyError, TypeError) as exc:
        server.send(frame(FAIL, ident, json.dumps({"error": f"malformed request: {exc}"}).encode()))
        raise SystemExit(2) from None


def with_suppressed(fn, *args):
    try:
        fn(*args)
    except OSError:
        pass


class Frames:
    """Splits a byte stream into frames; ValueError on one no host would send."""

    def __init__(self):
        self.buffer = bytearray()

    def feed(self, data):
        self.buffer += data
        while len(self.buffer) >= HEADER.size:
            kind, ident, size = HEADER.unpack_from(self.buffer)
            if size > MAX_FRAME:
                raise ValueError(f"a frame of {size} bytes")
            if len(self.buffer) < HEADER.size + size:
                return
            payload = bytes(self.buffer[HEADER.size : HEADER.size + size])
            del self.buffer[: HEADER.size + size]
            yield kind, ident, payload
