set terminal pngcairo size 1000,420 font "Sans,10"
set output "../ro-share-h200-2026-12-01.png" # run in this folder: gnuplot ro.gp
set title "Share of the old default's measured gain made by the generated rules alone (ro), H200, float32"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set ylabel "% of the old default's gain"
set yrange [0:105]
set xtics nomirror
set grid ytics
set key outside right top
set arrow from graph 0, first 80 to graph 1, first 80 nohead dt 2 lc rgb "red"
set label "issue 43's line (80%)" at graph 0.62, first 96 tc rgb "red"
plot "ro.dat" every ::1 using 2:xtic(1) title "b1 before (loan-0015)" lc rgb "#bbbbbb", \
     "" every ::1 using 3 title "b1 twelfth tier (loan-0317)" lc rgb "#1f77b4", \
     "" every ::1 using 4 title "b16 before" lc rgb "#dddddd", \
     "" every ::1 using 5 title "b16 twelfth tier" lc rgb "#ff7f0e"
