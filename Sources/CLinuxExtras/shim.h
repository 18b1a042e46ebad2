// glibc declarations Swift's Glibc module leaves out: mallopt (<malloc.h>) and, with _GNU_SOURCE,
// sync_file_range and F_SETPIPE_SZ (<fcntl.h>) and pthread_setname_np (<pthread.h>).
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
