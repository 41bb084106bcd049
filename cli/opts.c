/*
 * opts.c: the option parser, the shared option groups and the help generator (opts.h).
 *
 * Why a table and not getopt_long: the table also carries what --help (and later the
 * man pages) say, and the value checks, so an option's name, its help line and its
 * range live in one row and cannot drift apart; getopt_long would still leave the help
 * text and the range checks to be written by hand beside it, once per command. The
 * grammar is getopt_long's (`--name VALUE`, `--name=VALUE`, `--`), minus abbreviations:
 * an abbreviated option would silently change meaning when a longer option is added.
 *
 * Matching walks the command's groups in order; names are unique within a command (a
 * test walks every command's table to prove it), so the first match is the match.
 */
#include "cli/opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "base/file.h"
#include "js/jstools.h"
#include "tools/definitions.h"
#include "tools/registry.h"

/* TS_VERSION and TS_BUILT_WITH come from CMakeLists.txt ("package"): the project's
 * version, and the versions of the libraries this build used. */
const char *ts_cli_version(void) { return "toolstream " TS_VERSION "\nbuilt with " TS_BUILT_WITH; }

int ts_cli_parse_size(const char *s, uint64_t *out) {
  if (!s || !*s || *s < '0' || *s > '9') return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) return -1;
  unsigned shift = 0;
  if (*end == 'k' || *end == 'K') shift = 10, end++;
  else if (*end == 'm' || *end == 'M') shift = 20, end++;
  else if (*end == 'g' || *end == 'G') shift = 30, end++;
  if (*end) return -1;
  if (shift && v > (~0ull >> shift)) return -1;
  *out = (uint64_t)v << shift;
  return 0;
}

/* A size as --help writes it: 4g, 16m, 64k, or plain bytes. */
static void size_text(uint64_t n, char *buf, size_t cap) {
  if (n && n % (1u << 30) == 0) snprintf(buf, cap, "%llug", (unsigned long long)(n >> 30));
  else if (n && n % (1u << 20) == 0) snprintf(buf, cap, "%llum", (unsigned long long)(n >> 20));
  else if (n && n % 1024 == 0) snprintf(buf, cap, "%lluk", (unsigned long long)(n >> 10));
  else snprintf(buf, cap, "%llu", (unsigned long long)n);
}

/* Checks a value against its option's kind and range; prints the one error line. */
static int check_value(const char *who, const ts_cli_opt *o, const char *val, uint64_t *num) {
  *num = 0;
  switch (o->kind) {
    case TS_CLI_FLAG:
    case TS_CLI_STRING:
      return 0;
    case TS_CLI_THREAD:
      if (!ts_thread_id_valid(val, strlen(val))) {
        fprintf(stderr,
                "%s: --%s wants 1 to %d bytes with no spaces or control characters, got %zu "
                "bytes\n",
                who, o->name, TS_THREAD_ID_MAX, strlen(val));
        return 2;
      }
      return 0;
    case TS_CLI_SIZE: {
      if (ts_cli_parse_size(val, num) || *num < o->min || *num > o->max) {
        char lo[32], hi[32];
        size_text(o->min, lo, sizeof lo);
        size_text(o->max, hi, sizeof hi);
        fprintf(stderr, "%s: --%s wants a size from %s to %s, got '%s'\n", who, o->name, lo, hi,
                val);
        return 2;
      }
      return 0;
    }
    case TS_CLI_NUMBER:
    case TS_CLI_MS:
      if (ts_cli_parse_size(val, num) || *num < o->min || *num > o->max) {
        fprintf(stderr, "%s: --%s wants %s from %llu to %llu, got '%s'\n", who, o->name,
                o->kind == TS_CLI_MS ? "milliseconds" : "a number", (unsigned long long)o->min,
                (unsigned long long)o->max, val);
        return 2;
      }
      return 0;
  }
  return 0;
}

/* The option of `cmd` named by `name` (n bytes), or by the letter when n == 0. */
static const ts_cli_opt *find_opt(const ts_cli_command *cmd, const char *name, size_t n,
                                  char letter, const ts_cli_group **group) {
  for (const ts_cli_group *const *g = cmd->groups; g && *g; g++) {
    for (size_t i = 0; i < (*g)->n_opts; i++) {
      const ts_cli_opt *o = &(*g)->opts[i];
      if (n ? (strlen(o->name) == n && !memcmp(o->name, name, n)) : (letter && o->letter == letter)) {
        *group = *g;
        return o;
      }
    }
  }
  return NULL;
}

