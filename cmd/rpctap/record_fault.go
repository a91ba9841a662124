package main

import (
	"fmt"
	"io"
	"sync"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/recfault"
	"github.com/rpctap/rpctap/replay"
	"github.com/rpctap/rpctap/tap"
)

// parseFaultFlags reads --faults FILE, then each --fault rule (record,
// replay and verify share the syntax: replay.ParseFault).
func parseFaultFlags(rules []string, file string) ([]replay.Fault, error) {
	var faults []replay.Fault
	if file != "" {
		fs, err := replay.ReadFaults(file)
		if err != nil {
			return nil, Usagef("--faults: %v", err)
		}
		faults = append(faults, fs...)
	}
	for _, r := range rules {
		ft, err := replay.ParseFault(r)
		if err != nil {
			return nil, Usagef("--fault: %v", err)
		}
		faults = append(faults, ft)
	}
	return faults, nil
}

// faultsCanFire refuses a rule that can never fire where it is used: one
// for the other direction (replay sends the child's frames, dir=out; verify
// sends the parent's, dir=in, the child's side being live), and, when the
// recording is at hand (recs non-nil), one whose method= no frame sent in
// that direction has (a response counts with its request's method) or
// whose frame= is past the last frame sent.
func faultsCanFire(cmd string, faults []replay.Fault, sendDir cassette.Dir, recs []cassette.Record, conn int) error {
	live := map[cassette.Dir]string{cassette.DirIn: "the child's side is live under verify", cassette.DirOut: "the parent's side is live under replay"}[sendDir]
	methods, frames := map[string]bool{}, 0
	for i := range recs {
		r := &recs[i]
		if r.K != cassette.KindFrame || r.Conn != conn || r.Part {
			continue
		}
		if r.D == sendDir {
			frames++
			methods[r.Method] = true
		} else if r.Kind == "request" || r.Kind == "handshake" {
			methods[r.Method] = true // its answer is sent by this side
		}
	}
	for _, f := range faults {
		switch {
		case f.Dir != "" && f.Dir != string(sendDir):
			return Usagef("%s: --fault %q can never fire: %s sends only dir=%s frames (%s)", cmd, f.String(), cmd, sendDir, live)
		case recs == nil:
		case f.Method != "" && !methods[f.Method]:
			return Usagef("%s: --fault %q can never fire: no frame with method %s is sent (dir=%s) in this recording", cmd, f.String(), f.Method, sendDir)
		case f.Frame > frames:
			return Usagef("%s: --fault %q can never fire: %s sends %d frames (dir=%s) from this recording", cmd, f.String(), cmd, frames, sendDir)
		}
	}
	return nil
}

// checkFaults parses record's fault flags; socket mode takes none.
func (o *recordOptions) checkFaults() error {
	faults, err := parseFaultFlags(o.Fault, o.FaultsFile)
	if err != nil {
		return err
	}
	if len(faults) > 0 && o.Listen != "" {
		return Usagef("record: --fault is for stdio recordings")
	}
	for _, f := range faults {
		if f.Dir == "in" {
			return Usagef("record: --fault %q: faults while recording apply to the child's output only (dir=out)", f.String())
		}
	}
	o.faults = faults
	return nil
}

// installFaults makes c apply the rules to the child's stdout (the only
// exception to byte-exact forwarding; nothing is installed without rules).
// Each fault done is told on warn and recorded as a "fault" event right
// after the frame it changed (docs/cassette-format.md, section 4.6); the
// cassette keeps the frame as the child sent it.
func installFaults(c *tap.Cmd, rules []replay.Fault, warn io.Writer) {
	if len(rules) == 0 {
		return
	}
	reqs := &recfault.Requests{}
	c.Observer = &requestFeeder{next: c.Observer, reqs: reqs}
	if !c.ObserveFirst {
		c.ObserveFirst = true // the request is known before the child can answer it
	}
	var mu sync.Mutex
	c.StdoutFilter = func(dst io.Writer) io.Writer {
		return &recfault.Writer{Dst: dst, Rules: rules, Requests: reqs,
			Note: func(rule string, frame int, what string) {
				msg := fmt.Sprintf("%s on frame %d of out (%s)", rule, frame, what)
				mu.Lock()
				fmt.Fprintf(warn, "rpctap record: fault injected: %s\n", msg)
				mu.Unlock()
				c.Note(tap.Event{Kind: cassette.EventFault, Stream: tap.Stdout, Msg: msg})
			},
			Kill: func() error {
				if c.Process != nil {
					c.Process.Kill()
				}
				return nil
			}}
	}
}

// requestFeeder passes everything on to next (which may be nil) and feeds
// the parent's stdin to reqs.
type requestFeeder struct {
	next tap.Observer
	reqs *recfault.Requests
}

func (f *requestFeeder) Observe(ch tap.Chunk) {
	if ch.Stream == tap.Stdin {
		f.reqs.Feed(ch.Data)
	}
	if f.next != nil {
		f.next.Observe(ch)
	}
}

func (f *requestFeeder) Event(e tap.Event) {
	if f.next != nil {
		f.next.Event(e)
	}
}

func (f *requestFeeder) Close() error {
	if f.next != nil {
		return f.next.Close()
	}
	return nil
}
