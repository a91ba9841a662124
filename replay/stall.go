package replay

import (
	"fmt"
	"strings"
	"time"
)

// A fake child stalls when it holds a recorded frame back because a parent
// frame recorded before it has not matched, while the parent, idle, waits
// for that frame (it sent something close instead, which was refused, and
// went on). Nothing in the session says why; so, once the parent has been
// idle for stallDelay, the replay says so on its report writer, once per
// recorded frame it waits for: the frame held back, the one it waits for,
// and the nearest live frame that matched nothing while it waited, with
// their first difference.
//
// An idle parent that has every answer it asked for is not a stall: the
// report needs evidence that the parent moved on without the frame waited
// for (a live frame that matched nothing while the replay waited there, or
// a later recorded parent frame matched out of order).

// stallDelay is how long the parent must be idle before a stall is said.
const stallDelay = 500 * time.Millisecond

// maxMisses bounds the live frames kept for a stall report (and their
// bytes: a frame over maxMissBytes is not kept).
const (
	maxMisses    = 8
	maxMissBytes = 1 << 20
)

// miss is a live frame that matched no recorded one, and the recorded step
// the replay was waiting at when it came.
type miss struct {
	f    *Frame
	wait int // e.next when it came
}

// noteMiss keeps f for a stall report (child role).
func (e *engine) noteMiss(f *Frame) {
	if e.role != roleChild || len(f.Raw) > maxMissBytes {
		return
	}
	if len(e.misses) == maxMisses {
		copy(e.misses, e.misses[1:])
		e.misses = e.misses[:maxMisses-1]
	}
	e.misses = append(e.misses, miss{f: f, wait: e.next})
}

// stalled returns the recorded step the replay waits for and the frame it
// holds back because of it, when the session looks stalled (see above);
// nil when not.
func (e *engine) stalled() (waitFor, held *estep) {
	if e.role != roleChild || e.liveEOF || e.o.report == nil || e.next >= e.end() {
		return nil, nil
	}
	w := e.at(e.next)
	if !w.theirs || w.done || w.waived || w.optional || w.kind != stepFrame || e.stallSaid[w.idx] {
		return nil, nil
	}
	evidence := false
	for _, m := range e.misses {
		if m.wait == e.next {
			evidence = true
		}
	}
	// The frame held back: the first answer to a request the parent sent
	// (it waits for that one), else the first frame the replay would send.
	var first *estep
	for i := e.next + 1; e.load(i, true) && i < e.next+e.o.window*4; i++ {
		st := e.at(i)
		if st.theirs && st.done {
			evidence = true
		}
		if !st.mine || st.kind != stepFrame || st.done {
			continue
		}
		if first == nil {
			first = st
		}
		if st.pair != nil && st.pair.done {
			held = st
			break
		}
	}
	if held == nil {
		held = first
	}
	if !evidence || held == nil {
		return nil, nil
	}
	return w, held
}

// stallWait returns how long until a stall is to be said (0: now), or -1
// when the session does not look stalled.
func (e *engine) stallWait(now time.Time) time.Duration {
	if w, _ := e.stalled(); w == nil {
		return -1
	}
	return max(stallDelay-now.Sub(e.lastLive), 0)
}

// sayStall reports a stall once the parent has been idle long enough.
func (e *engine) sayStall(now time.Time) {
	if now.Sub(e.lastLive) < stallDelay {
		return
	}
	w, held := e.stalled()
	if w == nil {
		return
	}
	if e.stallSaid == nil {
		e.stallSaid = map[int]bool{}
	}
	e.stallSaid[w.idx] = true
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s: record #%d (%s %s) is held back: it is due once the parent sends record #%d (%s %s), which has not matched\n",
		e.o.prog, e.name, held.frame.Record, held.frame.Kind, held.frame.Method, w.frame.Record, w.frame.Kind, w.frame.Method)
	fmt.Fprintf(&b, "  waiting for: %s\n", showFrame(w.frame))
	var near *Frame
	score := 0
	for _, m := range e.misses {
		if m.f.Norm == nil {
			continue
		}
		s := diffScore(e.norm(w), m.f.Norm)
		if !sameCall(m.f, w.frame) {
			s += 1 << 20 // another call only when no frame of the same call came
		}
		if near == nil || s <= score {
			near, score = m.f, s
		}
	}
	if near == nil {
		b.WriteString("  the parent sent nothing that matched no recorded frame meanwhile\n")
	} else {
		fmt.Fprintf(&b, "  nearest live frame: %s %s %s\n", near.Kind, near.Method, showFrame(near))
		if d := diffValues(e.norm(w), near.Norm, 0); len(d) > 0 {
			more := ""
			if len(d) > 1 {
				more = fmt.Sprintf(" (+%d more)", len(d)-1)
			}
			fmt.Fprintf(&b, "  first difference (recorded -> live): %s%s\n", d[0], more)
		}
	}
	e.o.report.Write([]byte(b.String()))
}
