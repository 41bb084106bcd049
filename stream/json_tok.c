/*
 * json_tok.c: the incremental JSON tokenizer (contract in json_tok.h).
 *
 * The design in one paragraph. All state lives in a small struct: a grammar state
 * (what may come next: a value, a key, a colon, a comma or a close), a lexer state for
 * the token in progress (inside a string: the state of a small DFA over escapes and
 * UTF-8; which part of a number; how many letters of a literal), the open token's kind,
 * depth and first-ness (t->tok), the nesting depth and one bit per open container
 * (object or array). feed() loads that state into locals, jumps (one `switch`) to the
 * label that resumes exactly where the last chunk stopped, and stores it back. Each
 * grammar point is a label and the common transitions (key, colon, value, comma) jump
 * straight to the next one without going back through the switch. Nothing is buffered: a
 * string or number that is still open when the chunk ends is reported as a fragment
 * (a view into the chunk) and the next chunk continues it. Nothing rewinds: every byte
 * is looked at once by the lexer, and the byte that ends a number is looked at a
 * second time by the grammar.
 *
 * The hot path is a string body (a file's content inside a write_file call). It is
 * scanned 16 bytes at a time with SSE2 for the only bytes that need attention: `"`,
 * `\`, control bytes and non-ASCII bytes (one signed compare of the bytes xor 2 catches
 * all but the backslash), one bit each in a block's mask. The scan walks the mask's bits without leaving the
 * block: a one-character escape (\n, \", \\ ...) or a whole, valid UTF-8 character
 * clears its bits and the walk goes on, so a run of backslashes resolves pair by pair
 * and an escaped quote never ends the string. From any other stop (\u, a byte in
 * error, a character or escape the chunk cuts) a table-driven DFA (str_dfa: 27 states,
 * 25 byte classes, one table load per byte) checks the bytes one by one, and the fast
 * scan resumes once it is back between characters. The DFA is the authority: the walk
 * steps only over what the DFA would take from "between characters" back to it, and
 * leaves everything it refuses to the DFA, so errors are found at the same byte. The DFA's state is all a string
 * needs between chunks, and its error exits find an error at the same byte whatever
 * the chunking. Where the CPU has AVX2 (asked once, at load), a long string is scanned
 * 32 bytes a step instead (scan_wide: the same walk, and one-character escapes at the
 * start of a backslash run cleared by a table lookup on the whole block, not one step
 * of the walk each); a short string, which ends in its first 16-byte block, never
 * enters it. Elsewhere a word-at-a-time scan does the scanning.
 *
 * Per-call cost matters as much as per-byte cost: models send deltas of a few bytes,
 * and there the fixed cost of a call is most of the cost. So a chunk that continues a
 * string does not enter the machine at all (ts_json_tok_feed, at the end): the open
 * token lives in the struct (t->tok: kind, depth, flags), so reporting the chunk as its
 * next fragment writes only the view (text, len, offset) and calls back. A chunk of 4
 * to 8 bytes between characters takes one word test for stop bytes (two compares); one
 * with a stop, or of 1 to 3 bytes, or starting inside an escape, runs through the DFA
 * whole (two table loads a byte in straight-line steps, no test per byte: the exits
 * absorb); only a closing quote or an error sends it to the machine, at the byte
 * concerned. The grammar state and the DFA's state share one word (t->mode), with the
 * error and finished conditions as states too (S_ERROR, S_FINISHED) and "the string
 * has reported nothing yet" as one bit, so that one sum and one compare pick the
 * commonest case (4 to 8 bytes between characters in a string that has reported a
 * fragment); feed only picks, every case is a tail call (none pays for the registers
 * another needs), and a chunk for the grammar reaches the machine after two compares.
 * Structure in short chunks is taken by a small loop of its own, the grammar short path
 * (gram_run): after a closing quote that str_short or str_more finds (str_close), and
 * from the start of a chunk of up to 16 bytes that starts outside a string
 * (gram_short). It takes colons, commas, containers opened and closed, keys and strings
 * with no stop byte, numbers and literals, and enters the machine only at a byte it
 * does not take. Where a 4 to 8-byte chunk ends a string and what follows is only its
 * colon or comma and the first bytes of the next key, string or integer (close_short),
 * the state is stored first and the reports made with one register saved. In the machine itself (long chunks: a document fed whole or in large
 * pieces), a key or string the 16 bytes after its opening quote end, with no escape or
 * non-ASCII byte before the quote, is reported at once, with its kind and flags known,
 * and a key's colon right after its quote is taken with it (key_open, sval_open); the
 * general string lexer takes the rest.
 *
 * Errors record the code and the absolute offset of the offending byte and become
 * sticky; no token is reported from that byte on.
 */
#include "stream/json_tok.h"

#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Grammar and lexer states. The order matters only for the range tests below. */
enum {
  S_STR = 0,        /* inside a string or key body (mode's low 16 bits: the DFA state, see
                     * below); 0, so that t->mode is 0 exactly between characters in a string */
  S_VALUE,          /* a value must come (start, after ':', after ',' in an array) */
  S_VALUE_OR_AEND,  /* after '[': a value or ']' */
  S_KEY_OR_OEND,    /* after '{': a key or '}' */
  S_KEY,            /* after ',' in an object: a key */
  S_COLON,          /* after a key */
  S_AFTER,          /* after a value inside a container: ',' or the close */
  S_DONE,           /* after the top-level value: whitespace only */
  S_NUM_MINUS,      /* number: after '-' */
  S_NUM_ZERO,       /* number: after a leading 0 */
  S_NUM_INT,        /* number: in the integer digits */
  S_NUM_DOT,        /* number: after '.' */
  S_NUM_FRAC,       /* number: in the fraction digits */
  S_NUM_E,          /* number: after 'e' / 'E' */
  S_NUM_ESIGN,      /* number: after the exponent's sign */
  S_NUM_EXP,        /* number: in the exponent digits */
  S_LIT,            /* true / false / null: t->lit_k letters matched of literal t->lit */
  S_FINISHED,       /* finish succeeded (the value was complete: done() holds) */
  S_ERROR,          /* t->err is set; nothing more is reported */
};

/* t->mode: the state above in the high 16 bits and, in a string, the DFA state (below) in
 * the low 16. It is always written whole (a narrower store followed by the next call's
 * wider load would stall the CPU's store forwarding). */
#define MODE(st) ((uint32_t)(st) << 16)
#define STATE(t) ((unsigned)((t)->mode >> 16))
/* In a string, this bit of t->mode (the DFA's states are multiples of 32) says that the
 * string has reported no fragment yet (t->tok.flags holds TS_JSON_FIRST): t->mode is 0
 * only where the next fragment is neither the first nor inside a character, the one
 * case feed's shortest path handles (it never writes t->tok.flags). */
#define MODE_FIRST 16u
/* The DFA's state from t->mode in a string. */
#define MODE_DFA(m) ((m) & 0xFFE0u)

/* Inside a string body, t->mode's low 16 bits are the state of a small DFA that checks escapes and
 * UTF-8 one byte at a time (the plain runs between them are skipped 16 bytes at a time,
 * see scan_string). A state says exactly what the next byte may be:
 *   PL   between characters
 *   ES   after a backslash
 *   U1 U2 U3 U4   \u seen, the next is the 1st..4th hex digit (U2D: the 1st was d/D)
 *   LO3 LO4       \uD[c-f]: a lone low surrogate, an error once its 4th digit is read
 *   H3 H4         \uD[8-b]: a high surrogate; HBS then HU: its "\u" must follow
 *   L1 L2 L3 L4   the low surrogate's digits (L2X L3X L4X: not in DC00-DFFF, an error
 *                 at its 4th digit)
 *   C1 C2 C3      1, 2, 3 UTF-8 continuation bytes (80-BF) due
 *   E0 ED F0 F4   the first continuation byte after that lead, which has a narrower
 *                 range (no overlong forms, no encoded surrogates, nothing above
 *                 U+10FFFF)
 * and five exits, which absorb every later byte: QT (the closing quote) and the errors
 * XC (a control byte), XU (bad UTF-8), XE (a bad escape), XS (a bad surrogate). Errors
 * are thus found at the same byte whatever the chunking. */
enum { C_Q, C_BS, C_CT, C_AS, C_U, C_EL, C_H07, C_H89, C_HAB, C_Hb, C_HC, C_HD, C_HEF, C_Hf, C_K80, C_K90, C_KA0, C_LC2, C_LE0, C_LE1, C_LED, C_LF0, C_LF1, C_LF4, C_BAD };
enum { D_PL, D_ES, D_U1, D_U2, D_U2D, D_U3, D_U4, D_LO3, D_LO4, D_H3, D_H4, D_HBS, D_HU, D_L1, D_L2, D_L2X, D_L3, D_L3X, D_L4, D_L4X, D_C1, D_C2, D_C3, D_E0, D_ED, D_F0, D_F4, D_QT, D_XC, D_XU, D_XE, D_XS, D_NSTATES };
static const int16_t str_exit_err[5] = {0, TS_E_JSON_CTRL, TS_E_JSON_UTF8, TS_E_JSON_ESCAPE,
                                        TS_E_JSON_SURROGATE};

/* Byte classes (see the DFA below). Generated; rows of 16 bytes. */
static const uint8_t str_class[256] = {
    C_CT, C_CT, C_CT, C_CT, C_CT, C_CT, C_CT, C_CT, C_CT, C_CT, C_CT, C_CT, C_CT, C_CT, C_CT, C_CT,
    C_CT, C_CT, C_CT, C_CT, C_CT, C_CT, C_CT, C_CT, C_CT, C_CT, C_CT, C_CT, C_CT, C_CT, C_CT, C_CT,
    C_AS, C_AS, C_Q, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS, C_EL,
    C_H07, C_H07, C_H07, C_H07, C_H07, C_H07, C_H07, C_H07, C_H89, C_H89, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS,
    C_AS, C_HAB, C_HAB, C_HC, C_HD, C_HEF, C_HEF, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS,
    C_AS, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS, C_BS, C_AS, C_AS, C_AS,
    C_AS, C_HAB, C_Hb, C_HC, C_HD, C_HEF, C_Hf, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS, C_EL, C_AS,
    C_AS, C_AS, C_EL, C_AS, C_EL, C_U, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS, C_AS,
    C_K80, C_K80, C_K80, C_K80, C_K80, C_K80, C_K80, C_K80, C_K80, C_K80, C_K80, C_K80, C_K80, C_K80, C_K80, C_K80,
    C_K90, C_K90, C_K90, C_K90, C_K90, C_K90, C_K90, C_K90, C_K90, C_K90, C_K90, C_K90, C_K90, C_K90, C_K90, C_K90,
    C_KA0, C_KA0, C_KA0, C_KA0, C_KA0, C_KA0, C_KA0, C_KA0, C_KA0, C_KA0, C_KA0, C_KA0, C_KA0, C_KA0, C_KA0, C_KA0,
    C_KA0, C_KA0, C_KA0, C_KA0, C_KA0, C_KA0, C_KA0, C_KA0, C_KA0, C_KA0, C_KA0, C_KA0, C_KA0, C_KA0, C_KA0, C_KA0,
    C_BAD, C_BAD, C_LC2, C_LC2, C_LC2, C_LC2, C_LC2, C_LC2, C_LC2, C_LC2, C_LC2, C_LC2, C_LC2, C_LC2, C_LC2, C_LC2,
    C_LC2, C_LC2, C_LC2, C_LC2, C_LC2, C_LC2, C_LC2, C_LC2, C_LC2, C_LC2, C_LC2, C_LC2, C_LC2, C_LC2, C_LC2, C_LC2,
    C_LE0, C_LE1, C_LE1, C_LE1, C_LE1, C_LE1, C_LE1, C_LE1, C_LE1, C_LE1, C_LE1, C_LE1, C_LE1, C_LED, C_LE1, C_LE1,
    C_LF0, C_LF1, C_LF1, C_LF1, C_LF4, C_BAD, C_BAD, C_BAD, C_BAD, C_BAD, C_BAD, C_BAD, C_BAD, C_BAD, C_BAD, C_BAD,
};

