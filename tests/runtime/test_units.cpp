// Units in scenario files: exact values of every accepted unit, strictness, the
// human formatters, and the exact formatters' round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/error.h"
#include "runtime/scenario/units.h"

namespace lowband::units {
namespace {

std::string error_of(double (*parse)(const std::string&, const std::string&), const std::string& text,
                     const std::string& place = "") {
  try {
    parse(text, place);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for \"" << text << "\"";
  return "";
}

TEST(Units, BandwidthUnitsAreExact) {
  // Bits are decimal SI and divided by 8; bytes decimal or binary.
  EXPECT_EQ(parse_bandwidth("300Mbps"), 300e6 / 8);
  EXPECT_EQ(parse_bandwidth("100Gbps"), 12.5e9);
  EXPECT_EQ(parse_bandwidth("1Tbps"), 1.25e11);
  EXPECT_EQ(parse_bandwidth("56Kbps"), 7000.0);
  EXPECT_EQ(parse_bandwidth("8bps"), 1.0);
  EXPECT_EQ(parse_bandwidth("2.5GBps"), 2.5e9);
  EXPECT_EQ(parse_bandwidth("2TBps"), 2e12);
  EXPECT_EQ(parse_bandwidth("3MBps"), 3e6);
  EXPECT_EQ(parse_bandwidth("4KBps"), 4e3);
  EXPECT_EQ(parse_bandwidth("5Bps"), 5.0);
  EXPECT_EQ(parse_bandwidth("1KiBps"), 1024.0);
  EXPECT_EQ(parse_bandwidth("1MiBps"), 1048576.0);
  EXPECT_EQ(parse_bandwidth("1GiBps"), 1073741824.0);
  EXPECT_EQ(parse_bandwidth("1.5e3Kbps"), 1500 * 125.0);
  EXPECT_EQ(parse_bandwidth("+.5Gbps"), 0.5 * 1.25e8);
}

TEST(Units, DurationAndByteUnitsAreExact) {
  EXPECT_EQ(parse_duration("20ms"), 20 / 1e3);  // correctly rounded quotient
  EXPECT_EQ(parse_duration("500us"), 500 / 1e6);
  EXPECT_EQ(parse_duration("7ns"), 7 / 1e9);
  EXPECT_EQ(parse_duration("1.5s"), 1.5);
  EXPECT_EQ(parse_duration("0s"), 0.0);
  EXPECT_EQ(parse_bytes("4GiB"), 4.0 * 1073741824.0);
  EXPECT_EQ(parse_bytes("80GB"), 80e9);
  EXPECT_EQ(parse_bytes("1.5KiB"), 1536.0);
  EXPECT_EQ(parse_bytes("2TiB"), 2.0 * 1099511627776.0);
  EXPECT_EQ(parse_bytes("3MB"), 3e6);
  EXPECT_EQ(parse_bytes("5MiB"), 5.0 * 1048576.0);
  EXPECT_EQ(parse_bytes("6KB"), 6e3);
  EXPECT_EQ(parse_bytes("12B"), 12.0);
}

TEST(Units, CaseMattersBitsVersusBytes) {
  // "Mbps" is megabits, "MBps" megabytes: a factor of 8 apart.
  EXPECT_EQ(parse_bandwidth("1MBps"), 8 * parse_bandwidth("1Mbps"));
  const std::string e = error_of(parse_bandwidth, "300mbps", "network.bandwidth");
  EXPECT_NE(e.find("network.bandwidth: "), std::string::npos) << e;
  EXPECT_NE(e.find("case-sensitive"), std::string::npos) << e;
  EXPECT_NE(e.find("\"Mbps\""), std::string::npos) << e;
  EXPECT_NE(error_of(parse_duration, "1MS").find("did you mean \"ms\""), std::string::npos);
  EXPECT_NE(error_of(parse_bytes, "4Gib").find("did you mean \"GiB\""), std::string::npos);
}

TEST(Units, MalformedTextIsRejectedWithTheAcceptedUnits) {
  const char* bits = "bps Kbps Mbps Gbps Tbps";
  for (const char* text : {"300 Mbps", "300", "Mbps", "", "300Mbps ", " 300Mbps", "3,5Mbps", "1e5", "5eMbps",
                           "0x10Mbps", "infGbps", "300Mbit"}) {
    const std::string e = error_of(parse_bandwidth, text, "--bandwidth");
    EXPECT_EQ(e.rfind("--bandwidth: ", 0), 0u) << e;
    EXPECT_NE(e.find(bits), std::string::npos) << e;
    EXPECT_NE(e.find("GiBps"), std::string::npos) << e;
  }
  EXPECT_NE(error_of(parse_duration, "1m").find("s ms us ns"), std::string::npos);
  EXPECT_NE(error_of(parse_duration, "20 ms").find("s ms us ns"), std::string::npos);
  EXPECT_NE(error_of(parse_bytes, "4G").find("B KB MB GB"), std::string::npos);
  EXPECT_NE(error_of(parse_bandwidth, "1e999Gbps").find("out of range"), std::string::npos);
}

TEST(Units, ZeroAndNegativeBandwidthAreErrors) {
  for (const char* text : {"0Mbps", "0bps", "-1Gbps", "-0.5MBps", "0e5Tbps"}) {
    const std::string e = error_of(parse_bandwidth, text, "network.bandwidth");
    EXPECT_NE(e.find("network.bandwidth: bandwidth must be positive"), std::string::npos) << e;
  }
  EXPECT_NE(error_of(parse_duration, "-1ms").find("must not be negative"), std::string::npos);
  EXPECT_NE(error_of(parse_bytes, "-1GiB").find("must not be negative"), std::string::npos);
}

TEST(Units, HumanFormatsPickTheLargestUnitAtLeastOne) {
  EXPECT_EQ(format_bandwidth(300e6 / 8), "300 Mbps");
  EXPECT_EQ(format_bandwidth(12.5e9), "100 Gbps");
  EXPECT_EQ(format_bandwidth(2.5e9 / 8), "2.5 Gbps");
  EXPECT_EQ(format_bandwidth(1.0), "8 bps");
  EXPECT_EQ(format_duration(0.0012), "1.2 ms");
  EXPECT_EQ(format_duration(2.5), "2.5 s");
  EXPECT_EQ(format_duration(5e-6), "5 us");
  EXPECT_EQ(format_duration(3e-9), "3 ns");
  EXPECT_EQ(format_duration(0), "0 ns");
  EXPECT_EQ(format_duration(1.23456), "1.235 s");
  EXPECT_EQ(format_duration(36000), "36000 s");
  EXPECT_EQ(format_bytes(4.0 * 1073741824.0), "4 GiB");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
}

TEST(Units, ExactFormatsAreReadableWhereTheyCanBe) {
  EXPECT_EQ(exact_bandwidth(300e6 / 8), "300Mbps");
  EXPECT_EQ(exact_bandwidth(12.5e9), "100Gbps");
  EXPECT_EQ(exact_bandwidth(2.5e9 / 8), "2.5Gbps");
  EXPECT_EQ(exact_bandwidth(2e12, /*in_bytes=*/true), "2TBps");
  EXPECT_EQ(exact_duration(0.02), "20ms");
  EXPECT_EQ(exact_duration(5e-6), "5us");
  EXPECT_EQ(exact_duration(1), "1s");
  EXPECT_EQ(exact_duration(0), "0s");
  EXPECT_EQ(exact_bytes(80.0 * 1073741824.0), "80GiB");
  EXPECT_EQ(exact_bytes(80e9), "80GB");
}

TEST(Units, ExactFormatsRoundTripEveryDouble) {
  // Log-uniform values over 24 decades: parse(exact(x)) must give x bit for bit.
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> exponent(-12, 12);
  for (int i = 0; i < 20000; ++i) {
    const double x = std::pow(10.0, exponent(rng));
    ASSERT_EQ(parse_bandwidth(exact_bandwidth(x)), x) << exact_bandwidth(x);
    ASSERT_EQ(parse_bandwidth(exact_bandwidth(x, true)), x) << exact_bandwidth(x, true);
    ASSERT_EQ(parse_duration(exact_duration(x)), x) << exact_duration(x);
    ASSERT_EQ(parse_bytes(exact_bytes(x)), x) << exact_bytes(x);
  }
}

}  // namespace
}  // namespace lowband::units
