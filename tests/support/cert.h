/*
 * cert.h: a throwaway TLS certificate for tests (HTTPS to the model server, wss:// and
 * tls+tcp:// on the bus, the gateway's HTTPS upstream).
 *
 * Made with the openssl command: a self-signed RSA-2048 certificate for the DNS name
 * `localhost` (nng and OpenSSL verify a name, not 127.0.0.1: NOTES.md), valid two days.
 * Fails the test (check) when openssl is missing or fails.
 */
#ifndef TS_TEST_CERT_H
#define TS_TEST_CERT_H

/* Writes DIR/cert.pem, DIR/key.pem and DIR/both.pem (the certificate, then the key). */
void ts_test_make_cert(const char *dir);

#endif
