"""Moved to :mod:`spinup_tf2.tf_setup`; this path (README of 0.1) goes in the next release."""
from spinup_tf2.tf_setup import import_tensorflow, quiet_stderr, set_threads, tf_variables  # noqa: F401,E501
