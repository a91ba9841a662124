package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/safefile"
)

// Writing files and stdout. Every file rpctap writes other than the live
// recording goes through internal/safefile (a temporary file beside the
// target, synced, read back, renamed; devices and FIFOs written directly);
// a write that fails is rpctap's failure, exit 125, in one line.

// writeCassetteFile writes recs (header first) as a whole cassette at path:
// every record but the end record in order, numbered afresh, then an end
// record (the one recs holds, else one at the last record's time), so that
// the file always reads to its end, even when recs came from a cassette
// cut off by a killed recorder. A regular target is read back to its end
// record before it replaces what was there.
func writeCassetteFile(path string, recs []cassette.Record) error {
	return safefile.Write(path, safefile.Options{Verify: completeCassette}, func(out io.Writer) error {
		return encodeCassette(out, recs)
	})
}

// encodeCassette writes recs to out as one complete cassette.
func encodeCassette(out io.Writer, recs []cassette.Record) error {
	w, err := cassette.NewWriter(out, *recs[0].Header, nil)
	if err != nil {
		return err
	}
	var end *cassette.Record
	for i := 1; i < len(recs); i++ {
		r := recs[i]
		if r.K == cassette.KindEnd {
			end = &recs[i]
			continue
		}
		r.N = 0
		if err := w.Append(&r); err != nil {
			return err
		}
	}
	if end != nil {
		return w.CloseAt(end.T)
	}
	return w.Close()
}

// writeFailed turns a failure to write a file into the command's one line
// (exit 125); any other error (a damaged input found while writing) is
// returned as it is.
func writeFailed(cmd string, err error) error {
	if safefile.IsError(err) {
		return fmt.Errorf("%s: %v", cmd, err)
	}
	return err
}

// outputGuard sits between a command and its stdout and keeps the first
// write error, so that a report lost to a full disk or a closed file is
// exit 125 however the command writes (fmt.Fprintf ignores errors, a
// bufio.Writer reports them only at Flush). Commands whose stdout is a
// protocol stream (record, replay) are not guarded: they handle their own.
type outputGuard struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func (g *outputGuard) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.w.Write(p)
	if err != nil {
		g.err = err
	}
	return n, err
}

func (g *outputGuard) failed() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// warnCut says once on w that the cassette path was cut off (no end
// record: a killed recorder) and that out ends at its last whole record.
func warnCut(w io.Writer, cmd, path, out string, recs []cassette.Record, damage []*cassette.DamageError) {
	if len(damage) > 0 {
		return // the damage lines say what was lost, the end record with it
	}
	for i := range recs {
		if recs[i].K == cassette.KindEnd {
			return
		}
	}
	fmt.Fprintf(w, "rpctap %s: warning: %s was cut off (no end record: a killed recorder); %s ends with an end record after its last whole record\n", cmd, path, out)
}

// reportReadProblems reads the cassette at path through once, as cat does,
// and says on w what a reading command must say about it: one warning line
// when it ends early (no end record: a killed recorder), one line per
// damaged range, then an exit-4 error when it was damaged. view --dump uses
// it: the viewer shows unreadable rows but a script reads only its status.
func reportReadProblems(cmd, path string, w io.Writer) error {
	rd, err := cassette.Open(path)
	if err != nil {
		return Inputf("%s: %s: %v", cmd, path, describeCassetteErr(err))
	}
	defer rd.Close()
	var damage []*cassette.DamageError
	for {
		_, err := rd.Next()
		if err == nil {
			continue
		}
		var de *cassette.DamageError
		var te *cassette.TruncatedError
		switch {
		case errors.As(err, &de):
			damage = append(damage, de)
			if !de.ToEnd {
				continue
			}
		case errors.As(err, &te):
			fmt.Fprintf(w, "rpctap %s: warning: %s is %v (no end record: a killed recorder); showed every complete record\n", cmd, path, te)
		case err != io.EOF:
			return Inputf("%s: %s: %v", cmd, path, err)
		}
		break
	}
	return damageExit(cmd, path, damage, w)
}

// sameFile reports whether a and b name the same existing file (through
// symlinks, hard links or another spelling of the path).
func sameFile(a, b string) bool {
	if abs(a) == abs(b) {
		return true
	}
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}
