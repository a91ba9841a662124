package intercept

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/filterexpr"
	"github.com/rpctap/rpctap/internal/framing"
	"github.com/rpctap/rpctap/internal/rewrite"
	"github.com/rpctap/rpctap/protocol"
	"github.com/rpctap/rpctap/tap"
)

// Writer is one direction of an intercepting tap: the pump writes each
// chunk it read to it, and it forwards frames (holding, changing or
// dropping the ones the session says to).
//
// Two paths, picked per chunk by a test on state the Writer owns:
//
//   - pass-through, while no breakpoint is set and no injected request
//     awaits its answer: the chunk is forwarded whole, at once, as the
//     plain tap would; the splitter follows along only to know where
//     frames begin and which requests are in flight;
//   - frame by frame otherwise: the splitter cuts the chunk into frames,
//     each is tested, and runs of frames that pass go out in one write.
//     Bytes of a frame not yet complete wait in the splitter until it is.
//
// A frame whose start went out on the pass-through path (ahead) is never
// held: what is on the wire cannot be taken back.
type Writer struct {
	s       *Session
	dir     cassette.Dir
	pdir    protocol.Dir
	forward func([]byte) error

	mu    sync.Mutex // forward calls, queue, split state
	split *framing.Splitter
	ahead int    // bytes of the splitter's pending frame already forwarded
	part  bool   // inside an over-long frame that comes in parts
	run   []byte // frames that passed, not yet forwarded
	queue []queued
	err   error // forwarding failed: the reader went away
	dead  bool  // a kill fault fired: nothing more of this stream is forwarded
}

func newWriter(s *Session, st tap.Stream, forward func([]byte) error) *Writer {
	d, pd := cassette.DirIn, protocol.FromParent
	if st == tap.Stdout {
		d, pd = cassette.DirOut, protocol.FromChild
	}
	return &Writer{s: s, dir: d, pdir: pd, forward: forward, split: framing.NewSplitter(framing.Auto, 0)}
}

// Write implements io.Writer for the pump: it returns when every byte of p
// was forwarded, held and decided, or kept for a frame still incomplete.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	if w.dead {
		return len(p), nil // the child is being killed
	}
	if !w.s.intercepting(w.dir) && w.ahead == w.split.Pending() {
		err := w.send(p)
		w.split.Feed(p, w.follow)
		w.ahead = w.split.Pending()
		if err == nil && w.ahead == 0 {
			err = w.flushQueue()
		}
		return len(p), err
	}
	w.split.Feed(p, w.frame)
	err := w.flushRun()
	if err == nil {
		err = w.flushQueue()
	}
	return len(p), err
}

// Flush forwards a last frame the stream ended without completing.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.split.End(w.frame)
	if err := w.flushRun(); err != nil {
		return err
	}
	return w.flushQueue()
}

// StdinEnded is told by the tap that the parent closed stdin (the Writer of
// stdin only), before the EOF goes on to the child: the frames held now,
// in either direction, are forwarded first.
func (w *Writer) StdinEnded() { w.s.ReleaseHeld() }

// send forwards b, remembering the first failure.
func (w *Writer) send(b []byte) error {
	if w.err != nil {
		return w.err
	}
	if err := w.forward(b); err != nil {
		w.err = err
	}
	return w.err
}

func (w *Writer) flushRun() error {
	if len(w.run) == 0 {
		return w.err
	}
	err := w.send(w.run)
	w.run = w.run[:0]
	return err
}

// queued is an injected frame waiting for a frame boundary, and the event
// that marks it.
type queued struct {
	b  []byte
	ev *tap.Event
}

// flushQueue sends injected frames waiting for a frame boundary; call it
// at one.
func (w *Writer) flushQueue() error {
	for len(w.queue) > 0 && w.err == nil {
		q := w.queue[0]
		w.queue = w.queue[1:]
		if q.ev != nil {
			w.s.note(*q.ev) // before the frame it marks (see frame)
		}
		w.send(q.b)
	}
	return w.err
}

