/*
 * serve_assets.h: the live page's files (web/), compiled into the binary so that
 * `toolstream serve` needs nothing beside it. The table is generated at build time by
 * cmake/embed_web.cmake from the files committed in web/; edit those, not the table.
 */
#ifndef TS_SERVE_ASSETS_H
#define TS_SERVE_ASSETS_H

#include <stddef.h>

typedef struct {
  const char *path; /* "/", "/app.js", ... */
  const char *type; /* its Content-Type */
  const unsigned char *data;
  size_t len;
} ts_serve_asset;

/* The asset served at `path` (exact match), or NULL. */
const ts_serve_asset *ts_serve_asset_find(const char *path);

#endif /* TS_SERVE_ASSETS_H */
