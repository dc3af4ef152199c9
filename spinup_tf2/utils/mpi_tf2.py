"""Keras/TensorFlow variables across MPI processes: start them equal, average
their gradients (and running statistics), check they stayed equal. With one process (or
no MPI) every function here is a no-op that says nothing."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from spinup_tf2.tf_setup import tf_variables
from spinup_tf2.utils.mpi_tools import _get_comm, broadcast, mpi_avg, num_procs


def sync_params(variables) -> None:
    """Give every process rank 0's values of ``variables`` (one broadcast of
    one flat buffer)."""
    if num_procs() == 1:
        return
    variables = tf_variables(variables)
    flat = np.concatenate([v.numpy().ravel() for v in variables]).astype(np.float32)
    broadcast(flat)
    offset = 0
    for v in variables:
        size = int(np.prod(v.shape))
        v.assign(flat[offset:offset + size].reshape(v.shape))
        offset += size


def average_params(variables) -> None:
    """Give every process the mean over all processes of ``variables`` (one allreduce of
    one flat buffer): for state each process moves from its own minibatches, such as
    Batch Renormalization's running statistics, so that all keep one model."""
    variables = tf_variables(variables)
    if num_procs() == 1 or not variables:
        return
    flat = mpi_avg(np.concatenate([v.numpy().ravel() for v in variables]).astype(np.float32))
    offset = 0
    for v in variables:
        size = int(np.prod(v.shape))
        v.assign(flat[offset:offset + size].reshape(v.shape))
        offset += size


def params_in_sync(variables, atol: float = 0.0) -> bool:
    """True on every process if all processes hold the same ``variables``
    (within ``atol``): each compares its values with rank 0's."""
    if num_procs() == 1:
        return True
    flat = np.concatenate([v.numpy().ravel() for v in tf_variables(variables)]).astype(np.float32)
    ref = flat.copy()
    broadcast(ref)
    same = np.array([1.0 if np.allclose(flat, ref, rtol=0.0, atol=atol) else 0.0])
    from mpi4py import MPI

    out = np.zeros(1)
    _get_comm().Allreduce(same, out, op=MPI.MIN)
    return bool(out[0] == 1.0)


def make_grad_averager() -> Callable | None:
    """``average(grads)`` for use inside a ``tf.function``: the mean of each
    gradient in ``grads`` (any nest of lists and dicts of tensors) over all
    processes, by one allreduce of one flat float32 buffer; the result has the
    same structure. None with a single process, so callers skip the step."""
    n = num_procs()
    if n == 1:
        return None
    import tensorflow as tf
    from mpi4py import MPI

    comm = _get_comm()

    def allreduce_mean(flat: np.ndarray) -> np.ndarray:
        out = np.empty_like(flat)
        comm.Allreduce(flat, out, op=MPI.SUM)
        out /= n
        return out

    def average(nested_grads):
        grads = tf.nest.flatten(nested_grads)
        shapes = [tf.shape(g) for g in grads]
        sizes = [tf.size(g) for g in grads]
        flat = tf.concat([tf.reshape(g, [-1]) for g in grads], axis=0)
        mean = tf.numpy_function(allreduce_mean, [flat], tf.float32, stateful=True)
        mean = tf.ensure_shape(mean, flat.shape)
        parts = tf.split(mean, tf.stack(sizes))
        return tf.nest.pack_sequence_as(nested_grads,
                                        [tf.reshape(p, s)
                                         for p, s in zip(parts, shapes, strict=True)])

    return average
