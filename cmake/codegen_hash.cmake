# Writes OUT, a header defining RADIX_CODEGEN_HASH: a hash of the contents of the files listed in
# LIST (one path a line), the code generator's and the compiled-code ABI's sources. It enters the
# compile cache's key (src/compiler/codegen_hash.cpp), so that an entry written by another build of
# them is compiled again instead of loaded. OUT is rewritten only when the hash changes.
# cmake -DLIST=files.txt -DOUT=codegen_hash.h -P codegen_hash.cmake
file(STRINGS "${LIST}" files)
set(all "")
foreach(f IN LISTS files)
  file(SHA256 "${f}" h)
  string(APPEND all "${h}")
endforeach()
string(SHA256 hash "${all}")
string(SUBSTRING "${hash}" 0 16 hash)
set(content "#pragma once\n#define RADIX_CODEGEN_HASH \"${hash}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL content)
  file(WRITE "${OUT}" "${content}")
endif()
