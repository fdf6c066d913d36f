#!/usr/bin/env bash
# Fails when config/crd/bases differs from what hack/update-crds.sh renders from the types.
set -o errexit -o nounset -o pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"

bosun::util::verify_generated hack/update-crds.sh config/crd/bases
echo "CRDs are up to date"
