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

import os
import os.path as osp
import shlex
import warnings

from spinup_tf2 import rundir
from spinup_tf2.errors import SpinupError, cli_main, is_installed

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
    ``<study_dir>/study.journal``) or a database URL (``sqlite:///study.db``)."""
    import optuna

    target = storage or osp.join(study_dir, STUDY_FILE)
    try:
        if "://" in target:
            return optuna.storages.RDBStorage(target)
        os.makedirs(osp.dirname(osp.abspath(target)), exist_ok=True)
        backend = optuna.storages.journal.JournalFileBackend(target)
        return optuna.storages.JournalStorage(backend)
    except Exception as err:  # an RDB or a file system may refuse in many ways
        first = (str(err).strip().splitlines() or [""])[0][:200]
        raise SpinupError(f"--storage {target}: the study's storage could not be opened "
                          f"({type(err).__name__}: {first}). Give a journal file path in a "
                          f"folder you can write (the default: {STUDY_FILE} in the study's "
                          f"folder) or a database URL such as sqlite:///study.db. Nothing was "
                          f"started.") from None


def format_value(value) -> str:
    """A value as one command-line token that parses back to it (``repr`` for numbers,
    so a float comes back to the last bit)."""
    from spinup_tf2.launch.flags import NamedObject

    if isinstance(value, NamedObject):
        return value.text
    if isinstance(value, (list, tuple, dict)):
        return repr(value).replace(" ", "")
    return value if isinstance(value, str) else repr(value)


def format_flags(flags: dict) -> list[str]:
    """``{key: value or [values]}`` as command-line tokens (``--key v1 v2``; a True
    switch alone)."""
    tokens = []
    for key, vals in flags.items():
        vals = vals if isinstance(vals, list) else [vals]
        tokens.append("--" + key)
        if vals != [True]:
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
    written = write_plots(opt_study, osp.join(study_dir, "plots"))
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
        write_report(opt_study, study_dir, plots=True, storage=storage)

    return cli_main(command)
