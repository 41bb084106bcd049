/*
 * thread_id.h: the one rule for thread ids, shared by every layer (the bus's wire
 * format, the store's keys, the CLI's --thread, the gateway's X-Toolstream-Thread).
 *
 * A thread id is 1..TS_THREAD_ID_MAX bytes, none of them a control byte, a space or DEL.
 * The space ends the id in a live bus message (so a subscription to "t1 " never matches
 * "t10 ..."), and the replay protocol is line- and space-delimited text. An id over the
 * limit is refused wherever it enters, never cut or replaced.
 *
 * Fresh ids are `th_` + 16 lowercase hex digits from the kernel's random source, cut
 * from a pool that one getrandom(2) refills every ~500 ids (no system call per id); each
 * byte is used once, and a forked child never repeats its parent's ids (the pool's page
 * is wiped at fork). Safe to call from any thread.
 */
#ifndef TS_THREAD_ID_H
#define TS_THREAD_ID_H

#include <stddef.h>

/* Longest thread id anywhere in toolstream. Ids are names a human typed or the
 * 19-byte generated form; 256 leaves room for namespaced ids (`org/team/run-…`) and
 * bounds the key copy the bus keeps per thread. */
#define TS_THREAD_ID_MAX 256

/* Bytes of a generated id (`th_` + 16 hex digits), without the NUL. */
#define TS_THREAD_ID_GEN_LEN 19

/* 1 when `t` (n bytes) is a valid thread id, else 0. NULL is invalid. */
int ts_thread_id_valid(const char *t, size_t n);

/* Writes a fresh id and its NUL into buf (cap >= TS_THREAD_ID_GEN_LEN + 1). Returns 0, or
 * TS_E_INVAL when cap is too small, or TS_E_IO when the kernel gives no randomness. */
int ts_thread_id_new(char *buf, size_t cap);

#endif /* TS_THREAD_ID_H */