static int deliver(const ts_cli_group *g, const ts_cli_opt *o, const char *val, uint64_t num,
                   ts_cli_common *common, ts_cli_set_fn set, void *user) {
  if (g->set) return g->set(common, o, val, num);
  return set ? set(user, o, val, num) : 0;
}

int ts_cli_parse(const ts_cli_command *cmd, int argc, char **argv, ts_cli_common *common,
                 ts_cli_set_fn set, void *user) {
  static char who[64];
  snprintf(who, sizeof who, "toolstream %s", cmd->name);
  common->who = who;
  int options_done = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (options_done || a[0] != '-' || a[1] == '\0') { /* a positional, or "-" */
      int r = set ? set(user, NULL, a, 0) : 0;
      if (r) return r;
      continue;
    }
    if (!strcmp(a, "--")) {
      options_done = 1;
      continue;
    }
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      ts_cli_print_help(cmd, stdout);
      return fflush(stdout) ? 1 : 0;
    }
    if (!strcmp(a, "--version")) {
      puts(ts_cli_version());
      return fflush(stdout) ? 1 : 0;
    }
    const ts_cli_group *g = NULL;
    const ts_cli_opt *o;
    const char *val = NULL, *eq = NULL;
    if (a[1] == '-') {
      eq = strchr(a + 2, '=');
      o = find_opt(cmd, a + 2, eq ? (size_t)(eq - a - 2) : strlen(a + 2), 0, &g);
    } else {
      o = a[2] == '\0' ? find_opt(cmd, NULL, 0, a[1], &g) : NULL;
    }
    if (!o) {
      fprintf(stderr, "%s: unknown option '%.*s' (try --help)\n", who,
              eq ? (int)(eq - a) : (int)strlen(a), a);
      return 2;
    }
    if (o->kind == TS_CLI_FLAG) {
      if (eq) {
        fprintf(stderr, "%s: --%s takes no value\n", who, o->name);
        return 2;
      }
    } else if (eq) {
      val = eq + 1;
    } else if (i + 1 < argc) {
      val = argv[++i];
    } else {
      fprintf(stderr, "%s: option --%s needs a value (%s)\n", who, o->name,
              o->metavar ? o->metavar : "VALUE");
      return 2;
    }
    uint64_t num;
    int r = check_value(who, o, val, &num);
    if (!r) r = deliver(g, o, val, num, common, set, user);
    if (r) return r;
    while (o->more && i + 1 < argc && o->more(argv[i + 1])) {
      val = argv[++i];
      if ((r = check_value(who, o, val, &num)) || (r = deliver(g, o, val, num, common, set, user)))
        return r;
    }
  }
  return -1;
}

/* ---- help ---------------------------------------------------------------------------- */

/* What every command takes; the parser handles them itself, before the tables. */
static const ts_cli_opt std_opts[] = {
    {"help", 'h', TS_CLI_FLAG, 0, 0, 0, NULL, "this help", NULL},
    {"version", 0, TS_CLI_FLAG, 0, 0, 0, NULL, "print the version and exit", NULL},
    {"", 0, TS_CLI_FLAG, 0, 0, 0, NULL, "end of options: what follows is positional", NULL},
};
const ts_cli_group ts_cli_group_std = {"standard", NULL, std_opts, 3, NULL};

static void print_opt(FILE *f, const ts_cli_opt *o) {
  char head[96];
  int n;
  if (o->letter)
    n = snprintf(head, sizeof head, "  -%c, --%s%s%s", o->letter, o->name, o->metavar ? " " : "",
                 o->metavar ? o->metavar : "");
  else
    n = snprintf(head, sizeof head, "  --%s%s%s", o->name, o->metavar ? " " : "",
                 o->metavar ? o->metavar : "");
  enum { COL = 26 };
  const char *h = o->help ? o->help : "";
  fputs(head, f);
  if (n >= COL - 1) {
    fputc('\n', f);
    n = 0;
  }
  for (int first = 1;; first = 0) {
    const char *nl = strchr(h, '\n');
    int len = nl ? (int)(nl - h) : (int)strlen(h);
    fprintf(f, "%*s%.*s\n", (first ? COL - n : COL), "", len, h);
    if (!nl) break;
    h = nl + 1;
  }
}

static void print_group(FILE *f, const ts_cli_group *g) {
  for (size_t i = 0; i < g->n_opts; i++) print_opt(f, &g->opts[i]);
}