// inject sends a whole frame (already framed) at the next frame boundary,
// then records ev.
func (w *Writer) inject(b []byte, ev *tap.Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.queue = append(w.queue, queued{b, ev})
	if w.ahead > 0 || len(w.run) > 0 {
		return nil
	}
	return w.flushQueue()
}

// follow is the splitter's callback on the pass-through path: the bytes
// are already forwarded; keep track of requests in flight.
func (w *Writer) follow(hdr, payload []byte, eol string, part bool) {
	n := len(hdr) + len(payload) + len(eol)
	if w.ahead > 0 {
		w.ahead -= min(n, w.ahead)
	}
	if part || w.part {
		w.part = part
		return
	}
	w.s.classify(w.pdir, payload)
	if w.dir == cassette.DirIn && w.s.isDAP() {
		w.s.dapParentFrame(payload) // offset 0 here: notes the parent's seq
	}
}

// frame is the splitter's callback on the frame-by-frame path.
func (w *Writer) frame(hdr, payload []byte, eol string, part bool) {
	if w.ahead > 0 || part || w.part {
		// Part of a frame that started on the wire already, or of one
		// too long to hold whole: it goes as it is.
		wire := append(append(append([]byte(nil), hdr...), payload...), eol...)
		skip := min(w.ahead, len(wire))
		w.ahead -= skip
		w.run = append(w.run, wire[skip:]...)
		if !part && !w.part {
			w.s.classify(w.pdir, payload)
		}
		w.part = part
		return
	}
	info, method := w.s.classify(w.pdir, payload)
	if inj, ok := w.s.takeAnswer(w.dir, info, payload); ok {
		w.s.note(tap.Event{Kind: cassette.EventIntercept, Stream: w.stream(), Action: string(ActTake),
			Breakpoint: fmt.Sprintf("inject %d", inj), Original: append([]byte(nil), payload...)})
		return
	}
	r := filterexpr.Frame(w.dir, payload, string(info.Kind), info.Method, info.ID)
	mi := filterexpr.MatchInfo{Method: method, Protocol: w.s.Protocol()}
	var rewritten *tap.Event
	if mi.Protocol == "dap" {
		orig := append([]byte(nil), payload...)
		var out []byte
		var changed bool
		if w.dir == cassette.DirOut {
			// The parent's frames are renumbered when they are sent
			// (dapSend), after any hold: an injection made while one is
			// held goes out before it with a lower seq.
			out, changed = w.s.dapChildFrame(payload)
		}
		if changed {
			rewritten = &tap.Event{Kind: cassette.EventIntercept, Stream: w.stream(), Action: string(ActRewrite),
				Breakpoint: "dap seq renumbering", Original: orig}
			payload = out
			if hdr != nil {
				hdr = framing.WithLength(hdr, len(payload))
			}
			r.SetPayload(payload)
		}
	}
	if len(w.s.opt.Rewrite) > 0 {
		if out, ch := w.s.opt.Rewrite.Apply(&r, mi); ch != nil {
			ev := &tap.Event{Kind: cassette.EventIntercept, Stream: w.stream(), Action: string(ActRewrite),
				Breakpoint: strings.Join(ch.Rules, "; "), Original: ch.Original}
			if rewritten != nil {
				ev.Breakpoint = rewritten.Breakpoint + "; " + ev.Breakpoint
				ev.Original = rewritten.Original
			}
			rewritten = ev
			payload = out
			if hdr != nil {
				hdr = framing.WithLength(hdr, len(payload))
			}
			r.SetPayload(payload)
		}
	}
	if hit := w.s.opt.Faults.Apply(mi.Protocol, w.dir, payload, faultKind(info, payload), method, info.ID); hit != nil {
		w.fault(hit, hdr, payload, eol, rewritten)
		return
	}
	bp := w.s.match(&r, mi)
	if bp == nil {
		hdr, payload, rewritten = w.dapSend(hdr, payload, rewritten)
		if rewritten != nil {
			w.flushRun()
			w.s.note(*rewritten) // marks the frame that follows
			w.appendFrame(hdr, payload, eol)
			w.flushRun()
			return
		}
		w.appendFrame(hdr, payload, eol)
		return
	}
	// Held: what passed before it goes now, then the pump waits here.
	w.flushRun()
	h := &Held{Dir: w.dir, Method: method, Kind: string(info.Kind), ID: info.ID, Frame: string(payload),
		Since: time.Now(), Breakpoint: bp.N, Expr: bp.Expr}
	w.mu.Unlock()
	v := w.s.hold(h)
	w.mu.Lock()
	// Injected frames that came while this one was held went out before
	// it (the stream was at a frame boundary).
	w.flushQueue()
	held := time.Since(h.Since)
	ev := tap.Event{Kind: cassette.EventIntercept, Stream: w.stream(), Action: string(v.act),
		HeldNs: int64(held), Breakpoint: fmt.Sprintf("%d %s", bp.N, bp.Expr)}
	if rewritten != nil {
		// One mark a frame: the hold's, which also keeps the frame as the
		// other side sent it, before the rewrite rules.
		ev.Breakpoint += "; rewrite: " + rewritten.Breakpoint
		ev.Original = rewritten.Original
	}
	// The event goes first: the recorder marks the next frame of this
	// stream with it and writes the event right after that frame (with
	// its record number), so a reader knows a frame's mark when it reads
	// the frame. A drop has no frame: its event stands alone.
	switch v.act {
	case ActDrop:
		if ev.Original == nil {
			ev.Original = append([]byte(nil), payload...)
		}
		w.s.note(ev)
	case ActEdit:
		if ev.Original == nil {
			ev.Original = append([]byte(nil), payload...)
		}
		if hdr != nil {
			hdr = framing.WithLength(hdr, len(v.payload))
		}
		payload = v.payload
		hdr, payload, _ = w.dapSend(hdr, payload, &ev)
		w.s.note(ev)
		w.appendFrame(hdr, payload, eol)
	default:
		hdr, payload, _ = w.dapSend(hdr, payload, &ev)
		w.s.note(ev)
		w.appendFrame(hdr, payload, eol)
	}
	w.flushRun()
	if v.after != nil {
		aev := tap.Event{Kind: cassette.EventIntercept, Stream: w.stream(), Action: string(ActInject),
			Breakpoint: fmt.Sprintf("cancel of held frame %d", h.N)}
		w.queue = append(w.queue, queued{w.framedLocked(v.after), &aev})
		w.flushQueue()
	}
	w.s.tell(fmt.Sprintf("frame %d: %s after %s", h.N, v.act, held.Round(time.Millisecond)))
}

