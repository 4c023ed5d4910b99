#include "kernels/matmul.h"

#include <oneapi/dnnl/dnnl.h>

#include <stdexcept>
#include <string>

namespace lowband::kernels::cpu {

void matmul(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
            int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  const dnnl_status_t status =
      dnnl_sgemm(ta == Trans::yes ? 'T' : 'N', tb == Trans::yes ? 'T' : 'N', M, N, K, alpha, A,
                 lda, B, ldb, beta, C, ldc);
  if (status != dnnl_success)
    throw std::runtime_error("dnnl_sgemm failed with status " + std::to_string(status));
}

}  // namespace lowband::kernels::cpu
