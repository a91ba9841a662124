package viewer

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"

	"github.com/rpctap/rpctap/cassette"
	"github.com/rpctap/rpctap/internal/intercept"
)

// Control is the control socket of a live intercepting session (`rpctap
// record --intercept`) as the viewer uses it: *intercept.Client, attached
// (the breakpoints the viewer sets go when it does, and what they hold is
// forwarded).
type Control interface {
	List() (intercept.State, error)
	Break(expr string) (int, error)
	Unbreak(n int) error
	Forward(n int) error
	Drop(n int) error
	Cancel(n int) error
	Edit(n int, frame []byte) error
	Inject(to cassette.Dir, frame []byte, wait time.Duration) (intercept.Injection, *intercept.Answer, error)
}

// ControlPoll is how often an attached viewer asks the session what it
// holds (and redraws, so hold times tick).
const ControlPoll = 250 * time.Millisecond

// heldState is the held pane's state, touched only on the UI goroutine.
type heldState struct {
	pane    *tview.TextView
	open    bool // the pane is shown and has the keys
	shown   bool // it is in the layout
	st      intercept.State
	err     error
	sel     int // the selected held frame
	everHad bool
	editing int // the held frame the edit line is for
}

func (a *App) buildHeldPane() {
	a.hs.pane = tview.NewTextView().SetDynamicColors(true).SetWrap(false)
	a.hs.pane.SetBorder(true).SetTitleAlign(tview.AlignLeft)
}

// RefreshControl asks the session for its held frames and breakpoints in
// the background (a counted job: Settle waits for it).
func (a *App) RefreshControl() {
	c := a.opts.Control
	if c == nil {
		return
	}
	a.spawn(func() {
		st, err := c.List()
		a.post(func() { a.controlState(st, err) })
	})
}

// pollControl refreshes the held pane every ControlPoll while the App runs.
func (a *App) pollControl() {
	t := time.NewTicker(ControlPoll)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			st, err := a.opts.Control.List()
			a.post(func() { a.controlState(st, err) })
		case <-a.quit:
			return
		}
	}
}

func (a *App) controlState(st intercept.State, err error) {
	a.hs.st, a.hs.err = st, err
	if a.hs.sel >= len(st.Held) {
		a.hs.sel = max(len(st.Held)-1, 0)
	}
	if len(st.Held) > 0 && !a.hs.everHad {
		// The first held frame opens the pane: a held frame must never
		// hang the session unnoticed.
		a.hs.everHad = true
		a.showHeld(true)
	}
	a.renderHeld()
}

// showHeld opens or closes the held pane.
func (a *App) showHeld(open bool) {
	a.hs.open = open
	if open && !a.hs.shown {
		a.body.AddItem(a.hs.pane, 9, 0, false)
		a.hs.shown = true
	} else if !open && a.hs.shown {
		a.body.RemoveItem(a.hs.pane)
		a.hs.shown = false
	}
	a.renderHeld()
}

// heldSummary is the title's note: how many frames are held and the
// oldest hold.
func (a *App) heldSummary() string {
	if a.opts.Control == nil {
		return ""
	}
	if a.hs.err != nil {
		return " · [red]control: " + tview.Escape(a.hs.err.Error()) + "[-]"
	}
	n := len(a.hs.st.Held)
	if n == 0 {
		return fmt.Sprintf(" · attached, %d breakpoints (H)", len(a.hs.st.Breakpoints))
	}
	oldest := a.hs.st.Held[0].Since
	for _, h := range a.hs.st.Held {
		if h.Since.Before(oldest) {
			oldest = h.Since
		}
	}
	return fmt.Sprintf(" · [red::b]%d held, oldest %s[-::-] (H)", n, holdTime(time.Since(oldest)))
}

