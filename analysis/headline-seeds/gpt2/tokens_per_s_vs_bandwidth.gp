# lowband plot: tokens_per_s_vs_bandwidth. Data: tokens_per_s_vs_bandwidth.dat (one block per series).
# Redraw: cd into this directory, then gnuplot tokens_per_s_vs_bandwidth.gp
if (!exists("png_out")) png_out = "tokens_per_s_vs_bandwidth.png"
set title "Simulated training throughput vs bandwidth"
set xlabel "bandwidth (bits/s, log scale)"
set ylabel "simulated tokens/s"
set grid
set key below box opaque
set bmargin 6
set logscale x 10
set mxtics 10
set format x "%.0s %cbps"
set offsets graph 0.05, graph 0.05, 0, 0
set terminal pngcairo noenhanced size 1280,720 font "sans,12"
set output png_out
plot "tokens_per_s_vs_bandwidth.dat" index 0 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#0072B2" dt 1 title "network.latency=5us", \
     "tokens_per_s_vs_bandwidth.dat" index 1 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#D55E00" dt 1 title "network.latency=2ms", \
     "tokens_per_s_vs_bandwidth.dat" index 2 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#009E73" dt 1 title "mos K 0.98 / V 0.95", \
     "tokens_per_s_vs_bandwidth.dat" index 3 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#CC79A7" dt 1 title "drop"
set output
