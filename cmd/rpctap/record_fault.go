package main

import (
	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/replay"
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

// checkFaults parses record's fault flags; socket mode takes none. The
// rules run in the intercepting tap (record_intercept.go, package rewrite's
// Faults) on both directions and both framings: without dir= on the
// child's frames, with dir=in on the parent's.
func (o *recordOptions) checkFaults() error {
	faults, err := parseFaultFlags(o.Fault, o.FaultsFile)
	if err != nil {
		return err
	}
	if len(faults) > 0 && o.Listen != "" {
		return Usagef("record: --fault is for stdio recordings")
	}
	o.faults = faults
	return nil
}
