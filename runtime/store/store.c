/*
 * store.c: the durable store on SQLite (see store.h and docs/store.md).
 *
 * Why SQLite, and why configured this way. The store has to survive a kill -9 at any
 * instruction and still say, for every tool call, whether its result was committed.
 * SQLite's write-ahead log gives exactly that unit: a transaction is in the WAL and
 * fsync'd (synchronous=FULL) before COMMIT returns, or it is not there at all after
 * recovery. WAL also keeps readers (the replay service, a UI) off the writer's path.
 * So every public writing function here is one transaction, and the one that matters
 * most, ts_store_call_finished, puts the tool-result message and the "finished" mark
 * of the start record in the same transaction: after a crash a call is either
 * finished with its result or still "started" (and is then listed for the resuming
 * dispatcher), never half of each.
 *
 * Cost. A commit is one fsync of the WAL; everything else is prepared statements
 * cached in the store (prepared once, on first use, with SQLITE_PREPARE_PERSISTENT)
 * and index lookups: the next message seq is max(seq)+1 read from the primary key's
 * index inside the inserting statement, so no counter row is contended.
 *
 * Schema changes. `migrations` is an append-only list of SQL steps; step i takes a
 * database from user_version i to i+1 in one transaction (BEGIN IMMEDIATE, so two
 * processes opening a fresh store at once do not both migrate: the second re-reads
 * user_version under the write lock and finds the work done). A user_version above
 * what this code knows means a newer toolstream wrote the file: we refuse it rather
 * than guess. application_id marks the file as ours, so pointing --data-dir at some
 * other program's database fails cleanly instead of adding tables to it.
 *
 * Errors. SQLite's extended result codes are mapped once, in map_rc, onto the
 * TS_E_STORE_* group; the message SQLite gives is kept, prefixed with what we were
 * doing, for ts_store_errmsg. A constraint failure is translated to what it means
 * here (a missing thread, an existing thread, JSON the schema rejects).
 */
#include "base/thread_id.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"

/* application_id in the database header: "TSdb". */
#define TS__STORE_APP_ID 0x54536462

/* ---- schema ---------------------------------------------------------------------- */

/* migrations[i] takes user_version i to i + 1. Append only; never edit a released step. */
static const char *const migrations[] = {
    /* 0 -> 1: the first schema. */
    "PRAGMA application_id = 1414751330;" /* TS__STORE_APP_ID */
    "CREATE TABLE threads("
    "  id TEXT PRIMARY KEY NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  meta TEXT CHECK (meta IS NULL OR json_valid(meta)));"
    "CREATE TABLE messages("
    "  thread TEXT NOT NULL REFERENCES threads(id),"
    "  seq INTEGER NOT NULL CHECK (seq > 0),"
    "  role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),"
    "  content TEXT NOT NULL,"
    "  tool_call_id TEXT,"
    "  tool_name TEXT,"
    "  is_error INTEGER NOT NULL DEFAULT 0 CHECK (is_error IN (0, 1)),"
    "  created_at INTEGER NOT NULL,"
    "  PRIMARY KEY (thread, seq),"
    "  CHECK (role <> 'tool' OR tool_call_id IS NOT NULL));"
    "CREATE TABLE call_starts("
    "  thread TEXT NOT NULL REFERENCES threads(id),"
    "  turn INTEGER NOT NULL CHECK (turn >= 0),"
    "  idx INTEGER NOT NULL CHECK (idx >= 0),"
    "  call_id TEXT NOT NULL,"
    "  tool TEXT NOT NULL,"
    "  args TEXT NOT NULL CHECK (json_valid(args)),"
    "  attempts INTEGER NOT NULL DEFAULT 1,"
    "  started_at INTEGER NOT NULL,"
    "  state TEXT NOT NULL DEFAULT 'started' CHECK (state IN ('started', 'finished')),"
    "  finished_at INTEGER,"
    "  result_seq INTEGER,"
    "  PRIMARY KEY (thread, turn, idx),"
    "  FOREIGN KEY (thread, result_seq) REFERENCES messages(thread, seq));"
    "CREATE INDEX call_starts_unfinished ON call_starts(thread, turn, idx)"
    "  WHERE state = 'started';"
    "CREATE TABLE events("
    "  thread TEXT NOT NULL REFERENCES threads(id),"
    "  seq INTEGER NOT NULL CHECK (seq > 0),"
    "  json TEXT NOT NULL CHECK (json_valid(json)),"
    "  PRIMARY KEY (thread, seq));",
    /* 1 -> 2: the thread tree (parent, workspace, state), each thread's environment of
     * variables (values and the definitions declared on it), calls parked until a
     * required variable has a value, and settings (the secret key's fingerprint). */
    "ALTER TABLE threads ADD COLUMN parent TEXT REFERENCES threads(id);"
    "ALTER TABLE threads ADD COLUMN workspace TEXT;"
    "ALTER TABLE threads ADD COLUMN state TEXT NOT NULL DEFAULT 'idle' CHECK (state IN"
    "  ('idle', 'running', 'waiting_for_variable', 'done', 'failed', 'interrupted'));"
    "CREATE INDEX threads_parent ON threads(parent) WHERE parent IS NOT NULL;"
    "CREATE TABLE env_values("
    "  thread TEXT NOT NULL REFERENCES threads(id),"
    "  name TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 128),"
    "  type TEXT NOT NULL CHECK (type IN ('text', 'secret')),"
    "  value BLOB NOT NULL,"
    "  origin TEXT NOT NULL,"
    "  set_at INTEGER NOT NULL,"
    "  PRIMARY KEY (thread, name));"
    "CREATE TABLE env_decls("
    "  thread TEXT NOT NULL REFERENCES threads(id),"
    "  name TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 128),"
    "  type TEXT NOT NULL CHECK (type IN ('text', 'secret')),"
    "  required INTEGER NOT NULL CHECK (required IN (0, 1)),"
    "  scoped INTEGER NOT NULL CHECK (scoped IN (0, 1)),"
    "  description TEXT NOT NULL,"
    "  declared_by TEXT NOT NULL,"
    "  PRIMARY KEY (thread, name));"
    "CREATE TABLE call_waits("
    "  thread TEXT NOT NULL REFERENCES threads(id),"
    "  turn INTEGER NOT NULL CHECK (turn >= 0),"
    "  idx INTEGER NOT NULL CHECK (idx >= 0),"
    "  call_id TEXT NOT NULL,"
    "  tool TEXT NOT NULL,"
    "  args TEXT NOT NULL CHECK (json_valid(args)),"
    "  variable TEXT NOT NULL,"
    "  parked_at INTEGER NOT NULL,"
    "  PRIMARY KEY (thread, turn, idx));"
    "CREATE TABLE settings("
    "  name TEXT PRIMARY KEY NOT NULL,"
    "  value TEXT NOT NULL);",
    /* 2 -> 3: subagents (tools-spec §5): each thread's durable inbox of messages queued to
     * it, the subagent instances (a child thread of a related agent, created by one call
     * of its parent), and thread tags ("name:<value>" for UIs). */
    "CREATE TABLE inbox("
    "  thread TEXT NOT NULL REFERENCES threads(id),"
    "  seq INTEGER NOT NULL CHECK (seq > 0),"
    "  sender TEXT,"
    "  content TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  delivered_seq INTEGER,"
    "  PRIMARY KEY (thread, seq));"
    "CREATE INDEX inbox_queued ON inbox(thread, seq) WHERE delivered_seq IS NULL;"
    "CREATE TABLE subagents("
    "  thread TEXT PRIMARY KEY NOT NULL REFERENCES threads(id),"
    "  parent TEXT NOT NULL REFERENCES threads(id),"
    "  agent TEXT NOT NULL,"
    "  relationship TEXT NOT NULL,"
    "  name TEXT NOT NULL CHECK (length(name) > 0),"
    "  blocking INTEGER NOT NULL CHECK (blocking IN (0, 1)),"
    "  turn INTEGER NOT NULL,"
    "  idx INTEGER NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  outcome TEXT CHECK (outcome IS NULL OR json_valid(outcome)),"
    "  reports INTEGER NOT NULL DEFAULT 0,"
    "  reported_seq INTEGER NOT NULL DEFAULT 0,"
    "  UNIQUE (parent, turn, idx));"
    "CREATE TABLE thread_tags("
    "  thread TEXT NOT NULL REFERENCES threads(id),"
    "  tag TEXT NOT NULL CHECK (length(tag) BETWEEN 1 AND 512),"
    "  PRIMARY KEY (thread, tag));",
};
#define NMIGRATIONS ((int)(sizeof migrations / sizeof migrations[0]))
_Static_assert(NMIGRATIONS == TS_STORE_SCHEMA_VERSION, "one migration per schema version");
_Static_assert(TS__STORE_APP_ID == 1414751330, "application_id literal in migration 1");

/* ---- cached statements ----------------------------------------------------------- */

enum {
  ST_BEGIN,
  ST_COMMIT,
  ST_ROLLBACK,
  ST_THREAD_INSERT,
  ST_THREAD_EXISTS,
  ST_MSG_INSERT,
  ST_MSG_LIST,
  ST_CALL_START,
  ST_CALL_STATE,
  ST_CALL_RESULT,
  ST_CALL_MARK,
  ST_CALL_OPEN,
  ST_EVENT_INSERT,
  ST_EVENT_AFTER,
  ST_EVENT_LAST,
  ST_THREAD_STATE,
  ST_THREAD_GET,
  ST_THREAD_CHILDREN,
  ST_THREAD_TREE,
  ST_CALL_LIST,
  ST_WAIT_PARK,
  ST_WAIT_DELETE,
  ST_WAIT_LIST,
  ST_ENV_SET,
  ST_ENV_UNSET,
  ST_ENV_GET,
  ST_ENV_LIST,
  ST_ENV_SECRETS,
  ST_DECL_SET,
  ST_DECL_GET,
  ST_DECL_LIST,
  ST_SETTING_GET,
  ST_SETTING_SET,
  ST_INBOX_PUSH,
  ST_INBOX_NEXT,
  ST_INBOX_MARK,
  ST_INBOX_LIST,
  ST_INBOX_GET,
  ST_SUB_INSERT,
  ST_SUB_LIST,
  ST_SUB_GET,
  ST_SUB_BY_CALL,
  ST_SUB_REPORT,
  ST_SUB_CHECK,
  ST_TAG_INSERT,
  ST_COUNT
};

/* What the thread listings select, in ts_store_thread's order; `t` is the thread row.
 * A parked call overrides the recorded state (see store.h). */
