// Main loop of the co-simulation model: the clock is toggled here (no --timing), cocotb attaches through VPI.
//
// Each half period: advance time, run the timed and next-time VPI callbacks, toggle clk, evaluate until
// the design and the VPI value-change callbacks settle, then the read-write and read-only callbacks.
// cocotb only waits on value changes (clock edges, ctl_ack, done), so while the accelerator runs the
// callback lists are nearly empty and the loop costs little more than the model's eval.
// Usage: vta_tb [--trace] [+vta_max_cycles=N]
//   --trace writes dump.fst when the model is built with --trace-fst; +vta_max_cycles=N ends the simulation after N
//   clock cycles (cocotb then fails the test that is running: a cocotb test that waits forever does not hang).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "Vtop.h"
#include "verilated.h"
#include "verilated_vpi.h"
#if VM_TRACE
#include "verilated_fst_c.h"
#endif

extern "C" void vlog_startup_routines_bootstrap(void);

static uint64_t g_time = 0;
double sc_time_stamp() { return static_cast<double>(g_time); }

namespace {
constexpr uint64_t HALF_PERIOD = 5000;   // a 10 ns clock: time steps are the testbench's precision, 1 ps

void settle_value_callbacks() {
    while (VerilatedVpi::callValueCbs()) {
    }
}

void evaluate(Vtop* top) {
    do {
        do {
            top->eval_step();
            VerilatedVpi::clearEvalNeeded();
            VerilatedVpi::doInertialPuts();
            settle_value_callbacks();
        } while (VerilatedVpi::evalNeeded());
        VerilatedVpi::callCbs(cbReadWriteSynch);
        VerilatedVpi::doInertialPuts();
        settle_value_callbacks();
    } while (VerilatedVpi::evalNeeded());
    top->eval_end_step();
    VerilatedVpi::callCbs(cbReadOnlySynch);
}
}  // namespace

int main(int argc, char** argv) {
    bool trace = false;
    uint64_t max_cycles = 0;   // 0: no limit
    const char* max_arg = "+vta_max_cycles=";
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--trace") == 0) trace = true;
        if (std::strncmp(argv[i], max_arg, std::strlen(max_arg)) == 0)
            max_cycles = std::strtoull(argv[i] + std::strlen(max_arg), nullptr, 0);
    }
    Verilated::commandArgs(argc, argv);
    VerilatedContext* ctx = Verilated::threadContextp();
    auto top = std::make_unique<Vtop>("");
    Verilated::fatalOnVpiError(false);
#if VM_TRACE
    std::unique_ptr<VerilatedFstC> tfp;
    if (trace) {
        Verilated::traceEverOn(true);
        tfp = std::make_unique<VerilatedFstC>();
        top->trace(tfp.get(), 99);
        tfp->open("dump.fst");
    }
#else
    (void)trace;
#endif
    vlog_startup_routines_bootstrap();
    VerilatedVpi::callCbs(cbStartOfSimulation);
    settle_value_callbacks();
    top->clk = 0;
    while (!ctx->gotFinish()) {
        evaluate(top.get());
#if VM_TRACE
        if (tfp) tfp->dump(g_time);
#endif
        g_time += HALF_PERIOD;
        ctx->time(g_time);
        VerilatedVpi::callCbs(cbNextSimTime);
        settle_value_callbacks();
        VerilatedVpi::callTimedCbs();
        settle_value_callbacks();
        top->clk = !top->clk;
        if (max_cycles && g_time >= max_cycles * 2 * HALF_PERIOD && !ctx->gotFinish()) {
            std::fprintf(stderr, "vta_tb: the simulation reached +vta_max_cycles=%llu cycles and stops\n",
                         static_cast<unsigned long long>(max_cycles));
            ctx->gotFinish(true);
        }
    }
    VerilatedVpi::callCbs(cbEndOfSimulation);
    top->final();
#if VM_TRACE
    if (tfp) tfp->close();
#endif
    return ctx->errorCount() > 0 ? 1 : 0;
}
