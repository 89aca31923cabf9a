set terminal pngcairo size 1100,440 font "Sans,10"
set output "../ro-share-h200-2026-12-01b.png" # run in this folder: gnuplot ro19.gp
set title "Share of the old default's measured gain made by the generated rules alone (ro), 19 networks, H200, float32 (loan-0552)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set ylabel "% of the old default's gain"
set yrange [0:135]
set xtics nomirror rotate by -40
set grid ytics
set key outside right top
set arrow from graph 0, first 80 to graph 1, first 80 nohead dt 2 lc rgb "red"
set label "issue 43's line (80%)" at graph 0.01, first 84 tc rgb "red"
plot "ro19.dat" every ::1 using 2:xtic(1) title "b1" lc rgb "#1f77b4", \
     "" every ::1 using 3 title "b16" lc rgb "#ff7f0e"
