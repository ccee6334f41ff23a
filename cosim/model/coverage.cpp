// Verilator code coverage of a co-simulation job (models built with --coverage-line --coverage-toggle): each
// forked job writes the counters of its simulation to its own .dat file (cosim/verify/coverage.py merges them).
#include "verilated.h"
#include "verilated_cov.h"

extern "C" void vta_coverage_write(const char* path) {
    Verilated::threadContextp()->coveragep()->write(path);
}
