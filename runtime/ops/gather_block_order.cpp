#include "runtime/ops/gather_block_order.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace jitops {
namespace {

int64_t x_span_bytes(const GatherProblem& p) {
  const int64_t axis_extent = std::max<int64_t>(0, p.axis_size - 1) * std::abs(p.axis_stride);
  return (p.space.max_offset(kX) + axis_extent + 1) * p.element_bytes;
}

// Rows first where each row is one index value and the index is the same along
// it (a row is one slice of x: index_select, take along an outer dim), the grid
// spans more than one wave and has 2 rows of blocks or more, and x more than a
// quarter of L2 (a smaller x stays in L2 in any order), so that blocks running
// together share what they read, when either
// - x's rows lie closer together than its columns (a transposed x): the rows
//   of one column range read neighbouring addresses; or
// - the index has more rows than x's indexed dim, so that values repeat, over
//   slices of 8 blocks or more: the repeats of a value find its slice's column
//   range in L2 (97 random rows of 32, 2.6 MB each: DRAM reads 220 -> 79 MB,
//   as PyTorch's).
// With 2 or 3 rows of blocks, columns first read each value's slice once a
// row of blocks. Over the 28 sweep plans of seeds 100-909 with more values
// than x's indexed dim and 2 or 3 rows of blocks (H100, NOTES 94), rows first
// ran 1.10x faster in geomean, 17 by 2% to 1.90x (int64 (32x2097152)
// transposed, 47 values: 1715 -> 905 us; seed 906's complex128, 54 values of
// 32: 542 -> 461 us), 5 slower by 3% to 6%: sorted values, whose repeats meet
// in one row of blocks anyway (seed 722's float16, 73.2 -> 77.3 us, still
// 1.10x PyTorch's), and one int8. The 4 transposed x's with fewer values
// than rows: 1.15x to 1.57x faster (seed 507's uint16, 199.5 -> 127.3 us).
bool slices_rows_first(const GatherProblem& p, const LaunchShape& shape, const DeviceInfo& device, int threads) {
  const IterationSpace& s = p.space;
  if (s.strides[kIndex][0] == 0 || s.strides[kIndex][1] != 0 || shape.grid[0] < 2 || shape.grid[1] < 2) return false;
  const int64_t wave = int64_t(device.sm_count) * std::max(1, device.max_threads_per_sm / threads);
  if (int64_t(shape.grid[0]) * shape.grid[1] <= wave) return false;
  if (x_span_bytes(p) < device.l2_bytes / 4) return false;
  const bool transposed = std::abs(p.axis_stride) < std::abs(s.strides[kX][1]);
  const bool repeats = s.sizes[0] > p.axis_size && shape.grid[0] >= 8;
  return transposed || repeats;
}

// torch.gather's full index along the rows (the index varies along both dims,
// x does not move along the rows): out[r][c] = x[index[r][c]][c]. Each load
// names its own 32-byte sector of x, and the loads of one column range's
// sectors over all rows meet again only if those rows run together. Modelled
// for index values drawn at random over the axis (the planner never sees
// them): with D draws a sector column over an axis of A rows, rows first reads
// A (1 - e^(-D/A)) sectors a column from DRAM; columns first reads one a load,
// less what L2 keeps of x. Bands where that saves a tenth or more of the bytes
// moved (index and output counted), bands whose x fits a sixteenth of L2.
// Measured (H100, NOTES 83) over the 122 such plans of sweep seeds 100-704
// past half a wave: random values 1.67x over 29 plans (seed 270's float32
// 3629 -> 1127 us), sorted or repeated ones 0.96x over 27 (a stream of rows
// 2 KB apart costs the output's and index's DRAM pages; seed 556's 8 repeated
// values 288 -> 373 us, the least).
int full_index_band(const GatherProblem& p, const LaunchShape& shape, const DeviceInfo& device) {
  const IterationSpace& s = p.space;
  if (s.strides[kX][0] != 0 || s.strides[kX][1] == 0 || s.strides[kIndex][0] == 0 || s.strides[kIndex][1] == 0 ||
      shape.grid[0] < 2 || shape.grid[1] < 2 || p.axis_size < 1)
    return 0;
  const double rows = double(s.sizes[0]), cols = double(s.sizes[1]), axis = double(p.axis_size);
  const int64_t column_bytes = std::abs(s.strides[kX][1]) * p.element_bytes;  // from one column of x to the next
  const int64_t columns_a_sector = column_bytes < 32 ? std::max<int64_t>(1, 32 / column_bytes) : 1;
  const double draws = rows * double(columns_a_sector);
  const double distinct = axis * -std::expm1(-draws / axis);
  const double x_bytes = double(x_span_bytes(p));
  const double kept = std::min(1.0, double(device.l2_bytes / 2) / x_bytes) * std::max(0.0, 1.0 - distinct / draws);
  const double columns_first = rows * cols * 32.0 * (1.0 - kept);
  const double banded = cols / double(columns_a_sector) * distinct * 32.0;
  const double streams = double(s.max_offset(kIndex) + 1) * p.index_bytes + rows * cols * p.element_bytes;
  if (columns_first + streams < 1.1 * (banded + streams)) return 0;
  const int64_t range_column_bytes = std::min<int64_t>(32, std::max<int64_t>(p.element_bytes, column_bytes));
  const int64_t range_bytes = p.axis_size * int64_t(shape.block[0]) * range_column_bytes;  // x's rows over a range
  return int(std::clamp<int64_t>(device.l2_bytes / 16 / std::max<int64_t>(1, range_bytes), 1, shape.grid[0]));
}

}  // namespace

