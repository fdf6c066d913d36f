#!/usr/bin/env bash
# Fails when a go.mod, go.sum or vendor/ is not what hack/update-vendor.sh would write.
set -o errexit -o nounset -o pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"

paths=(go.mod go.sum vendor hack/tools/go.mod hack/tools/go.sum hack/crd-tools/go.mod hack/crd-tools/go.sum)
for m in "${BOSUN_STAGING_MODULES[@]}"; do
  paths+=("staging/src/github.com/bosun-dev/${m}/go.mod" "staging/src/github.com/bosun-dev/${m}/go.sum")
done
bosun::util::verify_generated hack/update-vendor.sh "${paths[@]}"
echo "go.mod, go.sum and vendor/ are up to date"
