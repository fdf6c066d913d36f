#!/usr/bin/env bash
# Fails when config/crd differs from what hack/update-crds.sh renders from the types, or
# when the rendered CRDs lose what a cluster that ran OpenKruise 1.9 needs of them (both
# versions served, v1beta1 stored, conversion where the versions differ, bosun's label).
set -o errexit -o nounset -o pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"

bosun::util::verify_generated hack/update-crds.sh config/crd/bases config/crd/kustomization.yaml
(cd "${BOSUN_ROOT}" && go test ./test/integration/api/ -run '^TestShippedCRDs$' -count=1 >/dev/null) || {
  echo "the shipped CRDs break a rule: go test ./test/integration/api/ -run '^TestShippedCRDs$' -v" >&2
  exit 1
}
echo "CRDs are up to date"
