// cuBLAS GEMM for row-major matrices. cuBLAS is column-major: a row-major X is
// the column-major Xᵀ, so C = op(A)·op(B) is computed as Cᵀ = op(B)ᵀ·op(A)ᵀ,
// i.e. sgemm(opB, opA, N, M, K, B, A, C) with the same leading dimensions.
#include <climits>
#include <string>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/context.cuh"
#include "kernels/matmul.h"

namespace lowband::kernels::cuda {

namespace {
int to_int(int64_t v, const char* name) {
  if (v < 0 || v > INT_MAX)
    throw std::runtime_error(std::string("cuda::matmul: ") + name + " = " + std::to_string(v) +
                             " does not fit cuBLAS's int");
  return static_cast<int>(v);
}
}  // namespace

void matmul(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
            int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  const cublasOperation_t op_a = ta == Trans::yes ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = tb == Trans::yes ? CUBLAS_OP_T : CUBLAS_OP_N;
  LOWBAND_CUBLAS_CHECK(cublasSgemm(current_context().blas, op_b, op_a, to_int(N, "N"), to_int(M, "M"),
                                   to_int(K, "K"), &alpha, B, to_int(ldb, "ldb"), A,
                                   to_int(lda, "lda"), &beta, C, to_int(ldc, "ldc")));
}

}  // namespace lowband::kernels::cuda
