// A checkpoint's bytes (io.h's Source): files mapped or read into 2 MiB pages (Residency), caller
// memory, and the chunks loadInto converts weights into (WeightArena).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>

#include "io/io.h"

namespace radix::io {
// ---------------------------------------------------------------------------------------------
// Sources

namespace {
struct Mapping {
  void* address = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (address) ::munmap(address, size);
  }
};

constexpr size_t kHugePage = size_t(2) << 20;

/// MemAvailable of /proc/meminfo in bytes; 0 when unknown.
size_t availableMemory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  size_t kb = 0;
  while (in >> key >> kb) {
    if (key == "MemAvailable:") return kb * 1024;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

bool shouldCopy(Residency residency, size_t size) {
  if (residency != Residency::automatic) return residency == Residency::copied;
  return size >= 2 * kHugePage && size <= availableMemory() / 2;
}

/// Anonymous read-write memory of at least `size` bytes, in whole 2 MiB pages, 2 MiB-aligned and
/// madvised to be backed by huge pages; null (errno set) when it cannot be had.
std::shared_ptr<Mapping> hugePageRegion(size_t size) {
  const size_t rounded = (std::max<size_t>(size, 1) + kHugePage - 1) / kHugePage * kHugePage;
  void* reserved = ::mmap(nullptr, rounded + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (reserved == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(reserved);
  const uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start) ::munmap(reserved, aligned - start);
  if (const size_t tail = start + rounded + kHugePage - (aligned + rounded)) ::munmap(reinterpret_cast<void*>(aligned + rounded), tail);
  auto mapping = std::make_shared<Mapping>();
  mapping->address = reinterpret_cast<void*>(aligned);
  mapping->size = rounded;
  ::madvise(mapping->address, rounded, MADV_HUGEPAGE);
  return mapping;
}

/// The file's `size` bytes read into anonymous memory, 2 MiB-aligned and madvised to 2 MiB pages,
/// then read-only; null (errno set) when the memory cannot be had. Throws on a failed read.
std::shared_ptr<Mapping> readIntoMemory(int fd, size_t size, const std::string& where) {
  std::shared_ptr<Mapping> mapping = hugePageRegion(size);
  if (!mapping) return nullptr;
  const size_t rounded = mapping->size;
  auto* out = static_cast<char*>(mapping->address);
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::pread(fd, out + done, std::min<size_t>(size - done, size_t(1) << 30), static_cast<off_t>(done));
    const int e = errno;
    if (n < 0 && e == EINTR) continue;
    if (n < 0) throw Error(where + "cannot read at byte " + std::to_string(done) + ": " + std::strerror(e));
    if (n == 0) throw Error(where + "ended at byte " + std::to_string(done) + " of " + std::to_string(size) + " while being read (changed meanwhile?)");
    done += static_cast<size_t>(n);
  }
  ::mprotect(mapping->address, rounded, PROT_READ);
  return mapping;
}
}  // namespace

Source mapFile(const std::string& path, const std::string& prefix, Residency residency) {
  const std::string where = "[" + prefix + "] " + path + ": ";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(where + "cannot open: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    throw Error(where + "cannot stat: " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) throw Error(where + "not a regular file");
  const auto size = static_cast<size_t>(st.st_size);
  std::shared_ptr<Mapping> mapping;
  bool copied = false;
  if (size > 0 && shouldCopy(residency, size)) {
    mapping = readIntoMemory(fd, size, where);
    if (!mapping && residency == Residency::copied) {
      const int e = errno;
      throw Error(where + "cannot allocate " + std::to_string(size) + " bytes to read it into: " + std::strerror(e));
    }
    copied = mapping != nullptr;
  }
  if (!mapping) {
    mapping = std::make_shared<Mapping>();
    if (size > 0) {
      // MAP_PRIVATE and read-only: nothing can write the file through a Tensor (a donated external
      // buffer is copied first, see exe.cpp).
      void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        const int e = errno;
        throw Error(where + "cannot mmap " + std::to_string(size) + " bytes: " + std::strerror(e));
      }
      mapping->address = p;
      mapping->size = size;
    }
  }
  Source s;
  s.data = static_cast<const uint8_t*>(mapping->address);
  s.size = size;
  s.owner = std::move(mapping);
  s.label = path;
  s.copied = copied;
  return s;
}

WeightArena::Block WeightArena::take(size_t bytes) {
  bytes = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  if (!chunk_ || size_ - used_ < bytes) {
    std::shared_ptr<Mapping> chunk = hugePageRegion(std::max(kChunkBytes, bytes));
    if (!chunk) return {};
    base_ = static_cast<uint8_t*>(chunk->address);
    size_ = chunk->size;
    used_ = 0;
    chunk_ = std::move(chunk);
  }
  Block b{base_ + used_, chunk_};
  used_ += bytes;
  return b;
}

WeightArena::Block ownedBlock(size_t bytes) {
  // Owned by the tensor alone (no zero fill, no second copy).
  std::shared_ptr<uint8_t> owned(static_cast<uint8_t*>(std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64))), std::free);
  uint8_t* data = owned.get();
  return {data, std::move(owned)};
}

Source memorySource(std::span<const uint8_t> bytes, std::string label) {
  Source s;
  s.data = bytes.data();
  s.size = bytes.size();
  s.label = std::move(label);
  return s;
}

}  // namespace radix::io
