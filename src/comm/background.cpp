#include "src/comm/background.h"

namespace tutti {

SerialWorker& Background::worker() {
  if (!worker_) worker_ = std::make_unique<SerialWorker>();
  return *worker_;
}

void Background::post(std::function<void()> task) {
  hold();
  worker().post([this, task = std::move(task)] {
    task();
    settle();
  });
}

void Background::drainStarted() {
  if (!worker_->onWorkerThread()) worker_->drain();
}

}  // namespace tutti
