#include "io/mapped_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/out_of_memory.h"
#include "io/file_io.h"
#include "io/system_error.h"

namespace semmap {
namespace internal {
namespace {

// The ranges the SIGBUS handler may repair. Lock-free atomics only: the
// handler reads them asynchronously.
struct GuardSlot {
  std::atomic<std::uintptr_t> begin{0};
  std::atomic<std::uintptr_t> end{0};
  std::atomic<bool> faulted{false};
};
constexpr int kGuardSlots = 64;
GuardSlot g_slots[kGuardSlots];
struct sigaction g_previous_sigbus;

// A fault means the file now ends before the faulting page, so every page
// from there to the end of the mapping is gone too: one mapping of zeros
// replaces them all. Mapping page by page instead would need one mapping
// per scattered read and run out of them (vm.max_map_count) on a large
// file truncated early.
void OnSigbus(int signal, siginfo_t* info, void* context) {
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (GuardSlot& slot : g_slots) {
    const std::uintptr_t end = slot.end.load();
    if (address < slot.begin.load() || address >= end) continue;
    const auto page_size = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const std::uintptr_t first = address & ~(page_size - 1);
    const std::uintptr_t last = (end + page_size - 1) & ~(page_size - 1);
    if (::mmap(reinterpret_cast<void*>(first), last - first, PROT_READ,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
      slot.faulted.store(true);
      return;  // the read is retried and sees zeros
    }
  }
  // Not a guarded page: what would have happened without semmap.
  if ((g_previous_sigbus.sa_flags & SA_SIGINFO) != 0) {
    g_previous_sigbus.sa_sigaction(signal, info, context);
  } else if (g_previous_sigbus.sa_handler != SIG_DFL && g_previous_sigbus.sa_handler != SIG_IGN) {
    g_previous_sigbus.sa_handler(signal);
  } else {
    ::signal(SIGBUS, SIG_DFL);  // the faulting read is retried and kills
  }
}

void InstallSigbusHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action;
    std::memset(&action, 0, sizeof action);
    action.sa_sigaction = &OnSigbus;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, &g_previous_sigbus);
  });
}

// Claims a free slot for [data, data + size); -1 when all are taken.
int ClaimSlot(const void* data, std::size_t size) {
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  for (int i = 0; i < kGuardSlots; ++i) {
    std::uintptr_t expected = 0;
    if (g_slots[i].begin.compare_exchange_strong(expected, begin)) {
      g_slots[i].faulted.store(false);
      g_slots[i].end.store(begin + size);
      return i;
    }
  }
  return -1;
}

void ReleaseSlot(int slot) {
  g_slots[slot].end.store(0);
  g_slots[slot].begin.store(0);
}

}  // namespace

absl::StatusOr<MappedFile> MappedFile::Open(const std::string& path,
                                            std::uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO with no writer must not hang; anything but a
  // regular file is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      return WithSystemError(absl::NotFoundError(absl::StrCat(path, ": no such file")), err);
    }
    return OsError(path, "cannot open", err);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return OsError(path, "", err);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory, not a file"));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a regular file (a FIFO, socket or device)"));
  }
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": file is ", st.st_size, " bytes, above the limit of ", max_bytes, " bytes"));
  }
  const std::size_t size = static_cast<std::size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return MappedFile(std::string());
  }
  InstallSigbusHandler();
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  if (data == MAP_FAILED) {
    ::close(fd);
    // No address space left for the file (RLIMIT_AS, a 32-bit process):
    // worded as the loaders word running out of memory.
    if (err == ENOMEM) return OutOfMemory(path, absl::StrCat("mapping its ", size, " bytes"));
    return OsError(path, "cannot map", err);
  }
  const int slot = ClaimSlot(data, size);
  if (slot < 0) {
    ::close(fd);
    ::munmap(data, size);
    absl::StatusOr<std::string> bytes = ReadFile(path, max_bytes);
    if (!bytes.ok()) return bytes.status();
    return MappedFile(*std::move(bytes));
  }
  // The descriptor stays open: truncated() asks it for the file's size.
  MappedFile file(data, size, slot, fd);
  file.device_ = static_cast<std::uint64_t>(st.st_dev);
  file.inode_ = static_cast<std::uint64_t>(st.st_ino);
  return file;
}

// A fault says the file ends before a page that was read; a file cut
// inside its last page (or past every page read) faults nowhere, so its
// size is asked too.
bool MappedFile::IsFile(const std::string& path) const {
  struct stat st;
  return data_ != nullptr && inode_ != 0 && ::stat(path.c_str(), &st) == 0 &&
         static_cast<std::uint64_t>(st.st_dev) == device_ &&
         static_cast<std::uint64_t>(st.st_ino) == inode_;
}

bool MappedFile::truncated() const {
  if (slot_ < 0) return false;
  if (g_slots[slot_].faulted.load()) return true;
  struct stat st;
  return fd_ >= 0 && ::fstat(fd_, &st) == 0 && static_cast<std::uint64_t>(st.st_size) < size_;
}

void MappedFile::Release(std::size_t begin, std::size_t end) const {
  if (data_ == nullptr) return;
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t first = (std::min(begin, size_) + page - 1) / page * page;
  // The mapping starts on a page and ends on one (its last page partly
  // past the file), so offsets and addresses align alike; a refusal only
  // leaves the pages resident.
  const std::size_t last = end >= size_ ? (size_ + page - 1) / page * page : end / page * page;
  if (first < last) ::madvise(static_cast<char*>(data_) + first, last - first, MADV_DONTNEED);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      slot_(std::exchange(other.slot_, -1)),
      fd_(std::exchange(other.fd_, -1)),
      copy_(std::move(other.copy_)),
      device_(std::exchange(other.device_, 0)),
      inode_(std::exchange(other.inode_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    Unmap();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    slot_ = std::exchange(other.slot_, -1);
    fd_ = std::exchange(other.fd_, -1);
    copy_ = std::move(other.copy_);
    device_ = std::exchange(other.device_, 0);
    inode_ = std::exchange(other.inode_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() { Unmap(); }

void MappedFile::Unmap() {
  if (data_ != nullptr) ::munmap(data_, size_);
  if (slot_ >= 0) ReleaseSlot(slot_);
  if (fd_ >= 0) ::close(fd_);
  data_ = nullptr;
  size_ = 0;
  slot_ = -1;
  fd_ = -1;
  copy_.clear();
  device_ = inode_ = 0;
}

absl::Status NotTruncated(const MappedFile& file, absl::string_view path) {
  if (!file.truncated()) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(
      path, ": the file shrank while it was read (truncated by another process?); nothing "
            "written"));
}

}  // namespace internal
}  // namespace semmap
