"""The run directory: every file a run writes, how it is written, and how it is read back.

One run's output directory holds::

    config.json        the arguments of sac() (written once, at the start)
    progress.txt       one tab-separated row per epoch (appended, synced per row)
    tf2_save/          the SavedModel of the policy (tf2_save<N>/ with numbered saves)
    vars.pkl           the pickled environment, when it pickles (vars<N>.pkl)
    train_state/       the training checkpoint that --resume continues from
    tb/                TensorBoard scalars (tensorboard=True)
    videos/            epoch_<N>.mp4 (video_freq > 0)
    stdout.txt         the run's output, when a sweep runs it in the background

Everything else in the package asks this module for those names, writers and readers.
Writes are atomic: a file or folder is written under its temporary name (:func:`tmp_name`:
``.tmp`` before the suffix, e.g. ``config.tmp.json``, ``tf2_save.tmp``), synced, then renamed
into place, so a crash, Ctrl-C or kill at any moment leaves the old version or the
new one, whole. A folder being replaced keeps its previous version under its name plus
:data:`OLD` until the new one is in place; the readers fall back to it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import io
import json
import os
import os.path as osp
import re
import shutil
import socket
import stat
import string
import time

from spinup_tf2.errors import SpinupError, colorize

PROGRESS = "progress.txt"
CONFIG = "config.json"
TF2_SAVE = "tf2_save"
TRAIN_STATE = "train_state"
TENSORBOARD = "tb"
VIDEOS = "videos"
STDOUT = "stdout.txt"
ENV_STATE = "env_state.json"  # the training env's wrapper statistics (NormalizeObservation)
TRACKER_IDS = "trackers.json"  # each experiment tracker's run id (--track), for --resume
WANDB = "wandb"  # W&B's own run folders (--track wandb)

TMP = ".tmp"  # the one temporary-name mark, before the suffix (see tmp_name)
OLD = ".old"  # a replaced folder's previous version, until the new one is in place

# Exactly what a run writes (and overwrite=True removes): these names, with or without a
# number (tf2_save3, vars3.pkl), as temporary or old versions too; nothing else.
_RUN_FILE = re.compile(r"^(progress(\.tmp)?\.txt|(config|env_state|trackers)(\.tmp)?\.json"
                       r"|vars\d*(\.tmp)?\.pkl"
                       r"|(tf2_save\d*|train_state|tb|videos|wandb)(\.tmp|\.old)?)$")


# ---- Writing -------------------------------------------------------------------------------

def tmp_name(path: str, shared: bool = False) -> str:
    """Where ``path``'s next version is written before it is renamed into place: ``.tmp``
    before the suffix (``config.tmp.json``, ``epoch_1.tmp.mp4``, ``tf2_save.tmp``), so
    writers that go by the suffix (video encoders) still know the format. A file that
    several processes may write at once (``shared``: a study's tables, which every driver of
    the study rewrites) has the process id after ``.tmp``, so that no writer removes or
    renames another's temporary file."""
    stem, ext = osp.splitext(path)
    return stem + TMP + (str(os.getpid()) if shared else "") + ext


def write_text(path: str, text: str, shared: bool = False) -> None:
    """Replace the file ``path`` with ``text``, atomically (``shared``: see
    :func:`tmp_name`)."""
    write_bytes(path, text.encode("utf-8"), shared)


def write_bytes(path: str, data: bytes, shared: bool = False) -> None:
    """Replace the file ``path`` with ``data``, atomically (``shared``: see
    :func:`tmp_name`)."""
    with atomic_file(path, shared) as tmp, open(tmp, "wb") as f:
        f.write(data)


@contextlib.contextmanager
def atomic_file(path: str, shared: bool = False):
    """Yield the temporary path to write ``path``'s new version to (by any writer:
    joblib, a video encoder, a converter); on success it is synced and renamed into
    place, on an exception it is removed and ``path`` is left as it was. With ``shared``,
    several processes may write ``path`` at once: the last rename wins, each version whole
    (:func:`tmp_name`)."""
    tmp = tmp_name(path, shared)
    _remove(tmp)
    try:
        yield tmp
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        _remove(tmp)


