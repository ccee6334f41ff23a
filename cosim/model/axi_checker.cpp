// The C++ side of the AXI4 protocol checker (axi_checker.sv): violations are recorded here through DPI and read
// from Python (cosim/sim/axi_monitor.py) through the extern "C" functions below; the write ranges the accelerator may
// touch (the allocated buffers of the run) are set from Python before each run.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "svdpi.h"

namespace {
constexpr size_t KEEP = 32;                  // messages kept per run (the count goes on)
std::vector<std::string> g_messages;
uint64_t g_count = 0;
bool g_ranges_on = false;                    // off: every write is allowed (no allocation table for this run)
std::vector<std::pair<uint64_t, uint64_t>> g_ranges;   // [lo, hi) byte ranges
constexpr int STALL_CHANNELS = 6;            // AR, R paused, AW, W, R held, B held (axi_checker.sv)
uint64_t g_stalls[STALL_CHANNELS] = {};      // cycles waited since the model started
}  // namespace

extern "C" {

void vta_axi_violation(const char* rule, const char* channel, long long cycle, const char* detail) {
    ++g_count;
    if (g_messages.size() < KEEP)
        g_messages.push_back(std::string(rule) + " on channel " + channel + " at cycle " + std::to_string(cycle) +
                             ": " + detail);
    if (std::getenv("VTA_AXI_PRINT"))
        std::printf("AXI violation %s on channel %s at cycle %lld: %s\n", rule, channel, cycle, detail);
}

int vta_axi_write_allowed(unsigned long long addr, int nbytes) {
    if (!g_ranges_on) return 1;
    for (const auto& r : g_ranges)
        if (addr >= r.first && addr + static_cast<uint64_t>(nbytes) <= r.second) return 1;
    return 0;
}

void vta_axi_stall(int channel) {
    if (channel >= 0 && channel < STALL_CHANNELS) ++g_stalls[channel];
}
uint64_t vta_axi_stall_count(int channel) {
    return channel >= 0 && channel < STALL_CHANNELS ? g_stalls[channel] : 0;
}

uint64_t vta_axi_violation_count() { return g_count; }
const char* vta_axi_violation_message(uint64_t i) { return i < g_messages.size() ? g_messages[i].c_str() : ""; }
void vta_axi_clear() { g_count = 0; g_messages.clear(); }

void vta_axi_ranges_reset(int enabled) { g_ranges.clear(); g_ranges_on = enabled != 0; }
void vta_axi_range_add(uint64_t lo, uint64_t hi) { g_ranges.emplace_back(lo, hi); }

}  // extern "C"
