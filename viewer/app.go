package viewer

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
	"github.com/rpctap/rpctap/cassette"
)

// Options configure an App.
type Options struct {
	Name   string       // shown in the title bar (the cassette's path)
	Screen tcell.Screen // where to draw; tests pass a SimulationScreen
	// Follow starts in follow mode: new records are read as they are
	// written and the list sticks to the bottom until the user moves.
	Follow bool
	// Follower, when set, is started by Run and tells the App about new
	// records. Without one, follow mode polls every PollInterval.
	Follower *Follower
	// WriteDir is where `w` writes frames (default: the current directory).
	WriteDir string
}

// selectedBG is the background of the selected row.
const selectedBG = tcell.ColorDarkSlateGray

type mode uint8

const (
	modeList mode = iota
	modeTranscript
	modeStats
)

// App is the inspector. Build it with New, then Run it (a terminal), or
// drive it headless with Key and Draw (tests).
type App struct {
	opts   Options
	store  *Store
	tv     *tview.Application
	screen tcell.Screen

	// widgets
	root    *tview.Pages
	title   *tview.TextView
	table   *tview.Table
	content *listContent
	detail  *tview.TextView
	body    *tview.Flex
	main    *tview.Pages // "list", "text"
	text    *tview.TextView
	bottom  *tview.Pages // "status", "input"
	status  *tview.TextView
	input   *tview.InputField
	help    *tview.TextView

	// state, touched only on the UI goroutine
	view       *View
	mode       mode
	detailOpen bool
	helpOpen   bool
	inputKind  string // "filter", "search", "write", "" when closed
	follow     bool
	sticky     bool
	dimAux     bool
	search     *Filter
	searchBack bool
	searching  bool
	history    []int // record positions jumped from (p), for backspace
	msg        string
	selecting  bool // a programmatic selection is under way
	lastW      int  // the screen size at the last draw (a resize re-shows the selection)
	lastH      int

	// background work
	jobs       atomic.Int64
	updates    chan func()
	running    atomic.Bool
	quit       chan struct{}
	quitOnce   sync.Once
	scanning   atomic.Bool
	scanAgain  atomic.Bool
	fillGen    atomic.Int64
	searchGen  atomic.Int64
	followerOn atomic.Bool

	trMu     sync.Mutex
	tr       *Transcript
	trFrom   int // the window of records folded: [trFrom, trEnd), trEnd -1 = to the tail
	trNext   int
	trEnd    int
	trGen    int
	trActive atomic.Bool // the window reaches the tail: new records extend it
}

// New builds the App over store. It does not start anything.
func New(store *Store, opts Options) *App {
	a := &App{opts: opts, store: store, screen: opts.Screen, updates: make(chan func(), 4096),
		quit: make(chan struct{}), view: NewView(Filter{}), follow: opts.Follow, sticky: opts.Follow, dimAux: false}
	a.tv = tview.NewApplication()
	if a.screen != nil {
		a.tv.SetScreen(a.screen)
	}
	a.build()
	if a.follow {
		a.selectRow(a.lastRow())
	} else {
		a.selectRow(1)
	}
	a.kickScan()
	a.refreshStatus()
	return a
}

