#include "src/comm/tuning/kept_calls.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "src/common/hash.h"
#include "src/common/json.h"
#include "src/common/text_file.h"
#include "src/comm/tuning/typical_time.h"
#include "src/plan/algorithms.h"

namespace tutti {

namespace {

// Earlier runs count as this many calls at most against this run's.
constexpr double kKeptWeight = 16;
// A file larger than this is not ours.
constexpr off_t kMaxFileBytes = 1 << 20;

int sizeClass(double bytes) { return static_cast<int>(std::lround(std::log2(bytes))); }

bool sameClass(const KeptCall& a, const KeptCall& b) {
  return a.algorithm == b.algorithm && sizeClass(a.bytes) == sizeClass(b.bytes);
}

// Mean of `into` and `add`, weighing `into` by at most `cap` calls.
void blend(KeptCall* into, const KeptCall& add, double cap) {
  const double w = std::min(into->calls, cap), total = w + add.calls;
  into->bytes = (into->bytes * w + add.bytes * add.calls) / total;
  into->us = (into->us * w + add.us * add.calls) / total;
  into->calls = total;
}

bool modelled(int32_t a) { return a >= 0 && a < kNumAlgorithms && algorithmEntry(static_cast<Algorithm>(a)).costUs; }

bool sane(const KeptCall& c) {
  return modelled(c.algorithm) && std::isfinite(c.bytes) && c.bytes >= 1 && c.bytes <= 1e15 &&
         std::isfinite(c.us) && c.us > 0 && c.us < 1e12 && std::isfinite(c.calls) && c.calls >= 1;
}

}  // namespace

bool worthKeeping(Algorithm a, size_t bytes) {
  return modelled(static_cast<int32_t>(a)) && static_cast<double>(bytes) >= algorithmEntry(a).calibrationBytes[0];
}

void CallTimes::note(Algorithm a, size_t bytes, double us) {
  const KeptCall call{static_cast<int32_t>(a), static_cast<double>(bytes), us, 0};
  auto same = std::find_if(classes_.begin(), classes_.end(), [&](const Class& c) { return sameClass(c.call, call); });
  if (same == classes_.end()) {
    if (classes_.size() == static_cast<size_t>(kMaxKeptCalls)) {
      // Full: the smallest size makes room for a larger, which a file keeps first.
      auto smallest = std::min_element(classes_.begin(), classes_.end(),
                                       [](const Class& x, const Class& y) { return x.call.bytes < y.call.bytes; });
      if (smallest->call.bytes >= call.bytes) return;
      classes_.erase(smallest);
    }
    same = classes_.insert(classes_.end(), Class{call, {}});  // no call counted yet
  }
  KeptCall& c = same->call;
  same->recentUs[static_cast<size_t>(c.calls) % kRecentCalls] = us;
  c.bytes = (c.bytes * c.calls + call.bytes) / (c.calls + 1);
  c.calls += 1;
}

std::vector<KeptCall> CallTimes::calls() const {
  std::vector<KeptCall> out;
  for (const Class& c : classes_) {
    KeptCall k = c.call;
    const auto recent = c.recentUs.begin() + std::min<size_t>(static_cast<size_t>(c.call.calls), kRecentCalls);
    k.us = typicalUs(std::vector<double>(c.recentUs.begin(), recent));
    out.push_back(k);
  }
  return out;
}

std::vector<KeptCall> mergeKeptCalls(const std::vector<KeptCall>& kept, const std::vector<KeptCall>& fresh) {
  std::vector<KeptCall> merged = kept;
  for (KeptCall& c : merged) c.calls = std::min(c.calls, kKeptWeight);
  for (const KeptCall& f : fresh) {
    auto same = std::find_if(merged.begin(), merged.end(), [&](const KeptCall& c) { return sameClass(c, f); });
    if (same != merged.end()) blend(&*same, f, kKeptWeight);
    else merged.push_back(f);
  }
  std::sort(merged.begin(), merged.end(), [](const KeptCall& a, const KeptCall& b) { return a.bytes > b.bytes; });
  if (merged.size() > static_cast<size_t>(kMaxKeptCalls)) merged.resize(kMaxKeptCalls);
  std::stable_sort(merged.begin(), merged.end(),
                   [](const KeptCall& a, const KeptCall& b) { return a.algorithm < b.algorithm; });
  return merged;
}

void addKeptCalls(const std::vector<KeptCall>& kept, TuneContext* t) {
  for (int a = 0; a < kNumAlgorithms; ++a) {
    TuneContext::Calibration& k = t->allReduce[a];
    if (k.points == 0 || std::find(k.kept, k.kept + k.points, true) != k.kept + k.points)
      continue;  // not measured here, or done
    struct Point {
      double bytes, us, calls, ratio;
      bool kept;
    };
    std::vector<Point> points, between;
    for (int p = 0; p < k.points; ++p) points.push_back({k.bytes[p], k.us[p], k.calls[p], k.ratio[p], false});
    for (const KeptCall& c : kept) {
      if (c.algorithm != a) continue;
      // The kept time is the typical of recent calls, merged over runs by
      // at most kKeptWeight calls: it weighs that many, however long the
      // run that kept it.
      const double calls = std::min(c.calls, kKeptWeight);
      auto same = std::find_if(points.begin(), points.end(),
                               [&](const Point& p) { return sizeClass(p.bytes) == sizeClass(c.bytes); });
      if (same == points.end()) {
        between.push_back({c.bytes, c.us, calls, 0, true});
        continue;
      }
      // A size init measured: its few calls, made just after the ranks
      // met, weigh against the kept ones, made as calls come. On 4 x 1
      // veth, init priced halving-doubling's 1 MiB at 0.93-1.18 ms in every
      // launch; its calls took 1.2-1.8.
      same->us = (same->us * same->calls + c.us * calls) / (same->calls + calls);
      same->calls += calls;
      same->kept = true;
    }
    std::sort(between.begin(), between.end(), [](const Point& x, const Point& y) { return x.bytes < y.bytes; });
    if (between.size() > static_cast<size_t>(TuneContext::kKeptPoints))
      between.erase(between.begin(), between.end() - TuneContext::kKeptPoints);
    points.insert(points.end(), between.begin(), between.end());
    std::stable_sort(points.begin(), points.end(), [](const Point& x, const Point& y) { return x.bytes < y.bytes; });
    // Kept times set against the model alone, as the measured points are.
    TuneContext model = restrictedTo(*t, static_cast<Algorithm>(a));
    model.allReduce[a] = {};
    TuneContext::Calibration merged;
    merged.slowDraw = k.slowDraw;
    for (Point& p : points) {
      if (p.kept) {
        const double predicted = tune(model, Collective::kAllReduce, static_cast<size_t>(p.bytes)).predictedUs;
        if (predicted <= 0 || predicted >= 1e29) continue;
        p.ratio = p.us / predicted;
      }
      const int i = merged.points++;
      merged.bytes[i] = p.bytes;
      merged.us[i] = p.us;
      merged.calls[i] = p.calls;
      merged.ratio[i] = p.ratio;
      merged.kept[i] = p.kept;
    }
    k = merged;
  }
}

std::string keptCallsShape(const std::string& layout, int sharing, int cores, const std::string& net, double gbps,
                           uint64_t settingsHash) {
  char rest[160];
  snprintf(rest, sizeof(rest), "; %d rank(s) on %d core(s); %s at %.1f Gbit/s; settings %016llx", sharing, cores,
           net.c_str(), gbps, static_cast<unsigned long long>(settingsHash));
  return "v1; " + layout + rest;
}

std::string keptCallsPath(const std::string& dir, const std::string& shape) {
  char name[64];
  snprintf(name, sizeof(name), "tutti-calls-%u-%016llx.json", static_cast<unsigned>(getuid()),
           static_cast<unsigned long long>(fnv1a64(shape.data(), shape.size())));
  return dir + "/" + name;
}

std::vector<KeptCall> keptCallsFromJson(const std::string& text, const std::string& shape) {
  auto json = parseJson(text);
  if (!json.ok() || jsonString(*json, "shape") != shape) return {};
  std::vector<KeptCall> calls;
  for (const Json& j : jsonArray(*json, "allreduce")) {
    const AlgorithmEntry* e = algorithmNamed(jsonString(j, "algorithm").c_str());
    const KeptCall c{e ? static_cast<int32_t>(e->id) : -1, jsonNumber(j, "bytes"), jsonNumber(j, "us"),
                     jsonNumber(j, "calls")};
    if (!sane(c) || calls.size() >= static_cast<size_t>(kMaxKeptCalls)) return {};
    calls.push_back(c);
  }
  return calls;
}

std::string keptCallsToJson(const std::vector<KeptCall>& calls, const std::string& shape) {
  Json list = Json::array();
  for (const KeptCall& c : calls)
    list.push_back({{"algorithm", algorithmName(static_cast<Algorithm>(c.algorithm))},
                    {"bytes", c.bytes},
                    {"us", c.us},
                    {"calls", c.calls}});
  return Json{{"shape", shape}, {"allreduce", list}}.dump(1) + "\n";
}

std::vector<KeptCall> readKeptCalls(const std::string& path, const std::string& shape) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid() || st.st_size > kMaxFileBytes)
    return {};
  bool read = false;
  const std::string text = readTextFile(path, &read);
  return read ? keptCallsFromJson(text, shape) : std::vector<KeptCall>{};
}

Status writeKeptCalls(const std::string& path, const std::string& shape, const std::vector<KeptCall>& fresh) {
  if (fresh.empty()) return Status::Ok();
  const std::vector<KeptCall> merged = mergeKeptCalls(readKeptCalls(path, shape), fresh);
  if (!replaceTextFile(path, keptCallsToJson(merged, shape))) return InvalidArgument("cannot write " + path);
  return Status::Ok();
}

}  // namespace tutti
