// The speed ceiling: the testbench and accelerator in a minimal Verilator main loop (no cocotb, no VPI,
// no --timing: the clock is toggled here). Built by cosim/perf/harness.py with VTA_TB_CPP_CLOCK defined.
// Usage: vta_harness +image=<file> +insn_addr=<n> +insn_count=<n>   (the testbench's autorun launches the run)
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
    top->clk = 0;
    top->eval();
    auto t0 = std::chrono::steady_clock::now();
    while (!ctx->gotFinish()) {
        ctx->timeInc(5);
        top->clk = 1;
        top->eval();
        ctx->timeInc(5);
        top->clk = 0;
        top->eval();
    }
    auto t1 = std::chrono::steady_clock::now();
    std::printf("VTA_HARNESS wall=%.6f\n", std::chrono::duration<double>(t1 - t0).count());
    top->final();
    return 0;
}
