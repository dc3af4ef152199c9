"""Plot learning curves: ``python -m spinup_tf2.run plot LOGDIR... [options]``.

Finds every run (a directory with progress.txt) under the given logdirs,
groups runs by experiment name (or legend), and draws one line per group:
the estimator (mean by default) over its seeds, with a band of plus or minus
one standard deviation over seeds. Works without a display: ``--savefig``
writes PNG files and opens no window; without a display it saves anyway and
says where.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import os.path as osp
import sys
import textwrap
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd

from spinup_tf2 import rundir
from spinup_tf2.errors import SpinupError, cli_main, colorize
from spinup_tf2.utils.aggregate import iqm, stratified_bootstrap_ci

DIV_LINE_WIDTH = 50
REFERENCE_CSV = osp.join(osp.dirname(osp.dirname(osp.abspath(__file__))), "data",
                         "spinningup_sac_curves.csv")

# Global counter of loaded runs, for distinct Condition2 labels (as in Spinning Up).
exp_idx = 0
units: dict = dict()


def smooth_curve(y: np.ndarray, k: int) -> np.ndarray:
    """Centred moving average over ``k`` points, renormalised at the edges
    (Spinning Up's smoothing); a window longer than the run averages what
    there is instead of failing."""
    y = np.asarray(y, dtype=float)
    n = len(y)
    if k <= 1 or n == 0:
        return y
    ones = np.ones(k)
    start = (k - 1) // 2  # where np.convolve(..., 'same') starts in the full convolution
    num = np.convolve(y, ones, "full")[start:start + n]
    den = np.convolve(np.ones(n), ones, "full")[start:start + n]
    return num / den


def read_progress(path: str) -> pd.DataFrame:
    """The progress.txt at ``path`` as a DataFrame, whole rows only (see
    :func:`spinup_tf2.rundir.read_progress`)."""
    return rundir.read_progress(osp.dirname(path))


def get_datasets(logdir: str, condition: str | None = None) -> list[pd.DataFrame]:
    """Load every progress.txt under ``logdir`` as a DataFrame with the columns
    ``Unit`` (run number within its group), ``Condition1`` (legend, else
    exp_name), ``Condition2`` (``Condition1-<run index>``) and ``Performance``
    (AverageTestEpRet, else AverageEpRet, if the run has either) added."""
    global exp_idx, units
    datasets = []
    for root, _, files in sorted(os.walk(logdir)):
        if rundir.PROGRESS not in files:
            continue
        config = rundir.read_config(root)
        if config is None:
            print("No file named config.json")
        exp_name, env_name = (config or {}).get("exp_name"), (config or {}).get("env_name")
        condition1 = str(condition or exp_name or "exp")
        if len(condition1) > 200:  # a legend entry, not a page: long names are cut
            condition1 = condition1[:197] + "..."
        condition2 = condition1 + "-" + str(exp_idx)
        exp_idx += 1
        if condition1 not in units:
            units[condition1] = 0
        unit = units[condition1]
        units[condition1] += 1

        try:
            exp_data = rundir.read_progress(root)
        except (OSError, ValueError, pd.errors.EmptyDataError):  # SpinupError: a special file
            print(f"Could not read from {osp.join(root, rundir.PROGRESS)}")
            continue
        if len(exp_data) == 0:
            print(f"Could not read from {osp.join(root, rundir.PROGRESS)} (no rows yet)")
            continue
        exp_data.insert(len(exp_data.columns), "Unit", unit)
        exp_data.insert(len(exp_data.columns), "Condition1", condition1)
        exp_data.insert(len(exp_data.columns), "Condition2", condition2)
        # A progress.txt of some other logged program may have neither return
        # column; plotting one of its own columns (--value) must still work.
        for performance in ("AverageTestEpRet", "AverageEpRet"):
            if performance in exp_data:
                exp_data.insert(len(exp_data.columns), "Performance", exp_data[performance])
                break
        exp_data.attrs["env_name"] = env_name
        exp_data.attrs["logdir"] = root
        datasets.append(exp_data)
    return datasets


def get_all_datasets(all_logdirs: list[str], legend: list[str] | None = None,
                     select: list[str] | None = None,
                     exclude: list[str] | None = None) -> list[pd.DataFrame]:
    """Load the runs the logdirs name, after filtering, as :func:`get_datasets` does.

    A logdir that is a directory and ends in ``os.sep`` is used as it is;
    otherwise it is a prefix: every directory beside it whose name contains
    its last part is used (so ``data/exp`` finds ``data/exp``,
    ``data/exp_lr0-1``, ...). ``select`` keeps logdirs containing all its
    substrings, ``exclude`` drops those containing any of its substrings.
    ``legend`` gives one label per matched logdir.
    """
    logdirs = []
    for logdir in all_logdirs:
        if osp.isdir(logdir) and logdir[-1] == os.sep:
            logdirs += [logdir]
        else:
            basedir = osp.dirname(logdir)
            prefix = logdir.split(os.sep)[-1]
            listdir = os.listdir(basedir or ".") if osp.isdir(basedir or ".") else []
            logdirs += sorted(osp.join(basedir, x) for x in listdir
                              if prefix in x and osp.isdir(osp.join(basedir, x)))

    if select is not None:
        logdirs = [log for log in logdirs if all(x in log for x in select)]
    if exclude is not None:
        logdirs = [log for log in logdirs if all(x not in log for x in exclude)]

    print("Plotting from...\n" + "=" * DIV_LINE_WIDTH + "\n")
    for logdir in logdirs:
        print(logdir)
    print("\n" + "=" * DIV_LINE_WIDTH)

    if not logdirs:
        raise SpinupError(f"No run directories match {' '.join(all_logdirs)}"
                          + (f" with --select {select}" if select else "")
                          + (f" and --exclude {exclude}" if exclude else "")
                          + ". Give a run's output directory (e.g. data/exp/exp_s0), the "
                            "directory above several runs, or a prefix of their names.")
    if legend is not None and len(legend) != len(logdirs):
        raise SpinupError(f"Must give a legend title for each set of experiments: "
                          f"{len(logdirs)} logdirs matched ({', '.join(logdirs)}) but "
                          f"{len(legend)} legend titles were given ({legend}).")

    data = []
    if legend:
        for log, leg in zip(logdirs, legend, strict=True):
            data += get_datasets(log, leg)
    else:
        for log in logdirs:
            data += get_datasets(log)
    if not data:
        raise SpinupError(f"No progress.txt with any rows was found under "
                          f"{', '.join(logdirs)}: these are not run directories, or the runs "
                          f"have not finished an epoch yet.")
    return data


def reference_curves(env_name: str | None) -> pd.DataFrame | None:
    """Spinning Up's published SAC curves (PyTorch and TF1 versions) for the
    MuJoCo task of ``env_name`` (any version), or None."""
    if not env_name or not osp.exists(REFERENCE_CSV):
        return None
    ref = pd.read_csv(REFERENCE_CSV)
    key = env_name.split("-v")[0].lower()
    ref = ref[ref["env"] == key]
    return ref if len(ref) else None


ESTIMATORS = {"mean": np.mean, "median": np.median, "max": np.max, "min": np.min, "iqm": iqm}
MAX_SMOOTH = 10_000  # rows: no run has more epochs than this
MAX_N_BOOT = 100_000  # bootstrap replicates: beyond this the band no longer moves


def get_estimator(name: str) -> Callable:
    """The function ``--est NAME`` names: ``iqm`` (interquartile mean), or Spinning Up's
    ``mean``, ``median``, ``max``, ``min``."""
    if name not in ESTIMATORS:
        raise SpinupError(f"--est {name!r} is not an estimator; use one of "
                          f"{', '.join(ESTIMATORS)} (iqm: the interquartile mean).")
    return ESTIMATORS[name]


def _check_ci(ci, n_boot: int) -> None:
    if ci is not None and not 0 < ci < 100:
        raise SpinupError(f"--ci must be a confidence level in percent, between 0 and 100 "
                          f"(e.g. 95); got {ci}.")
    if not 1 <= n_boot <= MAX_N_BOOT:
        raise SpinupError(f"--n_boot must be a whole number from 1 to {MAX_N_BOOT:,}; got "
                          f"{n_boot}.")


def _check_columns(data: list[pd.DataFrame], value: str, xaxis: str) -> None:
    """Refuse, naming the run and its columns, a value or x axis some run lacks."""
    for datum in data:
        if value not in datum.columns or xaxis not in datum.columns:
            missing = value if value not in datum.columns else xaxis
            cols = [c for c in datum.columns if c not in ("Unit", "Condition1", "Condition2")]
            why = (" (the default value: AverageTestEpRet, else AverageEpRet, and this run "
                   "has neither)" if missing == "Performance" else "")
            raise SpinupError(f"{datum.attrs.get('logdir', 'A run')} has no column "
                              f"{missing!r}{why}. Columns there: {', '.join(cols)}; give one "
                              f"with --value (or --xaxis).")
    for column in (value, xaxis):
        for datum in data:
            if not pd.api.types.is_numeric_dtype(datum[column]):
                words = ", ".join(map(repr, datum[column].astype(str).unique()[:3]))
                raise SpinupError(f"{datum.attrs.get('logdir', 'A run')}'s column {column!r} "
                                  f"holds words ({words}), not numbers, so it cannot be "
                                  f"plotted. Give a numeric column with --value (or --xaxis).")
        empty = [d.attrs.get("logdir", "a run") for d in data if d[column].isna().all()]
        if len(empty) == len(data):
            raise SpinupError(f"The column {column!r} holds no numbers in any run (all NaN: "
                              f"{', '.join(empty[:3])}{', ...' if len(empty) > 3 else ''}), "
                              f"so there is nothing to plot. Give another --value (or --xaxis).")
        if empty:
            print(colorize(f"Warning: {column!r} holds no numbers (all NaN) in "
                           f"{', '.join(empty[:3])}{', ...' if len(empty) > 3 else ''}; those "
                           f"runs are left out of its curve.", "yellow"))


def plot_data(data: list[pd.DataFrame], xaxis: str = "Epoch", value: str = "AverageEpRet",
              condition: str = "Condition1", smooth: int = 1, estimator: str = "mean",
              reference: bool = False, ax=None, ci: float | None = None, n_boot: int = 2000):
    """Draw one value against xaxis on ``ax``: estimator over seeds with a
    +-1 std band (or, with ``ci``, a stratified-bootstrap confidence band of
    the estimator, ``n_boot`` replicates, seeded), one line per condition."""
    import seaborn as sns

    _check_columns(data, value, xaxis)
    est = get_estimator(estimator)
    frame = _smoothed(data, value, smooth)

    def band(vals):
        if ci is not None:
            return stratified_bootstrap_ci(np.asarray(vals), est, ci, n_boot, seed=0)
        centre, spread = est(vals), np.std(vals)
        return centre - spread, centre + spread

    few_points = frame.groupby(condition)[xaxis].nunique().min() < 3
    ax = sns.lineplot(data=frame, x=xaxis, y=value, hue=condition, estimator=est,
                      errorbar=band, marker="o" if few_points else None, ax=ax)
    if reference:
        _draw_reference(ax, data, frame[xaxis].max(), smooth)
    if np.max(np.asarray(frame[xaxis])) > 5e3:
        # Just some formatting niceness: x-axis scale in scientific notation if max x is large
        ax.ticklabel_format(style="sci", axis="x", scilimits=(0, 0))
    fit_legend(ax)  # and lays the figure out
    return ax


def _smoothed(data: list[pd.DataFrame], value: str, smooth: int) -> pd.DataFrame:
    """All runs in one frame, each run's ``value`` smoothed over ``smooth`` points."""
    frames = []
    for datum in data:
        datum = datum.copy()
        if smooth > 1:
            datum[value] = smooth_curve(datum[value].to_numpy(), smooth)
        frames.append(datum)
    return pd.concat(frames, ignore_index=True)


def aggregate_table(data: list[pd.DataFrame], steps: list, xaxis: str = "TotalEnvInteracts",
                    value: str = "Performance", condition: str = "Condition1", smooth: int = 1,
                    ci: float = 95.0, n_boot: int = 2000) -> str:
    """A Markdown table: for each group (condition) and each x in ``steps``, the
    IQM, mean and median over the group's runs of ``value`` (smoothed as the
    plot is) at that x, and the stratified-bootstrap ``ci`` % interval of the
    IQM. Each run gives its row whose x is nearest to the step."""
    _check_columns(data, value, xaxis)
    lines = [f"| group | {xaxis} | runs | IQM | mean | median | IQM {ci:g} % CI |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for group in sorted({str(d[condition].iloc[0]) for d in data}):
        runs = [d for d in data if str(d[condition].iloc[0]) == group]
        runs = [_smoothed([d], value, smooth) for d in runs]
        for step in steps:
            at = []
            for run in runs:
                x = run[xaxis].to_numpy(dtype=float)
                i = int(np.argmin(np.abs(x - step)))
                if abs(x[i] - step) > max(np.diff(x).max(initial=0), 1):
                    continue  # the run does not reach this step
                at.append(float(run[value].iloc[i]))
            if not at:
                lines.append(f"| {group} | {step:g} | 0 | | | | |")
                continue
            scores = np.array(at)
            low, high = stratified_bootstrap_ci(scores, iqm, ci, n_boot, seed=0)
            lines.append(f"| {group} | {step:g} | {len(at)} | {iqm(scores):.1f} | "
                         f"{np.mean(scores):.1f} | {np.median(scores):.1f} | "
                         f"[{low:.1f}, {high:.1f}] |")
    return "\n".join(lines)


def fit_legend(ax, min_fontsize: float = 7.0) -> None:
    """Draw the legend inside the axes' figure: long labels first get a smaller
    font (down to ``min_fontsize``), then are wrapped onto several lines."""
    handles, labels = ax.get_legend_handles_labels()
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    fontsize = ax.legend(handles, labels, loc="best").get_texts()[0].get_fontsize()
    width = max(len(label) for label in labels)
    while True:
        wrapped = [textwrap.fill(label, width, break_on_hyphens=False) for label in labels]
        legend = ax.legend(handles, wrapped, loc="best", fontsize=fontsize)
        with warnings.catch_warnings():  # "not applied" while the legend is still too wide
            warnings.simplefilter("ignore", UserWarning)
            fig.tight_layout(pad=0.5)
        box, frame = legend.get_window_extent(renderer), fig.bbox
        if (box.x0 >= frame.x0 and box.x1 <= frame.x1 and box.y0 >= frame.y0
                and box.y1 <= frame.y1) or width <= 8:
            break
        if fontsize > min_fontsize:
            fontsize = max(min_fontsize, fontsize - 1)
        else:
            width = max(8, int(width * 0.8))
    legend.set_draggable(True)


def _draw_reference(ax, data, x_max, smooth):
    env_names = {d.attrs.get("env_name") for d in data} - {None}
    ref = reference_curves(next(iter(env_names))) if len(env_names) == 1 else None
    if ref is None:
        print(colorize("No published Spinning Up SAC curve matches these runs' environment "
                       f"({', '.join(sorted(env_names)) or 'unknown'}); --reference needs runs "
                       "of one MuJoCo task (HalfCheetah, Hopper, Walker2d, Swimmer, Ant).",
                       "yellow"))
        return
    labels = {"pyt": "Spinning Up SAC (PyTorch)", "tf1": "Spinning Up SAC (TF1)"}
    for version, part in ref.groupby("version"):
        part = part[part["timesteps"] <= x_max * 1.02]
        if len(part) == 0:
            continue
        x, y, sd = (part[c].to_numpy() for c in ("timesteps", "mean_smoothed", "sd_over_seeds"))
        line, = ax.plot(x, y, linestyle="--", linewidth=1.5, label=labels.get(version, version))
        ax.fill_between(x, y - sd, y + sd, color=line.get_color(), alpha=0.1)


def _free_name(stem: str, ext: str) -> str:
    """``stem + ext``, or if that file exists ``stem-2 + ext``, ``stem-3 + ext``, ...:
    a figure saved without --savefig never replaces an earlier one."""
    path, n = stem + ext, 1
    while osp.exists(path):
        n += 1
        path = f"{stem}-{n}{ext}"
    return path


def make_plots(all_logdirs, legend=None, xaxis="TotalEnvInteracts", values="Performance",
               count=False, font_scale=1.5, smooth=1, select=None, exclude=None,
               estimator="mean", savefig=None, reference=False, ci=None,
               n_boot=2000) -> list[str]:
    """Load the runs and draw one figure per value. Returns the files written
    (with ``savefig``, or when there is no display to show them on).
    ``estimator`` 'iqm' is the interquartile mean; ``ci`` (a level in percent)
    draws a stratified-bootstrap confidence band instead of +-1 std."""
    import matplotlib
    import matplotlib.pyplot as plt

    get_estimator(estimator)
    _check_ci(ci, n_boot)
    if not 1 <= smooth <= MAX_SMOOTH:
        raise SpinupError(f"--smooth must be from 1 (no smoothing) to {MAX_SMOOTH:,} rows; got "
                          f"{smooth}.")
    data = get_all_datasets(all_logdirs, legend, select, exclude)
    values = values if isinstance(values, list) else [values]
    condition = "Condition2" if count else "Condition1"
    headless = not savefig and matplotlib.get_backend().lower() in (
        "agg", "pdf", "ps", "svg", "cairo", "template", "pgf")
    import seaborn as sns

    sns.set_theme(style="darkgrid", font_scale=font_scale)
    written = []
    for value in values:
        fig = plt.figure()
        plot_data(data, xaxis=xaxis, value=value, condition=condition, smooth=smooth,
                  estimator=estimator, reference=reference, ax=fig.gca(), ci=ci,
                  n_boot=n_boot)
        path = None
        if savefig:
            stem, ext = osp.splitext(savefig)
            ext = ext or ".png"
            path = f"{stem}{ext}" if len(values) == 1 else f"{stem}_{value}{ext}"
            formats = fig.canvas.get_supported_filetypes()
            if ext[1:].lower() not in formats:
                raise SpinupError(f"--savefig {savefig!r}: matplotlib cannot write {ext!r} files; "
                                  f"give a name ending in one of "
                                  f"{', '.join('.' + f for f in sorted(formats))}.")
        elif headless:
            path = _free_name(all_logdirs[0].rstrip(os.sep) + f"_{value}", ".png")
        if path:
            try:
                os.makedirs(osp.dirname(osp.abspath(path)), exist_ok=True)
                with rundir.atomic_file(path) as tmp:  # a kill never leaves half a PNG
                    fig.savefig(tmp, dpi=100)
            except OSError as err:  # a full disk, no permission, a file-size limit
                raise SpinupError(f"The figure could not be written to {path} "
                                  f"({err.strerror or type(err).__name__}); no partial file "
                                  f"was left there. Give --savefig a path on a disk with room "
                                  f"that you may write.") from None
            written.append(path)
            print((f"Saved the figure of {value} to {path}")
                  + (" (no display to show it on)" if headless else ""))
            plt.close(fig)
    if not savefig and not headless:
        plt.show()
    return written


def main(argv=None) -> int:
    """Parse the plot command line and draw."""
    parser = argparse.ArgumentParser(
        prog="python -m spinup_tf2.run plot",
        description="Plot spinup_tf2 learning curves (Spinning Up's plot, with its flags).")
    parser.add_argument("logdir", nargs="*",
                        help="run directories, or folders searched for them; a logdir that is "
                             "not a folder matches every folder beside it whose name contains "
                             "its last part (data/exp_lr matches data/exp_lr0-1, ...)")
    spinup = parser.add_argument_group("Spinning Up's flags")
    beyond = parser.add_argument_group("beyond Spinning Up")
    spinup.add_argument("--legend", "-l", nargs="*",
                        help="one name per logdir for the legend (default: each run's "
                             "exp_name)")
    spinup.add_argument("--xaxis", "-x", default="TotalEnvInteracts",
                        help="the column on the x axis (default: TotalEnvInteracts)")
    spinup.add_argument("--value", "-y", default="Performance", nargs="*",
                        help="the column(s) to plot, one figure each (default: Performance, "
                             "i.e. AverageTestEpRet)")
    spinup.add_argument("--count", action="store_true",
                        help="one curve per run instead of one per experiment (mean and std "
                             "over its seeds)")
    spinup.add_argument("--smooth", "-s", type=int, default=1,
                        help="a centred moving average over this many points (default: 1, none)")
    spinup.add_argument("--select", nargs="*",
                        help="keep only logdirs whose path contains all of these strings")
    spinup.add_argument("--exclude", nargs="*",
                        help="drop logdirs whose path contains any of these strings")
    spinup.add_argument("--est", default="mean",
                        help="the line: iqm (interquartile mean) or a numpy function (mean, "
                             "median, max, min; default: mean)")
    beyond.add_argument("--ci", type=float, default=None, metavar="LEVEL",
                        help="draw a stratified-bootstrap LEVEL %% confidence band of the "
                             "estimator instead of +-1 std (e.g. --ci 95)")
    beyond.add_argument("--n_boot", type=int, default=2000,
                        help="bootstrap replicates for --ci and --table (seeded; default: "
                             "2000)")
    beyond.add_argument("--table", type=float, nargs="+", metavar="STEPS",
                        help="print, instead of plotting, IQM, mean, median and the IQM's "
                             "confidence interval (--ci, default 95) of --value for each group "
                             "at these x values")
    beyond.add_argument("--savefig", default=None,
                        help="write the figure to this file (one file per --value, with the "
                             "value in its name) instead of opening a window")
    beyond.add_argument("--reference", action="store_true",
                        help="overlay Spinning Up's published SAC curves for the runs' MuJoCo "
                             "environment")
    args = parser.parse_args(argv)

    def command():
        if not args.logdir:
            raise SpinupError("Give at least one logdir: python -m spinup_tf2.run plot "
                              "data/exp_name [more logdirs] [--value ...].")
        if args.table:
            _check_ci(args.ci, args.n_boot)
            bad = [x for x in args.table if not math.isfinite(x)]
            if bad:
                raise SpinupError(f"--table {' '.join(map(str, args.table))}: {bad[0]} is not "
                                  f"an x value; give finite numbers of --xaxis "
                                  f"({args.xaxis}), e.g. --table 100000 300000.")
            # The list of runs goes to stderr: stdout is the Markdown table alone, for a file.
            with contextlib.redirect_stdout(sys.stderr):
                data = get_all_datasets(args.logdir, args.legend, args.select, args.exclude)
            for value in args.value if isinstance(args.value, list) else [args.value]:
                print(aggregate_table(data, args.table, args.xaxis, value,
                                      "Condition2" if args.count else "Condition1",
                                      args.smooth, args.ci or 95.0, args.n_boot))
            return 0
        make_plots(args.logdir, args.legend, args.xaxis, args.value, args.count,
                   smooth=args.smooth, select=args.select, exclude=args.exclude,
                   estimator=args.est, savefig=args.savefig, reference=args.reference,
                   ci=args.ci, n_boot=args.n_boot)

    return cli_main(command)


if __name__ == "__main__":
    sys.exit(main())