void ts_cli_print_help(const ts_cli_command *cmd, FILE *f) {
  fprintf(f, "usage: toolstream %s %s\n\n%s\n\noptions:\n", cmd->name, cmd->synopsis,
          cmd->description);
  for (const ts_cli_group *const *g = cmd->groups; g && *g; g++)
    if (!(*g)->heading) print_group(f, *g);
  print_group(f, &ts_cli_group_std);
  for (const ts_cli_group *const *g = cmd->groups; g && *g; g++) {
    if (!(*g)->heading) continue;
    fprintf(f, "\n%s:\n", (*g)->heading);
    print_group(f, *g);
  }
  if (cmd->footer) fprintf(f, "\n%s\n", cmd->footer);
}

/* ---- the shared groups ---------------------------------------------------------------- */

enum { O_PUB = 1, O_REPLAY, O_TLS_CERT, O_TLS_KEY, O_TOOLS, O_PROGRESS_ARG, O_THREAD, O_CA, O_NO_TIME, O_ORIGIN, O_TOKEN_FILE,
       O_AGENT, O_PROMPTS, O_PROMPT_NAME, O_MODEL_URL, O_MODEL, O_PROVIDER, O_KEY_ENV,
       O_MAX_TOKENS };

static int set_shared(void *user, const ts_cli_opt *o, const char *val, uint64_t num) {
  ts_cli_common *c = user;
  switch (o->id) {
    case O_PUB: c->pub_url = val; break;
    case O_REPLAY: c->replay_url = val; break;
    case O_TLS_CERT: c->tls_cert = val; break;
    case O_TLS_KEY: c->tls_key = val; break;
    case O_CA: c->ca_file = val; break;
    case O_NO_TIME: c->no_time = 1; break;
    case O_TOKEN_FILE: c->token_file = val; break;
    case O_AGENT:
      if (c->agent) {
        fprintf(stderr, "%s: one --agent only (the one that runs the thread)\n", c->who);
        return 2;
      }
      c->agent = val;
      break;
    case O_PROMPT_NAME:
      if (c->prompt_name) {
        fprintf(stderr, "%s: one --prompt-name only\n", c->who);
        return 2;
      }
      c->prompt_name = val;
      break;
    case O_PROMPTS:
      if (c->n_prompts_dirs == TS_CLI_MAX_PROMPTS_DIRS) {
        fprintf(stderr, "%s: at most %d --prompts directories\n", c->who, TS_CLI_MAX_PROMPTS_DIRS);
        return 2;
      }
      c->prompts_dirs[c->n_prompts_dirs++] = val;
      break;
    case O_MODEL_URL: c->model_url = val; break;
    case O_MODEL: c->model = val; break;
    case O_PROVIDER: c->provider = val; break;
    case O_KEY_ENV: c->key_env = val; break;
    case O_MAX_TOKENS: c->max_tokens = (unsigned)num; break;
    case O_ORIGIN:
      if (c->n_origins == TS_CLI_MAX_ORIGINS) {
        fprintf(stderr, "%s: at most %d --allow-origin\n", c->who, TS_CLI_MAX_ORIGINS);
        return 2;
      }
      c->origins[c->n_origins++] = val;
      break;
    case O_THREAD:
      snprintf(c->thread, sizeof c->thread, "%s", val); /* checked: fits */
      c->has_thread = 1;
      break;
    case O_TOOLS:
      if (c->n_tools_files == TS_CLI_MAX_TOOLS_FILES) {
        fprintf(stderr, "%s: at most %d --tools files\n", c->who, TS_CLI_MAX_TOOLS_FILES);
        return 2;
      }
      c->tools_files[c->n_tools_files++] = val;
      break;
    case O_PROGRESS_ARG: {
      const char *eq = strchr(val, '=');
      if (!eq || eq == val || !eq[1] || (size_t)(eq - val) >= 256) {
        fprintf(stderr, "%s: --progress-arg wants TOOL=ARG, got '%s'\n", c->who, val);
        return 2;
      }
      if (c->n_progress_args == TS_CLI_MAX_PROGRESS_ARGS) {
        fprintf(stderr, "%s: at most %d --progress-arg settings\n", c->who,
                TS_CLI_MAX_PROGRESS_ARGS);
        return 2;
      }
      c->progress_args[c->n_progress_args++] = val;
      break;
    }
  }
  return 0;
}

