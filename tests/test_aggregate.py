"""IQM, stratified-bootstrap intervals and `plot --table`, against values worked
out by hand on small arrays."""

import numpy as np
import pytest
from helpers import assert_clean_error, cli

from spinup_tf2.utils.aggregate import iqm, stratified_bootstrap_ci


def test_iqm_by_hand():
    assert iqm([1, 2, 3, 4, 5, 6, 7, 8]) == 4.5  # drop 1, 2 and 7, 8: mean of 3..6
    assert iqm([100, 2, 3, 4, 1]) == 3.0  # n=5: drop one each end, mean of 2, 3, 4
    assert iqm([1, 5, 9]) == 5.0  # fewer than 4: nothing dropped
    assert iqm([[1, 2], [3, 4], [5, 6], [7, 8]]) == 4.5  # pooled over tasks
    np.testing.assert_allclose(iqm(np.array([[1, 2, 3, 100], [4, 4, 4, 4]]), axis=1), [2.5, 4])


def test_bootstrap_interval_of_two_values():
    """Mean of a resample of (0, 1): 0, 1/2, 1 with chances 1/4, 1/2, 1/4, so the
    central 95 % runs from 0 to 1 and the 40 % interval is [1/2, 1/2]."""
    assert stratified_bootstrap_ci([0.0, 1.0], np.mean, 95, 4000, seed=1) == (0.0, 1.0)
    assert stratified_bootstrap_ci([0.0, 1.0], np.mean, 40, 4000, seed=1) == (0.5, 0.5)


def test_bootstrap_is_stratified_and_seeded():
    """Two tasks whose runs agree within each task: resampling inside each task
    cannot move the pooled mean, while pooling the runs across tasks would."""
    scores = np.array([[0.0, 10.0], [0.0, 10.0], [0.0, 10.0]])  # (runs, tasks)
    assert stratified_bootstrap_ci(scores, np.mean) == (5.0, 5.0)
    pooled = stratified_bootstrap_ci(scores.reshape(-1), np.mean)
    assert pooled[0] < 5.0 < pooled[1]
    x = np.random.default_rng(0).normal(size=10)
    assert stratified_bootstrap_ci(x, seed=3) == stratified_bootstrap_ci(x, seed=3)
    assert stratified_bootstrap_ci(x, seed=3) != stratified_bootstrap_ci(x, seed=4)
    low, high = stratified_bootstrap_ci(x)
    assert low < iqm(x) < high


def write_run(root, name, seed, perf):
    run = root / name / f"{name}_s{seed}"
    run.mkdir(parents=True)
    (run / "config.json").write_text('{"exp_name": "%s"}' % name)
    lines = ["Epoch\tTotalEnvInteracts\tAverageTestEpRet"]
    lines += [f"{i + 1}\t{(i + 1) * 1000}\t{p}" for i, p in enumerate(perf)]
    (run / "progress.txt").write_text("\n".join(lines) + "\n")


def test_plot_table_by_hand(tmp_path):
    # Five runs; at 2000 steps their values are 1, 2, 3, 4, 50.
    for seed, v in enumerate([1, 2, 3, 4, 50]):
        write_run(tmp_path, "exp", seed, [0, v, 2 * v])
    res = cli("plot", str(tmp_path / "exp"), "--table", "2000", "3000")
    assert res.returncode == 0, res.stderr
    table = [ln for ln in res.stdout.splitlines() if ln.startswith("| exp |")]
    at2k, at3k = (ln.split("|")[1:-1] for ln in table)
    assert [c.strip() for c in at2k[:6]] == ["exp", "2000", "5", "3.0", "12.0", "3.0"]
    assert [c.strip() for c in at3k[:6]] == ["exp", "3000", "5", "6.0", "24.0", "6.0"]
    low, high = (float(v) for v in at2k[6].strip(" []").split(","))
    assert (low, high) == tuple(round(v, 1) for v in stratified_bootstrap_ci([1, 2, 3, 4, 50]))
    assert low <= 3.0 <= high


def test_plot_iqm_band_and_bad_values(tmp_path):
    for seed, v in enumerate([1, 2, 3, 4]):
        write_run(tmp_path, "exp", seed, [0, v, 2 * v, 3 * v])
    fig = tmp_path / "iqm.png"
    res = cli("plot", str(tmp_path / "exp"), "--est", "iqm", "--ci", "95", "--n_boot", "500",
              "--savefig", str(fig))
    assert res.returncode == 0, res.stderr
    assert fig.stat().st_size > 5000
    assert_clean_error(cli("plot", str(tmp_path / "exp"), "--est", "trimmed"), "'trimmed'",
                       "iqm")
    assert_clean_error(cli("plot", str(tmp_path / "exp"), "--ci", "120"), "between 0 and 100")
    assert_clean_error(cli("plot", str(tmp_path / "exp"), "--table", "1000", "--n_boot", "0"),
                       "--n_boot")


@pytest.mark.parametrize("n", [4, 7, 8, 11])
def test_iqm_matches_the_definition(n):
    x = np.random.default_rng(n).normal(size=n)
    k = n // 4
    assert iqm(x) == pytest.approx(np.sort(x)[k:n - k].mean())


def test_plot_a_progress_file_without_returns(tmp_path):
    """A progress.txt from some other use of EpochLogger has neither return
    column: its own columns plot, and the default value is a one-paragraph error."""
    run = tmp_path / "other" / "other_s0"
    run.mkdir(parents=True)
    (run / "progress.txt").write_text(
        "Epoch\tTotalEnvInteracts\tLoss\n1\t1000\t0.5\n2\t2000\t0.25\n")
    fig = tmp_path / "loss.png"
    res = cli("plot", str(tmp_path / "other"), "--value", "Loss", "--savefig", str(fig))
    assert res.returncode == 0, res.stderr
    assert fig.stat().st_size > 0
    assert_clean_error(cli("plot", str(tmp_path / "other")), "no column 'Performance'",
                       "has neither", "Loss", "--value")
    assert_clean_error(cli("plot", str(tmp_path / "other"), "--table", "1000"),
                       "no column 'Performance'")
