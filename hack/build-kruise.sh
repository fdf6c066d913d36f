#!/usr/bin/env bash
# Builds OpenKruise v1.9.0 from the Go module proxy into _output/tools/bin, for running it
# beside bosun: kruise-manager and kruise-daemon (the other column of `make bench`, and the
# cluster that the takeover tests start from) and kruise-e2e.test, OpenKruise's own
# end-to-end suite that `make test-kruise-e2e` runs against bosun, with agnhost, one of the
# suite's images, from the Kubernetes version the suite pins. The version lives in
# hack/kruise/go.mod; the binaries are reused until that module or this script changes.
#
# Usage: hack/build-kruise.sh [kruise-manager|kruise-daemon|kruise-e2e.test|agnhost ...]   (default: all four)
set -o errexit -o nounset -o pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
MODULE="${BOSUN_ROOT}/hack/kruise"
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

stamp=$(cat "${MODULE}/go.mod" "${MODULE}/go.sum" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)

for bin in "${binaries[@]}"; do
  case "${bin}" in
    kruise-manager) build=(go build -trimpath -o "${OUT}/${bin}.tmp" github.com/openkruise/kruise) ;;
    kruise-daemon) build=(go build -trimpath -o "${OUT}/${bin}.tmp" github.com/openkruise/kruise/cmd/daemon) ;;
    kruise-e2e.test) build=(go test -c -trimpath -o "${OUT}/${bin}.tmp" github.com/openkruise/kruise/test/e2e) ;;
    agnhost) build=(go build -trimpath -ldflags=-s\ -w -o "${OUT}/${bin}.tmp" k8s.io/kubernetes/test/images/agnhost) ;;
    *) echo "build-kruise: unknown binary ${bin} (kruise-manager, kruise-daemon, kruise-e2e.test or agnhost)" >&2; exit 2 ;;
  esac
  if [ -x "${OUT}/${bin}" ] && [ "$(cat "${OUT}/${bin}.stamp" 2>/dev/null)" = "${stamp}" ]; then
    continue
  fi
  echo "build-kruise: building ${bin} (the first build on a machine takes minutes)" >&2
  start=$(date +%s)
  (cd "${MODULE}" && "${build[@]}")
  mv "${OUT}/${bin}.tmp" "${OUT}/${bin}"
  echo "${stamp}" > "${OUT}/${bin}.stamp"
  echo "build-kruise: ${bin} built in $(( $(date +%s) - start ))s" >&2
done
