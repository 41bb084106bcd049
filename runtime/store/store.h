/*
 * store.h: the durable store: threads, their messages, the start records of tool
 * calls, and every event ever published, in one SQLite database.
 *
 * This is the one module that includes sqlite3.h; nothing of SQLite shows through
 * this header. Design notes, the schema and the crash-safety argument: docs/store.md.
 *
 * Where it lives. ts_store_open(dir, ...) uses `dir` when given (the command line's
 * --data-dir), else $TOOLSTREAM_DATA_DIR, else $XDG_DATA_HOME/toolstream (only when
 * XDG_DATA_HOME is absolute, as the XDG spec says), else $HOME/.local/share/toolstream.
 * Missing directories are created with mode 0700; the database is `toolstream.db`
 * in it, created 0600 (SQLite gives its -wal and -shm files the same mode).
 *
 * Durability. journal_mode=WAL and synchronous=FULL: when a writing function returns
 * 0, its transaction is on disk (the WAL is fsync'd at every commit) and survives a
 * crash of the process or of the machine. Each writing function is exactly one
 * transaction, so a crash leaves all of it or none of it.
 *
 * The dispatcher's protocol (the reason for call_starts):
 *   1. ts_store_call_started(turn, idx, ...)      -- committed before the tool runs
 *   2. the tool runs
 *   3. ts_store_call_finished(turn, idx, result)  -- ONE transaction: appends the
 *      tool-result message and marks the start record finished
 *   4. only then the next call starts.
 * After a crash, ts_store_unfinished_calls lists the calls caught between 1 and 3; the
 * resuming dispatcher settles each one with ts_store_call_finished (an error result
 * saying it was interrupted) or, for a tool declared idempotent, runs it again:
 * ts_store_call_started on the same (turn, idx) counts the attempt, then 2 and 3.
 *
 * Threads of use. A ts_store is one SQLite connection opened without its own mutex:
 * use each store from one thread at a time (open one store per thread that needs
 * one; SQLite itself is built threadsafe, and WAL lets readers run beside the one
 * writer, across threads and processes). Never use a store in a child after fork();
 * open a new one there. Writers in other processes are waited for up to
 * TS_STORE_BUSY_MS, then TS_E_STORE_BUSY.
 *
 * Errors. Every function returns 0 (or a count, where said) or a negative ts_err from
 * stream/error.h: the TS_E_STORE_* group, TS_E_INVAL for bad arguments (a NULL or
 * malformed thread id, NULL content, ...; also for JSON text the schema rejects),
 * TS_E_NOMEM, TS_E_LIMIT (a value too big for SQLite), TS_E_ABORTED (a callback
 * stopped an iteration). ts_store_errmsg gives a readable line about the last error.
 * A function that fails changes nothing in the database.
 *
 * Callbacks. Iterations call back synchronously, in order, from inside the function;
 * the pointers they receive are valid only during that callback. A callback must not
 * use the same store (that returns TS_E_STORE_REENTRANT); returning non-zero stops the
 * iteration, which then returns TS_E_ABORTED.
 *
 * Ids. Thread ids follow base/thread_id.h (ts_thread_id_valid: 1..256 bytes, no
 * control bytes, spaces or DEL). Strings are NUL-terminated unless a length is given.
 */
#ifndef TS_STORE_H
#define TS_STORE_H

#include <stddef.h>
#include <stdint.h>

/* The schema version this code writes (SQLite's user_version). A database with a
 * higher one is refused with TS_E_STORE_VERSION: it was written by a newer toolstream. */
#define TS_STORE_SCHEMA_VERSION 3

/* How long a write waits for another process's write transaction. */
#define TS_STORE_BUSY_MS 5000

/* The longest directory + file path the store handles, NUL included. */
#define TS_STORE_PATH_MAX 4096

/* The database's file name inside the data directory. */
#define TS_STORE_FILE "toolstream.db"

typedef struct ts_store ts_store;

typedef enum {
  TS_STORE_SYSTEM = 0,
  TS_STORE_USER = 1,
  TS_STORE_ASSISTANT = 2,
  TS_STORE_TOOL = 3,
} ts_store_role;

/* "system", "user", "assistant", "tool" (the text stored in messages.role); NULL for
 * a value outside the enum. */
const char *ts_store_role_name(ts_store_role role);

/* ---- opening ------------------------------------------------------------------- */

/* Writes the default data directory (see the top of this file; TOOLSTREAM_DATA_DIR
 * included) into buf. Returns 0; TS_E_STORE_NO_DIR when none of the variables is
 * usable; TS_E_LIMIT when the path does not fit in `cap` bytes. Nothing is created. */
