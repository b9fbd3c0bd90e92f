#!/bin/sh
# run-demo.sh BUILD - the main job: minimise Rosenbrock in 10^6 dimensions
# with Adam on the best device and print progress.
set -e
build=${1:-build}
exec "$build/bin/rosenbrock" -n 1000000 -s 1000 -o adam -c "lr=0.01"
