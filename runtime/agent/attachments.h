/*
 * attachments.h: files passed between threads (tools-spec §6).
 *
 * Every thread has its own filesystem: its workspace directory (ts_store_thread.workspace,
 * the thread tree's). A thread refers to one of its files by a path string, by convention
 * `/attachments/NAME.EXT`: the path is read inside the thread's own root only, so
 * "/attachments/a.txt" and "attachments/a.txt" both mean ROOT/attachments/a.txt and
 * "/etc/passwd" means ROOT/etc/passwd (missing, an error), never the host's file.
 *
 * Whenever tool-driven communication crosses a thread boundary (a subagent created or
 * messaged with attachments, a child's outcome or a sub-prompt's reply coming back:
 * ts_attach_translate), each path is copied from the
 * sender's filesystem into the receiver's `attachments/` directory, and the receiver is
 * given the receiver-local path of the copy: every reference a thread receives resolves in
 * its own filesystem. A path the sender's filesystem does not hold is an error for that
 * path, never a copy of something else.
 *
 * Resolution is done with openat(), one component at a time, each opened with O_NOFOLLOW:
 * a symbolic link anywhere on the path (a file, or a directory on the way) is refused
 * (TS_E_ATTACH_ESCAPE), so no path reaches outside the root, whatever links a tool left
 * in the workspace. `..` components are refused before anything is opened; so are `.`,
 * empty components ("a//b"), control bytes (a newline in a name) and NUL bytes (the
 * length is given, so a NUL inside the string is seen). Only regular files are copied
 * (a directory, a FIFO or a device: TS_E_ATTACH_NOT_FILE; a FIFO is opened
 * non-blocking, so it cannot hang the copy).
 *
 * Durability: a copy is written to a temporary name in the receiver's attachments/
 * directory, fsync'd, linked to its final name (link() fails rather than replace an
 * existing file, so concurrent copies never overwrite each other), and the directory is
 * fsync'd before ts_attach_copy returns: the receiver is handed the reference only after
 * the bytes and the name are on disk. A crash mid-copy leaves at most a `.tmp-*` file,
 * which no reference names.
 *
 * Names: the copy keeps the source's last component, with every byte outside
 * [A-Za-z0-9._-] (and a leading '.') replaced by '_', cut to TS_ATTACH_NAME_MAX; when the
 * receiver already has that name, "stem-2.ext", "stem-3.ext", ... is taken.
 *
 * Limits (ts_attach_limits; zeros take the defaults below): bytes per file, bytes and
 * files per batch (one message's attachments). A file that grows past the limit while it
 * is read is refused too. Nothing here allocates more than one fixed buffer per copy.
 *
 * Errors: every function returns 0 or a negative ts_err and, where it takes `why`, writes
 * one line naming the path (as given, escaped) and the reason. TS_E_ATTACH_* as above,
 * TS_E_LIMIT (too many files or bytes in the batch), TS_E_IO (the receiver's directory
 * cannot be written, a read or fsync failed), TS_E_INVAL (NULL arguments).
 */
#ifndef TS_AGENT_ATTACHMENTS_H
#define TS_AGENT_ATTACHMENTS_H

#include <stddef.h>
#include <stdint.h>

#include "base/strbuf.h"

/* The receiver's directory for copies, under its root. */
#define TS_ATTACH_DIR "attachments"
/* The longest path string accepted (bytes). */
#define TS_ATTACH_PATH_MAX 1024
/* The longest file name a copy is given (bytes, before a "-N" suffix). */
#define TS_ATTACH_NAME_MAX 128
/* Defaults: 32 MiB per file, 128 MiB and 64 files per batch: enough for documents and
 * images a model works with; a runaway tool cannot fill the disk through a message. */
#define TS_ATTACH_FILE_MAX ((uint64_t)32 << 20)
#define TS_ATTACH_TOTAL_MAX ((uint64_t)128 << 20)
#define TS_ATTACH_FILES_MAX 64

typedef struct {
  uint64_t file_max;  /* 0: TS_ATTACH_FILE_MAX */
  uint64_t total_max; /* 0: TS_ATTACH_TOTAL_MAX */
  uint32_t files_max; /* 0: TS_ATTACH_FILES_MAX */
} ts_attach_limits;

/* One batch of copies (a message's attachments): the limits and what was used so far.
 * Zero-fill it, set `limits` (or leave zeros), then copy each path into it. */
typedef struct {
  ts_attach_limits limits;
  uint64_t bytes;
  uint32_t files;
} ts_attach_batch;

/* Checks a path string (len bytes) without touching the filesystem. 0 or
 * TS_E_ATTACH_PATH. */
int ts_attach_path_check(const char *path, size_t len);

/* Opens `path` (len bytes) inside `root` for reading (see the top of this file) and
 * stores the descriptor in *fd_out (the caller closes it) and the file's size in
 * *size_out (may be NULL). Errors as above; *fd_out is untouched on error. */
int ts_attach_open(const char *root, const char *path, size_t len, int *fd_out,
                   uint64_t *size_out, char *why, size_t why_cap);

/* Copies `path` (len bytes) of the sender's filesystem `from_root` into the receiver's
 * `to_root`/attachments/ (created, 0755, when missing; refused when it is a link), counted
 * in `batch` (may be NULL: the default limits, this file alone). On success writes the
 * receiver-local path ("/attachments/NAME", NUL-terminated) into out (out_cap bytes:
 * TS_ATTACH_PATH_MAX is always enough) and returns 0; the copy is durable. On error
 * nothing is left under the final name, and `batch` is unchanged. */
int ts_attach_copy(const char *from_root, const char *path, size_t len, const char *to_root,
                   ts_attach_batch *batch, char *out, size_t out_cap, char *why,
                   size_t why_cap);

/* A child's reply crossing back to its parent (a subagent's outcome, a sub-prompt's text):
 * appends `text` (len bytes) to `out` as a JSON string, with every "/attachments/NAME"
 * path in it that the sender's filesystem `from_root` holds copied into the receiver's
 * `to_root` (ts_attach_copy, one batch for the text) and replaced by the receiver-local
 * path; each copy's path is appended to `list` as a JSON array item (comma-separated, no
 * brackets). A path the sender does not hold, or one that cannot be copied, stays as
 * written and names nothing new. NULL roots: the text as it is, nothing copied. A path
 * ends at the first byte outside [A-Za-z0-9._-] (a trailing '.' is a sentence's stop).
 * Errors show as the buffers' sticky error flags. */
void ts_attach_translate(const char *text, size_t len, const char *from_root,
                         const char *to_root, ts_buf *out, ts_buf *list);

#endif /* TS_AGENT_ATTACHMENTS_H */
