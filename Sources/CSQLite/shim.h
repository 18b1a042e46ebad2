// The platform's SQLite C API (libsqlite3-dev on Debian/Ubuntu; part of the SDK on Apple platforms).
#include <sqlite3.h>
