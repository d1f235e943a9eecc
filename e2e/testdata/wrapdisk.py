# nbdkit python plugin: a fake card's disk. It claims size= bytes, but
# only the first real= bytes are stored (in file=). With mode=wrap (the
# default) a read or write at byte offset o lands on o mod real, so writes
# past real wrap around onto the start, as on a counterfeit card of that
# kind; with mode=unreadable writes past real are lost and reads there
# fail with EIO, as the cards of f3's issues 86 and 228.
#
#   nbdkit --unix SOCK python wrapdisk.py file=BACKING size=BYTES real=BYTES [mode=wrap|unreadable]
import errno
import os

import nbdkit

API_VERSION = 2

path = None
size = None
real = None
mode = "wrap"


def config(key, value):
    global path, size, real, mode
    if key == "file":
        path = value
    elif key == "size":
        size = int(value)
    elif key == "real":
        real = int(value)
    elif key == "mode" and value in ("wrap", "unreadable"):
        mode = value
    else:
        raise RuntimeError("unknown parameter " + key)


def config_complete():
    if path is None or size is None or real is None:
        raise RuntimeError("file=, size= and real= are required")
    if real <= 0 or real > size:
        raise RuntimeError("real= must be between 1 and size=")


def open(readonly):
    return os.open(path, os.O_RDONLY if readonly else os.O_RDWR)


def get_size(h):
    return size


def pieces(offset, n):
    pos = 0
    while pos < n:
        at = (offset + pos) % real
        k = min(n - pos, real - at)
        yield pos, at, k
        pos += k


def pread(h, buf, offset, flags):
    if mode == "unreadable" and offset + len(buf) > real:
        nbdkit.set_error(errno.EIO)
        raise OSError(errno.EIO, "unreadable past the real size")
    for pos, at, k in pieces(offset, len(buf)):
        data = os.pread(h, k, at)
        buf[pos:pos + len(data)] = data
        if len(data) < k:
            buf[pos + len(data):pos + k] = bytes(k - len(data))


def pwrite(h, buf, offset, flags):
    view = memoryview(buf)
    if mode == "unreadable":
        end = min(offset + len(buf), real)
        if offset < end:
            os.pwrite(h, view[:end - offset], offset)
        return
    for pos, at, k in pieces(offset, len(buf)):
        os.pwrite(h, view[pos:pos + k], at)


def flush(h, flags):
    os.fsync(h)


def close(h):
    os.close(h)
