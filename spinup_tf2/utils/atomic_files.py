"""Writing files so that a crash, Ctrl-C or kill at any moment leaves either the
old or the new version whole, never a mix: write under a temporary name, sync,
then rename into place."""

from __future__ import annotations

import os
import os.path as osp
import shutil


def write_text_atomically(path: str, text: str) -> None:
    """Replace the file ``path`` with ``text``."""
    with open(path + ".tmp", "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)


def fresh_tmp_dir(final_dir: str) -> str:
    """An empty ``final_dir + '.tmp'`` to write a new version of ``final_dir`` into."""
    tmp = final_dir + ".tmp"
    if osp.exists(tmp):
        shutil.rmtree(tmp)
    os.makedirs(tmp)
    return tmp


def replace_dir_atomically(tmp_dir: str, final_dir: str) -> None:
    """Put the finished ``tmp_dir`` in the place of ``final_dir``.

    The old directory is first renamed to ``final_dir + '.old'`` and removed
    only after the new one is in place, so at every moment one complete copy
    exists under one of the two names (see :func:`existing_checkpoint_dir`).
    """
    old = final_dir + ".old"
    if osp.exists(old):
        shutil.rmtree(old)
    if osp.exists(final_dir):
        os.rename(final_dir, old)
    os.rename(tmp_dir, final_dir)
    if osp.exists(old):
        shutil.rmtree(old)


def existing_checkpoint_dir(final_dir: str) -> str | None:
    """``final_dir`` if it exists, else the ``.old`` copy a kill between the two
    renames of :func:`replace_dir_atomically` leaves, else None."""
    for cand in (final_dir, final_dir + ".old"):
        if osp.isdir(cand):
            return cand
    return None


def check_writable_dir(path: str, what: str) -> None:
    """Raise :class:`SpinupError` unless ``path`` is, or can be made as, a directory
    this process may write in; ``what`` names it in the message (e.g. ``'--data_dir'``).
    Nothing is created: the nearest existing ancestor is what is checked."""
    from spinup_tf2.utils.errors import SpinupError

    probe = osp.abspath(path)
    while not osp.exists(probe):
        probe = osp.dirname(probe)
    if not osp.isdir(probe):
        raise SpinupError(f"{what} {path!r} cannot be a directory: {probe} is a file. Give "
                          f"a directory you can write in, e.g. --data_dir ~/spinup_data.")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise SpinupError(f"{what} {path!r} is not writable: this user may not write in "
                          f"{probe}. Give a directory you can write in, e.g. --data_dir "
                          f"~/spinup_data.")
