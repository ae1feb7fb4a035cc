// CSQLite: the system's libsqlite3 (Debian's libsqlite3-dev), for the notes example only.
// The library never imports it.
#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H

#include <sqlite3.h>

/// SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift does not import:
/// sqlite3_bind_text copies the text when given this destructor.
static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }

#endif