// dapSend renumbers a frame of the parent's in a DAP session once requests
// were injected (see dapState), as it is sent; ev, the event that marks the
// frame (nil: none yet), keeps the original and names the renumbering.
func (w *Writer) dapSend(hdr, payload []byte, ev *tap.Event) ([]byte, []byte, *tap.Event) {
	if w.dir != cassette.DirIn || !w.s.isDAP() {
		return hdr, payload, ev
	}
	out, changed := w.s.dapParentFrame(payload)
	if !changed {
		return hdr, payload, ev
	}
	if ev == nil {
		ev = &tap.Event{Kind: cassette.EventIntercept, Stream: w.stream(), Action: string(ActRewrite), Breakpoint: "dap seq renumbering"}
	} else {
		ev.Breakpoint += "; dap seq renumbering"
	}
	if ev.Original == nil {
		ev.Original = append([]byte(nil), payload...)
	}
	if hdr != nil {
		hdr = framing.WithLength(hdr, len(out))
	}
	return hdr, out, ev
}

func (w *Writer) appendFrame(hdr, payload []byte, eol string) {
	w.run = append(w.run, hdr...)
	w.run = append(w.run, payload...)
	w.run = append(w.run, eol...)
}

func (w *Writer) stream() tap.Stream {
	if w.dir == cassette.DirIn {
		return tap.Stdin
	}
	return tap.Stdout
}

// framed wraps payload in this stream's framing: a Content-Length header
// when the stream uses one, else a newline.
func (w *Writer) framed(payload []byte) []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.framedLocked(payload)
}

// framedLocked is framed with w.mu held.
func (w *Writer) framedLocked(payload []byte) []byte {
	if w.split.Mode() == framing.ContentLength {
		return append(framing.WithLength(nil, len(payload)), payload...)
	}
	return append(append([]byte(nil), payload...), '\n')
}

