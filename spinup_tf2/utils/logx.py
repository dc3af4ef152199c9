"""Some simple logging functionality, inspired by rllab's logging, as in Spinning Up.

Logs to a tab-separated-values file (path/to/output_directory/progress.txt),
prints each epoch's values as a table, and saves the model as a TensorFlow
SavedModel. Everything is written so that a crash, Ctrl-C or kill leaves the
files already written readable: progress.txt is flushed and synced after every
row, and checkpoints are written under a temporary name, then renamed.
"""

from __future__ import annotations

import atexit
import json
import os
import os.path as osp
import shutil
import time
import warnings

import joblib
import numpy as np

from spinup_tf2.utils.mpi_tools import mpi_statistics_scalar, proc_id
from spinup_tf2.utils.serialization_utils import convert_json

color2num = dict(gray=30, red=31, green=32, yellow=33, blue=34, magenta=35, cyan=36, white=37,
                 crimson=38)


def colorize(string: str, color: str, bold: bool = False, highlight: bool = False) -> str:
    """Colorize a string.

    This function was originally written by John Schulman.
    """
    attr = []
    num = color2num[color]
    if highlight:
        num += 10
    attr.append(str(num))
    if bold:
        attr.append("1")
    return "\x1b[%sm%s\x1b[0m" % (";".join(attr), string)


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


class Logger:
    """A general-purpose logger.

    Makes it easy to save diagnostics, hyperparameter configurations, the
    state of a training run, and the trained model.
    """

    def __init__(self, output_dir: str | None = None, output_fname: str | None = "progress.txt",
                 exp_name: str | None = None, tensorboard: bool = False,
                 append_after: int | None = None):
        """Initialize a Logger.

        Args:
            output_dir (string): A directory for saving results to. If
                ``None``, defaults to a temp directory of the form
                ``/tmp/experiments/somerandomnumber``.

            output_fname (string): Name for the tab-separated-value file
                containing metrics logged throughout a training run.
                Defaults to ``progress.txt``. ``None`` writes no file at all
                (the table is still printed).

            exp_name (string): Experiment name. If you run multiple training
                runs and give them all the same ``exp_name``, the plotter
                will know to group them. (Use case: if you run the same
                hyperparameter configuration with multiple random seeds, you
                should give them all the same ``exp_name``.)

            tensorboard (bool): Also write every logged value as a TensorBoard
                scalar per row into ``output_dir/tb/``, grouped by name
                (``AverageEpRet`` becomes ``EpRet/Average``), against
                ``TotalEnvInteracts`` when it is logged.

            append_after (int): Continue an existing progress.txt: keep its
                header and its first ``append_after`` rows, drop any later
                ones, and append (used to resume a run).
        """
        self.output_dir = None
        self.output_file = None
        self.first_row = True
        self.log_headers: list[str] = []
        self.log_current_row: dict = {}
        self.exp_name = exp_name
        self.tb_writer = None
        self.rows_written = 0
        if proc_id() == 0 and output_fname is not None:
            self.output_dir = output_dir or "/tmp/experiments/%i" % int(time.time())
            if append_after is None and osp.exists(self.output_dir):
                print("Warning: Log dir %s already exists! Storing info there anyway."
                      % self.output_dir)
            os.makedirs(self.output_dir, exist_ok=True)
            path = osp.join(self.output_dir, output_fname)
            if append_after is not None and osp.exists(path):
                with open(path) as f:
                    lines = f.read().splitlines(keepends=True)
                kept = [ln for ln in lines[:1 + append_after] if ln.endswith("\n")]
                _write_text_atomically(path, "".join(kept))
                if kept:
                    self.log_headers = kept[0].rstrip("\n").split("\t")
                    self.first_row = False
                    self.rows_written = len(kept) - 1
            self.output_file = open(path, "a" if append_after is not None else "w")
            atexit.register(self.output_file.close)
            print(colorize("Logging data to %s" % self.output_file.name, "green", bold=True))
            if tensorboard:
                from spinup_tf2.utils.tf_setup import import_tensorflow

                tf = import_tensorflow()
                self.tb_writer = tf.summary.create_file_writer(osp.join(self.output_dir, "tb"))

    def log(self, msg: str, color: str = "green") -> None:
        """Print a colorized message to stdout (rank 0 only)."""
        if proc_id() == 0:
            print(colorize(msg, color, bold=True), flush=True)

    def log_tabular(self, key: str, val) -> None:
        """Log a value of some diagnostic.

        Call this only once for each diagnostic quantity, each iteration.
        After using ``log_tabular`` to store values for each diagnostic,
        make sure to call ``dump_tabular`` to write them out to file and
        stdout (otherwise they will not get saved anywhere).
        """
        if self.first_row:
            self.log_headers.append(key)
        elif key not in self.log_headers:
            raise KeyError(
                "Trying to introduce a new key %s that you didn't include in the first "
                "iteration. The columns of progress.txt are fixed by the first call to "
                "dump_tabular; log every key in every iteration." % key)
        if key in self.log_current_row:
            raise KeyError("You already set %s this iteration. Maybe you forgot to call "
                           "dump_tabular()" % key)
        self.log_current_row[key] = val

    def save_config(self, config: dict) -> None:
        """Log an experiment configuration.

        Call this once at the top of your experiment, passing in all important
        config vars as a dict. This will serialize the config to JSON, while
        handling anything which can't be serialized in a graceful way (writing
        as informative a string as possible).

        Example use:

        .. code-block:: python

            logger = EpochLogger(**logger_kwargs)
            logger.save_config(locals())
        """
        config_json = convert_json(config)
        if self.exp_name is not None:
            config_json["exp_name"] = self.exp_name
        if proc_id() == 0:
            output = json.dumps(config_json, separators=(",", ":\t"), indent=4, sort_keys=True)
            print(colorize("Saving config:\n", color="cyan", bold=True))
            print(output)
            if self.output_dir is not None:
                _write_text_atomically(osp.join(self.output_dir, "config.json"), output)

    def save_state(self, state_dict: dict, itr: int | None = None) -> None:
        """Saves the state of an experiment.

        To be clear: this is about saving *state*, not logging diagnostics.
        All diagnostic logging is separate from this function. This function
        will save whatever is in ``state_dict``---usually just a copy of the
        environment---and the most recent parameters for the model you
        previously set up saving for with ``setup_tf2_saver``.

        Call with any frequency you prefer. If you only want to maintain a
        single state and overwrite it at each call with the most recent
        version, leave ``itr=None``. If you want to keep all of the states you
        save, provide unique (increasing) values for 'itr'.

        Args:
            state_dict (dict): Dictionary containing essential elements to
                describe the current state of training.

            itr: An int, or None. Current iteration of training.
        """
        if proc_id() != 0 or self.output_dir is None:
            return
        fname = "vars.pkl" if itr is None else "vars%d.pkl" % itr
        path = osp.join(self.output_dir, fname)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                joblib.dump(state_dict, path + ".tmp")
            os.replace(path + ".tmp", path)
        except Exception:
            if osp.exists(path + ".tmp"):
                os.remove(path + ".tmp")
            self.log("Warning: could not pickle state_dict.", color="red")
        if hasattr(self, "tf2_saver_module"):
            self._tf2_save(itr)

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

        fpath = osp.join(self.output_dir, "tf2_save" + ("%d" % itr if itr is not None else ""))
        tmp = fpath + ".tmp"
        if osp.exists(tmp):
            shutil.rmtree(tmp)
        module = self.tf2_saver_module
        tf.saved_model.save(module, tmp, signatures=module.export_signatures())
        replace_dir_atomically(tmp, fpath)

    def dump_tabular(self) -> None:
        """Write all of the diagnostics from the current iteration.

        Writes both to stdout, and to the output file.
        """
        if proc_id() == 0:
            vals = []
            key_lens = [len(key) for key in self.log_headers]
            max_key_len = max(15, max(key_lens))
            keystr = "%" + "%d" % max_key_len
            fmt = "| " + keystr + "s | %15s |"
            n_slashes = 22 + max_key_len
            lines = ["-" * n_slashes]
            for key in self.log_headers:
                val = self.log_current_row.get(key, "")
                valstr = "%8.3g" % val if hasattr(val, "__float__") else val
                lines.append(fmt % (key, valstr))
                vals.append(val)
            lines.append("-" * n_slashes)
            print("\n".join(lines), flush=True)
            if self.output_file is not None:
                text = ""
                if self.first_row:
                    text += "\t".join(self.log_headers) + "\n"
                text += "\t".join(map(str, vals)) + "\n"
                self.output_file.write(text)  # one write: a kill leaves whole rows
                self.output_file.flush()
                os.fsync(self.output_file.fileno())
            self.rows_written += 1
            if self.tb_writer is not None:
                self._write_tensorboard(dict(zip(self.log_headers, vals)))
        self.log_current_row.clear()
        self.first_row = False

    def _write_tensorboard(self, row: dict) -> None:
        import tensorflow as tf

        step = row.get("TotalEnvInteracts", self.rows_written)
        with self.tb_writer.as_default(step=int(step)):
            for key, val in row.items():
                if hasattr(val, "__float__") and key != "TotalEnvInteracts":
                    tf.summary.scalar(tensorboard_name(key), float(val))
        self.tb_writer.flush()


