// Which op launched a kernel: carried in each parameter block so that an
// out-of-range index found on the device can be reported with the op's name.
#pragma once
#include <string>

namespace jitops {

enum OpCode : int {
  kOpIndexSelect = 1, kOpTake = 2, kOpGather = 3,
  kOpIndexAdd = 4, kOpIndexCopy = 5, kOpIndexFill = 6, kOpScatterAdd = 7, kOpScatterReduce = 8, kOpHistc = 9,
  kOpUserBase = 1000,  // users' kernels (jitops::check_index): one code per kernel name, from here up
};

// The code of a user kernel called `name` (the same name, the same code), and back.
int user_op_code(const std::string& name);
const char* user_op_name(int op_code);

inline const char* op_name(int op_code) {
  switch (op_code) {
    case kOpIndexSelect: return "index_select";
    case kOpTake: return "take";
    case kOpGather: return "gather";
    case kOpIndexAdd: return "index_add_";
    case kOpIndexCopy: return "index_copy_";
    case kOpIndexFill: return "index_fill_";
    case kOpScatterAdd: return "scatter_add_";
    case kOpScatterReduce: return "scatter_reduce_";
    case kOpHistc: return "histc";
  }
  if (op_code >= kOpUserBase) return user_op_name(op_code);
  return "a jitops op";
}

}  // namespace jitops
