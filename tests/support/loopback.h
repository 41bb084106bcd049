/*
 * loopback.h: a test's client socket to a server of its own on 127.0.0.1.
 *
 * loopback_connect() connects (blocking) and returns the descriptor; rcvbuf > 0 sets
 * SO_RCVBUF first (a small window, so that a server's writes stall when the test stops
 * reading); nonblock makes it non-blocking after the connect, for tests that run the
 * server's loop in the same thread. Failures abort the test program.
 */
#ifndef TS_TEST_LOOPBACK_H
#define TS_TEST_LOOPBACK_H

int loopback_connect(int port, int rcvbuf, int nonblock);

#endif