int ts_store_default_dir(char *buf, size_t cap);

/* Opens (creating it if needed) the store in `dir`, or in the default directory when
 * `dir` is NULL; creates missing directories (0700) and migrates the schema up to
 * TS_STORE_SCHEMA_VERSION, each step in its own transaction.
 * On success stores the new store in *out and returns 0. On failure *out is untouched,
 * nothing is leaked, and when `why` is not NULL a readable line (with the path and
 * the system's or SQLite's reason) is written there, cut to why_cap bytes with a NUL.
 * Errors: TS_E_INVAL (out NULL, empty dir), TS_E_STORE_NO_DIR, TS_E_LIMIT (path too
 * long), TS_E_STORE_OPEN (a directory cannot be created, the file cannot be opened,
 * WAL cannot be enabled), TS_E_STORE_CORRUPT (not a toolstream database, or damaged),
 * TS_E_STORE_VERSION, TS_E_STORE_BUSY, TS_E_STORE_READONLY, TS_E_STORE_IO, TS_E_NOMEM. */
int ts_store_open(const char *dir, ts_store **out, char *why, size_t why_cap);

/* Closes the store (SQLite checkpoints the WAL when this was the last connection).
 * NULL is a no-op. Must not be called from inside one of the store's callbacks. */
void ts_store_close(ts_store *s);

/* The database file's path; valid until ts_store_close. */
const char *ts_store_path(const ts_store *s);

/* A readable line about the store's last error ("append message: no thread \"t9\""),
 * "" when the last call succeeded. Valid until the next call on the store. */
const char *ts_store_errmsg(const ts_store *s);

/* The schema version of the open database (TS_STORE_SCHEMA_VERSION after a successful
 * open), or a negative ts_err. */
int ts_store_schema_version(ts_store *s);

/* ---- threads ---------------------------------------------------------------------- */

/* Creates thread `thread` with optional metadata `meta_json` (a JSON text, NULL for
 * none). Returns 0; TS_E_STORE_THREAD_EXISTS when it exists (nothing changes);
 * TS_E_INVAL for a bad id or meta that is not valid JSON. */
int ts_store_thread_create(ts_store *s, const char *thread, const char *meta_json);

/* 1 when the thread exists, 0 when not, or a negative ts_err. */
int ts_store_thread_exists(ts_store *s, const char *thread);

/* ---- the thread tree ---------------------------------------------------------------- */

/* Creates thread `thread` as a child of `parent` (NULL: a root thread), with its own
 * workspace directory `workspace` (a path, stored as given; NULL: none recorded) and
 * optional metadata, as ts_store_thread_create. The parent must exist
 * (TS_E_STORE_NO_THREAD, with the parent named in the message); a thread is never its
 * own parent (TS_E_INVAL). The tree cannot grow a cycle: a parent is set only at
 * creation, and only to a thread that already exists. */
int ts_store_thread_create_child(ts_store *s, const char *thread, const char *parent,
                                 const char *workspace, const char *meta_json);

/* A thread's lifecycle state, as the runtime last recorded it. "waiting_for_variable" is
 * also reported (by the listings below) whenever the thread has a parked call, whatever
 * was recorded, so a thread killed while it waited still says what it waits for. */
#define TS_STORE_STATES "idle, running, waiting_for_variable, done, failed, interrupted"

/* Records the thread's state, one of TS_STORE_STATES (else TS_E_INVAL). */
int ts_store_thread_set_state(ts_store *s, const char *thread, const char *state);

typedef struct {
  const char *id;
  const char *parent;    /* NULL for a root thread */
  const char *workspace; /* NULL when none was recorded */
  const char *state;     /* one of TS_STORE_STATES */
  int64_t created_at_ms;
  int64_t last_activity_ms; /* the newest message, call start/finish or parking; else created */
  uint32_t turns;           /* assistant messages */
  uint32_t calls;           /* call start records (each call once, however many attempts) */
  uint32_t children;
  uint32_t depth; /* 0 for a root; filled by ts_store_threads only (0 elsewhere) */
  const char *tags; /* the thread's tags as a JSON array of strings, sorted ("[]": none) */
} ts_store_thread;

typedef int (*ts_store_thread_cb)(void *user, const ts_store_thread *t);

/* Every thread, each root followed by its subtree depth first (children in creation
 * order), `depth` set. Returns the number delivered, TS_E_ABORTED, or a negative ts_err. */
