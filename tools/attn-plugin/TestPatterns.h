//===- TestPatterns.h - the plugin's pattern test pass ----------*- C++ -*-===//
#ifndef ATTN_TOOLS_ATTN_PLUGIN_TESTPATTERNS_H
#define ATTN_TOOLS_ATTN_PLUGIN_TESTPATTERNS_H

namespace attnplugin {
/// Registers `test-attn-patterns` (TestPatterns.cpp).
void registerTestPatternsPass();
} // namespace attnplugin

#endif // ATTN_TOOLS_ATTN_PLUGIN_TESTPATTERNS_H
