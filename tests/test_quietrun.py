"""make bench's commands run with stderr routed as the pipeline's kernels (experiments.pipeline.quietrun)."""

import subprocess
import sys

from experiments.pipeline import quietrun

NOISY = ("import sys; sys.stderr.write('WARNING: All log messages before absl::InitializeLog() is called "
         "are written to STDERR\\nI0000 00:00:1795387682.404322   16121 cudart_stub.cc:31] Could not find "
         "cuda drivers\\na real error\\n'); print('the table'); sys.exit(3)")


def test_noise_is_kept_off_the_console_and_in_the_log(tmp_path, monkeypatch):
    monkeypatch.setenv("DLIO_ROOT", str(tmp_path))
    (tmp_path / "data").mkdir()
    r = subprocess.run([sys.executable, "-m", "experiments.pipeline.quietrun", sys.executable, "-c", NOISY],
                       capture_output=True, text=True)
    assert r.returncode == 3 and "the table" in r.stdout
    assert "a real error" in r.stderr and "cudart_stub" not in r.stderr and "absl::" not in r.stderr
    assert "2 lines of TensorFlow start-up noise" in r.stderr
    log = next((tmp_path / "data" / "bench").glob("*.stderr.log")).read_text()
    assert "cudart_stub" in log and "a real error" in log


def test_log_named_after_the_module():
    assert quietrun.log_name(["python", "-m", "experiments.pipeline.bench", "--runs", "1"]) == "experiments.pipeline.bench"
    assert quietrun.log_name(["/usr/bin/fio", "job.fio"]) == "fio"
    assert quietrun.main([]) == 2
