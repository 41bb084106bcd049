/* tests/layering/probe.c: compiled by the layering tests with one room's include
 * directories and TS_PROBE_HEADER set to a header. A header of a room the target links
 * must be found (the right-way probes); a header of a room above it must not be (the
 * wrong-way probes, which ctest expects to fail). */
#include TS_PROBE_HEADER

int ts_probe(void);
int ts_probe(void) { return 0; }