func (a *App) build() {
	a.title = tview.NewTextView().SetDynamicColors(true).SetWrap(false)
	a.title.SetBackgroundColor(tcell.ColorNavy)

	a.content = newListContent(a.store, func() *View { return a.view }, func() bool { return a.dimAux })
	a.table = tview.NewTable().SetContent(a.content).SetFixed(1, 0).SetSelectable(true, false).SetSeparator(' ')
	a.table.SetSelectedStyle(tcell.StyleDefault.Background(selectedBG).Foreground(tcell.ColorWhite))
	a.table.SetSelectionChangedFunc(a.onSelectionChanged)

	a.detail = tview.NewTextView().SetDynamicColors(true).SetWrap(true).SetScrollable(true)
	a.detail.SetBorder(true).SetTitle(" detail ").SetTitleAlign(tview.AlignLeft)

	a.body = tview.NewFlex().SetDirection(tview.FlexRow).AddItem(a.table, 0, 1, true)

	a.text = tview.NewTextView().SetDynamicColors(true).SetWrap(true).SetScrollable(true)
	a.text.SetBorder(true).SetTitleAlign(tview.AlignLeft)

	a.main = tview.NewPages().AddPage("list", a.body, true, true).AddPage("text", a.text, true, false)

	a.status = tview.NewTextView().SetDynamicColors(true).SetWrap(false)
	a.input = tview.NewInputField().SetFieldBackgroundColor(tcell.ColorBlack)
	a.input.SetDoneFunc(a.onInputDone)
	a.bottom = tview.NewPages().AddPage("status", a.status, true, true).AddPage("input", a.input, true, false)

	layout := tview.NewFlex().SetDirection(tview.FlexRow).
		AddItem(a.title, 1, 0, false).
		AddItem(a.main, 0, 1, true).
		AddItem(a.bottom, 1, 0, false)

	a.help = tview.NewTextView().SetDynamicColors(true).SetScrollable(true).SetText(HelpText())
	a.help.SetBorder(true).SetTitle(" keys (? or Esc to close) ")
	overlay := tview.NewGrid().SetColumns(0, 80, 0).SetRows(0, 36, 0).AddItem(a.help, 1, 1, 1, 1, 0, 0, true)

	a.root = tview.NewPages().AddPage("main", layout, true, true).AddPage("help", overlay, true, false)
	a.tv.SetRoot(a.root, true).SetFocus(a.table)
	a.tv.SetInputCapture(a.handleKey)
	a.tv.SetBeforeDrawFunc(a.beforeDraw)
}

// beforeDraw runs on the UI goroutine before each draw: rows are rendered
// afresh (the analysis may have paired or marked some since), the columns
// are fitted to the width, and after a resize the selection is brought
// back into sight.
func (a *App) beforeDraw(scr tcell.Screen) bool {
	a.content.invalidate()
	a.refreshStatus()
	w, h := scr.Size()
	off, _ := a.table.GetOffset()
	a.content.fit(w, off, h)
	if w != a.lastW || h != a.lastH {
		resized := a.lastW != 0
		a.lastW, a.lastH = w, h
		if resized && a.mode == modeList {
			row, _ := a.table.GetSelection()
			a.selectRow(row) // tview clamps the offset to a new selection only
		}
	}
	return false
}

// Run shows the App on its screen until the user quits.
func (a *App) Run() error {
	a.running.Store(true)
	go a.pump()
	if a.follow {
		a.startFollower()
	}
	err := a.tv.Run()
	a.stop()
	return err
}

// Stop ends Run (safe from any goroutine).
func (a *App) Stop() {
	if a.running.Load() {
		a.tv.Stop()
	}
	a.stop()
}

func (a *App) stop() { a.quitOnce.Do(func() { close(a.quit) }) }

// StartFollowing starts reading new records (once) without Run, for an App
// driven headless: the follower hands them over through Settle.
func (a *App) StartFollowing() { a.startFollower() }

// startFollower starts reading new records (once).
func (a *App) startFollower() {
	if !a.followerOn.CompareAndSwap(false, true) {
		return
	}
	f := a.opts.Follower
	if f == nil {
		f = &Follower{Store: a.store, Interval: 250 * time.Millisecond}
	}
	go f.Run(a.quit, a.onNewRecords)
}

// pump hands work finished in the background to the UI goroutine.
func (a *App) pump() {
	for {
		select {
		case f := <-a.updates:
			a.tv.QueueUpdateDraw(f)
		case <-a.quit:
			return
		}
	}
}

// post runs f on the UI goroutine (and redraws). Background jobs call it;
// input handlers never do: they change state directly.
func (a *App) post(f func()) {
	select {
	case a.updates <- f:
	case <-a.quit:
	}
}

