"""Experiment processes end with the process that launched them."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """Ask the kernel to send ``sig`` to this process when its parent dies (Linux), so
    that killing a launcher (even with ``kill -9``) never leaves its training process
    running on its own. Exits at once if the parent is already gone. Elsewhere a
    no-op."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before the request took effect
        os._exit(128 + int(sig))


def interrupt_once() -> None:
    """Make the first Ctrl-C (SIGINT) raise KeyboardInterrupt as usual, and every
    later one do nothing: the process is already stopping, and a second
    KeyboardInterrupt raised while Python shuts down only prints "Exception
    ignored ..." tracebacks. (A Ctrl-C reaches an experiment twice: from the
    terminal, and from its launcher passing it on.)

    Python runs a signal handler at the next bytecode, which can be inside a
    callback that cannot raise (a weakref's, during garbage collection); there
    the KeyboardInterrupt would be printed as "Exception ignored" and lost. It
    is raised again a few milliseconds later instead (from a SIGALRM timer),
    silently, until it lands in code that can stop. Raised inside a C++ extension's
    callback, it can also come out as another exception (pybind11 turns it into a
    RuntimeError); :func:`was_interrupted` tells the caller it was the Ctrl-C.
    """

    def first(signum, frame):
        global _interrupted
        _interrupted = True
        ignore_interrupts()
        raise KeyboardInterrupt

    def again(signum, frame):
        raise KeyboardInterrupt

    previous_hook = sys.unraisablehook

    def hook(unraisable):
        if issubclass(unraisable.exc_type, KeyboardInterrupt):
            signal.signal(signal.SIGALRM, again)
            signal.setitimer(signal.ITIMER_REAL, 0.005)
        else:
            previous_hook(unraisable)

    signal.signal(signal.SIGINT, first)
    sys.unraisablehook = hook


_interrupted = False


def was_interrupted() -> bool:
    """Whether the Ctrl-C that :func:`interrupt_once` handles has arrived."""
    return _interrupted


def ignore_interrupts() -> None:
    """From now on, Ctrl-C (SIGINT) does nothing in this process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
