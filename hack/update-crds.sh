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

# Only v1alpha1 is served for now: the v1beta1 versions, ImageListPullJob and NodeImage's
# pullSecrets[].mode in v1alpha1 reach the CRDs together with the conversion between the
# two versions, which the API server needs before it can serve both. Until then they exist
# in the Go types and the client library only.
SERVED_PACKAGES="./apps/v1alpha1;./policy/v1alpha1"
NOT_YET_SERVED_CRDS=(apps.kruise.io_imagelistpulljobs.yaml)
NOT_YET_SERVED_PROPERTIES=("apps.kruise.io_nodeimages.yaml mode")

# drop_property removes the one schema property called name from a rendered CRD file: its
# line and every more deeply indented line after it. It fails unless exactly one matches,
# so that it cannot silently outlive its purpose.
drop_property() {
  local file=$1 name=$2
  awk -v name="${name}" '
    skipping { match($0, /^ */); if (RLENGTH > indent) next; skipping = 0 }
    $0 ~ "^ *" name ":$" { match($0, /^ */); indent = RLENGTH; skipping = 1; found++; next }
    { print }
    END { if (found != 1) { print "expected one property " name ", found " found + 0 > "/dev/stderr"; exit 1 } }
  ' "${file}" >"${file}.tmp"
  mv "${file}.tmp" "${file}"
}

OUT="${BOSUN_ROOT}/config/crd/bases"
rm -rf "${OUT}"
mkdir -p "${OUT}"
# controller-gen loads the packages through the api module itself.
(cd "${BOSUN_STAGING_DIR}/api" && GOFLAGS=-mod=mod "${CONTROLLER_GEN}" \
  crd:crdVersions=v1 \
  paths="${SERVED_PACKAGES}" \
  output:crd:artifacts:config="${OUT}")
for crd in "${NOT_YET_SERVED_CRDS[@]}"; do
  rm "${OUT}/${crd}"
done
for entry in "${NOT_YET_SERVED_PROPERTIES[@]}"; do
  read -r crd property <<<"${entry}"
  drop_property "${OUT}/${crd}" "${property}"
done
