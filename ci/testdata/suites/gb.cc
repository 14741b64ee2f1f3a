#include <benchmark/benchmark.h>
#include <cstdlib>
#include <vector>
#include <algorithm>
static double factor() { const char* f = getenv("FACTOR"); return f ? atof(f) : 1.0; }
static void BM_Sort(benchmark::State& state) {
  size_t n = state.range(0) * factor();
  for (auto _ : state) {
    std::vector<int> v(n);
    for (size_t i = 0; i < n; i++) v[i] = (i * 7919) % 1000;
    std::sort(v.begin(), v.end());
    benchmark::DoNotOptimize(v.data());
  }
  state.counters["items"] = n;
}
BENCHMARK(BM_Sort)->Arg(1000);
BENCHMARK_MAIN();
