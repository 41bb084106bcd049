/*
 * demo_tools.h: the built-in demo tools, confined to a workspace directory.
 *
 *   write_file {description, path, content}   progress argument: description
 *   read_file  {path}
 *   list_dir   {path}  (default ".")
 *
 * The workspace is the calling thread's filesystem when the dispatcher names one
 * (ts_call_info.workspace: a child thread works in its own), else the one given to
 * ts_demo_tools_add. Paths are relative to the workspace; "/attachments/NAME", the path a
 * thread is handed a file by (tools-spec §6), is the workspace's attachments/NAME. Any other
 * absolute path, a path that contains a `..` component, or resolves (through a symbolic link) outside the workspace is refused with
 * an error result; nothing outside the workspace is read or written. write_file creates
 * missing parent directories inside the workspace and replaces the file atomically
 * (written to a temporary name, fsync'd, renamed). Reads are capped at 1 MiB.
 */
#ifndef TS_DEMO_TOOLS_H
#define TS_DEMO_TOOLS_H

#include "tools/registry.h"

/* Registers the three tools on `reg`; `workspace` must exist and is copied. Returns
 * TS_E_OK, TS_E_INVAL (why says why) or TS_E_NOMEM. The workspace string lives in a
 * context owned by the registry's user pointer: call ts_demo_tools_free after the
 * registry is done. */
typedef struct ts_demo_tools ts_demo_tools;
int ts_demo_tools_add(ts_registry *reg, const char *workspace, ts_demo_tools **out, char *why,
                      size_t why_cap);
void ts_demo_tools_free(ts_demo_tools *d);

#endif
