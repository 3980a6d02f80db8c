#!/usr/bin/env bash
# DLIO's own environment, .venv-dlio, from the pinned env/dlio.lock (uv, --compile-bytecode),
# idempotently: the lock's hash is stamped in the environment, so a second run does nothing.
#
#   bash env/setup-dlio.sh         install (env/setup.sh calls it; so do `make setup/test`)
#   bash env/setup-dlio.sh lock    re-pin env/dlio.lock against env/requirements.lock (`make lock`)
#
# The lock is for x86_64 Linux with glibc >= 2.34 (pydftracer, which DLIO 2.0.0 needs, ships
# only manylinux_2_34 wheels). Elsewhere nothing is installed and the reason is written to
# .venv-dlio/UNAVAILABLE: experiments.dlio reads it and every DLIO number is then "not
# measured" with that reason. On a supported box a failed install is an error.
set -euo pipefail
cd "$(dirname "$0")/.."

LOCK=env/dlio.lock
VENV=.venv-dlio
STAMP=$VENV/.dlio-lock-sha256
WHY=$VENV/UNAVAILABLE
PLATFORM=x86_64-manylinux_2_34

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
  exit 0
fi

unavailable() {
  mkdir -p "$VENV"
  rm -f "$STAMP"
  echo "$1" > "$WHY"
  echo "setup-dlio: DLIO's environment is not installed: $1 (DLIO numbers will be 'not measured')"
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

want=$(sha256sum "$LOCK" | cut -c1-64)
if [ -x "$VENV/bin/dlio_benchmark" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  echo "setup-dlio: $VENV is up to date with $LOCK"
  exit 0
fi
echo "setup-dlio: creating $VENV from $LOCK (uv, --compile-bytecode)"
t0=$(date +%s)
rm -f "$WHY" "$STAMP"
[ -x "$VENV/bin/python" ] || uv venv -q --python 3.11 "$VENV"
VIRTUAL_ENV="$VENV" uv pip sync -q --compile-bytecode "$LOCK"
"$VENV/bin/python" -c "import dlio_benchmark, dftracer.logger, mpi4py" \
  || { echo "setup-dlio: error: DLIO does not import in $VENV" >&2; exit 1; }
echo "$want" > "$STAMP"
echo "setup-dlio: $VENV ready in $(( $(date +%s) - t0 )) s"
