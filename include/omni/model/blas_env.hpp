// OpenBLAS's kernel choice for the engine's prefill GEMMs. Debian 12's OpenBLAS 0.3.21 detects
// the AVX-512 Xeons of these machines as "Cooperlake", whose sgemm runs at about half the speed
// of its SkylakeX kernels here (pp512 2,160 vs 3,960 tokens/s on the tiny model, one thread).
// OpenBLAS reads OPENBLAS_CORETYPE once, when the library loads, so a binary calls this first
// thing in main(): when the CPU has AVX-512 and the variable is unset, it sets
// OPENBLAS_CORETYPE=SkylakeX and re-executes itself (once; the user's own setting always wins).
#pragma once

namespace omni::model {

void prefer_openblas_core(char** argv);

}  // namespace omni::model
