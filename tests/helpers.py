"""What several test modules share: a tiny SAC configuration and progress.txt readers."""

import os

# A SAC run of a few seconds: enough for every column and a few updates per epoch.
TINY = dict(steps_per_epoch=400, start_steps=200, update_after=100, update_every=50,
            batch_size=32, num_test_episodes=2, ac_kwargs=dict(hidden_sizes=(32, 32)))


def read_progress(run_dir):
    """``(header, rows)``: the column names and one dict per row, values as strings."""
    with open(os.path.join(run_dir, "progress.txt")) as f:
        lines = f.read().splitlines()
    header = lines[0].split("\t")
    return header, [dict(zip(header, line.split("\t"))) for line in lines[1:]]


def column(run_dir, key, cast=float):
    """One column of progress.txt, cast to numbers."""
    return [cast(row[key]) for row in read_progress(run_dir)[1]]


def rows(run_dir):
    """progress.txt without the Time column (the only one allowed to differ)."""
    header, out = read_progress(run_dir)
    for row in out:
        row.pop("Time")
    return header, out
