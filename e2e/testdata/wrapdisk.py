# nbdkit python plugin: a fake card's disk. It claims size= bytes, but
# only the first real= bytes are stored (in file=): a read or write at
# byte offset o lands on o mod real, so writes past real wrap around onto
# the start, as on a counterfeit card of that kind.
#
#   nbdkit --unix SOCK python wrapdisk.py file=BACKING size=BYTES real=BYTES
import os

API_VERSION = 2

path = None
size = None
real = None


def config(key, value):
    global path, size, real
    if key == "file":
        path = value
    elif key == "size":
        size = int(value)
    elif key == "real":
        real = int(value)
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
    for pos, at, k in pieces(offset, len(buf)):
        data = os.pread(h, k, at)
        buf[pos:pos + len(data)] = data
        if len(data) < k:
            buf[pos + len(data):pos + k] = bytes(k - len(data))


def pwrite(h, buf, offset, flags):
    view = memoryview(buf)
    for pos, at, k in pieces(offset, len(buf)):
        os.pwrite(h, view[pos:pos + k], at)


def flush(h, flags):
    os.fsync(h)


def close(h):
    os.close(h)
