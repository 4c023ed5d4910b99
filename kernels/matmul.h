#pragma once
// Dense matrix multiply with transposes, row-major.
//   C (M x N) = alpha * op(A) * op(B) + beta * C
//   op(A) is M x K (A is M x K, or K x M when ta == Trans::yes), leading dimension lda;
//   op(B) is K x N (B is K x N, or N x K when tb == Trans::yes), leading dimension ldb.
// cpu:: runs oneDNN's sgemm (see kernels/README.md for why); cuda:: runs cuBLAS on
// device pointers.
#include <cstdint>

namespace lowband::kernels {

enum class Trans : bool { no = false, yes = true };

namespace cpu {
void matmul(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
            int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
}  // namespace cpu

namespace cuda {
void matmul(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
            int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
}  // namespace cuda

}  // namespace lowband::kernels
