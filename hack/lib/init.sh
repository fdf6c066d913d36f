#!/usr/bin/env bash
# Shared settings for the hack/ scripts. Source it; do not run it.

BOSUN_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export BOSUN_ROOT
# Built tools are cached here. Exported, so that verify scripts running an update script
# in a scratch copy of the tree reuse the cache instead of building everything again.
BOSUN_CACHE_DIR="${BOSUN_CACHE_DIR:-${BOSUN_ROOT}/_output}"
BOSUN_TOOLS_BIN="${BOSUN_TOOLS_BIN:-${BOSUN_CACHE_DIR}/tools/bin}"
export BOSUN_CACHE_DIR BOSUN_TOOLS_BIN

# The staging modules, published as their own Go modules.
BOSUN_STAGING_MODULES=(api client-go)
BOSUN_STAGING_DIR="${BOSUN_ROOT}/staging/src/github.com/bosun-dev"
# Modules of their own that are not staged: build tools and examples.
BOSUN_OTHER_MODULES=(hack/tools hack/crd-tools hack/helm-tools docs/examples/list-daemonsets)

# bosun::util::verify_generated runs an update script against a scratch copy of the tree and
# fails when the result differs from the committed files under the given paths.
bosun::util::verify_generated() {
  local update_script=$1
  shift
  local scratch failed=0 p
  scratch=$(mktemp -d)
  # Copy the tree as git sees it (tracked files plus new, not-ignored ones) so the update
  # script runs on exactly what would be committed, never touching the working tree.
  (cd "${BOSUN_ROOT}" && git ls-files -z --cached --others --exclude-standard \
    | tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xf - -C "${scratch}"
  if ! (cd "${scratch}" && BOSUN_VERIFY=1 bash "${update_script}" >"${scratch}/.update.log" 2>&1); then
    cat "${scratch}/.update.log" >&2
    rm -rf "${scratch}"
    return 1
  fi
  for p in "$@"; do
    if ! diff -Nr "${BOSUN_ROOT}/${p}" "${scratch}/${p}" >"${scratch}/.diff" 2>&1; then
      echo "${p} is stale: run ${update_script}. Differences:" >&2
      head -n 40 "${scratch}/.diff" >&2
      failed=1
    fi
  done
  rm -rf "${scratch}"
  return "${failed}"
}

# bosun::util::build_tool builds the package pkg of the tools module in dir (relative to the
# root) into ${BOSUN_TOOLS_BIN}/<name>, unless the binary there was built from that module's
# go.mod and go.sum already.
bosun::util::build_tool() {
  local dir=$1 pkg=$2 name=$3 stamp binary
  stamp=$(cat "${BOSUN_ROOT}/${dir}/go.mod" "${BOSUN_ROOT}/${dir}/go.sum" | sha256sum | cut -c1-16)
  binary="${BOSUN_TOOLS_BIN}/${name}"
  if [ -x "${binary}" ] && [ "$(cat "${binary}.stamp" 2>/dev/null)" = "${stamp}" ]; then
    return 0
  fi
  echo "building ${name} from ${dir} (once per machine and version)" >&2
  mkdir -p "${BOSUN_TOOLS_BIN}"
  (cd "${BOSUN_ROOT}/${dir}" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -o "${binary}" "${pkg}")
  echo "${stamp}" >"${binary}.stamp"
}
