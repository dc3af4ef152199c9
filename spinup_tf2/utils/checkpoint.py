"""Training checkpoints: everything a run needs to continue exactly where it stopped.

A checkpoint is a folder ``train_state/`` in the run's output directory with
``arrays.npz`` (network and optimizer variables, the replay buffer) and
``state.pkl`` (counters, random-generator states, the episode in progress). It
is written as ``train_state.tmp/`` and renamed into place, so a kill at any
moment leaves the previous checkpoint whole (see ``logx.replace_dir_atomically``).
"""

from __future__ import annotations

import os
import os.path as osp
import pickle
import shutil

import numpy as np

from spinup_tf2.utils.logx import existing_checkpoint_dir, replace_dir_atomically

TRAIN_STATE = "train_state"


def save_train_state(output_dir: str, arrays: dict, state: dict) -> str:
    """Write ``arrays`` (name -> numpy array) and ``state`` (picklable) atomically;
    return the checkpoint folder."""
    final = osp.join(output_dir, TRAIN_STATE)
    tmp = final + ".tmp"
    if osp.exists(tmp):
        shutil.rmtree(tmp)
    os.makedirs(tmp)
    np.savez(osp.join(tmp, "arrays.npz"), **arrays)
    with open(osp.join(tmp, "state.pkl"), "wb") as f:
        pickle.dump(state, f, protocol=pickle.HIGHEST_PROTOCOL)
    for name in ("arrays.npz", "state.pkl"):  # on disk before the rename makes them current
        with open(osp.join(tmp, name), "rb") as f:
            os.fsync(f.fileno())
    replace_dir_atomically(tmp, final)
    return final


def load_train_state(output_dir: str):
    """``(arrays, state)`` of the run's last checkpoint, or None if there is none."""
    folder = existing_checkpoint_dir(osp.join(output_dir, TRAIN_STATE))
    if folder is None:
        return None
    with np.load(osp.join(folder, "arrays.npz")) as data:
        arrays = {k: data[k] for k in data.files}
    with open(osp.join(folder, "state.pkl"), "rb") as f:
        state = pickle.load(f)
    return arrays, state


def rng_state(generator: np.random.Generator) -> dict:
    """The state of a numpy Generator, as a plain dict."""
    return generator.bit_generator.state


def set_rng_state(generator: np.random.Generator, state: dict) -> None:
    """Put a numpy Generator back into a state from :func:`rng_state`."""
    generator.bit_generator.state = state