// spawn runs f in the background, counted so that tests can wait.
func (a *App) spawn(f func()) {
	a.jobs.Add(1)
	go func() {
		defer a.jobs.Add(-1)
		f()
	}()
}

// onNewRecords is the Follower's callback (its goroutine): records were added.
func (a *App) onNewRecords(added int) {
	a.post(func() { a.recordsAdded() })
}

// recordsAdded updates the UI after the store grew (UI goroutine).
func (a *App) recordsAdded() {
	a.content.invalidate()
	a.kickScan()
	if !a.view.All() {
		a.kickFill(a.view)
	}
	if a.trActive.Load() {
		a.kickTranscript()
	}
	a.keepPosition()
	if a.follow && a.store.Ended() {
		// The recording closed: nothing more will come.
		a.follow, a.sticky = false, false
		a.msg = "the recording ended"
	}
	a.refreshStatus()
}

// keepPosition sticks to the bottom when following and the user has not
// moved away; otherwise it keeps the selected record where it is.
func (a *App) keepPosition() {
	if a.sticky {
		a.selectRow(a.lastRow())
		return
	}
	off, _ := a.table.GetOffset()
	a.table.SetOffset(off, 0)
}

// kickScan brings the analysis up to date in the background.
func (a *App) kickScan() {
	if !a.scanning.CompareAndSwap(false, true) {
		a.scanAgain.Store(true)
		return
	}
	a.spawn(func() {
		for {
			last := time.Now()
			for !a.store.Scan(1 << 15) {
				if a.Done() {
					a.scanning.Store(false)
					return
				}
				if time.Since(last) > 200*time.Millisecond {
					last = time.Now()
					a.post(a.analysisProgress)
				}
			}
			a.post(a.analysisProgress)
			a.scanning.Store(false)
			if !a.scanAgain.Swap(false) || !a.scanning.CompareAndSwap(false, true) {
				return
			}
		}
	})
}

// analysisProgress refreshes what depends on the analysis (UI goroutine).
func (a *App) analysisProgress() {
	a.content.invalidate()
	if a.view.Filter().ViolationsOnly {
		a.kickFill(a.view)
	}
	switch a.mode {
	case modeStats:
		a.showStats()
	}
	if a.detailOpen {
		a.showDetail()
	}
	a.refreshStatus()
}

// kickFill fills a filtered view in the background.
func (a *App) kickFill(v *View) {
	gen := a.fillGen.Add(1)
	a.spawn(func() {
		last := time.Now()
		for a.fillGen.Load() == gen && !a.Done() {
			done := a.store.Fill(v, 1<<15)
			if done || time.Since(last) > 200*time.Millisecond {
				last = time.Now()
				a.post(func() {
					if a.view == v {
						a.content.invalidate()
						if a.sticky {
							a.selectRow(a.lastRow())
						}
					}
				})
			}
			if done || v.Filter().ViolationsOnly {
				return // a violations-only view is refilled as the analysis goes on
			}
		}
	})
}

// transcriptWindow is how many records on each side of the selection the
// transcript of a large cassette folds (its text is kept in memory).
const transcriptWindow = 20000

// openTranscript starts folding the window of records around the
// selection (the whole cassette when it is small), unless that window is
// already folded.
func (a *App) openTranscript() {
	n := a.store.Len()
	from, end := 0, -1
	if n > 2*transcriptWindow {
		sel := max(a.selectedPos(), 0)
		from = max(0, min(sel-transcriptWindow, n-2*transcriptWindow))
		if from+2*transcriptWindow < n {
			end = from + 2*transcriptWindow
		}
	}
	a.trMu.Lock()
	same := a.tr != nil && a.trFrom == from && a.trEnd == end
	if !same {
		a.tr, a.trFrom, a.trNext, a.trEnd = &Transcript{}, from, from, end
		a.trGen++
	}
	a.trMu.Unlock()
	a.trActive.Store(end < 0)
	if same {
		a.showTranscript()
		return
	}
	a.text.SetText("folding the transcript…")
	a.kickTranscript()
}

