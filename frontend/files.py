"""Writing the files pase's tools produce, all or nothing.

    >>> write_atomically("strategy.json", "{}\n")   # doctest: +SKIP

The text goes to a temporary file beside `path` that is renamed into place, so a reader never
sees half a file and a failed run leaves an existing file as it was and no temporary behind.
"""

from __future__ import annotations

import os
import tempfile


def write_atomically(path: str, text: str) -> None:
    """Write `text` to `path` (UTF-8) by a rename; raises OSError, leaving nothing behind."""
    directory = os.path.dirname(os.path.abspath(path))
    with tempfile.NamedTemporaryFile("w", dir=directory, delete=False, prefix=".pase-",
                                     encoding="utf-8") as stream:
        temporary = stream.name
        try:
            stream.write(text)
        except BaseException:
            stream.close()
            os.unlink(temporary)
            raise
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