@contextlib.contextmanager
def atomic_dir(path: str):
    """Yield an empty temporary folder to write ``path``'s new version into; on success
    it takes ``path``'s place (see :func:`existing_dir` for the moment in between), on an
    exception it is removed."""
    tmp = tmp_name(path)
    _remove(tmp)
    os.makedirs(tmp)
    try:
        yield tmp
        for root, _, files in os.walk(tmp):  # on disk before the rename makes them current
            for name in files:
                with open(osp.join(root, name), "rb") as f:
                    os.fsync(f.fileno())
        old = path + OLD
        _remove(old)
        if osp.exists(path):
            os.rename(path, old)
        os.rename(tmp, path)
        _remove(old)
    finally:
        _remove(tmp)


def existing_dir(path: str) -> str | None:
    """``path`` if it is a folder, else the previous version a kill between the two
    renames of :func:`atomic_dir` leaves (``path`` + OLD), else None."""
    for cand in (path, path + OLD):
        if osp.isdir(cand):
            return cand
    return None


def _remove(path: str) -> None:
    if osp.isdir(path) and not osp.islink(path):
        shutil.rmtree(path)
    elif osp.lexists(path):
        os.remove(path)


# ---- Names ---------------------------------------------------------------------------------

def tf2_save_dir(run_dir: str, itr: int | None = None) -> str:
    """The SavedModel folder: ``tf2_save`` or, numbered, ``tf2_save<itr>``."""
    return osp.join(run_dir, TF2_SAVE + ("" if itr is None else str(itr)))


def vars_path(run_dir: str, itr: int | str | None = None) -> str:
    """The pickled environment: ``vars.pkl`` or ``vars<itr>.pkl``."""
    return osp.join(run_dir, f"vars{'' if itr is None else itr}.pkl")


def video_path(run_dir: str, epoch: int) -> str:
    """The video of the policy after ``epoch``: ``videos/epoch_<epoch>.mp4``."""
    return osp.join(run_dir, VIDEOS, f"epoch_{epoch}.mp4")


def output_dir_for(exp_name: str, seed: int | None = None, data_dir: str | None = None,
                   datestamp: bool = False) -> str:
    """Where a run of ``exp_name`` with ``seed`` goes (Spinning Up's naming):

    - no seed: ``data_dir/exp_name``
    - a seed: ``data_dir/exp_name/exp_name_s<seed>``
    - a seed and datestamp:
      ``data_dir/YYYY-MM-DD_exp_name/YYYY-MM-DD_HH-MM-SS-exp_name_s<seed>``

    ``data_dir`` defaults to ``DEFAULT_DATA_DIR``, and ``FORCE_DATESTAMP`` turns the
    datestamp on (:mod:`spinup_tf2.user_config`).
    """
    from spinup_tf2.user_config import DEFAULT_DATA_DIR, FORCE_DATESTAMP

    check_exp_name(exp_name)
    datestamp = datestamp or FORCE_DATESTAMP
    relpath = (time.strftime("%Y-%m-%d_") if datestamp else "") + exp_name
    if seed is not None:
        stamp = time.strftime("%Y-%m-%d_%H-%M-%S") + "-" if datestamp else ""
        relpath = osp.join(relpath, f"{stamp}{exp_name}_s{seed}")
    if data_dir is not None and not str(data_dir).strip():
        check_writable_dir(data_dir, "data_dir")  # '' is not "the default": refused
    return osp.join(data_dir or DEFAULT_DATA_DIR, relpath)


def new_run_dir(exp_name: str | None = None, data_dir: str | None = None) -> str:
    """A new, empty directory for a run that was given no output directory (``sac()`` from
    Python without ``logger_kwargs['output_dir']``):
    ``data_dir/<exp_name>/<exp_name>_<YYYY-MM-DD_HH-MM-SS>``, with ``-2``, ``-3``, ... when
    that exists. Made here, exclusively, so that runs started in the same second by
    different processes get different directories. ``exp_name`` defaults to ``sac``."""
    from spinup_tf2.user_config import DEFAULT_DATA_DIR

    name = exp_name or "sac"
    check_exp_name(name)
    parent = osp.join(data_dir or DEFAULT_DATA_DIR, name)
    check_writable_dir(parent, "The data directory")
    os.makedirs(parent, exist_ok=True)
    base = osp.join(parent, f"{name}_{time.strftime('%Y-%m-%d_%H-%M-%S')}")
    path, n = base, 1
    while True:
        try:
            os.mkdir(path)
            return path
        except FileExistsError:
            n += 1
            path = f"{base}-{n}"


