#!/usr/bin/env bash
# Writes the Helm chart config/helm/bosun from the in-cluster kustomize base config/default
# (hack/chartgen), so that the chart and the base are one set of manifests.
set -o errexit -o nounset -o pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"
cd "${BOSUN_ROOT}"

"$(dirname "${BASH_SOURCE[0]}")/build-test-servers.sh" kubectl
# The chart's appVersion is the release the Makefile stamps into the binaries.
version=$(sed -n 's/^VERSION ?= //p' Makefile)
"${BOSUN_TOOLS_BIN}/kubectl" kustomize config/default | go run ./hack/chartgen -out config/helm/bosun -app-version "${version}"