// compactJSON checks that b is one JSON value and returns it on one line.
func compactJSON(b []byte) ([]byte, error) {
	var out bytes.Buffer
	if err := json.Compact(&out, bytes.TrimSpace(b)); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if !json.Valid(out.Bytes()) {
		return nil, fmt.Errorf("not one JSON value")
	}
	return out.Bytes(), nil
}

// faultKind is a frame's kind as fault rules name it: request, response,
// notification or event (a handshake frame is a request or a response).
func faultKind(info protocol.Info, payload []byte) string {
	if info.Kind != protocol.Handshake {
		return string(info.Kind)
	}
	var m struct {
		Method *string `json:"method"`
	}
	if json.Unmarshal(payload, &m) == nil && m.Method != nil {
		return string(protocol.Request)
	}
	return string(protocol.Response)
}

// fault does what a fault rule that fired on a frame says (record
// --fault), in the stream's framing, and records it: the frame as the
// other side got it, marked as 1.2 marks an intercepted frame (a changed
// frame with icpt rewrite and its original, a dropped one as a drop with
// its original, a duplicate as an injected copy) and a fault event with
// the rule (ahead of a frame sent, after a drop), so that each side's
// record is what it received and the sender's own frame is kept. rewritten is the mark of rewrite rules (or
// DAP renumbering) that changed the frame already, nil when none did.
// Called with w.mu held; a delay sleeps with it held, so frames behind
// this one in its direction wait, as on the wire.
func (w *Writer) fault(hit *rewrite.FaultHit, hdr, payload []byte, eol string, rewritten *tap.Event) {
	msg := hit.Msg(w.dir)
	if w.s.opt.Faulted != nil {
		w.s.opt.Faulted(msg)
	}
	orig := append([]byte(nil), payload...)
	bp := "fault " + hit.Rule
	if rewritten != nil {
		orig, bp = rewritten.Original, rewritten.Breakpoint+"; "+bp
	}
	fev := tap.Event{Kind: cassette.EventFault, Stream: w.stream(), Msg: msg}
	switch hit.Action {
	case "drop", "kill":
		w.flushRun()
		w.s.note(tap.Event{Kind: cassette.EventIntercept, Stream: w.stream(), Action: string(ActDrop), Breakpoint: bp, Original: orig})
		w.s.note(fev)
		if hit.Action == "kill" {
			w.dead = true
			if w.s.opt.Kill != nil {
				w.s.opt.Kill()
			}
		}
		return
	case "truncate", "corrupt", "error":
		payload = hit.Payload
		if hdr != nil {
			hdr = framing.WithLength(hdr, len(payload))
		}
		rewritten = &tap.Event{Kind: cassette.EventIntercept, Stream: w.stream(), Action: string(ActRewrite), Breakpoint: bp, Original: orig}
	case "delay":
		time.Sleep(hit.Delay)
	}
	hdr, payload, rewritten = w.dapSend(hdr, payload, rewritten)
	w.flushRun()
	// The fault event goes ahead of the frame it changed: a parent that
	// SIGKILLs rpctap as soon as it has read that frame (the ACP SDK
	// example client does) would otherwise leave a cassette holding the
	// changed frame and no word of the fault (seen in a CI run).
	w.s.note(fev)
	if rewritten != nil {
		w.s.note(*rewritten) // marks the frame that follows
	}
	if hit.Action == "split" {
		// The frame goes in two writes 50 ms apart (a reader that
		// takes a read for a frame breaks).
		wire := append(append(append([]byte(nil), hdr...), payload...), eol...)
		h := len(wire) / 2
		w.send(wire[:h])
		time.Sleep(50 * time.Millisecond)
		w.send(wire[h:])
	} else {
		w.appendFrame(hdr, payload, eol)
		w.flushRun()
	}
	if hit.Action == "duplicate" {
		w.s.note(tap.Event{Kind: cassette.EventIntercept, Stream: w.stream(), Action: string(ActInject), Breakpoint: bp})
		w.appendFrame(hdr, payload, eol)
		w.flushRun()
	}
}