static const ts_cli_opt bus_opts[] = {
    {"pub", 0, TS_CLI_STRING, O_PUB, 0, 0, "URL",
     "also publish every event on the event bus (nng pub0: ipc://,\n"
     "tcp://, ws://, wss://, tls+tcp://, inproc://); a URL with no\n"
     "host (tcp://:7000) binds loopback only", NULL},
    {"replay", 0, TS_CLI_STRING, O_REPLAY, 0, 0, "URL",
     "serve missed events to subscribers on this URL (nng rep0);\nneeds --pub", NULL},
    {"tls-cert", 0, TS_CLI_STRING, O_TLS_CERT, 0, 0, "FILE",
     "certificate (PEM, may hold the key too) for wss:// and\ntls+tcp:// bus listeners", NULL},
    {"tls-key", 0, TS_CLI_STRING, O_TLS_KEY, 0, 0, "FILE",
     "its private key, when not in the certificate file", NULL},
};
const ts_cli_group ts_cli_group_bus = {"bus", "event bus", bus_opts,
                                       sizeof bus_opts / sizeof bus_opts[0], set_shared};

static const ts_cli_opt tools_opts[] = {
    {"tools", 0, TS_CLI_STRING, O_TOOLS, 0, 0, "FILE",
     "JSON array of tool definitions (name, description,\n"
     "progressArgument, args, annotations), or a JavaScript tool\n"
     "module (FILE.js, docs/jstools.md); repeatable; more .js files\n"
     "may follow one --tools (--tools tools/*.js)", ts_jstools_is_module},
    {"progress-arg", 0, TS_CLI_STRING, O_PROGRESS_ARG, 0, 0, "T=A",
     "tool T's progress argument is A; repeatable, wins over --tools", NULL},
};
const ts_cli_group ts_cli_group_tools = {"tools", "tools", tools_opts,
                                         sizeof tools_opts / sizeof tools_opts[0], set_shared};

static const ts_cli_opt thread_opts[] = {
    {"thread", 0, TS_CLI_THREAD, O_THREAD, 0, 0, "ID",
     "the thread id: 1 to 256 bytes, no spaces or control characters\n"
     "(default: a fresh th_... id; for sub: every thread)", NULL},
};
const ts_cli_group ts_cli_group_thread = {"thread", NULL, thread_opts, 1, set_shared};

static const ts_cli_opt events_opts[] = {
    {"no-time", 0, TS_CLI_FLAG, O_NO_TIME, 0, 0, NULL,
     "leave the ts and mono_us stamps out of the events (output that\n"
     "is the same from run to run, for diffs and gold files)", NULL},
};
const ts_cli_group ts_cli_group_events = {"events", NULL, events_opts, 1, set_shared};

static const ts_cli_opt browsers_opts[] = {
    {"allow-origin", 0, TS_CLI_STRING, O_ORIGIN, 0, 0, "ORIGIN",
     "a browser origin that may reach the ws:// bus listeners, the\n"
     "HTTP event endpoint and the gateway, besides the listener itself\n"
     "and loopback pages (repeatable, up to 32; e.g.\n"
     "https://ui.example.com); the endpoint, and the gateway for a\n"
     "browser's request, answer only a Host that is an IP address,\n"
     "localhost or such an origin's host (DNS rebinding)", NULL},
};
const ts_cli_group ts_cli_group_browsers = {"browsers", NULL, browsers_opts, 1, set_shared};

static const ts_cli_opt endpoint_opts[] = {
    {"token-file", 0, TS_CLI_STRING, O_TOKEN_FILE, 0, 0, "FILE",
     "the HTTP event endpoint requires 'Authorization: Bearer TOKEN'\n"
     "(or ?token=) with the token in FILE (its first line)", NULL},
};
const ts_cli_group ts_cli_group_endpoint = {"endpoint", NULL, endpoint_opts, 1, set_shared};

static const ts_cli_opt defs_opts[] = {
    {"agent", 0, TS_CLI_STRING, O_AGENT, 0, 0, "FILE|NAME",
     "the agent that runs the thread (its sideA prompt drives it):\n"
     "a definition file (JSON, or a .js/.ts module calling\n"
     "defineAgent; a path has a / or ends in .json, .js, .ts...) or\n"
     "the name of an agent of --prompts (docs/composition.md)", NULL},
    {"prompts", 0, TS_CLI_STRING, O_PROMPTS, 0, 0, "DIR",
     "prompt and agent definitions: every *.json file of DIR (a\n"
     "prompt unless \"kind\" says agent), then every JavaScript or\n"
     "TypeScript module (definePrompt, defineAgent, defineTool), in\n"
     "name order; repeatable, up to 8", NULL},
    {"prompt-name", 0, TS_CLI_STRING, O_PROMPT_NAME, 0, 0, "NAME",
     "the prompt that drives the thread when no --agent is given\n"
     "(default: the agent no other uses, else the prompt no other uses)", NULL},
};
const ts_cli_group ts_cli_group_defs = {"definitions", "prompts and agents", defs_opts,
                                        sizeof defs_opts / sizeof defs_opts[0], set_shared};
