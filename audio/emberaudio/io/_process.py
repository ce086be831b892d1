"""One FFmpeg decoding process: each output stream on a pipe of its own, stderr drained by a thread.

Reading is pulled by the caller (`read_some`), so FFmpeg runs only as far ahead as the pipes
hold: memory stays flat however long the source is. `poll` waits on every pipe at once, so a
full pipe that FFmpeg is blocked on is always read (no deadlock between outputs).
"""
import array
import collections
import fcntl
import mmap
import os
import select
import subprocess
import termios
import threading
import time

from .. import _ffmpeg

_PIPE_BYTES = 1 << 20  # bigger pipes: fewer wake-ups per decoded second
_F_SETPIPE_SZ = 1031
_F_GETPIPE_SZ = 1032
_HOLD_RECHECK_SECONDS = 0.01  # how often a held pipe's fill is checked


class DecodeProcess:
    def __init__(self, make_command, buffers, src_name, feed=None):
        """`make_command(pipe_names)` builds the argument list; `feed(stdin)` writes a file-like source."""
        self.buffers = buffers
        self.src_name = src_name
        self._stderr = collections.deque(maxlen=200)
        self._geometry = {}
        self._header_seen = threading.Condition()
        self._stderr_done = False
        self._readers = {}
        write_ends = []
        for index in range(len(buffers)):
            read_end, write_end = os.pipe()
            _grow_pipe(write_end)
            self._readers[read_end] = index
            write_ends.append(write_end)
        try:
            self.proc = subprocess.Popen(
                make_command([f"pipe:{fd}" for fd in write_ends]), pass_fds=write_ends,
                stdin=subprocess.PIPE if feed else subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        except BaseException:
            self._close_fds(list(self._readers))
            raise
        finally:
            self._close_fds(write_ends)  # the child holds them now; our copies would hide EOF
        self._threads = [threading.Thread(target=self._drain_stderr, daemon=True)]
        if feed:
            self._threads.append(threading.Thread(target=feed, args=(self.proc.stdin,), daemon=True))
        for thread in self._threads:
            thread.start()

    @staticmethod
    def _close_fds(fds):
        for fd in fds:
            os.close(fd)

    def _drain_stderr(self):
        output_section = False
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace").rstrip("\n")
            self._stderr.append(line)
            if line.startswith(("Input #", "Stream mapping")):
                output_section = False
            elif line.startswith("Output #"):
                output_section = True
            elif output_section and (parsed := _ffmpeg.parse_output_stream_line(line)):
                with self._header_seen:
                    self._geometry[parsed[0]] = parsed[1]
                    self._header_seen.notify_all()
        with self._header_seen:
            self._stderr_done = True
            self._header_seen.notify_all()

    def stderr_text(self):
        return "\n".join(self._stderr)

    def geometry(self, index):
        """What FFmpeg negotiated for output `index`: its channels (audio) or (width, height)
        (video); None when FFmpeg ended without describing it (it failed, or the output is empty).

        FFmpeg prints an output's header before it writes the first byte of it, so this waits only
        for the stderr thread to catch up."""
        with self._header_seen:
            self._header_seen.wait_for(lambda: index in self._geometry or self._stderr_done)
        return self._geometry.get(index)

    def has_ended(self, index):
        """Whether FFmpeg has finished writing output `index`."""
        return index not in self._readers.values()

    def read_some(self, timeout, learn_frame_shape):
        """Read what is ready on the pipes into the buffers. True once every pipe has ended."""
        if not self._readers:
            return True
        ready = self._wait_for_pipes(timeout)
        for fd in ready:
            index = self._readers[fd]
            if self.buffers[index].frame_shape is None and not learn_frame_shape(index):
                self._end_pipe(fd, expect_empty=True)
                continue
            if not self.buffers[index].read_from(fd):
                self._end_pipe(fd)
        if self._readers:
            return False
        self._finish()
        return True

    def _wait_for_pipes(self, timeout):
        """The pipes with data. A pipe whose buffer is full is held while another output has no
        chunk yet: FFmpeg runs its outputs in threads of their own, so one can be frames ahead of
        another, and reading it now would overflow its buffer (TorchAudio decodes every output
        in step). A held pipe is read anyway once it is nearly full, as FFmpeg may then be
        blocked writing it and unable to produce the other outputs."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            held = self._held_pipes()
            poller = select.poll()
            for fd in self._readers:
                if fd not in held:
                    poller.register(fd, select.POLLIN)
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if held:
                wait = _HOLD_RECHECK_SECONDS if wait is None else min(wait, _HOLD_RECHECK_SECONDS)
            ready = [fd for fd, _ in poller.poll(None if wait is None else wait * 1000)]
            if ready:
                return ready
            blocking = [fd for fd in held if _nearly_full(fd)]
            if blocking:
                return blocking
            if deadline is not None and time.monotonic() >= deadline:
                if held:
                    return sorted(held)  # data is there: an overflow beats a timeout
                raise TimeoutError(f"no data from FFmpeg for {self.src_name!r} within timeout={timeout} seconds")

    def _held_pipes(self):
        waiting = any(not self.buffers[index].is_ready() for index in self._readers.values())
        if not waiting:
            return set()
        return {fd for fd, index in self._readers.items() if self.buffers[index].is_full()}

    def _end_pipe(self, fd, expect_empty=False):
        index = self._readers.pop(fd)
        try:
            if expect_empty and os.read(fd, 1):
                raise RuntimeError(f"FFmpeg wrote output {index} of {self.src_name!r} without describing it")
        finally:
            os.close(fd)
        self.buffers[index].check_complete()

    def _finish(self):
        returncode = self.proc.wait()
        self._join_threads(timeout=None)
        if returncode != 0:
            raise RuntimeError(f"FFmpeg failed decoding {self.src_name!r} (exit code {returncode}): "
                               f"{_ffmpeg.error_lines(self.stderr_text())}")

    def close(self):
        """Stop FFmpeg (if still running), reap it and release every pipe; safe to call twice."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._close_fds(list(self._readers))
        self._readers.clear()
        self._join_threads(timeout=5)

    def _join_threads(self, timeout):
        for thread in self._threads:
            thread.join(timeout)
        self.proc.stderr.close()


def _nearly_full(fd):
    """Whether a writer may be blocked on pipe `fd`: less than two pages of it are free."""
    unread = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, unread)
    return unread[0] >= fcntl.fcntl(fd, _F_GETPIPE_SZ) - 2 * mmap.PAGESIZE


def _grow_pipe(fd):
    try:
        fcntl.fcntl(fd, _F_SETPIPE_SZ, _PIPE_BYTES)
    except OSError:
        pass  # over the system's pipe-max-size: the default size works, only slower

