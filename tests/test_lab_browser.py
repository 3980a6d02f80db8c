"""JupyterLab as an explorer meets it, in a real browser: Debian's headless Chromium driven by
Playwright (no browser of Playwright's own), against JupyterLab started as ``make lab`` starts
it (the project's environment, ``--notebook-dir=.``: the project root, a free port on
127.0.0.1, a token), in the smoke run's copy of the project once the Chien report's stage is
done.

What a person does, and what they must see: log in with the token; the project kernel in the
launcher; open ``notebooks/`` and in it ``04-tfdata-read-report.ipynb`` from the file browser; set a parameter in its
first cell; run all; no "official Jupyter news" pop-up (the project's settings, set-up); every code cell ran (a number in its prompt), no error, the figures drawn
as images; the run wrote under ``explore/`` and left ``results/`` (the report's folder and those
it reads; the pipeline may still run other stages beside it) and ``dvc status`` as they were.
A screenshot of the first figure is kept as the test's artifact (``$DLIO_TEST_ARTIFACTS``, else
``explore/test-artifacts/`` of this checkout, which git ignores); README shows one.
A server that does not start or a missing browser fails with a message naming it, never hangs.

A reviewer, once the pipeline is done, opens ``results/claims/claims.md`` from the same file
browser as a Markdown preview and reads, in italics under a stated finding, the sentence of its
paper (:func:`open_claims_in_browser`).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
NOTEBOOK = "04-tfdata-read-report.ipynb"
STAGE = "tfdata_read_report"
READS = ("tfdata_read", "fio_baseline", "imagenet_like")   # the stages whose results it draws
PARAMETER = 'figures = {"dpi": 72}'          # the first cell's parameter, as an explorer changes it
EXPLORED = Path("explore") / "04-tfdata-read-report" / "figures.dpi=72"
KERNEL = "Python (dlio-artifact)"           # env/setup.sh installs it under this name
START_S, RUN_S = 90, 150                     # the server's start, the notebook's run: fail after these
CHROMIUM = "chromium"                        # Debian's package (env/system-tools.sh)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _settings(d: Path) -> Path:
    """A JupyterLab settings folder of the test's own: no autosave (a run marks the notebook
    changed; saving it would change a pipeline dependency, and ``dvc status`` with it)."""
    f = d / "@jupyterlab" / "docmanager-extension" / "plugin.jupyterlab-settings"
    f.parent.mkdir(parents=True)
    f.write_text(json.dumps({"autosave": False}))
    return d


def start_lab(project: Path, home: Path) -> tuple[subprocess.Popen, str, Path]:
    """JupyterLab in ``project`` as ``make lab`` runs it, on a free port of 127.0.0.1 with a
    token; returns (process, URL with the token, log). Fails, naming the log's end, when it
    does not answer within START_S seconds."""
    port, token = _free_port(), secrets.token_hex(16)
    env = {k: v for k, v in os.environ.items() if k not in ("DVC_STAGE", "DLIO_PIPELINE_STAGE")}
    env |= {"DLIO_ROOT": str(project), "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
            "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
            "JUPYTERLAB_SETTINGS_DIR": str(_settings(home / "settings")),
            "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"), "IPYTHONDIR": str(home / "ipython")}
    log = home / "lab.log"
    cmd = [str(BIN / "jupyter"), "lab", "--notebook-dir=.", "--no-browser", "--ip=127.0.0.1",
           f"--port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")   # as the Makefile adds it
    with open(log, "wb") as f:
        p = subprocess.Popen(cmd, cwd=project, env=env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    t0 = time.monotonic()
    while time.monotonic() - t0 < START_S:
        if p.poll() is not None:
            pytest.fail(f"JupyterLab exited ({p.returncode}) before it served; its log ends:\n"
                        f"{log.read_text(errors='replace')[-3000:]}")
        try:
            with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5) as r:
                if r.status == 200:
                    return p, f"{base}/lab?token={token}", log
        except OSError:
            time.sleep(0.5)
    _stop(p)
    pytest.fail(f"JupyterLab did not answer on {base} within {START_S} s; its log ends:\n"
                f"{log.read_text(errors='replace')[-3000:]}")


def _stop(p: subprocess.Popen) -> None:
    import signal
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def chromium() -> str:
    """Debian's chromium; a clear failure when it is missing."""
    path = shutil.which(CHROMIUM)
    if not path:
        pytest.fail(f"{CHROMIUM} is not installed: env/system-tools.sh installs it (apt-get install chromium); "
                    "this test never downloads a browser")
    return path


def _dvc_status(project: Path) -> str:
    """``dvc status`` of the report's stage (the pipeline may still run other stages beside
    this test: their changes are not the explorer's)."""
    return subprocess.run([str(BIN / "dvc"), "--wait-for-lock", "status", STAGE], cwd=project, capture_output=True,
                          text=True, check=True).stdout