#define THREAD_COLS                                                                        \
  "t.id, t.parent, t.workspace, CASE WHEN EXISTS (SELECT 1 FROM call_waits w WHERE "        \
  "w.thread = t.id) THEN 'waiting_for_variable' ELSE t.state END, t.created_at, "           \
  "max(t.created_at, coalesce((SELECT max(created_at) FROM messages m WHERE m.thread = "    \
  "t.id), 0), coalesce((SELECT max(max(started_at), coalesce(max(finished_at), 0)) FROM "   \
  "call_starts c WHERE c.thread = t.id), 0), coalesce((SELECT max(parked_at) FROM "         \
  "call_waits w WHERE w.thread = t.id), 0)), (SELECT count(*) FROM messages m WHERE "       \
  "m.thread = t.id AND m.role = 'assistant'), (SELECT count(*) FROM call_starts c WHERE "   \
  "c.thread = t.id), (SELECT count(*) FROM threads k WHERE k.parent = t.id), "              \
  "(SELECT json_group_array(tag) FROM (SELECT tag FROM thread_tags g WHERE g.thread = t.id " \
  "ORDER BY tag))"

#define ENV_COLS "thread, name, type, value, origin, set_at"
#define INBOX_COLS "seq, sender, content, created_at, coalesce(delivered_seq, 0)"
/* A parked call overrides the recorded state, as in THREAD_COLS. */
#define SUB_COLS                                                                           \
  "s.thread, s.parent, s.agent, s.relationship, s.name, s.blocking, s.turn, s.idx, "       \
  "CASE WHEN EXISTS (SELECT 1 FROM call_waits w WHERE w.thread = s.thread) THEN "           \
  "'waiting_for_variable' ELSE t.state END, s.outcome, s.reports, s.reported_seq, "         \
  "(SELECT coalesce(max(seq), 0) FROM messages m WHERE m.thread = s.thread), "              \
  "(SELECT count(*) FROM inbox i WHERE i.thread = s.thread AND i.delivered_seq IS NULL), "   \
  "s.created_at, t.workspace"
#define DECL_COLS "thread, name, type, required, scoped, description, declared_by"

static const char *const stmt_sql[ST_COUNT] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_THREAD_INSERT] = "INSERT INTO threads(id, created_at, meta, parent, workspace) "
                         "VALUES (?1, ?2, ?3, ?4, ?5)",
    [ST_THREAD_EXISTS] = "SELECT 1 FROM threads WHERE id = ?1",
    [ST_MSG_INSERT] =
        "INSERT INTO messages(thread, seq, role, content, tool_call_id, tool_name, "
        "is_error, created_at) VALUES (?1, (SELECT coalesce(max(seq), 0) + 1 FROM messages "
        "WHERE thread = ?1), ?2, ?3, ?4, ?5, ?6, ?7) RETURNING seq",
    [ST_MSG_LIST] = "SELECT seq, role, content, tool_call_id, tool_name, is_error, created_at "
                    "FROM messages WHERE thread = ?1 AND seq > ?2 ORDER BY seq",
    /* A re-start of an unfinished call counts an attempt; a finished call, or a
     * different call at the same place, updates nothing and returns no row. */
    [ST_CALL_START] =
        "INSERT INTO call_starts(thread, turn, idx, call_id, tool, args, started_at) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (thread, turn, idx) DO UPDATE "
        "SET attempts = attempts + 1, started_at = excluded.started_at "
        "WHERE state = 'started' AND call_id = excluded.call_id AND tool = excluded.tool "
        "RETURNING attempts",
    [ST_CALL_STATE] = "SELECT state FROM call_starts WHERE thread = ?1 AND turn = ?2 AND idx = ?3",
    [ST_CALL_RESULT] =
        "INSERT INTO messages(thread, seq, role, content, tool_call_id, tool_name, "
        "is_error, created_at) SELECT ?1, (SELECT coalesce(max(seq), 0) + 1 FROM messages "
        "WHERE thread = ?1), 'tool', ?4, call_id, tool, ?5, ?6 FROM call_starts "
        "WHERE thread = ?1 AND turn = ?2 AND idx = ?3 AND state = 'started' RETURNING seq",
    [ST_CALL_MARK] = "UPDATE call_starts SET state = 'finished', finished_at = ?4, "
                     "result_seq = ?5 WHERE thread = ?1 AND turn = ?2 AND idx = ?3 "
                     "AND state = 'started'",
    [ST_CALL_OPEN] = "SELECT turn, idx, call_id, tool, args, attempts, started_at "
                     "FROM call_starts WHERE thread = ?1 AND state = 'started' "
                     "ORDER BY turn, idx",
    [ST_EVENT_INSERT] = "INSERT INTO events(thread, seq, json) SELECT ?1, ?2, ?3 "
                        "WHERE ?2 > (SELECT coalesce(max(seq), 0) FROM events "
                        "WHERE thread = ?1)",
    [ST_EVENT_AFTER] = "SELECT seq, json FROM events WHERE thread = ?1 AND seq > ?2 "
                       "ORDER BY seq LIMIT ?3",
    [ST_EVENT_LAST] = "SELECT coalesce(max(seq), 0) FROM events WHERE thread = ?1",
    [ST_THREAD_STATE] = "UPDATE threads SET state = ?2 WHERE id = ?1",
    [ST_THREAD_GET] = "SELECT " THREAD_COLS ", 0 FROM threads t WHERE t.id = ?1",
    [ST_THREAD_CHILDREN] = "SELECT " THREAD_COLS ", 0 FROM threads t WHERE t.parent = ?1 "
                           "ORDER BY t.rowid",
    /* Depth first, children in creation (rowid) order: the path of zero-padded rowids
     * sorts each subtree right after its root. */
    [ST_THREAD_TREE] =
        "WITH RECURSIVE tree(id, depth, path) AS (SELECT id, 0, printf('%020d', rowid) "
        "FROM threads WHERE parent IS NULL UNION ALL SELECT k.id, tree.depth + 1, "
        "tree.path || '/' || printf('%020d', k.rowid) FROM threads k JOIN tree ON "
        "k.parent = tree.id) SELECT " THREAD_COLS ", tree.depth FROM tree JOIN threads t "
        "ON t.id = tree.id ORDER BY tree.path",
    [ST_CALL_LIST] =
        "SELECT c.turn, c.idx, c.call_id, c.tool, c.args, c.attempts, c.started_at, "
        "c.state = 'finished', coalesce(c.finished_at, 0), m.content, m.is_error FROM "
        "call_starts c LEFT JOIN messages m ON m.thread = c.thread AND m.seq = c.result_seq "
        "WHERE c.thread = ?1 ORDER BY c.turn, c.idx",
    /* A call that has a start record is past parking: no row then. */
    [ST_WAIT_PARK] =
        "INSERT INTO call_waits(thread, turn, idx, call_id, tool, args, variable, parked_at) "
        "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8 WHERE NOT EXISTS (SELECT 1 FROM call_starts "
        "WHERE thread = ?1 AND turn = ?2 AND idx = ?3) ON CONFLICT (thread, turn, idx) DO "
        "UPDATE SET call_id = excluded.call_id, tool = excluded.tool, args = excluded.args, "
        "variable = excluded.variable, parked_at = excluded.parked_at",
    [ST_WAIT_DELETE] = "DELETE FROM call_waits WHERE thread = ?1 AND turn = ?2 AND idx = ?3",
    [ST_WAIT_LIST] = "SELECT thread, turn, idx, call_id, tool, args, variable, parked_at FROM "
                     "call_waits WHERE ?1 IS NULL OR thread = ?1 ORDER BY thread, turn, idx",
    [ST_ENV_SET] = "INSERT INTO env_values(" ENV_COLS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
                   "ON CONFLICT (thread, name) DO UPDATE SET type = excluded.type, "
                   "value = excluded.value, origin = excluded.origin, set_at = excluded.set_at",
    [ST_ENV_UNSET] = "DELETE FROM env_values WHERE thread = ?1 AND name = ?2",
    [ST_ENV_GET] = "SELECT " ENV_COLS " FROM env_values WHERE thread = ?1 AND name = ?2",
    [ST_ENV_LIST] = "SELECT " ENV_COLS " FROM env_values WHERE thread = ?1 ORDER BY name",
    [ST_ENV_SECRETS] = "SELECT EXISTS (SELECT 1 FROM env_values WHERE type = 'secret')",
    [ST_DECL_SET] = "INSERT INTO env_decls(" DECL_COLS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
                    "ON CONFLICT (thread, name) DO UPDATE SET type = excluded.type, "
                    "required = excluded.required, scoped = excluded.scoped, "
                    "description = excluded.description, declared_by = excluded.declared_by",
    [ST_DECL_GET] = "SELECT " DECL_COLS " FROM env_decls WHERE thread = ?1 AND name = ?2",
    [ST_DECL_LIST] = "SELECT " DECL_COLS " FROM env_decls WHERE thread = ?1 ORDER BY name",
    [ST_SETTING_GET] = "SELECT value FROM settings WHERE name = ?1",
    [ST_SETTING_SET] = "INSERT INTO settings(name, value) VALUES (?1, ?2) ON CONFLICT (name) "
                       "DO UPDATE SET value = excluded.value",
    [ST_INBOX_PUSH] = "INSERT INTO inbox(thread, seq, sender, content, created_at) VALUES (?1, "
                      "(SELECT coalesce(max(seq), 0) + 1 FROM inbox WHERE thread = ?1), ?2, ?3, "
                      "?4) RETURNING seq",
    [ST_INBOX_NEXT] = "SELECT seq, sender, content FROM inbox WHERE thread = ?1 AND "
                      "delivered_seq IS NULL ORDER BY seq LIMIT 1",
    [ST_INBOX_MARK] = "UPDATE inbox SET delivered_seq = ?3 WHERE thread = ?1 AND seq = ?2",
    [ST_INBOX_LIST] = "SELECT " INBOX_COLS " FROM inbox WHERE thread = ?1 AND (?2 IS NULL OR "
                      "delivered_seq IS NULL) ORDER BY seq",
    [ST_INBOX_GET] = "SELECT " INBOX_COLS " FROM inbox WHERE thread = ?1 AND seq = ?2",
    [ST_SUB_INSERT] = "INSERT INTO subagents(thread, parent, agent, relationship, name, blocking, "
                      "turn, idx, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    [ST_SUB_LIST] = "SELECT " SUB_COLS " FROM subagents s JOIN threads t ON t.id = s.thread "
                    "WHERE s.parent = ?1 ORDER BY t.rowid",
    [ST_SUB_GET] = "SELECT " SUB_COLS " FROM subagents s JOIN threads t ON t.id = s.thread "
                   "WHERE s.thread = ?1",
    [ST_SUB_BY_CALL] = "SELECT " SUB_COLS " FROM subagents s JOIN threads t ON t.id = s.thread "
                       "WHERE s.parent = ?1 AND s.turn = ?2 AND s.idx = ?3",
    /* only a conversation that moved since the last report is reported (a session run
     * again after a crash, with nothing new, is not) */
    [ST_SUB_REPORT] = "UPDATE subagents SET outcome = ?2, reports = reports + 1, reported_seq = "
                      "(SELECT coalesce(max(seq), 0) FROM messages WHERE thread = ?1) "
                      "WHERE thread = ?1 AND (reports = 0 OR reported_seq <> (SELECT "
                      "coalesce(max(seq), 0) FROM messages WHERE thread = ?1)) RETURNING parent",
    /* a report that changed nothing: is it a subagent, and would its outcome have passed */
    [ST_SUB_CHECK] = "SELECT json_valid(?2) FROM subagents WHERE thread = ?1",
    [ST_TAG_INSERT] = "INSERT INTO thread_tags(thread, tag) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
};

