"""Launching experiments: the flag grammar, ExperimentGrid, processes (MPI, several
at once), Ray."""
