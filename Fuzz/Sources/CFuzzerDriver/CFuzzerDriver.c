// Header-only module (the declaration of LLVMFuzzerRunDriver); SwiftPM needs one source file.
#include "CFuzzerDriver.h"