func holdTime(d time.Duration) string {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// renderHeld draws the held pane (called on every draw: hold times tick).
func (a *App) renderHeld() {
	if !a.hs.shown {
		return
	}
	var b strings.Builder
	for i, h := range a.hs.st.Held {
		mark := "  "
		if i == a.hs.sel && a.hs.open {
			mark = "[yellow::b]▸[-::-] "
		}
		method := h.Method
		if method == "" {
			method = "-"
		}
		if h.Kind == "response" {
			method += " (response)"
		}
		frame := h.Frame
		if len(frame) > 160 {
			frame = frame[:160] + "…"
		}
		fmt.Fprintf(&b, "%s%d %s %s  held %s  bp %d  %s\n", mark, h.N, arrowOf(h.Dir), tview.Escape(method),
			holdTime(time.Since(h.Since)), h.Breakpoint, tview.Escape(frame))
	}
	if len(a.hs.st.Held) == 0 {
		b.WriteString("[gray]nothing held[-]\n")
	}
	var bps []string
	for _, bp := range a.hs.st.Breakpoints {
		bps = append(bps, fmt.Sprintf("%d %s", bp.N, bp.Expr))
	}
	if len(bps) > 0 {
		b.WriteString("[teal]breakpoints: " + tview.Escape(strings.Join(bps, " · ")) + "[-]\n")
	}
	if n := len(a.hs.st.Answers); n > 0 {
		an := a.hs.st.Answers[n-1]
		fmt.Fprintf(&b, "[green]answer to inject %d: %s[-]\n", an.Inject, tview.Escape(an.Frame))
	}
	a.hs.pane.SetText(b.String())
	a.hs.pane.SetTitle(" held frames: f forward  A all  x drop  c cancel  e edit  E $EDITOR  b break  u unbreak  i inject  H close ")
}

func arrowOf(d cassette.Dir) string {
	if d == cassette.DirIn {
		return "→"
	}
	return "←"
}

// heldKey handles a key while the held pane has the keys; nil when it took
// it.
func (a *App) heldKey(ev *tcell.EventKey) *tcell.EventKey {
	held := a.hs.st.Held
	cur := func() (intercept.Held, bool) {
		if a.hs.sel < len(held) {
			return held[a.hs.sel], true
		}
		a.msg = "no held frame"
		return intercept.Held{}, false
	}
	switch ev.Key() {
	case tcell.KeyDown:
		a.hs.sel = min(a.hs.sel+1, max(len(held)-1, 0))
		a.renderHeld()
		return nil
	case tcell.KeyUp:
		a.hs.sel = max(a.hs.sel-1, 0)
		a.renderHeld()
		return nil
	case tcell.KeyRune:
	default:
		return ev
	}
	switch ev.Rune() {
	case 'j':
		return a.heldKey(tcell.NewEventKey(tcell.KeyDown, 0, tcell.ModNone))
	case 'k':
		return a.heldKey(tcell.NewEventKey(tcell.KeyUp, 0, tcell.ModNone))
	case 'H':
		a.showHeld(false)
	case 'f':
		if h, ok := cur(); ok {
			a.control(fmt.Sprintf("frame %d forwarded", h.N), func(c Control) error { return c.Forward(h.N) })
		}
	case 'A':
		a.control("every held frame forwarded", func(c Control) error { return c.Forward(0) })
	case 'x':
		if h, ok := cur(); ok {
			a.control(fmt.Sprintf("frame %d dropped", h.N), func(c Control) error { return c.Drop(h.N) })
		}
	case 'c':
		if h, ok := cur(); ok {
			a.control(fmt.Sprintf("frame %d forwarded and cancelled", h.N), func(c Control) error { return c.Cancel(h.N) })
		}
	case 'e':
		if h, ok := cur(); ok {
			a.openInput("edit", fmt.Sprintf("edit frame %d (JSON): ", h.N), h.Frame)
			a.hs.editing = h.N
		}
	case 'E':
		if h, ok := cur(); ok {
			a.editExternal(h)
		}
	case 'b':
		a.openInput("break", "break on: ", "")
	case 'u':
		a.openInput("unbreak", "unbreak number: ", "")
	case 'i':
		a.openInput("inject", "inject (child|parent JSON): ", "child ")
	default:
		return ev
	}
	return nil
}

// editExternal edits held frame h in $VISUAL or $EDITOR (the terminal is
// handed to the editor meanwhile) and sends what was saved instead.
func (a *App) editExternal(h intercept.Held) {
	var b []byte
	var err error
	run := func() { b, err = intercept.EditInEditor(h.Frame, os.Stdin, os.Stdout, os.Stderr) }
	if a.running.Load() {
		a.tv.Suspend(run)
	} else {
		run() // headless (tests): no terminal to hand over
	}
	if err != nil {
		a.msg = "edit: " + err.Error()
		return
	}
	a.control(fmt.Sprintf("frame %d edited and forwarded", h.N), func(c Control) error { return c.Edit(h.N, b) })
}

// control runs one operation on the session in the background, says how
// it went in the status line, and refreshes the pane.
func (a *App) control(done string, op func(Control) error) {
	c := a.opts.Control
	a.spawn(func() {
		err := op(c)
		st, lerr := c.List()
		a.post(func() {
			if err != nil {
				a.msg = err.Error()
			} else {
				a.msg = done
			}
			a.controlState(st, lerr)
		})
	})
}

// controlInput acts on the held pane's input line; false when kind is not
// one of its own.
func (a *App) controlInput(kind, text string) bool {
	switch kind {
	case "break":
		a.control("breakpoint set", func(c Control) error {
			_, err := c.Break(text)
			return err
		})
	case "unbreak":
		n, err := strconv.Atoi(text)
		if err != nil {
			a.msg = fmt.Sprintf("unbreak: %q is not a breakpoint number", text)
			return true
		}
		a.control(fmt.Sprintf("breakpoint %d removed", n), func(c Control) error { return c.Unbreak(n) })
	case "edit":
		n := a.hs.editing
		a.control(fmt.Sprintf("frame %d edited and forwarded", n), func(c Control) error { return c.Edit(n, []byte(text)) })
	case "inject":
		side, frame, _ := strings.Cut(text, " ")
		to := cassette.DirIn
		switch side {
		case "child":
		case "parent":
			to = cassette.DirOut
		default:
			a.msg = "inject: start with child or parent, then the JSON"
			return true
		}
		a.control("injected toward the "+side, func(c Control) error {
			_, _, err := c.Inject(to, []byte(frame), 5*time.Second)
			return err
		})
	default:
		return false
	}
	return true
}