// kickTranscript folds the window's new records in the background.
func (a *App) kickTranscript() {
	a.trMu.Lock()
	gen := a.trGen
	a.trMu.Unlock()
	a.spawn(func() {
		for !a.Done() {
			a.trMu.Lock()
			if gen != a.trGen {
				a.trMu.Unlock()
				return
			}
			limit := a.store.Len()
			if a.trEnd >= 0 {
				limit = a.trEnd
			}
			if a.trNext >= limit {
				a.trMu.Unlock()
				break
			}
			recs, err := a.store.Records(a.trNext, min(scanBatch, limit-a.trNext))
			if err != nil || len(recs) == 0 {
				a.trMu.Unlock()
				break
			}
			for i := range recs {
				a.tr.Add(&recs[i])
			}
			a.trNext += len(recs)
			a.trMu.Unlock()
		}
		a.post(func() {
			if a.mode == modeTranscript {
				a.showTranscript()
			}
		})
	})
}

// ---- selection and movement

// lastRow is the table row of the last record (0 when there is none).
func (a *App) lastRow() int { return a.view.Len(a.store) }

// selectRow selects a table row without counting as a user move.
func (a *App) selectRow(row int) {
	if row < a.lastRow() {
		// Stop tview's table from tracking the end (it does so on its
		// own while every row fits); the selection decides the offset.
		off, _ := a.table.GetOffset()
		a.table.SetOffset(off, 0)
	}
	a.selecting = true
	a.table.Select(max(row, 1), 0)
	a.selecting = false
	a.selected()
}

func (a *App) onSelectionChanged(row, _ int) {
	if a.selecting {
		return
	}
	// The user moved: stick to the bottom only when they went there.
	a.sticky = a.follow && row >= a.lastRow()
	a.selected()
}

// selected updates what depends on the selected record.
func (a *App) selected() {
	if a.detailOpen {
		a.showDetail()
	}
}

// selectedPos is the record position of the selected row, -1 for none.
func (a *App) selectedPos() int {
	row, _ := a.table.GetSelection()
	if row < 1 {
		return -1
	}
	return a.view.At(row - 1)
}

// jumpTo selects record pos, clearing the filter when it hides pos.
func (a *App) jumpTo(pos int) {
	row, ok := a.view.RowOf(a.store, pos)
	if !ok {
		a.setView(NewView(Filter{}), pos)
		a.msg = fmt.Sprintf("filter cleared to show #%d", pos)
		return
	}
	a.sticky = a.follow && row+1 >= a.lastRow()
	a.selectRow(row + 1)
}

// setView switches to v and keeps (or moves to) record pos.
func (a *App) setView(v *View, pos int) {
	a.view = v
	a.content.invalidate()
	if !v.All() {
		if v.Filter().ViolationsOnly {
			a.store.Fill(v, 0) // from what the analysis found so far; it refills as it goes on
		} else {
			a.store.Fill(v, 4096) // the first screenful now, the rest in the background
			a.kickFill(v)
		}
	}
	if pos < 0 {
		a.selectRow(1)
		return
	}
	row, _ := v.RowOf(a.store, pos)
	a.selectRow(row + 1)
}

// ---- panes

func (a *App) openDetail() {
	if !a.detailOpen {
		a.detailOpen = true
		a.body.AddItem(a.detail, 0, 2, false)
		// The list gets shorter: keep the selection in sight.
		row, _ := a.table.GetSelection()
		a.selectRow(row)
	}
	a.showDetail()
}

func (a *App) closeDetail() {
	if a.detailOpen {
		a.detailOpen = false
		a.body.RemoveItem(a.detail)
		a.tv.SetFocus(a.table)
	}
}