/* str_dfa[32 * state + class] is 32 times the next state: states are kept scaled (in
 * t->mode too), so the next index is one addition away. The exits absorb every byte, so
 * a short chunk can be run without a test per byte. Columns: Q BS CT AS U EL H07 H89 HAB Hb HC HD HEF Hf K80 K90 KA0 LC2 LE0 LE1 LED LF0 LF1 LF4 BAD. */
#define X(st) (st * 32)
static const uint16_t str_dfa[D_NSTATES * 32] = {
    /* PL  */ X(D_QT), X(D_ES), X(D_XC), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_XU), X(D_XU), X(D_XU), X(D_C1), X(D_E0), X(D_C2), X(D_ED), X(D_F0), X(D_C3), X(D_F4), X(D_XU), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* ES  */ X(D_PL), X(D_PL), X(D_XE), X(D_XE), X(D_U1), X(D_PL), X(D_XE), X(D_XE), X(D_XE), X(D_PL), X(D_XE), X(D_XE), X(D_XE), X(D_PL), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* U1  */ X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_U2), X(D_U2), X(D_U2), X(D_U2), X(D_U2), X(D_U2D), X(D_U2), X(D_U2), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* U2  */ X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_U3), X(D_U3), X(D_U3), X(D_U3), X(D_U3), X(D_U3), X(D_U3), X(D_U3), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* U2D */ X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_U3), X(D_H3), X(D_H3), X(D_H3), X(D_LO3), X(D_LO3), X(D_LO3), X(D_LO3), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* U3  */ X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_U4), X(D_U4), X(D_U4), X(D_U4), X(D_U4), X(D_U4), X(D_U4), X(D_U4), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* U4  */ X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* LO3 */ X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_LO4), X(D_LO4), X(D_LO4), X(D_LO4), X(D_LO4), X(D_LO4), X(D_LO4), X(D_LO4), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* LO4 */ X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* H3  */ X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_H4), X(D_H4), X(D_H4), X(D_H4), X(D_H4), X(D_H4), X(D_H4), X(D_H4), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* H4  */ X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_HBS), X(D_HBS), X(D_HBS), X(D_HBS), X(D_HBS), X(D_HBS), X(D_HBS), X(D_HBS), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* HBS */ X(D_XS), X(D_HU), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* HU  */ X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_L1), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* L1  */ X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_L2X), X(D_L2X), X(D_L2X), X(D_L2X), X(D_L2X), X(D_L2), X(D_L2X), X(D_L2X), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* L2  */ X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_L3X), X(D_L3X), X(D_L3X), X(D_L3X), X(D_L3), X(D_L3), X(D_L3), X(D_L3), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* L2X */ X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_L3X), X(D_L3X), X(D_L3X), X(D_L3X), X(D_L3X), X(D_L3X), X(D_L3X), X(D_L3X), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* L3  */ X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_L4), X(D_L4), X(D_L4), X(D_L4), X(D_L4), X(D_L4), X(D_L4), X(D_L4), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* L3X */ X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_L4X), X(D_L4X), X(D_L4X), X(D_L4X), X(D_L4X), X(D_L4X), X(D_L4X), X(D_L4X), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* L4  */ X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* L4X */ X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* C1  */ X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_PL), X(D_PL), X(D_PL), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* C2  */ X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_C1), X(D_C1), X(D_C1), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* C3  */ X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_C2), X(D_C2), X(D_C2), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* E0  */ X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_C1), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* ED  */ X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_C1), X(D_C1), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* F0  */ X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_C2), X(D_C2), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* F4  */ X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_C2), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* QT  */ X(D_QT), X(D_QT), X(D_QT), X(D_QT), X(D_QT), X(D_QT), X(D_QT), X(D_QT), X(D_QT), X(D_QT), X(D_QT), X(D_QT), X(D_QT), X(D_QT), X(D_QT), X(D_QT), X(D_QT), X(D_QT), X(D_QT), X(D_QT), X(D_QT), X(D_QT), X(D_QT), X(D_QT), X(D_QT), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* XC  */ X(D_XC), X(D_XC), X(D_XC), X(D_XC), X(D_XC), X(D_XC), X(D_XC), X(D_XC), X(D_XC), X(D_XC), X(D_XC), X(D_XC), X(D_XC), X(D_XC), X(D_XC), X(D_XC), X(D_XC), X(D_XC), X(D_XC), X(D_XC), X(D_XC), X(D_XC), X(D_XC), X(D_XC), X(D_XC), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* XU  */ X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_XU), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* XE  */ X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_XE), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
    /* XS  */ X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_XS), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL), X(D_PL),
};
#undef X

static const char *const lit_text[3] = {"true", "false", "null"};
static const uint8_t lit_len[3] = {4, 5, 4};
static const uint8_t lit_kind[3] = {TS_JSON_TRUE, TS_JSON_FALSE, TS_JSON_NULL};

/* 1 for the bytes a string body must stop at: control bytes, '"', '\\' and every
 * non-ASCII byte (validated as UTF-8). Rows of 32 bytes: 0x00, 0x20, ... 0xE0. */