int ts_store_threads(ts_store *s, ts_store_thread_cb cb, void *user);

/* The one thread `thread` (returns 1 after calling cb, 0 when it does not exist). */
int ts_store_thread_get(ts_store *s, const char *thread, ts_store_thread_cb cb, void *user);

/* The children of `thread`, in creation order. Returns the number delivered, ... */
int ts_store_thread_children(ts_store *s, const char *thread, ts_store_thread_cb cb,
                             void *user);

/* ---- messages ----------------------------------------------------------------------- */

/* Appends a message to an existing thread and stores its seq in *seq_out (may be
 * NULL): 1 for a thread's first message, then one more than the thread's last, so
 * seqs are dense and increasing. `content` is `len` bytes of text (JSON or plain;
 * stored as given, may hold NULs); tool_call_id and tool_name may be NULL, except that
 * a TS_STORE_TOOL message needs a tool_call_id ("" is allowed: Gemini sends none).
 * is_error non-zero marks an error result (stored as 1). TS_E_STORE_NO_THREAD when the
 * thread was never created. */
int ts_store_append_message(ts_store *s, const char *thread, ts_store_role role,
                            const char *content, size_t len, const char *tool_call_id,
                            const char *tool_name, int is_error, uint64_t *seq_out);

typedef struct {
  uint64_t seq;
  ts_store_role role;
  const char *content; /* content_len bytes, then a NUL */
  size_t content_len;
  const char *tool_call_id; /* NULL when none */
  const char *tool_name;    /* NULL when none */
  int is_error;             /* 0 or 1 */
  int64_t created_at_ms;    /* Unix time, milliseconds */
} ts_store_message;

typedef int (*ts_store_message_cb)(void *user, const ts_store_message *m);

/* Calls cb for each message of `thread` with seq > after_seq (0 = all), in seq order,
 * from one consistent snapshot. Returns the number delivered (at most INT_MAX),
 * TS_E_ABORTED when cb returned non-zero, or another negative ts_err. A thread that
 * does not exist has no messages (returns 0). */
int ts_store_messages(ts_store *s, const char *thread, uint64_t after_seq,
                      ts_store_message_cb cb, void *user);

/* ---- tool calls ----------------------------------------------------------------------- */

/* Records, durably, that call number `idx` (0, 1, 2 ... in the turn) of turn `turn`
 * of `thread` is about to run: the provider's call id (may be "": calls are keyed by
 * turn and index, not by the provider's id, which some providers omit or repeat), the
 * tool's name and its arguments (`args_len` bytes of JSON, which must be valid).
 * Starting the same (turn, idx) again while it is unfinished records a re-run: its
 * attempt count goes up by one (the call id and tool must match, else TS_E_INVAL).
 * *attempt_out (may be NULL) receives the attempt number, 1 for the first run.
 * TS_E_STORE_CALL_FINISHED when the call was already finished; TS_E_STORE_NO_THREAD. */
int ts_store_call_started(ts_store *s, const char *thread, uint32_t turn, uint32_t idx,
                          const char *call_id, const char *tool, const char *args,
                          size_t args_len, uint32_t *attempt_out);

/* In ONE transaction: appends the call's tool-result message (role tool, content
 * `content` of `len` bytes, the start record's call id and tool name)
 * and marks the start record finished with that message's seq. A crash leaves both or
 * neither. is_error non-zero marks an error result (an interrupted call's, for one).
 * *seq_out (may be NULL) receives the message's seq.
 * TS_E_STORE_NO_CALL when the call was never started; TS_E_STORE_CALL_FINISHED when it
 * was already finished (then nothing is appended: a result is committed once). */
int ts_store_call_finished(ts_store *s, const char *thread, uint32_t turn, uint32_t idx,
                           const char *content, size_t len, int is_error,
                           uint64_t *seq_out);

typedef struct {
  uint32_t turn, idx;
  const char *call_id; /* never NULL; may be "" */
  const char *tool;
  const char *args; /* args_len bytes of JSON, then a NUL */
  size_t args_len;
  uint32_t attempts;     /* how many times it was started */
  int64_t started_at_ms; /* the last start, Unix time in milliseconds */
} ts_store_call;

typedef int (*ts_store_call_cb)(void *user, const ts_store_call *c);

/* A call as ts_store_calls lists it: the start record and, once finished, its result. */
typedef struct {
  ts_store_call start;
  int finished;           /* 0: started and never finished (running, or a crash caught it) */
  int64_t finished_at_ms; /* 0 when not finished */
  const char *result;     /* the result message's content (result_len bytes, NUL), or NULL */
  size_t result_len;
  int result_is_error;
} ts_store_call_record;

