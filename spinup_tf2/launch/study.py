"""A hyperparameter study's records (:mod:`spinup_tf2.launch.tune`): where it is stored,
what it notes about itself and each trial, how a setting is written as a flag; and its
report, ``python -m spinup_tf2.run tune_report STUDY_DIR``.

Writes, in the study's folder: ``trials.tsv`` (every trial: number, state, value, the epochs
it ran, its parameters, seconds, its runs, why it failed), ``best.txt`` (the best trial and
the command line that reproduces it), and with plots, ``plots/`` with Optuna's
optimisation history, parameter importances, parallel coordinates and intermediate values
as PNG files. A study writes its tables after every round and all of it when it ends.
"""

from __future__ import annotations

import contextlib
import os
import os.path as osp
import shlex
import warnings

from spinup_tf2 import rundir
from spinup_tf2.errors import SpinupError, cli_main, error_line, is_installed

STUDY_FILE = "study.journal"  # the default storage, in the study's folder
# What the study records about itself and each trial (Optuna user attributes).
SPEC_KEY, COMMAND_KEY = "spinup_tf2:spec", "spinup_tf2:command"
OWNER_KEY, HISTORY_KEY = "spinup_tf2:owner", "spinup_tf2:history"
RUNS_KEY, PRUNER_KEY = "spinup_tf2:runs", "spinup_tf2:pruner_attrs"
ERROR_KEY, SECONDS_KEY = "spinup_tf2:error", "spinup_tf2:seconds"
STOPPED = "stopped"  # the owner of a trial its driver stopped (Ctrl-C): --resume takes it
PLOTS = ("optimization_history", "param_importances", "parallel_coordinate",
         "intermediate_values")


def check_optuna_installed() -> None:
    """A :class:`SpinupError` naming the extra that brings Optuna, if it is missing."""
    if not is_installed("optuna"):
        raise SpinupError("tune runs an Optuna study, but Optuna is not installed. Install "
                          "the optional extra: pip install -e '.[tune]' in a clone of "
                          "spinup_tf2 (or pip install 'optuna>=4'). Nothing was started.")


def open_storage(storage: str | None, study_dir: str):
    """The Optuna storage a study lives in: a journal file (a path; by default
    ``<study_dir>/study.journal``) or a database URL (``sqlite:///study.db``). A journal
    or SQLite file is held to a run directory's rules: a regular file, not a link, of
    bounded size (:func:`check_storage_file`); a journal's last record cut short by a
    crash or a full disk is dropped, so that the next record starts on a line of its own."""
    import optuna

    target = storage or osp.join(study_dir, STUDY_FILE)
    check_storage_file(target, storage)
    try:
        if "://" in target:
            return optuna.storages.RDBStorage(target)
        os.makedirs(osp.dirname(osp.abspath(target)), exist_ok=True)
        backend = optuna.storages.journal.JournalFileBackend(target)
        _drop_cut_record(backend, target)
        return optuna.storages.JournalStorage(backend)
    except Exception as err:  # an RDB or a file system may refuse in many ways
        first = error_line(err)
        raise SpinupError(f"--storage {target}: the study's storage could not be opened "
                          f"({first}). Give a journal file path in a "
                          f"folder you can write (the default: {STUDY_FILE} in the study's "
                          f"folder) or a database URL such as sqlite:///study.db. Nothing was "
                          f"started.") from None


def storage_path(target: str) -> str | None:
    """The file behind a storage: the journal's path, a ``sqlite:///`` URL's database
    file; None for a database server."""
    if "://" not in target:
        return target
    head, _, rest = target.partition(":///")
    return rest.split("?")[0] if head.startswith("sqlite") and rest else None


def check_storage_file(target: str, given: str | None) -> None:
    """Refuse a storage file that is a symbolic link, FIFO, device or folder, or larger
    than a study writes (:data:`rundir.MAX_TEXT_BYTES`): opening it would follow the link,
    block forever, or read without end."""
    path = storage_path(target)
    if path is None or not osp.lexists(path):
        return
    st = os.lstat(path)
    kind = rundir.not_a_file(st.st_mode)
    flag = f"--storage {given}" if given else path
    if kind:
        raise SpinupError(f"{flag}: {path} is {kind}, not a study's journal or database "
                          f"file; it was neither read nor written. Remove it, or give "
                          f"--storage a path to a regular file (the default: {STUDY_FILE} in "
                          f"the study's folder). Nothing was started.")
    if st.st_size > rundir.MAX_TEXT_BYTES:
        raise SpinupError(f"{flag}: {path} holds {st.st_size:,} bytes, more than the "
                          f"{rundir.MAX_TEXT_BYTES:,} a study writes; it was not read. Give "
                          f"the study's own storage file. Nothing was started.")