static const uint8_t str_stop[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define TS_SWAR 1
/* Word-at-a-time stop test: a byte is flagged (its top bit set) if it is '"', '\\',
 * below 0x20 or from 0x80. The lowest flagged byte is exact; a byte above it may be
 * flagged falsely (a borrow), which never matters because we want the first. */
static inline uint64_t stop_bits64(uint64_t w) {
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
  return (((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w) | w) & highs;
}
static inline uint32_t stop_bits32(uint32_t w) {
  const uint32_t ones = 0x01010101u, highs = 0x80808080u;
  uint32_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
  return (((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w) | w) & highs;
}
#endif

/* The first stop byte in [p, end), or end, for end - p < 16: two overlapping words
 * cover the range (the bytes of the second word that the first already cleared hold
 * no stop byte, so they cannot flag anything above them). */
static inline const char *scan_short(const char *p, const char *end) {
#if defined(TS_SWAR)
  size_t r = (size_t)(end - p);
  if (r >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    uint64_t h = stop_bits64(w);
    if (h) return p + (__builtin_ctzll(h) >> 3);
    if (r == 8) return end;
    memcpy(&w, end - 8, 8);
    h = stop_bits64(w) & (~0ull << (8 * (16 - r)));
    if (h) return end - 8 + (__builtin_ctzll(h) >> 3);
    return end;
  }
  if (r >= 4) {
    uint32_t w;
    memcpy(&w, p, 4);
    uint32_t h = stop_bits32(w);
    if (h) return p + (__builtin_ctz(h) >> 3);
    if (r == 4) return end;
    memcpy(&w, end - 4, 4);
    h = stop_bits32(w) & (~0u << (8 * (8 - r)));
    if (h) return end - 4 + (__builtin_ctz(h) >> 3);
    return end;
  }
#endif
  while (p < end && !str_stop[(uint8_t)*p]) p++;
  return p;
}

/* The length of the escape at p (p[0] is a backslash, p[1] is in the chunk, `avail`
 * bytes from p are): 2 for a one-character escape (\" \\ \/ \b \f \n \r \t: the
 * DFA's own answer, so the two cannot disagree), 6 for a \uXXXX that is not a
 * surrogate, 12 for a high surrogate's \uD[89ab]XX followed at once by a low one's
 * \uD[c-f]XX (pair_len), 0 for anything the DFA must see (a lone or misplaced
 * surrogate; a bad escape; one the chunk cuts). */
/* 12 if the 6 bytes at p + 6 (readable) are the low surrogate's escape \uDC00-\uDFFF
 * that must follow the high one at p, else 0 (the DFA finds the error, at its byte). */
static inline unsigned pair_len(const char *p) {
  if (p[6] != '\\' || p[7] != 'u') return 0;
  const unsigned e1 = str_class[(uint8_t)p[8]], e2 = str_class[(uint8_t)p[9]];
  const unsigned e3 = str_class[(uint8_t)p[10]], e4 = str_class[(uint8_t)p[11]];
  return e1 == C_HD && e2 - C_HC <= C_Hf - C_HC && e3 - C_H07 <= C_Hf - C_H07 &&
                 e4 - C_H07 <= C_Hf - C_H07
             ? 12
             : 0;
}

static inline __attribute__((always_inline)) unsigned escape_len(const char *p, size_t avail,
                                                                  int pairs) {
  const unsigned k = str_class[(uint8_t)p[1]];
  if (str_dfa[32 * D_ES + k] == 32 * D_PL) return 2;
  if (k != C_U || avail < 6) return 0;
  const unsigned d1 = str_class[(uint8_t)p[2]], d2 = str_class[(uint8_t)p[3]];
  const unsigned d3 = str_class[(uint8_t)p[4]], d4 = str_class[(uint8_t)p[5]];
  const unsigned hex = (d1 - C_H07 <= C_Hf - C_H07) & (d2 - C_H07 <= C_Hf - C_H07) &
                       (d3 - C_H07 <= C_Hf - C_H07) & (d4 - C_H07 <= C_Hf - C_H07);
  if (hex && !(d1 == C_HD && d2 >= C_H89)) return 6;
  /* D800-DFFF: a high surrogate with its low one whole in the chunk is one unit; a low
   * one first, or anything else, is the DFA's */
  if (!pairs || !hex || d2 > C_Hb || avail < 12) return 0;
  return pair_len(p);
}

/* The length (2 to 4) of the valid UTF-8 character at p, whose first byte is >= 0x80,
 * or 0 if it is not one (or not whole in the 4 bytes at p, which must be readable):
 * the DFA's rules (no overlong form, no encoded surrogate, nothing above U+10FFFF),
 * checked on one word. Anything it refuses goes to the DFA, which finds the error at
 * the byte the DFA always finds it at. */
static inline unsigned utf8_len(const char *p) {
  uint32_t w;
  memcpy(&w, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  w = __builtin_bswap32(w);
#endif
  if ((w & 0xC0E0u) == 0x80C0u) return (w & 0x1Eu) ? 2 : 0; /* C2..DF: not C0, C1 */
  if ((w & 0xC0C0F0u) == 0x8080E0u) {
    const uint32_t cp = (w & 0x0Fu) << 12 | (w & 0x3F00u) >> 2 | (w & 0x3F0000u) >> 16;
    return cp >= 0x800u && (cp - 0xD800u) >= 0x800u ? 3 : 0;
  }
  if ((w & 0xC0C0C0F8u) == 0x808080F0u) {
    const uint32_t cp = (w & 0x07u) << 18 | (w & 0x3F00u) << 4 | (w & 0x3F0000u) >> 10 |
                        (w & 0x3F000000u) >> 24;
    return cp - 0x10000u < 0x100000u ? 4 : 0;
  }
  return 0;
}

/* ---- the 32-byte scan (AVX2, chosen at run time) -------------------------------------
 * A long string body (a file's content) is scanned 32 bytes a step when the CPU has
 * AVX2: the same masks and the same walk as scan_string's 16-byte blocks, so it steps
 * over exactly the same escapes and characters and stops at exactly the same bytes. It
 * is compiled for AVX2 alone (a target attribute) and called only when cpuid says AVX2
 * is there (wide_scan, set once at load), so a binary built for plain x86-64 runs
 * anywhere; without it, or off x86-64, the 16-byte scan does all the work. It is out of
 * line (an AVX2 function cannot be inlined into the others), so scan_string enters it
 * only for a string that its first 16-byte block did not end and that has more than 32
 * bytes left in the chunk (short strings never pay the call), and feed for a chunk of
 * 32 bytes or more that continues a string (str_wide). */
#if defined(__x86_64__) && defined(__SSE2__) && defined(__GNUC__) && !defined(TS_NO_AVX2)
#define TS_WIDE_SCAN 1
#include <immintrin.h>

/* 1 while the 32-byte scan is in use; set before main from cpuid (and by tests). */
static int wide_scan;

__attribute__((constructor)) static void wide_scan_pick(void) {
  __builtin_cpu_init();
  wide_scan = __builtin_cpu_supports("avx2") != 0;
}

/* Needs end - p >= 32 and p between characters. Returns the first byte in [p, end) the
 * body must stop at, or the first point between characters with fewer than 32 bytes
 * left (the caller's 16-byte scan takes those). A backslash at the chunk's last byte
 * stops it (its escape is the next chunk's: the DFA keeps the state).
 *
 * Beyond scan_string's walk, one-character escapes cost nothing per escape here when
 * their backslash starts a run (no backslash just before it): the block's bytes are
 * classified with two nibble lookups (vpshufb) as "one of \" \\ / b f n r t", and a
 * run's first backslash followed by one in the block is a whole escape, so both its
 * bits are cleared before the walk (a backslash at the block's last byte is the
 * walk's). That is exactly what the walk would have stepped over: the scan is between
 * characters at every block start and after every step, the first backslash of a run,
 * if the walk reaches it, starts an escape (no escape or UTF-8 character holds a
 * backslash after its first byte, and the walk stops for good at anything it cannot
 * step over), and its DFA step from ES is the set above. The rest of a run, \u and
 * everything else are left to the walk. */
__attribute__((target("avx2"), noinline)) static const char *scan_wide(const char *p,
                                                                      const char *end) {
  const __m256i two = _mm256_set1_epi8(2);
  const __m256i bslash = _mm256_set1_epi8('\\');
  const __m256i k21 = _mm256_set1_epi8(0x21);
  const __m256i nib = _mm256_set1_epi8(0x0F);
  /* the escape letters by nibbles: bit 0 for 0x2_ ('"' '/'), 1 for 0x5_ ('\\'), 2 for
   * 0x6_ (b f n), 3 for 0x7_ (r t); a byte is one iff lo[low] & hi[high] */
  const __m256i lo = _mm256_setr_epi8(0, 0, 1 | 4 | 8, 0, 8, 0, 4, 0, 0, 0, 0, 0, 2, 0, 4, 1,
                                      0, 0, 1 | 4 | 8, 0, 8, 0, 4, 0, 0, 0, 0, 0, 2, 0, 4, 1);
  const __m256i hi = _mm256_setr_epi8(0, 0, 1, 0, 0, 2, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0,
                                      0, 0, 1, 0, 0, 2, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0);
  do {
    const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)p);
    const __m256i b = _mm256_cmpeq_epi8(v, bslash);
    /* as in scan_string: v ^ 2 < 0x21 (signed) is '"', the control bytes and 0x80-0xff */
    const uint64_t bs = (uint32_t)_mm256_movemask_epi8(b);
    uint64_t m = (uint32_t)_mm256_movemask_epi8(
        _mm256_or_si256(b, _mm256_cmpgt_epi8(k21, _mm256_xor_si256(v, two))));
    unsigned adv = 32;
    if (bs) {
      /* a run's first backslash whose next byte is an escape letter: a whole escape */
      const __m256i cls = _mm256_and_si256(
          _mm256_shuffle_epi8(lo, _mm256_and_si256(v, nib)),
          _mm256_shuffle_epi8(hi, _mm256_and_si256(_mm256_srli_epi16(v, 4), nib)));
      const uint64_t letter =
          (uint32_t)~_mm256_movemask_epi8(_mm256_cmpeq_epi8(cls, _mm256_setzero_si256()));
      const uint64_t one = bs & letter >> 1 & ~(bs << 1);
      m &= ~(one | one << 1);
    }
    while (m) {
      const unsigned i = (unsigned)__builtin_ctzll(m);
      unsigned n = 2;
      if (!((bs >> i) & 1)) {
        if ((uint8_t)p[i] < 0x80 || end - (p + i) < 4 || !(n = utf8_len(p + i))) return p + i;
      } else if (end - (p + i) < 2 || !(n = escape_len(p + i, (size_t)(end - (p + i)), 1))) {
        return p + i;
      }
      m &= ~((1ull << (i + n)) - 1u); /* i + n <= 43 */
      if (i + n > adv) adv = i + n; /* it may run into the next block */
    }
    p += adv;
  } while (end - p >= 32);
  return p;
}

int ts__json_tok_wide(int on) {
  if (on >= 0) {
    __builtin_cpu_init();
    wide_scan = on && __builtin_cpu_supports("avx2");
  }
  return wide_scan;
}
#else
int ts__json_tok_wide(int on) {
  (void)on;
  return 0;
}
#endif

/* Returns the first byte in [p, end) that a string body must stop at, or end. `buf`
 * is the start of the chunk: bytes in [buf, p) may be read again (never past end).
 *
 * One-character escapes do not stop it: in each 16-byte block the backslashes and the
 * other stop bytes ('"', control and non-ASCII bytes) are one mask each, and the scan
 * walks the mask's set bits: a backslash whose next byte (in the chunk) makes a
 * one-character escape clears both bits and the walk goes on in the same block, so an
 * escaped quote or backslash is never seen as a stop and a run of backslashes resolves
 * pair by pair. The first bit that is not such an escape is the answer: a quote, a
 * control byte, a non-ASCII byte (the DFA checks its character), a \u escape or a
 * backslash whose escape lies beyond the chunk (the DFA keeps its state). The bytes it
 * steps over are exactly those the DFA would have taken from PL back to PL. */
static inline __attribute__((always_inline)) const char *
scan_string(const char *p, const char *end, const char *buf, const char *start,
            unsigned narrow) {
#if defined(__SSE2__)
  const __m128i two = _mm_set1_epi8(2);
  const __m128i bslash = _mm_set1_epi8('\\');
  const __m128i k21 = _mm_set1_epi8(0x21);
  unsigned bs, m;
  /* v ^ 2 maps '"' to 0x20 and the control bytes onto themselves, so one signed compare
   * ("< 0x21") finds both, and the bytes 0x80-0xff, which are negative */
#define BLOCK_MASKS(v)                                                                     \
  do {                                                                                     \
    const __m128i b_ = _mm_cmpeq_epi8((v), bslash);                                        \
    bs = (unsigned)_mm_movemask_epi8(b_);                                                  \
    m = (unsigned)_mm_movemask_epi8(_mm_or_si128(b_, _mm_cmplt_epi8(_mm_xor_si128((v), two), k21))); \
  } while (0)
  while (end - p > 16) { /* p[16] is in the chunk: an escape at p[15] can be read whole */
    BLOCK_MASKS(_mm_loadu_si128((const __m128i *)(const void *)p));
    unsigned adv = 16;
    if (m && p[__builtin_ctz(m)] == '"') return p + __builtin_ctz(m); /* a short string's end */
    while (m) {
      const unsigned i = (unsigned)__builtin_ctz(m);
      unsigned n = 2;
      if (!((bs >> i) & 1)) {
        /* a quote, a control byte, or a UTF-8 character checked here when it is whole */
        if ((uint8_t)p[i] < 0x80 || end - (p + i) < 4 || !(n = utf8_len(p + i))) return p + i;
      } else if (!(n = escape_len(p + i, (size_t)(end - (p + i)), 0))) {
        return p + i; /* a surrogate or a bad escape: the DFA's */
      }
      m &= ~((1u << (i + n)) - 1u); /* clears the bits of the bytes taken (i + n < 28) */
      adv = i + n > 16 ? i + n : 16; /* they may run into the next block */
    }
    p += adv;
#if defined(TS_WIDE_SCAN)
    /* a string the first block did not end (the first `narrow` blocks, measured from
     * the string's start), with 32 bytes or more left: the rest of it 32 bytes a step
     * (scan_wide stops where this loop would; what it leaves, this loop finishes). The
     * gate is tested only where the 32-byte scan could be entered, so that without it
     * a long string pays nothing for it. */
    if (wide_scan && end - p > 32) {
      if (narrow > 1 && p - start < 16 * (ptrdiff_t)narrow) continue;
      p = scan_wide(p, end);
      if (end - p > 32) return p;
    }
#endif
  }
  if (p >= end) return end;
  if (end - buf >= 16) {
    /* The last 16 bytes of the chunk, ignoring those before p. */
    const unsigned r = (unsigned)(end - p);
    BLOCK_MASKS(_mm_loadu_si128((const __m128i *)(const void *)(end - 16)));
    m >>= 16 - r;
    if (!m) return end;
    unsigned i = (unsigned)__builtin_ctz(m);
    if (p[i] == '"') return p + i; /* the common end of a short string */
    bs >>= 16 - r;
    for (;;) {
      unsigned n = 2;
      if (!((bs >> i) & 1)) {
        if ((uint8_t)p[i] < 0x80 || r - i < 4 || !(n = utf8_len(p + i))) return p + i;
      } else if (i + 1 == r || !(n = escape_len(p + i, r - i, 0))) {
        return p + i;
      }
      m &= ~(unsigned)((1ull << (i + n)) - 1u);
      if (!m) return end;
      i = (unsigned)__builtin_ctz(m);
    }
  }
#undef BLOCK_MASKS
#elif defined(TS_SWAR)
  (void)buf;
  while (end - p >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    uint64_t h = stop_bits64(w);
    if (h) return p + (__builtin_ctzll(h) >> 3);
    p += 8;
  }
#else
  (void)buf;
#endif
  return scan_short(p, end);
}

#if defined(__SSE2__)
/* The index of the first byte in the 16 at s that a string body must stop at, or 16
 * if none is (s[16] must then be readable: where it is the closing quote, the string
 * is the 16 bytes before it). */
static inline __attribute__((always_inline)) unsigned short_stop(const char *s) {
  const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)s);
  /* the bytes that need no stop (v ^ 2 > 0x20 signed, and not a backslash), so that the
   * complement's bit 16 is the "none" answer with no OR (and the compare takes v ^ 2 as
   * its destination, with no copy of the constant) */
  const __m128i ok = _mm_andnot_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\')),
                                      _mm_cmpgt_epi8(_mm_xor_si128(v, _mm_set1_epi8(2)),
                                                     _mm_set1_epi8(0x20)));
  return (unsigned)__builtin_ctz(~(unsigned)_mm_movemask_epi8(ok));
}
#endif

