"""Training checkpoints: everything a run needs to continue exactly where it stopped.

A checkpoint is a folder ``train_state/`` in the run's output directory with
``arrays.npz`` (every variable of the networks, targets, optimizers and entropy
tuner, each under its name, e.g. ``var:ac/q1/q/1/kernel`` (see
:func:`named_variables`); the replay buffer; the actions of the episode in
progress) and ``state.json`` (counters and random-generator states).
Checkpoints of release 0.2, which kept the trainable variables by position
(``var0``, ``var1``, ...), still resume. Nothing in it is pickled, so resuming a run reads
data and runs no code from the run directory. It is written as
``train_state.tmp/`` and renamed into place, so a kill at any moment leaves the
previous checkpoint whole (see :func:`spinup_tf2.rundir.atomic_dir`).
"""

from __future__ import annotations

import json
import os
import os.path as osp
import re
import zipfile

import numpy as np

from spinup_tf2 import arguments, rundir
from spinup_tf2.envs.episodes import rng_state, set_rng_state
from spinup_tf2.errors import SpinupError
from spinup_tf2.utils.mpi_tools import num_procs, proc_id
from spinup_tf2.utils.serialization_utils import convert_json

# What config.json holds now that runs of earlier releases lack, and the value such a run
# had (ANY: whatever it is now, as env_spec, recorded since 0.2): sac()'s arguments as the
# table of spinup_tf2.arguments declares them.
ANY = object()
ADDED_ARGS = {**arguments.ADDED_ARGS, "env_spec": ANY}
# Arguments a resumed call may change: how long the run goes on, how it is saved and watched.
FREE_ARGS = arguments.FREE_ARGS


def check_output_dir(config: dict, logger_kwargs: dict, resume: bool,
                     overwrite: bool) -> int | None:
    """Before a run writes anything: give a new run without an output directory a fresh
    one (:func:`spinup_tf2.rundir.new_run_dir`, set in ``logger_kwargs``); make this process
    the one writer of it (:func:`spinup_tf2.rundir.claim`; a directory with symbolic links
    where run files go is refused); then return the epoch it resumes from (``resume=True``,
    see :meth:`TrainingCheckpoint.check_resume`), else None after making sure it destroys no
    other run's record (:func:`spinup_tf2.rundir.check_fresh_output_dir`). Only the first
    MPI process looks (the others write nothing)."""
    if not logger_kwargs.get("output_dir") and not resume and proc_id() == 0:
        logger_kwargs["output_dir"] = rundir.new_run_dir(logger_kwargs.get("exp_name"))
    output_dir = logger_kwargs.get("output_dir")
    if output_dir and proc_id() == 0:
        rundir.check_writable_dir(output_dir, "The output directory")
        rundir.check_no_links(output_dir)
        if osp.isdir(output_dir) or not resume:  # resuming nothing: check_resume says so
            rundir.claim(output_dir, "resuming a run" if resume else "a run")
    try:
        if resume:
            return TrainingCheckpoint.check_resume(config, output_dir)
        if proc_id() == 0:
            rundir.check_fresh_output_dir(output_dir, overwrite)
    except SpinupError:
        rundir.release(output_dir)  # refused: this process writes nothing there
        raise
    return None


