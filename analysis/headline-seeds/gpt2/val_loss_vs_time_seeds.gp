# lowband plot: val_loss_vs_time_seeds. Data: val_loss_vs_time_seeds.dat (one block per series).
# Redraw: cd into this directory, then gnuplot val_loss_vs_time_seeds.gp
if (!exists("png_out")) png_out = "val_loss_vs_time_seeds.png"
set title "Validation loss vs simulated wall-clock time: mean over seeds, 95 % Student-t band"
set xlabel "simulated wall-clock time (min)"
set ylabel "validation loss (nats/token)"
set grid
set key below box opaque
set bmargin 10
set xrange [0:*]
set terminal pngcairo noenhanced size 1280,720 font "sans,12"
set output png_out
plot "val_loss_vs_time_seeds.dat" index 0 using 1:3:4 with filledcurves fillstyle transparent solid 0.2 noborder lc rgb "#0072B2" notitle, \
     "val_loss_vs_time_seeds.dat" index 1 using 1:3:4 with filledcurves fillstyle transparent solid 0.2 noborder lc rgb "#D55E00" notitle, \
     "val_loss_vs_time_seeds.dat" index 2 using 1:3:4 with filledcurves fillstyle transparent solid 0.2 noborder lc rgb "#009E73" notitle, \
     "val_loss_vs_time_seeds.dat" index 3 using 1:3:4 with filledcurves fillstyle transparent solid 0.2 noborder lc rgb "#CC79A7" notitle, \
     "val_loss_vs_time_seeds.dat" index 4 using 1:3:4 with filledcurves fillstyle transparent solid 0.2 noborder lc rgb "#E69F00" notitle, \
     "val_loss_vs_time_seeds.dat" index 5 using 1:3:4 with filledcurves fillstyle transparent solid 0.2 noborder lc rgb "#56B4E9" notitle, \
     "val_loss_vs_time_seeds.dat" index 0 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#0072B2" dt 1 title "quickstart-decentralized-300mbps (network.bandwidth=100Gbps, network.latency=5us) (5 seeds)", \
     "val_loss_vs_time_seeds.dat" index 1 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#D55E00" dt 1 title "quickstart-decentralized-300mbps (network.bandwidth=100Gbps, network.latency=2ms) (5 seeds)", \
     "val_loss_vs_time_seeds.dat" index 2 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#009E73" dt 1 title "quickstart-decentralized-300mbps (network.bandwidth=300Mbps, network.latency=5us) (5 seeds)", \
     "val_loss_vs_time_seeds.dat" index 3 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#CC79A7" dt 1 title "quickstart-decentralized-300mbps (network.bandwidth=300Mbps, network.latency=2ms) (5 seeds)", \
     "val_loss_vs_time_seeds.dat" index 4 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#E69F00" dt 1 title "quickstart-mos-300mbps (5 seeds)", \
     "val_loss_vs_time_seeds.dat" index 5 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#56B4E9" dt 1 title "quickstart-drop-300mbps (5 seeds)"
set output
