package main

import (
	"errors"
	"fmt"
	"io"
)

// The exit-code table. It is the only place rpctap decides its own exit
// status; docs/exit-codes.md mirrors it for users.
//
// `record` and `replay` stand in for a child process, so on a normal run they
// exit with the child's (or the recorded child's) status, or die of its fatal
// signal. The codes below are what rpctap itself says; 125-127 follow the
// convention of env(1), timeout(1) and docker so that a wrapper script can
// tell "rpctap could not run the command" from "the command failed".
const (
	ExitOK       = 0   // success; check/verify/diff found nothing
	ExitFindings = 1   // check found error-level violations, verify/diff found differences, replay --strict diverged
	ExitUsage    = 2   // bad flags or arguments
	ExitInput    = 4   // an input file is missing, unreadable, corrupt, foreign or from a newer rpctap; or damaged in the middle (after reading past the damage)
	ExitInternal = 125 // rpctap itself failed (a bug, or the environment refused something it needs, such as a write)
	ExitNoExec   = 126 // the child command exists but cannot be executed
	ExitNotFound = 127 // the child command was not found
)

// writeExitCodes prints the table for `rpctap help exit-codes`.
func writeExitCodes(w io.Writer) {
	fmt.Fprintf(w, `Exit codes

record, replay   the child's exit status (or the recorded one); if the child
                 died of a signal, rpctap dies of the same signal (128+n when
                 it cannot); the codes below only when rpctap itself failed
  %3d  success; check, verify and diff found nothing
  %3d  check found error-level violations, verify or diff found differences,
       replay --strict saw the parent diverge
  %3d  bad flags or arguments
  %3d  an input file is missing, unreadable, corrupt, foreign or too new;
       also a cassette damaged in the middle: every command that reads one
       reports each damaged range, uses every other record, then fails
       (a cassette that merely ends early is one warning, not an error)
  %3d  rpctap itself failed; also a write that failed (stdout on a full
       disk or /dev/full, an -o file): the target is left as it was
  %3d  the child command cannot be executed
  %3d  the child command was not found
`, ExitOK, ExitFindings, ExitUsage, ExitInput, ExitInternal, ExitNoExec, ExitNotFound)
}

// ExitError carries an exit status out of a subcommand's run function.
// A nil Err means "exit silently with Code" (the message was already printed,
// or there is none, as when passing a child's status through).
type ExitError struct {
	Code int
	Err  error
	// NoHint leaves out the "Run 'rpctap CMD --help'" line of a usage error
	// when the message itself says what to do.
	NoHint bool
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Exit returns an error that makes rpctap exit with code, printing nothing.
func Exit(code int) error { return &ExitError{Code: code} }

// Usagef reports bad flags or arguments (exit 2).
func Usagef(format string, a ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, a...)}
}

// Inputf reports an input file rpctap cannot use (exit 4).
func Inputf(format string, a ...any) error {
	return &ExitError{Code: ExitInput, Err: fmt.Errorf(format, a...)}
}

// Findingsf reports that a check, verify or diff found problems (exit 1).
func Findingsf(format string, a ...any) error {
	return &ExitError{Code: ExitFindings, Err: fmt.Errorf(format, a...)}
}

// exitCode maps an error returned by a command to the process exit status.
// Errors that are not ExitErrors are rpctap's own failures.
func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitInternal
}
