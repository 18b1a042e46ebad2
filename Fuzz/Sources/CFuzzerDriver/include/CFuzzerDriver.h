#ifndef CFUZZERDRIVER_H
#define CFUZZERDRIVER_H
#include <stddef.h>
#include <stdint.h>

// libFuzzer's entry point for programs that have their own main (LLVM >= 11). SwiftPM links each
// executable target's main under its own name, so the targets call this instead of using libFuzzer's main.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
