#include "transport/shm/segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <cstring>
#include <new>

#include "src/common/process_watch.h"

namespace tutti {

static_assert(sizeof(ShmControl) <= 4096, "control block must fit the first page");

namespace {

// The pid namespace's inode: pids mean something only within one.
std::string pidNamespace() {
  struct stat st {};
  if (stat("/proc/self/ns/pid", &st) != 0) return "0";
  return std::to_string(static_cast<unsigned long>(st.st_ino));
}

}  // namespace

std::string ShmSegment::nameFor(uint64_t commMagic, int rank, unsigned connectionId) {
  return nameFor(static_cast<int>(getpid()), commMagic, rank, connectionId);
}

std::string ShmSegment::nameFor(int pid, uint64_t commMagic, int rank, unsigned connectionId) {
  char name[96];
  snprintf(name, sizeof(name), "/tutti-%s-%d-%016" PRIx64 "-%d-%u", pidNamespace().c_str(), pid,
           commMagic, rank, connectionId);
  return name;
}

namespace {

// Exited, or a zombie its parent has not reaped yet (a launcher's child).
bool gone(long pid) { return pid > 0 && processState(static_cast<int>(pid)) == ProcessState::kGone; }

// Unlinks this pid namespace's segments whose creator `dead` says is gone.
template <typename Dead>
void removeNamesOf(Dead dead) {
  const std::string prefix = "tutti-" + pidNamespace() + "-";
  DIR* dir = opendir("/dev/shm");
  if (!dir) return;
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name.rfind(prefix, 0) != 0) continue;
    if (dead(std::strtol(name.c_str() + prefix.size(), nullptr, 10))) shm_unlink(("/" + name).c_str());
  }
  closedir(dir);
}

}  // namespace

void ShmSegment::removeOrphans() {
  static std::once_flag once;
  std::call_once(once, [] { removeNamesOf(gone); });
}

void ShmSegment::removeNamesOfDeadProcess(int pid) {
  if (gone(pid)) removeNamesOf([pid](long creator) { return creator == pid; });
}

ShmSegment::~ShmSegment() {
  if (base_) munmap(base_, bytes_);
  unlink();
}

void ShmSegment::unlink() {
  if (linked_) shm_unlink(name_.c_str());
  linked_ = false;
}

Status ShmSegment::map(int fd, size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return ErrnoError("mmap of shared segment " + name_, errno);
  madvise(p, bytes, MADV_HUGEPAGE);  // honoured where shmem THP is enabled
  base_ = p;
  bytes_ = bytes;
  return Status::Ok();
}

Status ShmSegment::create(const std::string& name, size_t slotBytes, int nslots) {
  name_ = name;
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return ErrnoError("shm_open(" + name + ")", errno);
  linked_ = true;
  size_t bytes = kDataOffset + slotBytes * nslots;
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int e = errno;
    close(fd);
    return ErrnoError("ftruncate of " + name + " (is /dev/shm large enough?)", e);
  }
  Status st = map(fd, bytes);
  close(fd);
  TUTTI_RETURN_IF_ERROR(st);
  // The slots stay unwritten: tmpfs reads them as zeros, and a page is made
  // when a chunk first lands there (once per communicator, not per call):
  // writing them all here cost init about 2.5 ms per MiB, per connection.
  std::memset(base_, 0, kDataOffset);
  ShmControl* c = new (base_) ShmControl();
  c->posted.store(0);
  c->consumed.store(0);
  c->senderPid.store(0);
  c->failureNotice.store(0);
  c->receiverPid = getpid();
  c->nslots = static_cast<uint32_t>(nslots);
  c->slotBytes = slotBytes;
  slotBytes_ = slotBytes;
  nslots_ = static_cast<uint32_t>(nslots);
  return Status::Ok();
}

Status ShmSegment::open(const std::string& name) {
  name_ = name;
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) return ErrnoError("shm_open(" + name + ") by the sender", errno);
  struct stat st {};
  fstat(fd, &st);
  if (static_cast<size_t>(st.st_size) < kDataOffset) {
    close(fd);
    return InvalidUsage("shared segment " + name + " is too small (" + std::to_string(st.st_size) +
                        " bytes)");
  }
  Status s = map(fd, static_cast<size_t>(st.st_size));
  close(fd);
  TUTTI_RETURN_IF_ERROR(s);
  const uint64_t slotBytes = control()->slotBytes, nslots = control()->nslots;
  if (nslots == 0 || nslots > kShmMaxSlots || slotBytes > (bytes_ - kDataOffset) / nslots)
    return InvalidUsage("shared segment " + name + " (" + std::to_string(bytes_) +
                        " bytes) cannot hold the " + std::to_string(nslots) + " slots of " +
                        std::to_string(slotBytes) + " bytes its header announces");
  slotBytes_ = slotBytes;
  nslots_ = static_cast<uint32_t>(nslots);
  return Status::Ok();
}

}  // namespace tutti
