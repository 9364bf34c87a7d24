# What the table scripts under bench/ share (sourced; needs $devplace).
#
# run_json FILE ARGS...: runs `devplace ARGS...` with its JSON to FILE and
# its log to FILE.log; a failure is reported and recorded (an empty FILE)
# instead of ending the whole table.
run_json() {
  local json=$1
  shift
  if ! "$devplace" "$@" > "$json" 2> "$json.log"; then
    echo "   failed: devplace $* ($(tail -n 1 "$json.log"))" >&2
    : > "$json"
  fi
}
