#!/usr/bin/env bash
# Fails when a go.mod, go.sum or vendor/ is not what hack/update-vendor.sh would write.
set -o errexit -o nounset -o pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"

paths=(go.mod go.sum vendor)
for m in "${BOSUN_OTHER_MODULES[@]}"; do
  paths+=("${m}/go.mod" "${m}/go.sum")
done
for m in "${BOSUN_STAGING_MODULES[@]}"; do
  paths+=("staging/src/github.com/bosun-dev/${m}/go.mod" "staging/src/github.com/bosun-dev/${m}/go.sum")
done
bosun::util::verify_generated hack/update-vendor.sh "${paths[@]}"
echo "go.mod, go.sum and vendor/ are up to date"
