/*
 * nng_close_hang.c: a stand-in for libnng's nng_close that never returns, loaded with
 * LD_PRELOAD into one `toolstream sub` by bus_cli_test.c. libnng 1.5.2's close of a sub0
 * socket hangs now and then while its publisher is up (nng issue 1543, seen in this
 * project's bus tests under load); this makes that hang certain, so the test can check
 * that `sub` still exits, with its status, once it has said everything.
 */
#include <nng/nng.h>
#include <unistd.h>

int nng_close(nng_socket s) {
  (void)s;
  for (;;) pause();
}
