#!/usr/bin/env bash
# Install the system tools the experiments use, with apt when root and missing, and say
# clearly what could not be installed (the experiments then fall back and record it).
set -uo pipefail
cd "$(dirname "$0")/.."
LOG=.venv/apt.log   # inside this checkout: two clones never write one log
# bpftrace needs tracefs: mount it when missing and root (experiments.trace also tries, and
# falls back to strace or /proc sampling, saying why).
if [ ! -d /sys/kernel/tracing/events ] && [ ! -d /sys/kernel/debug/tracing/events ]; then
  if [ "$(id -u)" -eq 0 ] && mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null; then
    echo "setup: mounted tracefs on /sys/kernel/tracing (for bpftrace)"
  else
    echo "setup: note: tracefs is not mounted and cannot be mounted here; tracing falls back to strace or /proc"
  fi
fi
# slurmctld/slurmd/sbatch (slurm-wlm, which brings munge): the emulator's --launcher slurm and
# its test, which starts a one-node cluster on this host (tests/test_emulator_slurm.py).
# bwrap (bubblewrap): `make grade` runs each submission in a sandbox of its own
# (experiments/course/sandbox.py). chromium + chromedriver: the JupyterLab browser test
# (tests/test_lab_browser.py, Selenium drives Debian's headless Chromium; nothing downloads a browser).
declare -A PKG=([fio]=fio [bpftrace]=bpftrace [strace]=strace [iostat]=sysstat [slurmctld]=slurm-wlm
                [bwrap]=bubblewrap [chromium]=chromium [chromedriver]=chromium-driver)
TOOLS="fio bpftrace strace iostat slurmctld bwrap chromium chromedriver"
missing=()
for tool in $TOOLS; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("${PKG[$tool]}")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: system tools present: $TOOLS"
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing ${missing[*]} on this host with apt-get (root)"
  export DEBIAN_FRONTEND=noninteractive
  mkdir -p .venv
  apt-get install -y -q "${missing[@]}" >"$LOG" 2>&1 \
    || { apt-get update -q >>"$LOG" 2>&1 && apt-get install -y -q "${missing[@]}" >>"$LOG" 2>&1; } \
    || echo "setup: warning: apt-get could not install ${missing[*]} (log: $LOG)"
fi
for tool in $TOOLS; do
  command -v "$tool" >/dev/null 2>&1 || echo "setup: warning: $tool is not installed (package ${PKG[$tool]}); \
stages that need it will stop or fall back. Install it as root: apt-get install ${PKG[$tool]}"
done
exit 0
