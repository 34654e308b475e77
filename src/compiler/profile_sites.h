#pragma once
// Per-op profile instrumentation of a lowered module (docs/profiling.md).
#include <string>
#include <vector>

#include "mlir/IR/BuiltinOps.h"
#include "runtime/cache.h"
#include "runtime/profiler.h"

namespace radix::detail {

/// Profiled objects export their site table (profileSitesText) and its length under
/// kProfileSitesSymbol and kProfileSitesSizeSymbol (runtime/cache.h).

/// Wraps each kernel-to-be, loop nest and copy in radix_profile_begin/end(id); the sites by id.
std::vector<ProfileSite> instrumentProfile(mlir::ModuleOp module);
/// Adds the site table `text` to the module as the two exported globals above.
void addProfileSites(mlir::ModuleOp module, const std::string& text);

}  // namespace radix::detail
