/*
** test_sql.h -- for tests only: the store's raw SQLite connection (arb__store_conn) and
** sqlite3.h, so a test can set up a store in a state no API makes (an old schema, a damaged
** row) or look at the rows an API wrote. The library's own modules may not do this: only the
** store's files run SQL (tests/e2e_store_owns_sql.sh).
*/
#ifndef ARB_TEST_SQL_H
#define ARB_TEST_SQL_H

#include "store_internal.h"

#endif
