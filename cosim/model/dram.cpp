// Device DRAM for co-simulation: one contiguous buffer, reached from the testbench through DPI and
// from Python through the extern "C" functions below (numpy maps it without copying).
//
// The buffer is calloc'd ($VTA_DRAM_BYTES bytes, default 64 MiB), or, when $VTA_DRAM_FILE names a file, that
// file mapped MAP_SHARED (its whole size): another process that maps the same file sees the accelerator's
// memory as it changes (the virtual board, cosim/sim/vboard.py, which switches a running simulator to a file
// with vta_dram_use_file).
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "svdpi.h"

namespace {
uint8_t* g_mem = nullptr;
uint64_t g_size = 0;
uint64_t g_faults = 0;        // accesses outside the buffer
uint64_t g_first_fault = 0;   // address of the first one
// activity trace: (cycle, module, busy) transitions recorded by the testbench
std::vector<uint64_t> g_trace;

// Map the file `path` as device memory (see the top); 0 on success, else -errno (-EINVAL: an empty file).
int map_file(const char* path) {
    int fd = open(path, O_RDWR);
    if (fd < 0) return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0) { int e = errno; close(fd); return -e; }
    if (st.st_size <= 0) { close(fd); return -EINVAL; }
    void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) return -e;
    g_mem = static_cast<uint8_t*>(p);
    g_size = static_cast<uint64_t>(st.st_size);
    return 0;
}

void ensure() {
    if (g_mem) return;
    const char* file = std::getenv("VTA_DRAM_FILE");
    if (file && *file) {
        int err = map_file(file);
        if (err) {
            std::fprintf(stderr, "dram.cpp: cannot map VTA_DRAM_FILE=%s: %s\n", file, std::strerror(-err));
            std::abort();
        }
        return;
    }
    const char* s = std::getenv("VTA_DRAM_BYTES");
    g_size = s ? std::strtoull(s, nullptr, 0) : (64ull << 20);
    g_mem = static_cast<uint8_t*>(std::calloc(g_size, 1));
}

bool in_range(uint64_t addr, int nbytes) {
    if (addr + static_cast<uint64_t>(nbytes) <= g_size) return true;
    if (!g_faults++) g_first_fault = addr;
    return false;
}
}  // namespace

extern "C" {

uint8_t* vta_dram_base() { ensure(); return g_mem; }
uint64_t vta_dram_size() { ensure(); return g_size; }
uint64_t vta_dram_faults() { return g_faults; }
uint64_t vta_dram_first_fault() { return g_first_fault; }
void vta_dram_clear_faults() { g_faults = 0; g_first_fault = 0; }

// Make the file `path` device memory from now on (mapped MAP_SHARED, its whole size), in place of the current
// buffer, which is not freed (numpy views of it stay valid, but the testbench no longer uses it). 0 or -errno.
int vta_dram_use_file(const char* path) { ensure(); return map_file(path); }

void vta_dram_read(unsigned int addr, int nbytes, svBitVecVal* data) {
    ensure();
    if (!in_range(addr, nbytes)) { std::memset(data, 0, nbytes); return; }
    std::memcpy(data, g_mem + addr, nbytes);
}

void vta_dram_write(unsigned int addr, int nbytes, const svBitVecVal* data, const svBitVecVal* strb) {
    ensure();
    if (!in_range(addr, nbytes)) return;
    const uint8_t* bytes = reinterpret_cast<const uint8_t*>(data);
    for (int i = 0; i < nbytes; ++i)
        if ((strb[i / 32] >> (i % 32)) & 1) g_mem[addr + i] = bytes[i];
}

void vta_trace_event(long long cycle, int module, int busy) {
    g_trace.push_back((static_cast<uint64_t>(cycle) << 8) | (static_cast<uint64_t>(module) << 1) | (busy & 1));
}
uint64_t vta_trace_size() { return g_trace.size(); }
const uint64_t* vta_trace_data() { return g_trace.data(); }
void vta_trace_clear() { g_trace.clear(); }

}  // extern "C"
