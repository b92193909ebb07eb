/* A program outside the tutti tree, in C99, built against the installed
 * package: one rank all-reduces with itself and checks the result. */
#include <stdio.h>
#include <tutti/tutti.h>

int main(void) {
  int version = 0;
  tuttiUniqueId id;
  tuttiComm_t comm;
  float in[3] = {1.0f, 2.0f, 3.0f}, out[3] = {0};
  int i;
  if (tuttiGetVersion(&version) != tuttiSuccess || version != TUTTI_VERSION) return 1;
  if (tuttiGetUniqueId(&id) != tuttiSuccess) return 2;
  if (tuttiCommInitRank(&comm, 1, id, 0) != tuttiSuccess) return 3;
  if (tuttiAllReduce(in, out, 3, tuttiFloat32, tuttiSum, comm, NULL) != tuttiSuccess) return 4;
  for (i = 0; i < 3; ++i)
    if (out[i] != in[i]) return 5;
  tuttiCommDestroy(comm);
  printf("tutti %d works from C\n", version);
  return 0;
}
