#!/usr/bin/env bash
# Fails when the generated deepcopy/defaulter code or the client library under staging/
# differs from what hack/update-codegen.sh produces from the API types.
set -o errexit -o nounset -o pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"

bosun::util::verify_generated hack/update-codegen.sh \
  staging/src/github.com/bosun-dev/api \
  staging/src/github.com/bosun-dev/client-go
echo "generated code is up to date"
