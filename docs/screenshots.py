"""The documentation's pictures of a tracked run in each tracker's own viewer, taken the way
the docs' tests take them (tests/test_docs.py, tests/test_trackers.py): a real run with
``--track mlflow,wandb``; MLflow's server on a loopback port over that run's store, headless
Chromium on the run's page; W&B's terminal reader of the offline run
(``wandb leet inspect --summary``), its summary part.

    python docs/screenshots.py    # rewrites docs/_static/mlflow_run.png and
                                  # docs/_static/wandb_summary.txt (about 3 minutes)

The test uses the same functions on a one-epoch run and checks what the page shows (the
run's name, its status, its metrics) and that the picture is not blank.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

DOCS = Path(__file__).resolve().parent
PICTURE = DOCS / "_static" / "mlflow_run.png"
WANDB_SUMMARY = DOCS / "_static" / "wandb_summary.txt"
# The docs' command (docs/user/outputs.md).
COMMAND = ["sac", "--env", "Pendulum-v1", "--epochs", "5", "--exp_name", "tracked",
           "--track", "mlflow,wandb", "--quiet"]
SIZE = "1400,1500"


def tracked_run(root: Path, args: list[str] = COMMAND) -> None:
    """Run ``python -m spinup_tf2.run ARGS`` in ``root`` (its runs in ``root/data``, the
    MLflow store in ``root/mlruns``), with no W&B key or MLflow URI from outside."""
    env = dict(os.environ, SPINUP_TF2_WAIT_BEFORE_LAUNCH="0", MLFLOW_TRACKING_URI="",
               WANDB_API_KEY="", WANDB_MODE="", TF_CPP_MIN_LOG_LEVEL="3")
    subprocess.run([sys.executable, "-m", "spinup_tf2.run", *args, "--data_dir",
                    str(root / "data")], cwd=root, env=env, check=True, capture_output=True,
                   timeout=900)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def mlflow_ui(root: Path):
    """MLflow's server over ``root/mlruns`` on a free loopback port, as ``mlflow ui``
    serves it (docs/user/outputs.md's command); yields its address, and stops it."""
    port = free_port()
    store = root / "mlruns"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--backend-store-uri",
         f"sqlite:///{store / 'mlflow.db'}", "--default-artifact-root",
         (store / "artifacts").as_uri(), "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1"], cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):  # a bounded wait for the server to answer
            try:
                with urllib.request.urlopen(url + "/health", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError("mlflow server exited before it answered")
                time.sleep(0.5)
        else:
            raise RuntimeError(f"mlflow server did not answer at {url} within 2 minutes")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def run_page(url: str, root: Path, experiment: str = "tracked") -> tuple[str, str]:
    """``(address of the run's overview page, run name)`` of the experiment's one run."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{root / 'mlruns' / 'mlflow.db'}")
    exp = client.get_experiment_by_name(experiment)
    (run,) = client.search_runs([exp.experiment_id])
    return f"{url}/#/experiments/{exp.experiment_id}/runs/{run.info.run_id}", run.info.run_name


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess:
    """Debian's Chromium, headless (installed by .ci/run where missing)."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        raise RuntimeError("Chromium is missing: apt-get install -y chromium")
    return subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu",
                           "--hide-scrollbars", f"--user-data-dir={profile}",
                           "--virtual-time-budget=60000", f"--window-size={SIZE}", *args],
                          capture_output=True, text=True, timeout=300)


def wandb_summary(root: Path, run: str = "tracked/tracked_s0") -> str:
    """W&B's own summary of the run's offline W&B run (``wandb leet inspect --summary``),
    up to its config (config.json's values, listed there in full), the folder's path made
    relative to the working directory."""
    (folder,) = (root / "data" / run / "wandb").glob("offline-run-*")
    exe = Path(sys.executable).with_name("wandb")
    out = subprocess.run([str(exe), "leet", "inspect", "--summary", str(folder)],
                         capture_output=True, text=True, check=True, timeout=300).stdout
    return out.split("\nconfig\n")[0].replace(str(root) + os.sep, "").rstrip() + "\n"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tracked_run(root)
        WANDB_SUMMARY.write_text(wandb_summary(root))
        with mlflow_ui(root) as url:
            page, _ = run_page(url, root)
            chromium(f"--screenshot={PICTURE}", page, profile=root / "profile")
    print(f"wrote {PICTURE} and {WANDB_SUMMARY}")


if __name__ == "__main__":
    main()
