// Subspace projection on the GPU: U(θ) formed in a scratch buffer, products in
// cuBLAS (cuda::matmul), dθ reduced in double in one block. The principal
// directions form the Gram matrix on the GPU and diagonalise it on the host.
#include <vector>

#include "common/error.h"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/context.cuh"
#include "kernels/cuda/reduce.cuh"
#include "kernels/device.h"
#include "kernels/matmul.h"
#include "kernels/subspace.h"

namespace lowband::kernels::cuda {
namespace {

// A device buffer freed on scope exit (also when a check throws).
class Scratch {
 public:
  explicit Scratch(size_t count) : ptr_(static_cast<float*>(device_alloc(count * sizeof(float)))) {}
  ~Scratch() { cudaFree(ptr_); }  // no throw from a destructor
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  float* get() const { return ptr_; }

 private:
  float* ptr_;
};

__global__ void basis_kernel(int64_t count, float theta, const float* u0, const float* au0,
                             const float* a2u0, float* u) {
  const float half_t2 = 0.5f * theta * theta;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < count;
       e += int64_t(gridDim.x) * blockDim.x)
    u[e] = u0[e] + theta * au0[e] + half_t2 * a2u0[e];
}

// *result = Σ g[e] · (au0[e] + θ·a2u0[e]), one block, in double.
__global__ void theta_dot_kernel(int64_t count, float theta, const float* g, const float* au0,
                                 const float* a2u0, double* result) {
  __shared__ double scratch[32];
  double sum = 0.0;
  for (int64_t e = threadIdx.x; e < count; e += blockDim.x)
    sum += double(g[e]) * (double(au0[e]) + double(theta) * double(a2u0[e]));
  sum = detail::block_sum(sum, scratch);
  if (threadIdx.x == 0) *result = sum;
}

__global__ void column_mean_kernel(int64_t n, int64_t d, const float* z, float* mean) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < d;
       j += int64_t(gridDim.x) * blockDim.x) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += z[i * d + j];
    mean[j] = float(sum / double(n));
  }
}

__global__ void subtract_rows_kernel(int64_t n, int64_t d, const float* z, const float* mean,
                                     float* out) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n * d;
       e += int64_t(gridDim.x) * blockDim.x)
    out[e] = z[e] - mean[e % d];
}

void make_basis(const Subspace& s, float theta, float* u) {
  basis_kernel<<<detail::grid_for(s.d * s.r, 256), 256, 0, stream()>>>(s.d * s.r, theta, s.u0, s.au0, s.a2u0, u);
  LOWBAND_CUDA_CHECK_LAUNCH();
}

// ⟨Xᵀ·Y, AU₀ + θ·A²U₀⟩ for X (n, d), Y (n, r).
float theta_gradient(const Subspace& s, float theta, int64_t n, const float* x, const float* y) {
  if (n == 0) return 0.0f;
  Scratch g(s.d * s.r), result(2);  // 2 floats hold the double
  matmul(Trans::yes, Trans::no, s.d, s.r, n, 1.0f, x, s.d, y, s.r, 0.0f, g.get(), s.r);
  double* out = reinterpret_cast<double*>(result.get());
  theta_dot_kernel<<<1, 256, 0, stream()>>>(s.d * s.r, theta, g.get(), s.au0, s.a2u0, out);
  LOWBAND_CUDA_CHECK_LAUNCH();
  double host = 0.0;
  copy_to_host(&host, out, sizeof(double));
  return float(host);
}

}  // namespace

void subspace_generator_products(int64_t d, int64_t r, const float* a, const float* u0, float* au0,
                                 float* a2u0) {
  if (d <= 0 || r <= 0 || r > d)
    throw InputError("subspace_generator_products.r", "need 1 <= r <= d");
  matmul(Trans::no, Trans::no, d, r, d, 1.0f, a, d, u0, r, 0.0f, au0, r);
  matmul(Trans::no, Trans::no, d, r, d, 1.0f, a, d, au0, r, 0.0f, a2u0, r);
}

void subspace_basis(const Subspace& s, float theta, float* u) {
  check_subspace(s, 0, "subspace_basis");
  make_basis(s, theta, u);
}

void subspace_project(const Subspace& s, float theta, int64_t n, const float* z, float* c) {
  check_subspace(s, n, "subspace_project");
  Scratch u(s.d * s.r);
  make_basis(s, theta, u.get());
  matmul(Trans::no, Trans::no, n, s.r, s.d, 1.0f, z, s.d, u.get(), s.r, 0.0f, c, s.r);
  synchronize();  // u is freed on return
}

void subspace_reconstruct(const Subspace& s, float theta, int64_t n, const float* c, float* z_hat) {
  check_subspace(s, n, "subspace_reconstruct");
  Scratch u(s.d * s.r);
  make_basis(s, theta, u.get());
  matmul(Trans::no, Trans::yes, n, s.d, s.r, 1.0f, c, s.r, u.get(), s.r, 0.0f, z_hat, s.d);
  synchronize();
}

float subspace_project_backward(const Subspace& s, float theta, int64_t n, const float* z,
                                const float* dc, float* dz) {
  check_subspace(s, n, "subspace_project_backward");
  Scratch u(s.d * s.r);
  make_basis(s, theta, u.get());
  matmul(Trans::no, Trans::yes, n, s.d, s.r, 1.0f, dc, s.r, u.get(), s.r, 0.0f, dz, s.d);
  return theta_gradient(s, theta, n, z, dc);  // its copy_to_host synchronises
}

float subspace_reconstruct_backward(const Subspace& s, float theta, int64_t n, const float* c,
                                    const float* dz_hat, float* dc) {
  check_subspace(s, n, "subspace_reconstruct_backward");
  Scratch u(s.d * s.r);
  make_basis(s, theta, u.get());
  matmul(Trans::no, Trans::no, n, s.r, s.d, 1.0f, dz_hat, s.d, u.get(), s.r, 0.0f, dc, s.r);
  return theta_gradient(s, theta, n, dz_hat, c);
}

void principal_directions(int64_t n, int64_t d, int64_t r, const float* z, bool center, float* u0,
                          float* eigenvalues) {
  if (n < 0) throw InputError("principal_directions.n", "must be >= 0");
  if (d <= 0 || r <= 0 || r > d) throw InputError("principal_directions.r", "need 1 <= r <= d");
  std::vector<float> gram(d * d, 0.0f);
  if (n > 0) {
    Scratch g(d * d);
    if (center) {
      Scratch mean(d), centred(n * d);
      column_mean_kernel<<<detail::grid_for(d, 128), 128, 0, stream()>>>(n, d, z, mean.get());
      LOWBAND_CUDA_CHECK_LAUNCH();
      subtract_rows_kernel<<<detail::grid_for(n * d, 256), 256, 0, stream()>>>(n, d, z, mean.get(),
                                                                  centred.get());
      LOWBAND_CUDA_CHECK_LAUNCH();
      matmul(Trans::yes, Trans::no, d, d, n, 1.0f, centred.get(), d, centred.get(), d, 0.0f,
             g.get(), d);
      copy_to_host(gram.data(), g.get(), gram.size() * sizeof(float));
    } else {
      matmul(Trans::yes, Trans::no, d, d, n, 1.0f, z, d, z, d, 0.0f, g.get(), d);
      copy_to_host(gram.data(), g.get(), gram.size() * sizeof(float));
    }
  }
  std::vector<float> u(d * r);
  kernels::detail::top_eigenvectors(d, r, gram.data(), u.data(), eigenvalues);
  copy_to_device(u0, u.data(), u.size() * sizeof(float));
}

}  // namespace lowband::kernels::cuda
