// SerialWorker: tasks run one at a time, in order, and a task's captures
// are freed outside the worker's lock.
#include "src/common/serial_worker.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <vector>

namespace tutti {
namespace {

TEST(SerialWorker, RunsTasksInTheOrderPosted) {
  std::vector<int> ran;
  {
    SerialWorker worker;
    for (int i = 0; i < 100; ++i) worker.post([&ran, i] { ran.push_back(i); });
    worker.drain();
    EXPECT_EQ(ran.size(), 100u);
  }
  for (int i = 0; i < 100; ++i) ASSERT_EQ(ran[i], i);
}

// What a task holds may wait on anything when freed: a tensor that Python
// let go of takes the GIL, which the thread destroying the worker may hold
// while it waits for the worker's lock. Here the capture's destructor takes
// that lock itself (it posts): freed under the lock, it would wait forever.
// The worker runs in a child, so a hang fails the test instead of stalling it.
TEST(SerialWorker, FreesATasksCapturesOutsideItsLock) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(10);
    {
      SerialWorker worker;
      struct PostsWhenFreed {
        SerialWorker* worker;
        ~PostsWhenFreed() { worker->post([] {}); }
      };
      std::shared_ptr<PostsWhenFreed> capture(new PostsWhenFreed{&worker});
      worker.post([capture] {});
      capture.reset();  // the task's copy is the last
      worker.drain();
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the worker hung (killed by signal " << WTERMSIG(status) << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace tutti
