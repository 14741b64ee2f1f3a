#!/bin/sh
# Writes data.txt: 200000 lines of a random 8-digit key and a line number,
# the same on every run (fixed seed).
awk 'BEGIN { srand(7); for (i = 0; i < 200000; i++) printf "%08d %s\n", int(rand() * 1e8), i }' > data.txt
