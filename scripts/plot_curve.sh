#!/usr/bin/env bash
# Plots tuning curves written by `tessera tune --curve FILE.csv` (columns
# trials,seconds,best_ms,best_gflops; one row per measured round): best GFLOP/s against trials,
# one line per file, titled by the file's name. Needs gnuplot (scripts/setup.sh installs
# gnuplot-nox).
#
# Usage: scripts/plot_curve.sh CURVE.csv [MORE.csv...] -o OUT.png
set -euo pipefail

usage() {
  echo "usage: $(basename "$0") CURVE.csv [MORE.csv...] -o OUT.png" >&2
  exit 1
}

out=""
files=()
while [ $# -gt 0 ]; do
  case "$1" in
    -o) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "error: unknown option '$1'" >&2; usage ;;
    *) files+=("$1"); shift ;;
  esac
done
[ -n "$out" ] && [ ${#files[@]} -gt 0 ] || usage

if ! command -v gnuplot >/dev/null; then
  echo "error: gnuplot not found (scripts/setup.sh installs gnuplot-nox)" >&2
  exit 1
fi
for f in "${files[@]}"; do
  if [ ! -r "$f" ]; then
    echo "error: cannot read curve file '$f'" >&2
    exit 1
  fi
  if [ "$(head -n 1 "$f")" != "trials,seconds,best_ms,best_gflops" ]; then
    echo "error: '$f' is not a tuning curve (its header is not" \
      "trials,seconds,best_ms,best_gflops)" >&2
    exit 1
  fi
done

# gnuplot strings in single quotes: a quote inside is doubled.
quote() { printf "'%s'" "${1//\'/\'\'}"; }

# pngcairo draws anti-aliased lines; the plain png terminal is the fallback.
terminal=png
if gnuplot -e 'set terminal' 2>&1 | grep -q pngcairo; then terminal=pngcairo; fi

plot=""
for f in "${files[@]}"; do
  [ -z "$plot" ] || plot+=", "
  # Rows before the first successful measurement have empty best fields: gnuplot skips them.
  plot+="$(quote "$f") using 1:4 skip 1 with linespoints pt 7 ps 0.6 lw 2"
  plot+=" title $(quote "$(basename "$f")")"
done

gnuplot <<GNUPLOT
set terminal $terminal size 960,600
set output $(quote "$out")
set datafile separator ','
set title 'tuning curve: best GFLOP/s so far'
set xlabel 'trials'
set ylabel 'best GFLOP/s'
set grid
set key bottom right noenhanced
set yrange [0:*]
plot $plot
GNUPLOT
echo "wrote $out" >&2