def check_exp_name(exp_name) -> None:
    """Raise :class:`SpinupError` unless ``exp_name`` is a plain name for a
    directory: not empty, no path separator or control character (a newline would split
    every listing and table that shows it), not ``.`` or ``..``."""
    seps = {"/", os.sep} | ({os.altsep} if os.altsep else set())
    if (not isinstance(exp_name, str) or not exp_name.strip() or exp_name in (".", "..")
            or any(s in exp_name for s in seps)
            or any(ord(c) < 32 or ord(c) == 127 for c in exp_name)):
        raise SpinupError(f"exp_name={exp_name!r} is not a plain name: the experiment name "
                          f"becomes a directory inside the data directory, so it must be "
                          f"non-empty, without '/' or control characters (newlines, tabs) and "
                          f"not '.' or '..', e.g. --exp_name pendulum. Put runs elsewhere with "
                          f"--data_dir.")
    if len(exp_name.encode("utf-8")) > MAX_EXP_NAME:
        raise SpinupError(f"exp_name of {len(exp_name.encode('utf-8'))} bytes "
                          f"({exp_name[:40]!r}...) is too long: it becomes a folder name, which "
                          f"holds at most 255 bytes with the seed and date a run adds (_s<seed>, "
                          f"YYYY-MM-DD_HH-MM-SS-), so exp_name may have at most {MAX_EXP_NAME}. "
                          f"Give a shorter --exp_name. Nothing was written.")


# The longest exp_name: a folder name holds 255 bytes, and a run adds a date and a seed.
MAX_EXP_NAME = 200


def name_fragment(v) -> str:
    """A value as a fragment of a directory name: a named object gives its
    ``__name__``, a list or tuple its items joined by ``-``; the result is
    lowercased and every character outside ``[-_A-Za-z0-9]`` becomes ``-``."""
    if hasattr(v, "__name__"):
        return name_fragment(v.__name__)
    if isinstance(v, (tuple, list)):
        return "-".join(name_fragment(x) for x in v)
    allowed = set("-_" + string.ascii_letters + string.digits)
    return "".join(c if c in allowed else "-" for c in str(v).lower())


# ---- Reading -------------------------------------------------------------------------------

def read_config(run_dir: str) -> dict | None:
    """The run's config.json as a dict; None if the run has none. A config.json that
    cannot be read, is not JSON or is not a JSON object is a :class:`SpinupError`
    naming the file: a run directory is never half-trusted."""
    path = osp.join(run_dir, CONFIG)
    if not osp.exists(path):
        return None
    check_file(path)
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError) as err:
        raise SpinupError(f"{path} cannot be read as JSON ({type(err).__name__}: "
                          f"{str(err)[:160]}): it was cut short or edited by hand. Restore it, "
                          f"or remove it and give what it held on the command line.") from None
    if not isinstance(config, dict):
        raise SpinupError(f"{path} holds a JSON {type(config).__name__}, not the object of "
                          f"sac()'s arguments that a run writes there.")
    return config


def read_progress(run_dir: str):
    """A run's progress.txt as a pandas DataFrame, leaving out the rows that are not
    whole: a last line cut short (the run was writing it when it stopped, or the file
    was copied then) or a row with the wrong number of fields; each skipped row is
    named in a warning; an empty DataFrame for the empty progress.txt of a run stopped
    before its first epoch ended. Every reader of progress.txt uses this."""
    import pandas as pd

    path = osp.join(run_dir, PROGRESS)
    header, rows, skipped = progress_lines(path)
    if not header.strip():  # no header yet: the first row writes it
        return pd.DataFrame()
    for where, why in skipped:
        print(colorize(f"Warning: skipped {where} of {path}: {why}.", "yellow"))
    return pd.read_table(io.StringIO("\n".join([header] + rows) + "\n"))


