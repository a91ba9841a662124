package viewer

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
)

// CassetteFile is one file the picker offers.
type CassetteFile struct {
	Path string
	Name string
	Size int64
	Mod  time.Time
}

// ListCassettes lists the regular files of dir (hidden ones and partial
// downloads aside), newest first. A missing dir is an empty list.
func ListCassettes(dir string) ([]CassetteFile, error) {
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []CassetteFile
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, CassetteFile{Path: filepath.Join(dir, e.Name()), Name: e.Name(), Size: info.Size(), Mod: info.ModTime()})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Mod.Equal(out[j].Mod) {
			return out[i].Mod.After(out[j].Mod)
		}
		return out[i].Name > out[j].Name
	})
	return out, nil
}

// Picker is the session hub: it lists the cassettes of a directory, newest
// first, with what each recorded (protocol, command, start, duration,
// frames, stored errors and warnings, live or ended), updates the list as
// sessions start, grow and end (fsnotify, and a poll), and lets the user
// choose one. Files that are not cassettes are not listed.
type Picker struct {
	dir    string
	hub    *hubScanner
	tv     *tview.Application
	table  *tview.Table
	status *tview.TextView
	now    func() time.Time

	mu      sync.Mutex
	note    string // said in the status line above the usual text (SetNote)
	files   []CassetteFile
	chosen  string
	running bool
	started chan struct{} // closed once Run's event loop runs
	quit    chan struct{}
	once    sync.Once
}

// NewPicker builds a picker over dir drawing on screen.
func NewPicker(dir string, screen tcell.Screen) *Picker {
	p := &Picker{dir: dir, hub: newHubScanner(), tv: tview.NewApplication(), now: time.Now,
		quit: make(chan struct{}), started: make(chan struct{})}
	if screen != nil {
		p.tv.SetScreen(screen)
	}
	p.table = tview.NewTable().SetSelectable(true, false).SetFixed(1, 0).SetSeparator(' ')
	p.table.SetSelectedStyle(tcell.StyleDefault.Background(selectedBG).Foreground(tcell.ColorWhite))
	p.table.SetBorder(true).SetTitle(" rpctap view: sessions, newest first ").SetTitleAlign(tview.AlignLeft)
	p.table.SetSelectedFunc(func(row, _ int) { p.choose(row) })
	p.status = tview.NewTextView().SetDynamicColors(true)
	root := tview.NewFlex().SetDirection(tview.FlexRow).AddItem(p.table, 0, 1, true).AddItem(p.status, 1, 0, false)
	p.tv.SetRoot(root, true).SetFocus(p.table)
	p.tv.SetInputCapture(func(ev *tcell.EventKey) *tcell.EventKey {
		if ev.Key() == tcell.KeyEscape || ev.Key() == tcell.KeyRune && (ev.Rune() == 'q' || ev.Rune() == 'Q') {
			p.stop()
			return nil
		}
		return ev
	})
	p.Reload()
	return p
}

// SetNote shows msg in the status line (the cassette chosen before could
// not be opened: say why and let the user choose another) and selects
// the file at path, when it is listed.
func (p *Picker) SetNote(msg, path string) {
	p.mu.Lock()
	p.note = msg
	p.mu.Unlock()
	p.Reload()
	p.mu.Lock()
	files := p.files
	p.mu.Unlock()
	for i, f := range files {
		if f.Path == path {
			p.table.Select(i+1, 0)
		}
	}
}

// Reload reads the directory again, keeping the selected file selected.
// Only what changed is read: a live cassette's new records, a new file.
func (p *Picker) Reload() {
	sessions, err := p.hub.List(p.dir)
	p.show(sessions, err)
}

// show puts sessions in the table (on tview's goroutine when Run runs).
func (p *Picker) show(sessions []Session, err error) {
	files := make([]CassetteFile, len(sessions))
	for i, s := range sessions {
		files[i] = s.CassetteFile
	}
	p.mu.Lock()
	prev := ""
	if row, _ := p.table.GetSelection(); row >= 1 && row-1 < len(p.files) {
		prev = p.files[row-1].Path
	}
	p.files = files
	p.mu.Unlock()
	p.table.Clear()
	// The command comes last: it is the longest and the one cut short on
	// a narrow terminal, the file name the one needed to open it.
	for i, h := range []string{"STARTED", "STATE", "PROTOCOL", "DURATION", "FRAMES", "ERR", "WARN", "CASSETTE", "COMMAND"} {
		c := tview.NewTableCell(h).SetSelectable(false).SetStyle(headerStyle)
		if i >= 3 && i <= 6 {
			c.SetAlign(tview.AlignRight)
		}
		p.table.SetCell(0, i, c)
	}
	sel := 1
	live := 0
	for i, s := range sessions {
		state := s.State
		style := tcell.StyleDefault
		switch {
		case state == "live":
			live++
			style = style.Foreground(tcell.ColorGreen)
		case state != "ended":
			style = style.Foreground(tcell.ColorRed)
		}
		cells := []*tview.TableCell{
			tview.NewTableCell(s.Start.Local().Format("01-02 15:04:05")),
			tview.NewTableCell(tview.Escape(state)).SetStyle(style).SetMaxWidth(24),
			tview.NewTableCell(tview.Escape(s.Protocol)),
			tview.NewTableCell(FormatDuration(s.Duration)).SetAlign(tview.AlignRight),
			tview.NewTableCell(fmt.Sprint(s.Frames)).SetAlign(tview.AlignRight),
			tview.NewTableCell(countCell(s.Errors)).SetAlign(tview.AlignRight),
			tview.NewTableCell(countCell(s.Warnings)).SetAlign(tview.AlignRight),
			tview.NewTableCell(tview.Escape(linkedName(s))),
			tview.NewTableCell(tview.Escape(linkedCommand(s))).SetExpansion(1),
		}
		if s.Errors > 0 {
			cells[5].SetStyle(tcell.StyleDefault.Foreground(tcell.ColorRed))
		}
		if s.Warnings > 0 {
			cells[6].SetStyle(tcell.StyleDefault.Foreground(tcell.ColorYellow))
		}
		for j, c := range cells {
			p.table.SetCell(i+1, j, c)
		}
		if s.Path == prev {
			sel = i + 1
		}
	}
	p.table.Select(sel, 0)
	p.mu.Lock()
	note := p.note
	p.mu.Unlock()
	switch {
	case note != "" && err == nil:
		p.status.SetText("[red]" + tview.Escape(note) + "[-]  ·  Enter opens another  ·  q quits")
	case err != nil:
		p.status.SetText("[red]" + tview.Escape(err.Error()) + "[-]")
	case len(files) == 0:
		p.status.SetText(tview.Escape(fmt.Sprintf("no cassettes in %s yet: this list updates when `rpctap record` writes one  (q quits)", p.dir)))
	default:
		p.status.SetText(tview.Escape(fmt.Sprintf("%d sessions (%d live) in %s  ·  Enter opens (a live one is followed)  ·  j/k move  ·  q quits", len(files), live, p.dir)))
	}
}

