#pragma once
// Drawing a Figure (figures.h) with gnuplot (Debian package gnuplot-nox): for figure
// NAME, OUT_DIR/NAME.dat holds the data (one block per series, its title in a
// comment) and OUT_DIR/NAME.gp the script that draws NAME.png (pngcairo) and
// NAME.svg from it — `cd OUT_DIR && gnuplot NAME.gp` redraws them. gnuplot runs once
// per figure in a staging directory beside them (.NAME.tmp.PID) whose files are
// renamed into place only when it drew every image: an image is never
// half-written, and a failure leaves nothing behind.
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/report/figures.h"

namespace lowband::report {

// gnuplot is missing or failed; the message says which package to install or what
// gnuplot printed.
struct GnuplotError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Accepted image formats: "png", "svg".
bool is_image_format(const std::string& format);

std::string gnuplot_data(const Figure& figure);
std::string gnuplot_script(const Figure& figure, const std::vector<std::string>& formats);

// The gnuplot program: $LOWBAND_GNUPLOT when set, else "gnuplot" on PATH.
std::string gnuplot_program();

// Runs `gnuplot --version`: GnuplotError when it cannot, before anything is written.
void require_gnuplot();

// Writes NAME.dat and NAME.gp into out_dir (an existing directory) and runs gnuplot;
// returns the paths written. A figure without series writes nothing.
std::vector<std::string> render_figure(const Figure& figure, const std::string& out_dir,
                                       const std::vector<std::string>& formats);

}  // namespace lowband::report