static const ts_cli_opt model_opts[] = {
    {"model-url", 0, TS_CLI_STRING, O_MODEL_URL, 0, 0, "URL",
     "the model's base URL, the provider's path is added\n"
     "(https://api.openai.com/v1, http://localhost:11434/v1,\n"
     "https://api.anthropic.com/v1, https://api.cohere.com,\n"
     "https://generativelanguage.googleapis.com/v1beta,\n"
     "https://bedrock-runtime.REGION.amazonaws.com), or the full URL", NULL},
    {"model", 0, TS_CLI_STRING, O_MODEL, 0, 0, "NAME", "the model's name (required with --model-url)",
     NULL},
    {"provider", 0, TS_CLI_STRING, O_PROVIDER, 0, 0, "P",
     "openai (Chat Completions), openai-responses (/responses),\n"
     "anthropic, gemini (streamGenerateContent), bedrock\n"
     "(ConverseStream; --model is the model id), ollama (native\n"
     "/api/chat; its /v1 is openai) or cohere (v2 chat)\n"
     "(default: anthropic, gemini, bedrock or cohere by the URL's\n"
     "host, else openai)", NULL},
    {"api-key-env", 0, TS_CLI_STRING, O_KEY_ENV, 0, 0, "VAR",
     "the environment variable holding the API key (default\n"
     "the provider's: OPENAI_API_KEY, ANTHROPIC_API_KEY,\n"
     "GEMINI_API_KEY, OLLAMA_API_KEY or CO_API_KEY; never a flag,\n"
     "never printed). Bedrock: a Bedrock API key in\n"
     "AWS_BEARER_TOKEN_BEDROCK, else requests are signed (SigV4)\n"
     "with AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,\n"
     "AWS_SESSION_TOKEN (temporary credentials) and AWS_REGION", NULL},
    {"max-tokens", 0, TS_CLI_NUMBER, O_MAX_TOKENS, 1, 1000000, "N",
     "the reply's token limit: Anthropic's max_tokens (default\n"
     "4096), Gemini's maxOutputTokens, Bedrock's maxTokens,\n"
     "Responses' max_output_tokens (default: the provider's)", NULL},
};
const ts_cli_group ts_cli_group_model = {"model", NULL, model_opts,
                                         sizeof model_opts / sizeof model_opts[0], set_shared};

static const ts_cli_opt ca_opts[] = {
    {"ca-file", 0, TS_CLI_STRING, O_CA, 0, 0, "FILE",
     "trust these CA certificates (PEM) for https:// instead of the\n"
     "system's; certificates are always verified", NULL},
};
const ts_cli_group ts_cli_group_ca = {"ca", NULL, ca_opts, 1, set_shared};

/* ---- the shared groups' work ------------------------------------------------------------ */

int ts_cli_bus_check(const ts_cli_common *c) {
  if (c->replay_url && !c->pub_url) {
    fprintf(stderr, "%s: --replay needs --pub\n", c->who);
    return 2;
  }
  if ((c->tls_cert || c->tls_key) && !c->pub_url) {
    fprintf(stderr, "%s: --tls-cert and --tls-key need --pub\n", c->who);
    return 2;
  }
  return 0;
}

int ts_cli_bus_open(const ts_cli_common *c, const ts_pub_opts *base, ts_pub **out) {
  *out = NULL;
  if (!c->pub_url) return 0;
  ts_pub_opts o;
  if (base) o = *base;
  else memset(&o, 0, sizeof o);
  o.tls_cert_file = c->tls_cert;
  o.tls_key_file = c->tls_key;
  o.allowed_origins = c->origins;
  o.allowed_origins_n = c->n_origins;
  int pr = ts_pub_open(c->pub_url, c->replay_url, &o, out);
  if (pr) {
    fprintf(stderr, "%s: cannot publish on %s%s%s: %s\n", c->who, c->pub_url,
            c->replay_url ? " / " : "", c->replay_url ? c->replay_url : "",
            pr == TS_E_IO || (pr == TS_E_INVAL && *ts_bus_last_error()) ? ts_bus_last_error()
                                                                       : ts_err_message(pr));
    return 1;
  }
  return 0;
}

int ts_cli_thread_or_new(ts_cli_common *c) {
  if (c->has_thread) return 0;
  int r = ts_thread_id_new(c->thread, sizeof c->thread);
  if (r) {
    fprintf(stderr, "%s: cannot make a thread id: %s\n", c->who, ts_err_message(r));
    return 1;
  }
  return 0;
}

