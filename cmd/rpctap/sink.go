package main

import (
	"github.com/spf13/pflag"

	"github.com/rpctap/rpctap/internal/recorder"
)

// __sink is the recorder process that `rpctap record` starts (see
// recorder.StartSink): it reads the forwarded chunks from pipes on fds 3-7
// and writes the cassette, so that the recording survives a SIGKILL of
// rpctap. It is not meant to be run by hand.
func init() {
	register(&command{
		Name:    "__sink",
		Stream:  true,
		Summary: "internal: the recorder process of rpctap record",
		Usage:   "__sink",
		Hidden:  true,
		Flags: func(fs *pflag.FlagSet) func(args []string, stdio Stdio) error {
			return func(args []string, stdio Stdio) error {
				tuneSink()
				if code := recorder.SinkMain(); code != 0 {
					return Exit(code)
				}
				return nil
			}
		},
	})
}