struct ts_store {
  sqlite3 *db;
  sqlite3_stmt *st[ST_COUNT];
  int in_cb; /* inside a callback: any use of the store is refused */
  char path[TS_STORE_PATH_MAX];
  char err[768];
};

static const char *const role_names[] = {"system", "user", "assistant", "tool"};

const char *ts_store_role_name(ts_store_role role) {
  return (unsigned)role < 4 ? role_names[role] : NULL;
}

static int role_parse(const unsigned char *t, ts_store_role *out) {
  for (int i = 0; i < 4; i++)
    if (t && !strcmp((const char *)t, role_names[i])) {
      *out = (ts_store_role)i;
      return 0;
    }
  return -1;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- errors ---------------------------------------------------------------------- */

static int map_rc(int rc) {
  switch (rc & 0xff) {
    case SQLITE_NOMEM: return TS_E_NOMEM;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return TS_E_STORE_BUSY;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return TS_E_STORE_CORRUPT;
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_PROTOCOL: return TS_E_STORE_IO;
    case SQLITE_READONLY: return TS_E_STORE_READONLY;
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_AUTH: return TS_E_STORE_OPEN;
    case SQLITE_TOOBIG: return TS_E_LIMIT;
    case SQLITE_RANGE:
    case SQLITE_MISMATCH: return TS_E_INVAL;
    case SQLITE_CONSTRAINT:
      if (rc == SQLITE_CONSTRAINT_FOREIGNKEY) return TS_E_STORE_NO_THREAD;
      if (rc == SQLITE_CONSTRAINT_CHECK || rc == SQLITE_CONSTRAINT_NOTNULL) return TS_E_INVAL;
      return TS_E_STORE_SQL;
    default: return TS_E_STORE_SQL;
  }
}

static void say(char *buf, size_t cap, const char *fmt, ...) {
  if (!buf || !cap) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, cap, fmt, ap);
  va_end(ap);
}

/* Records a failure that is not SQLite's and returns `code`. */
static int fail(ts_store *s, int code, const char *what, const char *detail) {
  say(s->err, sizeof s->err, "%s: %s", what, detail ? detail : ts_err_message(code));
  return code;
}

/* Records SQLite's failure `rc` (the message is read now, before any reset). */
static int sql_fail(ts_store *s, int rc, const char *what, const char *thread) {
  int code = map_rc(rc);
  if (code == TS_E_STORE_NO_THREAD && thread)
    say(s->err, sizeof s->err, "%s: no thread \"%s\"", what, thread);
  else
    say(s->err, sizeof s->err, "%s: %s (%s)", what, sqlite3_errmsg(s->db),
        ts_err_name(code));
  return code;
}

/* ---- statement helpers ----------------------------------------------------------- */

static int get(ts_store *s, int id, sqlite3_stmt **out, const char *what) {
  if (!s->st[id]) {
    int rc = sqlite3_prepare_v3(s->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
                                &s->st[id], NULL);
    if (rc != SQLITE_OK) return sql_fail(s, rc, what, NULL);
  }
  *out = s->st[id];
  return 0;
}

static void done(sqlite3_stmt *st) {
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
}

/* Runs a statement that returns no row (BEGIN, COMMIT, ...). */
static int run(ts_store *s, int id, const char *what) {
  sqlite3_stmt *st = NULL;
  int r = get(s, id, &st, what);
  if (r) return r;
  int rc = sqlite3_step(st);
  if (rc != SQLITE_DONE) r = sql_fail(s, rc, what, NULL);
  done(st);
  return r;
}

static void rollback(ts_store *s) {
  if (sqlite3_get_autocommit(s->db)) return; /* SQLite already rolled back */
  char keep[sizeof s->err];
  memcpy(keep, s->err, sizeof keep); /* the first error is the one worth reporting */
  run(s, ST_ROLLBACK, "rollback");
  memcpy(s->err, keep, sizeof keep);
}

static int bind_text(sqlite3_stmt *st, int i, const char *p, size_t n) {
  if (!p) return sqlite3_bind_null(st, i);
  return sqlite3_bind_text64(st, i, n ? p : "", (sqlite3_uint64)n, SQLITE_STATIC, SQLITE_UTF8);
}

static int bind_str(sqlite3_stmt *st, int i, const char *p) {
  return bind_text(st, i, p, p ? strlen(p) : 0);
}

/* The checks every public function starts with. */
static int enter(ts_store *s, const char *thread, const char *what) {
  if (!s) return TS_E_INVAL;
  if (s->in_cb) return fail(s, TS_E_STORE_REENTRANT, what, NULL);
  s->err[0] = '\0';
  if (!thread) return fail(s, TS_E_INVAL, what, "thread id is NULL");
  if (!ts_thread_id_valid(thread, strlen(thread)))
    return fail(s, TS_E_INVAL, what, "thread id is empty, longer than 256 bytes, or "
                                     "holds a space or control byte");
  return 0;
}

/* ---- opening ----------------------------------------------------------------------- */

int ts_store_default_dir(char *buf, size_t cap) {
  if (!buf || !cap) return TS_E_INVAL;
  const char *base, *suffix;
  const char *e = getenv("TOOLSTREAM_DATA_DIR");
  if (e && *e) {
    base = e;
    suffix = "";
  } else if ((e = getenv("XDG_DATA_HOME")) && e[0] == '/') { /* relative: ignored (XDG) */
    base = e;
    suffix = "/toolstream";
  } else if ((e = getenv("HOME")) && *e) {
    base = e;
    suffix = "/.local/share/toolstream";
  } else {
    return TS_E_STORE_NO_DIR;
  }
  size_t n = strlen(base);
  while (*suffix && n > 1 && base[n - 1] == '/') n--; /* "/x/" + "/toolstream" */
  int w = snprintf(buf, cap, "%.*s%s", (int)n, base, suffix);
  if (w < 0 || (size_t)w >= cap) {
    buf[0] = '\0';
    return TS_E_LIMIT;
  }
  return 0;
}

/* mkdir -p with mode 0700 for every directory it creates; existing ones are left
 * as they are. */
static int make_dirs(char *path, char *why, size_t why_cap) {
  size_t n = strlen(path);
  for (size_t i = 1; i <= n; i++) {
    if (path[i] != '/' && path[i] != '\0') continue;
    char c = path[i];
    path[i] = '\0';
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
      int e = errno;
      say(why, why_cap, "cannot create directory %s: %s", path, strerror(e));
      path[i] = c;
      return e == EROFS ? TS_E_STORE_READONLY : TS_E_STORE_OPEN;
    }
    path[i] = c;
  }
  struct stat sb;
  if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    say(why, why_cap, "%s is not a directory", path);
    return TS_E_STORE_OPEN;
  }
  return 0;
}

/* The first row's first n columns of `sql`, as ints. */
static int select_ints(ts_store *s, const char *sql, int *out, int n) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      for (int i = 0; i < n; i++) out[i] = sqlite3_column_int(st, i);
      rc = SQLITE_OK;
    }
  }
  int r = rc == SQLITE_OK ? 0 : sql_fail(s, rc, sql, NULL);
  sqlite3_finalize(st);
  return r;
}

static int pragma_int(ts_store *s, const char *sql, int *out) { return select_ints(s, sql, out, 1); }

static int exec(ts_store *s, const char *sql, const char *what) {
  int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
  return rc == SQLITE_OK ? 0 : sql_fail(s, rc, what, NULL);
}

static int check_file(ts_store *s, int *version) {
  /* application_id and user_version from one statement, so from one read of the header:
   * read apart, another process's first migration could commit between them (the file
   * being created by two processes at once) and the pair would read as 0 and 1. */
  int ids[2] = {0, 0}, r;
  if ((r = select_ints(s, "SELECT a.application_id, v.user_version FROM pragma_application_id "
                          "AS a, pragma_user_version AS v", ids, 2)))
    return r;
  int app = ids[0];
  *version = ids[1];
  if ((app != 0 && app != TS__STORE_APP_ID) || (app == 0 && *version != 0))
    return fail(s, TS_E_STORE_CORRUPT, s->path,
                "not a toolstream database (another program's SQLite file)");
  if (*version > TS_STORE_SCHEMA_VERSION) {
    char d[128];
    snprintf(d, sizeof d, "schema version %d is newer than this toolstream's (%d)",
             *version, TS_STORE_SCHEMA_VERSION);
    return fail(s, TS_E_STORE_VERSION, s->path, d);
  }
  return 0;
}

static int migrate(ts_store *s) {
  for (;;) {
    int v = 0, r;
    if ((r = run(s, ST_BEGIN, "migrate: begin"))) return r;
    /* Re-read under the write lock: another process may have migrated meanwhile. */
    if ((r = check_file(s, &v))) {
      rollback(s);
      return r;
    }
    if (v >= TS_STORE_SCHEMA_VERSION) {
      rollback(s);
      return 0;
    }
    char set[64];
    snprintf(set, sizeof set, "PRAGMA user_version = %d", v + 1);
    if ((r = exec(s, migrations[v], "migrate")) || (r = exec(s, set, "migrate")) ||
        (r = run(s, ST_COMMIT, "migrate: commit"))) {
      rollback(s);
      return r;
    }
  }
}