int ts_cli_progress_overrides(const ts_cli_common *c, ts_tool_defs *defs) {
  for (size_t i = 0; i < c->n_progress_args; i++) {
    const char *val = c->progress_args[i], *eq = strchr(val, '=');
    char tool[256];
    snprintf(tool, sizeof tool, "%.*s", (int)(eq - val), val); /* checked: < 256 */
    if (ts_tool_defs_set_progress(defs, tool, eq + 1)) {
      fprintf(stderr, "%s: out of memory\n", c->who);
      return 1;
    }
  }
  return 0;
}

/* The exit status for a --tools file that failed with `rc`: unreadable 1, malformed 2. */
static int tools_status(int rc) { return rc == TS_E_IO || rc == TS_E_NOMEM ? 1 : 2; }

int ts_cli_tools_defs(const ts_cli_common *c, ts_tool_defs *defs) {
  for (size_t i = 0; i < c->n_tools_files; i++) {
    const char *path = c->tools_files[i];
    char why[512] = "";
    if (ts_jstools_is_module(path)) {
      /* a module: loaded (in a registry of its own) for its tools' progress arguments */
      ts_registry *reg = ts_registry_new();
      int rc = reg ? ts_jstools_load(reg, path, NULL, why, sizeof why) : TS_E_NOMEM;
      for (size_t k = 0; !rc && k < ts_registry_count(reg); k++) {
        const ts_tool *t = ts_registry_at(reg, k);
        if (ts_tool_progress_arg(t))
          rc = ts_tool_defs_set_progress(defs, ts_tool_name(t), ts_tool_progress_arg(t));
      }
      ts_registry_free(reg);
      if (rc) {
        fprintf(stderr, "%s: %s\n", c->who, why[0] ? why : ts_err_message(rc));
        return tools_status(rc);
      }
      continue;
    }
    char *text;
    size_t len;
    int rc = ts_file_read(path, (size_t)64 << 20, &text, &len);
    if (rc) {
      fprintf(stderr, "%s: cannot read %s: %s\n", c->who, path,
              rc == TS_E_LIMIT ? "the file is too large" : strerror(errno));
      return rc == TS_E_LIMIT ? 2 : 1;
    }
    rc = ts_tool_defs_parse(defs, text, len, why, sizeof why);
    free(text);
    if (rc) {
      fprintf(stderr, "%s: %s: %s\n", c->who, path, rc == TS_E_NOMEM ? "out of memory" : why);
      return rc == TS_E_NOMEM ? 1 : 2;
    }
  }
  return ts_cli_progress_overrides(c, defs);
}

int ts_cli_tools_registry(const ts_cli_common *c, ts_registry *reg, const ts_jstools_env *env) {
  for (size_t i = 0; i < c->n_tools_files; i++) {
    const char *path = c->tools_files[i];
    char why[512] = "";
    int rc;
    if (ts_jstools_is_module(path)) {
      if ((rc = ts_jstools_load(reg, path, env, why, sizeof why))) {
        fprintf(stderr, "%s: %s\n", c->who, why[0] ? why : ts_err_message(rc));
        return tools_status(rc);
      }
      continue;
    }
    ts_tool_defs defs = {0};
    int st = 0;
    if ((rc = ts_cli_tools_defs(&(ts_cli_common){.who = c->who, .tools_files = {path},
                                                 .n_tools_files = 1},
                                &defs)))
      st = rc;
    else if ((rc = ts_registry_add_defs(reg, &defs, why, sizeof why))) {
      fprintf(stderr, "%s: %s: %s\n", c->who, path, why[0] ? why : ts_err_message(rc));
      st = rc == TS_E_NOMEM ? 1 : 2;
    }
    ts_tool_defs_free(&defs);
    if (st) return st;
  }
  return 0;
}

/* ---- definitions: --prompts, --agent, --prompt-name ------------------------------------- */

/* A definition error's exit status: unreadable 1, anything about the content 2. */
static int defs_status(int rc) { return rc == TS_E_IO || rc == TS_E_NOMEM ? 1 : 2; }

static int module_name(const char *name) { return name[0] != '.' && ts_jstools_is_module(name); }

/* The modules of `dir` in name order, loaded with `env` (tools into reg, definitions into
 * env->defs). 0 or the exit status after printing. */
