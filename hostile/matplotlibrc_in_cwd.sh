#!/bin/bash
# As root: h12mallory plants a matplotlibrc in a shared sticky directory; h12alice runs
# calibrate --plot from there. Before the fix: traceback (std::bad_alloc), no plot.
# Needs users h12alice/h12mallory and /tmp/h12ss (a wrapper running the worktree's CLI).
set -u
mkdir -p /tmp/h12shared && chmod 1777 /tmp/h12shared
runuser -u h12mallory -- bash -c 'printf "savefig.dpi: 20000\nfigure.figsize: 200, 200\n" > /tmp/h12shared/matplotlibrc'
runuser -u h12alice -- env HOME=/home/h12alice bash -c \
  'cd /tmp/h12shared && /tmp/h12ss calibrate --sample 20 --plot /home/h12alice/cal.png /home/h12alice/docs 2>&1 | tail -3; echo "exit ${PIPESTATUS[0]}"; file /home/h12alice/cal.png'
rm -rf /tmp/h12shared
