//===- ToolOptions.h - what --help shows in attn's tools --------*- C++ -*-===//
#ifndef ATTN_TOOLS_TOOLOPTIONS_H
#define ATTN_TOOLS_TOOLOPTIONS_H

#include "llvm/Support/CommandLine.h"

namespace attntools {

/// Hides every registered option outside `categories` from --help (LLVM's
/// libraries register some hundreds) while --help-hidden still lists them,
/// unlike cl::HideUnrelatedOptions, which hides them from both.
inline void hideForeignOptions(
    llvm::ArrayRef<const llvm::cl::OptionCategory *> categories) {
  for (auto &entry : llvm::cl::getRegisteredOptions()) {
    llvm::StringRef name = entry.first;
    llvm::cl::Option *option = entry.second;
    bool ours = name == "help" || name == "version" ||
                llvm::any_of(option->Categories, [&](auto *category) {
                  return llvm::is_contained(categories, category);
                });
    if (!ours && option->getOptionHiddenFlag() == llvm::cl::NotHidden)
      option->setHiddenFlag(llvm::cl::Hidden);
  }
}

} // namespace attntools

#endif // ATTN_TOOLS_TOOLOPTIONS_H
