# zsh_completion.zsh COMPLETION_DIR BIN_DIR: runs the zsh completion function with zsh's
# completion helpers (_arguments, _describe) replaced by stubs that print what they are
# handed, so the test sees exactly which commands and option specs the function built
# from the command's --help. (Driving the real completion engine needs a terminal.)
fpath=($1 $fpath)
autoload -Uz _toolstream
export PATH=$2:$PATH
_describe() { print -rl -- "DESCRIBE" "${(@P)${@[-1]}}"; }
_arguments() {
  if [[ $1 == -C ]]; then # the first call: pretend zsh chose the state under test
    state=$TS_STATE
    [[ $state == argument ]] && words=(${words[2,-1]})
    return 1
  fi
  print -rl -- "ARGUMENTS" "$@"
}
words=(toolstream ''); CURRENT=2; TS_STATE=command; _toolstream
words=(toolstream tap --pro); CURRENT=3; TS_STATE=argument; _toolstream
words=(toolstream run --work); CURRENT=3; TS_STATE=argument; _toolstream