static int load_dir_modules(const ts_cli_common *c, const char *dir, ts_registry *reg,
                            const ts_jstools_env *env) {
  char **names = NULL;
  size_t n = 0;
  int rc = ts_file_list(dir, module_name, TS_DEFS_MAX_DEFS, &names, &n), st = 0;
  if (rc) {
    fprintf(stderr, "%s: --prompts %s: %s\n", c->who, dir,
            rc == TS_E_LIMIT ? "more than 4096 modules" : strerror(errno));
    return rc == TS_E_LIMIT ? 2 : 1;
  }
  for (size_t i = 0; i < n && !st; i++) {
    char path[4096], why[768] = "";
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    struct stat sb;
    if (stat(path, &sb) || !S_ISREG(sb.st_mode)) continue;
    if ((rc = ts_jstools_load(reg, path, env, why, sizeof why))) {
      fprintf(stderr, "%s: %s\n", c->who, why[0] ? why : ts_err_message(rc));
      st = defs_status(rc);
    }
  }
  ts_file_names_free(names, n);
  return st;
}

/* --agent ARG names a file (not a loaded agent's name). */
static int agent_is_file(const char *arg) {
  size_t n = strlen(arg);
  return strchr(arg, '/') || ts_jstools_is_module(arg) || (n > 5 && !strcmp(arg + n - 5, ".json"));
}

/* 1 when agent `name` is used by another definition: a subagent of some side, or listed in
 * some prompt's tools. */
static int agent_used(const ts_defs *d, const char *name) {
  for (size_t i = 0; i < ts_defs_agent_count(d); i++) {
    const ts_defs_agent *a = ts_defs_agent_at(d, i);
    const ts_defs_side *sides[2] = {&a->side_a, &a->side_b};
    for (int k = 0; k < 2; k++)
      for (size_t r = 0; r < sides[k]->n_subagents; r++)
        if (!strcmp(sides[k]->subagents[r].agent, name) && strcmp(a->name, name)) return 1;
  }
  for (size_t i = 0; i < ts_defs_prompt_count(d); i++) {
    const ts_defs_prompt *p = ts_defs_prompt_at(d, i);
    for (size_t t = 0; t < p->n_tools; t++)
      if (!strcmp(p->tools[t].name, name)) return 1;
  }
  return 0;
}

/* With prompts alone: the only one, else the one no other prompt uses (lists in its tools
 * or includes as a part: the others are its sub-prompts); NULL when that leaves more than
 * one. */
static const ts_defs_prompt *top_prompt(const ts_defs *d) {
  size_t n = ts_defs_prompt_count(d), tops = 0;
  const ts_defs_prompt *top = NULL;
  for (size_t i = 0; i < n; i++) {
    const char *nm = ts_defs_prompt_at(d, i)->name;
    int used = 0;
    for (size_t j = 0; j < n && !used; j++) {
      const ts_defs_prompt *p = ts_defs_prompt_at(d, j);
      if (p == ts_defs_prompt_at(d, i)) continue;
      for (size_t t = 0; t < p->n_tools && !used; t++) used = !strcmp(p->tools[t].name, nm);
      for (size_t k = 0; k < p->n_parts && !used; k++)
        used = p->parts[k].kind == TS_DEFS_PART_PROMPT && !strcmp(p->parts[k].text, nm);
    }
    if (!used) top = ts_defs_prompt_at(d, i), tops++;
  }
  return tops == 1 ? top : NULL;
}

/* The agent an --agent FILE means among the agents it added (from index `from` on), or
 * --prompts alone among all (path ""): the only one; else the one no other definition
 * uses (the others being its subagents or tools: a team); else the one named as the file
 * is; NULL when that leaves more than one. */
static const ts_defs_agent *file_agent(const ts_defs *d, size_t from, const char *path) {
  size_t n = ts_defs_agent_count(d);
  if (n - from == 1) return ts_defs_agent_at(d, from);
  const ts_defs_agent *top = NULL;
  size_t tops = 0;
  for (size_t i = from; i < n; i++)
    if (!agent_used(d, ts_defs_agent_at(d, i)->name)) top = ts_defs_agent_at(d, i), tops++;
  if (tops == 1) return top;
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t bl = strcspn(base, ".");
  if (!bl) return NULL;
  for (size_t i = from; i < n; i++) {
    const char *nm = ts_defs_agent_at(d, i)->name;
    if (strlen(nm) == bl && !strncmp(nm, base, bl)) return ts_defs_agent_at(d, i);
  }
  return NULL;
}

