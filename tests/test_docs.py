"""The documentation site (docs/): it builds with warnings as errors, the SAC page shows
the real code and every argument of sac(), and every link between its pages resolves."""

import html
import inspect
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from spinup_tf2 import sac

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
