#!/usr/bin/env bash
# Builds localhost/gpss-simulator:broken: the GPSS simulator built to fail
# at every start (GPSS_SIM_FAIL_START), a version that never becomes ready,
# for the tests of a halted rollout and its rollback. images/gpss-simulator
# builds it; this only sets the tag and the knob.
#
#   build.sh | build.sh inputs | build.sh tag   (as images/gpss-simulator)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
export OUT=${OUT:-$repo/_output/images/gpss-simulator-broken.tar}
export TAG=${TAG:-localhost/gpss-simulator:broken}
export ENV="GPSS_SIM_FAIL_START=this_build_is_broken_on_purpose GPSS_SIM_VERSION=broken"
exec "$repo/images/gpss-simulator/build.sh" "$@"