/* Four bytes at p as one word, in memory order (a literal's letters compare as one). */
static inline uint32_t load32(const char *p) {
  uint32_t w;
  memcpy(&w, p, 4);
  return w;
}

static inline int is_ws(uint8_t c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }


int ts_json_tok_init(ts_json_tok *t, uint32_t max_depth, ts_json_tok_cb cb, void *user) {
  if (!t) return TS_E_INVAL;
  if (!cb || max_depth > TS_JSON_MAX_DEPTH_CAP) {
    memset(t, 0, offsetof(ts_json_tok, stack));
    t->err = TS_E_INVAL;
    t->mode = MODE(S_ERROR);
    return TS_E_INVAL;
  }
  /* Field by field, not a memset (a document of 140 bytes pays this each time): every
   * field a call may read before writing it. The open token (t->tok), the literal's
   * start and the stack's bits are always written before they are read. */
  t->cb = cb;
  t->user = user;
  t->pos = 0;
  t->err_offset = 0;
  t->depth = 0;
  t->max_depth = max_depth ? max_depth : TS_JSON_DEFAULT_MAX_DEPTH;
  t->err = 0;
  t->mode = MODE(S_VALUE);
  t->lit = 0;
  t->lit_k = 0;
  t->in_obj = 0;
  return TS_E_OK;
}

int ts_json_tok_done(const ts_json_tok *t) {
  /* no error in either state: t->err is set only with S_ERROR */
  const unsigned state = STATE(t);
  return state == S_DONE || state == S_FINISHED;
}

/* ---- string bodies ---------------------------------------------------------------------
 * One lexer for string bodies serves both the machine and feed's string fast path:
 * plain runs are skipped by scan_string, and from each stop byte the DFA above runs a
 * byte at a time until it is back between characters (PL) or exits. */

/* Runs the DFA from state *sp over [p, end) until it is back at PL or exits; returns
 * the byte after the last one it took. Needs p < end and *sp != PL or p at a stop. */
static inline const char *dfa_run(size_t *sp, const char *p, const char *end) {
  size_t s = *sp;
  do {
    s = str_dfa[s + str_class[(uint8_t)*p++]];
  } while (s - 32u < 32u * (D_QT - 1) && p < end);
  *sp = s;
  return p;
}

/* Lexes a string body from p, in DFA state s (scaled). Returns the closing quote (t->mode is
 * PL), or end (the chunk ended inside the string; t->mode says where), or, with *err
 * set, the offending byte. `buf` is the chunk's start (see scan_string). */
static inline __attribute__((always_inline)) const char *
str_body(ts_json_tok *t, size_t s, const char *p, const char *end, const char *buf,
         unsigned narrow, int *err) {
  const char *const start = p;
  for (;;) {
    if (s == 32 * D_PL) {
      p = scan_string(p, end, buf, start, narrow);
      if (p == end) break;
      if (*p == '"') return p;
    }
    if (p == end) break;
    p = dfa_run(&s, p, end);
    if (s >= 32 * D_QT) {
      /* not D_QT: from a stop byte other than '"' the DFA never reads a closing quote
       * before it is back at PL */
      *err = str_exit_err[(s >> 5) - D_QT];
      return p - 1;
    }
  }
  t->mode = MODE(S_STR) | (uint32_t)s;
  return end;
}

/* A call that reports nothing: after an error or finish (the bytes still count, so
 * ts_json_tok_offset is the bytes fed however they were chunked), or an empty chunk. */
__attribute__((noinline, cold)) static int feed_idle(ts_json_tok *t, size_t len) {
  const unsigned state = STATE(t);
  if (state < S_FINISHED) return TS_E_OK;
  t->pos += len;
  return state == S_ERROR ? t->err : TS_E_JSON_FINISHED;
}

static int str_more(ts_json_tok *t, const char *buf, size_t len, const char *from);

/* 16-byte blocks a string the machine opens is walked in before the 32-byte scan may
 * take the rest: most keys and values end in their first 48 bytes, and a scan_wide
 * call costs more than the blocks it would have saved there. A chunk that continues a
 * string (str_more) goes wide after one. */
#define STR_OPEN_BLOCKS 3

/* The state machine. `sp`, if not NULL, says that the chunk begins inside a plain
 * string body whose scan already stopped at sp. Grammar points are labels; the common
 * transitions jump straight to the next one, and each label saves its own state when
 * the chunk runs out. Locals mirror the hot fields of *t and are stored back at `out`
 * (the callback sees t->pos and t->depth as they were when the machine was entered: at
 * the chunk's start, or where the grammar short path handed the rest of a chunk over). */