func (a *App) showDetail() {
	pos := a.selectedPos()
	r, ok := a.store.Record(pos)
	if !ok {
		a.detail.SetText("(nothing selected)")
		return
	}
	row, _ := a.store.Row(pos)
	viols := a.store.Violations(pos)
	a.detail.SetText(RenderDetail(&r, row, viols, true)).ScrollToBeginning()
}

func (a *App) setMode(m mode) {
	a.mode = m
	switch m {
	case modeList:
		a.main.SwitchToPage("list")
		a.tv.SetFocus(a.table)
	case modeTranscript:
		a.main.SwitchToPage("text")
		a.text.SetTitle(" transcript (t or Esc: back to the list) ")
		a.tv.SetFocus(a.text)
		a.openTranscript()
	case modeStats:
		a.main.SwitchToPage("text")
		a.text.SetTitle(" statistics (s or Esc: back to the list) ")
		a.tv.SetFocus(a.text)
		a.showStats()
	}
}

func (a *App) showTranscript() {
	a.trMu.Lock()
	s := RenderTranscript(a.tr, true)
	if n := a.store.Len(); a.trFrom > 0 || a.trEnd >= 0 && a.trEnd < n {
		end := n
		if a.trEnd >= 0 {
			end = a.trEnd
		}
		s = fmt.Sprintf("[olive]records #%d to #%d, around the selection: a large cassette is folded a window at a time (move in the list and press t again)[-]\n\n", a.trFrom, end-1) + s
	}
	a.trMu.Unlock()
	a.text.SetText(s)
}

func (a *App) showStats() {
	st := a.store.Stats()
	s := RenderStats(st, true)
	if n := a.store.Len(); st.Records < n {
		s = fmt.Sprintf("[olive]analysed %d of %d records…[-]\n\n", st.Records, n) + s
	}
	a.text.SetText(s)
}

func (a *App) showHelp(on bool) {
	a.helpOpen = on
	if on {
		a.root.ShowPage("help")
		a.tv.SetFocus(a.help)
	} else {
		a.root.HidePage("help")
		a.restoreFocus()
	}
}

func (a *App) restoreFocus() {
	switch {
	case a.mode != modeList:
		a.tv.SetFocus(a.text)
	default:
		a.tv.SetFocus(a.table)
	}
}

// ---- the bottom line

func (a *App) openInput(kind, label, text string) {
	a.inputKind = kind
	a.input.SetLabel(label).SetText(text)
	a.bottom.SwitchToPage("input")
	a.tv.SetFocus(a.input)
}

func (a *App) closeInput() {
	a.inputKind = ""
	a.bottom.SwitchToPage("status")
	a.restoreFocus()
}

func (a *App) onInputDone(key tcell.Key) {
	kind, text := a.inputKind, strings.TrimSpace(a.input.GetText())
	a.closeInput()
	if key != tcell.KeyEnter {
		return
	}
	switch kind {
	case "filter":
		f, err := ParseFilter(text)
		if err != nil {
			a.msg = err.Error()
			return
		}
		a.setView(NewView(f), a.selectedPos())
	case "search":
		if text == "" {
			return
		}
		f, err := ParseFilter(text)
		if err != nil {
			a.msg = err.Error()
			return
		}
		a.search, a.searchBack = &f, false
		a.runSearch(false)
	case "write":
		a.writeFrame(text)
	}
}

// runSearch looks for the next (or previous) match in the background.
func (a *App) runSearch(back bool) {
	if a.search == nil {
		a.msg = "no search yet: press / first"
		return
	}
	f := *a.search
	gen := a.searchGen.Add(1)
	row, _ := a.table.GetSelection()
	from := row - 1
	v := a.view
	a.searching = true
	a.msg = "searching " + f.Expr + "…"
	a.spawn(func() {
		for a.searchGen.Load() == gen && !a.Done() {
			r, found, done := a.store.Search(v, &f, from, back, 1<<15)
			if !done {
				from = r
				continue
			}
			a.post(func() {
				if a.searchGen.Load() != gen || a.view != v {
					return
				}
				a.searching = false
				if !found {
					a.msg = "not found: " + f.Expr
					return
				}
				a.msg = fmt.Sprintf("found %s", f.Expr)
				a.sticky = a.follow && r+1 >= a.lastRow()
				a.selectRow(r + 1)
			})
			return
		}
	})
}