static int configure(ts_store *s) {
  int v = 0, r;
  sqlite3_busy_timeout(s->db, TS_STORE_BUSY_MS);
  if ((r = exec(s, "PRAGMA foreign_keys = ON", "configure")))
    return r;
  if ((r = check_file(s, &v))) return r; /* before anything writes to the file */

  /* The switch to WAL takes the file exclusively, and SQLite answers a busy file here
   * without calling the busy handler (seen with processes opening a fresh store
   * together): so the wait is ours, as long as the busy timeout. */
  sqlite3_stmt *st = NULL;
  int rc;
  for (int waited = 0;; waited += 10) {
    rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    if ((rc & 0xFF) != SQLITE_BUSY || waited >= TS_STORE_BUSY_MS) break;
    sqlite3_finalize(st);
    st = NULL;
    sqlite3_sleep(10);
  }
  if (rc == SQLITE_ROW) {
    const unsigned char *mode = sqlite3_column_text(st, 0);
    rc = mode && !strcmp((const char *)mode, "wal") ? SQLITE_OK : SQLITE_CANTOPEN;
    if (rc != SQLITE_OK) {
      sqlite3_finalize(st);
      return fail(s, TS_E_STORE_OPEN, s->path, "cannot switch the journal to WAL mode");
    }
  }
  r = rc == SQLITE_OK ? 0 : sql_fail(s, rc, "journal_mode", NULL);
  sqlite3_finalize(st);
  if (r) return r;
  if ((r = exec(s, "PRAGMA synchronous = FULL", "configure"))) return r;
  return migrate(s);
}

int ts_store_open(const char *dir, ts_store **out, char *why, size_t why_cap) {
  if (why && why_cap) why[0] = '\0';
  if (!out || (dir && !*dir)) {
    say(why, why_cap, "%s", !out ? "no place for the store (out is NULL)"
                                 : "the data directory is an empty string");
    return TS_E_INVAL;
  }
  char d[TS_STORE_PATH_MAX];
  int r;
  if (dir) {
    if (strlen(dir) >= sizeof d) {
      say(why, why_cap, "data directory path longer than %d bytes", TS_STORE_PATH_MAX - 1);
      return TS_E_LIMIT;
    }
    strcpy(d, dir);
  } else if ((r = ts_store_default_dir(d, sizeof d)) != 0) {
    say(why, why_cap, "%s", r == TS_E_LIMIT ? "data directory path too long"
                                            : ts_err_message(r));
    return r;
  }
  ts_store *s = calloc(1, sizeof *s);
  if (!s) {
    say(why, why_cap, "out of memory");
    return TS_E_NOMEM;
  }
  if ((r = make_dirs(d, why, why_cap))) goto out;
  int w = snprintf(s->path, sizeof s->path, "%s/%s", d, TS_STORE_FILE);
  if (w < 0 || (size_t)w >= sizeof s->path) {
    say(why, why_cap, "database path longer than %d bytes", TS_STORE_PATH_MAX - 1);
    r = TS_E_LIMIT;
    goto out;
  }
  /* Create the file ourselves so that it is 0600 (SQLite would use 0644 & ~umask);
   * SQLite gives the -wal and -shm files the database file's mode. Only when it does not
   * exist yet (O_EXCL): closing a descriptor of a file drops every POSIX lock this
   * process holds on it, including those of a store already open on it here, after
   * which another process's close would take the file for its last user and delete
   * the WAL under our feet. */
  int fd = open(s->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST) fd = -2; /* there already: SQLite opens it */
  if (fd == -1) {
    int e = errno;
    say(why, why_cap, "cannot open %s: %s", s->path, strerror(e));
    r = e == EROFS ? TS_E_STORE_READONLY : TS_E_STORE_OPEN;
    goto out;
  }
  if (fd >= 0) close(fd);
  int rc = sqlite3_open_v2(s->path, &s->db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE,
                           NULL);
  if (rc != SQLITE_OK) {
    r = s->db ? sql_fail(s, rc, s->path, NULL) : TS_E_NOMEM;
    say(why, why_cap, "%s", s->db ? s->err : "out of memory opening SQLite");
    goto out;
  }
  if ((r = configure(s))) {
    say(why, why_cap, "%s", s->err);
    goto out;
  }
  s->err[0] = '\0';
  *out = s;
  return 0;
out:
  for (int i = 0; i < ST_COUNT; i++) sqlite3_finalize(s->st[i]);
  sqlite3_close(s->db);
  free(s);
  return r;
}

void ts_store_close(ts_store *s) {
  if (!s || s->in_cb) return; /* closing from a callback would pull the rug: refused */
  for (int i = 0; i < ST_COUNT; i++) sqlite3_finalize(s->st[i]);
  sqlite3_close(s->db);
  free(s);
}

const char *ts_store_path(const ts_store *s) { return s ? s->path : ""; }

const char *ts_store_errmsg(const ts_store *s) { return s ? s->err : "no store"; }

int ts_store_schema_version(ts_store *s) {
  if (!s) return TS_E_INVAL;
  if (s->in_cb) return fail(s, TS_E_STORE_REENTRANT, "schema version", NULL);
  int v = 0, r = pragma_int(s, "PRAGMA user_version", &v);
  return r ? r : v;
}

/* ---- threads ---------------------------------------------------------------------- */

int ts_store_thread_create(ts_store *s, const char *thread, const char *meta_json) {
  return ts_store_thread_create_child(s, thread, NULL, NULL, meta_json);
}

int ts_store_thread_create_child(ts_store *s, const char *thread, const char *parent,
                                 const char *workspace, const char *meta_json) {
  static const char what[] = "create thread";
  sqlite3_stmt *st = NULL;
  int r = enter(s, thread, what);
  if (r) return r;
  if (parent && !ts_thread_id_valid(parent, strlen(parent)))
    return fail(s, TS_E_INVAL, what, "the parent's thread id is malformed");
  if (parent && !strcmp(parent, thread))
    return fail(s, TS_E_INVAL, what, "a thread cannot be its own parent");
  if ((r = get(s, ST_THREAD_INSERT, &st, what))) return r;
  bind_str(st, 1, thread);
  sqlite3_bind_int64(st, 2, now_ms());
  bind_str(st, 3, meta_json);
  bind_str(st, 4, parent);
  bind_str(st, 5, workspace);
  int rc = sqlite3_step(st);
  if (rc != SQLITE_DONE) {
    if (rc == SQLITE_CONSTRAINT_PRIMARYKEY) {
      say(s->err, sizeof s->err, "%s: thread \"%s\" exists", what, thread);
      r = TS_E_STORE_THREAD_EXISTS;
    } else if (rc == SQLITE_CONSTRAINT_FOREIGNKEY && parent) {
      say(s->err, sizeof s->err, "%s: no parent thread \"%s\"", what, parent);
      r = TS_E_STORE_NO_THREAD;
    } else {
      r = sql_fail(s, rc, what, thread);
    }
  }
  done(st);
  return r;
}

int ts_store_thread_exists(ts_store *s, const char *thread) {
  static const char what[] = "thread exists";
  sqlite3_stmt *st = NULL;
  int r = enter(s, thread, what);
  if (r || (r = get(s, ST_THREAD_EXISTS, &st, what))) return r;
  bind_str(st, 1, thread);
  int rc = sqlite3_step(st);
  r = rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : sql_fail(s, rc, what, thread);
  done(st);
  return r;
}

/* ---- messages ----------------------------------------------------------------------- */

int ts_store_append_message(ts_store *s, const char *thread, ts_store_role role,
                            const char *content, size_t len, const char *tool_call_id,
                            const char *tool_name, int is_error, uint64_t *seq_out) {
  static const char what[] = "append message";
  sqlite3_stmt *st = NULL;
  int r = enter(s, thread, what);
  if (r) return r;
  if (!ts_store_role_name(role)) return fail(s, TS_E_INVAL, what, "unknown role");
  if (!content && len) return fail(s, TS_E_INVAL, what, "content is NULL");
  if (role == TS_STORE_TOOL && !tool_call_id)
    return fail(s, TS_E_INVAL, what, "a tool message needs a tool_call_id");
  if ((r = get(s, ST_MSG_INSERT, &st, what))) return r;
  bind_str(st, 1, thread);
  bind_str(st, 2, role_names[role]);
  bind_text(st, 3, content ? content : "", len);
  bind_str(st, 4, tool_call_id);
  bind_str(st, 5, tool_name);
  sqlite3_bind_int(st, 6, is_error != 0);
  sqlite3_bind_int64(st, 7, now_ms());
  uint64_t seq = 0;
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    seq = (uint64_t)sqlite3_column_int64(st, 0);
    rc = sqlite3_step(st); /* to SQLITE_DONE: the statement's commit happens here */
  }
  if (rc != SQLITE_DONE) r = sql_fail(s, rc, what, thread);
  done(st);
  if (!r && seq_out) *seq_out = seq;
  return r;
}

/* Delivers rows of a SELECT already bound in `st` to `row`, which calls the user's
 * callback; shared by the three iterations. */
typedef struct { /* ISO C: function pointers cannot travel through void * */
  ts_store_message_cb msg;
  ts_store_call_cb call;
  ts_store_event_cb event;
  ts_store_thread_cb thread;
  ts_store_call_record_cb record;
  ts_store_parked_cb parked;
  ts_store_env_cb env;
  ts_store_decl_cb decl;
  ts_store_inbox_cb inbox;
  ts_store_subagent_cb sub;
  void *user;
} callbacks;

typedef int (*row_fn)(sqlite3_stmt *st, const callbacks *cb);

static int iterate(ts_store *s, sqlite3_stmt *st, row_fn row, const callbacks *cb,
                   const char *what, const char *thread) {
  int n = 0, r = 0, rc;
  while (n < INT_MAX && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    s->in_cb = 1;
    int stop = row(st, cb);
    s->in_cb = 0;
    if (stop) {
      r = fail(s, TS_E_ABORTED, what, NULL);
      break;
    }
    n++;
  }
  if (!r && n < INT_MAX && rc != SQLITE_DONE) r = sql_fail(s, rc, what, thread);
  done(st);
  return r ? r : n;
}

static size_t col_text(sqlite3_stmt *st, int i, const char **out) {
  const unsigned char *t = sqlite3_column_text(st, i);
  *out = t ? (const char *)t : "";
  return t ? (size_t)sqlite3_column_bytes(st, i) : 0;
}

static int message_row(sqlite3_stmt *st, const callbacks *cb) {
  ts_store_message m = {0};
  m.seq = (uint64_t)sqlite3_column_int64(st, 0);
  if (role_parse(sqlite3_column_text(st, 1), &m.role)) m.role = TS_STORE_USER; /* CHECKed */
  m.content_len = col_text(st, 2, &m.content);
  if (sqlite3_column_type(st, 3) != SQLITE_NULL) col_text(st, 3, &m.tool_call_id);
  if (sqlite3_column_type(st, 4) != SQLITE_NULL) col_text(st, 4, &m.tool_name);
  m.is_error = sqlite3_column_int(st, 5) != 0;
  m.created_at_ms = sqlite3_column_int64(st, 6);
  return cb->msg(cb->user, &m);
}