__attribute__((noinline)) static int feed_machine(ts_json_tok *t, const char *buf, size_t len,
                                                  const char *sp) {
  /* first, so that the early return needs none of the registers the machine saves. The
   * machine never sees an empty chunk: feed sends one to gram_short or feed_idle, and
   * every sub-chunk it is handed holds a byte at least. */
  if (__builtin_expect(t->mode >= MODE(S_FINISHED), 0)) return feed_idle(t, len);
  uint32_t mode; /* t->mode as the chunk leaves it (written at out) */
  const char *p = buf;
  const char *const end = buf + len;
  const uint64_t base = t->pos;
  const uint64_t bias = base - (uint64_t)(uintptr_t)buf;
  uint32_t depth = t->depth;
  unsigned obj = t->in_obj;     /* the innermost container is an object */
  /* The open token's first-ness (TS_JSON_FIRST until it reports a fragment) and kind
   * (TS_JSON_KEY or TS_JSON_STRING): read from t->tok only where a chunk resumes inside
   * a token and written back only where one ends inside a token, so a chunk that
   * starts and ends between tokens neither loads nor stores them. */
  unsigned first = 0, skind = 0;
  const char *frag = buf; /* start of the key/string/number text in this chunk */
  int err = 0;
  uint8_t c;
  ts_json_token tok;

#define OFF(ptr) ((uint64_t)(uintptr_t)(ptr) + bias)
#define FAIL(code) \
  do {             \
    err = (code);  \
    goto fail;     \
  } while (0)
#define EMIT(k, txt, n, off, d, fl)               \
  do {                                            \
    tok.text = (txt);                             \
    tok.len = (n);                                \
    tok.offset = (off);                           \
    tok.depth = (d);                              \
    tok.kind = (uint8_t)(k);                      \
    tok.flags = (uint8_t)(fl);                    \
    if (t->cb(t->user, &tok)) FAIL(TS_E_ABORTED); \
  } while (0)
/* Report [frag, q) as a fragment of the current key/string/number. */
#define EMIT_FRAG(k, q, last)                                                             \
  do {                                                                                    \
    EMIT((k), frag, (size_t)((q)-frag), OFF(frag), depth, first | ((last) ? TS_JSON_LAST : 0u)); \
    first = 0;                                                                            \
  } while (0)
/* The chunk ends inside a string or a number: its token, for the next call. */
#define TOK_OUT()                     \
  do {                                \
    t->tok.flags = (uint8_t)first;    \
    t->tok.kind = (uint8_t)skind;     \
    t->tok.depth = depth;             \
  } while (0)
/* Whitespace: anything above ' ' is not, so one compare settles the common case. */
#define SKIP_WS(label)                  \
  if (c <= ' ' && is_ws(c)) {           \
    p++;                                \
    goto label;                         \
  }

  if (sp) {
    first = t->tok.flags;
    skind = t->tok.kind;
    p = sp; /* a string's closing quote */
    goto str_quote;
  }
  /* resuming inside a string or a number: its token's first-ness and kind too */
#define RESUME_TOK(label) \
  first = t->tok.flags;   \
  skind = t->tok.kind;    \
  goto label
  switch (STATE(t)) {
    case S_VALUE: goto g_value;
    case S_VALUE_OR_AEND: goto g_value_or_aend;
    case S_KEY_OR_OEND: goto g_key_or_oend;
    case S_KEY: goto g_key;
    case S_COLON: goto g_colon;
    case S_AFTER: goto g_after;
    case S_DONE: goto g_done;
    /* feed sends a chunk that continues a string to the string functions below, which
     * enter the machine only at the closing quote (sp); this is for completeness */
    case S_STR: return str_more(t, buf, len, buf);
    case S_NUM_MINUS: RESUME_TOK(n_minus);
    case S_NUM_ZERO: RESUME_TOK(n_zero);
    case S_NUM_INT: RESUME_TOK(n_int);
    case S_NUM_DOT: RESUME_TOK(n_dot);
    case S_NUM_FRAC: RESUME_TOK(n_frac);
    case S_NUM_E: RESUME_TOK(n_e);
    case S_NUM_ESIGN: RESUME_TOK(n_esign);
    case S_NUM_EXP: RESUME_TOK(n_exp);
    default: goto lit_resume;
  }
#undef RESUME_TOK

  /* ---- grammar ---- */
g_value: /* a value must come */
  if (p == end) {
    mode = MODE(S_VALUE);
    goto out;
  }
  c = (uint8_t)*p;
value_c:
  if (c == '"') goto sval_open;
  if ((uint8_t)(c - '0') <= 9 || c == '-') goto num_open;
  if (c == '{' || c == '[') goto open;
  if (c == 't' || c == 'f' || c == 'n') goto lit_open;
  SKIP_WS(g_value);
  FAIL(TS_E_JSON_SYNTAX);

g_value_or_aend: /* after '[' */
  if (p == end) {
    mode = MODE(S_VALUE_OR_AEND);
    goto out;
  }
  c = (uint8_t)*p;
  if (c == ']') goto close_array;
  SKIP_WS(g_value_or_aend);
  goto value_c;

g_key_or_oend: /* after '{' */
  if (p == end) {
    mode = MODE(S_KEY_OR_OEND);
    goto out;
  }
  c = (uint8_t)*p;
  if (c == '"') goto key_open;
  if (c == '}') goto close_object;
  SKIP_WS(g_key_or_oend);
  FAIL(TS_E_JSON_SYNTAX);

g_key: /* after ',' in an object */
  if (p == end) {
    mode = MODE(S_KEY);
    goto out;
  }
  c = (uint8_t)*p;
  if (c == '"') goto key_open;
  SKIP_WS(g_key);
  FAIL(TS_E_JSON_SYNTAX);

g_colon: /* after a key */
  if (p == end) {
    mode = MODE(S_COLON);
    goto out;
  }
  c = (uint8_t)*p;
  if (c == ':') {
    p++;
    goto g_value;
  }
  SKIP_WS(g_colon);
  FAIL(TS_E_JSON_SYNTAX);

after_value: /* a value just completed; p is at the byte after it */
  if (!depth) goto g_done;
g_after: /* after a value inside a container */
  if (p == end) {
    mode = MODE(S_AFTER);
    goto out;
  }
  c = (uint8_t)*p;
  if (c == ',') {
    p++;
    if (obj) goto g_key;
    goto g_value;
  }
  if (c == '}' && obj) goto close_object;
  if (c == ']' && !obj) goto close_array;
  SKIP_WS(g_after);
  FAIL(TS_E_JSON_SYNTAX);

g_done: /* after the top-level value */
  if (p == end) {
    mode = MODE(S_DONE);
    goto out;
  }
  c = (uint8_t)*p;
  SKIP_WS(g_done);
  FAIL(TS_E_JSON_TRAILING);

open:
  if (depth >= t->max_depth) FAIL(TS_E_JSON_DEPTH);
  obj = c == '{';
  EMIT(obj ? TS_JSON_OBJECT_BEGIN : TS_JSON_ARRAY_BEGIN, p, 1, OFF(p), depth,
       TS_JSON_FIRST | TS_JSON_LAST);
  if (obj)
    t->stack[depth >> 3] |= (uint8_t)(1u << (depth & 7));
  else
    t->stack[depth >> 3] &= (uint8_t) ~(1u << (depth & 7));
  depth++;
  p++;
  if (obj) goto g_key_or_oend;
  goto g_value_or_aend;

close_object:
  depth--;
  EMIT(TS_JSON_OBJECT_END, p, 1, OFF(p), depth, TS_JSON_FIRST | TS_JSON_LAST);
  goto closed;
close_array:
  depth--;
  EMIT(TS_JSON_ARRAY_END, p, 1, OFF(p), depth, TS_JSON_FIRST | TS_JSON_LAST);
closed:
  p++;
  if (!depth) goto g_done;
  obj = (t->stack[(depth - 1) >> 3] >> ((depth - 1) & 7)) & 1;
  goto g_after;

  /* ---- strings ---- */
  /* A key or string whose first stop byte among the 16 after its opening quote is its
   * closing quote (or that has none and the 17th is), with at least 19 bytes of the
   * chunk from the opening quote (so the byte after the closing quote is in the chunk):
   * its one fragment at once, then, for a key, the colon right after it. Most keys and
   * short values are this; the rest (and a chunk that ends sooner) take str_open. The
   * same token, flags and offsets as str_open's; a callback that stops it records the
   * closing quote's offset, as str_quote does. (W3 whole -12.5% instructions.) */
key_open: /* c is a key's opening quote, at p */
#if defined(__SSE2__)
  if (end - p > 18) {
    const char *const s = p + 1;
    const unsigned i = short_stop(s);
    if (s[i] == '"') {
      p = s + i;
      EMIT(TS_JSON_KEY, s, i, OFF(s), depth, TS_JSON_FIRST | TS_JSON_LAST);
      p++;
      if (*p == ':') {
        p++;
        goto g_value;
      }
      goto g_colon;
    }
  }
#endif
  skind = TS_JSON_KEY;
  goto str_open;
sval_open: /* c is a string value's opening quote, at p */
#if defined(__SSE2__)
  if (end - p > 18) {
    const char *const s = p + 1;
    const unsigned i = short_stop(s);
    if (s[i] == '"') {
      p = s + i;
      EMIT(TS_JSON_STRING, s, i, OFF(s), depth, TS_JSON_FIRST | TS_JSON_LAST);
      p++;
      goto after_value;
    }
  }
#endif
  skind = TS_JSON_STRING;
str_open:
  p++;
  frag = p;
  first = TS_JSON_FIRST;
  /* between characters (t->mode is written when a chunk ends inside the string); a
   * chunk that continues a string never starts here (see the switch) */
  p = str_body(t, 32 * D_PL, p, end, buf, STR_OPEN_BLOCKS, &err);
  if (err) goto fail;
  if (p == end) goto str_chunk_end;
str_quote:
  EMIT_FRAG(skind, p, 1);
  p++;
  if (skind == TS_JSON_KEY) goto g_colon;
  goto after_value;

str_chunk_end:
  /* str_body has written t->mode (S_STR and the DFA's state); a string that has
   * reported nothing yet says so there too (first is TS_JSON_FIRST or 0) */
  if (p != frag)
    EMIT_FRAG(skind, p, 0);
  else
    t->mode |= first * MODE_FIRST;
  TOK_OUT();
  goto out_kept;

  /* ---- numbers ---- */
num_open:
  frag = p;
  first = TS_JSON_FIRST;
  p++;
  if (c == '-') goto n_minus;
  if (c == '0') goto n_zero;
  goto n_int;
n_minus:
  if (p == end) {
    mode = MODE(S_NUM_MINUS);
    goto num_chunk_end;
  }
  if (*p == '0') {
    p++;
    goto n_zero;
  }
  if (*p >= '1' && *p <= '9') {
    p++;
    goto n_int;
  }
  FAIL(TS_E_JSON_NUMBER);
n_zero:
  if (p == end) {
    mode = MODE(S_NUM_ZERO);
    goto num_chunk_end;
  }
  if ((uint8_t)(*p - '0') <= 9) FAIL(TS_E_JSON_NUMBER);
  goto n_after_int;
n_int:
  while (p < end && (uint8_t)(*p - '0') <= 9) p++;
  if (p == end) {
    mode = MODE(S_NUM_INT);
    goto num_chunk_end;
  }
n_after_int:
  if (*p == '.') {
    p++;
    goto n_dot;
  }
  if ((*p | 0x20) == 'e') {
    p++;
    goto n_e;
  }
  goto num_end;
n_dot:
  if (p == end) {
    mode = MODE(S_NUM_DOT);
    goto num_chunk_end;
  }
  if ((uint8_t)(*p - '0') > 9) FAIL(TS_E_JSON_NUMBER);
  p++;
n_frac:
  while (p < end && (uint8_t)(*p - '0') <= 9) p++;
  if (p == end) {
    mode = MODE(S_NUM_FRAC);
    goto num_chunk_end;
  }
  if ((*p | 0x20) == 'e') {
    p++;
    goto n_e;
  }
  goto num_end;
n_e:
  if (p == end) {
    mode = MODE(S_NUM_E);
    goto num_chunk_end;
  }
  if (*p == '+' || *p == '-') {
    p++;
    goto n_esign;
  }
  if ((uint8_t)(*p - '0') > 9) FAIL(TS_E_JSON_NUMBER);
  p++;
  goto n_exp;
n_esign:
  if (p == end) {
    mode = MODE(S_NUM_ESIGN);
    goto num_chunk_end;
  }
  if ((uint8_t)(*p - '0') > 9) FAIL(TS_E_JSON_NUMBER);
  p++;
n_exp:
  while (p < end && (uint8_t)(*p - '0') <= 9) p++;
  if (p == end) {
    mode = MODE(S_NUM_EXP);
    goto num_chunk_end;
  }
num_end:
  /* *p ends the number; the grammar looks at it next. */
  EMIT_FRAG(TS_JSON_NUMBER, p, 1);
  goto after_value;
num_chunk_end:
  if (p != frag) EMIT_FRAG(TS_JSON_NUMBER, p, 0);
  skind = TS_JSON_NUMBER;
  goto out_tok;

  /* ---- literals ---- */
lit_open:
  /* A literal the chunk holds whole: one 32-bit compare ("true", "null"; "alse" after
   * the 'f'). Anything else (a wrong letter, a chunk that ends inside it) takes the
   * letter-by-letter loop below, which finds a wrong letter at its byte. */
  if (c != 'f') {
    if (end - p >= 4) {
      const unsigned nul = c == 'n';
      if (load32(p) == (nul ? load32("null") : load32("true"))) {
        p += 4; /* a callback that stops it records the literal's end */
        EMIT(nul ? TS_JSON_NULL : TS_JSON_TRUE, lit_text[2 * nul], 4, OFF(p - 4), depth,
             TS_JSON_FIRST | TS_JSON_LAST);
        goto after_value;
      }
    }
  } else if (end - p >= 5 && load32(p + 1) == load32("alse")) {
    p += 5;
    EMIT(TS_JSON_FALSE, lit_text[1], 5, OFF(p - 5), depth, TS_JSON_FIRST | TS_JSON_LAST);
    goto after_value;
  }
  t->lit = c == 't' ? 0 : c == 'f' ? 1 : 2;
  t->lit_k = 0;
  t->tok_start = OFF(p);
lit_resume: {
  const unsigned lit = t->lit;
  const char *want = lit_text[lit];
  const unsigned n = lit_len[lit];
  unsigned k = t->lit_k;
  while (p < end && k < n) {
    if (*p != want[k]) FAIL(TS_E_JSON_LITERAL);
    k++;
    p++;
  }
  if (k < n) {
    t->lit_k = (uint8_t)k;
    mode = MODE(S_LIT);
    goto out;
  }
  EMIT(lit_kind[lit], want, n, t->tok_start, depth, TS_JSON_FIRST | TS_JSON_LAST);
  goto after_value;
}

out_tok:
  TOK_OUT();
out:
  t->mode = mode;
out_kept:
  t->depth = depth;
  t->in_obj = (uint8_t)obj;
  t->pos = base + len;
  return TS_E_OK;

fail:
  t->mode = MODE(S_ERROR);
  t->depth = depth;
  t->err = err;
  t->err_offset = OFF(p);
  t->pos = base + len;
  return err;
#undef OFF
#undef TOK_OUT
#undef FAIL
#undef EMIT
#undef EMIT_FRAG
#undef SKIP_WS
}

/* ---- the string fast path ------------------------------------------------------------
 * A long string arriving in small deltas is the common case (a file's content inside a
 * write_file call), and there the cost of a call matters more than the cost of a byte.
 * A chunk that continues a string goes through the three functions below and never
 * through the machine: the token in progress lives in t->tok (kind, depth, first-ness),
 * so reporting the chunk writes only its view. Escapes and UTF-8 characters held whole
 * in the chunk are checked here too, and an escape or a character cut by the chunk's
 * end or a surrogate pair by the DFA. The closing quote ends the string where it is
 * found (str_close, then the grammar short path below; after the 32-byte scan, the
 * machine, at the quote), and a byte in error is recorded where it is found. */

/* The callback stopped the tokenizer during a fast-path fragment. Cold. */
__attribute__((noinline, cold)) static int fast_aborted(ts_json_tok *t) {
  const size_t len = t->tok.len;
  t->mode = MODE(S_ERROR);
  t->err = TS_E_ABORTED;
  t->err_offset = t->pos + len;
  t->pos += len;
  return TS_E_ABORTED;
}

/* Reports the whole chunk [buf, buf + len) as the next fragment of the open string. */
static inline int str_fragment(ts_json_tok *t, const char *buf, size_t len) {
  t->tok.text = buf;
  t->tok.len = len;
  t->tok.offset = t->pos;
  if (__builtin_expect(t->cb(t->user, &t->tok) != 0, 0)) return fast_aborted(t);
  t->tok.flags = 0;
  t->pos += t->tok.len; /* the callback cannot change it; no need to keep len alive */
  return TS_E_OK;
}

/* The bytes of [buf, buf + len), 4 <= len <= 8, that a string body need not stop at,
 * as lanes: the chunk is covered by two overlapping 4-byte words, tested as one, so bit
 * k (k < 4) is buf[k] and bit 4 + k is buf[len - 4 + k]. Bits 0-7 all set: nothing to
 * stop at; otherwise only the lowest clear bit is sure to be exact (short_at finds its
 * byte). Bits from 8 may hold anything. */