def _drop_cut_record(backend, path: str) -> None:
    """Cut a journal back to its last whole line (under the journal's lock, which every
    writer holds while it appends): what follows it is a record whose writing was cut
    short, which Optuna never read back."""
    from optuna.storages.journal._file import get_lock_file

    if not osp.exists(path) or os.path.getsize(path) == 0:
        return
    with get_lock_file(backend._lock), open(path, "rb+") as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - 1))
        if f.read(1) == b"\n":
            return
        data_end, chunk = size, 1 << 16
        while data_end > 0:  # find the last newline, reading backwards
            start = max(0, data_end - chunk)
            f.seek(start)
            at = f.read(data_end - start).rfind(b"\n")
            if at >= 0:
                f.truncate(start + at + 1)
                return
            data_end = start
        f.truncate(0)


# The files a study writes in its folder, beside its trials' run directories.
STUDY_FILES = (STUDY_FILE, "trials.tsv", "best.txt")
PLOTS_DIR = "plots"


def check_study_dir(study_dir: str) -> None:
    """Refuse a study folder in which a file the study writes is a link, FIFO or device,
    or its plots folder a link (writing through it would change files elsewhere)."""
    for name in STUDY_FILES + (PLOTS_DIR,):
        path = osp.join(study_dir, name)
        if not osp.lexists(path):
            continue
        kind = rundir.not_a_file(os.lstat(path).st_mode)
        if name == PLOTS_DIR and kind == "a directory":
            for entry in os.scandir(path):
                _refuse_at(entry.path, rundir.not_a_file(
                    entry.stat(follow_symlinks=False).st_mode))
        elif kind:
            _refuse_at(path, kind)


def _refuse_at(path: str, kind: str | None) -> None:
    if kind:
        raise SpinupError(f"{path} is {kind}, where a study writes its own file; the study "
                          f"would write through it, changing what lies elsewhere. Nothing was "
                          f"written. Remove it, or give the study another --exp_name or "
                          f"--data_dir.")


@contextlib.contextmanager
def study_writing(study_dir: str):
    """Around a study's writing: a write the disk refuses (full, quota, read-only)
    becomes one paragraph saying what is whole."""
    try:
        yield
    except OSError as err:
        if err.errno not in rundir.WRITE_ERRNOS:
            raise
        where = f": {err.filename}" if err.filename else ""
        raise SpinupError(
            f"The study stopped: a file of {study_dir} could not be written ({err.strerror}"
            f"{where}). What was written before is whole: the study's storage holds every "
            f"trial it recorded, each run directory its epochs and checkpoint, trials.tsv and "
            f"best.txt their last version. Free space (or make the folder writable again), "
            f"then run the same command with --resume.") from None


def format_value(value) -> str:
    """A value as one command-line token that parses back to it (``repr`` for numbers,
    so a float comes back to the last bit)."""
    from spinup_tf2.launch.flags import NamedObject

    if isinstance(value, NamedObject):
        return value.text
    if isinstance(value, (list, tuple, dict)):
        return repr(value).replace(" ", "")
    return value if isinstance(value, str) else repr(value)


def format_flags(flags: dict, several: tuple = ()) -> list[str]:
    """``{key: value}`` as command-line tokens that the launcher reads back to the same
    values: ``--key value`` (a list is one value: ``--hid [16]``), a True switch alone;
    the keys in ``several`` hold lists of values (``--seed 0 10``)."""
    tokens = []
    for key, value in flags.items():
        tokens.append("--" + key)
        vals = list(value) if key in several else [value]
        if not (len(vals) == 1 and vals[0] is True):  # 1 == True, but 1 is no switch
            tokens += [format_value(v) for v in vals]
    return tokens


def trial_rows(opt_study) -> tuple[list[str], list[list]]:
    """``(header, rows)`` of the trials table, one row per trial in number order."""
    params = list(dict.fromkeys(k for t in opt_study.trials for k in t.params))
    header = ["number", "state", "value", "epochs"] + params + ["seconds", "runs", "error"]
    rows = []
    for t in opt_study.trials:
        rows.append([t.number, t.state.name, "" if t.value is None else repr(t.value),
                     t.last_step or ""]
                    + [format_value(t.params[k]) if k in t.params else "" for k in params]
                    + [t.user_attrs.get(SECONDS_KEY, ""), " ".join(t.user_attrs.get(RUNS_KEY, [])),
                       t.user_attrs.get(ERROR_KEY, "")])
    return header, rows


