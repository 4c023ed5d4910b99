#include "runtime/report/plot_gnuplot.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/atomic_file.h"

namespace lowband::report {
namespace fs = std::filesystem;
namespace {

// Colour-blind-safe qualitative palette (Okabe–Ito, then Tableau); dashes after it repeats.
const char* const kPalette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00",
                                "#56B4E9", "#000000", "#F0E442", "#8C564B", "#7F7F7F"};
constexpr int kPaletteSize = int(sizeof kPalette / sizeof kPalette[0]);

// A gnuplot double-quoted string.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') out += "\\n";
    else out += c;
  }
  return out + "\"";
}

std::string number(double x) {
  char text[40];
  std::snprintf(text, sizeof text, "%.10g", x);
  return text;
}

std::string terminal(const std::string& format) {
  // noenhanced: run names with "_" stay as written instead of becoming subscripts.
  if (format == "png") return "set terminal pngcairo noenhanced size 1280,720 font \"sans,12\"";
  return "set terminal svg noenhanced size 1280,720 dynamic font \"sans,12\" background \"white\"";
}

// The key sits below the plot (long run names beside it would take half its
// width); gnuplot does not leave room for the x label under it, so the bottom
// margin is sized here: 3 lines for tics and label, plus the key's rows as
// gnuplot lays them out in the 1280-pixel, 12-point terminal, erring towards
// fewer columns (an entry is its longest title plus its sample, ~11 px a
// character: too much room rather than a key over the plot).
int key_margin_lines(const Figure& f) {
  size_t longest = 0;
  for (const auto& s : f.series) longest = std::max(longest, s.title.size());
  longest = std::max(longest, f.bands_title.size());
  const size_t entries = f.series.size() + (f.bands_title.empty() ? 0 : 1);
  const size_t entry_px = (longest + 10) * 11;
  const size_t columns = std::max<size_t>(1, 1180 / entry_px);
  const size_t rows = (entries + columns - 1) / columns;
  return int(3 + rows + 1);
}

std::string plot_command(const Figure& f) {
  std::string cmd = "plot ";
  size_t items = 0;
  for (size_t i = 0; i < f.series.size(); ++i) {  // bands first: behind every line
    if (f.series[i].y_band.empty() || f.series[i].style == Series::Style::error_lines) continue;
    cmd += std::string(items++ ? ", \\\n     " : "") + quoted(f.name + ".dat") + " index " + std::to_string(i) +
           " using 1:3:4 with filledcurves fillstyle transparent solid 0.2 noborder lc rgb " +
           quoted(kPalette[f.series[i].color % kPaletteSize]) + " notitle";
  }
  for (size_t i = 0; i < f.series.size(); ++i) {
    const Series& s = f.series[i];
    const bool points = s.style == Series::Style::linespoints;
    const bool errors = s.style == Series::Style::error_lines && !s.y_band.empty();
    cmd += std::string(items++ ? ", \\\n     " : "") + quoted(f.name + ".dat") + " index " + std::to_string(i) +
           (errors ? " using 1:2:3:4 with yerrorlines pt 7 ps 1.1 lw 2"
                   : std::string(" using 1:2 with ") + (points ? "linespoints pt 7 ps 1.1 lw 2" : "lines lw 1.5")) +
           " lc rgb " +
           quoted(kPalette[s.color % kPaletteSize]) + " dt " + std::to_string(1 + s.color / kPaletteSize % 5) +
           " title " + quoted(s.title);
  }
  if (!f.bands_title.empty()) {
    // The key's sample as the bands look: one run's colour, or grey where the runs' colours differ.
    const bool one_colour = std::all_of(f.bands.begin(), f.bands.end(),
                                        [&](const Band& b) { return b.color == f.bands.front().color; });
    const std::string colour = one_colour && !f.bands.empty() ? kPalette[f.bands.front().color % kPaletteSize] : "#7F7F7F";
    cmd += ", \\\n     keyentry with boxes fillstyle transparent solid 0.15 noborder lc rgb " + quoted(colour) +
           " title " + quoted(f.bands_title);
  }
  return cmd;
}

