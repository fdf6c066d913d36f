#!/usr/bin/env bash
# Builds the real etcd, kube-apiserver, kubectl, kube-controller-manager, kube-scheduler,
# kubelet and kube-proxy (the upstream side of the handover tests, of `make bench`, and the
# control plane and node of `make local-up` and the end-to-end suite) from the Go module proxy into
# _output/tools/bin. The binaries are reused until
# hack/tools changes, so only the first run on a machine pays the few minutes of compiling.
#
# Usage: hack/build-test-servers.sh [binary ...]   (default: all seven)
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS="${ROOT}/hack/tools"
OUT="${BOSUN_TOOLS_BIN:-${ROOT}/_output/tools/bin}"
mkdir -p "${OUT}"

binaries=("$@")
if [ ${#binaries[@]} -eq 0 ]; then
  binaries=(etcd kube-apiserver kubectl kube-controller-manager kube-scheduler kubelet kube-proxy)
fi

# The stamp covers everything that decides what gets built, this script included.
stamp=$(cd "${TOOLS}" && cat go.mod go.sum ./*/main.go "${ROOT}/hack/build-test-servers.sh" | sha256sum | cut -c1-16)

# Stamp the Kubernetes release into the binaries, as release builds do, so that
# `kubectl version` and /version report it instead of v0.0.0-master.
kube_version=$(cd "${TOOLS}" && GOFLAGS=-mod=mod go list -m -f '{{.Version}}' k8s.io/kubernetes)
kube_minor=$(echo "${kube_version}" | cut -d. -f2)
version_pkg=k8s.io/component-base/version
ldflags="-s -w -X ${version_pkg}.gitVersion=${kube_version} -X ${version_pkg}.gitMajor=1 -X ${version_pkg}.gitMinor=${kube_minor} -X ${version_pkg}.gitTreeState=clean"

stale=()
for bin in "${binaries[@]}"; do
  if [ ! -d "${TOOLS}/${bin}" ]; then
    echo "build-test-servers: unknown binary ${bin}" >&2
    exit 2
  fi
  if [ -x "${OUT}/${bin}" ] && [ "$(cat "${OUT}/${bin}.stamp" 2>/dev/null)" = "${stamp}" ]; then
    continue
  fi
  stale+=("${bin}")
done
[ ${#stale[@]} -eq 0 ] && exit 0

# One `go build` for all of them: the links and the compiles of packages only one binary
# needs overlap instead of running one binary after the other.
echo "build-test-servers: building ${stale[*]} (the first build on a machine takes minutes)" >&2
start=$(date +%s)
tmp="${OUT}/.building"
rm -rf "${tmp}"
mkdir -p "${tmp}"
(cd "${TOOLS}" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags="${ldflags}" -o "${tmp}/" "${stale[@]/#/./}")
for bin in "${stale[@]}"; do
  mv "${tmp}/${bin}" "${OUT}/${bin}"
  echo "${stamp}" > "${OUT}/${bin}.stamp"
done
rmdir "${tmp}"
echo "build-test-servers: ${stale[*]} built in $(( $(date +%s) - start ))s" >&2
