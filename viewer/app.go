package viewer

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
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
	// Back says the cassette was chosen in a picker: q at the top of the
	// list goes back there (WentBack reports it); Q and Ctrl-C quit.
	Back bool
	// Control, when set, is the live session's control socket (view
	// --attach, or a live cassette whose header names one): the held
	// frames pane (H) and the title's count of held frames.
	Control Control
}

// selectedBG is the background of the selected row.
const selectedBG = tcell.ColorDarkSlateGray

type mode uint8

const (
	modeList mode = iota
	modeTranscript
	modeStats
	modeFlows      // app_flows.go
	modeFlowDetail // one flow opened from the flows
)

// App is the inspector. Build it with New, then Run it (a terminal), or
// drive it headless with Key and Draw (tests).
type App struct {
	opts     Options
	wentBack bool // q at the top of the list with Options.Back

	// The rows of the transcript or statistics that Enter acts on: region
	// ids of the text pane in order ("r<record>" for a transcript entry,
	// "m<i>" for statsMethods[i]), and the one highlighted (-1: none).
	targets      []string
	target       int
	statsMethods []string

	// The held frames pane of an attached viewer (intercept.go).
	hs heldState

	// The flows view (app_flows.go).
	flowTable *tview.Table
	flows     []Flow
	flowGen   atomic.Uint64
	store     *Store
	tv        *tview.Application
	screen    tcell.Screen

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
	selecting  bool  // a programmatic selection is under way
	viewBefore *View // the view when the input line opened (Esc in the filter bar restores it)
	lastW      int   // the screen's size at the last draw (a resize shows the selection again)
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
	if opts.Control != nil {
		a.buildHeldPane()
		a.RefreshControl()
	}
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

	a.text = tview.NewTextView().SetDynamicColors(true).SetRegions(true).SetWrap(true).SetScrollable(true)
	a.text.SetBorder(true).SetTitleAlign(tview.AlignLeft)

	a.main = tview.NewPages().AddPage("list", a.body, true, true).AddPage("text", a.text, true, false)
	a.buildFlowTable()

	a.status = tview.NewTextView().SetDynamicColors(true).SetWrap(false)
	a.input = tview.NewInputField().SetFieldBackgroundColor(tcell.ColorBlack)
	a.input.SetDoneFunc(a.onInputDone)
	a.input.SetChangedFunc(a.onInputChanged)
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
// are fitted to the screen's width, and after a resize the selected row is
// selected again, because tview brings a selection into view only when it
// is made.
func (a *App) beforeDraw(scr tcell.Screen) bool {
	a.content.invalidate()
	a.refreshStatus()
	a.renderHeld()
	w, h := scr.Size()
	off, _ := a.table.GetOffset()
	a.content.fit(w, off, h)
	if w != a.lastW || h != a.lastH {
		resized := a.lastW != 0
		a.lastW, a.lastH = w, h
		if row, _ := a.table.GetSelection(); resized && row >= 1 {
			a.selectRow(row)
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
	if a.opts.Control != nil {
		go a.pollControl()
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

// WentBack reports whether the user left with q to go back to the picker
// (Options.Back), rather than quit.
func (a *App) WentBack() bool { return a.wentBack }

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
		a.text.SetTitle(" transcript (↑ ↓ Enter: go to the record · t or Esc: back) ")
		a.tv.SetFocus(a.text)
		a.openTranscript()
	case modeStats:
		a.main.SwitchToPage("text")
		a.text.SetTitle(" statistics (↑ ↓ Enter: filter by the method · s or Esc: back) ")
		a.tv.SetFocus(a.text)
		a.showStats()
	case modeFlows:
		a.main.SwitchToPage("flows")
		a.tv.SetFocus(a.flowTable)
		if a.flows == nil {
			a.openFlows()
		}
	}
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

func (a *App) refreshStatus() {
	name := a.opts.Name
	if name == "" {
		name = "(cassette)"
	}
	if tt, ok := a.store.src.(Titled); ok {
		name += tt.TitleSuffix()
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
	if n := a.store.ValidationStopped(); n != 0 {
		t += fmt.Sprintf(" · [olive]findings partial (validation stopped at #%d; rpctap check judges all)[-]", n)
	}
	t += a.heldSummary()
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