std::string read_tail(const std::string& path, size_t max_chars) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  return s.size() > max_chars ? "..." + s.substr(s.size() - max_chars) : s;
}

// Runs `program args...` in `dir` with stdout and stderr to `log_path`; returns its
// exit status, or throws GnuplotError when it cannot be started.
int run_in_dir(const std::string& program, const std::vector<std::string>& args, const std::string& dir,
               const std::string& log_path) {
  // Everything the child needs is made before the fork: between fork and exec it
  // only makes system calls (no allocation: another thread may have held the
  // allocator's lock when this one forked).
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int status_pipe[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) throw GnuplotError(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) throw GnuplotError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(status_pipe[0]);
    const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log >= 0) {
      ::dup2(log, 1);
      ::dup2(log, 2);
    }
    if (::chdir(dir.c_str()) == 0) ::execvp(program.c_str(), argv.data());
    const int err = errno;  // only reached when chdir or exec failed: tell the parent why
    (void)!::write(status_pipe[1], &err, sizeof err);
    ::_exit(127);
  }
  ::close(status_pipe[1]);
  int exec_errno = 0;
  const ssize_t got = ::read(status_pipe[0], &exec_errno, sizeof exec_errno);
  ::close(status_pipe[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (got == ssize_t(sizeof exec_errno)) {
    if (exec_errno == ENOENT)
      throw GnuplotError(program + " not found: install the Debian package gnuplot-nox (scripts/install-deps.sh "
                                   "does), or set LOWBAND_GNUPLOT to a gnuplot program");
    throw GnuplotError("cannot run " + program + ": " + std::strerror(exec_errno));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

bool is_image_format(const std::string& format) { return format == "png" || format == "svg"; }

std::string gnuplot_program() {
  const char* env = std::getenv("LOWBAND_GNUPLOT");
  return env && *env ? env : "gnuplot";
}

void require_gnuplot() {
  const int status = run_in_dir(gnuplot_program(), {"--version"}, ".", "/dev/null");
  if (status != 0)
    throw GnuplotError(gnuplot_program() + " --version failed (exit status " + std::to_string(status) +
                       "): install the Debian package gnuplot-nox, or set LOWBAND_GNUPLOT to a gnuplot program");
}

std::string gnuplot_data(const Figure& f) {
  std::string out = "# lowband plot: " + f.title + "\n# x: " + f.x_label + "\n# y: " + f.y_label + "\n";
  for (const std::string& note : f.notes) out += "# note: " + note + "\n";
  if (std::any_of(f.series.begin(), f.series.end(), [](const Series& s) { return !s.y_band.empty(); }))
    out += "# columns: x y, then the band's low and high y\n";
  for (size_t i = 0; i < f.series.size(); ++i) {
    // Two blank lines separate gnuplot data blocks ("index i").
    out += std::string(i ? "\n\n" : "") + "# series " + std::to_string(i) + ": " + f.series[i].title + "\n";
    const Series& s = f.series[i];
    for (size_t k = 0; k < s.points.size(); ++k) {
      out += number(s.points[k].first) + " " + number(s.points[k].second);
      if (k < s.y_band.size()) out += " " + number(s.y_band[k].first) + " " + number(s.y_band[k].second);
      out += "\n";
    }
  }
  // The bands are drawn by the script (set object rect); listed here for reading.
  for (const Band& b : f.bands)
    out += "# shaded: " + number(b.x_from) + " to " + number(b.x_to) + " (" + kPalette[b.color % kPaletteSize] +
           ", " + f.bands_title + ")\n";
  return out;
}

std::string gnuplot_script(const Figure& f, const std::vector<std::string>& formats) {
  std::ostringstream gp;
  gp << "# lowband plot: " << f.name << ". Data: " << f.name << ".dat (one block per series).\n"
     << "# Redraw: cd into this directory, then gnuplot " << f.name << ".gp\n";
  for (const std::string& format : formats)
    gp << "if (!exists(\"" << format << "_out\")) " << format << "_out = " << quoted(f.name + "." + format) << "\n";
  gp << "set title " << quoted(f.title) << "\n"
     << "set xlabel " << quoted(f.x_label) << "\n"
     << "set ylabel " << quoted(f.y_label) << "\n"
     << "set grid\n"
     << "set key below box opaque\nset bmargin " << key_margin_lines(f) << "\n";
  if (f.log_x) gp << "set logscale x 10\nset mxtics 10\n";
  if (f.log_y) gp << "set logscale y 10\n";
  if (f.x_from_zero) gp << "set xrange [0:*]\n";
  if (f.y_is_fraction) gp << "set yrange [0:1.05]\n";
  if (f.x_is_bandwidth) gp << "set format x \"%.0s %cbps\"\nset offsets graph 0.05, graph 0.05, 0, 0\n";
  else if (f.log_x) gp << "set format x \"%g\"\n";
  // Outages: light bands behind the series, in the run's colour, the full height.
  for (size_t i = 0; i < f.bands.size(); ++i) {
    const Band& b = f.bands[i];
    gp << "set object " << i + 1 << " rect from first " << number(b.x_from) << ", graph 0 to first "
       << number(b.x_to) << ", graph 1 fillcolor rgb " << quoted(kPalette[b.color % kPaletteSize])
       << " fillstyle transparent solid 0.15 noborder behind\n";
  }
  for (size_t i = 0; i < formats.size(); ++i) {
    gp << terminal(formats[i]) << "\nset output " << formats[i] << "_out\n"
       << (i == 0 ? plot_command(f) : "replot") << "\n";
  }
  gp << "set output\n";
  return gp.str();
}

std::vector<std::string> render_figure(const Figure& f, const std::string& out_dir,
                                       const std::vector<std::string>& formats) {
  if (f.series.empty()) return {};
  // Everything is staged in a directory of its own beside the outputs and moved
  // into place only when gnuplot has drawn every image: a failure leaves nothing.
  const fs::path stage = fs::path(out_dir) / ("." + f.name + ".tmp." + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove_all(stage, ec);
  if (!fs::create_directory(stage, ec))
    throw InputError(out_dir, "cannot write: " + (ec ? ec.message() : std::string("cannot make a directory")));
  const auto remove_stage = [&] {
    std::error_code ignored;
    fs::remove_all(stage, ignored);
  };
  const std::string base = (stage / f.name).string(), log_path = (stage / "gnuplot-log").string();
  int status = 0;
  try {
    write_file_atomically(base + ".dat", gnuplot_data(f));
    write_file_atomically(base + ".gp", gnuplot_script(f, formats));
    std::string assignments;
    for (const std::string& format : formats) assignments += format + "_out = " + quoted(f.name + "." + format) + "; ";
    status = run_in_dir(gnuplot_program(), {"-e", assignments, f.name + ".gp"}, stage.string(), log_path);
  } catch (...) {
    remove_stage();
    throw;
  }
  for (const std::string& format : formats) {
    const std::string image = base + "." + format;
    if (status != 0 || !fs::exists(image) || fs::file_size(image, ec) == 0) {
      const std::string log = read_tail(log_path, 2000);
      remove_stage();
      throw GnuplotError(gnuplot_program() + " failed on " + out_dir + "/" + f.name + ".gp (exit status " +
                         std::to_string(status) + ", no " + format + " image): " + log);
    }
  }
  std::vector<std::string> written;
  std::vector<std::string> names = {f.name + ".dat", f.name + ".gp"};
  for (const std::string& format : formats) names.push_back(f.name + "." + format);
  for (const std::string& name : names) {
    const fs::path to = fs::path(out_dir) / name;
    fs::rename(stage / name, to, ec);
    if (ec) {
      remove_stage();
      throw InputError(to.string(), "cannot write: " + ec.message());
    }
    written.push_back(to.string());
  }
  remove_stage();
  return written;
}

}  // namespace lowband::report
