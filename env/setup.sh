#!/usr/bin/env bash
# Set up everything the artifact needs, idempotently: .venv from the pinned lock with uv,
# the package (editable), the Jupyter kernel, and the system tools (fio, bpftrace, strace,
# sysstat). Quick the second time: the lock's hash is stamped in .venv.
set -euo pipefail
cd "$(dirname "$0")/.."

LOCK=env/requirements.lock
VENV=.venv
STAMP=$VENV/.dlio-lock-sha256

if ! command -v uv >/dev/null 2>&1; then
  if python3 -m pip install -q --disable-pip-version-check uv 2>/dev/null; then
    echo "setup: installed uv into the system Python (python3 -m pip install uv)"
  elif python3 -m pip install -q --user --disable-pip-version-check uv; then
    echo "setup: installed uv for this user (python3 -m pip install --user uv)"
  else
    echo "setup: error: pip cannot install uv here (an externally managed Python?); install uv" \
         "(https://docs.astral.sh/uv/getting-started/installation/) and run make again" >&2
    exit 1
  fi
  export PATH="$HOME/.local/bin:$PATH"
fi

want=$( (sha256sum "$LOCK" pyproject.toml | sha256sum) | cut -c1-64)
if [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  echo "setup: .venv is up to date with $LOCK"
else
  echo "setup: creating $VENV from $LOCK (uv, --compile-bytecode; triton left out)"
  [ -x "$VENV/bin/python" ] || uv venv -q --python 3.11 "$VENV"
  VIRTUAL_ENV="$VENV" uv pip sync -q --compile-bytecode "$LOCK"
  VIRTUAL_ENV="$VENV" uv pip install -q --no-deps -e .
  if "$VENV/bin/python" -c "import triton" 2>/dev/null; then
    echo "setup: error: triton is installed; it aborts TensorFlow + torchvision in one process" >&2
    exit 1
  fi
  "$VENV/bin/python" -m ipykernel install --sys-prefix --name dlio-artifact \
    --display-name "Python (dlio-artifact)" >/dev/null
  echo "$want" > "$STAMP"
fi

# The project's JupyterLab settings (`make lab`): the "official Jupyter news" pop-up and the
# update check off (the pop-up covers the notebook's lower right corner on a first start).
# JupyterLab reads overrides.json from the environment's share/jupyter/lab/settings.
LAB_SETTINGS=$VENV/share/jupyter/lab/settings
if ! cmp -s env/jupyterlab-overrides.json "$LAB_SETTINGS/overrides.json"; then
  mkdir -p "$LAB_SETTINGS"
  cp env/jupyterlab-overrides.json "$LAB_SETTINGS/overrides.json"
fi

# DLIO (the anchor of the emulator comparison) in its own environment, .venv-dlio.
[ "${SETUP_DLIO:-1}" = "0" ] || bash env/setup-dlio.sh
bash env/system-tools.sh
