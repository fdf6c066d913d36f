#!/usr/bin/env bash
# Builds OpenKruise v1.9.0 from the Go module proxy into _output/tools/bin, for running it
# beside bosun: kruise-manager and kruise-daemon (the other column of `make bench`, and the
# cluster that the takeover tests start from) and kruise-e2e.test, OpenKruise's own
# end-to-end suite that `make test-kruise-e2e` runs against bosun, with agnhost, one of the
# suite's images, from the Kubernetes version the suite pins. The version lives in
# hack/kruise/go.mod; a binary is reused until its module or its build command changes.
# kruise-manager-1.8 and kruise-daemon-1.8 are OpenKruise v1.8.2 (hack/kruise-1.8/go.mod), the
# last release that stores every kind as v1alpha1: the second takeover case starts from it.
#
# Usage: hack/build-kruise.sh [kruise-manager|kruise-daemon|kruise-e2e.test|agnhost|kruise-manager-1.8|kruise-daemon-1.8 ...]
#        (default: the first four)
set -o errexit -o nounset -o pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
OUT="${BOSUN_TOOLS_BIN}"
mkdir -p "${OUT}"

# The checksum database does not know OpenKruise's module (it answers 404); its hash is
# pinned in hack/kruise/go.sum instead, and every dependency is still checked there.
export GONOSUMDB="${GONOSUMDB:+${GONOSUMDB},}github.com/openkruise"
export GOFLAGS=-mod=mod CGO_ENABLED=0

binaries=("$@")
if [ ${#binaries[@]} -eq 0 ]; then
  binaries=(kruise-manager kruise-daemon kruise-e2e.test agnhost)
fi

for bin in "${binaries[@]}"; do
  MODULE="${BOSUN_ROOT}/hack/kruise"
  case "${bin}" in
    *-1.8) MODULE="${BOSUN_ROOT}/hack/kruise-1.8" ;;
  esac
  case "${bin}" in
    kruise-manager|kruise-manager-1.8) build=(go build -trimpath) package=github.com/openkruise/kruise ;;
    kruise-daemon|kruise-daemon-1.8) build=(go build -trimpath) package=github.com/openkruise/kruise/cmd/daemon ;;
    kruise-e2e.test) build=(go test -c -trimpath) package=github.com/openkruise/kruise/test/e2e ;;
    agnhost) build=(go build -trimpath -ldflags=-s\ -w) package=k8s.io/kubernetes/test/images/agnhost ;;
    *) echo "build-kruise: unknown binary ${bin} (kruise-manager, kruise-daemon, kruise-e2e.test, agnhost, kruise-manager-1.8 or kruise-daemon-1.8)" >&2; exit 2 ;;
  esac
  # A binary is rebuilt when its module or the command that builds it changes.
  stamp=$( (cat "${MODULE}/go.mod" "${MODULE}/go.sum"; echo "${build[@]}" "${package}") | sha256sum | cut -c1-16)
  if [ -x "${OUT}/${bin}" ] && [ "$(cat "${OUT}/${bin}.stamp" 2>/dev/null)" = "${stamp}" ]; then
    continue
  fi
  echo "build-kruise: building ${bin} (the first build on a machine takes minutes)" >&2
  start=$(date +%s)
  (cd "${MODULE}" && "${build[@]}" -o "${OUT}/${bin}.tmp" "${package}")
  mv "${OUT}/${bin}.tmp" "${OUT}/${bin}"
  echo "${stamp}" > "${OUT}/${bin}.stamp"
  echo "build-kruise: ${bin} built in $(( $(date +%s) - start ))s" >&2
done
