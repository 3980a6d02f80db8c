#!/usr/bin/env bash
# Install the system tools the experiments use, with apt when root and missing, and say
# clearly what could not be installed (the experiments then fall back and record it).
set -uo pipefail
declare -A PKG=([fio]=fio [bpftrace]=bpftrace [strace]=strace [iostat]=sysstat)
missing=()
for tool in fio bpftrace strace iostat; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("${PKG[$tool]}")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: system tools present: fio bpftrace strace iostat"
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing ${missing[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q "${missing[@]}" >/tmp/dlio-apt.log 2>&1 \
    || { apt-get update -q >>/tmp/dlio-apt.log 2>&1 && apt-get install -y -q "${missing[@]}" >>/tmp/dlio-apt.log 2>&1; } \
    || echo "setup: warning: apt-get could not install ${missing[*]} (log: /tmp/dlio-apt.log)"
fi
for tool in fio bpftrace strace iostat; do
  command -v "$tool" >/dev/null 2>&1 || echo "setup: warning: $tool is not installed (package ${PKG[$tool]}); \
stages that need it will stop or fall back. Install it as root: apt-get install ${PKG[$tool]}"
done
exit 0