typedef int (*ts_store_call_record_cb)(void *user, const ts_store_call_record *c);

/* Every call of `thread` in (turn, idx) order, finished or not, with its result. Returns
 * the number delivered, TS_E_ABORTED, or another negative ts_err. */
int ts_store_calls(ts_store *s, const char *thread, ts_store_call_record_cb cb, void *user);

/* ---- parked calls (a required variable without a value) ------------------------------ */

/* Records, durably, that call (turn, idx) waits for variable `variable` before it can
 * start; the tool has not run. Parking the same call again replaces the record (another
 * variable may be missing now). ts_store_call_started on that (turn, idx) removes the
 * record in the same transaction that writes the start record, so a crash leaves the
 * call parked or started, never neither. TS_E_STORE_CALL_FINISHED when the call has a
 * start record already (a started call cannot be parked); TS_E_STORE_NO_THREAD. */
int ts_store_call_park(ts_store *s, const char *thread, uint32_t turn, uint32_t idx,
                       const char *call_id, const char *tool, const char *args,
                       size_t args_len, const char *variable);

typedef struct {
  const char *thread;
  uint32_t turn, idx;
  const char *call_id, *tool;
  const char *args; /* args_len bytes of JSON, then a NUL */
  size_t args_len;
  const char *variable;
  int64_t parked_at_ms;
} ts_store_parked;

typedef int (*ts_store_parked_cb)(void *user, const ts_store_parked *p);

/* The parked calls of `thread` (NULL: of every thread), in (thread, turn, idx) order.
 * Returns the number delivered, TS_E_ABORTED, or another negative ts_err. */
int ts_store_parked_calls(ts_store *s, const char *thread, ts_store_parked_cb cb, void *user);

/* Calls cb for each call of `thread` that was started and never finished (the ones a
 * crash caught in flight), in (turn, idx) order. Returns the number delivered,
 * TS_E_ABORTED, or another negative ts_err. The callback cannot settle a call itself
 * (that would re-enter the store): collect them, then call ts_store_call_finished. */
int ts_store_unfinished_calls(ts_store *s, const char *thread, ts_store_call_cb cb,
                              void *user);

/* ---- events ----------------------------------------------------------------------- */

/* Appends one event (its canonical JSON, `len` bytes, which must be valid JSON) with
 * the caller's `seq` (the event's own "seq": 1 or more, and greater than the thread's
 * last stored event, as for ts_pub_send). TS_E_STORE_SEQ when seq is not above the
 * last one (so re-appending after a crash is detected, not duplicated);
 * TS_E_STORE_NO_THREAD. */
int ts_store_append_event(ts_store *s, const char *thread, uint64_t seq, const char *json,
                          size_t len);

typedef int (*ts_store_event_cb)(void *user, uint64_t seq, const char *json, size_t len);

/* Calls cb for the events of `thread` with seq > after_seq, in seq order, at most
 * `max` of them (0 = no limit), from one snapshot: the replay service's query.
 * Returns the number delivered, TS_E_ABORTED, or another negative ts_err. */
int ts_store_events_after(ts_store *s, const char *thread, uint64_t after_seq, size_t max,
                          ts_store_event_cb cb, void *user);

/* Stores the seq of the thread's last stored event in *seq_out (0 when it has none or
 * does not exist). Returns 0 or a negative ts_err. */
int ts_store_last_event_seq(ts_store *s, const char *thread, uint64_t *seq_out);

/* ---- environments: variable values and declarations per thread ---------------------- */

/* A value's type (tools-spec §3). A secret's value is stored exactly as given: the
 * caller (tools/variables.h) encrypts it first; the store never sees a plain secret. */
typedef enum { TS_STORE_TEXT = 0, TS_STORE_SECRET = 1 } ts_store_var_type;

/* The longest variable name (bytes); longer names are TS_E_INVAL. */
#define TS_STORE_VAR_NAME_MAX 128

/* 1 when `name` is a variable name: 1..TS_STORE_VAR_NAME_MAX bytes, a letter or `_`, then
 * letters, digits, `_`, `.` or `-` (what dotenv files and environments use). */
int ts_store_var_name_valid(const char *name);

/* Sets variable `name` of `thread` to `len` bytes of `value` (any bytes), with `origin`
 * saying where it came from ("env set", "env-file FILE", "--var"). Replaces an existing
 * value of the name (its type too). TS_E_STORE_NO_THREAD; TS_E_INVAL for a bad name. */
