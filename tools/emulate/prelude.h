// Host stand-ins for the CUDA built-ins the select templates use (tools/emulate/run):
// threads are OS threads, __syncthreads a std::barrier, warp shuffles and votes
// exchange through a per-warp buffer; __activemask() is the calling lane alone,
// the worst divergence the CUDA model allows.
#pragma once
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <atomic>
struct float4 { float x, y, z, w; };
struct uint4 { unsigned x, y, z, w; };
static inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
struct EmuDim { unsigned x; };
inline thread_local EmuDim threadIdx;
inline thread_local EmuDim blockIdx{0};  // set by each thread the harness starts
inline EmuDim gridDim{1};
inline EmuDim blockDim{1};  // set by the harness with its barrier
#define __device__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
alignas(16) inline unsigned char emu_shared[1 << 20];
struct EmuWarp { std::barrier<> bar{32}; unsigned long long buf[32]; };
struct EmuCluster;
// One CTA: its shared memory, its barrier, its warps' exchange buffers and,
// in a cluster, the cluster and its rank there. Each harness thread names
// its CTA in emu_cta before it runs the agent.
struct EmuCta {
  unsigned char* shared = emu_shared;
  std::barrier<>* block = nullptr;
  EmuWarp* warps = nullptr;
  std::atomic<int> count{0}, leaving{0};  // __syncthreads_count
  EmuCluster* cluster = nullptr;
  unsigned rank = 0;
};
inline thread_local EmuCta* emu_cta = nullptr;
// Thread-block clusters: a barrier of all their threads, their CTAs by rank.
struct EmuCluster {
  std::barrier<>* bar = nullptr;
  EmuCta* ctas[16] = {};
  unsigned size = 0;
};
inline void __syncthreads() { emu_cta->block->arrive_and_wait(); }
// A barrier that counts the threads whose predicate is true: two barriers
// around a shared counter, reset by the first thread out of the second.
inline int __syncthreads_count(int predicate) {
  if (predicate) emu_cta->count.fetch_add(1);
  emu_cta->block->arrive_and_wait();
  const int count = emu_cta->count.load();
  const int block = static_cast<int>(blockDim.x);
  emu_cta->block->arrive_and_wait();
  if (emu_cta->leaving.fetch_add(1) + 1 == block) {  // the last to read: reset for the next call
    emu_cta->leaving.store(0);
    emu_cta->count.store(0);
  }
  emu_cta->block->arrive_and_wait();
  return count;
}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline long long clock64() { return 0; }
template <typename T> inline T __ldg(const T* p) { return *p; }
inline int __ffs(unsigned x) { return x ? __builtin_ctz(x) + 1 : 0; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __clz(unsigned x) { return x ? __builtin_clz(x) : 32; }
inline unsigned __umulhi(unsigned a, unsigned b) { return static_cast<unsigned>((static_cast<unsigned long long>(a) * b) >> 32); }
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline float __uint_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned i; std::memcpy(&i, &f, 4); return i; }
inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
inline unsigned short emu_f16_bits(float x) { _Float16 h = (_Float16)x; unsigned short b; std::memcpy(&b, &h, 2); return b; }
inline unsigned atomicAdd(unsigned* p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline float atomicAdd(float* p, float v) {
  unsigned* bits = reinterpret_cast<unsigned*>(p);
  unsigned old = __atomic_load_n(bits, __ATOMIC_SEQ_CST);
  while (!__atomic_compare_exchange_n(bits, &old, __float_as_uint(__uint_as_float(old) + v), false, __ATOMIC_SEQ_CST,
                                      __ATOMIC_SEQ_CST)) {}
  return __uint_as_float(old);
}
inline unsigned atomicOr(unsigned* p, unsigned v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }
inline unsigned atomicMax(unsigned* p, unsigned v) {
  unsigned old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (old < v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
  return old;
}
inline unsigned emu_lane() { return threadIdx.x & 31u; }
inline void emu_exchange(unsigned long long v, unsigned long long out[32]) {
  EmuWarp& w = emu_cta->warps[threadIdx.x / 32];
  w.buf[emu_lane()] = v;
  w.bar.arrive_and_wait();
  std::memcpy(out, w.buf, sizeof(w.buf));
  w.bar.arrive_and_wait();
}
inline bool emu_self(unsigned mask) { return mask == (1u << emu_lane()); }
inline void emu_check(unsigned mask, const char* what) {
  if (mask != 0xffffffffu && !emu_self(mask)) { std::fprintf(stderr, "unsupported mask %08x in %s\n", mask, what); std::abort(); }
  if (!(mask >> emu_lane() & 1u)) { std::fprintf(stderr, "lane not in mask in %s\n", what); std::abort(); }
}
inline unsigned __activemask() { return 1u << emu_lane(); }  // worst-case divergence: legal under ITS
template <typename T> inline unsigned long long emu_pack(T v) { unsigned long long b = 0; std::memcpy(&b, &v, sizeof(T)); return b; }
template <typename T> inline T emu_unpack(unsigned long long b) { T v; std::memcpy(&v, &b, sizeof(T)); return v; }
template <typename T> inline T __shfl_sync(unsigned mask, T v, int src) {
  emu_check(mask, "shfl");
  if (emu_self(mask)) { if ((unsigned)src != emu_lane()) { std::fprintf(stderr, "self shfl from other lane\n"); std::abort(); } return v; }
  unsigned long long all[32]; emu_exchange(emu_pack(v), all); return emu_unpack<T>(all[src & 31]);
}
template <typename T> inline T __shfl_up_sync(unsigned mask, T v, unsigned d) {
  emu_check(mask, "shfl_up");
  if (emu_self(mask)) return v;
  unsigned long long all[32]; emu_exchange(emu_pack(v), all);
  return emu_lane() >= d ? emu_unpack<T>(all[emu_lane() - d]) : v;
}
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  emu_check(mask, "syncwarp");
  if (!emu_self(mask)) emu_cta->warps[threadIdx.x / 32].bar.arrive_and_wait();
}
inline unsigned __ballot_sync(unsigned mask, bool pred) {
  emu_check(mask, "ballot");
  if (emu_self(mask)) return pred ? mask : 0u;
  unsigned long long all[32]; emu_exchange(pred ? 1 : 0, all);
  unsigned r = 0; for (int i = 0; i < 32; ++i) if (all[i]) r |= 1u << i; return r;
}
inline unsigned __match_any_sync(unsigned mask, unsigned v) {
  emu_check(mask, "match_any");
  if (emu_self(mask)) return mask;
  unsigned long long all[32]; emu_exchange(v, all);
  unsigned r = 0; for (int i = 0; i < 32; ++i) if (all[i] == v) r |= 1u << i; return r;
}

// The templates' hardware hooks (templates/sgtopk/util/hardware.cuh), on the host.
#define SGTOPK_EMULATE 1
namespace sgtopk::hw {
inline unsigned short f16_bits(float x) { return emu_f16_bits(x); }
inline float f16_to_float(unsigned short h) { _Float16 x; std::memcpy(&x, &h, 2); return static_cast<float>(x); }
inline unsigned f16x2_bits(float a, float b) { return emu_f16_bits(a) | (static_cast<unsigned>(emu_f16_bits(b)) << 16); }
inline void prefetch_l2(const void*) {}
// The device's bulk prefetch faults on a misaligned address or size: so does this.
inline void prefetch_l2_bulk(const void* p, unsigned bytes) {
  if ((reinterpret_cast<unsigned long long>(p) & 15ull) != 0ull || bytes == 0u || bytes % 16u != 0u) {
    std::fprintf(stderr, "emulate: prefetch_l2_bulk(%p, %u): address and size must be nonzero multiples of 16\n", p, bytes);
    std::abort();
  }
}
inline unsigned atomic_add_acq_rel(unsigned* p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL); }
inline float load_l2(const float* p) { float v; __atomic_load(p, &v, __ATOMIC_SEQ_CST); return v; }
inline unsigned load_l2(const unsigned* p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
inline float approx_exp(float x) { return std::exp(x); }
inline unsigned round_half_up(float v) { return static_cast<unsigned>(std::floor(static_cast<double>(v) + 0.5)); }
inline unsigned long long round_half_up_u64(float v) {  // cvt.rmi: NaN is 0
  return v == v ? static_cast<unsigned long long>(std::floor(static_cast<double>(v) + 0.5)) : 0ull;
}
inline unsigned cluster_rank() { return emu_cta->rank; }
inline void cluster_sync() { emu_cta->cluster->bar->arrive_and_wait(); }
// The same offset in the shared memory of the cluster's CTA `rank`; an
// address outside this CTA's shared memory is a template error.
template <typename T>
inline T* peer_shared(T* p, unsigned rank) {
  const unsigned char* b = reinterpret_cast<const unsigned char*>(p);
  if (emu_cta->cluster == nullptr || rank >= emu_cta->cluster->size || b < emu_cta->shared ||
      b >= emu_cta->shared + sizeof(emu_shared)) {
    std::fprintf(stderr, "peer_shared: not a cluster's shared address, or rank %u out of the cluster\n", rank);
    std::abort();
  }
  return reinterpret_cast<T*>(emu_cta->cluster->ctas[rank]->shared + (b - emu_cta->shared));
}
}  // namespace sgtopk::hw
// The dynamic shared memory is the CTA's host buffer (emu_shared, or a
// cluster CTA's own); a function-local static is shared by the block's
// threads, so agents that use one run a CTA at a time.
#define SGTOPK_DYNAMIC_SHARED(name) unsigned char* name = emu_cta->shared
#define SGTOPK_BLOCK_SHARED(type, name) static type name