def _results_digest(project: Path, digest) -> dict[str, str]:
    """The digest of the report's results folder and of those it reads."""
    return {s: digest(project / "results" / s) for s in (STAGE, *READS)}


@contextmanager
def _page(url: str, failure_shot: Path):
    """Chromium's page at ``url`` (JupyterLab with its token), 60 s a step; a screenshot of what
    it showed to ``failure_shot`` when a step fails; the browser closed in every case."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium(), args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.set_default_timeout(60_000)
            page.goto(url)
            yield page
        except Exception:
            page.screenshot(path=str(failure_shot))
            raise
        finally:
            browser.close()


def run_report_in_browser(url: str, shot: Path) -> dict:
    """Drive Chromium through the explorer's path (see the module's docstring); returns what
    the page showed: ``kernels`` (the launcher's), ``prompts`` (of every code cell),
    ``errors`` (error outputs' text), ``images`` (figures rendered as images)."""
    with _page(url, shot.with_name("lab-browser-failure.png")) as page:
        page.locator(".jp-LauncherCard").first.wait_for()
        kernels = page.locator(".jp-LauncherCard-label").all_inner_texts()
        _open_folder(page, "notebooks")      # make lab opens at the project root
        page.locator(f'.jp-DirListing-item[title*="{NOTEBOOK}"]').dblclick()
        nb = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
        first = nb.locator(".jp-CodeCell").first
        first.locator(".cm-content").click()
        page.keyboard.press("Control+A")
        page.keyboard.type(PARAMETER)
        page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for()   # kernel up
        typed = first.locator(".cm-content").text_content()
        assert PARAMETER in typed, f"the first cell reads {typed!r} after typing {PARAMETER!r}"
        _run_all(page, nb)
        prompts = _wait_all_ran(page, nb)
        errors = nb.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
                            ":has-text('Traceback')").all_inner_texts()
        errors += [t for t in nb.locator(".jp-OutputArea-output").all_text_contents() if "Traceback" in t]
        images = nb.locator(".jp-RenderedImage img")
        n = images.count()
        if n:
            images.first.scroll_into_view_if_needed()
            shot.parent.mkdir(parents=True, exist_ok=True)
            images.first.screenshot(path=str(shot))
        news = page.get_by_text("official Jupyter news").count()   # env/jupyterlab-overrides.json turns it off
        return {"kernels": kernels, "prompts": prompts, "errors": errors, "images": n, "news": news,
                "png": [images.nth(i).get_attribute("src")[:22] for i in range(n)]}


def _open_folder(page, *names: str) -> None:
    """Double-click each folder of ``names`` in turn in the file browser (from where it is)."""
    import re

    for name in names:
        item = page.locator(".jp-DirListing-item").filter(
            has=page.locator(".jp-DirListing-itemText", has_text=re.compile(f"^{re.escape(name)}$")))
        item.first.dblclick()
        page.locator(".jp-BreadCrumbs").filter(has_text=name).first.wait_for()


def open_claims_in_browser(url: str, shot: Path, words: str) -> dict:
    """Open ``results/claims/claims.md`` as a reviewer does (file browser: results, claims;
    right-click > Open With > Markdown Preview) and return what the preview shows: ``rows`` (the
    rendered table's rows), ``quotes`` (the text of its italic spans) and ``found`` (whether an
    italic span holds ``words``, a stated finding's quote)."""
    with _page(url, shot.with_name("lab-claims-failure.png")) as page:
        page.locator(".jp-DirListing-item").first.wait_for()
        _open_folder(page, "results", "claims")
        page.locator('.jp-DirListing-item[title*="claims.md"]').click(button="right")
        page.locator(".lm-Menu-item", has_text="Open With").first.hover()
        page.locator(".lm-Menu-item", has_text="Markdown Preview").first.click()
        preview = page.locator(".jp-RenderedMarkdown:visible").first
        preview.locator("table").first.wait_for()
        em = preview.locator("table em")
        em.first.wait_for()
        quotes = em.all_inner_texts()
        hit = em.filter(has_text=words)
        found = hit.count() > 0
        if found:
            hit.first.scroll_into_view_if_needed()
        shot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shot))
        return {"rows": preview.locator("table tr").count(), "quotes": quotes, "found": found}


def _prompts(nb) -> list[str]:
    # textContent: a cell scrolled out of view may have no rendered text (innerText "")
    return [p.strip() for p in nb.locator(".jp-CodeCell .jp-InputPrompt").all_text_contents()]


def _run_all(page, nb, tries: int = 3) -> None:
    """Run > Run All Cells, until a cell starts (a click that lands while the kernel is still
    connecting starts nothing)."""
    for _ in range(tries):
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        t0 = time.monotonic()
        while time.monotonic() - t0 < 15:
            if any(p != "[ ]:" for p in _prompts(nb)):
                return
            time.sleep(0.5)
    pytest.fail(f"Run > Run All Cells started no cell ({tries} tries)")