class TrainingCheckpoint:
    """The training state of one run, saved after an epoch and restored to resume it.

    It holds: every variable (networks, targets, optimizer and entropy-tuner
    states, observation statistics and any other non-trainable state, by name:
    :func:`named_variables`), the replay buffer, the
    random generator of exploration and minibatches, both environments (each a
    :class:`spinup_tf2.envs.episodes.ReplayableEpisodes`, which rebuilds
    the episode in progress), the observation normalizer's accumulators, and
    the loop's counters. A run resumed from it continues exactly as if it had
    never stopped.

    Use :meth:`check_resume` before writing anything to the run directory,
    :meth:`restore` once before the loop, :meth:`save` after each saved epoch.
    """

    def __init__(self, output_dir: str | None, state: dict, normalizer, replay_buffer,
                 rng: np.random.Generator, env, test_env, agent=None):
        """``state``: what holds variables, by name: the actor-critic ``ac``, its targets
        ``ac_targ`` (None for a variant without), the optimizers ``pi_optimizer`` and
        ``q_optimizer``, the entropy ``tuner`` (None for a fixed alpha), and anything
        more a variant has (the update's own variables); ``normalizer`` (the observation
        normalizer) may be None; ``agent`` (an :class:`~spinup_tf2.algos.sac.agent.Agent`)
        keeps the episode in progress's memory, if it has one, and :meth:`restore`
        refreshes it with the restored weights."""
        self.output_dir = output_dir
        self.variables = named_variables({**state, "obs_normalizer": normalizer})
        # Release 0.2's checkpoints: trainable variables, optimizers, tuner, statistics.
        models = [state[k] for k in ("ac", "ac_targ") if state.get(k) is not None]
        self.legacy_variables = [v for m in models for v in m.trainable_variables]
        self.legacy_variables += [v for k in ("pi_optimizer", "q_optimizer")
                                  for v in state[k].variables]
        tuner = state.get("tuner")
        self.legacy_variables += ((tuner.variables if tuner else [])
                                  + (normalizer.weights if normalizer else []))
        self.replay_buffer, self.rng = replay_buffer, rng
        self.env, self.test_env, self.normalizer = env, test_env, normalizer
        self.agent = agent

    @staticmethod
    def check_resume(config: dict, output_dir: str | None) -> int:
        """The epoch the run in ``output_dir`` has a checkpoint of,
        after checking that a call with arguments ``config`` may resume it: the
        checkpoint exists and belongs to the progress.txt beside it, its config.json
        agrees (apart from :data:`FREE_ARGS`), and epochs go further."""
        if num_procs() > 1:
            raise SpinupError(f"resume=True is not available for data-parallel runs "
                              f"({num_procs()} MPI processes): their checkpoints would need "
                              f"every process's buffer and environments. Resume runs made "
                              f"with one process.")
        if not output_dir or not osp.isdir(output_dir):
            raise SpinupError(f"resume=True needs logger_kwargs['output_dir'] to be the "
                              f"directory of an earlier run; got {output_dir!r}, which does "
                              f"not exist. Nothing was written. Start the run without --resume "
                              f"(resume=False), or name the directory of the run to resume: "
                              f"--resume DIR on the command line.")
        folder = rundir.existing_dir(osp.join(output_dir, rundir.TRAIN_STATE))
        if folder is None or not osp.exists(osp.join(folder, "state.json")):
            rows = rundir.progress_rows(output_dir)
            again = ("start it again in its place with --overwrite (overwrite=True) instead of "
                     f"--resume; that replaces its progress.txt of {rows} epochs" if rows else
                     "start it again without --resume")
            raise SpinupError(f"resume=True, but {output_dir} holds no training checkpoint "
                              f"(train_state/): the run stopped before its first checkpoint, "
                              f"or was made without checkpoints. Nothing was written. To run "
                              f"it, {again}.")
        state = _read_checkpoint_state(folder)
        old = rundir.read_config(output_dir) or {}
        new = json.loads(json.dumps(convert_json(config)))  # as config.json would hold it
        differ = sorted(k for k in set(old) | set(new) if k not in FREE_ARGS
                        and old.get(k, "<missing>") != new.get(k, "<missing>")
                        and not (k == "target_entropy" and old.get(k) is None)
                        and not (k not in old and k in ADDED_ARGS
                                 and ADDED_ARGS[k] in (ANY, new.get(k))))
        if differ:
            details = "; ".join(f"{k}: {old.get(k, '<missing>')!r} there, "
                                f"{new.get(k, '<missing>')!r} now" for k in differ)
            raise SpinupError(f"resume=True, but these arguments differ from the run in "
                              f"{output_dir}: {details}. Resume with the run's own arguments "
                              f"(only epochs and save_freq may change), or start a new run in "
                              f"another directory.")
        digest = state.get("progress_sha256")
        if digest is None or rundir.progress_digest(output_dir, state["epoch"]) != digest:
            raise SpinupError(
                f"resume=True, but the training checkpoint in {output_dir} (epoch "
                f"{state['epoch']}) does not belong to the progress.txt beside it: its first "
                f"{state['epoch']} rows are missing or not the ones the checkpoint was saved "
                f"with, so resuming would mix two runs. Nothing was written. Start a new run "
                f"elsewhere, or replace this one with overwrite=True (--overwrite).")
        if state["t"] > config["steps_per_epoch"] * config["epochs"]:
            raise SpinupError(f"resume=True with epochs={config['epochs']}, but the run in "
                              f"{output_dir} is already at epoch {state['epoch']}. Give more "
                              f"epochs.")
        return state["epoch"]

    def save(self, t: int, epoch: int, ep_ret: float, ep_len: int, elapsed: float) -> None:
        """Write the checkpoint after ``t`` env steps (the end of ``epoch``), with the
        episode in progress at return ``ep_ret`` and length ``ep_len``; ``elapsed``
        is the run's time so far. Does nothing without an output directory or
        with several MPI processes."""
        if self.output_dir is None or num_procs() > 1:
            return
        state = dict(t=t, epoch=epoch, ep_ret=float(ep_ret), ep_len=int(ep_len),
                     elapsed=float(elapsed), rng=rng_state(self.rng),
                     progress_sha256=rundir.progress_digest(self.output_dir, epoch),
                     env=self.env.state(), test_env=self.test_env.state(episode=False),
                     normalizer=self.normalizer.state() if self.normalizer else None)
        arrays = {VAR + name: v.numpy() for name, v in self.variables.items()}
        arrays.update(self.replay_buffer.state_arrays())
        if self.agent is not None:
            arrays.update(self.agent.state_arrays())
        state = _arrays_out(state, arrays, "")
        with rundir.atomic_dir(osp.join(self.output_dir, rundir.TRAIN_STATE)) as tmp:
            write_npz(osp.join(tmp, "arrays.npz"), arrays,
                      compress=getattr(self.replay_buffer, "compress", False))
            with open(osp.join(tmp, "state.json"), "w") as f:
                json.dump(state, f)

    def restore(self) -> tuple:
        """Put everything back as it was at the checkpoint (see :meth:`check_resume`),
        the agent acting with the restored weights; return ``(o, t, ep_ret, ep_len,
        elapsed)``: the current observation, env steps done, the episode in progress's
        return and length, time so far."""
        folder = rundir.existing_dir(osp.join(self.output_dir, rundir.TRAIN_STATE))
        try:
            with np.load(osp.join(folder, "arrays.npz"), allow_pickle=False) as data:
                self._check_sizes(data.zip)
                arrays = NpzArrays(data)
                state = _arrays_in(_read_checkpoint_state(folder), arrays)
                self._assign_variables(arrays)
                self.replay_buffer.load_state_arrays(arrays)
                if self.agent is not None:
                    self.agent.load_state_arrays(arrays)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
            raise _damaged(folder, err, nothing_written=False) from None
        try:
            if self.normalizer is not None:
                self.normalizer.load_state(state["normalizer"])
            set_rng_state(self.rng, state["rng"])
            self.test_env.restore(state["test_env"])
            o = self.env.restore(state["env"])
            if self.agent is not None:
                self.agent.refresh()  # it acts with the restored weights
        except Exception as err:  # replaying the episode's actions: the env may raise anything
            raise _damaged(folder, err, nothing_written=False) from None
        print(f"Resuming the run in {self.output_dir} after epoch {state['epoch']} "
              f"(env step {state['t']}).", flush=True)
        return o, state["t"], state["ep_ret"], state["ep_len"], state["elapsed"]


    def _check_sizes(self, archive: zipfile.ZipFile) -> None:
        """Raise ValueError if the arrays in ``archive`` would hold more than this run's
        variables, replay buffer and agent do (with room for the headers): more is a
        crafted or damaged checkpoint, never read into memory."""
        # The buffer an n-step writer feeds (the writer's open windows fit in the room
        # left for headers).
        buffer = getattr(self.replay_buffer, "buffer", self.replay_buffer)
        room = sum(v.nbytes for v in vars(buffer).values() if isinstance(v, np.ndarray))
        if not room:  # a buffer of one's own that keeps its data otherwise: no bound known
            return
        room += sum(int(np.prod(v.shape)) * np.dtype(getattr(v.dtype, "name", v.dtype)).itemsize
                    for v in self.variables.values() if None not in v.shape)
        room += (1 << 26) + 256 * len(self.variables)
        declared = sum(info.file_size for info in archive.infolist())
        if declared > room:
            raise ValueError(f"its arrays would take {declared:,} bytes, more than the "
                             f"{room:,} this run's model and replay buffer hold")

    def _assign_variables(self, arrays: NpzArrays) -> None:
        """Every variable from ``arrays``, by name (or, from a release 0.2 checkpoint,
        by position); a checkpoint that lacks one of this run's variables, or holds
        one this run has not, belongs to another model and is refused."""
        if "var0" in arrays and not any(k.startswith(VAR) for k in arrays.files):
            names = [f"var{i}" for i in range(len(self.legacy_variables))]
            variables = dict(zip(names, self.legacy_variables, strict=True))
        else:
            names = [VAR + name for name in self.variables]
            variables = dict(zip(names, self.variables.values(), strict=True))
        stored = {k for k in arrays.files if k.startswith(VAR) or _LEGACY.fullmatch(k)}
        missing, extra = sorted(set(names) - stored), sorted(stored - set(names))
        if missing or extra:
            raise ValueError(f"its variables are not this run's: it lacks {missing[:5]} and "
                             f"holds {extra[:5]} (of {len(missing)} and {len(extra)})")
        for name, v in variables.items():
            value = arrays[name]
            if len(value.shape) != len(v.shape) or any(  # None: a length the model leaves open
                    n is not None and n != m
                    for n, m in zip(tuple(v.shape), value.shape, strict=True)):
                raise ValueError(f"{name} has shape {list(value.shape)}, the model's "
                                 f"variable {list(v.shape)}")
            # Weights and statistics alike (CrossQ's Batch Renormalization means, a
            # normalizer's, Adam's moments): a run stops before it saves a non-finite one.
            if value.dtype.kind in "fc" and not np.all(np.isfinite(value)):
                bad = int(np.size(value) - np.count_nonzero(np.isfinite(value)))
                raise ValueError(f"arrays.npz's {name} holds {bad} non-finite value(s) (NaN "
                                 f"or inf), which no run saves")
            v.assign(value)


