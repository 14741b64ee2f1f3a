#!/bin/sh
# A stand-in for a compile: slow, and it depends only on build_opt.
set -e
sleep "${build_s:-2}"
printf '%s\n' "$build_opt" > app.build
