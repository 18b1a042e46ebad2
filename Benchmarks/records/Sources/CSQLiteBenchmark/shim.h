// The platform SQLite C API, for the raw-SQLite baseline.
#include <sqlite3.h>
