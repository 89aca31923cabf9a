# scripts/plot-experiment.gp: the figures of `superopt experiment search`
# from a results.csv (the command writes and runs the same script, with
# ALPHAS, BUDGETS, MODEL, DEVICE and ORIGINAL set, as DIR/plot.gp).
# Reproduce by hand:
#   cd DIR && gnuplot -e "ALPHAS='1 1.05 1.2'; BUDGETS='100 1000'; \
#       MODEL='resnet50'; DEVICE='h100'" /path/to/scripts/plot-experiment.gp
# results.csv columns: model,depth,alpha,budget,cost,expansions,time_s,applied,rules,
# original_cost,device. ORIGINAL (the original graph's cost, the baseline)
# defaults to the original_cost column.
if (!exists("ALPHAS")) ALPHAS = '1 1.05 1.2'
if (!exists("BUDGETS")) BUDGETS = '100 1000'
if (!exists("MODEL")) MODEL = 'model'
if (!exists("DEVICE")) DEVICE = 'device'
if (!exists("ORIGINAL")) {
  set datafile separator ','
  stats 'results.csv' using 10 nooutput
  ORIGINAL = STATS_max
}
set datafile separator ','
set terminal pngcairo size 1000,600
set key outside right box title 'alpha, budget'
set grid
set termoption noenhanced
NA = words(ALPHAS); NB = words(BUDGETS)
# series i drawn DODGE depths aside, so that equal series stay visible
DODGE = 0.04; X(i, x) = x + (i - (NA * NB - 1) / 2.0) * DODGE
A(i) = word(ALPHAS, i / NB + 1); B(i) = word(BUDGETS, i % NB + 1)
set output 'cost_vs_depth.png'
set title sprintf('%s on %s: search cost vs max depth', MODEL, DEVICE)
set xlabel 'max depth (rewrites; series drawn slightly apart)'
set ylabel 'cost (us; measured, else the fitted model)'
set offsets graph 0.02, graph 0.02, graph 0.05, graph 0.05
plot for [i=0:NA*NB-1] 'results.csv' using (($3==A(i)+0 && $4==B(i)+0) ? X(i, $2) : 1/0):5 with linespoints dt 1 + i % 5 pt 1 + i % 13 ps 1.5 lw 2 title sprintf('alpha %s, budget %s', A(i), B(i)), ORIGINAL with lines dt 2 lw 2 lc rgb 'black' title sprintf('original graph (%.1f us)', ORIGINAL)
set output 'cost_vs_time.png'
set title sprintf('%s on %s: search cost vs search time', MODEL, DEVICE)
set xlabel 'search time (s)'
plot for [i=0:NA*NB-1] 'results.csv' using (($3==A(i)+0 && $4==B(i)+0) ? $7 : 1/0):5 with points pt 1 + i % 13 ps 1.5 title sprintf('alpha %s, budget %s', A(i), B(i)), ORIGINAL with lines dt 2 lw 2 lc rgb 'black' title sprintf('original graph (%.1f us)', ORIGINAL)
# trajectory.csv (run,model,depth,alpha,budget,time_s,cost,event): each
# grid point's whole-graph cost as its search went (after each stage, and
# as each region's search ended), one line per run; RUNLABELS names the
# runs in order (default run1 run2 ...)
if (!exists("RUNLABELS")) {
  stats 'trajectory.csv' using 1 nooutput
  RUNLABELS = ''
  do for [r=1:int(STATS_max)] { RUNLABELS = RUNLABELS . sprintf(' run%d', r) }
}
NR = words(RUNLABELS)
set output 'trajectory.png'
set title sprintf('%s on %s: cost during each search', MODEL, DEVICE)
set xlabel 'time into the search (s, plus 1 ms; log scale)'
set key outside right box title 'depth/alpha/budget'
set logscale x
set offsets 0, 0, graph 0.05, graph 0.05
plot for [r=1:NR] 'trajectory.csv' using (($1==r) ? $6 + 0.001 : 1/0):7 with steps lw 2 dt 1 + (r - 1) % 5 title word(RUNLABELS, r), ORIGINAL with lines dt 2 lw 2 lc rgb 'black' title sprintf('original graph (%.1f us)', ORIGINAL)
