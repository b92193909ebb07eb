// The same check from C++.
#include <tutti/tutti.h>

#include <cstdio>

int main() {
  tuttiUniqueId id;
  tuttiComm_t comm = nullptr;
  double x = 4, y = 0;
  if (tuttiGetUniqueId(&id) != tuttiSuccess) return 1;
  if (tuttiCommInitRank(&comm, 1, id, 0) != tuttiSuccess) return 2;
  if (tuttiAllReduce(&x, &y, 1, tuttiFloat64, tuttiAvg, comm, nullptr) != tuttiSuccess || y != 4) return 3;
  tuttiCommDestroy(comm);
  std::printf("tutti works from C++\n");
  return 0;
}
