"""ggdb.py — graphgate's SQLite database opened from a test, as graphgate opens it for SQL:
with history_text(body), which reads a history_batches body whatever its stored form (a zstd
frame since migration 0020, or the text of older rows), so the executions view works.

    import ggdb; db = ggdb.connect(path)        # read-only; ggdb.connect(path, ro=False)
    python3 ggdb.py bodies DB                   # every history body's text, one after another

lib.sh puts this folder on PYTHONPATH. zstd is reached through ctypes (libzstd.so.1, which
graphgate links), so no Python package is needed."""
import ctypes
import ctypes.util
import sqlite3
import sys

_z = ctypes.CDLL(ctypes.util.find_library("zstd") or "libzstd.so.1")
_z.ZSTD_getFrameContentSize.restype = ctypes.c_ulonglong
_z.ZSTD_getFrameContentSize.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
_z.ZSTD_decompress.restype = ctypes.c_size_t
_z.ZSTD_decompress.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
_z.ZSTD_isError.restype = ctypes.c_uint
_z.ZSTD_isError.argtypes = [ctypes.c_size_t]
_UNKNOWN_OR_ERROR = (2**64 - 1, 2**64 - 2)


def history_text(body):
    """A body's text: bytes are one zstd frame (ValueError when not), text is returned as is."""
    if not isinstance(body, (bytes, bytearray)):
        return body
    body = bytes(body)
    n = _z.ZSTD_getFrameContentSize(body, len(body))
    if n in _UNKNOWN_OR_ERROR or n > 1_000_000_000:
        raise ValueError("not a zstd frame with its size")
    out = ctypes.create_string_buffer(n + 1)
    got = _z.ZSTD_decompress(out, n, body, len(body))
    if _z.ZSTD_isError(got) or got != n:
        raise ValueError("a malformed zstd frame")
    return out.raw[:n].decode("utf-8")


def connect(path, ro=True):
    db = sqlite3.connect("file:%s?mode=ro" % path if ro else path, uri=ro)
    db.create_function("history_text", 1, history_text, deterministic=True)
    return db


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "bodies":
    db = connect(sys.argv[2])
    try:
        for (text,) in db.execute("SELECT history_text(body) FROM history_batches"):
            sys.stdout.write(text)
    except sqlite3.OperationalError as e:  # not a graphgate database (no history_batches)
        if "no such table" not in str(e):
            raise
elif __name__ == "__main__":
    sys.exit("usage: python3 ggdb.py bodies DB")