def _wait_all_ran(page, nb) -> list[str]:
    """Every code cell's prompt once none is ``[*]`` and the kernel is idle (RUN_S at most)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < RUN_S:
        prompts = _prompts(nb)
        idle = page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").count() > 0
        if idle and prompts and not any("*" in p for p in prompts) and prompts[-1].strip("[]:").isdigit():
            return prompts
        time.sleep(1)
    pytest.fail(f"the notebook did not finish within {RUN_S} s; prompts: {prompts}")


ARTIFACTS = Path(os.environ.get("DLIO_TEST_ARTIFACTS", ROOT / "explore" / "test-artifacts"))


def in_lab(project: Path, home: Path, drive, *args):
    """``drive(url, *args)`` against JupyterLab started in ``project`` as make lab starts it
    (:func:`start_lab`, its settings under ``home``), stopped afterwards; a browser step that
    timed out (60 s each) fails saying which, with the server's log."""
    proc, url, log = start_lab(project, home)
    try:
        return drive(url, *args)
    except Exception as e:
        if isinstance(e, pytest.fail.Exception):
            raise
        pytest.fail(f"in the browser: {type(e).__name__}: {str(e)[:1500]}\nJupyterLab's log ends:\n"
                    f"{log.read_text(errors='replace')[-2000:]}")
    finally:
        _stop(proc)


def test_a_server_that_does_not_start_fails_with_its_log(tmp_path, monkeypatch):
    """Its port taken (no retries, as make lab's port is): JupyterLab exits at once, and the
    failure shows its log's end."""
    (tmp_path / "project").mkdir()
    (tmp_path / "home").mkdir()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        monkeypatch.setattr(sys.modules[__name__], "_free_port", lambda: taken.getsockname()[1])
        with pytest.raises(pytest.fail.Exception, match=r"(?s)JupyterLab exited \(\d+\) before it served.*already in use"):
            start_lab(tmp_path / "project", tmp_path / "home")


def test_a_missing_browser_fails_naming_the_package(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(pytest.fail.Exception, match="chromium is not installed: env/system-tools.sh installs it"):
        chromium()


@pytest.mark.smoke
def test_an_explorer_runs_a_report_in_jupyterlab(stage_results, smoke_run, digest, tmp_path):
    stage_results(STAGE)   # the report's inputs, made by the smoke pipeline
    project = smoke_run.root
    chromium()
    results_before, status_before = _results_digest(project, digest), _dvc_status(project)
    shot = ARTIFACTS / "lab-browser-figure.png"
    seen = in_lab(project, tmp_path, run_report_in_browser, shot)
    assert KERNEL in seen["kernels"], f"the launcher shows {seen['kernels']}, not {KERNEL}"
    assert seen["news"] == 0, "the 'official Jupyter news' pop-up showed (env/jupyterlab-overrides.json, set-up)"
    assert not seen["errors"], seen["errors"][0][-3000:]
    assert len(seen["prompts"]) >= 3 and all(p.strip("[]:").isdigit() for p in seen["prompts"]), seen["prompts"]
    assert seen["images"] >= 1 and all(s.startswith("data:image/png") for s in seen["png"]), seen
    assert shot.is_file() and shot.stat().st_size > 1000
    wrote = project / EXPLORED
    assert (wrote / "metrics.json").is_file() and list(wrote.glob("*.png")), sorted(p.name for p in wrote.parent.glob("*"))
    assert _results_digest(project, digest) == results_before
    assert _dvc_status(project) == status_before


@pytest.mark.smoke
def test_a_reviewer_reads_the_claims_table_with_its_quotes_in_jupyterlab(stage_results, smoke_run, tmp_path):
    """The claims stage's table, opened from ``make lab``'s file browser as a Markdown preview:
    the rendered table shows, in italics under a stated finding, the sentence of its paper."""
    import pandas as pd

    t = pd.read_csv(stage_results("claims") / "claims.csv")
    stated = t[(t["kind"] == "finding") & (t["basis"] == "stated") & t["quote"].notna()]
    # a quote with no TeX in it (a preview renders $...$ as mathematics)
    quote = next(" ".join(q.split()) for q in stated["quote"] if "$" not in q and "\\" not in q)
    words = " ".join(quote.split()[:6])
    chromium()
    shot = ARTIFACTS / "lab-claims-table.png"
    seen = in_lab(smoke_run.root, tmp_path, open_claims_in_browser, shot, words)
    assert seen["rows"] > len(stated), seen["rows"]
    assert seen["found"], (words, seen["quotes"][:5])
    assert shot.is_file() and shot.stat().st_size > 1000
