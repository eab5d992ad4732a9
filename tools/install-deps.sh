#!/usr/bin/env bash
# Installs tpusim's build and test dependencies from Debian's packages, only those missing.
# Idempotent: a second run installs nothing. Needs root (or sudo) for apt-get.
set -euo pipefail
# chromium: headless, for the op profile page's browser test (tests/browser/).
pkgs=(build-essential cmake pkg-config libsystemc-dev libboost-graph-dev libspdlog-dev
      nlohmann-json3-dev catch2 libcli11-dev zlib1g-dev time python3 clang-format git
      clang-14 libclang-rt-14-dev libcairo2-dev fonts-dejavu-core protobuf-compiler libprotobuf-dev
      pybind11-dev python3-dev python3-pytest slurm-wlm munge libturbojpeg0-dev libjemalloc-dev
      chromium lld)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
