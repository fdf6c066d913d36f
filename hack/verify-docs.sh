#!/usr/bin/env bash
# Fails when docs/api-reference.md or docs/flags.md is stale.
set -o errexit -o nounset -o pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"

# Rendered from the working tree into a scratch folder: the docs depend on the binaries,
# which build fastest where the Go build cache already knows them.
scratch=$(mktemp -d)
trap 'rm -rf "${scratch}"' EXIT
"${BOSUN_ROOT}/hack/update-docs.sh" "${scratch}"
failed=0
for f in api-reference.md flags.md; do
  if ! diff -u "${BOSUN_ROOT}/docs/${f}" "${scratch}/${f}" >"${scratch}/diff"; then
    echo "docs/${f} is stale: run hack/update-docs.sh. Differences:" >&2
    head -n 40 "${scratch}/diff" >&2
    failed=1
  fi
done
[ "${failed}" = 0 ]
echo "generated docs are up to date"