# A variable's key in arrays.npz: this prefix, then its name (see named_variables).
VAR = "var:"
_LEGACY = re.compile(r"var\d+")


def named_variables(roots: dict) -> dict:
    """Every variable reachable from ``roots`` (``{name: object}``; None is skipped),
    each once, keyed by the path that reaches it, trainable or not::

        {"ac/pi/net/1/kernel": ..., "ac/q1/q/1/bias": ..., "pi_optimizer/m/ac/pi/net/1/kernel":
         ..., "tuner/log_alpha": ...}

    A Keras layer's own variables are named by their names (``kernel``, ``moving_mean``),
    its sublayers by the attribute that holds them or else their position (Sequential's
    layers); a variable reached twice (a layer shared by several models) keeps the first
    path. The root objects are walked through their attributes, lists and dicts; an object
    with ``named_variables(name_of)`` (the optimizers, the entropy tuner) names its own,
    ``name_of`` giving the name of a variable already found. Names come from the code's
    structure, not from Keras' automatic layer names (``dense_7``), which depend on how
    many layers a process made before, so a checkpoint resumes in any process."""
    namer = _Namer()
    for name, obj in roots.items():
        namer.walk(obj, name, root=True)
    return namer.named


class _Namer:
    """:func:`named_variables`' walk: ``named`` (name -> variable) as it goes."""

    def __init__(self):
        import keras

        from spinup_tf2.tf_setup import import_tensorflow

        self.keras, self.tf = keras, import_tensorflow()
        self.named, self.found = {}, {}  # name -> variable; id of the tf.Variable -> name

    def key(self, var) -> int:
        return id(var.value if isinstance(var, self.keras.Variable) else var)

    def add(self, path: str, var) -> None:
        key = self.key(var)
        if key in self.found:
            return
        while path in self.named:  # two variables of one layer with one name
            path += "_"
        self.named[path], self.found[key] = var, path

    def name_of(self, var) -> str:
        return self.found[self.key(var)]

    def walk(self, obj, path: str, root: bool = False) -> None:
        if isinstance(obj, (self.keras.Variable, self.tf.Variable)):
            self.add(path, obj)
        elif isinstance(obj, self.keras.layers.Layer):
            self.walk_layer(obj, path)
        elif hasattr(obj, "named_variables"):
            for k, v in obj.named_variables(self.name_of).items():
                self.add(f"{path}/{k}", v)
        elif isinstance(obj, (list, tuple)):
            for i, value in enumerate(obj):
                self.walk(value, f"{path}/{i}")
        elif isinstance(obj, dict):
            for k, value in obj.items():
                self.walk(value, f"{path}/{k}")
        elif root and obj is not None:  # an actor-critic: its models are its attributes
            for k, value in vars(obj).items():
                self.walk(value, f"{path}/{k}")

    def walk_layer(self, layer, path: str) -> None:
        """A layer's own variables by their names, then its sublayers by the attribute that
        holds them (else their position), then the tf.Variables Keras does not track."""
        subs = list(layer._flatten_layers(include_self=False, recursive=False))
        inner = {id(v) for sub in subs for v in sub.variables}
        for v in layer.variables:
            if id(v) not in inner:
                self.add(f"{path}/{v.name}", v)
        attrs = {id(value): k for k, value in vars(layer).items()
                 if isinstance(value, self.keras.layers.Layer) and not k.startswith("_")}
        for i, sub in enumerate(subs):
            self.walk(sub, f"{path}/{attrs.get(id(sub), i)}")
        for k, value in vars(layer).items():
            if isinstance(value, self.tf.Variable):
                self.add(f"{path}/{k}", value)


