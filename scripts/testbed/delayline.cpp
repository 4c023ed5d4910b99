// A user-space link emulator on NFQUEUE: what `tc netem delay D rate R limit L` does,
// for kernels without sch_netem. One process per network namespace serves two
// queues, the namespace's uplink (queue --up) and downlink (queue --down); each is a
// FIFO whose packet i leaves at
//   depart_i = max(arrival_i + D, depart_{i-1}) + frame_bytes_i * 8 / R
// and is dropped on arrival when L packets are already waiting (netem's tail drop),
// or at random with probability P (--loss P, netem's `loss P`: each packet on its own;
// testbed.sh keeps packets to one segment each when P > 0, so that is per segment).
// frame_bytes is what the wire carries: the IP packet plus 14 bytes of Ethernet
// header per segment. GSO packets arrive unsegmented (NFQA_CFG_F_GSO) to halve the
// per-packet CPU; their frames are counted as ceil(payload / mss) segments.
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>  // NF_ACCEPT, NF_DROP
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <random>
#include <string>

namespace {

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

struct Pending {
  uint32_t id;
  int64_t depart_ns;
};

struct Direction {
  nfq_q_handle* queue = nullptr;
  double delay_ns = 0;
  double ns_per_byte = 0;   // 8e9 / R
  size_t limit = 1000;      // packets waiting, netem's default
  int64_t last_depart_ns = 0;
  std::deque<Pending> fifo;
  uint64_t packets = 0, drops = 0, frame_bytes = 0;
};

Direction dirs[2];
double loss = 0;          // --loss: each packet's chance to be dropped on arrival
std::mt19937_64 rng{1};   // --seed
volatile sig_atomic_t stop = 0;
const int kMss = 1448;  // 1500 MTU - 20 IP - 32 TCP with timestamps

// Bytes on the wire for one (possibly GSO) IP packet of `len` bytes.
uint64_t wire_bytes(const unsigned char* data, int len) {
  if (len < 20) return static_cast<uint64_t>(len) + 14;
  const auto* ip = reinterpret_cast<const iphdr*>(data);
  const int ip_len = ntohs(ip->tot_len) > 0 ? ntohs(ip->tot_len) : len;
  if (ip_len <= 1500 || ip->protocol != IPPROTO_TCP) return static_cast<uint64_t>(ip_len) + 14;
  const int ihl = ip->ihl * 4;
  if (len < ihl + 20) return static_cast<uint64_t>(ip_len) + 14;
  const auto* tcp = reinterpret_cast<const tcphdr*>(data + ihl);
  const int headers = ihl + tcp->doff * 4;
  const int payload = ip_len - headers;
  const int segments = (payload + kMss - 1) / kMss;
  return static_cast<uint64_t>(payload) + static_cast<uint64_t>(segments) * (headers + 14);
}

int on_packet(nfq_q_handle* qh, nfgenmsg*, nfq_data* nfa, void*) {
  Direction& d = qh == dirs[0].queue ? dirs[0] : dirs[1];
  const nfqnl_msg_packet_hdr* ph = nfq_get_msg_packet_hdr(nfa);
  if (!ph) return 0;
  const uint32_t id = ntohl(ph->packet_id);
  if (d.fifo.size() >= d.limit || (loss > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < loss)) {
    ++d.drops;
    return nfq_set_verdict(qh, id, NF_DROP, 0, nullptr);
  }
  unsigned char* data = nullptr;
  const int len = nfq_get_payload(nfa, &data);
  const uint64_t bytes = wire_bytes(data, len);
  const int64_t arrival = now_ns();
  int64_t depart = arrival + static_cast<int64_t>(d.delay_ns);
  if (depart < d.last_depart_ns) depart = d.last_depart_ns;
  depart += static_cast<int64_t>(static_cast<double>(bytes) * d.ns_per_byte);
  d.last_depart_ns = depart;
  d.fifo.push_back({id, depart});
  ++d.packets;
  d.frame_bytes += bytes;
  return 0;
}

double number(const char* flag, const char* text) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (!end || *end || !(v >= 0)) {
    std::fprintf(stderr, "delayline: %s: expected a number >= 0, got \"%s\"\n", flag, text);
    std::exit(2);
  }
  return v;
}

