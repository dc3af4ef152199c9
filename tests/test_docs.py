"""The documentation site (docs/): it builds with warnings as errors, the SAC page shows
the real code and every argument of sac(), and every link between its pages resolves."""

import html
import inspect
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import matplotlib
import pytest

from spinup_tf2 import sac

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("docs_html")
    res = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b",
                          "html", str(REPO / "docs"), str(out)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return out


def text_of(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))


def test_the_sac_page_shows_the_code_that_runs_and_every_argument(site):
    page = text_of(site / "algorithms" / "sac.html")
    source = (REPO / "spinup_tf2" / "algos" / "sac" / "sac.py").read_text()
    # The backup and the losses as they are in sac.py today (literalinclude, not a copy).
    for line in source.splitlines():
        if line.strip().startswith(("backup = ", "loss_pi = ", "loss_q1 = ", "min_q_targ = ")):
            assert line.strip() in page, line
    for name in inspect.signature(sac).parameters:
        assert re.search(rf"\b{name}\b", page), name
    assert page.count("\\min_{j=1,2}") >= 2  # the equations reach the page for MathJax


def test_every_link_between_pages_resolves(site):
    pages = sorted(site.rglob("*.html"))
    assert len(pages) >= 7
    checked = 0
    for page in pages:
        for href in re.findall(r'href="([^"]+)"', page.read_text()):
            if re.match(r"^[a-z]+:", href) or href.startswith("#"):
                continue  # another site, or a place on this page
            parts = urlsplit(href)
            target, anchor = parts.path, parts.fragment
            path = (page.parent / target).resolve()
            assert path.exists(), f"{page.relative_to(site)} links to missing {href}"
            if anchor and path.suffix == ".html":
                assert f'id="{anchor}"' in path.read_text(), f"{page.name}: {href}"
            checked += 1
    assert checked > 50


CHECK = """<script>
window.addEventListener('load', function () {
  function report() {
    var out = {
      math: document.querySelectorAll('.math').length,
      mjx: document.querySelectorAll('mjx-container').length,
      mjx_errors: document.querySelectorAll('mjx-merror').length,
      code: document.querySelectorAll('div.highlight pre').length,
      cut: Array.from(document.querySelectorAll('div.highlight pre')).filter(function (p) {
        return p.scrollWidth > p.clientWidth + 1; }).length,
      imgs: Array.from(document.images).map(function (i) {
        return [i.getAttribute('src'), i.naturalWidth, i.naturalHeight]; })
    };
    var pre = document.createElement('pre');
    pre.id = 'browser-check';
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    MathJax.startup.promise.then(report);
  } else { report(); }
});
</script>"""


def chromium(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Debian's Chromium, headless (installed by .ci/run where missing)."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "Chromium is missing: apt-get install -y chromium (.ci/run installs it)"
    return subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu",
                           "--hide-scrollbars", f"--user-data-dir={cwd / 'profile'}",
                           "--virtual-time-budget=20000", *args],
                          capture_output=True, text=True, timeout=180, cwd=cwd)


@pytest.mark.slow
@pytest.mark.parametrize("page", ["index.html", "algorithms/sac.html", "benchmarks.html"])
def test_pages_render_in_a_real_browser(site, page, tmp_path):
    """Chromium loads the page from disk at 1280 px: MathJax (the local copy) typesets every
    formula without an error, every image loads with a real size, the code blocks are there
    and no line of theirs runs past the box, and a screenshot is not blank."""
    path = site / page
    probe = path.with_name("_probe_" + path.name)
    probe.write_text(path.read_text().replace("</body>", CHECK + "</body>"))
    res = chromium("--dump-dom", "--window-size=1280,1400", probe.as_uri(), cwd=tmp_path)
    found = re.search(r'<pre id="browser-check">(.*?)</pre>', res.stdout, re.S)
    assert found, res.stderr[-2000:]
    seen = json.loads(html.unescape(found[1]))
    assert seen["mjx_errors"] == 0, seen
    assert seen["mjx"] >= seen["math"], seen  # every formula typeset
    assert seen["cut"] == 0, seen  # no code line runs past its box at 1280 px
    for src, width, height in seen["imgs"]:
        assert width > 0 and height > 0, f"{page}: {src} did not load"
    if page == "algorithms/sac.html":
        assert seen["math"] >= 8 and seen["code"] >= 4, seen
    if page == "benchmarks.html":
        assert len(seen["imgs"]) >= 7 and seen["code"] >= 4, seen
    shot = tmp_path / "shot.png"
    chromium(f"--screenshot={shot}", "--window-size=1280,1400", path.as_uri(), cwd=tmp_path)
    pixels = plt.imread(shot)[..., :3]
    ink = (pixels.min(axis=2) < 0.6).mean()  # share of pixels clearly darker than paper
    assert 0.01 < ink < 0.6, f"{page}: the screenshot looks blank or black ({ink:.3f} ink)"


@pytest.mark.slow
@pytest.mark.processes
def test_a_tracked_run_shows_in_mlflows_own_ui(tmp_path):
    """docs/user/outputs.md's picture is what MLflow's UI, served locally, shows of a run
    made with --track mlflow: the script that takes it (docs/screenshots.py), on a
    one-epoch run here. The page names the run, says it finished and lists one metric per
    progress.txt column (TotalEnvInteracts is their step), and its screenshot is not
    blank."""
    pytest.importorskip("mlflow")
    sys.path.insert(0, str(REPO / "docs"))
    try:
        import screenshots
    finally:
        sys.path.pop(0)
    screenshots.tracked_run(tmp_path, ["sac", "--env", "Pendulum-v1", "--epochs", "1",
                                       "--steps_per_epoch", "300", "--start_steps", "100",
                                       "--update_after", "100", "--num_test_episodes", "1",
                                       "--hid", "[16]", "--exp_name", "tracked", "--track",
                                       "mlflow", "--quiet"])
    header = (tmp_path / "data" / "tracked" / "tracked_s0" / "progress.txt").read_text(
        ).splitlines()[0].split("\t")
    with screenshots.mlflow_ui(tmp_path) as url:
        page, name = screenshots.run_page(url, tmp_path)
        dom = screenshots.chromium("--dump-dom", page, profile=tmp_path / "profile").stdout
        shot = tmp_path / "shot.png"
        screenshots.chromium(f"--screenshot={shot}", page, profile=tmp_path / "profile")
    text = html.unescape(re.sub(r"<[^>]+>", " ", dom))
    assert name == "tracked_s0" and "tracked_s0" in text, text[-2000:]
    assert "Finished" in text
    # every column a metric, but TotalEnvInteracts, the metrics' step
    assert re.search(rf"Metrics\s*\(\s*{len(header) - 1}\s*\)", text), text[-3000:]
    for column in ("AverageTestEpRet", "LossQ1", "Time"):
        assert column in text, column
    pixels = plt.imread(shot)[..., :3]
    ink = (pixels.min(axis=2) < 0.6).mean()
    assert 0.01 < ink < 0.6, f"the screenshot looks blank or black ({ink:.3f} ink)"
    assert (REPO / "docs" / "_static" / "mlflow_run.png").stat().st_size > 50_000