func (a *App) writeFrame(path string) {
	pos := a.selectedPos()
	r, ok := a.store.Record(pos)
	if !ok || path == "" {
		return
	}
	data := append([]byte(nil), Payload(&r)...)
	data = append(data, '\n')
	if err := os.WriteFile(path, data, 0o600); err != nil {
		a.msg = "write: " + err.Error()
		return
	}
	a.msg = fmt.Sprintf("wrote #%d (%d bytes) to %s", pos, len(data), path)
}

func (a *App) copyFrame() {
	pos := a.selectedPos()
	r, ok := a.store.Record(pos)
	if !ok {
		return
	}
	p := Payload(&r)
	if a.screen != nil {
		a.screen.SetClipboard(p)
	}
	a.msg = fmt.Sprintf("copied #%d (%d bytes) to the clipboard (OSC 52)", pos, len(p))
}

func (a *App) jumpPair() {
	pos := a.selectedPos()
	if pos < 0 {
		return
	}
	r, ok := a.store.Record(pos)
	if ok && r.K == cassette.KindViolation && r.Ref != 0 {
		a.history = append(a.history, pos)
		a.jumpTo(int(r.Ref))
		return
	}
	partner, ok := a.store.Pair(pos)
	if !ok {
		if a.store.Scanned() <= pos {
			a.msg = "still pairing… try again in a moment"
		} else {
			a.msg = fmt.Sprintf("#%d has no paired request or response", pos)
		}
		return
	}
	a.history = append(a.history, pos)
	a.jumpTo(partner)
}

func (a *App) back() {
	if len(a.history) == 0 {
		a.msg = "no jump to go back from"
		return
	}
	pos := a.history[len(a.history)-1]
	a.history = a.history[:len(a.history)-1]
	a.jumpTo(pos)
}

func (a *App) toggleFilter(mod func(f *Filter)) {
	f := a.view.Filter()
	f.Expr = ""
	mod(&f)
	a.setView(NewView(f), a.selectedPos())
}

func (a *App) refreshStatus() {
	name := a.opts.Name
	if name == "" {
		name = "(cassette)"
	}
	t := fmt.Sprintf(" [::b]rpctap view[::-] %s", tview.Escape(name))
	if p := a.store.Protocol(); p != "" {
		t += " · " + p
	}
	t += fmt.Sprintf(" · %d records", a.store.Len())
	if f := a.view.Filter(); f.Active() {
		t += fmt.Sprintf(" · [yellow]filter %s: %d rows[-]", tview.Escape(f.String()), a.view.Len(a.store))
		if done, n := a.view.Progress(), a.store.Len(); done < n {
			t += fmt.Sprintf(" [olive](filtering %d%%)[-]", done*100/max(n, 1))
		}
	}
	if a.follow {
		if a.sticky {
			t += " · [green]FOLLOW[-]"
		} else {
			t += " · [green]follow (paused: G)[-]"
		}
	}
	if tr := a.store.Truncated(); tr != "" && a.follow {
		// A cassette without its end record that is being followed is most
		// likely a recording in progress (it may also have been cut off:
		// the title does not claim either for sure).
		t += " · [green]recording (no end record yet)[-]"
	} else if tr != "" {
		t += " · [red]" + tview.Escape(tr) + "[-]"
	} else if !a.follow && !a.store.Ended() && a.store.Len() > 0 {
		t += " · [olive]no end record[-]"
	}
	if err := a.store.Err(); err != nil {
		t += " · [red]" + tview.Escape(err.Error()) + "[-]"
	}
	a.title.SetText(t)
	s := "[gray]? help  / search  f filter  Enter detail  p pair  t transcript  s stats  q quit[-]"
	if a.msg != "" {
		s = tview.Escape(a.msg)
	}
	if sc, n := a.store.Scanned(), a.store.Len(); sc < n {
		s += fmt.Sprintf("  [olive]analysing %d%%[-]", sc*100/max(n, 1))
	}
	a.status.SetText(s)
}

