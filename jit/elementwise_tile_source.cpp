// The loop of the elementwise tile regime (templates/elementwise_tile.cuh):
// per tile, the staged operands come in along b into shared memory, every
// element is computed along a, and staged outputs go out along b. Each pass
// issues all of a thread's loads before the first use, as the strided loop
// does, so a block keeps TA x TB elements of each operand in flight.
#include <string>

#include "jit/elementwise_operands_text.h"
#include "jit/elementwise_source.h"

namespace jitops {
namespace {

struct TileLoop {
  const ElementwiseOperandsText& text;
  uint32_t staged_mask;

  bool staged(int k) const { return (staged_mask >> k) & 1; }
  bool output(int k) const { return k >= text.inputs; }
  std::string v(int k) const { return operand_name("v", k); }
  std::string tile(int k) const { return operand_name("t", k); }
  std::string element(int k, const char* at) const {
    return text.pointer(k) + "[o." + at + "(p, " + std::to_string(k) + ", a, b)]";
  }
  std::string load(int k) const { return " " + v(k) + "[j] = " + element(k, "at_clamped") + ";"; }

  // One unrolled pass over this thread's items of the tile, lanes along `fast`
  // ("TA": a, "TB": b): `body` for every item, `guarded` for those inside the
  // array. Loads take every item: one past the tile's end (a fitted tile, no
  // multiple of the block) reads a clamped duplicate rather than wait on a
  // predicate (TileOrigin::at_clamped); the other passes skip it.
  static std::string pass(const char* fast, const std::string& body, const std::string& guarded = "",
                          bool loads = false) {
    const bool along_a = std::string(fast) == "TA";
    std::string item = std::string("        jitops::tile_item<") + fast + ", THREADS>(j, " + (along_a ? "a, b" : "b, a") +
                       ");\n" + (body.empty() ? "" : "       " + body + "\n") +
                       (guarded.empty() ? "" : "        if (o.inside(a, b)) {" + guarded + " }\n");
    if (!loads) item = "        if (jitops::tile_item_in<TA * TB, THREADS>(j)) {\n" + item + "        }\n";
    return "#pragma unroll\n      for (int j = 0; j < ITEMS; ++j) {\n        int a, b;\n" + item + "      }\n";
  }

  // Everything the tile reads, loaded before the first use (staged operands
  // along b, then the others along a), the staged ones kept in their tiles;
  // then every element along a: outputs written to memory, or to their tiles
  // when staged.
  std::string load_and_compute() const {
    std::string decl, loads, staged_loads, keep, fresh, kept, stores;
    for (int k = 0; k < text.operands; ++k) {
      if (text.scalar(k)) continue;
      if (text.reads(k)) {
        decl += "      " + text.types[size_t(k)] + " " + v(k) + "[ITEMS];\n";
        (staged(k) ? staged_loads : loads) += load(k);
        if (staged(k)) keep += " " + tile(k) + "[a][b] = " + v(k) + "[j];";
      }
      if (!output(k)) continue;
      if (!text.reads(k)) fresh += " " + text.types[size_t(k)] + " " + v(k) + "_{};";
      const std::string value = text.reads(k) ? v(k) + "[j]" : v(k) + "_";
      if (!staged(k))
        stores += " " + element(k, "at") + " = " + value + ";";
      else if (!text.reads(k))  // a staged output read from memory is computed in its tile
        kept += " " + tile(k) + "[a][b] = " + value + ";";
    }
    const std::string call = text.call([&](int k) {
      if (output(k) && !text.reads(k)) return v(k) + "_";
      return staged(k) ? tile(k) + "[a][b]" : v(k) + "[j]";
    });
    std::string b = "    {\n" + decl;
    if (!staged_loads.empty()) b += pass("TB", staged_loads, "", true);
    if (!loads.empty()) b += pass("TA", loads, "", true);
    // ptxas sinks loads toward their use, below the first store to shared
    // memory, which waits for its own load: a warp fence keeps every load of
    // the tile issued before any of them is waited on.
    if (!keep.empty()) b += "      __syncwarp();\n" + pass("TB", keep) + "      __syncthreads();\n";
    return b + pass("TA", fresh + " " + call + kept, stores) + "    }\n";
  }

  // Staged outputs, from their tiles to memory along b.
  std::string store_staged() const {
    std::string stores;
    for (int k = text.inputs; k < text.operands; ++k)
      if (staged(k)) stores += " " + element(k, "at") + " = " + tile(k) + "[a][b];";
    if (stores.empty()) return "";
    return "    __syncthreads();\n    {\n" + pass("TB", "", stores) + "    }\n";
  }
};

}  // namespace

std::string tiled_elementwise_loop(const KernelSpec& s, const ElementwiseOperandsText& text) {
  using F = ElementwiseSpecFields;
  const auto& f = s.fields;
  const TileLoop loop{text, uint32_t(f[F::kStagedMask])};
  const std::string bits = std::to_string(f[F::kOffsetBits]), operands = std::to_string(text.operands);
  std::string src = "  typedef jitops::OffsetTypes<" + bits + ">::Linear L;\n"
                    "  constexpr int TA = " + std::to_string(f[F::kTileA]) + ", TB = " + std::to_string(f[F::kTileB]) +
                    ", THREADS = " + std::to_string(f[F::kMaxThreads]) + ",\n"
                    "                ITEMS = (TA * TB + THREADS - 1) / THREADS;\n";
  for (int k = 0; k < text.operands; ++k)
    if (loop.staged(k)) {
      const std::string& t = text.types[size_t(k)];
      src += "  __shared__ " + t + " " + loop.tile(k) + "[TA][jitops::staged_tile_pitch(sizeof(" + t + "), TB)];\n";
    }
  src += "  for (L tile = blockIdx.x; tile < p.tiles; tile += gridDim.x) {\n"
         "    const jitops::TileOrigin<" + bits + ", " + operands + "> o = jitops::tile_origin<TA, TB, " + operands +
         (f[F::kTileBatchFirst] ? ", true" : "") + ">(p, tile);\n";
  src += loop.load_and_compute() + loop.store_staged();
  src += "    __syncthreads();  // the next tile reuses the shared tiles\n  }\n";
  return src;
}

}  // namespace jitops
