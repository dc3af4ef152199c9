"""Reading a run's progress.txt in tests."""

import os


def read_progress(run_dir):
    """``(header, rows)``: the column names and one dict per row, values as strings."""
    with open(os.path.join(run_dir, "progress.txt")) as f:
        lines = f.read().splitlines()
    header = lines[0].split("\t")
    return header, [dict(zip(header, line.split("\t"))) for line in lines[1:]]


def column(run_dir, key, cast=float):
    """One column of progress.txt, cast to numbers."""
    return [cast(row[key]) for row in read_progress(run_dir)[1]]
