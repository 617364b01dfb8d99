#!/usr/bin/env bash
# Installs the Debian 12 packages phasor builds, tests and runs with.
# Idempotent and non-interactive: packages already present are not touched,
# and `apt-get update` runs only when something is missing.
#
# usage: scripts/install-deps.sh [build|testbed|all]
#   build  what configuring and building needs (`make demo`)
#   testbed  that, and PyTorch and iproute2 (`make testbed`)
#   all    that, and the programs the tests start (`make test`; the default)
set -euo pipefail
group="${1:-all}"
case "$group" in
  build|testbed|all) ;;
  *) echo "install-deps: unknown group '$group' (build, testbed or all)" >&2; exit 2 ;;
esac

packages=(
  build-essential cmake ninja-build pkg-config git
  # placer, topology, CLI
  libboost-graph-dev libabsl-dev nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libspdlog-dev
  libjemalloc-dev  # the programs' allocator (PHASOR_ALLOCATOR)
  # protocol and daemon
  libzmq3-dev cppzmq-dev libprotobuf-dev protobuf-compiler libsqlite3-dev
  prometheus-cpp-dev
  # Kubernetes extender (HTTP server and API-server client; its pkg-config needs the rest)
  libcpp-httplib-dev libssl-dev zlib1g-dev libbrotli-dev
  python3 python3-zmq python3-protobuf
  # probes (gRPC C++ and its protoc plugin: the gNMI counter source)
  dpdk-dev libdpdk-dev libpcap-dev rdma-core libibverbs-dev libkissfft-dev zlib1g-dev
  libgrpc++-dev protobuf-compiler-grpc
  # the test and benchmark libraries (configuring needs them)
  googletest libgtest-dev libgmock-dev libbenchmark-dev
)
test_packages=(
  # the Python package (pip install ./integrations/python, make python-wheel) and its PyTorch helper's test
  python3-setuptools python3-wheel python3-venv python3-pip python3-torch
  clang clang-format libclang-rt-14-dev  # libFuzzer runtime (only a Recommends of clang)
  iproute2  # network namespaces of the live-capture tests
  python3-grpcio  # the gNMI source's tests: a Python gNMI target
  openssl  # the extender's TLS test and the gNMI tests make their CA and certificates with it
  chromium  # headless: the `phasor diagnose` HTML report's browser check
  prometheus  # a real Prometheus scrapes phasord in prometheus_scrape_test
  # Slurm integration test: a real slurmctld + 8 slurmd, each host in its own namespaces (job_submit_lua.so is linked against Lua 5.1)
  munge slurmctld slurmd slurm-client slurm-wlm-basic-plugins lua5.1
  lua-socket  # job_submit.lua talks to the controller's socket itself (socket.unix), without forking a helper
  etcd-server etcd-client  # state_store.backend: etcd; the failover tests start a real 3-member cluster
)
if [ "$group" = all ]; then
  packages+=("${test_packages[@]}")
elif [ "$group" = testbed ]; then
  packages+=(python3-torch iproute2)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run as root (or install them yourself) and try again" >&2
  exit 1
fi

echo "install-deps: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