def write_npz(path: str, arrays: dict, compress: bool = False) -> None:
    """``np.savez`` (``compress``: deflated, at zlib's fastest level), each array
    written in chunks, so that saving never copies a large one (a pixel buffer's
    frames) whole."""
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(path, "w", method, compresslevel=1 if compress else None) as z:
        for name, array in arrays.items():
            with z.open(name + ".npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asarray(array), allow_pickle=False)


class NpzArrays:
    """A checkpoint's arrays, read when asked for: ``arrays[name]``, or
    ``into(name, out)``, which reads one straight into an existing array in chunks."""

    CHUNK = 1 << 24

    def __init__(self, npz):
        self.npz = npz

    def __getitem__(self, name: str) -> np.ndarray:
        return self.npz[name]

    def __contains__(self, name: str) -> bool:
        return name in self.npz.files

    @property
    def files(self) -> list:
        """The names of the arrays."""
        return self.npz.files

    def into(self, name: str, out: np.ndarray) -> None:
        """Fill ``out`` (C-contiguous) with the array ``name``, which must have its
        shape and dtype."""
        with self.npz.zip.open(name + ".npy") as f:
            version = np.lib.format.read_magic(f)
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)
            shape, fortran, dtype = read_header(f)
            if tuple(shape) != out.shape or dtype != out.dtype or fortran:
                raise ValueError(f"{name} in arrays.npz is {dtype}{list(shape)}, not "
                                 f"{out.dtype}{list(out.shape)}")
            view = memoryview(out.reshape(-1).view(np.uint8))
            for start in range(0, len(view), self.CHUNK):
                chunk = view[start:start + self.CHUNK]
                if f.readinto(chunk) != len(chunk):
                    raise ValueError(f"{name} in arrays.npz is cut short")


