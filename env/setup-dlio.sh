#!/usr/bin/env bash
# DLIO's own environment, .venv-dlio, from the pinned env/dlio.lock, and DFTracer's current
# release, .venv-dftracer, from env/dftracer.lock (issue 56: `make bench` measures it beside the
# 1.0.2 DLIO pins; the two releases' `dftracer` packages clash), each with uv
# (--compile-bytecode), idempotently: a lock's hash is stamped in its environment, so a second
# run does nothing.
#
#   bash env/setup-dlio.sh         install (env/setup.sh calls it; so do `make setup/test`)
#   bash env/setup-dlio.sh lock    re-pin env/dlio.lock and env/dftracer.lock against
#                                  env/requirements.lock (`make lock`)
#
# The lock is for x86_64 Linux with glibc >= 2.34 (pydftracer, which DLIO 2.0.0 needs, ships
# only manylinux_2_34 wheels). Elsewhere nothing is installed and the reason is written to
# .venv-dlio/UNAVAILABLE: experiments.dlio reads it and every DLIO number is then "not
# measured" with that reason. On a supported box a failed install is an error.
set -euo pipefail
cd "$(dirname "$0")/.."

LOCK=env/dlio.lock
VENV=.venv-dlio
PLATFORM=x86_64-manylinux_2_34
DFT_LOCK=env/dftracer.lock
DFT_VENV=.venv-dftracer

if ! command -v uv >/dev/null 2>&1; then
  echo "setup-dlio: installing uv (pip)"
  python3 -m pip install -q --disable-pip-version-check uv 2>/dev/null \
    || python3 -m pip install -q --user --disable-pip-version-check uv
  export PATH="$HOME/.local/bin:$PATH"
fi

if [ "${1:-}" = "lock" ]; then
  uv pip compile env/dlio.in -c env/requirements.lock --override env/overrides.txt \
    --override env/dlio-overrides.txt --python-version 3.11 --python-platform "$PLATFORM" \
    -o "$LOCK"
  uv pip compile env/dftracer.in -c env/requirements.lock --override env/overrides.txt \
    --python-version 3.11 --python-platform "$PLATFORM" -o env/dftracer.lock
  exit 0
fi

unavailable() {
  for v in "$VENV" "$DFT_VENV"; do
    mkdir -p "$v"
    rm -f "$v/.dlio-lock-sha256"
    echo "$1" > "$v/UNAVAILABLE"
  done
  echo "setup-dlio: DLIO's and DFTracer's environments are not installed: $1 (DLIO and DFTracer" \
       "numbers will be 'not measured')"
  exit 0
}

arch=$(uname -m)
glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
[ "$(uname -s)" = "Linux" ] && [ "$arch" = "x86_64" ] \
  || unavailable "$LOCK is pinned for $PLATFORM; this machine is $(uname -s) $arch"
[ -n "$glibc" ] || unavailable "$LOCK needs glibc >= 2.34 (pydftracer's wheels); no glibc found"
if [ "$(printf '%s\n' 2.34 "$glibc" | sort -V | head -1)" != "2.34" ]; then
  unavailable "$LOCK needs glibc >= 2.34 (pydftracer's manylinux_2_34 wheels); this machine has glibc $glibc"
fi

# sync_env LOCK VENV CHECK: VENV from LOCK unless its stamp is LOCK's hash; CHECK (a shell
# command) must then succeed
sync_env() {
  local lock=$1 venv=$2 check=$3 want t0
  want=$(sha256sum "$lock" | cut -c1-64)
  if [ -x "$venv/bin/python" ] && [ -f "$venv/.dlio-lock-sha256" ] \
     && [ "$(cat "$venv/.dlio-lock-sha256")" = "$want" ]; then
    echo "setup-dlio: $venv is up to date with $lock"
    return 0
  fi
  echo "setup-dlio: creating $venv from $lock (uv, --compile-bytecode)"
  t0=$(date +%s)
  rm -f "$venv/UNAVAILABLE" "$venv/.dlio-lock-sha256"
  [ -x "$venv/bin/python" ] || uv venv -q --python 3.11 "$venv"
  VIRTUAL_ENV="$venv" uv pip sync -q --compile-bytecode "$lock"
  eval "$check" || { echo "setup-dlio: error: $venv does not work (\`$check\` failed)" >&2; exit 1; }
  echo "$want" > "$venv/.dlio-lock-sha256"
  echo "setup-dlio: $venv ready in $(( $(date +%s) - t0 )) s"
}
sync_env "$LOCK" "$VENV" '"$VENV/bin/python" -c "import dlio_benchmark, dftracer.logger, mpi4py" && [ -x "$VENV/bin/dlio_benchmark" ]'
sync_env "$DFT_LOCK" "$DFT_VENV" 'ls "$DFT_VENV"/lib/python3*/site-packages/dftracer/lib64/libdftracer_preload.so >/dev/null'

