#!/usr/bin/env bash
# Fails when the Helm chart config/helm/bosun differs from what hack/update-chart.sh generates
# from config/default. (test/integration/install renders both and compares the objects.)
set -o errexit -o nounset -o pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib/init.sh"

bosun::util::verify_generated hack/update-chart.sh config/helm/bosun
echo "the Helm chart is up to date"