static sqlite3_int64 clamp_seq(uint64_t v) {
  return v > (uint64_t)INT64_MAX ? INT64_MAX : (sqlite3_int64)v;
}

int ts_store_messages(ts_store *s, const char *thread, uint64_t after_seq,
                      ts_store_message_cb cb, void *user) {
  static const char what[] = "list messages";
  sqlite3_stmt *st = NULL;
  int r = enter(s, thread, what);
  if (r) return r;
  if (!cb) return fail(s, TS_E_INVAL, what, "callback is NULL");
  if ((r = get(s, ST_MSG_LIST, &st, what))) return r;
  bind_str(st, 1, thread);
  sqlite3_bind_int64(st, 2, clamp_seq(after_seq));
  callbacks c = {.msg = cb, .user = user};
  return iterate(s, st, message_row, &c, what, thread);
}

/* ---- tool calls ----------------------------------------------------------------------- */

static void bind_call(sqlite3_stmt *st, const char *thread, uint32_t turn, uint32_t idx) {
  bind_str(st, 1, thread);
  sqlite3_bind_int64(st, 2, turn);
  sqlite3_bind_int64(st, 3, idx);
}

/* Why a call could not be started or finished: it is finished, or absent/different. */
static int call_state(ts_store *s, const char *thread, uint32_t turn, uint32_t idx,
                      const char *what, int absent) {
  sqlite3_stmt *st = NULL;
  int r = get(s, ST_CALL_STATE, &st, what);
  if (r) return r;
  bind_call(st, thread, turn, idx);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    const unsigned char *state = sqlite3_column_text(st, 0);
    if (state && !strcmp((const char *)state, "finished")) {
      say(s->err, sizeof s->err, "%s: call %u/%u of \"%s\" is already finished", what,
          (unsigned)turn, (unsigned)idx, thread);
      r = TS_E_STORE_CALL_FINISHED;
    } else {
      say(s->err, sizeof s->err,
          "%s: call %u/%u of \"%s\" was started with another call id or tool", what,
          (unsigned)turn, (unsigned)idx, thread);
      r = TS_E_INVAL;
    }
  } else if (rc == SQLITE_DONE) {
    say(s->err, sizeof s->err, "%s: call %u/%u of \"%s\" was never started", what,
        (unsigned)turn, (unsigned)idx, thread);
    r = absent;
  } else {
    r = sql_fail(s, rc, what, thread);
  }
  done(st);
  return r;
}

int ts_store_call_started(ts_store *s, const char *thread, uint32_t turn, uint32_t idx,
                          const char *call_id, const char *tool, const char *args,
                          size_t args_len, uint32_t *attempt_out) {
  static const char what[] = "call started";
  sqlite3_stmt *st = NULL;
  int r = enter(s, thread, what);
  if (r) return r;
  if (!call_id || !tool || !*tool || !args)
    return fail(s, TS_E_INVAL, what, "call id, tool name or arguments missing");
  sqlite3_stmt *unpark = NULL;
  if ((r = get(s, ST_CALL_START, &st, what)) || (r = get(s, ST_WAIT_DELETE, &unpark, what)) ||
      (r = run(s, ST_BEGIN, what)))
    return r;
  bind_call(st, thread, turn, idx);
  bind_str(st, 4, call_id);
  bind_str(st, 5, tool);
  bind_text(st, 6, args, args_len);
  sqlite3_bind_int64(st, 7, now_ms());
  int64_t attempts = 0;
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    attempts = sqlite3_column_int64(st, 0);
    rc = sqlite3_step(st);
  }
  if (rc != SQLITE_DONE) r = sql_fail(s, rc, what, thread);
  if (!r && rc == SQLITE_DONE && attempts == 0) r = 1; /* nothing changed: find out why */
  done(st);
  if (!r) { /* a parked call is parked no longer: in the same transaction as its start */
    bind_call(unpark, thread, turn, idx);
    rc = sqlite3_step(unpark);
    if (rc != SQLITE_DONE) r = sql_fail(s, rc, what, thread);
    done(unpark);
  }
  if (!r) r = run(s, ST_COMMIT, what);
  if (r) rollback(s);
  if (r == 1) return call_state(s, thread, turn, idx, what, TS_E_STORE_SQL);
  if (!r && attempt_out) *attempt_out = (uint32_t)attempts;
  return r;
}

int ts_store_call_finished(ts_store *s, const char *thread, uint32_t turn, uint32_t idx,
                           const char *content, size_t len, int is_error,
                           uint64_t *seq_out) {
  static const char what[] = "call finished";
  sqlite3_stmt *ins = NULL, *mark = NULL;
  int r = enter(s, thread, what);
  if (r) return r;
  if (!content && len) return fail(s, TS_E_INVAL, what, "content is NULL");
  if ((r = get(s, ST_CALL_RESULT, &ins, what)) || (r = get(s, ST_CALL_MARK, &mark, what)) ||
      (r = run(s, ST_BEGIN, what)))
    return r;
  int64_t now = now_ms();
  uint64_t seq = 0;
  bind_call(ins, thread, turn, idx);
  bind_text(ins, 4, content ? content : "", len);
  sqlite3_bind_int(ins, 5, is_error != 0);
  sqlite3_bind_int64(ins, 6, now);
  int rc = sqlite3_step(ins);
  if (rc == SQLITE_ROW) {
    seq = (uint64_t)sqlite3_column_int64(ins, 0);
    rc = sqlite3_step(ins);
  }
  if (rc != SQLITE_DONE) r = sql_fail(s, rc, what, thread);
  done(ins);
  if (!r && seq == 0) { /* no such unfinished call */
    rollback(s);
    return call_state(s, thread, turn, idx, what, TS_E_STORE_NO_CALL);
  }
  if (!r) {
    bind_call(mark, thread, turn, idx);
    sqlite3_bind_int64(mark, 4, now);
    sqlite3_bind_int64(mark, 5, (sqlite3_int64)seq);
    rc = sqlite3_step(mark);
    if (rc != SQLITE_DONE) r = sql_fail(s, rc, what, thread);
    else if (sqlite3_changes(s->db) != 1) r = fail(s, TS_E_STORE_SQL, what, "mark not applied");
    done(mark);
  }
  if (!r) r = run(s, ST_COMMIT, what);
  if (r) {
    rollback(s);
    return r;
  }
  if (seq_out) *seq_out = seq;
  return 0;
}

static int call_row(sqlite3_stmt *st, const callbacks *cb) {
  ts_store_call c = {0};
  c.turn = (uint32_t)sqlite3_column_int64(st, 0);
  c.idx = (uint32_t)sqlite3_column_int64(st, 1);
  col_text(st, 2, &c.call_id);
  col_text(st, 3, &c.tool);
  c.args_len = col_text(st, 4, &c.args);
  c.attempts = (uint32_t)sqlite3_column_int64(st, 5);
  c.started_at_ms = sqlite3_column_int64(st, 6);
  return cb->call(cb->user, &c);
}

int ts_store_unfinished_calls(ts_store *s, const char *thread, ts_store_call_cb cb,
                              void *user) {
  static const char what[] = "unfinished calls";
  sqlite3_stmt *st = NULL;
  int r = enter(s, thread, what);
  if (r) return r;
  if (!cb) return fail(s, TS_E_INVAL, what, "callback is NULL");
  if ((r = get(s, ST_CALL_OPEN, &st, what))) return r;
  bind_str(st, 1, thread);
  callbacks c = {.call = cb, .user = user};
  return iterate(s, st, call_row, &c, what, thread);
}

/* ---- events ------------------------------------------------------------------------- */

int ts_store_append_event(ts_store *s, const char *thread, uint64_t seq, const char *json,
                          size_t len) {
  static const char what[] = "append event";
  sqlite3_stmt *st = NULL;
  int r = enter(s, thread, what);
  if (r) return r;
  if (seq == 0 || seq > (uint64_t)INT64_MAX)
    return fail(s, TS_E_INVAL, what, "seq must be 1 .. 2^63-1");
  if (!json) return fail(s, TS_E_INVAL, what, "json is NULL");
  if ((r = get(s, ST_EVENT_INSERT, &st, what))) return r;
  bind_str(st, 1, thread);
  sqlite3_bind_int64(st, 2, (sqlite3_int64)seq);
  bind_text(st, 3, json, len);
  int rc = sqlite3_step(st);
  if (rc != SQLITE_DONE) {
    r = sql_fail(s, rc, what, thread);
  } else if (sqlite3_changes(s->db) == 0) {
    say(s->err, sizeof s->err, "%s: seq %llu of \"%s\" is not above the last stored one",
        what, (unsigned long long)seq, thread);
    r = TS_E_STORE_SEQ;
  }
  done(st);
  return r;
}

static int event_row(sqlite3_stmt *st, const callbacks *cb) {
  const char *json;
  size_t len = col_text(st, 1, &json);
  return cb->event(cb->user, (uint64_t)sqlite3_column_int64(st, 0), json, len);
}

int ts_store_events_after(ts_store *s, const char *thread, uint64_t after_seq, size_t max,
                          ts_store_event_cb cb, void *user) {
  static const char what[] = "events after";
  sqlite3_stmt *st = NULL;
  int r = enter(s, thread, what);
  if (r) return r;
  if (!cb) return fail(s, TS_E_INVAL, what, "callback is NULL");
  if ((r = get(s, ST_EVENT_AFTER, &st, what))) return r;
  bind_str(st, 1, thread);
  sqlite3_bind_int64(st, 2, clamp_seq(after_seq));
  sqlite3_bind_int64(st, 3, max == 0 || max > (size_t)INT_MAX ? -1 : (sqlite3_int64)max);
  callbacks c = {.event = cb, .user = user};
  return iterate(s, st, event_row, &c, what, thread);
}

int ts_store_last_event_seq(ts_store *s, const char *thread, uint64_t *seq_out) {
  static const char what[] = "last event seq";
  sqlite3_stmt *st = NULL;
  int r = enter(s, thread, what);
  if (r) return r;
  if (!seq_out) return fail(s, TS_E_INVAL, what, "seq_out is NULL");
  if ((r = get(s, ST_EVENT_LAST, &st, what))) return r;
  bind_str(st, 1, thread);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) *seq_out = (uint64_t)sqlite3_column_int64(st, 0);
  else r = sql_fail(s, rc, what, thread);
  done(st);
  return r;
}