def progress_lines(path: str) -> tuple[str, list[str], list[tuple[str, str]]]:
    """A progress.txt's ``(header, whole rows, [(where, why) for each skipped line])``,
    read without pandas (a study's trials poll their runs' rows with it)."""
    check_file(path)
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    header, body, tail = lines[0], lines[1:-1], lines[-1] if len(lines) > 1 else ""
    n_fields = len(header.split("\t"))
    rows, skipped = [], []
    for i, line in enumerate(body, start=2):
        if line and len(line.split("\t")) != n_fields:
            skipped.append((f"line {i}", f"it has {len(line.split(chr(9)))} fields, the "
                                         f"header {n_fields}"))
        elif line:
            rows.append(line)
    if tail:
        skipped.append(("the last line", "it was cut mid-line (the run was writing it, or "
                                         "the file was cut short)"))
    return header, rows, skipped


# The most a file read back from a run directory may hold: a run writes these files small
# (config.json, progress.txt, state.json, env_state.json) or of sizes its settings bound
# (a SavedModel folder, all files together); more is a damaged or crafted directory.
MAX_TEXT_BYTES = 256 << 20
MAX_SAVE_BYTES = 4 << 30
MAX_TREE_FILES = 10_000  # files in one folder read back (a SavedModel holds about ten)


def check_file(path: str, limit: int | None = None) -> None:
    """Raise :class:`SpinupError` unless ``path`` is a regular file, not a symbolic link,
    of at most ``limit`` bytes (default :data:`MAX_TEXT_BYTES`), without opening it.
    Every file read back from a run directory is checked so first: a FIFO would block
    its reader forever, a device (``/dev/zero``) would read until memory runs out, a
    link would read a file elsewhere."""
    limit = MAX_TEXT_BYTES if limit is None else limit
    st = os.lstat(path)
    kind = not_a_file(st.st_mode)
    if kind:
        raise SpinupError(f"{path} is {kind}, not a file a run writes; it was not read. The "
                          f"run directory was altered: restore the file from a copy, or use "
                          f"another run.")
    if st.st_size > limit:
        raise SpinupError(f"{path} holds {st.st_size:,} bytes, more than the {limit:,} a run "
                          f"writes there; it was not read. The run directory was altered: "
                          f"restore the file from a copy, or use another run.")


