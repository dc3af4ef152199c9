"""Import TensorFlow once, quietly, with thread settings that suit small CPUs.

TensorFlow writes start-up notes (oneDNN, CUDA stubs) straight to file
descriptor 2 before its own logging is configured, so ``TF_CPP_MIN_LOG_LEVEL``
alone cannot silence them. We silence stderr only while ``import tensorflow``
runs; an import error is still raised (and printed) normally.
"""

import contextlib
import os
import sys

# Keras imports its integrations with other libraries as it is imported, when they are
# installed: scikit-learn's estimators, pandas' frames, matplotlib's pyplot, IPython's
# display. On 2 cores that is 1.5-2 s of a 5 s start. The processes spinup_tf2 starts itself
# (an experiment, test_policy, export) use none of them, so they import Keras without them.
KERAS_EXTRAS = ("sklearn", "pandas", "matplotlib", "IPython")
_without_keras_extras = False


def import_keras_without_extras() -> None:
    """Have :func:`import_tensorflow` import Keras without its integrations with
    scikit-learn, pandas, matplotlib and IPython: in this process Keras then works as if
    they were not installed (they stay importable by any other code). Called first thing
    by the processes spinup_tf2 starts itself, never on ``import spinup_tf2``."""
    global _without_keras_extras
    _without_keras_extras = True


def import_tensorflow():
    """Return the ``tensorflow`` module, imported without start-up noise."""
    if "tensorflow" in sys.modules:
        return sys.modules["tensorflow"]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    quiet = os.environ.get("SPINUP_TF2_SHOW_TF_LOGS", "0") in ("", "0")
    # None in sys.modules makes an import raise ImportError, which Keras takes as "not
    # installed"; the entries are taken out again once Keras is in.
    hidden = [m for m in KERAS_EXTRAS if m not in sys.modules] if _without_keras_extras else []
    sys.modules.update(dict.fromkeys(hidden))
    try:
        with quiet_stderr(quiet):
            import tensorflow as tf  # noqa: I001  (first: Keras' backend is TensorFlow)
            import keras  # noqa: F401  (TensorFlow imports it; in any case, while hidden)
    finally:
        for m in hidden:
            if sys.modules.get(m, 0) is None:
                del sys.modules[m]
    with quiet_stderr(quiet):
        set_threads(tf)
        # Start the runtime now, while stderr is quiet: looking for GPUs prints
        # a CUDA error on machines without one.
        tf.config.list_logical_devices("CPU")
    return tf


def graph_function(fn, input_signature: list):
    """``tf.function(fn)`` with a fixed ``input_signature`` and without AutoGraph, for the
    functions a SavedModel exports. They hold no Python control flow to convert, and
    AutoGraph would read ``fn``'s source file again at every trace: an export is traced at
    every save, so a source file edited while a run goes on (an editable install) would
    be read at the wrong lines and the save would fail."""
    return import_tensorflow().function(fn, input_signature=input_signature, autograph=False)


@contextlib.contextmanager
def quiet_stderr(quiet: bool = True):
    """Send file descriptor 2 to /dev/null inside the block (C++ libraries write
    there directly, past Python's ``sys.stderr``); a no-op if ``quiet`` is False."""
    saved_fd = None
    if quiet:
        try:
            sys.stderr.flush()
            saved_fd = os.dup(2)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 2)
            os.close(devnull)
        except OSError:  # no real fd 2 (some notebook front-ends): nothing to hide
            saved_fd = None
    try:
        yield
    finally:
        if saved_fd is not None:
            os.dup2(saved_fd, 2)
            os.close(saved_fd)


def set_threads(tf) -> None:
    """On small CPUs, run independent ops side by side, each on one thread.

    SAC's update is a graph of many independent matrix products (q1 and q2,
    the policy at s and at s', ...). Measured on 2 cores, two single-threaded
    [200,256]x[256,256] products side by side reach 281 GFLOP/s, one product
    split over both cores 155. So with at most 4 cores we let TensorFlow run
    one op per core (inter-op threads = cores, intra-op threads = 1). The
    environment variables TF_NUM_INTEROP_THREADS / TF_NUM_INTRAOP_THREADS, if
    set, win; TensorFlow's own defaults are kept on larger machines.
    """
    if os.environ.get("TF_NUM_INTEROP_THREADS") or os.environ.get("TF_NUM_INTRAOP_THREADS"):
        return
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    # Under an MPI launch the processes on this machine share its cores.
    local = os.environ.get("MPI_LOCALNRANKS") or os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE")
    if local is None and os.environ.get("IN_MPI"):
        local = os.environ.get("PMI_SIZE")
    if local and local.isdigit():
        cores = max(1, cores // int(local))
    if cores > 4:
        return
    try:
        tf.config.threading.set_inter_op_parallelism_threads(cores)
        tf.config.threading.set_intra_op_parallelism_threads(1)
    except RuntimeError:  # TensorFlow already started running ops: keep its settings
        pass


def tf_variables(variables) -> list:
    """The ``tf.Variable`` behind each Keras 3 variable (other variables as they are):
    fused kernels, raw assignments and ``tf.Module`` tracking need the former."""
    import keras

    return [v.value if isinstance(v, keras.Variable) else v for v in variables]
