// A reduce then a copy into a slot, for each chunk of a 64 MiB buffer, whole or
// 32 KiB block by block (ddp_step_tries.md, stop 71). Built from the checkout:
//   g++ -O2 -I. bench/results/raw/ddp_step_tries/blockwise_copy.cpp build/libtutti_static.a -lpthread -ldl
//   ./a.out CHUNK_KIB
#include <chrono>
#include <cstring>
#include <cstdio>
#include <vector>
#include <cstdlib>
#include "kernels/reducer.h"
using namespace tutti;
int main(int argc,char**argv){
  size_t chunk = atoi(argv[1])<<10; size_t total = 64<<20;
  size_t n = total/4;
  std::vector<float> in(n,1), recv(n,2), out(n), slot(chunk/4*8);
  const Reducer& r = hostReducer();
  for (int mode=0; mode<2; ++mode) for (int rep=0;rep<3;++rep){
    auto t0=std::chrono::steady_clock::now();
    for (int it=0; it<5; ++it)
    for (size_t off=0; off<n; off+=chunk/4){
      size_t m = std::min(chunk/4, n-off);
      float* sb = slot.data() + ((off/(chunk/4))%8)*(chunk/4);
      if (mode==0){ r.reduce(out.data()+off, recv.data()+off, in.data()+off, m, DataType::kFloat32, RedOp::kSum, 1); r.copy(sb, out.data()+off, m*4);}
      else { size_t B=(32<<10)/4; for(size_t d=0; d<m; d+=B){ size_t k=std::min(B,m-d); r.reduce(out.data()+off+d, recv.data()+off+d, in.data()+off+d, k, DataType::kFloat32, RedOp::kSum,1); r.copy(sb+d, out.data()+off+d, k*4);} }
    }
    double s=std::chrono::duration<double>(std::chrono::steady_clock::now()-t0).count();
    printf("chunk %zuK mode %s: %.2f GB/s\n", chunk>>10, mode?"blocked":"whole", 5.0*total/s/1e9);
  }
}
