#!/usr/bin/env bash
# Runs every Go fuzz target of the main module (a func FuzzXxx(f *testing.F) in a _test.go
# file under cmd/ or pkg/), one after another, each for FUZZTIME (default 1m). A crasher
# stops the run; go test writes it under the package's testdata/fuzz/FuzzXxx/, from where
# plain `go test` replays it.
#
# FUZZMINIMIZETIME (default 1s) bounds the minimizing of each new interesting input. Go's
# default, a minute, is spent on the first input that finds new code in a large handler,
# which would leave a one-minute run almost no time to fuzz. FUZZFLAGS go to go test as
# they are (FUZZFLAGS=-parallel=1 on a shared machine).
set -o errexit -o nounset -o pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${BOSUN_ROOT}"

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-1m}
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-1s}
FUZZFLAGS=${FUZZFLAGS:-}

# Target and package directory, one pair a line, sorted.
targets=$(git ls-files --cached --others --exclude-standard -- 'cmd/*_test.go' 'pkg/*_test.go' \
  | xargs grep -H -E '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' \
  | sed -E 's|^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*|\2 \1|' | sort)
if [ -z "${targets}" ]; then
  echo "no fuzz targets found" >&2
  exit 1
fi

while read -r target dir; do
  echo "=== ${target} (./${dir}) for ${FUZZTIME}"
  # shellcheck disable=SC2086 # FUZZFLAGS is a list of flags.
  "${GO}" test -run '^$' -fuzz "^${target}\$" -fuzztime "${FUZZTIME}" -fuzzminimizetime "${FUZZMINIMIZETIME}" \
    ${FUZZFLAGS} "./${dir}"
done <<<"${targets}"
