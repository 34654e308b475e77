// The hash of the code generator's sources (cmake/codegen_hash.cmake), alone in its TU: a change
// to any of them recompiles only this file.
#include "codegen_hash.h"

namespace radix::detail {

const char* codegenHash() { return RADIX_CODEGEN_HASH; }

}  // namespace radix::detail
