#!/usr/bin/env bash
# Fails when a Go file outside vendor/ is not gofmt-clean.
set -o errexit -o nounset -o pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${BOSUN_ROOT}"

unformatted=$(git ls-files -z --cached --others --exclude-standard -- '*.go' ':!:vendor/*' \
  | xargs -0 gofmt -l)
if [ -n "${unformatted}" ]; then
  echo "these files are not gofmt-clean (run gofmt -w):" >&2
  echo "${unformatted}" >&2
  exit 1
fi
echo "gofmt: ok"
