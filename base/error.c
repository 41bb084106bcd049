/*
 * error.c: names and messages for the codes of error.h, generated from the one table
 * so that a code, its name and its message can never drift apart.
 */
#include "base/error.h"

const char *ts_err_name(int code) {
  switch (code) {
#define TS_X(c, v, n, m) \
  case (v):              \
    return n;
    TS_ERROR_TABLE(TS_X)
#undef TS_X
  }
  return "unknown";
}

const char *ts_err_message(int code) {
  switch (code) {
#define TS_X(c, v, n, m) \
  case (v):              \
    return m;
    TS_ERROR_TABLE(TS_X)
#undef TS_X
  }
  return "unknown error";
}
