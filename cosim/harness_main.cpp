// Plain Verilator harness: the testbench and accelerator with no cocotb and no VPI (the speed ceiling).
// Usage: vta_harness +image=<file> +insn_addr=<n> +insn_count=<n>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "Vtop.h"
#include "verilated.h"

extern "C" uint8_t* vta_dram_base();
extern "C" uint64_t vta_dram_size();

int main(int argc, char** argv) {
    auto ctx = std::make_unique<VerilatedContext>();
    ctx->commandArgs(argc, argv);
    std::string arg = ctx->commandArgsPlusMatch("image=");
    if (arg.empty()) { std::fprintf(stderr, "usage: +image=<file> +insn_addr=N +insn_count=N\n"); return 2; }
    std::string path = arg.substr(std::strlen("+image="));
    FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) { std::perror(path.c_str()); return 2; }
    size_t n = std::fread(vta_dram_base(), 1, vta_dram_size(), f);
    std::fclose(f);
    std::printf("VTA_HARNESS image %zu bytes\n", n);
    auto top = std::make_unique<Vtop>(ctx.get());
    auto t0 = std::chrono::steady_clock::now();
    while (!ctx->gotFinish()) {
        top->eval();
        if (!top->eventsPending()) break;
        ctx->time(top->nextTimeSlot());
    }
    auto t1 = std::chrono::steady_clock::now();
    std::printf("VTA_HARNESS wall=%.6f\n", std::chrono::duration<double>(t1 - t0).count());
    top->final();
    return 0;
}