def not_a_file(mode: int) -> str | None:
    """What a file of ``os.lstat`` mode ``mode`` is if not a regular file ('a symbolic
    link', 'a FIFO', ...), else None."""
    if stat.S_ISREG(mode):
        return None
    return ("a symbolic link" if stat.S_ISLNK(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a directory" if stat.S_ISDIR(mode) else "a device or socket")


def check_tree(folder: str, limit: int = MAX_SAVE_BYTES) -> None:
    """:func:`check_file` for every file below ``folder``, which must be a folder and not
    a link, as must every folder below it; their sizes together at most ``limit`` bytes,
    their number at most :data:`MAX_TREE_FILES`. What another program (TensorFlow's
    SavedModel loader) reads from a run directory is checked so before it reads."""
    if osp.islink(folder) or not osp.isdir(folder):
        kind = "a symbolic link" if osp.islink(folder) else "not a folder"
        raise SpinupError(f"{folder} is {kind}, not the folder a run writes; it was not read. "
                          f"The run directory was altered: restore it from a copy, or use "
                          f"another run.")
    total, count, todo = 0, 0, [folder]
    while todo:
        with os.scandir(todo.pop()) as entries:
            for entry in entries:
                count += 1
                if count > MAX_TREE_FILES:
                    raise SpinupError(f"{folder} holds more than {MAX_TREE_FILES:,} files, "
                                      f"more than a run writes there; it was not read.")
                if entry.is_dir(follow_symlinks=False):
                    todo.append(entry.path)
                    continue
                check_file(entry.path, limit)
                total += entry.stat(follow_symlinks=False).st_size
                if total > limit:
                    raise SpinupError(f"{folder} holds more than {limit:,} bytes, more than a "
                                      f"run writes there; it was not read. The run directory "
                                      f"was altered: restore it from a copy, or use another "
                                      f"run.")


def progress_rows(run_dir: str) -> int:
    """How many whole rows progress.txt holds (0 without the file)."""
    try:
        return len(progress_lines(osp.join(run_dir, PROGRESS))[1])
    except (OSError, UnicodeDecodeError, SpinupError):
        return 0


def progress_digest(run_dir: str, rows: int) -> str | None:
    """SHA-256 of progress.txt's header and first ``rows`` rows (None if it has fewer):
    what ties a training checkpoint to the progress.txt it was saved beside."""
    try:
        check_file(osp.join(run_dir, PROGRESS))
        with open(osp.join(run_dir, PROGRESS), "rb") as f:
            lines = f.read().splitlines(keepends=True)
    except (OSError, SpinupError):
        return None
    if len(lines) < rows + 1 or not all(ln.endswith(b"\n") for ln in lines[:rows + 1]):
        return None
    return hashlib.sha256(b"".join(lines[:rows + 1])).hexdigest()


def open_progress(run_dir: str, keep_rows: int | None = None, fname: str = PROGRESS):
    """progress.txt (or the logger's ``fname``) opened for the logger to append rows to: a
    new file, or with ``keep_rows`` (resuming) the existing one cut back to its header and
    first ``keep_rows`` whole rows. Returns ``(file, header or None, rows kept)``."""
    path = osp.join(run_dir, fname)
    if osp.lexists(path):
        check_file(path)  # opening a FIFO to write would wait for a reader forever
    if keep_rows is None or not osp.exists(path):
        return open(path, "w", encoding="utf-8"), None, 0
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines(keepends=True)
    kept = [ln for ln in lines[:1 + keep_rows] if ln.endswith("\n")]
    write_text(path, "".join(kept))
    header = kept[0].rstrip("\n").split("\t") if kept else None
    return open(path, "a", encoding="utf-8"), header, max(0, len(kept) - 1)


def open_log(path: str, append: bool = False):
    """A run's ``stdout.txt`` opened for its launcher to write (appended when resuming),
    never through a symbolic link planted at its name."""
    # O_NONBLOCK: a FIFO planted at the name fails (or opens at once) instead of waiting for
    # a reader forever; the check after the open refuses it and a device either way.
    flags = (os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
             | (os.O_APPEND if append else 0))
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as err:
        raise SpinupError(f"{path} cannot be written ({err.strerror}): a symbolic link, a "
                          f"FIFO or an unwritable file stands at the run's log. Remove it, or "
                          f"give the run another directory.") from None
    kind = not_a_file(os.fstat(fd).st_mode)
    if kind:
        os.close(fd)
        raise SpinupError(f"{path} is {kind}, not a run's log file; it was not written. "
                          f"Remove it, or give the run another directory.")
    os.set_blocking(fd, True)
    if not append:
        os.ftruncate(fd, 0)
    return os.fdopen(fd, "a" if append else "w")


def find_saves(run_dir: str) -> dict:
    """``{itr: folder}`` of the SavedModels in a run directory; itr is '' for
    ``tf2_save`` and the number for ``tf2_save<N>``."""
    saves = {}
    for entry in os.listdir(run_dir):
        name = entry[:-len(OLD)] if entry.endswith(OLD) else entry
        itr = name[len(TF2_SAVE):]
        if name.startswith(TF2_SAVE) and (itr == "" or itr.isdigit()):
            folder = existing_dir(osp.join(run_dir, name))
            if folder is not None:
                saves[int(itr) if itr else ""] = folder
    return saves


def itr_of(itr: int, flag: str = "--itr") -> int | str:
    """A command line's ``--itr N`` as :func:`select_save` takes it: -1 (Spinning Up's
    default) is 'last'; another negative number is refused, not read as the last save."""
    if itr == -1:
        return "last"
    if itr < 0:
        raise SpinupError(f"{flag} {itr}: give the N of a tf2_save<N> folder (0 or more), or -1 "
                          f"(the default) for the last save. Nothing was run.")
    return itr


def select_save(run_dir: str, itr="last", cmd: str = "test_policy") -> tuple:
    """``(itr, folder)``: the SavedModel of a run directory that ``itr`` names
    ('last', or the number N of a ``tf2_save<N>`` folder); ``itr`` is '' for
    ``tf2_save``. Raises :class:`SpinupError` naming what the directory holds
    (and the command, ``cmd``, to run on a run directory below it)."""
    if not osp.isdir(run_dir):
        raise SpinupError(f"{run_dir} is not a directory. Give the output directory of a run, "
                          f"e.g. data/exp_name/exp_name_s0.")
    saves = find_saves(run_dir)
    if not saves:
        runs = sorted(osp.relpath(root, run_dir) for root, dirs, _ in os.walk(run_dir)
                      if any(d.startswith(TF2_SAVE) for d in dirs))
        if runs:
            raise SpinupError(f"{run_dir} holds no saved model itself, but these run "
                              f"directories below it do: {', '.join(runs[:10])}. Give one of "
                              f"them, e.g. python -m spinup_tf2.run {cmd} "
                              f"{osp.join(run_dir, runs[0])}")
        raise SpinupError(f"No saved model (tf2_save/) was found in {run_dir}. Give the output "
                          f"directory of one run, e.g. data/exp_name/exp_name_s0, written by "
                          f"sac() with save_freq >= 1.")
    if itr == "last":
        numbered = [k for k in saves if k != ""]
        itr = max(numbered) if numbered else ""
    elif not isinstance(itr, int) or itr not in saves:
        raise SpinupError(f"There is no tf2_save{itr} in {run_dir}; saved iterations: "
                          f"{sorted(str(k) if k != '' else 'tf2_save' for k in saves)}.")
    return itr, saves[itr]


# ---- Checks --------------------------------------------------------------------------------

def check_writable_dir(path: str, what: str) -> None:
    """Raise :class:`SpinupError` unless ``path`` is, or can be made as, a directory
    this process may write in; ``what`` names it in the message (e.g. ``'--data_dir'``).
    Nothing is created: the nearest existing ancestor is what is checked."""
    if not isinstance(path, str) or not path.strip():
        from spinup_tf2.user_config import DEFAULT_DATA_DIR

        raise SpinupError(f"{what} {path!r} names no directory (an empty name would put the "
                          f"runs in the default data directory, not where asked). Give a "
                          f"directory, e.g. --data_dir ~/spinup_data, or leave {what} out for "
                          f"the default, {DEFAULT_DATA_DIR}.")
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


def run_files(run_dir: str) -> list[str]:
    """The files and folders in ``run_dir`` that a run wrote, by exact name."""
    if not osp.isdir(run_dir):
        return []
    return sorted(osp.join(run_dir, e) for e in os.listdir(run_dir) if _RUN_FILE.match(e))


def existing_run(run_dir: str) -> str | None:
    """What run ``run_dir`` already holds ("progress.txt with 3 epochs, a training
    checkpoint"), or None if it holds none."""
    rows = progress_rows(run_dir)
    has_checkpoint = existing_dir(osp.join(run_dir, TRAIN_STATE)) is not None
    return ", ".join(w for w in (f"progress.txt with {rows} epochs" if rows else "",
                                 "a training checkpoint" if has_checkpoint else "") if w) or None


def refuse_existing_run(run_dir: str) -> None:
    """Refuse to start a new run where one is (see :func:`existing_run`), saying what works."""
    what = existing_run(run_dir)
    if what:
        raise SpinupError(
            f"{run_dir} already holds a run ({what}), and starting again there would destroy "
            f"its record. Nothing was written. Continue that run with resume=True (--resume), "
            f"give this one another directory (exp_name, seed or data_dir), or replace the old "
            f"run with overwrite=True (--overwrite).")


def check_fresh_output_dir(run_dir: str | None, overwrite: bool) -> None:
    """Before a new run writes anything in ``run_dir``: make sure it destroys no other
    run's record. A directory that already holds a run (progress.txt with rows, or a
    training checkpoint) is refused, unless ``overwrite``: then exactly the files a run
    writes (:func:`run_files`) are removed, and one line says so."""
    if not run_dir:
        return
    if not overwrite:
        refuse_existing_run(run_dir)
        return
    what = existing_run(run_dir)
    if what:
        for path in run_files(run_dir):
            _remove(path)
        print(f"overwrite=True: removed the earlier run in {run_dir} ({what}).", flush=True)


def check_no_links(run_dir: str) -> None:
    """Refuse a run directory in which a file or folder a run writes (or its temporary
    name) is a symbolic link: writing through it would change a file elsewhere."""
    if not osp.isdir(run_dir):
        return
    links = sorted(e for e in os.listdir(run_dir)
                   if (_RUN_FILE.match(e) or e == STDOUT) and osp.islink(osp.join(run_dir, e)))
    if links:
        raise SpinupError(f"{run_dir} holds symbolic links where a run writes its files "
                          f"({', '.join(links)} -> {os.readlink(osp.join(run_dir, links[0]))}"
                          f"{', ...' if len(links) > 1 else ''}); writing there would change "
                          f"files outside the run directory. Nothing was written. Remove the "
                          f"links, or give the run another directory.")


# ---- One writer per run directory ----------------------------------------------------------

_claimed: dict[str, int] = {}  # run directory -> the descriptor holding its lock


# Why a write into a run directory fails when the directory, not the program, is at fault.
WRITE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM,
                errno.EIO)


@contextlib.contextmanager
def writing(run_dir: str | None):
    """Around a run's writing: a write that fails for want of space or permission (disk
    full, quota, read-only, ...) becomes a :class:`SpinupError` saying what on disk is
    whole (the writers are atomic, so everything before the failed write is) and how to
    go on."""
    try:
        yield
    except OSError as err:
        if run_dir is None or err.errno not in WRITE_ERRNOS:
            raise
        rows, epoch = progress_rows(run_dir), checkpoint_epoch(run_dir)
        where = f": {err.filename}" if err.filename else ""
        then = (f"continue the run with --resume (resume=True), which goes on from epoch "
                f"{epoch}" if epoch else "start it again with --overwrite (overwrite=True)")
        raise SpinupError(
            f"The run stopped: a file in {run_dir} could not be written ({err.strerror}"
            f"{where}). What was written before is whole: progress.txt holds {rows} "
            f"epoch(s)" + (f", and the training checkpoint is of epoch {epoch}" if epoch else
                           ", and there is no training checkpoint yet")
            + f". Free space on the disk (or make the directory writable again), then "
              f"{then}.") from None


def checkpoint_epoch(run_dir: str) -> int | None:
    """The epoch of the run's training checkpoint, None if it has none readable."""
    folder = existing_dir(osp.join(run_dir, TRAIN_STATE))
    try:
        check_file(osp.join(folder, "state.json"))
        with open(osp.join(folder, "state.json")) as f:
            epoch = json.load(f).get("epoch")
    except (OSError, TypeError, ValueError, AttributeError, SpinupError):
        return None
    return epoch if isinstance(epoch, int) else None


def claim(run_dir: str, what: str) -> None:
    """Make this process the one writer of ``run_dir`` (created if needed) until
    :func:`release` or until it exits; ``what`` (``'a run'``, ``'an export'``) names the
    writer in messages. The lock is an advisory ``flock`` on the folder itself: the
    operating system drops it when the process dies, so a kill never leaves it stuck.
    Another process holding it is a :class:`SpinupError` naming that process."""
    key = osp.realpath(run_dir)
    if key in _claimed:
        return  # this process holds it already (sac() called again from one script)
    os.makedirs(run_dir, exist_ok=True)
    fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise SpinupError(
            f"{run_dir} is being written by another process ({_lock_holder(run_dir)}), so "
            f"{what} here now would mix two writers' files. Nothing was written. Wait for it "
            f"to end (or stop it: Ctrl-C keeps what it wrote), or give this one another "
            f"directory (exp_name, seed or data_dir).") from None
    _claimed[key] = fd


def release(run_dir: str | None) -> None:
    """Give up the lock :func:`claim` took (nothing if this process holds none)."""
    fd = _claimed.pop(osp.realpath(run_dir), None) if run_dir else None
    if fd is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _lock_holder(run_dir: str) -> str:
    """'PID n on HOST: command' of the process holding run_dir's flock, from /proc/locks
    (Linux); 'a process on HOST' where that cannot be read."""
    host = socket.gethostname()
    try:
        st = os.stat(run_dir)
        ident = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
        with open("/proc/locks") as f:
            for line in f:
                parts = line.split()
                if "FLOCK" in parts and ident in parts:
                    pid = parts[parts.index(ident) - 1]
                    with open(f"/proc/{pid}/cmdline", "rb") as c:
                        cmd = c.read().replace(b"\0", b" ").decode(errors="replace").strip()
                    if len(cmd) > 160:
                        cmd = cmd[:157] + "..."
                    return f"PID {pid} on {host}: {cmd}"
    except (OSError, ValueError):
        pass
    return f"a process on {host}"