/* "a, b and c" (the names of a kind, for a message), cut to fit. */
static void name_list(const ts_defs *d, int agents, char *out, size_t cap) {
  size_t n = agents ? ts_defs_agent_count(d) : ts_defs_prompt_count(d), at = 0;
  out[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    const char *nm = agents ? ts_defs_agent_at(d, i)->name : ts_defs_prompt_at(d, i)->name;
    int w = snprintf(out + at, cap - at, "%s%s", i == 0 ? "" : i + 1 == n ? " and " : ", ", nm);
    if (w < 0 || (size_t)w >= cap - at) {
      if (cap > 4) snprintf(out + (cap - 4 > at ? at : cap - 4), 4, "...");
      return;
    }
    at += (size_t)w;
  }
}

int ts_cli_defs_load(const ts_cli_common *c, ts_registry *reg, const ts_jstools_env *env,
                     ts_defs *defs, const char **agent, const char **prompt_name) {
  *agent = NULL;
  *prompt_name = NULL;
  char why[768] = "", names[400];
  int rc, st;
  if (c->agent && c->prompt_name) {
    fprintf(stderr, "%s: --agent and --prompt-name both name what drives the thread: give one\n",
            c->who);
    return 2;
  }
  for (size_t i = 0; i < c->n_prompts_dirs; i++) {
    const char *dir = c->prompts_dirs[i];
    if ((rc = ts_defs_load_dir(defs, dir, why, sizeof why))) {
      fprintf(stderr, "%s: %s%s\n", c->who, rc == TS_E_IO ? "--prompts " : "", why);
      return defs_status(rc);
    }
    if ((st = load_dir_modules(c, dir, reg, env))) return st;
  }
  if (c->agent && agent_is_file(c->agent)) {
    size_t before = ts_defs_agent_count(defs);
    if (ts_jstools_is_module(c->agent)) {
      rc = ts_jstools_load(reg, c->agent, env, why, sizeof why);
    } else {
      rc = ts_defs_load_file(defs, c->agent, "agent", why, sizeof why);
    }
    if (rc) {
      fprintf(stderr, "%s: --agent %s\n", c->who, why[0] ? why : ts_err_message(rc));
      return defs_status(rc);
    }
    size_t added = ts_defs_agent_count(defs) - before;
    const ts_defs_agent *top = added ? file_agent(defs, before, c->agent) : NULL;
    if (!top) {
      fprintf(stderr, "%s: --agent %s: %s\n", c->who, c->agent,
              added ? "the file defines several agents, and more than one is not a subagent or "
                      "a tool of another (name one: --prompts DIR with the file in it, and "
                      "--agent NAME)"
                    : "the file defines no agent");
      return 2;
    }
    *agent = top->name;
  }
  if ((ts_defs_prompt_count(defs) || ts_defs_agent_count(defs)) &&
      (rc = ts_defs_check(defs, reg, why, sizeof why))) {
    fprintf(stderr, "%s: %s\n", c->who, why[0] ? why : ts_err_message(rc));
    return defs_status(rc);
  }
  if (c->agent && !*agent) {
    if (!ts_defs_find_agent(defs, c->agent)) {
      name_list(defs, 1, names, sizeof names);
      fprintf(stderr, "%s: --agent %s: no agent of that name (%s%s)\n", c->who, c->agent,
              names[0] ? "loaded: " : "none loaded; --prompts DIR loads definitions",
              names);
      return 2;
    }
    *agent = ts_defs_find_agent(defs, c->agent)->name;
  } else if (c->prompt_name) {
    if (!ts_defs_find_prompt(defs, c->prompt_name)) {
      name_list(defs, 0, names, sizeof names);
      fprintf(stderr, "%s: --prompt-name %s: no prompt of that name (%s%s)\n", c->who,
              c->prompt_name, names[0] ? "loaded: " : "none loaded; --prompts DIR loads them",
              names);
      return 2;
    }
    *prompt_name = ts_defs_find_prompt(defs, c->prompt_name)->name;
  } else if (!*agent && c->n_prompts_dirs) {
    const ts_defs_agent *top = ts_defs_agent_count(defs) ? file_agent(defs, 0, "") : NULL;
    if (top) {
      *agent = top->name;
    } else if (!ts_defs_agent_count(defs) && top_prompt(defs)) {
      *prompt_name = top_prompt(defs)->name;
    } else if (!ts_defs_agent_count(defs) && !ts_defs_prompt_count(defs)) {
      fprintf(stderr, "%s: --prompts: no prompt or agent defined there\n", c->who);
      return 2;
    } else {
      int agents = ts_defs_agent_count(defs) > 0;
      name_list(defs, agents, names, sizeof names);
      fprintf(stderr, "%s: which %s drives the thread? --%s NAME (one of %s)\n", c->who,
              agents ? "agent" : "prompt", agents ? "agent" : "prompt-name", names);
      return 2;
    }
  }
  return 0;
}
