#!/usr/bin/env bash
# Tidies every module of the repository and refreshes vendor/.
# The staging modules are linked into vendor/ instead of copied, as upstream Kubernetes does,
# so that an edit under staging/ is seen by the main module at once.
set -o errexit -o nounset -o pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
export GOFLAGS=-mod=mod

# Staging modules first: the main module's graph includes theirs.
for m in "${BOSUN_STAGING_MODULES[@]}"; do
  (cd "${BOSUN_STAGING_DIR}/${m}" && go mod tidy)
done
for other in "${BOSUN_OTHER_MODULES[@]}"; do
  (cd "${BOSUN_ROOT}/${other}" && go mod tidy)
done

cd "${BOSUN_ROOT}"
go mod tidy
go mod vendor
for m in "${BOSUN_STAGING_MODULES[@]}"; do
  rm -rf "vendor/github.com/bosun-dev/${m}"
  ln -s "../../../staging/src/github.com/bosun-dev/${m}" "vendor/github.com/bosun-dev/${m}"
done
