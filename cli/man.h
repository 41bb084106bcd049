/*
 * man.h: the command's man pages, rendered from the same tables as its --help.
 *
 * `toolstream --generate-man DIR` writes DIR/toolstream.1 and one DIR/toolstream-<name>.1
 * per command of ts_cli_commands(): name and summary, synopsis, description, every
 * option group (shared groups under their headings), the footer's exit statuses and
 * notes, and SEE ALSO. Nothing on a page is typed twice: change a table and both --help
 * and the page change. The build runs it (packaging/man/gen-man.sh, target `man`); it is
 * not listed in --help because it is for packagers, not for users (docs/packaging.md).
 *
 * Dates follow SOURCE_DATE_EPOCH when it is set, so package builds are reproducible.
 */
#ifndef TS_CLI_MAN_H
#define TS_CLI_MAN_H

/* argv[0] is "--generate-man", argv[1] the folder (it must exist). Returns the exit
 * status: 0, 1 when a page cannot be written, 2 for a usage error (one line on stderr). */
int ts_cli_man(int argc, char **argv);

#endif /* TS_CLI_MAN_H */
