// The few things the templates need beyond C++, each behind one hook, so
// that tools/emulate runs the same templates on the host: it defines
// SGTOPK_EMULATE and its own hooks (tools/emulate/prelude.h).
#pragma once

#ifndef SGTOPK_EMULATE
namespace sgtopk::hw {

// x's FP16 bits, rounded to nearest even: one conversion-pipe instruction.
__device__ __forceinline__ unsigned short f16_bits(float x) {
  unsigned short half;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(half) : "f"(x));
  return half;
}
// The float of FP16 bits h, exact (subnormals, infinities; NaN stays NaN):
// one conversion, where the same by bit manipulation costs registers.
__device__ __forceinline__ float f16_to_float(unsigned short h) {
  float x;
  asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(h));
  return x;
}
// a's FP16 bits in the low half, b's in the high half: one ALU instruction.
__device__ __forceinline__ unsigned f16x2_bits(float a, float b) {
  unsigned halves;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(halves) : "f"(b), "f"(a));
  return halves;
}
__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }
// Asks L2 for [p, p + bytes) in one instruction that holds no register
// (p and bytes multiples of 16; sm_90 and newer, a no-op before).
__device__ __forceinline__ void prefetch_l2_bulk(const void* p, unsigned bytes) {
#if __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
#else
  (void)p;
  (void)bytes;
#endif
}
// *p += v at device scope, returning the old value: a release of every write
// this thread saw before (its CTA's, after a barrier) and an acquire of every
// write released before an earlier add (in place of a fence by every thread
// and a relaxed add).
__device__ __forceinline__ unsigned atomic_add_acq_rel(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.add.acq_rel.gpu.global.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
// e^x, approximate (ex2.approx): for estimates that decide speed only.
__device__ __forceinline__ float approx_exp(float x) { return __expf(x); }
// floor(v + 0.5) for 0 <= v < 2^23: the sum rounded down, whose floor is
// the exact sum's (the nearest sum may round up to the next integer).
__device__ __forceinline__ unsigned round_half_up(float v) { return __float2uint_rd(__fadd_rd(v, 0.5f)); }
// The same for 0 <= v < 2^64, 0 for NaN: from 2^23 up v is an integer, and
// the sum rounds down to it.
__device__ __forceinline__ unsigned long long round_half_up_u64(float v) { return __float2ull_rd(__fadd_rd(v, 0.5f)); }
// A load past L1, for what other CTAs of this launch wrote before their
// fence or release.
__device__ __forceinline__ float load_l2(const float* p) { return __ldcg(p); }
__device__ __forceinline__ unsigned load_l2(const unsigned* p) { return __ldcg(p); }

// Thread-block clusters (sm_90): this CTA's rank in its cluster, a barrier
// of every thread of the cluster (release/acquire: shared and global writes
// before it are visible to every CTA of the cluster after it), and the
// address of the same shared variable in the CTA of rank `rank`.
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
template <typename T>
__device__ __forceinline__ T* peer_shared(T* p, unsigned rank) {
  unsigned long long mapped;
  asm volatile("mapa.u64 %0, %1, %2;" : "=l"(mapped) : "l"(p), "r"(rank));
  return reinterpret_cast<T*>(mapped);
}

}  // namespace sgtopk::hw

// The block's dynamic shared memory, and one variable shared by the block.
#define SGTOPK_DYNAMIC_SHARED(name) extern __shared__ __align__(16) unsigned char name[]
#define SGTOPK_BLOCK_SHARED(type, name) __shared__ type name
#endif
