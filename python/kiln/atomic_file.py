"""Replacing files atomically, the Python side of src/program/atomic_file.h.

A file is written under a temporary name in its target's directory, synced, and renamed over
the target. A process that has the old file open or mapped keeps the old bytes (the rename
gives the path a new inode), whoever opens the path sees the old file or the complete new one,
and a failed write leaves the old file as it was and no temporary file behind.

    with AtomicFile("m.kiln") as f:      # the temporary is removed unless commit() ran
        f.write(header)
        f.write(payload)
        f.commit()

    write_file_atomically("out.json", text.encode())
    copy_file_atomically(source, "vocab.txt")

Standard library only (no torch, no numpy). Not thread-safe: one AtomicFile per thread.
"""
from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat

__all__ = ["AtomicFile", "write_file_atomically", "copy_file_atomically"]

# "." + name + ".tmp-" + 6 characters must fit one path component (NAME_MAX, 255 on Linux).
_MAX_NAME_PREFIX = 255 - 16


def _refuse_unless_regular(path: str, target: str) -> None:
    """A rename replaces whatever the name holds: a FIFO, a device node (as root, /dev/null
    itself) or a directory given as the output is refused, not turned into a regular file."""
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        kind = ("a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode)
                else "a character device" if stat.S_ISCHR(st.st_mode) else "a block device"
                if stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        raise IsADirectoryError(errno.EISDIR, f"it is {kind}, which Kiln does not replace", path) \
            if stat.S_ISDIR(st.st_mode) else OSError(errno.EINVAL, f"it is {kind}, which Kiln does not replace", path)


class AtomicFile:
    """A temporary file next to `path` that commit() renames over it.

    Its permissions are `mode` when given; otherwise those of the existing file, or for a new
    file what creating it directly gives (0666 less the umask), so replacing a file never
    changes who may read it. A symbolic link as `path` is followed: the file it names is
    replaced, as writing through the link would. Errors are OSError naming `path`.
    """

    def __init__(self, path: str | os.PathLike, mode: int | None = None):
        self.path = os.fspath(path)
        target = os.path.realpath(self.path) if os.path.islink(self.path) else self.path
        self._target = target
        _refuse_unless_regular(self.path, target)
        if mode is None:
            try:
                st = os.stat(target)
            except FileNotFoundError:
                pass
            else:
                if stat.S_ISREG(st.st_mode):
                    mode = stat.S_IMODE(st.st_mode)
        directory, name = os.path.split(target)
        fd = -1
        for _ in range(100):
            temp = os.path.join(directory, f".{name[:_MAX_NAME_PREFIX]}.tmp-{secrets.token_hex(3)}")
            try:
                # 0666 through the umask: the mode a new target would get from open().
                fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
                break
            except FileExistsError:
                continue
            except OSError as e:
                raise OSError(e.errno, f"cannot create a temporary file next to it ({e.strerror})",
                              self.path) from e
        if fd < 0:
            raise FileExistsError(f"{self.path}: no free temporary file name in its directory")
        self._temp: str | None = temp
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            self._file = os.fdopen(fd, "wb")
        except BaseException:
            os.close(fd)
            os.unlink(temp)
            self._temp = None
            raise

    @property
    def temp_path(self) -> str | None:
        """The temporary file's path (None once committed or discarded)."""
        return self._temp

    def write(self, data) -> int:
        """Appends bytes (any buffer) to the temporary file."""
        return self._file.write(data)

    def sync(self) -> None:
        """Forces the written bytes to the disk and closes the temporary file, so that commit()
        cannot fail on the data; callers replacing several files sync all before renaming any."""
        if self._file.closed:
            return
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
        finally:
            self._file.close()

    def commit(self) -> None:
        """Renames the temporary file over the target (after sync()). On failure the temporary
        file is removed and the target is untouched."""
        if self._temp is None:
            raise ValueError(f"{self.path}: nothing to commit (already committed or discarded)")
        try:
            self.sync()
            _refuse_unless_regular(self.path, self._target)  # again: the rename would replace anything
            os.replace(self._temp, self._target)
        except BaseException:
            self.discard()
            raise
        self._temp = None
        # The directory entry reaches the disk with the directory. The new file is in place
        # whatever this does, so a failure is not reported.
        try:
            dir_fd = os.open(os.path.dirname(self._target) or ".", os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return
        try:
            os.fsync(dir_fd)
        except OSError:
            pass
        finally:
            os.close(dir_fd)

    def discard(self) -> None:
        """Closes and removes the temporary file; a no-op after commit()."""
        self._file.close()
        if self._temp is not None:
            try:
                os.unlink(self._temp)
            except FileNotFoundError:
                pass
            self._temp = None

    def __enter__(self) -> AtomicFile:
        return self

    def __exit__(self, *exc) -> None:
        self.discard()


def write_file_atomically(path: str | os.PathLike, data, mode: int | None = None) -> None:
    """Replaces `path` with `data` (bytes or any buffer) through an AtomicFile."""
    with AtomicFile(path, mode) as f:
        f.write(data)
        f.commit()


def copy_file_atomically(source: str | os.PathLike, path: str | os.PathLike) -> None:
    """Replaces `path` with a copy of the file `source` through an AtomicFile."""
    with open(source, "rb") as src, AtomicFile(path) as f:
        shutil.copyfileobj(src, f)
        f.commit()
