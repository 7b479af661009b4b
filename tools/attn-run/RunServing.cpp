//===- RunServing.cpp - attn-run --serve: a continuous-batching trace -----===//
//
// Replays a synthetic serving trace through a decoder stack's continuous
// batching (LayerStack::step): sequences arrive (a Poisson process in wall
// time, or all at once), wait for one of `maxLive` slots, have their prompt
// run in chunks and then decode one token per step until their output
// length, and leave. Each step takes the decode tokens of every sequence
// that has finished its prompt, then prompt chunks in arrival order up to
// the step's token budget (chunked prefill, decode first).
//
// A layer stack maps activations to activations: a sequence's "tokens" are
// seeded random rows, the prompt's and the decode steps' alike, so every
// output can be compared with the same sequence decoded alone (a prompt
// call, then one token per call, by forward(): a dense cache, no pages)
// and with its f64 reference.
//
//===----------------------------------------------------------------------===//
#include "RunLayers.h"
#include "attn/Compiler/GpuCompiler.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <chrono>
#include <deque>
#include <random>
#include <thread>

using namespace attnrt;
using Clock = std::chrono::steady_clock;

namespace {
/// One sequence of the trace.
struct TraceSequence {
  double arrival = 0; ///< seconds after the start
  int64_t prompt = 0, output = 0;
  Activations tokens;         ///< [1, prompt + output, d_model]
  std::vector<float> outputs; ///< the rows the steps returned, in order
  int64_t id = -1;            ///< the stack's, while live
  int64_t done = 0;           ///< tokens run so far
  double admitted = 0, firstToken = -1, lastToken = 0;
  std::vector<double> interTokenGaps; ///< seconds between decode tokens
};
} // namespace

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "attn-run") << message << "\n";
  return EXIT_FAILURE;
}

/// The trace's sequences, reproducible from `seed`.
static std::vector<TraceSequence> makeTrace(const ServeTrace &trace,
                                            int64_t width, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(
      trace.arrivalRate > 0 ? trace.arrivalRate : 1.0);
  std::uniform_int_distribution<int64_t> prompt(1, 2 * trace.promptMean),
      output(1, 2 * trace.outputMean);
  std::normal_distribution<float> value;
  std::vector<TraceSequence> sequences(trace.sequences);
  double now = 0;
  for (TraceSequence &s : sequences) {
    if (trace.arrivalRate > 0)
      now += gap(rng);
    s.arrival = now;
    s.prompt = prompt(rng);
    s.output = output(rng);
    s.tokens = Activations(1, s.prompt + s.output, width);
    for (float &v : s.tokens.data)
      v = value(rng);
  }
  return sequences;
}

/// Tokens [from, from + n) of `x` [1, L, d].
static const float *rowsOf(const Activations &x, int64_t from) {
  return x.data.data() + from * x.width;
}

/// The `q`-quantile of `values` (nearest rank), in milliseconds.
static double percentileMs(std::vector<double> values, double q) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  size_t at = std::min(values.size() - 1, size_t(q * values.size()));
  return values[at] * 1e3;
}

std::string attnrt::parseServeTrace(llvm::StringRef text, ServeTrace &trace) {
  if (text.empty())
    return "";
  llvm::SmallVector<llvm::StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  if (items.empty() || items.front().trim().getAsInteger(10, trace.sequences) ||
      trace.sequences < 1 || trace.sequences > 1000000)
    return "N, the sequences, must be 1 to 10^6, then key=value items";
  for (llvm::StringRef item : llvm::ArrayRef(items).drop_front()) {
    auto [key, value] = item.split('=');
    key = key.trim();
    value = value.trim();
    if (key == "rate") {
      double rate;
      if (value.getAsDouble(rate) || !(rate >= 0) || std::isinf(rate))
        return "rate must be a finite number >= 0, got '" + value.str() + "'";
      trace.arrivalRate = rate;
      continue;
    }
    int64_t n;
    if (value.getAsInteger(10, n))
      return "'" + key.str() + "' takes an integer, got '" + value.str() + "'";
    if (key == "paged") {
      if (n != 0 && n != 1)
        return "paged is 0 or 1";
      trace.pagedCache = n == 1;
    } else if (key == "prompt" || key == "output" || key == "live" ||
               key == "step") {
      if (n < 1 || n > 1000000)
        return key.str() + " must be 1 to 10^6, got " + std::to_string(n);
      (key == "prompt"   ? trace.promptMean
       : key == "output" ? trace.outputMean
       : key == "live"   ? trace.maxLive
                         : trace.stepTokens) = n;
    } else {
      return "unknown key '" + key.str() +
             "' (rate, prompt, output, live, step, paged)";
    }
  }
  return "";
}