static inline unsigned short_plain(const char *buf, size_t len) {
  uint32_t a, b;
  memcpy(&a, buf, 4);
  memcpy(&b, buf + len - 4, 4);
#if defined(__SSE2__)
  const __m128i v = _mm_unpacklo_epi32(_mm_cvtsi32_si128((int)a), _mm_cvtsi32_si128((int)b));
  /* v ^ 2 maps '"' to 0x20 and the control bytes onto themselves, so one signed compare
   * (v ^ 2 > 0x20) clears both and the bytes from 0x80, which are negative; the
   * backslashes are cleared from that. */
  const __m128i ok = _mm_andnot_si128(
      _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')),
      _mm_cmpgt_epi8(_mm_xor_si128(v, _mm_set1_epi8(2)), _mm_set1_epi8(0x20)));
  return (unsigned)_mm_movemask_epi8(ok);
#elif defined(TS_SWAR)
  /* each byte's flag (its top bit) to one bit (the multiply's terms never overlap) */
  return ~(unsigned)(((stop_bits64(a | (uint64_t)b << 32) >> 7) * 0x0102040810204080ull) >> 56);
#else
  unsigned m = 0;
  for (unsigned k = 0; k < 4; k++)
    m |= (unsigned)str_stop[(uint8_t)buf[k]] << k |
         (unsigned)str_stop[(uint8_t)buf[len - 4 + k]] << (4 + k);
  (void)a;
  (void)b;
  return ~m;
#endif
}

/* The byte of short_plain's lowest clear bit, (uint8_t)ok != 0xFF (lanes 4-7 are the
 * last four bytes; the bytes the first word also covered hold no stop, as their lanes
 * 0-3 are set). */
static inline const char *short_at(const char *buf, size_t len, unsigned ok) {
  const unsigned i = (unsigned)__builtin_ctz(~ok);
  return i < 4 ? buf + i : buf + len - 8 + i;
}

static int str_close(ts_json_tok *t, const char *buf, size_t len, const char *q);

/* The chunk [buf, buf + len) continues a string. If it holds no closing quote and no
 * error, it is one fragment; otherwise the string ends at the quote (str_close: its
 * last fragment, then the grammar short path), or the error is recorded here. */
__attribute__((noinline)) static int str_more(ts_json_tok *t, const char *buf, size_t len,
                                              const char *from) {
  const char *const end = buf + len;
  int err = 0;
  const char *p = str_body(t, MODE_DFA(t->mode), from, end, buf, 1, &err);
  if (__builtin_expect(err != 0, 0)) {
    t->mode = MODE(S_ERROR);
    t->err = err;
    t->err_offset = t->pos + (uint64_t)(p - buf);
    t->pos += len;
    return err;
  }
  if (p == end) return str_fragment(t, buf, len);
  /* as after the 32-byte scan (str_wide), the rest of a long chunk is the machine's,
   * whose grammar costs less a byte (through str_close: W3 64 +3.5% with --scan16) */
  if (len < 32) return str_close(t, buf, len, p);
  return feed_machine(t, buf, len, p);
}

#if defined(TS_WIDE_SCAN)
/* A chunk of 32 bytes or more that continues a string between characters. */
__attribute__((noinline)) static int str_wide(ts_json_tok *t, const char *buf, size_t len) {
  const char *const p = scan_wide(buf, buf + len);
  if (p == buf + len) {
    t->mode = MODE(S_STR); /* between characters, and this is not the first fragment */
    return str_fragment(t, buf, len);
  }
  if (*p == '"') return feed_machine(t, buf, len, p); /* the string ends: grammar */
  return str_more(t, buf, len, p);
}
#endif

/* Chunks up to this long that continue a string run through the DFA whole, without a
 * test per byte (the exits absorb); longer ones are scanned 16 bytes at a time. */
#define SHORT_CHUNK 8

static int str_close(ts_json_tok *t, const char *buf, size_t len, const char *q);

/* Reports the whole chunk [buf, buf + len) as the next fragment of a string that has
 * reported one already (t->mode is 0 or a DFA state: t->tok.flags is 0). */
static inline int str_next(ts_json_tok *t, const char *buf, size_t len) {
  t->tok.text = buf;
  t->tok.len = len;
  t->tok.offset = t->pos;
  const int r = t->cb(t->user, &t->tok);
  if (__builtin_expect(r != 0, 0)) return fast_aborted(t);
  t->pos += t->tok.len; /* the callback cannot change it; no need to keep len alive */
  return r;
}

/* Runs the DFA over [p, end), 1 to 8 (SHORT_CHUNK) bytes, from state s (scaled; size_t, so
 * that no step needs a zero extension): two table loads a byte, no test per byte (the
 * exits absorb) and no loop (one jump on the count, then straight-line steps). If the
 * bytes hold no error and no closing quote, returns the DFA's last state, below
 * 32 * D_QT; otherwise an exit state. */
static inline __attribute__((always_inline)) size_t str_dfa_chunk(const char *p,
                                                                  const char *end, size_t s) {
#define STEP(k) s = str_dfa[s + str_class[(uint8_t)end[-(k)]]]
  switch ((end - p) & 7) { /* 1 ..= 8 bytes: 8 is case 0, and no case is missing */
    case 0: STEP(8); /* fall through */
    case 7: STEP(7); /* fall through */
    case 6: STEP(6); /* fall through */
    case 5: STEP(5); /* fall through */
    case 4: STEP(4); /* fall through */
    case 3: STEP(3); /* fall through */
    case 2: STEP(2); /* fall through */
    case 1: STEP(1);
  }
#undef STEP
  return s;
}

/* ---- a string's end in a short chunk, reported last -----------------------------------
 * str_close calls back and then goes on with the chunk (gram_run), so it keeps the
 * chunk's pointers across the call and saves six registers on entry and restores them
 * on exit (about 20 instructions of a 4-byte feed's 114), whatever follows the quote.
 * But in 4 to 8-byte deltas (str_short) what follows a closing quote is mostly nothing
 * but the key's colon or the value's comma, then perhaps the next key's or value's
 * opening quote and first bytes, or an integer's first digits. close_short tells those
 * from the rest by the bytes after the quote before it reports anything, stores the
 * state the chunk leaves (t->mode, t->pos), and then reports the string's last
 * fragment with nothing but t live across the callback (str_short's one register);
 * the new token's first fragment, where there is one, is close_next's, which finds its
 * bytes again from t alone. Anything else goes to str_close at the quote, as before:
 * the bytes after the quote are looked at once more there, at most 7, only by tests
 * that found nothing to report. */

/* The callback stopped the tokenizer at the chunk's last report, made after t->pos was
 * advanced past the chunk; `at` is where the machine would have recorded it. Cold. */
__attribute__((noinline, cold)) static int last_aborted(ts_json_tok *t, uint64_t at) {
  t->mode = MODE(S_ERROR);
  t->err = TS_E_ABORTED;
  t->err_offset = at;
  return TS_E_ABORTED;
}

/* After close_short's report of a string's last fragment (t->tok: the callback cannot
 * change it, nor t->mode or t->pos): the first fragment, to the chunk's end, of the
 * token that opens two bytes after the closing quote (after the colon or comma), t->mode
 * (S_STR or S_NUM_INT) the state the chunk leaves it in: a key or string (its text from
 * after its opening quote) or an integer. The chunk's end is as far from the string's
 * fragment's text as t->pos is from its offset. Apart from close_short so that
 * str_short keeps one register. */
__attribute__((noinline)) static int close_next(ts_json_tok *t) {
  const uint32_t mode = t->mode;
  const char *const s = t->tok.text + t->tok.len + 2;
  const char *const e = t->tok.text + (t->pos - t->tok.offset);
  t->tok.flags = TS_JSON_FIRST; /* at the closed string's depth: t->tok.depth stays */
  if (mode == MODE(S_NUM_INT)) {
    t->tok.kind = TS_JSON_NUMBER;
    t->tok.text = s;
  } else {
    /* a key's value, or a member's key */
    t->tok.kind = t->tok.kind == TS_JSON_STRING && t->in_obj ? TS_JSON_KEY : TS_JSON_STRING;
    t->tok.text = s + 1; /* after its opening quote */
  }
  t->tok.len = (size_t)(e - t->tok.text);
  t->tok.offset = t->pos - t->tok.len;
  if (__builtin_expect(t->cb(t->user, &t->tok) != 0, 0)) return last_aborted(t, t->pos);
  t->tok.flags = 0;
  return TS_E_OK;
}

/* The string continued by [buf, q), 4 to 8 bytes in all, ends at the closing quote q.
 * Where the rest is nothing, or a key's colon or a value's comma in a container and
 * then nothing, or a key or string that the chunk ends inside with no stop byte (an
 * opening quote as the last byte: nothing of it yet), or after a colon or an array's
 * comma an integer the chunk ends inside, the state is stored and the string's last
 * fragment reported (see above); otherwise str_close. */
static inline __attribute__((always_inline)) int close_short(ts_json_tok *t, const char *buf,
                                                            size_t len, const char *q) {
  const char *const end = buf + len;
  const char *p = q + 1;
  uint32_t mode;
  if (t->tok.kind == TS_JSON_KEY) {
    mode = MODE(S_COLON);
    if (p != end) {
      if (*p != ':') goto general;
      p++;
      mode = MODE(S_VALUE);
      goto next;
    }
  } else if (t->depth) {
    mode = MODE(S_AFTER);
    if (p != end) {
      if (*p != ',') goto general;
      p++;
      mode = t->in_obj ? MODE(S_KEY) : MODE(S_VALUE);
      goto next;
    }
  } else {
    if (p != end) goto general;
    mode = MODE(S_DONE);
  }
  goto report;
next: /* after the colon or comma (at q + 1), where a key or value comes */
  if (p != end) {
    if (*p == '"') {
      /* a key or string (at q + 2) that the chunk ends inside with no stop byte: nothing
       * of it yet, or its first fragment, the chunk's second report */
      const char *r = p + 1;
      while (r < end && !str_stop[(uint8_t)*r]) r++;
      if (r != end) goto general;
      mode = p + 1 == end ? MODE(S_STR) | MODE_FIRST : MODE(S_STR);
    } else {
      /* an integer (at q + 2) that the chunk ends inside: its first fragment */
      if (mode != MODE(S_VALUE)) goto general;
      const char *n = p + (*p == '-');
      if (n == end || (uint8_t)(*n - '1') > 8) goto general;
      n++;
      while (n < end && (uint8_t)(*n - '0') <= 9) n++;
      if (n != end) goto general;
      mode = MODE(S_NUM_INT);
    }
  }
report:
  t->tok.text = buf;
  t->tok.len = (size_t)(q - buf);
  t->tok.offset = t->pos;
  t->tok.flags |= TS_JSON_LAST;
  t->mode = mode;
  t->pos += len;
  if (__builtin_expect(t->cb(t->user, &t->tok) != 0, 0))
    return last_aborted(t, t->tok.offset + t->tok.len);
  mode = t->mode;
  if (mode == (MODE(S_STR) | MODE_FIRST)) {
    /* the new token (the callback cannot change t->tok): a key's value, or a member's
     * key; at the closed string's depth */
    t->tok.kind = t->tok.kind == TS_JSON_STRING && t->in_obj ? TS_JSON_KEY : TS_JSON_STRING;
    t->tok.flags = TS_JSON_FIRST;
    return TS_E_OK;
  }
  if (mode == MODE(S_STR) || mode == MODE(S_NUM_INT)) return close_next(t);
  return TS_E_OK;
general:
  return str_close(t, buf, len, q);
}

/* 4 to 8 bytes continuing a string between characters: one word test for stop bytes
 * rather than a DFA step per byte. `first`: the string has reported nothing yet
 * (t->mode is MODE_FIRST; otherwise it is 0). */