# The most arrays.npz may hold: its arrays were in this machine's memory when it was written.
MAX_ARRAYS_BYTES = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _read_checkpoint_state(folder: str) -> dict:
    """state.json of the checkpoint in ``folder``, after checking that it parses and
    that every array in arrays.npz reads back whole (zip CRCs): a damaged
    checkpoint is refused before anything is written."""
    try:
        rundir.check_file(osp.join(folder, "state.json"))
        rundir.check_file(osp.join(folder, "arrays.npz"), limit=MAX_ARRAYS_BYTES)
        with open(osp.join(folder, "state.json")) as f:
            state = json.load(f)
        _check_state_types(state)
        with zipfile.ZipFile(osp.join(folder, "arrays.npz")) as z:
            bad = z.testzip()
        if bad is not None:
            raise ValueError(f"{bad} in arrays.npz does not match its checksum")
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        raise _damaged(folder, err) from None
    return state


# state.json's keys and the kinds of value each must have.
# (A missing digest is check_resume's to refuse, with its own message.)
STATE_TYPES = {"t": int, "epoch": int, "ep_len": int, "ep_ret": (int, float),
               "elapsed": (int, float), "rng": dict, "progress_sha256": (str, type(None)),
               "env": dict, "test_env": dict, "normalizer": (dict, type(None))}


