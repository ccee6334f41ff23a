// The virtual board's register page (cosim/sim/vboard.py): a file that a host process maps exactly as it maps a
// board's UIO register window (/dev/uio0), kept in step with the accelerator's AXI4-Lite registers by the
// testbench, with no Python in the loop.
//
// Every few cycles, while the testbench's AXI4-Lite master is idle, vta_tb.sv calls vta_vboard_poll, which
// answers with one thing to do:
//   * a host write: a register word of the page that differs from its shadow (the value the bridge last
//     mirrored into it or forwarded from it) was written by the host, and becomes an AXI4-Lite write of the
//     page's value. The words are taken in register order with `control` last, and `control` is loaded
//     before the others (acquire), so a launch (control = 1) always reaches the accelerator after the
//     insn_count, insn_addr and base-address writes the host made before it;
//   * else the next read of a sweep over every register, `control` first; vta_vboard_read_done collects
//     the values, and when the sweep is complete they are published into the page, `control` last, each
//     with a compare-and-swap against its shadow, so a host write made meanwhile is never overwritten (it
//     is forwarded at the next poll instead). So when the host sees the finish bit of `control`, every
//     other word it reads was read from the accelerator after the run ended. A forwarded write restarts the
//     sweep: nothing published was read before it;
//   * the reset word (non-zero): reset the accelerator (the testbench's reset_req), as the board's PS
//     resets the PL; it is cleared (the host's acknowledgement) once a whole sweep after the reset has been
//     published, so the page then shows the registers' reset values;
//   * the quit word (non-zero): the session ends (the testbench raises vboard_quit).
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {
uint32_t* g_page = nullptr;
uint64_t g_bytes = 0;
std::vector<uint32_t> g_offsets;     // the registers to mirror, `control` first
std::vector<uint32_t> g_shadow;      // per register: the value last mirrored into or forwarded from the page
std::vector<uint32_t> g_sweep;       // the values read in the current sweep
size_t g_next = 0;                   // the register the sweep reads next
uint32_t g_reset_word = 0, g_quit_word = 0;
bool g_resetting = false;            // a reset was done; the reset word is cleared after the next whole sweep
uint64_t g_stats[4] = {0, 0, 0, 0};  // writes forwarded, reads, sweeps published, resets

std::atomic_ref<uint32_t> word(uint32_t offset) { return std::atomic_ref<uint32_t>(g_page[offset / 4]); }

void publish() {
    for (size_t k = 1; k <= g_offsets.size(); ++k) {         // control (index 0) last
        size_t i = k % g_offsets.size();
        uint32_t expected = g_shadow[i];
        if (word(g_offsets[i]).compare_exchange_strong(expected, g_sweep[i], std::memory_order_acq_rel))
            g_shadow[i] = g_sweep[i];
    }
    ++g_stats[2];
    if (g_resetting) {
        g_resetting = false;
        word(g_reset_word).store(0, std::memory_order_release);
    }
}
}  // namespace

extern "C" {

// Map the page file `path` (MAP_SHARED, its whole size) and mirror the registers at `offsets[0..n)` (`control`
// first); `reset_word` and `quit_word` are the offsets of the two words past the register map. The shadows
// start as the page's current words. 0 on success, else -errno (-EINVAL: a bad offset or size).
int vta_vboard_open(const char* path, const uint32_t* offsets, int n, uint32_t reset_word, uint32_t quit_word) {
    int fd = open(path, O_RDWR);
    if (fd < 0) return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0) { int e = errno; close(fd); return -e; }
    uint64_t bytes = static_cast<uint64_t>(st.st_size);
    bool ok = n > 0 && bytes >= 4 && bytes % 4 == 0 && reset_word % 4 == 0 && quit_word % 4 == 0 &&
              reset_word < bytes && quit_word < bytes;
    for (int i = 0; ok && i < n; ++i) ok = offsets[i] % 4 == 0 && offsets[i] < bytes;
    if (!ok) { close(fd); return -EINVAL; }
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) return -e;
    g_page = static_cast<uint32_t*>(p);
    g_bytes = bytes;
    g_offsets.assign(offsets, offsets + n);
    g_shadow.resize(n);
    g_sweep.assign(n, 0);
    for (int i = 0; i < n; ++i) g_shadow[i] = word(g_offsets[i]).load(std::memory_order_acquire);
    g_next = 0;
    g_reset_word = reset_word;
    g_quit_word = quit_word;
    g_resetting = false;
    std::memset(g_stats, 0, sizeof g_stats);
    return 0;
}

// Counters of the session: writes forwarded, register reads, sweeps published, resets.
void vta_vboard_stats(uint64_t* out) { std::memcpy(out, g_stats, sizeof g_stats); }

// What the testbench does next: op 0 nothing, 1 write `data` to `addr`, 2 read `addr`, 3 reset, 4 quit.
void vta_vboard_poll(int* op, int* addr, int* data) {
    *op = 0; *addr = 0; *data = 0;
    if (!g_page) return;
    if (word(g_quit_word).load(std::memory_order_acquire)) { *op = 4; return; }
    if (!g_resetting && word(g_reset_word).load(std::memory_order_acquire)) {
        g_resetting = true;
        g_next = 0;
        ++g_stats[3];
        *op = 3;
        return;
    }
    uint32_t control = word(g_offsets[0]).load(std::memory_order_acquire);     // before the others: see above
    for (size_t i = 1; i < g_offsets.size(); ++i) {
        uint32_t w = word(g_offsets[i]).load(std::memory_order_acquire);
        if (w != g_shadow[i]) {
            g_shadow[i] = w;
            g_next = 0;
            ++g_stats[0];
            *op = 1; *addr = static_cast<int>(g_offsets[i]); *data = static_cast<int>(w);
            return;
        }
    }
    if (control != g_shadow[0]) {
        g_shadow[0] = control;
        g_next = 0;
        ++g_stats[0];
        *op = 1; *addr = static_cast<int>(g_offsets[0]); *data = static_cast<int>(control);
        return;
    }
    *op = 2;
    *addr = static_cast<int>(g_offsets[g_next]);
}

// The value of the read vta_vboard_poll asked for.
void vta_vboard_read_done(int addr, int data) {
    if (!g_page || g_offsets.empty() || static_cast<uint32_t>(addr) != g_offsets[g_next]) return;
    ++g_stats[1];
    g_sweep[g_next] = static_cast<uint32_t>(data);
    if (++g_next == g_offsets.size()) {
        g_next = 0;
        publish();
    }
}

}  // extern "C"
