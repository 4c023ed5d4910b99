# lowband plot: loss_vs_bytes. Data: loss_vs_bytes.dat (one block per series).
# Redraw: cd into this directory, then gnuplot loss_vs_bytes.gp
if (!exists("png_out")) png_out = "loss_vs_bytes.png"
set title "Loss vs bytes sent (all ranks, cumulative)"
set xlabel "bytes sent by all ranks (GB)"
set ylabel "loss (nats/token)"
set grid
set key below box opaque
set bmargin 34
set xrange [0:*]
set terminal pngcairo noenhanced size 1280,720 font "sans,12"
set output png_out
plot "loss_vs_bytes.dat" index 0 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#0072B2" dt 1 title "quickstart-decentralized-300mbps-bw100Gbps-lat5us-seed1 validation", \
     "loss_vs_bytes.dat" index 1 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#D55E00" dt 1 title "quickstart-decentralized-300mbps-bw100Gbps-lat5us-seed2 validation", \
     "loss_vs_bytes.dat" index 2 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#009E73" dt 1 title "quickstart-decentralized-300mbps-bw100Gbps-lat5us-seed3 validation", \
     "loss_vs_bytes.dat" index 3 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#CC79A7" dt 1 title "quickstart-decentralized-300mbps-bw100Gbps-lat5us-seed4 validation", \
     "loss_vs_bytes.dat" index 4 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#E69F00" dt 1 title "quickstart-decentralized-300mbps-bw100Gbps-lat5us-seed5 validation", \
     "loss_vs_bytes.dat" index 5 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#56B4E9" dt 1 title "quickstart-decentralized-300mbps-bw100Gbps-lat2ms-seed1 validation", \
     "loss_vs_bytes.dat" index 6 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#000000" dt 1 title "quickstart-decentralized-300mbps-bw100Gbps-lat2ms-seed2 validation", \
     "loss_vs_bytes.dat" index 7 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#F0E442" dt 1 title "quickstart-decentralized-300mbps-bw100Gbps-lat2ms-seed3 validation", \
     "loss_vs_bytes.dat" index 8 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#8C564B" dt 1 title "quickstart-decentralized-300mbps-bw100Gbps-lat2ms-seed4 validation", \
     "loss_vs_bytes.dat" index 9 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#7F7F7F" dt 1 title "quickstart-decentralized-300mbps-bw100Gbps-lat2ms-seed5 validation", \
     "loss_vs_bytes.dat" index 10 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#0072B2" dt 2 title "quickstart-decentralized-300mbps-bw300Mbps-lat5us-seed1 validation", \
     "loss_vs_bytes.dat" index 11 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#D55E00" dt 2 title "quickstart-decentralized-300mbps-bw300Mbps-lat5us-seed2 validation", \
     "loss_vs_bytes.dat" index 12 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#009E73" dt 2 title "quickstart-decentralized-300mbps-bw300Mbps-lat5us-seed3 validation", \
     "loss_vs_bytes.dat" index 13 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#CC79A7" dt 2 title "quickstart-decentralized-300mbps-bw300Mbps-lat5us-seed4 validation", \
     "loss_vs_bytes.dat" index 14 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#E69F00" dt 2 title "quickstart-decentralized-300mbps-bw300Mbps-lat5us-seed5 validation", \
     "loss_vs_bytes.dat" index 15 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#56B4E9" dt 2 title "quickstart-decentralized-300mbps-bw300Mbps-lat2ms-seed1 validation", \
     "loss_vs_bytes.dat" index 16 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#000000" dt 2 title "quickstart-decentralized-300mbps-bw300Mbps-lat2ms-seed2 validation", \
     "loss_vs_bytes.dat" index 17 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#F0E442" dt 2 title "quickstart-decentralized-300mbps-bw300Mbps-lat2ms-seed3 validation", \
     "loss_vs_bytes.dat" index 18 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#8C564B" dt 2 title "quickstart-decentralized-300mbps-bw300Mbps-lat2ms-seed4 validation", \
     "loss_vs_bytes.dat" index 19 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#7F7F7F" dt 2 title "quickstart-decentralized-300mbps-bw300Mbps-lat2ms-seed5 validation", \
     "loss_vs_bytes.dat" index 20 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#0072B2" dt 3 title "quickstart-mos-300mbps-seed1 validation", \
     "loss_vs_bytes.dat" index 21 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#D55E00" dt 3 title "quickstart-mos-300mbps-seed2 validation", \
     "loss_vs_bytes.dat" index 22 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#009E73" dt 3 title "quickstart-mos-300mbps-seed3 validation", \
     "loss_vs_bytes.dat" index 23 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#CC79A7" dt 3 title "quickstart-mos-300mbps-seed4 validation", \
     "loss_vs_bytes.dat" index 24 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#E69F00" dt 3 title "quickstart-mos-300mbps-seed5 validation", \
     "loss_vs_bytes.dat" index 25 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#56B4E9" dt 3 title "quickstart-drop-300mbps-seed1 validation", \
     "loss_vs_bytes.dat" index 26 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#000000" dt 3 title "quickstart-drop-300mbps-seed2 validation", \
     "loss_vs_bytes.dat" index 27 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#F0E442" dt 3 title "quickstart-drop-300mbps-seed3 validation", \
     "loss_vs_bytes.dat" index 28 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#8C564B" dt 3 title "quickstart-drop-300mbps-seed4 validation", \
     "loss_vs_bytes.dat" index 29 using 1:2 with linespoints pt 7 ps 1.1 lw 2 lc rgb "#7F7F7F" dt 3 title "quickstart-drop-300mbps-seed5 validation"
set output
