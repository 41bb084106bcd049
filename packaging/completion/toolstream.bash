# bash completion for toolstream. No command or option is listed here: both come from
# the command's own --help (`toolstream --help` for the commands, `toolstream CMD --help`
# for a command's options and the names of their values), so the completion is always
# that of the toolstream being completed. A value named FILE completes file names, DIR
# directories; --format (F) the stream formats, the one list kept here.

_toolstream_commands() {
  "$1" --help 2>/dev/null | awk '/^commands:/ {on = 1; next} on && /^$/ {exit}
    on && /^  [a-z]/ {print $1}'
}

# "--name METAVAR" for each option of the command (METAVAR empty for a flag).
_toolstream_options() {
  "$1" "$2" --help 2>/dev/null | awk '{
    for (i = 1; i <= NF; i++) {
      if ($i ~ /^--[a-z][a-z0-9-]*,?$/ && (i == 1 || $(i - 1) ~ /^-[a-zA-Z],$/)) {
        name = $i; sub(/,$/, "", name); meta = ""
        if (i < NF && $(i + 1) ~ /^[A-Z][A-Z0-9_=.|]*$/) meta = $(i + 1)
        print name, meta
        break
      }
    }
  }'
}

_toolstream() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]} prog=${COMP_WORDS[0]}
  local cmd="" i
  COMPREPLY=()
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in -*) ;; *) cmd=${COMP_WORDS[i]}; break ;; esac
  done
  if [ -z "$cmd" ]; then
    if [[ $cur == -* ]]; then
      mapfile -t COMPREPLY < <(compgen -W "--help --version" -- "$cur")
    else
      mapfile -t COMPREPLY < <(compgen -W "$(_toolstream_commands "$prog")" -- "$cur")
    fi
    return 0
  fi
  local opts name meta want=""
  opts=$(_toolstream_options "$prog" "$cmd")
  if [[ $prev == --* ]]; then
    while read -r name meta; do
      [ "$name" = "$prev" ] && want=${meta:-flag}
    done <<< "$opts"
  fi
  case $want in
    "" | flag) ;;
    *DIR*) mapfile -t COMPREPLY < <(compgen -d -- "$cur"); return 0 ;;
    *FILE*) mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return 0 ;;
    F | FORMAT)
      mapfile -t COMPREPLY < <(compgen -W "auto openai-chat openai-responses anthropic gemini raw" -- "$cur")
      return 0 ;;
    *) return 0 ;; # a value with no completion (URL, N, ID ...)
  esac
  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(cut -d' ' -f1 <<< "$opts")" -- "$cur")
  else
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
  fi
  return 0
}
complete -o filenames -F _toolstream toolstream
