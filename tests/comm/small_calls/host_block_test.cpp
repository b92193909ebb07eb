// The host block's rings: which ring a chunk lies in, how far ahead of its
// readers a rank may run with it, and that the chunks a ring holds at once
// never share a byte (with each other or with another ring's).
#include "src/comm/small_calls/host_block.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

namespace tutti {
namespace {

// A block of n ranks as hostBlockShape shapes it, its name already gone.
std::unique_ptr<HostBlock> makeBlock(int n, uint64_t magic) {
  auto block = HostBlock::create(HostBlock::nameFor(getpid(), magic), n, hostBlockShape(n));
  EXPECT_TRUE(block.ok()) << block.status().message();
  if (!block.ok()) return nullptr;
  (*block)->unlink();
  return std::move(*block);
}

// A 4-rank 128-byte broadcast on 2 cores took twice a 64-byte one's time
// while chunks past a header's inline bytes had a ring of 16: they now run
// as far ahead as inline ones, up to a small slot.
TEST(HostBlock, ChunksUpToASmallSlotRunAsFarAheadAsInlineOnes) {
  for (int n : {2, 4, 64}) {
    const HostBlockShape shape = hostBlockShape(n);
    const std::unique_ptr<HostBlock> block = makeBlock(n, 0x7e57b10c00ull + n);
    ASSERT_TRUE(block);
    const HostBlock& b = *block;
    EXPECT_EQ(b.reach(8), static_cast<uint64_t>(shape.depth)) << n;
    EXPECT_EQ(b.reach(HostBlock::kInlineBytes + 1), static_cast<uint64_t>(shape.depth)) << n;
    EXPECT_EQ(b.reach(HostBlock::kSmallBytes), static_cast<uint64_t>(shape.depth)) << n;
    EXPECT_EQ(b.reach(HostBlock::kSmallBytes + 1), static_cast<uint64_t>(shape.dataDepth)) << n;
    EXPECT_LE(b.reach(shape.slotBytes), b.reach(HostBlock::kSmallBytes)) << n;
  }
}

TEST(HostBlock, ChunksLiveAtOnceNeverShareAByte) {
  for (int n : {2, 3, 64}) {
    const HostBlockShape shape = hostBlockShape(n);
    const std::unique_ptr<HostBlock> block = makeBlock(n, 0x7e57b10d00ull + n);
    ASSERT_TRUE(block);
    const HostBlock& b = *block;
    // Every rank's chunk of every call a ring holds at once (a window of
    // reach calls, from an arbitrary call on), for a chunk of each ring.
    std::vector<std::pair<const char*, const char*>> chunks;
    // Each ring's largest chunk: inline, small slot, slot's data.
    for (size_t bytes : {HostBlock::kInlineBytes, HostBlock::kSmallBytes, shape.slotBytes})
      for (uint64_t call = 1000; call < 1000 + b.reach(bytes); ++call)
        for (int r = 0; r < n; ++r) {
          char* at = b.data(r, call, bytes);
          std::memset(at, 0x5a, bytes);  // inside the mapping, or the test dies here
          chunks.push_back({at, at + bytes});
        }
    std::sort(chunks.begin(), chunks.end());
    for (size_t i = 1; i < chunks.size(); ++i)
      ASSERT_LE(chunks[i - 1].second, chunks[i].first) << n << " ranks: chunk " << i << " overlaps the one before";
    // Headers (call numbers, tags) lie apart from every chunk but their own inline one.
    for (uint64_t call = 1000; call < 1000 + b.reach(8); ++call)
      for (int r = 0; r < n; ++r) {
        const char* header = reinterpret_cast<const char*>(&b.slot(r, call));
        const char* inlineChunk = b.data(r, call, 8);
        for (const auto& c : chunks) {
          if (c.first == inlineChunk) continue;
          ASSERT_TRUE(header + sizeof(HostBlock::SlotHeader) <= c.first || c.second <= header) << n << " ranks";
        }
      }
  }
}

}  // namespace
}  // namespace tutti
