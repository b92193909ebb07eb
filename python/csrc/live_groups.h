// The tutti groups alive in this process, so that they can be quiesced
// before Python finalizes. A group's threads free what its calls held (a
// tensor Python let go of takes the GIL to free its Python object); a thread
// that takes the GIL while the interpreter finalizes is ended by Python
// mid-destructor, and the process aborts ("terminate called without an
// active exception": PyTorch's gloo groups do it). tutti_torch's atexit hook
// drains every group's threads first, while Python still runs them.
#pragma once

namespace tutti_torch {

class ProcessGroupTutti;

namespace live_groups {

void add(ProcessGroupTutti* group);
void remove(ProcessGroupTutti* group);
// Waits, without the GIL, until no live group has a call queued, running or
// completing. Called by the atexit hook.
void quiesceAll();

}  // namespace live_groups
}  // namespace tutti_torch