// ---- keys

// handleKey is the App's input capture. It changes state directly and
// never waits for the UI goroutine (it runs on it).
func (a *App) handleKey(ev *tcell.EventKey) *tcell.EventKey {
	if a.inputKind != "" {
		if ev.Key() == tcell.KeyCtrlU {
			a.input.SetText("")
			return nil
		}
		return ev // the input field has the keys
	}
	if ev.Key() != tcell.KeyRune || ev.Rune() != 'n' && ev.Rune() != 'N' {
		if !a.searching {
			a.msg = ""
		}
	}
	if a.helpOpen {
		switch {
		case ev.Key() == tcell.KeyEscape, ev.Key() == tcell.KeyRune && (ev.Rune() == '?' || ev.Rune() == 'q'):
			a.showHelp(false)
			return nil
		}
		return ev // scroll the help
	}
	detailFocused := a.detailOpen && a.tv.GetFocus() == a.detail
	switch ev.Key() {
	case tcell.KeyEscape:
		switch {
		case a.mode != modeList:
			a.setMode(modeList)
		case a.detailOpen:
			a.closeDetail()
		}
		return nil
	case tcell.KeyEnter:
		if a.mode == modeList && !detailFocused {
			a.openDetail()
			return nil
		}
	case tcell.KeyTab, tcell.KeyBacktab:
		if a.mode == modeList && a.detailOpen {
			if detailFocused {
				a.tv.SetFocus(a.table)
			} else {
				a.tv.SetFocus(a.detail)
			}
		}
		return nil
	case tcell.KeyBackspace, tcell.KeyBackspace2:
		a.back()
		return nil
	case tcell.KeyCtrlD, tcell.KeyCtrlU:
		if a.mode == modeList && !detailFocused {
			_, _, _, h := a.table.GetInnerRect()
			row, _ := a.table.GetSelection()
			step := max(h/2, 1)
			if ev.Key() == tcell.KeyCtrlU {
				step = -step
			}
			a.userSelect(min(max(row+step, 1), a.lastRow()))
			return nil
		}
	case tcell.KeyRune:
		return a.handleRune(ev, detailFocused)
	}
	return ev
}

// userSelect moves the selection as a user move.
func (a *App) userSelect(row int) {
	a.table.Select(row, 0) // fires onSelectionChanged as a user move
}

