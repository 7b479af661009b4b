//===- GpuDescriptor.cpp - kernel descriptors as JSON ---------------------===//
//
// The file attn-compile writes next to a .spv / .ptx (docs/Gpu.md, "Kernel
// descriptors"):
//
//   {"kernels": [{"name": "attn", "grid": [2, 12, 1],
//                 "workgroup": [64, 1, 1], "shared_bytes": 0,
//                 "bindings": [{"name": "arg0", "bytes": 1024,
//                               "written": false}, ...],
//                 "constants": {"schedule": [1, 0, 2, ...]}}]}
//
//===----------------------------------------------------------------------===//
#include "attn/Runtime/Gpu.h"
#include <algorithm>
#include <nlohmann/json.hpp>

using namespace attnrt;
using json = nlohmann::json;

std::string
attnrt::writeGpuDescriptors(const std::vector<GpuKernelDescriptor> &ds) {
  json kernels = json::array();
  for (const GpuKernelDescriptor &d : ds) {
    json bindings = json::array();
    for (const GpuBinding &b : d.bindings)
      bindings.push_back(
          {{"name", b.name}, {"bytes", b.bytes}, {"written", b.written}});
    json kernel = {{"name", d.name},
                   {"grid", d.grid},
                   {"workgroup", d.workgroup},
                   {"tiling", d.tiling},
                   {"bindings", bindings}};
    if (d.sharedBytes)
      kernel["shared_bytes"] = d.sharedBytes;
    if (!d.constants.empty()) {
      json constants = json::object();
      for (const auto &[name, words] : d.constants)
        constants[name] = words;
      kernel["constants"] = constants;
    }
    kernels.push_back(kernel);
  }
  return json({{"kernels", kernels}}).dump(1) + "\n";
}

bool attnrt::parseGpuDescriptors(const std::string &text,
                                 std::vector<GpuKernelDescriptor> &ds,
                                 std::string &error) {
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object() || !root.contains("kernels") ||
      !root["kernels"].is_array()) {
    error = "a kernel descriptor is a JSON object with a \"kernels\" array";
    return false;
  }
  auto isCount = [](const json &v) {
    return v.is_number_unsigned() && v.get<uint64_t>() <= UINT32_MAX;
  };
  auto triple = [&](const json &v, std::array<uint32_t, 3> &out) {
    if (!v.is_array() || v.size() != 3)
      return false;
    for (int i = 0; i < 3; ++i) {
      if (!isCount(v[i]) || v[i].get<uint64_t>() == 0)
        return false;
      out[i] = v[i].get<uint32_t>();
    }
    return true;
  };
  for (const json &k : root["kernels"]) {
    GpuKernelDescriptor d;
    if (!k.is_object() || !k.contains("name") || !k["name"].is_string()) {
      error = "each kernel needs a \"name\" string";
      return false;
    }
    d.name = k["name"].get<std::string>();
    if (!k.contains("grid") || !triple(k["grid"], d.grid) ||
        !k.contains("workgroup") || !triple(k["workgroup"], d.workgroup)) {
      error = "kernel '" + d.name +
              "': \"grid\" and \"workgroup\" are three positive counts";
      return false;
    }
    if (k.contains("tiling")) {
      const json &t = k["tiling"];
      if (!t.is_array() || t.size() != 3 ||
          !std::all_of(t.begin(), t.end(), [](const json &v) {
            return v.is_number_unsigned() && v.get<uint64_t>() < (1u << 30);
          })) {
        error = "kernel '" + d.name + "': \"tiling\" is three counts";
        return false;
      }
      for (int i = 0; i < 3; ++i)
        d.tiling[i] = t[i].get<int64_t>();
    }
    if (k.contains("shared_bytes")) {
      // At most 1 MiB: more than any GPU gives a workgroup.
      const json &bytes = k["shared_bytes"];
      if (!bytes.is_number_unsigned() || bytes.get<uint64_t>() > (1u << 20)) {
        error = "kernel '" + d.name +
                "': \"shared_bytes\" is a byte count up to 1 MiB";
        return false;
      }
      d.sharedBytes = bytes.get<uint32_t>();
    }
    if (!k.contains("bindings") || !k["bindings"].is_array()) {
      error = "kernel '" + d.name + "': \"bindings\" must be an array";
      return false;
    }
    for (const json &b : k["bindings"]) {
      if (!b.is_object() || !b.contains("name") || !b["name"].is_string() ||
          !b.contains("bytes") || !b["bytes"].is_number_unsigned() ||
          !b.contains("written") || !b["written"].is_boolean()) {
        error = "kernel '" + d.name +
                "': each binding has \"name\", \"bytes\" and \"written\"";
        return false;
      }
      d.bindings.push_back({b["name"].get<std::string>(),
                            b["written"].get<bool>(),
                            b["bytes"].get<uint64_t>()});
    }
    if (k.contains("constants")) {
      const json &c = k["constants"];
      if (!c.is_object()) {
        error = "kernel '" + d.name + "': \"constants\" must be an object";
        return false;
      }
      for (const auto &[name, words] : c.items()) {
        if (!words.is_array()) {
          error = "kernel '" + d.name + "': constant '" + name +
                  "' must be an array of 32-bit words";
          return false;
        }
        std::vector<uint32_t> values;
        for (const json &w : words) {
          if (!isCount(w)) {
            error = "kernel '" + d.name + "': constant '" + name +
                    "' holds a value that is not a 32-bit word";
            return false;
          }
          values.push_back(w.get<uint32_t>());
        }
        d.constants.emplace_back(name, std::move(values));
      }
    }
    ds.push_back(std::move(d));
  }
  return true;
}
