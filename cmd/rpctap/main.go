// Command rpctap records, replays and inspects the newline-delimited JSON
// that editors and bridges exchange with agent child processes.
//
// main is a thin adapter: it picks a subcommand, hands it the process's
// standard streams and arguments, and turns the returned error into an exit
// status through the single table in exitcodes.go. Each subcommand lives in
// its own file as an Options struct (filled by flag parsing) plus a run
// function, so parsing and behaviour can be tested apart.
package main

import (
	"os"
)

func main() {
	os.Exit(Main(os.Args[1:], Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
