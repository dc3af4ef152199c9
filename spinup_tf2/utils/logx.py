"""Logging for RL runs, with Spinning Up's file formats and behaviour.

One row of diagnostics per epoch goes to each of the logger's outputs (:class:`Output`:
the stdout table, a tab-separated progress.txt, and optionally TensorBoard; another
backend is one more class); the configuration goes to config.json; the model goes to a
TensorFlow SavedModel. Everything is written so that a crash, Ctrl-C or kill leaves the
files already written readable: progress.txt is flushed and synced after every
row, and checkpoints are written under a temporary name, then renamed.
"""

from __future__ import annotations

import atexit
import errno
import json
import os
import os.path as osp
import time
import warnings

import cloudpickle
import numpy as np

from spinup_tf2 import rundir
from spinup_tf2.errors import SpinupError, color2num, colorize  # noqa: F401  (Spinning Up's names)
from spinup_tf2.utils.mpi_tools import mpi_statistics_scalar, proc_id
from spinup_tf2.utils.outputs import Output  # noqa: F401  (logx.Output, as documented)
from spinup_tf2.utils.serialization_utils import convert_json


class Logger:
    """Writes a run's diagnostics (progress.txt and the stdout table), its
    configuration (config.json), and its saved state and model."""

    def __init__(self, output_dir: str | None = None, output_fname: str | None = rundir.PROGRESS,
                 exp_name: str | None = None, tensorboard: bool = False,
                 append_after: int | None = None, outputs: list | None = None,
                 quiet: bool = False, track=None, track_group: str | None = None):
        """Open the output directory and progress.txt.

        Args:
            output_dir (string): Where the files go; created if needed. If
                ``None``, ``/tmp/experiments/<unix time>``.

            output_fname (string): Name of the tab-separated file of logged
                rows (``progress.txt``). ``None`` writes no file at all (the
                table is still printed).

            exp_name (string): The experiment's name, stored in config.json.
                The plotter groups runs by it, so give the seeds of one
                configuration the same name.

            tensorboard (bool): Also write every logged value as a TensorBoard
                scalar per row into ``output_dir/tb/``, grouped by name
                (``AverageEpRet`` becomes ``EpRet/Average``), against
                ``TotalEnvInteracts`` when it is logged.

            append_after (int): Continue an existing progress.txt: keep its
                header and its first ``append_after`` rows, drop any later
                ones, and append (used to resume a run).

            outputs (list): More places each row goes, after the table,
                progress.txt and TensorBoard: :class:`Output` objects (a
                backend of one's own is one subclass with a ``write``).

            quiet (bool): Print one line saying where config.json is instead of
                the whole configuration (``--quiet``); the file is the same.

            track: Experiment trackers to send the run to: ``'mlflow'``, ``'wandb'``,
                or ``'mlflow,wandb'`` (``--track``; see
                :mod:`spinup_tf2.utils.trackers`).

            track_group (string): The trackers' group for the run (an MLflow
                experiment, a W&B group); default ``exp_name``. A grid or a study
                sets its own name.
        """
        self.quiet = quiet
        self.output_dir = None
        self.first_row = True
        self._warned_pickle = False
        self.log_headers: list[str] = []
        self.log_current_row: dict = {}
        self.exp_name = exp_name
        self.rows_written = 0
        self.outputs: list[Output] = []
        if proc_id() != 0:
            return
        self.outputs.append(TableOutput())
        if output_fname is not None:
            self.output_dir = output_dir or f"/tmp/experiments/{int(time.time())}"
            if append_after is None and osp.exists(osp.join(self.output_dir, output_fname)):
                print(f"Warning: Log dir {self.output_dir} already exists! Storing info there "
                      f"anyway.")
            try:
                os.makedirs(self.output_dir, exist_ok=True)
            except OSError as err:
                raise SpinupError(f"Cannot make the output directory {self.output_dir} "
                                  f"({err.strerror}). Give a directory you can write in "
                                  f"(output_dir, or --data_dir).") from None
            progress = ProgressOutput(self.output_dir, output_fname, append_after)
            if progress.header:
                self.log_headers, self.first_row = list(progress.header), False
            self.rows_written = progress.rows
            self.outputs.append(progress)
            print(colorize(f"Logging data to {progress.path}", "green", bold=True))
            if tensorboard:
                self.outputs.append(TensorBoardOutput(self.output_dir))
        self.outputs += list(outputs or [])
        if track and self.output_dir:
            from spinup_tf2.utils.trackers import make_trackers

            self.outputs += make_trackers(track, self.output_dir, track_group or exp_name)

    def log(self, msg: str, color: str = "green") -> None:
        """Print a colorized message to stdout (rank 0 only)."""
        if proc_id() == 0:
            print(colorize(msg, color, bold=True), flush=True)

    def log_tabular(self, key: str, val) -> None:
        """Set the value of column ``key`` in the current row.

        Each key once per row; the keys of the first row fix the columns.
        Nothing is written until ``dump_tabular``.
        """
        if self.first_row:
            self.log_headers.append(key)
        elif key not in self.log_headers:
            raise KeyError(
                f"Trying to introduce a new key {key} that you didn't include in the first "
                "iteration. The columns of progress.txt are fixed by the first call to "
                "dump_tabular; log every key in every iteration.")
        if key in self.log_current_row:
            raise KeyError(f"You already set {key} this iteration. Maybe you forgot to call "
                           "dump_tabular()")
        self.log_current_row[key] = val

    def save_config(self, config: dict) -> None:
        """Write ``config`` (typically ``locals()`` at the top of the
        algorithm) to config.json and print it.

        Values JSON cannot hold are written as descriptively as possible (see
        ``convert_json``); ``exp_name`` is added.

        .. code-block:: python

            logger = EpochLogger(**logger_kwargs)
            logger.save_config(locals())
        """
        config_json = convert_json(config)
        if self.exp_name is not None:
            config_json["exp_name"] = self.exp_name
        if proc_id() == 0:
            output = json.dumps(config_json, separators=(",", ":\t"), indent=4, sort_keys=True)
            if getattr(self, "quiet", False):
                where = osp.join(self.output_dir or ".", rundir.CONFIG)
                print(colorize(f"Configuration ({len(config_json)} settings): {where}",
                               color="cyan", bold=True))
            else:
                print(colorize("Saving config:\n", color="cyan", bold=True))
                print(output)
            if self.output_dir is not None:
                rundir.write_text(osp.join(self.output_dir, rundir.CONFIG), output)
            for out in self.outputs:  # the trackers open their runs with it
                if hasattr(out, "start"):
                    out.start(config_json)

    def save_state(self, state_dict: dict, itr: int | None = None) -> None:
        """Pickle ``state_dict`` (usually ``{'env': env}``) to vars.pkl and
        write the model set up with ``setup_tf2_saver`` to ``tf2_save/``; an ``env``'s
        normalizing wrappers' statistics go to ``env_state.json``, for replays.

        With ``itr=None`` each call replaces the previous files; with an int,
        the files are numbered (``vars<itr>.pkl``, ``tf2_save<itr>/``) and
        kept. Both are written under a temporary name and renamed into place.
        A state that cannot be pickled gives a warning, not an error.
        """
        if proc_id() != 0 or self.output_dir is None:
            return
        path = rundir.vars_path(self.output_dir, itr)
        try:
            # cloudpickle: wrappers holding lambdas and envs defined in a script pickle too
            # (joblib.load and pickle.load read the file, with cloudpickle installed).
            with rundir.atomic_file(path) as tmp, open(tmp, "wb") as f, \
                    warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cloudpickle.dump(state_dict, f)
        except Exception as err:
            if isinstance(err, OSError) and err.errno in rundir.WRITE_ERRNOS:
                raise  # the disk's refusal, not the state's: the run stops and says so
            if not self._warned_pickle:
                self.log(f"Warning: could not pickle state_dict ({type(err).__name__}: "
                         f"{str(err)[:120]}).", color="red")
                self._warned_pickle = True
        if hasattr(self, "tf2_saver_module"):
            self._tf2_save(itr)
        if "env" in state_dict:  # its wrappers' statistics, which replays of the policy need
            from spinup_tf2 import envs  # gymnasium only when an environment is saved

            envs.save_state(self.output_dir, state_dict["env"])

    def setup_tf2_saver(self, module) -> None:
        """Set up the model that ``save_state`` writes as a TensorFlow SavedModel.

        Args:
            module: A ``tf.Module`` whose method ``export_signatures()``
                returns a dict of name -> ``tf.function`` with an input
                signature, the functions to export, e.g.
                :class:`spinup_tf2.algos.sac.core.ActorCriticExport`.
        """
        self.tf2_saver_module = module

    def _tf2_save(self, itr: int | None = None) -> None:
        """Write the SavedModel to ``tf2_save/`` (or ``tf2_save<itr>/``)."""
        import tensorflow as tf  # imported by the caller already; kept local for light imports

        module = self.tf2_saver_module
        with rundir.atomic_dir(rundir.tf2_save_dir(self.output_dir, itr)) as tmp:
            try:
                tf.saved_model.save(module, tmp, signatures=module.export_signatures())
            except tf.errors.OpError as err:  # TensorFlow's own file layer: disk full, ...
                raise OSError(errno.EIO, f"TensorFlow could not write the SavedModel "
                                         f"({err.message.split('; ')[-1]})", tmp) from None

    def dump_tabular(self) -> None:
        """Write the current row to every output (the stdout table, progress.txt with
        the header first on the first row, TensorBoard); then start a new row."""
        if proc_id() == 0:
            row = {key: self.log_current_row.get(key, "") for key in self.log_headers}
            for output in self.outputs:
                output.write(row, self.rows_written)
            self.rows_written += 1
        self.log_current_row.clear()
        self.first_row = False

    def finish(self) -> None:
        """The run ended as it should: each output says so (a tracker sends the saved
        policy and closes its run as finished)."""
        for output in self.outputs:
            if hasattr(output, "finish"):
                output.finish(True)

    def close(self) -> None:
        """Close every output (also done at exit)."""
        for output in self.outputs:
            output.close()


