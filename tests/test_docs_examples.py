"""Every example on the documentation site runs, page by page, in the order given.

An example is a fenced ``bash`` or ``python`` block of ``docs/**/*.md``. Each page runs in a
fresh directory, as a reader who starts on that page would, with the bundled runs and
``benchmarks/`` of a fresh clone beside it. Examples that train for minutes or hours are
shrunk by the ``<!-- test: `A` => `B`; ... -->`` comment just before them: each ``A`` must
occur in the block (so the substitution cannot go stale) and is replaced by ``B``. Blocks
fenced ``sh`` are set-up lines (pip, apt, ray start on other machines, mpirun with a
hostfile) and reproductions of hours, which CI's own set-up and the benchmarks cover; ``text``
blocks are output.

After the Benchmarks page has run its scripts on the bundled data, every table it includes
must be the table the script wrote: a table that no longer matches its data fails here.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
PAGES = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")
               if "_build" not in p.parts)
FENCE = re.compile(r"(?:<!-- test: (?P<subs>.*?) -->\n)?^```(?P<lang>[^\n]*)\n(?P<code>.*?)^```$",
                   re.S | re.M)
LANGS = {"bash", "python", "sh", "text"}
# What a user must not see from the CLI or from Python: TensorFlow's, CUDA's, MuJoCo's and
# SDL's start-up notes and deprecation warnings.
NOISE = re.compile(r"oneDNN|cuda|TF-TRT|absl::|XDG_RUNTIME_DIR|settotalmass|DeprecationWarning|"
                   r"This TensorFlow binary is optimized", re.I)


def examples(page: str) -> list[tuple[str, str]]:
    """``(lang, code)`` of each runnable block of ``page``, substitutions applied."""
    text = (DOCS / page).read_text()
    found = []
    for m in FENCE.finditer(text):
        lang = m["lang"].strip()
        if lang.startswith("{"):
            continue  # a MyST directive (toctree, include, eval-rst, contents)
        assert lang in LANGS, f"{page}: a block fenced {lang!r}; use one of {sorted(LANGS)}"
        code = m["code"]
        for a, b in re.findall(r"`([^`]+)` => `([^`]+)`", m["subs"] or ""):
            assert a in code, f"{page}: the substitution {a!r} is not in its block:\n{code}"
            code = code.replace(a, b)
        if lang in ("bash", "python"):
            found.append((lang, code))
    return found


def test_every_page_is_collected_and_substitutions_parse():
    assert {"user/introduction.md", "user/running.md", "benchmarks.md"} <= set(PAGES)
    total = sum(len(examples(p)) for p in PAGES)
    assert total >= 30, total


def workdir_for(tmp_path: Path) -> Path:
    """A reader's directory on a fresh clone: the bundled runs and benchmarks/ beside it."""
    (tmp_path / "data").mkdir()
    os.symlink(REPO / "data" / "benchmarks", tmp_path / "data" / "benchmarks")
    shutil.copytree(REPO / "benchmarks", tmp_path / "benchmarks",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in PAGES if examples(p)])
def test_the_examples_of_a_page_run_in_order(page, tmp_path):
    work = workdir_for(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TF_", "MUJOCO_GL"))}
    # Runs go to this directory's data/, not the clone's (where an editable install puts them).
    env.update(SPINUP_TF2_WAIT_BEFORE_LAUNCH="0", MPLBACKEND="Agg",
               SPINUP_TF2_DATA_DIR=str(work / "data"),
               PATH=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""))
    for i, (lang, code) in enumerate(examples(page)):
        if lang == "python":
            script = work / f"example_{i}.py"
            script.write_text(code)
            cmd = [sys.executable, script.name]
        else:
            cmd = ["bash", "-e", "-o", "pipefail", "-c", code]
        res = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True,
                             timeout=900, stdin=subprocess.DEVNULL)
        out = res.stdout + res.stderr
        assert res.returncode == 0, f"{page}, example {i}:\n{code}\n{out[-4000:]}"
        noise = [ln for ln in out.splitlines() if NOISE.search(ln)]
        assert not noise, f"{page}, example {i} printed third-party noise:\n" + "\n".join(noise)
    if page == "benchmarks.md":
        for table in re.findall(r"```\{include\} \.\./benchmarks/(\S+\.md)",
                                (DOCS / page).read_text()):
            assert (work / "benchmarks" / table).read_text() == \
                (REPO / "benchmarks" / table).read_text(), f"benchmarks/{table} is stale"


@pytest.mark.parametrize("marker,name", [("headline", "headline.md"),
                                         ("learning-table", "learning/learning_table.md"),
                                         ("family-table", "learning/family_table.md"),
                                         ("her-table", "learning/her_table.md")])
def test_readme_tables_are_the_files_their_scripts_write(marker, name):
    """README's tables are the benchmarks/ tables as their scripts wrote them (which the Benchmarks
    page's test remakes from the bundled data)."""
    readmes = [REPO / "README.md"] + [REPO / "benchmarks" / "README.md"] * (marker == "headline")
    for readme in readmes:
        table = readme.read_text().split(f"<!-- {marker} -->\n")[1].split(f"<!-- /{marker} -->")[0]
        assert table == (REPO / "benchmarks" / name).read_text(), readme


def test_the_family_race_table_is_what_its_script_makes():
    """benchmarks/family_race.md (issue 80's race against SBX in both precisions) is what
    headline.py --family makes of the race results, and the family's page includes it."""
    sys.path.insert(0, str(REPO / "benchmarks" / "timing"))
    try:
        import headline
    finally:
        sys.path.pop(0)
    assert (REPO / "benchmarks" / "family_race.md").read_text() == \
        headline.family_table(headline.latest_family_races()), \
        "python benchmarks/timing/headline.py --family > benchmarks/family_race.md is stale"
    assert "```{include} ../../benchmarks/family_race.md" in (DOCS / "algorithms" /
                                                             "family.md").read_text()


def test_the_headline_speed_is_stated_once():
    """benchmarks/headline.md is what its script makes of the race results, and README, the
    introduction, the design page and the Benchmarks page show that file rather than typing
    their own figures."""
    sys.path.insert(0, str(REPO / "benchmarks" / "timing"))
    try:
        import headline
    finally:
        sys.path.pop(0)
    assert (REPO / "benchmarks" / "headline.md").read_text() == \
        headline.headline(headline.latest_races()), "python benchmarks/timing/headline.py is stale"
    for page, prefix in (("user/introduction.md", "../../"), ("design.md", "../"),
                         ("benchmarks.md", "../")):
        text = (DOCS / page).read_text()
        assert f"```{{include}} {prefix}benchmarks/headline.md" in text, page
        assert not re.search(r"ours/SBX \d|\d\.\d+x SBX|SBX's (updates|speed)", text), page