class EpochLogger(Logger):
    """A variant of Logger tailored for tracking average values over epochs.

    Typical use case: there is some quantity which is calculated many times
    throughout an epoch, and at the end of the epoch, you would like to
    report the average / std / min / max value of that quantity.

    With an EpochLogger, each time the quantity is calculated, you would
    use

    .. code-block:: python

        epoch_logger.store(NameOfQuantity=quantity_value)

    to load it into the EpochLogger's state. Then at the end of the epoch, you
    would use

    .. code-block:: python

        epoch_logger.log_tabular(NameOfQuantity, **options)

    to record the desired values.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.epoch_dict: dict[str, list] = dict()

    def store(self, **kwargs) -> None:
        """Save something into the epoch_logger's current state.

        Provide an arbitrary number of keyword arguments with numerical
        values. Arrays are welcome too: their elements count one by one.
        """
        for k, v in kwargs.items():
            if k not in self.epoch_dict:
                self.epoch_dict[k] = []
            self.epoch_dict[k].append(v)

    def log_tabular(self, key: str, val=None, with_min_and_max: bool = False,
                    average_only: bool = False) -> None:
        """Log a value or possibly the mean/std/min/max values of a diagnostic.

        Args:
            key (string): The name of the diagnostic. If you are logging a
                diagnostic whose state has previously been saved with
                ``store``, the key here has to match the key you used there.

            val: A value for the diagnostic. If you have previously saved
                values for this key via ``store``, do *not* provide a ``val``
                here.

            with_min_and_max (bool): If true, log min and max values of the
                diagnostic over the epoch.

            average_only (bool): If true, do not log the standard deviation
                of the diagnostic over the epoch.

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
        """Lets an algorithm ask the logger for mean/std(/min/max) of a diagnostic."""
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


def _write_text_atomically(path: str, text: str) -> None:
    with open(path + ".tmp", "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)