// With fewer y blocks than row groups, a block walks row groups a grid's
// height apart, and the blocks in flight, started at different times, are
// at every step of that walk: x's rows of all those groups are read
// together. Where the index draws each of a row's sectors once or more and
// that span passes half of L2, one row group a block keeps the blocks in
// flight (columns first) on one or two groups. Seed 713's index_select of
// float32 (79x524288) along dim 1 through 700128 random values, 6 y blocks
// of 4 groups of 4 rows: DRAM reads 774 -> 246 MB, 588 -> 478 us (PyTorch
// 488; ncu, H100). Each pass reads the index again, so it must stay in L2:
// an expanded index of 30 MB over 2 passes (seed 478) went 124.5 -> 156 us.
// Measured over 16 plans where 6 meet it (NOTES 87).
unsigned gather_row_passes(const GatherProblem& p, LaunchShape& shape, const DeviceInfo& device) {
  const IterationSpace& s = p.space;
  // torch.gather's full index along x's inner axis (x moves along the rows, not the columns): each row reads
  // its own index values once, in any order of passes, so the index need not stay in L2. The 15 such sweep
  // plans of seeds 100-1900 (H100, two builds, NOTES 102): 1.33x in geomean, none slower; random values over
  // rows of 2-24 MB up to 2.37x (seed 1838's float32 (153x698389) by (139x798319) 2555 -> 1080 us, PyTorch
  // 1035; seed 1215's int16 1549 -> 675).
  const bool full_index = s.strides[kIndex][0] != 0 && s.strides[kX][0] != 0 && s.strides[kX][1] == 0;
  if (p.flat || shape.dims != 2 || (s.strides[kIndex][0] != 0 && !full_index) || p.axis_size < 1) return 0;
  if (shape.grid[0] < unsigned(2 * device.sm_count)) return 0;  // the columns alone fill the GPU twice over
  const int64_t group_rows = int64_t(shape.block[1]) * shape.unroll;
  const int64_t groups = (s.sizes[0] + group_rows - 1) / group_rows;
  const int64_t walked = (groups + shape.grid[1] - 1) / shape.grid[1];  // row groups a y block walks
  if (walked < 2) return 0;
  const int64_t element_span = std::clamp<int64_t>(std::abs(p.axis_stride) * p.element_bytes, p.element_bytes, 32);
  const int64_t row_bytes = p.axis_size * element_span;   // the sectors of one row the index may name
  if (s.sizes[1] * 32 < row_bytes) return 0;              // fewer draws than sectors: little to share
  if (walked * group_rows * row_bytes <= device.l2_bytes / 2) return 0;
  const int64_t index_bytes = full_index ? 0 : (s.max_offset(kIndex) + 1) * p.index_bytes;
  if (index_bytes > device.l2_bytes / 4) return 0;
  // A group's own rows, with the index, must fit as well, where x's rows lie
  // apart (a sector or more): fewer rows a thread (each still loading its
  // index value once for its rows) until they do. Seed 1819's int16
  // index_select of (16x6223695) by 2456804 random values took groups of 4
  // rows of 12.4 MB, the whole L2: 698 -> 387 us (PyTorch 419). Rows that
  // interleave (a transposed x) share their sectors, and a thread's rows read
  // them at once: split, float64 (13x2097152) lost 494 -> 1145 us (NOTES 100).
  const bool rows_apart = std::abs(s.strides[kX][0]) * p.element_bytes >= 32;
  while (rows_apart && shape.unroll > 1 &&
         int64_t(shape.block[1]) * shape.unroll * row_bytes + index_bytes > device.l2_bytes / 2)
    shape.unroll /= 2;
  return gather_row_groups(p, shape);
}

GatherBlockOrder gather_block_order(const GatherProblem& p, const LaunchShape& shape, const DeviceInfo& device,
                                    int threads) {
  GatherBlockOrder order;
  if (p.flat || shape.dims != 2) return order;
  if (slices_rows_first(p, shape, device, threads)) {
    order.band = 1;
    order.regime = "2-D, rows first";
    // Rows first, a block walking several row groups reads its slices' column range at several times, while
    // the blocks of one range over all groups, running together, read each repeated slice once from DRAM and
    // write every row's range at once, as PyTorch's index-minor walk does. Over the 127 rows-first plans of
    // sweep seeds 100-909 (H100, NOTES 94), by the unit moved: 8- and 16-byte units 1.03x and 1.01x in
    // geomean (87 plans, none below 0.98x; seed 509's complex128, 416 random values of 105, 561 -> 491 us,
    // 0.87x -> 0.99x PyTorch; seed 906's 457 -> 425 us), while 1- to 4-byte units, a block's row range 1 KB or
    // less, lost 0.90x to 0.97x in geomean (40 plans, down to 0.36x): too little work a block.
    order.row_group_a_block = p.element_bytes >= 8;
  } else if ((order.band = full_index_band(p, shape, device)) > 0) {
    order.regime = "2-D, rows first in bands of column ranges";
  }
  return order;
}

unsigned gather_row_groups(const GatherProblem& p, const LaunchShape& shape) {
  const int64_t group_rows = int64_t(shape.block[1]) * shape.unroll;
  return unsigned(std::min<int64_t>(65535, (p.space.sizes[0] + group_rows - 1) / group_rows));
}

}  // namespace jitops
