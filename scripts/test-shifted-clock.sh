#!/usr/bin/env bash
# Run the test suite with every Python process's wall clock moved to a given
# time (default 2027-06-01 12:00:00 UTC) and running on from there, to show
# that no test depends on today's date.  (Debian's faketime cannot do this for
# Python: libfaketime 0.9.10 makes threading's timed waits hang or fail.)
#   scripts/test-shifted-clock.sh ['2027-06-01 12:00:00'] [pytest arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
target="${1:-2027-06-01 12:00:00}"
[ $# -gt 0 ] && shift
python3 -m pip install -q --disable-pip-version-check 'time-machine>=2.10'
shift_s=$(( $(date -u -d "$target" +%s) - $(date -u +%s) ))
echo "wall clock moved by ${shift_s} s, to ${target} UTC"
export CLOCK_SHIFT_SECONDS="$shift_s"
export PYTHONPATH="$PWD/scripts/clock-shift${PYTHONPATH:+:$PYTHONPATH}"
python3 -c 'import datetime; print("python sees", datetime.datetime.now(datetime.timezone.utc))'
exec bash scripts/test.sh "$@"