void usage() {
  std::fprintf(stderr,
               "usage: delayline --up Q --down Q --rate-mbit R --delay-ms D [--limit PKTS] [--loss P --seed S]\n"
               "  per-direction rate R (Mbit/s, 1e6 bit) and one-way delay D for both queues;\n"
               "  P: the fraction of packets dropped at random in each (0..1)\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int queue_num[2] = {-1, -1};
  double rate_mbit = 0, delay_ms = -1, limit = 1000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage();
    const char* v = argv[++i];
    if (a == "--up") queue_num[0] = static_cast<int>(number("--up", v));
    else if (a == "--down") queue_num[1] = static_cast<int>(number("--down", v));
    else if (a == "--rate-mbit") rate_mbit = number("--rate-mbit", v);
    else if (a == "--delay-ms") delay_ms = number("--delay-ms", v);
    else if (a == "--limit") limit = number("--limit", v);
    else if (a == "--loss") loss = number("--loss", v);
    else if (a == "--seed") rng.seed(static_cast<uint64_t>(number("--seed", v)));
    else usage();
  }
  if (queue_num[0] < 0 || queue_num[1] < 0 || !(rate_mbit > 0) || delay_ms < 0 || !(limit >= 1) || !(loss < 1)) usage();
  prctl(PR_SET_TIMERSLACK, 1UL);  // wake at the departure time, not 50 us later
  signal(SIGTERM, [](int) { stop = 1; });
  signal(SIGINT, [](int) { stop = 1; });

  nfq_handle* h = nfq_open();
  if (!h) { std::perror("delayline: nfq_open"); return 1; }
  for (int k = 0; k < 2; ++k) {
    Direction& d = dirs[k];
    d.delay_ns = delay_ms * 1e6;
    d.ns_per_byte = 8e3 / rate_mbit;
    d.limit = static_cast<size_t>(limit);
    d.queue = nfq_create_queue(h, static_cast<uint16_t>(queue_num[k]), &on_packet, nullptr);
    if (!d.queue) { std::perror("delayline: nfq_create_queue"); return 1; }
    nfq_set_mode(d.queue, NFQNL_COPY_PACKET, 128);  // headers only
    nfq_set_queue_maxlen(d.queue, 100000);
    nfq_set_queue_flags(d.queue, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO);
  }
  const int fd = nfq_fd(h);
  int rcvbuf = 64 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
  std::fprintf(stderr, "delayline: queues %d/%d, %g Mbit/s, %g ms, limit %g, loss %g\n", queue_num[0],
               queue_num[1], rate_mbit, delay_ms, limit, loss);

  alignas(8) static char buf[1 << 17];
  while (!stop) {
    // Release every packet due, then sleep until the next one or a new arrival.
    int64_t next = -1;
    const int64_t t = now_ns();
    for (Direction& d : dirs) {
      while (!d.fifo.empty() && d.fifo.front().depart_ns <= t) {
        nfq_set_verdict(d.queue, d.fifo.front().id, NF_ACCEPT, 0, nullptr);
        d.fifo.pop_front();
      }
      if (!d.fifo.empty() && (next < 0 || d.fifo.front().depart_ns < next)) next = d.fifo.front().depart_ns;
    }
    timespec timeout{1, 0};
    if (next >= 0) {
      const int64_t wait = next - now_ns();
      timeout = wait > 0 ? timespec{wait / 1000000000, wait % 1000000000} : timespec{0, 0};
    }
    pollfd p{fd, POLLIN, 0};
    if (ppoll(&p, 1, &timeout, nullptr) > 0) {
      // Drain what has arrived without blocking.
      for (;;) {
        const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0) {
          if (errno == ENOBUFS) { std::fprintf(stderr, "delayline: netlink overrun\n"); continue; }
          break;
        }
        nfq_handle_packet(h, buf, static_cast<int>(n));
      }
    }
  }
  for (int k = 0; k < 2; ++k) {
    Direction& d = dirs[k];
    std::fprintf(stderr, "delayline: %s: %llu packets, %llu frame bytes, %llu dropped\n", k ? "down" : "up",
                 static_cast<unsigned long long>(d.packets), static_cast<unsigned long long>(d.frame_bytes),
                 static_cast<unsigned long long>(d.drops));
    // Let what is still waiting go, so no connection hangs on a dead queue.
    for (const Pending& p : d.fifo) nfq_set_verdict(d.queue, p.id, NF_ACCEPT, 0, nullptr);
    nfq_destroy_queue(d.queue);
  }
  nfq_close(h);
  return 0;
}