/* ---- the thread tree ------------------------------------------------------------------ */

static const char *const thread_states[] = {"idle", "running", "waiting_for_variable",
                                            "done", "failed", "interrupted"};

int ts_store_thread_set_state(ts_store *s, const char *thread, const char *state) {
  static const char what[] = "set thread state";
  sqlite3_stmt *st = NULL;
  int r = enter(s, thread, what), known = 0;
  if (r) return r;
  for (size_t i = 0; state && i < sizeof thread_states / sizeof thread_states[0]; i++)
    known |= !strcmp(state, thread_states[i]);
  if (!known) return fail(s, TS_E_INVAL, what, "state is not one of " TS_STORE_STATES);
  if ((r = get(s, ST_THREAD_STATE, &st, what))) return r;
  bind_str(st, 1, thread);
  bind_str(st, 2, state);
  int rc = sqlite3_step(st);
  if (rc != SQLITE_DONE) r = sql_fail(s, rc, what, thread);
  else if (sqlite3_changes(s->db) == 0) r = fail(s, TS_E_STORE_NO_THREAD, what, thread);
  done(st);
  return r;
}

static const char *col_opt(sqlite3_stmt *st, int i) {
  return sqlite3_column_type(st, i) == SQLITE_NULL ? NULL
                                                   : (const char *)sqlite3_column_text(st, i);
}

static int thread_row(sqlite3_stmt *st, const callbacks *cb) {
  ts_store_thread t = {0};
  col_text(st, 0, &t.id);
  t.parent = col_opt(st, 1);
  t.workspace = col_opt(st, 2);
  col_text(st, 3, &t.state);
  t.created_at_ms = sqlite3_column_int64(st, 4);
  t.last_activity_ms = sqlite3_column_int64(st, 5);
  t.turns = (uint32_t)sqlite3_column_int64(st, 6);
  t.calls = (uint32_t)sqlite3_column_int64(st, 7);
  t.children = (uint32_t)sqlite3_column_int64(st, 8);
  col_text(st, 9, &t.tags);
  t.depth = (uint32_t)sqlite3_column_int64(st, 10);
  return cb->thread(cb->user, &t);
}

/* The shared body of the listings: binds the thread id (?1, unless NULL) and the name
 * (?2, unless NULL) and iterates; the caller checked its callback. */
static int list(ts_store *s, int id, const char *thread, const char *name, row_fn row,
                const callbacks *c, const char *what) {
  sqlite3_stmt *st = NULL;
  int r = thread ? enter(s, thread, what) : (s ? (s->in_cb ? fail(s, TS_E_STORE_REENTRANT,
                                                                  what, NULL) : 0)
                                               : TS_E_INVAL);
  if (r) return r;
  s->err[0] = '\0';
  if ((r = get(s, id, &st, what))) return r;
  if (thread) bind_str(st, 1, thread);
  if (name) bind_str(st, 2, name);
  return iterate(s, st, row, c, what, thread);
}

int ts_store_threads(ts_store *s, ts_store_thread_cb cb, void *user) {
  if (!cb) return s ? fail(s, TS_E_INVAL, "list threads", "callback is NULL") : TS_E_INVAL;
  callbacks c = {.thread = cb, .user = user};
  return list(s, ST_THREAD_TREE, NULL, NULL, thread_row, &c, "list threads");
}

int ts_store_thread_get(ts_store *s, const char *thread, ts_store_thread_cb cb, void *user) {
  if (!cb) return s ? fail(s, TS_E_INVAL, "get thread", "callback is NULL") : TS_E_INVAL;
  callbacks c = {.thread = cb, .user = user};
  return list(s, ST_THREAD_GET, thread, NULL, thread_row, &c, "get thread");
}

int ts_store_thread_children(ts_store *s, const char *thread, ts_store_thread_cb cb,
                             void *user) {
  if (!cb) return s ? fail(s, TS_E_INVAL, "children", "callback is NULL") : TS_E_INVAL;
  callbacks c = {.thread = cb, .user = user};
  return list(s, ST_THREAD_CHILDREN, thread, NULL, thread_row, &c, "children");
}

/* ---- calls with their results, parked calls ------------------------------------------------ */

static int record_row(sqlite3_stmt *st, const callbacks *cb) {
  ts_store_call_record c;
  memset(&c, 0, sizeof c);
  c.start.turn = (uint32_t)sqlite3_column_int64(st, 0);
  c.start.idx = (uint32_t)sqlite3_column_int64(st, 1);
  col_text(st, 2, &c.start.call_id);
  col_text(st, 3, &c.start.tool);
  c.start.args_len = col_text(st, 4, &c.start.args);
  c.start.attempts = (uint32_t)sqlite3_column_int64(st, 5);
  c.start.started_at_ms = sqlite3_column_int64(st, 6);
  c.finished = sqlite3_column_int(st, 7) != 0;
  c.finished_at_ms = sqlite3_column_int64(st, 8);
  if (sqlite3_column_type(st, 9) != SQLITE_NULL) c.result_len = col_text(st, 9, &c.result);
  c.result_is_error = sqlite3_column_int(st, 10) != 0;
  return cb->record(cb->user, &c);
}

int ts_store_calls(ts_store *s, const char *thread, ts_store_call_record_cb cb, void *user) {
  if (!cb) return s ? fail(s, TS_E_INVAL, "list calls", "callback is NULL") : TS_E_INVAL;
  callbacks c = {.record = cb, .user = user};
  return list(s, ST_CALL_LIST, thread, NULL, record_row, &c, "list calls");
}

int ts_store_call_park(ts_store *s, const char *thread, uint32_t turn, uint32_t idx,
                       const char *call_id, const char *tool, const char *args,
                       size_t args_len, const char *variable) {
  static const char what[] = "park call";
  sqlite3_stmt *st = NULL;
  int r = enter(s, thread, what);
  if (r) return r;
  if (!call_id || !tool || !*tool || !args || !variable || !*variable)
    return fail(s, TS_E_INVAL, what, "call id, tool name, arguments or variable missing");
  if ((r = get(s, ST_WAIT_PARK, &st, what))) return r;
  bind_call(st, thread, turn, idx);
  bind_str(st, 4, call_id);
  bind_str(st, 5, tool);
  bind_text(st, 6, args, args_len);
  bind_str(st, 7, variable);
  sqlite3_bind_int64(st, 8, now_ms());
  int rc = sqlite3_step(st);
  if (rc != SQLITE_DONE) {
    r = sql_fail(s, rc, what, thread);
  } else if (sqlite3_changes(s->db) == 0) {
    say(s->err, sizeof s->err, "%s: call %u/%u of \"%s\" has started already", what,
        (unsigned)turn, (unsigned)idx, thread);
    r = TS_E_STORE_CALL_FINISHED;
  }
  done(st);
  return r;
}

static int parked_row(sqlite3_stmt *st, const callbacks *cb) {
  ts_store_parked p;
  memset(&p, 0, sizeof p);
  col_text(st, 0, &p.thread);
  p.turn = (uint32_t)sqlite3_column_int64(st, 1);
  p.idx = (uint32_t)sqlite3_column_int64(st, 2);
  col_text(st, 3, &p.call_id);
  col_text(st, 4, &p.tool);
  p.args_len = col_text(st, 5, &p.args);
  col_text(st, 6, &p.variable);
  p.parked_at_ms = sqlite3_column_int64(st, 7);
  return cb->parked(cb->user, &p);
}

int ts_store_parked_calls(ts_store *s, const char *thread, ts_store_parked_cb cb, void *user) {
  if (!cb) return s ? fail(s, TS_E_INVAL, "parked calls", "callback is NULL") : TS_E_INVAL;
  callbacks c = {.parked = cb, .user = user};
  return list(s, ST_WAIT_LIST, thread, NULL, parked_row, &c, "parked calls");
}

/* ---- environments ------------------------------------------------------------------------- */

int ts_store_var_name_valid(const char *name) {
  size_t n = name ? strlen(name) : 0;
  if (n == 0 || n > TS_STORE_VAR_NAME_MAX) return 0;
  if (!((name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z') ||
        name[0] == '_'))
    return 0;
  for (size_t i = 1; i < n; i++) {
    char c = name[i];
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
          c == '_' || c == '.' || c == '-'))
      return 0;
  }
  return 1;
}

static int check_name(ts_store *s, const char *name, const char *what) {
  if (ts_store_var_name_valid(name)) return 0;
  return fail(s, TS_E_INVAL, what,
              "a variable name is 1..128 bytes: a letter or _, then letters, digits, _ . -");
}

static const char *type_name(ts_store_var_type t) { return t == TS_STORE_SECRET ? "secret" : "text"; }
/* ... and back, for a row's type column. */
static ts_store_var_type type_of(const char *name) {
  return name && !strcmp(name, "secret") ? TS_STORE_SECRET : TS_STORE_TEXT;
}

int ts_store_env_set(ts_store *s, const char *thread, const char *name, ts_store_var_type type,
                     const void *value, size_t len, const char *origin) {
  static const char what[] = "set variable";
  sqlite3_stmt *st = NULL;
  int r = enter(s, thread, what);
  if (r || (r = check_name(s, name, what))) return r;
  if ((!value && len) || (type != TS_STORE_TEXT && type != TS_STORE_SECRET) || !origin)
    return fail(s, TS_E_INVAL, what, "value, type or origin missing");
  if ((r = get(s, ST_ENV_SET, &st, what))) return r;
  bind_str(st, 1, thread);
  bind_str(st, 2, name);
  bind_str(st, 3, type_name(type));
  sqlite3_bind_blob64(st, 4, len ? value : "", (sqlite3_uint64)len, SQLITE_STATIC);
  bind_str(st, 5, origin);
  sqlite3_bind_int64(st, 6, now_ms());
  int rc = sqlite3_step(st);
  if (rc != SQLITE_DONE) r = sql_fail(s, rc, what, thread);
  done(st);
  return r;
}

int ts_store_env_unset(ts_store *s, const char *thread, const char *name) {
  static const char what[] = "unset variable";
  sqlite3_stmt *st = NULL;
  int r = enter(s, thread, what);
  if (r || (r = check_name(s, name, what)) || (r = get(s, ST_ENV_UNSET, &st, what))) return r;
  bind_str(st, 1, thread);
  bind_str(st, 2, name);
  int rc = sqlite3_step(st);
  r = rc == SQLITE_DONE ? sqlite3_changes(s->db) > 0 : sql_fail(s, rc, what, thread);
  done(st);
  return r;
}