def _check_state_types(state) -> None:
    """Raise ValueError naming the first key of state.json that is missing or of the
    wrong kind (the loop would fail on it later, after progress.txt was reopened)."""
    if not isinstance(state, dict):
        raise ValueError(f"state.json holds a {type(state).__name__}, not an object")
    for key, kind in STATE_TYPES.items():
        value = state.get(key, "<missing>")
        if (key not in state or not isinstance(value, kind) or isinstance(value, bool)
                or kind is int and value < 0):
            raise ValueError(f"state.json's {key!r} is {value!r}, not a "
                             f"{'whole number >= 0' if kind is int else 'valid value'}")
    rngs = {"rng": state["rng"]}
    for env in ("env", "test_env"):
        for key in ("first_seed", "episode_start", "actions", "np_random", "action_space_rng"):
            if key not in state[env]:
                raise ValueError(f"state.json's {env!r} has no {key!r}")
        rngs.update({f"{env}.np_random": state[env]["np_random"],
                     f"{env}.action_space_rng": state[env]["action_space_rng"]})
    for key, rng in rngs.items():
        kind = rng.get("bit_generator") if isinstance(rng, dict) else None
        bits = getattr(np.random, kind, None) if isinstance(kind, str) else None
        try:
            if not (isinstance(bits, type) and issubclass(bits, np.random.BitGenerator)):
                raise ValueError(kind)
            if "__array__" not in json.dumps(rng):  # (MT19937's key is in arrays.npz)
                bits().state = rng
        except Exception:  # numpy raises several kinds for a state it cannot take
            raise ValueError(f"state.json's {key!r} is not a random generator's state") from None


def _damaged(folder: str, err: Exception, nothing_written: bool = True) -> SpinupError:
    return SpinupError(
        f"resume=True, but the training checkpoint {folder} is damaged and cannot be read "
        f"({type(err).__name__}: {err}); it was cut short or altered after it was written. "
        + ("Nothing was written, and progress.txt is as it was. " if nothing_written else "")
        + "Start the run again with --overwrite (overwrite=True), or in another directory.")


def _arrays_out(tree, arrays: dict, path: str):
    """``tree`` with each numpy array moved into ``arrays`` (under its path) and
    replaced by ``{"__array__": path}``, so the rest can be written as JSON."""
    if isinstance(tree, dict):
        return {k: _arrays_out(v, arrays, f"{path}.{k}" if path else k) for k, v in tree.items()}
    if isinstance(tree, np.ndarray):
        arrays[path] = tree
        return {"__array__": path}
    return tree


def _arrays_in(tree, arrays: dict):
    """The inverse of :func:`_arrays_out`."""
    if isinstance(tree, dict):
        if set(tree) == {"__array__"}:
            return arrays[tree["__array__"]]
        return {k: _arrays_in(v, arrays) for k, v in tree.items()}
    return tree
