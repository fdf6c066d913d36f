#!/usr/bin/env bash
# Fails when a controller folder breaks the anatomy docs/architecture.md describes and the
# document does not say why (hack/verify-anatomy lists the rules).
set -o errexit -o nounset -o pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"

cd "${BOSUN_ROOT}"
go run ./hack/verify-anatomy "${BOSUN_ROOT}"
