// Declarations only (see include/CDNSServiceShim.h); this file exists because a C target needs a source.
#include "CDNSServiceShim.h"