def best_command(opt_study, trial) -> list[str]:
    """The command line that runs ``trial``'s settings again (all its environments and
    seeds), as an ordinary experiment named ``<study>_best``."""
    command = list(opt_study.user_attrs[COMMAND_KEY])
    return command + format_flags(dict(trial.params)) + ["--exp_name",
                                                         f"{opt_study.study_name}_best"]


def write_report(opt_study, study_dir: str, plots: bool = True,
                 storage: str | None = None) -> None:
    """Write the study's tables (and with ``plots``, its PNG plots) into ``study_dir``,
    and say where they are."""
    from optuna.trial import TrialState

    check_study_dir(study_dir)  # again: the folder may have changed while trials ran
    header, rows = trial_rows(opt_study)
    # shared: every driver of the study rewrites its tables and plots, maybe at once
    rundir.write_text(osp.join(study_dir, "trials.tsv"), "\n".join(
        "\t".join(str(c).replace("\t", " ").replace("\n", " ") for c in row)
        for row in [header] + rows) + "\n", shared=True)
    complete = opt_study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if complete:
        best = opt_study.best_trial
        cmd = " ".join(shlex.quote(t) for t in best_command(opt_study, best))
        text = (f"Best trial: {best.number}, value {best.value!r} "
                f"({len(complete)} of {len(opt_study.trials)} trials complete).\n"
                f"Its runs: {' '.join(best.user_attrs.get(RUNS_KEY, []))}\n\n"
                f"Run its settings again with:\n\n{cmd}\n")
        rundir.write_text(osp.join(study_dir, "best.txt"), text, shared=True)
    if not plots:
        return
    written = write_plots(opt_study, osp.join(study_dir, PLOTS_DIR))
    journal = storage or osp.join(study_dir, STUDY_FILE)
    print(f"\nStudy {opt_study.study_name}: {len(opt_study.trials)} trials; table "
          f"{osp.join(study_dir, 'trials.tsv')}"
          + (f", best {osp.join(study_dir, 'best.txt')}" if complete else "")
          + "\nPlots: " + (", ".join(written) or "none yet (they need finished trials)")
          + f"\nWatch it live: optuna-dashboard {journal} (pip install optuna-dashboard)",
          flush=True)


def write_plots(opt_study, folder: str) -> list[str]:
    """Optuna's plots of the study as PNG files in ``folder``; the paths written (a plot
    the study cannot make yet, e.g. importances before two finished trials, is left
    out)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import optuna
    import optuna.visualization.matplotlib as ovm

    os.makedirs(folder, exist_ok=True)
    makers = {
        "optimization_history": ovm.plot_optimization_history,
        "param_importances": lambda s: ovm.plot_param_importances(
            s, evaluator=optuna.importance.FanovaImportanceEvaluator(seed=0)),
        "parallel_coordinate": ovm.plot_parallel_coordinate,
        "intermediate_values": ovm.plot_intermediate_values,
    }
    written = []
    for name in PLOTS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Optuna's "experimental" notes
            try:
                ax = makers[name](opt_study)
            except (ValueError, RuntimeError, ZeroDivisionError):
                continue  # too few finished trials for this plot
        fig = (ax.flat[0] if hasattr(ax, "flat") else ax).get_figure()
        fig.set_size_inches(9, 5.5)
        fig.tight_layout()
        path = osp.join(folder, name + ".png")
        with rundir.atomic_file(path, shared=True) as tmp:
            fig.savefig(tmp, format="png", dpi=100)
        plt.close(fig)
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    """``python -m spinup_tf2.run tune_report STUDY_DIR [--storage URL]``."""

    def command():
        if not argv or argv[0] in ("-h", "--help"):
            print(__doc__)
            return 0
        study_dir = osp.abspath(argv[0])
        storage = None
        if argv[1:2] == ["--storage"] and len(argv) == 3:
            storage = argv[2]
        elif len(argv) != 1:
            raise SpinupError(f"tune_report takes a study's folder and, optionally, --storage "
                              f"URL; got {' '.join(argv)}.")
        check_optuna_installed()
        import optuna

        name = osp.basename(study_dir.rstrip("/"))
        if storage is None and not osp.isfile(osp.join(study_dir, STUDY_FILE)):
            raise SpinupError(f"{study_dir} holds no study.journal: give a study's folder "
                              f"(data/<exp_name>), or its storage with --storage URL.")
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        try:
            opt_study = optuna.load_study(study_name=name,
                                          storage=open_storage(storage, study_dir))
        except KeyError:
            raise SpinupError(f"There is no study {name} in the storage of {study_dir}; the "
                              f"study's name is its folder's.") from None
        with study_writing(study_dir):
            write_report(opt_study, study_dir, plots=True, storage=storage)

    return cli_main(command)