static int env_row(sqlite3_stmt *st, const callbacks *cb) {
  ts_store_env_value v;
  memset(&v, 0, sizeof v);
  col_text(st, 0, &v.thread);
  col_text(st, 1, &v.name);
  const char *t;
  col_text(st, 2, &t);
  v.type = type_of(t);
  const char *val;
  v.len = col_text(st, 3, &val); /* a blob read as text gets its NUL */
  v.value = val;
  col_text(st, 4, &v.origin);
  v.set_at_ms = sqlite3_column_int64(st, 5);
  return cb->env(cb->user, &v);
}

int ts_store_env_get(ts_store *s, const char *thread, const char *name, ts_store_env_cb cb,
                     void *user) {
  static const char what[] = "get variable";
  if (!cb) return s ? fail(s, TS_E_INVAL, what, "callback is NULL") : TS_E_INVAL;
  int r = s ? check_name(s, name, what) : TS_E_INVAL;
  if (r) return r;
  callbacks c = {.env = cb, .user = user};
  return list(s, ST_ENV_GET, thread, name, env_row, &c, what);
}

int ts_store_env_list(ts_store *s, const char *thread, ts_store_env_cb cb, void *user) {
  if (!cb) return s ? fail(s, TS_E_INVAL, "list variables", "callback is NULL") : TS_E_INVAL;
  callbacks c = {.env = cb, .user = user};
  return list(s, ST_ENV_LIST, thread, NULL, env_row, &c, "list variables");
}

int ts_store_env_has_secrets(ts_store *s) {
  static const char what[] = "any secrets";
  sqlite3_stmt *st = NULL;
  if (!s) return TS_E_INVAL;
  if (s->in_cb) return fail(s, TS_E_STORE_REENTRANT, what, NULL);
  s->err[0] = '\0';
  int r = get(s, ST_ENV_SECRETS, &st, what);
  if (r) return r;
  int rc = sqlite3_step(st);
  r = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) != 0 : sql_fail(s, rc, what, NULL);
  done(st);
  return r;
}

int ts_store_env_declare(ts_store *s, const ts_store_env_decl *d) {
  static const char what[] = "declare variable";
  sqlite3_stmt *st = NULL;
  if (!d) return s ? fail(s, TS_E_INVAL, what, "declaration is NULL") : TS_E_INVAL;
  int r = enter(s, d->thread, what);
  if (r || (r = check_name(s, d->name, what))) return r;
  if (d->type != TS_STORE_TEXT && d->type != TS_STORE_SECRET)
    return fail(s, TS_E_INVAL, what, "type is neither text nor secret");
  if ((r = get(s, ST_DECL_SET, &st, what))) return r;
  bind_str(st, 1, d->thread);
  bind_str(st, 2, d->name);
  bind_str(st, 3, type_name(d->type));
  sqlite3_bind_int(st, 4, d->required != 0);
  sqlite3_bind_int(st, 5, d->scoped != 0);
  bind_str(st, 6, d->description ? d->description : "");
  bind_str(st, 7, d->declared_by ? d->declared_by : "");
  int rc = sqlite3_step(st);
  if (rc != SQLITE_DONE) r = sql_fail(s, rc, what, d->thread);
  done(st);
  return r;
}

static int decl_row(sqlite3_stmt *st, const callbacks *cb) {
  ts_store_env_decl d;
  memset(&d, 0, sizeof d);
  col_text(st, 0, &d.thread);
  col_text(st, 1, &d.name);
  const char *t;
  col_text(st, 2, &t);
  d.type = type_of(t);
  d.required = sqlite3_column_int(st, 3) != 0;
  d.scoped = sqlite3_column_int(st, 4) != 0;
  col_text(st, 5, &d.description);
  col_text(st, 6, &d.declared_by);
  return cb->decl(cb->user, &d);
}

int ts_store_env_decl_get(ts_store *s, const char *thread, const char *name,
                          ts_store_decl_cb cb, void *user) {
  static const char what[] = "get declaration";
  if (!cb) return s ? fail(s, TS_E_INVAL, what, "callback is NULL") : TS_E_INVAL;
  int r = s ? check_name(s, name, what) : TS_E_INVAL;
  if (r) return r;
  callbacks c = {.decl = cb, .user = user};
  return list(s, ST_DECL_GET, thread, name, decl_row, &c, what);
}

int ts_store_env_decls(ts_store *s, const char *thread, ts_store_decl_cb cb, void *user) {
  if (!cb) return s ? fail(s, TS_E_INVAL, "list declarations", "callback is NULL") : TS_E_INVAL;
  callbacks c = {.decl = cb, .user = user};
  return list(s, ST_DECL_LIST, thread, NULL, decl_row, &c, "list declarations");
}

/* ---- settings, change detection ----------------------------------------------------------- */

int ts_store_setting_get(ts_store *s, const char *name, char *buf, size_t cap) {
  static const char what[] = "get setting";
  sqlite3_stmt *st = NULL;
  if (!s) return TS_E_INVAL;
  if (s->in_cb) return fail(s, TS_E_STORE_REENTRANT, what, NULL);
  s->err[0] = '\0';
  if (!name || !buf || !cap) return fail(s, TS_E_INVAL, what, "name or buffer missing");
  int r = get(s, ST_SETTING_GET, &st, what);
  if (r) return r;
  bind_str(st, 1, name);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    const char *v;
    size_t n = col_text(st, 0, &v);
    if (n >= cap) n = cap - 1;
    memcpy(buf, v, n);
    buf[n] = '\0';
    r = 1;
  } else {
    r = rc == SQLITE_DONE ? 0 : sql_fail(s, rc, what, NULL);
  }
  done(st);
  return r;
}

int ts_store_setting_set(ts_store *s, const char *name, const char *value) {
  static const char what[] = "set setting";
  sqlite3_stmt *st = NULL;
  if (!s) return TS_E_INVAL;
  if (s->in_cb) return fail(s, TS_E_STORE_REENTRANT, what, NULL);
  s->err[0] = '\0';
  if (!name || !value) return fail(s, TS_E_INVAL, what, "name or value missing");
  int r = get(s, ST_SETTING_SET, &st, what);
  if (r) return r;
  bind_str(st, 1, name);
  bind_str(st, 2, value);
  int rc = sqlite3_step(st);
  if (rc != SQLITE_DONE) r = sql_fail(s, rc, what, NULL);
  done(st);
  return r;
}

int ts_store_data_version(ts_store *s, uint64_t *out) {
  if (!s || !out) return TS_E_INVAL;
  if (s->in_cb) return fail(s, TS_E_STORE_REENTRANT, "data version", NULL);
  int v = 0, r = pragma_int(s, "PRAGMA data_version", &v);
  if (!r) *out = (uint64_t)(unsigned)v;
  return r;
}

/* ---- inbox, subagent instances, tags (schema 3) ---------------------------------------- */

/* Steps a writing statement that may return one row (RETURNING): its first column goes to
 * *val (may be NULL). *had_row says whether a row came. Resets the statement. */
static int step_write(ts_store *s, sqlite3_stmt *st, const char *what, const char *thread,
                      int64_t *val, int *had_row) {
  int r = 0, rc = sqlite3_step(st), row = 0;
  if (rc == SQLITE_ROW) {
    row = 1;
    if (val) *val = sqlite3_column_int64(st, 0);
    rc = sqlite3_step(st);
  }
  if (rc != SQLITE_DONE) r = sql_fail(s, rc, what, thread);
  done(st);
  if (had_row) *had_row = row;
  return r;
}

int ts_store_thread_tag(ts_store *s, const char *thread, const char *tag) {
  static const char what[] = "tag thread";
  sqlite3_stmt *st = NULL;
  int r = enter(s, thread, what);
  if (r) return r;
  if (!tag || !*tag || strlen(tag) > TS_STORE_TAG_MAX)
    return fail(s, TS_E_INVAL, what, "a tag is 1 to 512 bytes");
  if ((r = get(s, ST_TAG_INSERT, &st, what))) return r;
  bind_str(st, 1, thread);
  bind_str(st, 2, tag);
  return step_write(s, st, what, thread, NULL, NULL);
}

/* The push of an inbox item, inside the caller's transaction or as its own. */
static int inbox_push(ts_store *s, const char *thread, const char *sender, const char *content,
                      size_t len, uint64_t *seq_out, const char *what) {
  sqlite3_stmt *st = NULL;
  int r = get(s, ST_INBOX_PUSH, &st, what);
  if (r) return r;
  bind_str(st, 1, thread);
  bind_str(st, 2, sender);
  bind_text(st, 3, content ? content : "", len);
  sqlite3_bind_int64(st, 4, now_ms());
  int64_t seq = 0;
  if ((r = step_write(s, st, what, thread, &seq, NULL))) return r;
  if (seq_out) *seq_out = (uint64_t)seq;
  return 0;
}

int ts_store_inbox_push(ts_store *s, const char *thread, const char *sender, const char *content,
                        size_t len, uint64_t *seq_out) {
  static const char what[] = "queue message";
  int r = enter(s, thread, what);
  if (r) return r;
  if (!content && len) return fail(s, TS_E_INVAL, what, "content is NULL");
  if (sender && !ts_thread_id_valid(sender, strlen(sender)))
    return fail(s, TS_E_INVAL, what, "the sender's thread id is malformed");
  return inbox_push(s, thread, sender, content, len, seq_out, what);
}

static int inbox_row(sqlite3_stmt *st, const callbacks *cb) {
  ts_store_inbox_item it;
  memset(&it, 0, sizeof it);
  it.seq = (uint64_t)sqlite3_column_int64(st, 0);
  it.sender = col_opt(st, 1);
  it.content_len = col_text(st, 2, &it.content);
  it.created_at_ms = sqlite3_column_int64(st, 3);
  it.delivered_seq = (uint64_t)sqlite3_column_int64(st, 4);
  return cb->inbox(cb->user, &it);
}

int ts_store_inbox(ts_store *s, const char *thread, int queued_only, ts_store_inbox_cb cb,
                   void *user) {
  static const char what[] = "list inbox";
  if (!cb) return s ? fail(s, TS_E_INVAL, what, "callback is NULL") : TS_E_INVAL;
  sqlite3_stmt *st = NULL;
  int r = enter(s, thread, what);
  if (r || (r = get(s, ST_INBOX_LIST, &st, what))) return r;
  bind_str(st, 1, thread);
  if (queued_only) sqlite3_bind_int(st, 2, 1);
  callbacks c = {.inbox = cb, .user = user};
  return iterate(s, st, inbox_row, &c, what, thread);
}

