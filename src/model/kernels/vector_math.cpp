#include "omni/model/vector_math.hpp"

#include "kernels.hpp"

namespace omni::model {

double exp_sum(std::span<const float> x, float shift, std::span<float> out) {
  static const kernels::KernelTable& k = []() -> const kernels::KernelTable& {
    const auto& isa = omni::amla::runtime_isa();
    return kernels::table(isa ? *isa : omni::amla::Isa::kScalar);
  }();
  return k.exp_sum(x.data(), static_cast<int>(x.size()), shift, out.data());
}

}  // namespace omni::model