int ts_store_env_set(ts_store *s, const char *thread, const char *name, ts_store_var_type type,
                     const void *value, size_t len, const char *origin);

/* Removes the thread's value of `name`. Returns 1 when there was one, 0 when not. */
int ts_store_env_unset(ts_store *s, const char *thread, const char *name);

typedef struct {
  const char *thread; /* the thread holding the value */
  const char *name;
  ts_store_var_type type;
  const void *value; /* len bytes (followed by a NUL, not counted) */
  size_t len;
  const char *origin;
  int64_t set_at_ms;
} ts_store_env_value;

typedef int (*ts_store_env_cb)(void *user, const ts_store_env_value *v);

/* The thread's own value of `name`: returns 1 after calling cb, 0 when it has none. */
int ts_store_env_get(ts_store *s, const char *thread, const char *name, ts_store_env_cb cb,
                     void *user);

/* The thread's own values, by name. Returns the number delivered, ... */
int ts_store_env_list(ts_store *s, const char *thread, ts_store_env_cb cb, void *user);

/* 1 when any thread holds a secret value, 0 when none does, or a negative ts_err (the
 * key check: a missing key file is only harmless while there is nothing to decrypt). */
int ts_store_env_has_secrets(ts_store *s);

/* A variable definition declared on a thread (by a tool, prompt or agent it runs). */
typedef struct {
  const char *thread, *name;
  ts_store_var_type type;
  int required, scoped;
  const char *description; /* "" when none */
  const char *declared_by; /* "tool NAME", "prompt NAME", "agent NAME" */
} ts_store_env_decl;

typedef int (*ts_store_decl_cb)(void *user, const ts_store_env_decl *d);

/* Records (or replaces) the declaration of d->name on d->thread. */
int ts_store_env_declare(ts_store *s, const ts_store_env_decl *d);

/* The declaration of `name` on `thread`: returns 1 after calling cb, 0 when none. */
int ts_store_env_decl_get(ts_store *s, const char *thread, const char *name,
                          ts_store_decl_cb cb, void *user);

/* Every declaration on `thread`, by name. Returns the number delivered, ... */
int ts_store_env_decls(ts_store *s, const char *thread, ts_store_decl_cb cb, void *user);

/* ---- settings and change detection ----------------------------------------------------- */

/* A store-wide setting (a short text, NUL-terminated). get: copies it into buf (cut to
 * cap with a NUL) and returns 1, or returns 0 when unset. */
int ts_store_setting_get(ts_store *s, const char *name, char *buf, size_t cap);
int ts_store_setting_set(ts_store *s, const char *name, const char *value);

/* A number that changes whenever another connection (this process's or another's)
 * commits to the database: a cheap way to poll for `env set` from outside (SQLite's
 * data_version). Stores it in *out; returns 0 or a negative ts_err. */
int ts_store_data_version(ts_store *s, uint64_t *out);

/* ---- tags ------------------------------------------------------------------------ */

/* The longest tag (bytes). */
#define TS_STORE_TAG_MAX 512

/* Adds `tag` (1..TS_STORE_TAG_MAX bytes) to the thread; adding it again changes nothing.
 * Tags are for UIs ("name:<value>" names a subagent instance); ts_store_thread.tags lists
 * them. TS_E_STORE_NO_THREAD; TS_E_INVAL. */
int ts_store_thread_tag(ts_store *s, const char *thread, const char *tag);

/* ---- the inbox: messages queued to a thread (tools-spec §5) ------------------------------
 *
 * A message to a thread that may be busy (a subagent's parent, a child being messaged) is
 * queued durably in the receiver's inbox, numbered per receiver (1, 2, ... in the order
 * pushed), and becomes a user message of the receiver's conversation only when the
 * receiver takes it, between its turns (ts_store_inbox_deliver). Delivery is one
 * transaction: the user message is appended and the item marked delivered with that
 * message's seq, so after a crash an item is either still queued or delivered once,
 * never both nor lost, and items are delivered in their order. */

typedef struct {
  uint64_t seq;          /* the item's number in the receiver's inbox */
  const char *sender;    /* the sending thread; NULL: from outside the tree */
  const char *content;   /* content_len bytes, then a NUL */
  size_t content_len;
  int64_t created_at_ms;
  uint64_t delivered_seq; /* the user message it became; 0 while queued */
} ts_store_inbox_item;

