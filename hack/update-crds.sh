#!/usr/bin/env bash
# Renders the CustomResourceDefinitions in config/crd/bases from the Go types and their
# kubebuilder markers in staging/src/github.com/bosun-dev/api, with controller-gen at the
# version hack/crd-tools pins.
set -o errexit -o nounset -o pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"

CRD_TOOLS="${BOSUN_ROOT}/hack/crd-tools"
stamp=$(cat "${CRD_TOOLS}/go.mod" "${CRD_TOOLS}/go.sum" | sha256sum | cut -c1-16)
CONTROLLER_GEN="${BOSUN_TOOLS_BIN}/controller-gen"
if [ ! -x "${CONTROLLER_GEN}" ] || [ "$(cat "${CONTROLLER_GEN}.stamp" 2>/dev/null)" != "${stamp}" ]; then
  mkdir -p "${BOSUN_TOOLS_BIN}"
  (cd "${CRD_TOOLS}" && GOFLAGS=-mod=mod go build -o "${CONTROLLER_GEN}" sigs.k8s.io/controller-tools/cmd/controller-gen)
  echo "${stamp}" >"${CONTROLLER_GEN}.stamp"
fi

OUT="${BOSUN_ROOT}/config/crd/bases"
rm -rf "${OUT}"
mkdir -p "${OUT}"
# controller-gen loads the packages through the api module itself.
(cd "${BOSUN_STAGING_DIR}/api" && GOFLAGS=-mod=mod "${CONTROLLER_GEN}" \
  crd:crdVersions=v1 \
  paths=./... \
  output:crd:artifacts:config="${OUT}")
