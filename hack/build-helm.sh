#!/usr/bin/env bash
# Builds Helm at the version hack/helm-tools pins into _output/tools/bin/helm, reused until
# that module changes. The tests render and install config/helm/bosun with it.
set -o errexit -o nounset -o pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"

bosun::util::build_tool hack/helm-tools helm.sh/helm/v3/cmd/helm helm