typedef int (*ts_store_inbox_cb)(void *user, const ts_store_inbox_item *it);

/* Queues `len` bytes of `content` to `thread` from `sender` (may be NULL) and stores the
 * item's seq in *seq_out (may be NULL). Durable on return. TS_E_STORE_NO_THREAD. */
int ts_store_inbox_push(ts_store *s, const char *thread, const char *sender, const char *content,
                        size_t len, uint64_t *seq_out);

/* Delivers the oldest queued item of `thread`: in ONE transaction appends its content as
 * a user message and marks it delivered. Then, after the commit, calls cb (may be NULL)
 * with the item (delivered_seq set). Returns 1 when an item was delivered, 0 when none was
 * queued, or a negative ts_err (nothing delivered). */
int ts_store_inbox_deliver(ts_store *s, const char *thread, ts_store_inbox_cb cb, void *user);

/* The thread's inbox in seq order: every item, or (queued_only) those not delivered yet.
 * Returns the number delivered, TS_E_ABORTED, or another negative ts_err. */
int ts_store_inbox(ts_store *s, const char *thread, int queued_only, ts_store_inbox_cb cb,
                   void *user);

/* ---- subagent instances (tools-spec §5) ------------------------------------------------ */

/* A subagent instance: a child thread running a related agent, created by call
 * (turn, idx) of its parent (subagent_create). At most one instance per call, so a
 * creating call run again after a crash finds its instance instead of making another. */
typedef struct {
  const char *thread, *parent, *workspace;
  const char *agent, *relationship, *name;
  int blocking;
  uint32_t turn, idx;
  const char *message; /* the first message (message_len bytes), queued to the child */
  size_t message_len;
} ts_store_subagent_new;

/* In ONE transaction: creates the child thread (parent, workspace), tags it
 * "name:<name>", records the instance and queues the first message to the child's inbox
 * (sender: the parent; its item seq in *inbox_seq, may be NULL). TS_E_STORE_THREAD_EXISTS
 * when the thread exists or the call (parent, turn, idx) made an instance already;
 * TS_E_STORE_NO_THREAD for a missing parent; TS_E_INVAL. */
int ts_store_subagent_create(ts_store *s, const ts_store_subagent_new *n, uint64_t *inbox_seq);

typedef struct {
  const char *thread, *parent, *workspace; /* workspace NULL when none recorded */
  const char *agent, *relationship, *name;
  int blocking;
  uint32_t turn, idx;    /* the parent's creating call */
  const char *state;     /* the child thread's state (TS_STORE_STATES) */
  const char *outcome;   /* the last reported outcome (JSON text), NULL: none yet */
  uint32_t reports;      /* outcomes reported so far */
  uint64_t reported_seq; /* the child's last message seq at the last report */
  uint64_t last_seq;     /* the child's last message seq now */
  uint32_t queued;       /* items queued in the child's inbox, not delivered */
  int64_t created_at_ms;
} ts_store_subagent;

typedef int (*ts_store_subagent_cb)(void *user, const ts_store_subagent *a);

/* The instances whose parent is `parent`, in creation order. Returns the number
 * delivered, TS_E_ABORTED, or another negative ts_err. */
int ts_store_subagents(ts_store *s, const char *parent, ts_store_subagent_cb cb, void *user);

/* The instance running in `thread`: 1 after calling cb, 0 when the thread is none. */
int ts_store_subagent_get(ts_store *s, const char *thread, ts_store_subagent_cb cb, void *user);

/* The instance created by call (turn, idx) of `parent`: 1 after calling cb, 0 when none. */
int ts_store_subagent_by_call(ts_store *s, const char *parent, uint32_t turn, uint32_t idx,
                              ts_store_subagent_cb cb, void *user);

/* Records the instance's outcome (`len` bytes of JSON) as of the child's last message,
 * and, when `queue` is nonzero, queues the same text to the parent's inbox (sender: the
 * child; its item seq in *inbox_seq, may be NULL), in ONE transaction: an outcome is
 * queued to the parent once per report, never lost nor doubled by a crash.
 * A child whose conversation has not moved since its last report is not reported again
 * (a session run again after a crash, or a lifecycle call re-run, adds nothing): that
 * returns 1 and changes nothing. 0 when reported; TS_E_STORE_NO_THREAD when `thread` is
 * no subagent; TS_E_INVAL for JSON the schema rejects. */
int ts_store_subagent_report(ts_store *s, const char *thread, const char *outcome, size_t len,
                             int queue, uint64_t *inbox_seq);

#endif /* TS_STORE_H */
