#!/usr/bin/env bash
# Installs the Debian packages that bosun's builds, tests and local cluster need and the
# machine lacks. `.ci/run` and `make local-up` both call it; it does nothing when everything
# is there, so calling it every time is cheap.
#
#   hack/install-deps.sh          build tools and the local node (containerd, runc, CNI
#                                 plugins, the image registry, htpasswd)
#   hack/install-deps.sh --check  only report what is missing; exit 1 if anything is
#
# Installing needs root. Run as another user, it names what is missing and how to install it.
set -o errexit -o nounset -o pipefail

check_only=false
case "${1:-}" in
  "") ;;
  --check) check_only=true ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

# Each line: a file or command the project uses, and the Debian package that provides it.
# The local node's parts are looked up by path: containerd's CNI plugins live outside PATH.
requirements=(
  "git               git"
  "make              make"
  "gcc               gcc"
  "diff              diffutils"
  "tar               tar"
  "ip                iproute2"
  "containerd        containerd"
  "runc              runc"
  "/usr/lib/cni/bridge      containernetworking-plugins"
  "/usr/lib/cni/host-local  containernetworking-plugins"
  "/usr/lib/cni/loopback    containernetworking-plugins"
  "docker-registry   docker-registry"
  "htpasswd          apache2-utils"
  "/bin/busybox      busybox-static"
  "iptables-restore  iptables"
)

missing_packages=()
missing_what=()
for line in "${requirements[@]}"; do
  read -r what package <<<"${line}"
  if [[ "${what}" == /* ]]; then
    [ -x "${what}" ] && continue
  else
    command -v "${what}" >/dev/null 2>&1 && continue
  fi
  missing_what+=("${what}")
  if [[ " ${missing_packages[*]-} " != *" ${package} "* ]]; then
    missing_packages+=("${package}")
  fi
done

if [ ${#missing_packages[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: missing ${missing_what[*]} (Debian packages: ${missing_packages[*]})" >&2
if ${check_only}; then
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: installing needs root; run: sudo apt-get install -y ${missing_packages[*]}" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing_packages[@]}" >/dev/null
echo "install-deps: installed ${missing_packages[*]}" >&2
