// Compares edgecv::ApplyLookup (its AVX-512 VBMI path where the CPU has one) with a plain table[x] loop: random
// tables over random bytes, every length from 0 to 300 at unaligned offsets, into another buffer and in place,
// checking that nothing past the end is written. Prints one JSON line; exits 1 on any difference. Built and run
// by test/uint8-lookup.test.ts (not part of the addon).
#include <cstdio>
#include <random>
#include <vector>

#include "ops/uint8_lookup.h"

int main() {
  std::mt19937 random(25);
  int cases = 0, mismatches = 0;
  for (int round = 0; round < 4; ++round) {
    edgecv::LookupTable table{};
    for (uint8_t& entry : table) entry = static_cast<uint8_t>(random());
    for (size_t n = 0; n <= 300; ++n) {
      for (size_t offset : {0, 1, 7, 63}) {
        std::vector<uint8_t> in(n + offset + 64), out(n + offset + 64, 0xA5);
        for (uint8_t& v : in) v = static_cast<uint8_t>(random());
        std::vector<uint8_t> inPlace = in;
        edgecv::ApplyLookup(table, in.data() + offset, out.data() + offset, n);
        edgecv::ApplyLookup(table, inPlace.data() + offset, inPlace.data() + offset, n);
        bool same = true;
        for (size_t i = 0; i < out.size(); ++i) {
          const bool inside = i >= offset && i < offset + n;
          same = same && out[i] == (inside ? table[in[i]] : 0xA5) && inPlace[i] == (inside ? table[in[i]] : in[i]);
        }
        ++cases;
        if (!same && ++mismatches <= 5) std::fprintf(stderr, "differs: n %zu offset %zu\n", n, offset);
      }
    }
  }
  std::printf("{\"cases\":%d,\"mismatches\":%d,\"vectorized\":%s}\n", cases, mismatches,
              edgecv::LookupIsVectorized() ? "true" : "false");
  return mismatches == 0 ? 0 : 1;
}
