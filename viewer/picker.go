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

// Picker lets the user choose a cassette from a directory, newest first,
// and updates the list as cassettes appear (fsnotify, and a poll).
type Picker struct {
	dir    string
	tv     *tview.Application
	table  *tview.Table
	status *tview.TextView
	now    func() time.Time

	mu      sync.Mutex
	note    string // said in the status line above the usual text (SetNote)
	files   []CassetteFile
	chosen  string
	running bool
	quit    chan struct{}
	once    sync.Once
}

// NewPicker builds a picker over dir drawing on screen.
func NewPicker(dir string, screen tcell.Screen) *Picker {
	p := &Picker{dir: dir, tv: tview.NewApplication(), now: time.Now, quit: make(chan struct{})}
	if screen != nil {
		p.tv.SetScreen(screen)
	}
	p.table = tview.NewTable().SetSelectable(true, false).SetFixed(1, 0).SetSeparator(' ')
	p.table.SetSelectedStyle(tcell.StyleDefault.Background(selectedBG).Foreground(tcell.ColorWhite))
	p.table.SetBorder(true).SetTitle(" rpctap view: pick a cassette (newest first) ").SetTitleAlign(tview.AlignLeft)
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
func (p *Picker) Reload() {
	files, err := ListCassettes(p.dir)
	p.mu.Lock()
	prev := ""
	if row, _ := p.table.GetSelection(); row >= 1 && row-1 < len(p.files) {
		prev = p.files[row-1].Path
	}
	p.files = files
	p.mu.Unlock()
	p.table.Clear()
	for i, h := range []string{"CASSETTE", "SIZE", "MODIFIED"} {
		p.table.SetCell(0, i, tview.NewTableCell(h).SetSelectable(false).SetStyle(headerStyle))
	}
	sel := 1
	for i, f := range files {
		p.table.SetCell(i+1, 0, tview.NewTableCell(tview.Escape(f.Name)).SetExpansion(1))
		p.table.SetCell(i+1, 1, tview.NewTableCell(FormatSize(int(f.Size))).SetAlign(tview.AlignRight))
		p.table.SetCell(i+1, 2, tview.NewTableCell(f.Mod.Format("2006-01-02 15:04:05")+"  "+age(p.now().Sub(f.Mod))))
		if f.Path == prev {
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
		p.status.SetText(tview.Escape(fmt.Sprintf("%d in %s  ·  Enter opens  ·  j/k move  ·  q quits", len(files), p.dir)))
	}
}

func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return fmt.Sprintf("%d days ago", int(d.Hours()/24))
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
		if p.running {
			p.tv.Stop()
		}
	})
}

// Run shows the picker until the user chooses (the path) or quits ("").
func (p *Picker) Run() (string, error) {
	p.running = true
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
		case <-tick.C:
		}
		p.tv.QueueUpdateDraw(p.Reload)
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

// Draw draws the picker now.
func (p *Picker) Draw() { p.tv.ForceDraw() }

// Chosen is the path chosen so far ("" if none).
func (p *Picker) Chosen() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.chosen
}