static inline __attribute__((always_inline)) int str_short_at(ts_json_tok *t, const char *buf,
                                                             size_t len, int first) {
  const unsigned ok = short_plain(buf, len);
  if ((uint8_t)ok == 0xFF) {
    if (!first) return str_next(t, buf, len);
    t->mode = MODE(S_STR);
    return str_fragment(t, buf, len);
  }
  const char *const q = short_at(buf, len, ok);
  /* the first stop is the closing quote: the rest of the chunk is grammar */
  if (*q == '"') return close_short(t, buf, len, q);
  /* the bytes before q leave the DFA at PL */
  const size_t s = str_dfa_chunk(q, buf + len, 32 * D_PL);
  if (__builtin_expect(s >= 32 * D_QT, 0)) return str_more(t, buf, len, buf);
  t->mode = MODE(S_STR) | (uint32_t)s;
  return first ? str_fragment(t, buf, len) : str_next(t, buf, len);
}
__attribute__((noinline)) static int str_short(ts_json_tok *t, const char *buf, size_t len) {
  return str_short_at(t, buf, len, 0);
}
__attribute__((noinline)) static int str_short_first(ts_json_tok *t, const char *buf,
                                                     size_t len) {
  return str_short_at(t, buf, len, 1);
}

/* ---- the grammar short path ----------------------------------------------------------
 * W2's and W3's 4-byte deltas are mostly structure: the end of a key and its colon, the
 * end of a value and its comma or close, the next opening quote and the first bytes of a
 * key. The machine takes all of that, but its entry and exit (six registers saved, the
 * state loaded and dispatched, and stored back) cost about as much as the bytes. So where
 * str_short or str_more finds a string's closing quote, str_close reports the string's
 * end and the small loop below takes what follows; and a chunk of up to GRAM_CHUNK bytes
 * that starts outside a string (gram_short) starts there, in the state the last chunk
 * left. It takes ':' after a key, ',' after a value, a container's open (up to the depth
 * limit) and close, an opening quote whose string the chunk ends inside without a stop
 * byte (the string's first fragment, or nothing yet) or holds whole with none (its one
 * fragment), a literal (whole, cut by the chunk's end, or going on from the last chunk)
 * and a number in any of the machine's number states (a fragment at the chunk's end, or
 * ended by ',' '}' or ']'). It enters the machine at the first byte it does not take
 * (whitespace, a stop byte in a new string, a number ended by anything else, anything in
 * error), with t->mode set to the state for that byte, as a chunk of its own: t->pos is
 * advanced to that byte first, so every offset the machine reports or records is the
 * same. (A start-at-p entry to the machine itself moved its register allocation: every
 * cell got slower.) A token the chunk began inside (a number, a literal) goes to the
 * machine from the chunk's start, with nothing of the chunk reported yet. It reports
 * exactly what the machine would: the same fragments, flags, offsets, depths and error
 * offsets. */

/* The callback stopped the tokenizer during a fragment reported by the grammar short
 * path; `at` is where the machine would have recorded it (the fragment's end). Cold. */
__attribute__((noinline, cold)) static int gram_aborted(ts_json_tok *t, uint64_t at,
                                                     uint64_t pos) {
  t->mode = MODE(S_ERROR);
  t->err = TS_E_ABORTED;
  t->err_offset = at;
  t->pos = pos; /* the chunk's end */
  return TS_E_ABORTED;
}

/* Takes [p, buf + len) from grammar state st as long as it is structure the loop knows
 * (see above), then hands the rest to the machine. Each state is a label, as in the
 * machine, so no byte tests the state. From str_close, st is S_COLON (after a key),
 * S_AFTER (after a value in a container) or S_DONE (after the top-level value); from
 * gram_short (a short chunk that starts outside a string), any state but S_STR: the
 * grammar states, an integer or fraction (the number's fragment goes on), a literal
 * (its letters go on); the rest go straight to the machine. */
static inline __attribute__((always_inline)) int gram_run(ts_json_tok *t, const char *buf,
                                                         size_t len, const char *p,
                                                         unsigned st) {
  const char *const end = buf + len;
  /* offsets as bias + pointer, so that neither buf nor len need be kept across a
   * callback (the callback cannot change t->pos) */
  const uint64_t bias = t->pos - (uint64_t)(uintptr_t)buf;
  const char *n;
  uint8_t kind;
  unsigned nst;
  switch (st) {
    case S_COLON: goto colon;
    case S_AFTER: goto after;
    case S_VALUE: goto value;
    case S_KEY: goto key;
    case S_KEY_OR_OEND: goto key_or_oend;
    case S_VALUE_OR_AEND: goto value_or_aend;
    case S_LIT: goto lit_more;
    /* a number goes on from the chunk's start (an empty chunk reports nothing) */
#define NUM_MORE(label) \
  if (p == end) goto done; \
  n = p;                   \
  goto label
    case S_NUM_MINUS: NUM_MORE(num_minus);
    case S_NUM_ZERO: NUM_MORE(num_zero);
    case S_NUM_INT: NUM_MORE(num_int);
    case S_NUM_DOT: NUM_MORE(num_dot);
    case S_NUM_FRAC: NUM_MORE(num_frac);
    case S_NUM_E: NUM_MORE(num_e);
    case S_NUM_ESIGN: NUM_MORE(num_esign);
    case S_NUM_EXP: NUM_MORE(num_exp);
#undef NUM_MORE
    default: goto machine; /* S_DONE (whitespace or an error), S_ERROR, S_FINISHED */
  }
colon:
  if (p == end) goto done;
  if (*p != ':') goto machine;
  p++;
  st = S_VALUE;
  goto value;
after_value: /* a value just ended, at p */
  if (!t->depth) {
    st = S_DONE;
    if (p == end) goto done;
    goto machine;
  }
  st = S_AFTER;
after:
  if (p == end) goto done;
  if (*p != ',') {
    if (*p != (t->in_obj ? '}' : ']')) goto machine;
    goto close;
  }
  p++;
  if (!t->in_obj) {
    st = S_VALUE;
    goto value;
  }
  st = S_KEY;
key:
  if (p == end) goto done;
  if (*p != '"') goto machine;
  kind = TS_JSON_KEY;
  goto open;
key_or_oend: /* after '{' */
  if (p == end) goto done;
  if (*p == '"') {
    kind = TS_JSON_KEY;
    goto open;
  }
  if (*p != '}') goto machine;
  goto close;
value_or_aend: /* after '[' */
  if (p == end) goto done;
  if (*p == ']') goto close;
  goto value_c;
close: {
  /* the innermost container's close, at p (the machine's close_object / close_array) */
  const uint32_t depth = t->depth - 1;
  t->tok.text = p;
  t->tok.len = 1;
  t->tok.offset = bias + (uint64_t)(uintptr_t)p;
  t->tok.depth = depth;
  t->tok.kind = t->in_obj ? TS_JSON_OBJECT_END : TS_JSON_ARRAY_END;
  t->tok.flags = TS_JSON_FIRST | TS_JSON_LAST;
  if (__builtin_expect(t->cb(t->user, &t->tok) != 0, 0)) {
    t->depth = depth;
    return gram_aborted(t, bias + (uint64_t)(uintptr_t)p, bias + (uint64_t)(uintptr_t)end);
  }
  t->depth = depth;
  p++;
  if (!depth) {
    st = S_DONE;
    if (p == end) goto done;
    goto machine;
  }
  t->in_obj = (t->stack[(depth - 1) >> 3] >> ((depth - 1) & 7)) & 1;
  st = S_AFTER;
  goto after;
}
value:
  if (p == end) goto done;
value_c:
  if (*p == '"') {
    kind = TS_JSON_STRING;
    goto open;
  }
  if (*p == '{' || *p == '[') {
    /* a container opens (the machine's open): its BEGIN, then its first key or value */
    const uint32_t depth = t->depth;
    if (depth >= t->max_depth) goto machine; /* the machine's error */
    const unsigned obj = *p == '{';
    t->tok.text = p;
    t->tok.len = 1;
    t->tok.offset = bias + (uint64_t)(uintptr_t)p;
    t->tok.depth = depth;
    t->tok.kind = obj ? TS_JSON_OBJECT_BEGIN : TS_JSON_ARRAY_BEGIN;
    t->tok.flags = TS_JSON_FIRST | TS_JSON_LAST;
    if (__builtin_expect(t->cb(t->user, &t->tok) != 0, 0))
      return gram_aborted(t, bias + (uint64_t)(uintptr_t)p, bias + (uint64_t)(uintptr_t)end);
    if (obj)
      t->stack[depth >> 3] |= (uint8_t)(1u << (depth & 7));
    else
      t->stack[depth >> 3] &= (uint8_t) ~(1u << (depth & 7));
    t->depth = depth + 1;
    t->in_obj = (uint8_t)obj;
    p++;
    if (obj) {
      st = S_KEY_OR_OEND;
      goto key_or_oend;
    }
    st = S_VALUE_OR_AEND;
    goto value_or_aend;
  }
  if (*p == 't' || *p == 'f' || *p == 'n') {
    /* a literal: whole (reported) or cut by the chunk's end (the machine's S_LIT goes on);
     * a wrong letter is the machine's, from the literal's first letter */
    const unsigned lit = *p == 't' ? 0 : *p == 'f' ? 1 : 2;
    const char *const want = lit_text[lit];
    const unsigned ln = lit_len[lit];
    const char *q = p;
    unsigned k = 0;
    while (q < end && k < ln && *q == want[k]) {
      q++;
      k++;
    }
    const uint64_t start = bias + (uint64_t)(uintptr_t)p;
    if (k < ln) {
      if (q != end) goto machine;
      t->lit = (uint8_t)lit;
      t->lit_k = (uint8_t)k;
      t->tok_start = start;
      t->mode = MODE(S_LIT);
      t->pos = bias + (uint64_t)(uintptr_t)end;
      return TS_E_OK;
    }
    t->tok.text = want;
    t->tok.len = ln;
    t->tok.offset = start;
    t->tok.depth = t->depth;
    t->tok.kind = lit_kind[lit];
    t->tok.flags = TS_JSON_FIRST | TS_JSON_LAST;
    if (__builtin_expect(t->cb(t->user, &t->tok) != 0, 0))
      return gram_aborted(t, bias + (uint64_t)(uintptr_t)q, bias + (uint64_t)(uintptr_t)end);
    p = q;
    goto after_value;
  }
  /* a number, from its first byte: see num_minus */
  t->tok.flags = TS_JSON_FIRST;
  n = p + 1;
  if (*p == '-') goto num_minus;
  if (*p == '0') goto num_zero;
  if ((uint8_t)(*p - '1') <= 8) goto num_int;
  goto machine; /* not a value: the machine's error */
  /* The number lexer, the machine's states one label each: [p, n) is the number's text
   * in this chunk (from its first byte, or from the chunk's start where the chunk
   * continues one, st being the state it continues in), t->tok.flags its first-ness.
   * The chunk ends inside it (its next fragment: the machine's state for the next
   * chunk), or a ',' '}' or ']' ends it (its last fragment, then the grammar); anything
   * else (whitespace, an error) is the machine's, from p in state st, with nothing of
   * this chunk reported. */
num_minus:
  nst = S_NUM_MINUS;
  if (n == end) goto num_cut;
  if (*n == '0') {
    n++;
    goto num_zero;
  }
  if ((uint8_t)(*n - '1') > 8) goto machine;
  n++;
num_int:
  while (n < end && (uint8_t)(*n - '0') <= 9) n++;
  nst = S_NUM_INT;
  if (n == end) goto num_cut;
num_after_int:
  if (*n == '.') {
    n++;
    goto num_dot;
  }
  if ((*n | 0x20) == 'e') {
    n++;
    goto num_e;
  }
  goto num_term;
num_zero:
  nst = S_NUM_ZERO;
  if (n == end) goto num_cut;
  goto num_after_int; /* a digit after the 0 is not a number's end: the machine's error */
num_dot:
  nst = S_NUM_DOT;
  if (n == end) goto num_cut;
  if ((uint8_t)(*n - '0') > 9) goto machine;
  n++;
num_frac:
  while (n < end && (uint8_t)(*n - '0') <= 9) n++;
  nst = S_NUM_FRAC;
  if (n == end) goto num_cut;
  if ((*n | 0x20) == 'e') {
    n++;
    goto num_e;
  }
  goto num_term;
num_e:
  nst = S_NUM_E;
  if (n == end) goto num_cut;
  if (*n == '+' || *n == '-') {
    n++;
    goto num_esign;
  }
  if ((uint8_t)(*n - '0') > 9) goto machine;
  n++;
  goto num_exp;
num_esign:
  nst = S_NUM_ESIGN;
  if (n == end) goto num_cut;
  if ((uint8_t)(*n - '0') > 9) goto machine;
  n++;
num_exp:
  while (n < end && (uint8_t)(*n - '0') <= 9) n++;
  nst = S_NUM_EXP;
  if (n == end) goto num_cut;
num_term:
  if (*n != ',' && *n != '}' && *n != ']') goto machine;
  t->tok.text = p;
  t->tok.len = (size_t)(n - p);
  t->tok.offset = bias + (uint64_t)(uintptr_t)p;
  t->tok.depth = t->depth;
  t->tok.kind = TS_JSON_NUMBER;
  t->tok.flags |= TS_JSON_LAST;
  if (__builtin_expect(t->cb(t->user, &t->tok) != 0, 0))
    return gram_aborted(t, bias + (uint64_t)(uintptr_t)n, bias + (uint64_t)(uintptr_t)end);
  p = n;
  goto after_value;
num_cut: /* the chunk ends inside the number: its next fragment */
  t->tok.text = p;
  t->tok.len = (size_t)(end - p);
  t->tok.offset = bias + (uint64_t)(uintptr_t)p;
  t->tok.depth = t->depth;
  t->tok.kind = TS_JSON_NUMBER;
  if (__builtin_expect(t->cb(t->user, &t->tok) != 0, 0))
    return gram_aborted(t, bias + (uint64_t)(uintptr_t)end, bias + (uint64_t)(uintptr_t)end);
  t->tok.flags = 0;
  t->mode = MODE(nst);
  t->pos = bias + (uint64_t)(uintptr_t)end;
  return TS_E_OK;
lit_more: { /* the chunk continues a literal (p is buf) */
  const unsigned lit = t->lit;
  const char *const want = lit_text[lit];
  const unsigned ln = lit_len[lit];
  unsigned k = t->lit_k;
  const char *q = p;
  while (q < end && k < ln && *q == want[k]) {
    q++;
    k++;
  }
  if (k < ln) {
    if (q != end) goto machine; /* a wrong letter: the machine's, from the chunk's start */
    t->lit_k = (uint8_t)k;
    t->pos = bias + (uint64_t)(uintptr_t)end;
    return TS_E_OK;
  }
  t->tok.text = want;
  t->tok.len = ln;
  t->tok.offset = t->tok_start;
  t->tok.depth = t->depth;
  t->tok.kind = lit_kind[lit];
  t->tok.flags = TS_JSON_FIRST | TS_JSON_LAST;
  if (__builtin_expect(t->cb(t->user, &t->tok) != 0, 0))
    return gram_aborted(t, bias + (uint64_t)(uintptr_t)q, bias + (uint64_t)(uintptr_t)end);
  p = q;
  goto after_value;
}
open: {
  /* a string or key: one the chunk ends inside with no stop byte in it (its DFA is at
   * PL: its first fragment, or nothing yet), or one it holds whole with no stop byte
   * but its closing quote (its one fragment, then the grammar goes on); anything else
   * is the machine's, from the opening quote */
  const char *const s = p + 1;
  const char *r = s;
  while (r < end && !str_stop[(uint8_t)*r]) r++;
  t->tok.kind = kind;
  t->tok.depth = t->depth;
  if (r != end) {
    if (*r != '"') goto machine;
    t->tok.text = s;
    t->tok.len = (size_t)(r - s);
    t->tok.offset = bias + (uint64_t)(uintptr_t)s;
    t->tok.flags = TS_JSON_FIRST | TS_JSON_LAST;
    if (__builtin_expect(t->cb(t->user, &t->tok) != 0, 0))
      return gram_aborted(t, bias + (uint64_t)(uintptr_t)r, bias + (uint64_t)(uintptr_t)end);
    p = r + 1;
    if (kind == TS_JSON_KEY) {
      st = S_COLON;
      goto colon;
    }
    goto after_value;
  }
  if (s == end) { /* nothing of it yet */
    t->tok.flags = TS_JSON_FIRST;
    t->mode = MODE(S_STR) | MODE_FIRST;
    t->pos = bias + (uint64_t)(uintptr_t)end;
    return TS_E_OK;
  }
  t->tok.text = s;
  t->tok.len = (size_t)(end - s);
  t->tok.offset = bias + (uint64_t)(uintptr_t)s;
  t->tok.flags = TS_JSON_FIRST;
  if (__builtin_expect(t->cb(t->user, &t->tok) != 0, 0)) return gram_aborted(t, bias + (uint64_t)(uintptr_t)end, bias + (uint64_t)(uintptr_t)end);
  t->tok.flags = 0;
  t->mode = MODE(S_STR);
  t->pos = bias + (uint64_t)(uintptr_t)end;
  return TS_E_OK;
}
done:
  t->mode = MODE(st);
  t->pos = bias + (uint64_t)(uintptr_t)end;
  return TS_E_OK;
machine:
  /* the machine takes the rest as a chunk of its own (the offsets it reports are t->pos
   * plus the distance from its start), from the state for the byte at p */
  t->mode = MODE(st);
  t->pos = bias + (uint64_t)(uintptr_t)p;
  return feed_machine(t, p, (size_t)(end - p), NULL);
}