int ts_store_inbox_deliver(ts_store *s, const char *thread, ts_store_inbox_cb cb, void *user) {
  static const char what[] = "deliver message";
  sqlite3_stmt *next = NULL, *ins = NULL, *mark = NULL;
  int r = enter(s, thread, what);
  if (r) return r;
  if ((r = get(s, ST_INBOX_NEXT, &next, what)) || (r = get(s, ST_MSG_INSERT, &ins, what)) ||
      (r = get(s, ST_INBOX_MARK, &mark, what)))
    return r;
  /* a read first: an empty inbox (the common case, every turn) takes no write lock */
  bind_str(next, 1, thread);
  int rc = sqlite3_step(next);
  done(next);
  if (rc == SQLITE_DONE) return 0;
  if (rc != SQLITE_ROW) return sql_fail(s, rc, what, thread);
  if ((r = run(s, ST_BEGIN, what))) return r;
  bind_str(next, 1, thread);
  rc = sqlite3_step(next);
  int64_t item = 0, msg = 0;
  if (rc == SQLITE_ROW) {
    item = sqlite3_column_int64(next, 0);
    const char *content;
    size_t len = col_text(next, 2, &content);
    bind_str(ins, 1, thread);
    bind_str(ins, 2, "user");
    bind_text(ins, 3, content, len); /* SQLITE_STATIC: `next` is stepped no further first */
    sqlite3_bind_int(ins, 6, 0);
    sqlite3_bind_int64(ins, 7, now_ms());
    r = step_write(s, ins, what, thread, &msg, NULL);
  } else if (rc != SQLITE_DONE) {
    r = sql_fail(s, rc, what, thread);
  }
  done(next);
  if (!r && item) {
    bind_str(mark, 1, thread);
    sqlite3_bind_int64(mark, 2, item);
    sqlite3_bind_int64(mark, 3, msg);
    r = step_write(s, mark, what, thread, NULL, NULL);
  }
  if (!r) r = run(s, ST_COMMIT, what);
  if (r) {
    rollback(s);
    return r;
  }
  if (!item) return 0;
  if (cb) {
    sqlite3_stmt *st = NULL;
    if ((r = get(s, ST_INBOX_GET, &st, what))) return r;
    bind_str(st, 1, thread);
    sqlite3_bind_int64(st, 2, item);
    callbacks c = {.inbox = cb, .user = user};
    r = iterate(s, st, inbox_row, &c, what, thread);
    if (r < 0) return r;
  }
  return 1;
}

int ts_store_subagent_create(ts_store *s, const ts_store_subagent_new *n, uint64_t *inbox_seq) {
  static const char what[] = "create subagent";
  if (!n) return s ? fail(s, TS_E_INVAL, what, "no subagent") : TS_E_INVAL;
  int r = enter(s, n->thread, what);
  if (r) return r;
  if (!n->parent || !ts_thread_id_valid(n->parent, strlen(n->parent)) ||
      !strcmp(n->parent, n->thread))
    return fail(s, TS_E_INVAL, what, "the parent's thread id is malformed or the child's own");
  if (!n->agent || !*n->agent || !n->relationship || !*n->relationship || !n->name ||
      !*n->name || strlen(n->name) + 5 > TS_STORE_TAG_MAX)
    return fail(s, TS_E_INVAL, what, "agent, relationship or name missing (or name too long)");
  if (!n->message && n->message_len) return fail(s, TS_E_INVAL, what, "message is NULL");
  sqlite3_stmt *th = NULL, *sub = NULL, *tag = NULL;
  if ((r = get(s, ST_THREAD_INSERT, &th, what)) || (r = get(s, ST_SUB_INSERT, &sub, what)) ||
      (r = get(s, ST_TAG_INSERT, &tag, what)) || (r = run(s, ST_BEGIN, what)))
    return r;
  int64_t now = now_ms();
  bind_str(th, 1, n->thread);
  sqlite3_bind_int64(th, 2, now);
  bind_str(th, 4, n->parent);
  bind_str(th, 5, n->workspace);
  int rc = sqlite3_step(th);
  if (rc == SQLITE_CONSTRAINT_PRIMARYKEY) {
    say(s->err, sizeof s->err, "%s: thread \"%s\" exists", what, n->thread);
    r = TS_E_STORE_THREAD_EXISTS;
  } else if (rc == SQLITE_CONSTRAINT_FOREIGNKEY) {
    say(s->err, sizeof s->err, "%s: no parent thread \"%s\"", what, n->parent);
    r = TS_E_STORE_NO_THREAD;
  } else if (rc != SQLITE_DONE) {
    r = sql_fail(s, rc, what, n->thread);
  }
  done(th);
  if (!r) {
    bind_str(sub, 1, n->thread);
    bind_str(sub, 2, n->parent);
    bind_str(sub, 3, n->agent);
    bind_str(sub, 4, n->relationship);
    bind_str(sub, 5, n->name);
    sqlite3_bind_int(sub, 6, n->blocking != 0);
    sqlite3_bind_int64(sub, 7, n->turn);
    sqlite3_bind_int64(sub, 8, n->idx);
    sqlite3_bind_int64(sub, 9, now);
    rc = sqlite3_step(sub);
    if (rc == SQLITE_CONSTRAINT_UNIQUE) {
      say(s->err, sizeof s->err, "%s: call %u/%u of \"%s\" created a subagent already", what,
          (unsigned)n->turn, (unsigned)n->idx, n->parent);
      r = TS_E_STORE_THREAD_EXISTS;
    } else if (rc != SQLITE_DONE) {
      r = sql_fail(s, rc, what, n->thread);
    }
    done(sub);
  }
  if (!r) {
    char t[TS_STORE_TAG_MAX + 1];
    snprintf(t, sizeof t, "name:%s", n->name);
    bind_str(tag, 1, n->thread);
    bind_str(tag, 2, t);
    r = step_write(s, tag, what, n->thread, NULL, NULL);
  }
  if (!r) r = inbox_push(s, n->thread, n->parent, n->message, n->message_len, inbox_seq, what);
  if (!r) r = run(s, ST_COMMIT, what);
  if (r) rollback(s);
  return r;
}

static int sub_row(sqlite3_stmt *st, const callbacks *cb) {
  ts_store_subagent a;
  memset(&a, 0, sizeof a);
  col_text(st, 0, &a.thread);
  col_text(st, 1, &a.parent);
  col_text(st, 2, &a.agent);
  col_text(st, 3, &a.relationship);
  col_text(st, 4, &a.name);
  a.blocking = sqlite3_column_int(st, 5) != 0;
  a.turn = (uint32_t)sqlite3_column_int64(st, 6);
  a.idx = (uint32_t)sqlite3_column_int64(st, 7);
  col_text(st, 8, &a.state);
  a.outcome = col_opt(st, 9);
  a.reports = (uint32_t)sqlite3_column_int64(st, 10);
  a.reported_seq = (uint64_t)sqlite3_column_int64(st, 11);
  a.last_seq = (uint64_t)sqlite3_column_int64(st, 12);
  a.queued = (uint32_t)sqlite3_column_int64(st, 13);
  a.created_at_ms = sqlite3_column_int64(st, 14);
  a.workspace = col_opt(st, 15);
  return cb->sub(cb->user, &a);
}

int ts_store_subagents(ts_store *s, const char *parent, ts_store_subagent_cb cb, void *user) {
  if (!cb) return s ? fail(s, TS_E_INVAL, "subagents", "callback is NULL") : TS_E_INVAL;
  callbacks c = {.sub = cb, .user = user};
  return list(s, ST_SUB_LIST, parent, NULL, sub_row, &c, "subagents");
}

int ts_store_subagent_get(ts_store *s, const char *thread, ts_store_subagent_cb cb, void *user) {
  if (!cb) return s ? fail(s, TS_E_INVAL, "subagent", "callback is NULL") : TS_E_INVAL;
  callbacks c = {.sub = cb, .user = user};
  return list(s, ST_SUB_GET, thread, NULL, sub_row, &c, "subagent");
}

int ts_store_subagent_by_call(ts_store *s, const char *parent, uint32_t turn, uint32_t idx,
                              ts_store_subagent_cb cb, void *user) {
  static const char what[] = "subagent of a call";
  if (!cb) return s ? fail(s, TS_E_INVAL, what, "callback is NULL") : TS_E_INVAL;
  sqlite3_stmt *st = NULL;
  int r = enter(s, parent, what);
  if (r || (r = get(s, ST_SUB_BY_CALL, &st, what))) return r;
  bind_call(st, parent, turn, idx);
  callbacks c = {.sub = cb, .user = user};
  return iterate(s, st, sub_row, &c, what, parent);
}

int ts_store_subagent_report(ts_store *s, const char *thread, const char *outcome, size_t len,
                             int queue, uint64_t *inbox_seq) {
  static const char what[] = "report subagent outcome";
  sqlite3_stmt *st = NULL;
  int r = enter(s, thread, what);
  if (r) return r;
  if (!outcome) return fail(s, TS_E_INVAL, what, "outcome is NULL");
  if ((r = get(s, ST_SUB_REPORT, &st, what)) || (r = run(s, ST_BEGIN, what))) return r;
  bind_str(st, 1, thread);
  bind_text(st, 2, outcome, len);
  char parent[TS_THREAD_ID_MAX + 1] = "";
  int rc = sqlite3_step(st), row = 0;
  if (rc == SQLITE_ROW) {
    row = 1;
    snprintf(parent, sizeof parent, "%s", (const char *)sqlite3_column_text(st, 0));
    rc = sqlite3_step(st);
  }
  if (rc != SQLITE_DONE) r = sql_fail(s, rc, what, thread);
  done(st);
  int known = row;
  if (!r && !row) { /* nothing new since the last report, or no subagent at all */
    sqlite3_stmt *ex = NULL;
    int64_t valid = 0;
    if (!(r = get(s, ST_SUB_CHECK, &ex, what))) {
      bind_str(ex, 1, thread);
      bind_text(ex, 2, outcome, len);
      r = step_write(s, ex, what, thread, &valid, &known);
    }
    if (!r && !known) {
      say(s->err, sizeof s->err, "%s: thread \"%s\" is no subagent", what, thread);
      r = TS_E_STORE_NO_THREAD;
    } else if (!r && !valid) { /* the schema's check, which an update would have made */
      say(s->err, sizeof s->err, "%s: the outcome of \"%s\" is not JSON", what, thread);
      r = TS_E_INVAL;
    }
  }
  if (!r && row && queue) r = inbox_push(s, parent, thread, outcome, len, inbox_seq, what);
  if (!r) r = run(s, ST_COMMIT, what);
  if (r) {
    rollback(s);
    return r;
  }
  return row ? 0 : 1;
}
