# scripts/plot-experiment.gp: the figures of `superopt experiment search`
# from a results.csv (the command writes and runs a copy of this script as
# DIR/plot.gp). Reproduce by hand:
#   cd DIR && gnuplot -e "ALPHAS='1 1.05 1.2'; BUDGETS='100 1000'" \
#       /path/to/scripts/plot-experiment.gp
# CSV columns: model,depth,alpha,budget,cost,expansions,time_s,applied,rules
if (!exists("ALPHAS")) ALPHAS = '1 1.05 1.2'
if (!exists("BUDGETS")) BUDGETS = '100 1000'
set datafile separator ','
set terminal pngcairo size 900,600
set key outside right
set grid
set output 'cost_vs_depth.png'
set title 'Search: cost vs max depth'
set xlabel 'max depth (rewrites)'
set ylabel 'estimated cost (us)'
plot for [a in ALPHAS] for [b in BUDGETS] 'results.csv' using \
  (($3==a+0 && $4==b+0) ? $2 : 1/0):5 with linespoints \
  title sprintf('alpha %s, budget %s', a, b)
set output 'cost_vs_time.png'
set title 'Search: cost vs search time'
set xlabel 'search time (s)'
plot 'results.csv' using 7:5 with points pt 7 title 'runs'
