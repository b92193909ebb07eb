// The bookkeeping of a verbs connection, apart from the verbs calls so it
// can be tested without a device.
//
// Credits: the sender may have at most `nslots` chunks written and not yet
// consumed; the receiver returns credits by writing its consumed count into
// the sender's credit word, not after every chunk but when a quarter of the
// ring (at least one slot) has been freed since the last return.
//
// Stripes: a chunk goes out as one RDMA write with immediate per queue pair;
// queue pairs complete independently, so a chunk is whole once every queue
// pair has delivered its piece of it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tutti {

class CreditWindow {
 public:
  explicit CreditWindow(uint64_t nslots) : nslots_(nslots) {}
  // Sender: may chunk `posted` go out, given the consumed count last seen?
  bool canPost(uint64_t posted, uint64_t consumed) const { return posted - consumed < nslots_; }
  // Receiver: should `consumed` be written back now?
  bool shouldReturn(uint64_t consumed, uint64_t returned) const {
    return consumed - returned >= std::max<uint64_t>(1, nslots_ / 4);
  }
  uint64_t nslots() const { return nslots_; }

 private:
  uint64_t nslots_;
};

// Piece `q` of `nqps` of a `bytes` chunk, cut on 4 KiB boundaries where it can.
inline size_t stripeStart(size_t bytes, int nqps, int q) {
  if (q >= nqps) return bytes;
  size_t per = (bytes / nqps + 4095) / 4096 * 4096;
  return std::min(bytes, per * q);
}

class StripeTracker {
 public:
  explicit StripeTracker(int nqps) : arrived_(nqps, 0) {}
  // Queue pair `q` delivered its piece of its next chunk.
  void arrived(int q) { ++arrived_[q]; }
  // Chunks every queue pair has delivered.
  uint64_t complete() const { return *std::min_element(arrived_.begin(), arrived_.end()); }

 private:
  std::vector<uint64_t> arrived_;
};

// Immediate data: a chunk's size, or (top bit set) a failure notice naming a rank.
constexpr uint32_t kNoticeImm = 0x80000000u;
inline bool isNoticeImm(uint32_t imm) { return (imm & kNoticeImm) != 0; }

}  // namespace tutti
