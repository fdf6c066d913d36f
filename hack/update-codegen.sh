#!/usr/bin/env bash
# Regenerates the code derived from the API types with k8s.io/code-generator's
# kube_codegen.sh, at the code-generator version that go.mod pins:
#   - deepcopy, defaulter and conversion functions in staging/src/github.com/bosun-dev/api
#     (conversions from each v1alpha1 package to the v1beta1 package its doc.go names)
#   - the typed clientset, listers, informers and apply configurations that make up
#     staging/src/github.com/bosun-dev/client-go
set -o errexit -o nounset -o pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${BOSUN_ROOT}"

CODEGEN_VERSION=$(GOFLAGS=-mod=mod go list -m -f '{{.Version}}' k8s.io/code-generator)
CODEGEN_PKG=$(GOFLAGS=-mod=mod go mod download -json "k8s.io/code-generator@${CODEGEN_VERSION}" \
  | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
# kube_codegen.sh installs its generators into GOBIN; keep them out of the user's GOPATH.
export GOBIN="${BOSUN_CACHE_DIR}/codegen/${CODEGEN_VERSION}/bin"
mkdir -p "${GOBIN}"
# shellcheck source=/dev/null
source "${CODEGEN_PKG}/kube_codegen.sh"

API_DIR="${BOSUN_STAGING_DIR}/api"
CLIENT_DIR="${BOSUN_STAGING_DIR}/client-go"

# The generators resolve input directories to import paths through the module that
# contains the working directory, so they run inside the api module.
cd "${API_DIR}"
export GOFLAGS=-mod=mod

kube::codegen::gen_helpers \
  --boilerplate "${BOSUN_ROOT}/hack/boilerplate.go.txt" \
  "${API_DIR}"

# Fields of built-in types get client-go's apply configurations, so a PodTemplateSpec (or a
# CloneSet's PersistentVolumeClaim template) can be applied field by field like in
# k8s.io/client-go/applyconfigurations/apps/v1.
apply_externals=()
for t in PodTemplateSpec PersistentVolumeClaim ContainerPort ExecAction HTTPGetAction TCPSocketAction ObjectReference; do
  apply_externals+=("k8s.io/api/core/v1.${t}:k8s.io/client-go/applyconfigurations/core/v1")
done
apply_externals+=("k8s.io/api/apps/v1.DaemonSetCondition:k8s.io/client-go/applyconfigurations/apps/v1")

kube::codegen::gen_client \
  --with-watch \
  --with-applyconfig \
  --applyconfig-externals "$(IFS=,; echo "${apply_externals[*]}")" \
  --output-dir "${CLIENT_DIR}" \
  --output-pkg github.com/bosun-dev/client-go \
  --boilerplate "${BOSUN_ROOT}/hack/boilerplate.go.txt" \
  "${API_DIR}"
