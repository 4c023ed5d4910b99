#pragma once
// Quantities with units, as scenario files write them ("300Mbps", "20ms", "4GiB").
// Parsing is strict: a decimal number (optional sign, fraction and exponent)
// immediately followed by a unit, nothing else; case matters (b = bits, B = bytes).
// Errors are lowband::InputError naming `place` (a JSON path or a flag) and listing
// the accepted units.
#include <string>

namespace lowband::units {

// Bytes per second. Bits (decimal SI): bps Kbps Mbps Gbps Tbps; bytes (decimal):
// Bps KBps MBps GBps TBps; bytes (binary): KiBps MiBps GiBps. Must be > 0.
double parse_bandwidth(const std::string& text, const std::string& place = "");
// Seconds: h min s ms us ns. Must be >= 0.
double parse_duration(const std::string& text, const std::string& place = "");
// Bytes: B KB MB GB (decimal) KiB MiB GiB TiB (binary). Must be >= 0.
double parse_bytes(const std::string& text, const std::string& place = "");

// For people: about 4 significant digits with a space, e.g. "300 Mbps" (bandwidth
// in bits), "1.2 ms", "4 GiB" (binary units). Not meant to be parsed back.
std::string format_bandwidth(double bytes_per_s);
std::string format_duration(double seconds);
std::string format_bytes(double bytes);

// For files: the shortest string in the largest fitting unit that parses back to
// exactly the same double, e.g. "300Mbps", "1ms", "80GiB" (used by to_json);
// durations in s ms us ns only (never h or min).
// Bandwidth in bit units, or with in_bytes in byte units ("2TBps", for memory).
std::string exact_bandwidth(double bytes_per_s, bool in_bytes = false);
std::string exact_duration(double seconds);
std::string exact_bytes(double bytes);

}  // namespace lowband::units