class TableOutput(Output):
    """Spinning Up's table of the row on stdout: one line per column, numbers to three
    significant figures."""

    def write(self, row: dict, index: int) -> None:
        """Print the row as a table."""
        max_key_len = max(15, max(len(key) for key in row))
        lines = ["-" * (22 + max_key_len)]
        for key, val in row.items():
            text = f"{float(val):8.3g}" if hasattr(val, "__float__") else val
            lines.append(f"| {key:>{max_key_len}} | {str(text):>15} |")
        lines.append(lines[0])
        print("\n".join(lines), flush=True)


class ProgressOutput(Output):
    """progress.txt: tab-separated, the header on the first line, one line per row;
    flushed and synced after every row, each written in one call, so a kill leaves whole
    rows. ``append_after``: continue the file after its first that many rows (resume);
    ``header`` and ``rows`` are then the kept header and row count."""

    def __init__(self, output_dir: str, fname: str = rundir.PROGRESS,
                 append_after: int | None = None):
        self.file, self.header, self.rows = rundir.open_progress(output_dir, append_after,
                                                                 fname)
        self.path = self.file.name
        atexit.register(self.file.close)

    def write(self, row: dict, index: int) -> None:
        """Append the row (after the header, the first time)."""
        text = "" if self.header else "\t".join(row) + "\n"
        self.header = self.header or list(row)
        text += "\t".join(map(str, row.values())) + "\n"
        self.file.write(text)  # one write: a kill leaves whole rows
        self.file.flush()
        os.fsync(self.file.fileno())

    def close(self) -> None:
        """Close progress.txt."""
        self.file.close()