/* The string continued by [buf, q) ends at the closing quote q: its last fragment, then
 * the grammar short path from the byte after q. */
__attribute__((noinline)) static int str_close(ts_json_tok *t, const char *buf, size_t len,
                                               const char *q) {
  t->tok.text = buf;
  t->tok.len = (size_t)(q - buf);
  t->tok.offset = t->pos;
  t->tok.flags |= TS_JSON_LAST;
  if (__builtin_expect(t->cb(t->user, &t->tok) != 0, 0))
    return gram_aborted(t, t->pos + (uint64_t)(q - buf), t->pos + len);
  const unsigned st = t->tok.kind == TS_JSON_KEY ? S_COLON : t->depth ? S_AFTER : S_DONE;
  return gram_run(t, buf, len, q + 1, st);
}

/* Chunks up to this long that start outside a string take the grammar short path from
 * their start; longer ones go to the machine at once, whose grammar costs less a byte
 * once its entry is paid (measured: W3 64 +3.6%, W2 whole +7% with no limit; 8 left
 * W2 16 2.6% slower than 16). */
#define GRAM_CHUNK 16

/* 0 to GRAM_CHUNK bytes that start outside a string: the grammar short path from the
 * chunk's start, in the state the last chunk left (the machine's, for a state the path
 * does not take: the error and finished states among them). */
__attribute__((noinline)) static int gram_short(ts_json_tok *t, const char *buf, size_t len,
                                                uint32_t mode) {
  return gram_run(t, buf, len, buf, mode >> 16);
}

/* 1 to SHORT_CHUNK bytes continuing a string in any state: the DFA over all of them. */
__attribute__((noinline)) static int str_tiny(ts_json_tok *t, const char *buf, size_t len) {
  const size_t s = str_dfa_chunk(buf, buf + len, MODE_DFA(t->mode));
  if (__builtin_expect(s >= 32 * D_QT, 0)) return str_more(t, buf, len, buf);
  t->mode = MODE(S_STR) | (uint32_t)s;
  return str_fragment(t, buf, len);
}

int ts_json_tok_feed(ts_json_tok *t, const char *buf, size_t len) {
  /* Inside a string (which also excludes the error and finished states), a chunk that
   * holds no closing quote and no error is one fragment: the DFA's last state is all
   * that changes. Anything else goes to the machine or str_more, which start again
   * from t->mode. Every case is a tail call, so that none pays for another's
   * registers. */
  const uint32_t mode = t->mode;
  /* 4 to 8 bytes between characters in a string, not its first fragment: mode is 0
   * there and 16 or more anywhere else (MODE_FIRST, the DFA's states scaled by 32, the
   * others by 65536), so one sum and one compare test both (len - 4 wraps below 4
   * bytes; adding mode, below 2^32, cannot bring it back under 4, nor can any real len
   * wrap) */
  if (len - 4 + mode <= SHORT_CHUNK - 4) return str_short(t, buf, len);
  if (mode < MODE(S_STR + 1)) { /* inside a string */
    if (len - 1 < SHORT_CHUNK) { /* 1 ..= SHORT_CHUNK bytes */
      /* 4 or more between characters as the string's first fragment: as above */
      if (mode == MODE_FIRST && len >= 4) return str_short_first(t, buf, len);
      return str_tiny(t, buf, len);
    }
#if defined(TS_WIDE_SCAN)
    /* 32 bytes or more continuing a string between characters: a long string, so 32
     * bytes a step from the start; what scan_wide leaves, str_more finishes */
    if (len >= 32 && MODE_DFA(mode) == 32 * D_PL && wide_scan) return str_wide(t, buf, len);
#endif
    if (len) return str_more(t, buf, len, buf);
    return feed_idle(t, 0);
  }
  /* up to GRAM_CHUNK bytes outside a string (an empty chunk too, so that the machine
   * never sees one): the grammar short path */
  if (len <= GRAM_CHUNK) return gram_short(t, buf, len, mode);
  return feed_machine(t, buf, len, NULL);
}

int ts_json_tok_finish(ts_json_tok *t) {
  unsigned state = STATE(t);
  if (state == S_ERROR) return t->err;
  if (state == S_FINISHED) return TS_E_OK;
  int err = TS_E_OK;
  if (state == S_NUM_ZERO || state == S_NUM_INT || state == S_NUM_FRAC || state == S_NUM_EXP) {
    if (t->depth == 0) {
      /* A top-level number ends at the end of input: report its (empty) last fragment. */
      ts_json_token tok = {.text = "",
                           .len = 0,
                           .offset = t->pos,
                           .depth = 0,
                           .kind = TS_JSON_NUMBER,
                           .flags = (uint8_t)(t->tok.flags | TS_JSON_LAST)};
      t->tok.flags = 0;
      if (t->cb(t->user, &tok)) {
        err = TS_E_ABORTED;
      } else {
        t->mode = MODE(S_DONE);
        state = S_DONE;
      }
    }
  }
  if (!err && state != S_DONE)
    err = (state == S_VALUE && t->depth == 0) ? TS_E_JSON_EMPTY : TS_E_JSON_TRUNCATED;
  if (err) {
    t->mode = MODE(S_ERROR);
    t->err = err;
    t->err_offset = t->pos;
    return err;
  }
  t->mode = MODE(S_FINISHED);
  return TS_E_OK;
}