// linkedName is the CASSETTE cell: a linked session indented under its
// parent.
func linkedName(s Session) string {
	if s.Depth == 0 {
		return s.Name
	}
	return strings.Repeat("  ", s.Depth-1) + "└ " + s.Name
}

// linkedCommand is the COMMAND cell: a linked session's server name first,
// and why it is not under its parent.
func linkedCommand(s Session) string {
	c := s.Command
	if s.Server != "" {
		c = s.Server + ": " + c
	}
	if s.Note != "" {
		c += "  (linked: " + s.Note + ")"
	}
	return c
}

func countCell(n int) string {
	if n == 0 {
		return "·"
	}
	return fmt.Sprint(n)
}

func (p *Picker) choose(row int) {
	p.mu.Lock()
	if row >= 1 && row-1 < len(p.files) {
		p.chosen = p.files[row-1].Path
	}
	p.mu.Unlock()
	if p.chosen != "" {
		p.stop()
	}
}

func (p *Picker) stop() {
	p.once.Do(func() {
		close(p.quit)
		p.hub.Close()
		if p.running {
			p.tv.Stop()
		}
	})
}

// Run shows the picker until the user chooses (the path) or quits ("").
func (p *Picker) Run() (string, error) {
	p.mu.Lock()
	p.running = true
	p.mu.Unlock()
	// QueueUpdate waits for the event loop, which tv.Run starts below.
	go p.tv.QueueUpdate(func() { close(p.started) })
	go p.watch()
	err := p.tv.Run()
	p.stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.chosen, err
}

// watch reloads the list when the directory changes.
func (p *Picker) watch() {
	var events <-chan fsnotify.Event
	if w, err := fsnotify.NewWatcher(); err == nil {
		defer w.Close()
		_ = os.MkdirAll(p.dir, 0o700)
		if w.Add(p.dir) == nil {
			events = w.Events
		}
	}
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-p.quit:
			return
		case _, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			// A live recording writes a batch per burst: reload once for
			// the events of the next 100 ms.
			settle := time.After(100 * time.Millisecond)
		drain:
			for {
				select {
				case _, ok := <-events:
					if !ok {
						events = nil
						break drain
					}
				case <-settle:
					break drain
				case <-p.quit:
					return
				}
			}
		case <-tick.C:
		}
		// The directory is read here, not on tview's goroutine: a new
		// cassette of a GiB is read whole once (its frames and findings
		// counted), and the list stays responsive meanwhile.
		sessions, err := p.hub.List(p.dir)
		p.tv.QueueUpdateDraw(func() { p.show(sessions, err) })
	}
}

// Key handles a key headless (tests).
func (p *Picker) Key(ev *tcell.EventKey) {
	if cap := p.tv.GetInputCapture(); cap != nil {
		if ev = cap(ev); ev == nil {
			return
		}
	}
	if h := p.table.InputHandler(); h != nil {
		h(ev, func(tview.Primitive) {})
	}
}

// Close releases what the hub keeps open for live cassettes (Run does it
// when the picker stops; headless users call it).
func (p *Picker) Close() { p.hub.Close() }

// Started is closed once Run's event loop runs.
func (p *Picker) Started() <-chan struct{} { return p.started }

// Sync runs f on the picker's event goroutine while Run runs (at once
// otherwise) and waits for it: a test reads the SimulationScreen the
// picker draws on from there, never while tview writes it.
func (p *Picker) Sync(f func()) {
	p.mu.Lock()
	running := p.running
	p.mu.Unlock()
	if !running {
		f()
		return
	}
	done := make(chan struct{})
	// QueueUpdate waits for the event loop; after Stop nothing runs it.
	go p.tv.QueueUpdate(func() { f(); close(done) })
	select {
	case <-done:
	case <-p.quit:
	}
}

// Draw draws the picker now.
func (p *Picker) Draw() { p.tv.ForceDraw() }

// Chosen is the path chosen so far ("" if none).
func (p *Picker) Chosen() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.chosen
}