int attnrt::runServing(const attnspec::LayerSpec &spec,
                       const SafetensorsFile &weights, TransformerStack &stack,
                       const LayerRunOptions &options,
                       const ReferenceAttention &reference) {
  if (spec.dtype != "f32" && options.check && !options.toleranceGiven)
    return fail("--check with --serve on a " + spec.dtype +
                " layer needs --tolerance (the reference is f32's)");
  const ServeTrace &trace = options.serve;
  LayerStack &layers = stack.layerStack();
  int64_t width = spec.layer.dModel;
  std::vector<TraceSequence> sequences = makeTrace(trace, width, options.seed);

  // Compile the kernels first (a prompt, then a decode step reading the
  // cache in place) so that no step of the trace waits for the compiler.
  {
    auto id = stack.addSequence();
    if (!id)
      return fail(llvm::toString(id.takeError()));
    for (int64_t n : {2, 1}) {
      Activations x(1, n, width);
      auto y = stack.step({*id}, x, {n});
      if (!y)
        return fail(llvm::toString(y.takeError()));
    }
    if (llvm::Error e = stack.removeSequence(*id))
      return fail(llvm::toString(std::move(e)));
  }

  // The trace. `waiting`: arrived, not admitted; `live`: admitted, in
  // arrival order.
  std::deque<size_t> waiting;
  std::vector<size_t> live;
  size_t next = 0, finished = 0;
  int64_t steps = 0, peakLive = 0, peakCacheBytes = 0;
  int64_t promptTokens = 0, decodeTokens = 0;
  double busy = 0; // seconds inside step()
  uint64_t transferredBefore = GpuKernel::hostBytesTransferred();
  auto start = Clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  while (finished < sequences.size()) {
    double now = elapsed();
    while (next < sequences.size() && sequences[next].arrival <= now)
      waiting.push_back(next++);
    while (!waiting.empty() && int64_t(live.size()) < trace.maxLive) {
      TraceSequence &s = sequences[waiting.front()];
      auto id = stack.addSequence();
      if (!id)
        return fail(llvm::toString(id.takeError()));
      s.id = *id;
      s.admitted = now;
      live.push_back(waiting.front());
      waiting.pop_front();
    }
    if (live.empty()) { // idle until the next arrival
      std::this_thread::sleep_for(
          std::chrono::duration<double>(sequences[next].arrival - now));
      continue;
    }
    peakLive = std::max<int64_t>(peakLive, live.size());
    // Decode tokens first, then prompt chunks up to the budget.
    std::vector<size_t> members;
    std::vector<int64_t> ids, lengths;
    int64_t budget = trace.stepTokens;
    for (int pass = 0; pass < 2; ++pass)
      for (size_t index : live) {
        TraceSequence &s = sequences[index];
        bool decoding = s.done >= s.prompt;
        if ((pass == 0) != decoding || budget == 0)
          continue;
        int64_t n = decoding ? 1 : std::min(s.prompt - s.done, budget);
        members.push_back(index);
        ids.push_back(s.id);
        lengths.push_back(n);
        budget -= n;
      }
    int64_t total = trace.stepTokens - budget;
    Activations x(1, total, width);
    int64_t row = 0;
    for (size_t i = 0; i < members.size(); ++i) {
      const TraceSequence &s = sequences[members[i]];
      std::copy_n(rowsOf(s.tokens, s.done), lengths[i] * width,
                  x.data.data() + row * width);
      row += lengths[i];
    }
    auto before = Clock::now();
    auto y = stack.step(ids, x, lengths);
    if (!y)
      return fail(llvm::toString(y.takeError()));
    busy += std::chrono::duration<double>(Clock::now() - before).count();
    ++steps;
    peakCacheBytes = std::max(peakCacheBytes, layers.cacheBytes());
    now = elapsed();
    row = 0;
    for (size_t i = 0; i < members.size(); ++i) {
      TraceSequence &s = sequences[members[i]];
      s.outputs.insert(s.outputs.end(), y->data.begin() + row * width,
                       y->data.begin() + (row + lengths[i]) * width);
      row += lengths[i];
      bool decoded = s.done >= s.prompt;
      (decoded ? decodeTokens : promptTokens) += lengths[i];
      s.done += lengths[i];
      if (decoded)
        s.interTokenGaps.push_back(now - s.lastToken);
      else if (s.done == s.prompt)
        s.firstToken = now - s.arrival; // the prompt's last row
      s.lastToken = now;
    }
    // Departures: sequences that have decoded their outputs.
    for (size_t i = 0; i < live.size();) {
      TraceSequence &s = sequences[live[i]];
      if (s.done < s.prompt + s.output) {
        ++i;
        continue;
      }
      if (llvm::Error e = stack.removeSequence(s.id))
        return fail(llvm::toString(std::move(e)));
      live.erase(live.begin() + i);
      ++finished;
    }
  }
  double seconds = elapsed();

  std::vector<double> firstTokens, gaps;
  for (const TraceSequence &s : sequences) {
    firstTokens.push_back(s.firstToken);
    gaps.insert(gaps.end(), s.interTokenGaps.begin(), s.interTokenGaps.end());
  }
  llvm::outs() << llvm::formatv(
      "serve: {0} sequences ({1} prompt + {2} decode tokens) in {3} steps, "
      "{4:f3} s ({5:f3} s in steps): {6:f1} tokens/s, {7:f1} decode "
      "tokens/s; at most {8} live, {9:f2} MiB of KV cache at the peak, {10} "
      "bytes after the last left\n",
      sequences.size(), promptTokens, decodeTokens, steps, seconds, busy,
      (promptTokens + decodeTokens) / seconds, decodeTokens / seconds, peakLive,
      peakCacheBytes / double(1 << 20), layers.cacheBytes());
  llvm::outs() << llvm::formatv(
      "latency: first token p50 {0:f2} ms, p99 {1:f2} ms; between tokens "
      "p50 {2:f2} ms, p90 {3:f2} ms, p99 {4:f2} ms\n",
      percentileMs(firstTokens, 0.5), percentileMs(firstTokens, 0.99),
      percentileMs(gaps, 0.5), percentileMs(gaps, 0.9),
      percentileMs(gaps, 0.99));
  if (layers.poolPages()) {
    // Pages the sequences held in all, against the pool's: more means
    // pages of departed sequences served new ones.
    int64_t held = 0;
    for (const TraceSequence &s : sequences)
      held += (s.prompt + s.output + kKvPageRows - 1) / kKvPageRows;
    llvm::outs() << llvm::formatv(
        "pages: a pool of {0} pages of {1} rows served {2} pages of "
        "sequences ({3}); {4} in use after the last left\n",
        layers.poolPages(), kKvPageRows, held,
        held > layers.poolPages() ? "reused" : "none reused",
        layers.usedPages());
  }
  // On a GPU the pools stay on the device: per step only the new rows go.
  if (auto copies = stack.devicePoolCopies())
    llvm::outs() << llvm::formatv(
        "device pools: {0} copied whole ({1:f2} MiB: new or grown), {2} key "
        "or value rows of a KV head appended ({3:f2} MiB)\n",
        copies->wholePools, copies->wholeBytes / double(1 << 20), copies->rows,
        copies->rowBytes / double(1 << 20));
  if (!options.gpuTarget.empty())
    llvm::outs() << llvm::formatv(
        "host-device copies: {0:f2} MiB of attention operands and results\n",
        (GpuKernel::hostBytesTransferred() - transferredBefore) /
            double(1 << 20));
  printDeviceProducts(stack);
  if (layers.liveSequences() || layers.cacheBytes())
    return fail("sequences or cache left after the trace");

  // Each sequence decoded alone by forward(), the cache of a single
  // sequence (dense rows, not pages): its prompt in one call, then a token
  // per call.
  bool ok = true;
  double worstAlone = 0, worstReference = 0;
  for (TraceSequence &s : sequences) {
    stack.reset();
    std::vector<float> alone;
    for (int64_t from = 0; from < s.prompt + s.output;) {
      int64_t n = from == 0 ? s.prompt : 1;
      Activations x(1, n, width);
      std::copy_n(rowsOf(s.tokens, from), n * width, x.data.begin());
      auto y = stack.forward(x);
      if (!y)
        return fail(llvm::toString(y.takeError()));
      alone.insert(alone.end(), y->data.begin(), y->data.end());
      from += n;
    }
    if (options.perturb && &s == &sequences.back()) {
      float scale = 0;
      for (float v : s.outputs)
        scale = std::max(scale, std::abs(v));
      s.outputs.back() =
          std::isnan(*options.perturb)
              ? NAN
              : s.outputs.back() + float(*options.perturb) * scale;
    }
    worstAlone = std::max(worstAlone, scaledLayerError(s.outputs, alone));
    if (options.check) {
      // The whole sequence in one causal pass: what decoding it computes.
      auto expected =
          referenceForward(spec, weights, s.tokens, nullptr, reference);
      if (!expected)
        return fail(llvm::toString(expected.takeError()));
      worstReference =
          std::max(worstReference, scaledLayerError(s.outputs, *expected));
    }
  }
  // Batching changes which rows share a product and how a sequence's
  // prompt is chunked, not any sum of one row: the same bound as --check.
  bool same = worstAlone <= options.tolerance;
  ok &= same;
  llvm::outs() << llvm::formatv(
      "serve: each of {0} sequences vs decoding it alone: max |diff| / max "
      "|alone| = {1:e2} ({2})\n",
      sequences.size(), worstAlone, same ? "SAME" : "DIFFERENT");
  if (options.check) {
    bool pass = worstReference <= options.tolerance;
    ok &= pass;
    llvm::outs() << llvm::formatv(
        "check: served {0} {1} layer(s), each sequence against its f64 "
        "reference: max |out - ref| / max |ref| = {2:e2} (tolerance {3:e1}): "
        "{4}\n",
        spec.layer.layers, spec.layer.type, worstReference, options.tolerance,
        pass ? "PASS" : "FAIL");
  }
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
