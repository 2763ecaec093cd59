#!/bin/bash
# multi_host_enter.sh <hostname> <hosts file> <scratch dir|""> [path ...] -- <command...>
# Run inside a test host's fresh UTS + mount namespaces (multi_host_cluster.sh): takes the
# host's name and /etc/hosts; with a scratch dir, /tmp and /dev/shm become the host's own, and
# each listed path that lay under the real /tmp is bound back in at the same place. ST_HOST_BINDS
# ("src:dst ...") puts other files over this host's view (another install, say).
set -euo pipefail
name=$1 hosts=$2 scratch=$3
shift 3
keep=()
while [ "$1" != -- ]; do keep+=("$1"); shift; done
shift
hostname "$name"
mount --bind "$hosts" /etc/hosts
if [ -n "$scratch" ]; then
  mount --bind /tmp "$scratch/orig-tmp"
  mount --bind "$scratch/tmp" /tmp
  mount -t tmpfs -o size=1g tmpfs /dev/shm
  for path in "${keep[@]}"; do
    case $path in
      /tmp/*) mkdir -p "$path" && mount --bind "$scratch/orig-tmp/${path#/tmp/}" "$path" ;;
    esac
  done
fi
for bind in ${ST_HOST_BINDS:-}; do
  mount --bind "${bind%%:*}" "${bind#*:}"
done
exec "$@"
