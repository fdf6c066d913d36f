#!/usr/bin/env bash
# Fails when docs/api-reference.md or docs/flags.md is stale.
set -o errexit -o nounset -o pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"

bosun::util::verify_generated hack/update-docs.sh docs/api-reference.md docs/flags.md
echo "generated docs are up to date"