func (a *App) handleRune(ev *tcell.EventKey, detailFocused bool) *tcell.EventKey {
	switch ev.Rune() {
	case 'q':
		switch {
		case a.mode != modeList:
			a.setMode(modeList)
		case a.detailOpen:
			a.closeDetail()
		default:
			a.Stop()
		}
		return nil
	case 'Q':
		a.Stop()
		return nil
	case '?':
		a.showHelp(true)
		return nil
	case '/':
		a.openInput("search", "/", "")
		return nil
	case 'n', 'N':
		a.runSearch(ev.Rune() == 'N')
		return nil
	case 'f':
		a.openInput("filter", "filter: ", a.view.Filter().String())
		return nil
	case 'v':
		a.toggleFilter(func(f *Filter) { f.ViolationsOnly = !f.ViolationsOnly })
		return nil
	case 'c':
		a.toggleFilter(func(f *Filter) { f.HideChunks = !f.HideChunks })
		return nil
	case 'a':
		a.toggleFilter(func(f *Filter) { f.HideAux = !f.HideAux })
		return nil
	case 'd':
		a.dimAux = !a.dimAux
		a.content.invalidate()
		return nil
	case 't':
		if a.mode == modeTranscript {
			a.setMode(modeList)
		} else {
			a.setMode(modeTranscript)
		}
		return nil
	case 's':
		if a.mode == modeStats {
			a.setMode(modeList)
		} else {
			a.setMode(modeStats)
		}
		return nil
	case 'F':
		a.follow = !a.follow
		a.sticky = a.follow
		if a.follow {
			a.selectRow(a.lastRow())
			a.startFollower()
		}
		return nil
	}
	if a.mode != modeList {
		return ev // the text view scrolls with j/k/g/G
	}
	switch ev.Rune() {
	case 'p':
		a.jumpPair()
		return nil
	case 'y':
		a.copyFrame()
		return nil
	case 'w':
		if pos := a.selectedPos(); pos >= 0 {
			name := fmt.Sprintf("rpctap-frame-%d.json", pos)
			if a.opts.WriteDir != "" {
				name = a.opts.WriteDir + string(os.PathSeparator) + name
			}
			a.openInput("write", "write frame to: ", name)
		}
		return nil
	case ' ':
		if !detailFocused {
			return tcell.NewEventKey(tcell.KeyPgDn, 0, tcell.ModNone)
		}
	case 'b':
		if !detailFocused {
			return tcell.NewEventKey(tcell.KeyPgUp, 0, tcell.ModNone)
		}
	}
	return ev
}

// HelpText lists every key.
func HelpText() string {
	return `[yellow::b]Frame list[-:-:-]
  j k ↓ ↑          next / previous record
  g G Home End     first / last record (G at the bottom resumes follow)
  PgDn PgUp space b  page down / up;  Ctrl-D Ctrl-U  half a page
  Enter            open the detail pane (pretty JSON, violations)
  Tab              switch focus between the list and the detail pane
  Esc q            close the detail pane / go back;  q in the list quits
  p                jump to the paired request/response (violation: its frame)
  Backspace        jump back to where p came from
  y                copy the frame to the clipboard (OSC 52)
  w                write the frame to a file
  d                dim stderr lines and process events

[yellow::b]Filter and search[-:-:-]
  f                filter bar; words: in > out < m:METHOD v -chunks -aux
                   /REGEXP/ and free text (all must match); empty clears
  v                toggle violations only
  c                toggle hiding streamed chunks
  a                toggle hiding stderr, events and cassette records
  /                search (same words as the filter)
  n N              next / previous match

[yellow::b]Views[-:-:-]
  t                transcript: chunks folded into text per turn
  s                statistics: counts, latency p50/p90/p99/max, unanswered
  F                follow new records (like less +F)
  ?                this help
  Q Ctrl-C         quit
`
}

// ---- headless driving (tests, and callers without a terminal loop)

// Key handles one key as the running App would: the App's own keys first,
// then the focused widget.
func (a *App) Key(ev *tcell.EventKey) {
	if e := a.handleKey(ev); e != nil {
		if h := a.root.InputHandler(); h != nil {
			h(e, func(p tview.Primitive) { a.tv.SetFocus(p) })
		}
	}
}

// Draw draws the App on its screen now.
func (a *App) Draw() { a.tv.ForceDraw() }

// Settle runs the work that background jobs handed to the UI until no job
// is left, or fails after timeout. Only for an App that is not Run.
func (a *App) Settle(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case f := <-a.updates:
			f()
			continue
		default:
		}
		if a.jobs.Load() == 0 && len(a.updates) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("viewer: %d background jobs still running after %s", a.jobs.Load(), timeout)
		}
		select {
		case f := <-a.updates:
			f()
		case <-time.After(time.Millisecond):
		}
	}
}

// SelectedRecord is the record number of the selected row (-1 for none).
func (a *App) SelectedRecord() int { return a.selectedPos() }

// Close stops background work of an App that was not Run.
func (a *App) Close() { a.stop() }