class TensorBoardOutput(Output):
    """Every numeric value of the row as a TensorBoard scalar in ``output_dir/tb/``, named
    by :func:`tensorboard_name`, against ``TotalEnvInteracts`` when the row has it (else
    the row's index)."""

    def __init__(self, output_dir: str):
        from spinup_tf2.tf_setup import import_tensorflow

        self.tf = import_tensorflow()
        self.writer = self.tf.summary.create_file_writer(osp.join(output_dir,
                                                                  rundir.TENSORBOARD))

    def write(self, row: dict, index: int) -> None:
        """Write the row's scalars and flush."""
        step = row.get("TotalEnvInteracts", index)
        with self.writer.as_default(step=int(step)):
            for key, val in row.items():
                if hasattr(val, "__float__") and key != "TotalEnvInteracts":
                    self.tf.summary.scalar(tensorboard_name(key), float(val))
        self.writer.flush()

    def close(self) -> None:
        """Close the event file."""
        self.writer.close()


class EpochLogger(Logger):
    """A Logger that also collects values during an epoch and logs their
    statistics at its end.

    .. code-block:: python

        logger.store(LossQ=loss_q)           # as often as it is computed
        ...
        logger.log_tabular('LossQ', average_only=True)   # once, at the epoch's end
        logger.dump_tabular()
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.epoch_dict: dict[str, list] = dict()

    def store(self, **kwargs) -> None:
        """Collect values for the current epoch: ``store(Key=value, ...)``.
        Numbers or arrays; an array's elements count one by one."""
        for k, v in kwargs.items():
            if k not in self.epoch_dict:
                self.epoch_dict[k] = []
            self.epoch_dict[k].append(v)

    def log_tabular(self, key: str, val=None, with_min_and_max: bool = False,
                    average_only: bool = False) -> None:
        """Log ``val`` as column ``key``; or, without ``val``, the statistics
        of the values stored under ``key`` this epoch.

        Args:
            key (string): The column, or the name used with ``store``.

            val: A value to log as it is. Leave it out for stored values.

            with_min_and_max (bool): Also log ``Max<key>`` and ``Min<key>``.

            average_only (bool): Log only the mean, as column ``<key>``
                (otherwise ``Average<key>`` and ``Std<key>``).

        A key stored in no call since the last epoch (say, no training episode
        ended in this epoch) is logged as NaN rather than failing.
        """
        if val is not None:
            super().log_tabular(key, val)
        else:
            stats = self.get_stats(key, with_min_and_max)
            super().log_tabular(key if average_only else "Average" + key, stats[0])
            if not average_only:
                super().log_tabular("Std" + key, stats[1])
            if with_min_and_max:
                super().log_tabular("Max" + key, stats[3])
                super().log_tabular("Min" + key, stats[2])
        self.epoch_dict[key] = []

    def get_stats(self, key: str, with_min_and_max: bool = True):
        """Mean and std (and min, max) of the values stored under ``key`` this epoch."""
        v = self.epoch_dict.get(key, [])
        vals = np.concatenate([np.ravel(x) for x in v]) if len(v) > 0 else np.zeros(0)
        return mpi_statistics_scalar(vals, with_min_and_max=with_min_and_max)


def tensorboard_name(key: str) -> str:
    """``AverageEpRet`` -> ``EpRet/Average`` (likewise Std, Max, Min): TensorBoard
    then shows a diagnostic's statistics together. Other keys stay as they are."""
    for prefix in ("Average", "Std", "Max", "Min"):
        if key.startswith(prefix) and len(key) > len(prefix) and key[len(prefix)].isupper():
            return key[len(prefix):] + "/" + prefix
    return key
