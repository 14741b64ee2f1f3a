#!/bin/sh
# Build the workload into the trial's working folder. The source sits next
# to this script; Go's build cache makes every build after the first quick.
set -e
here=$(cd "$(dirname "$0")" && pwd)
go -C "$here/shipit" build -o "$PWD/shipit" .
