package viewer

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gdamore/tcell/v2"
)

// keyNames are the special keys Type understands, written in angle brackets.
var keyNames = map[string]tcell.Key{
	"<enter>": tcell.KeyEnter, "<esc>": tcell.KeyEscape, "<tab>": tcell.KeyTab, "<bs>": tcell.KeyBackspace2,
	"<down>": tcell.KeyDown, "<up>": tcell.KeyUp, "<pgdn>": tcell.KeyPgDn, "<pgup>": tcell.KeyPgUp,
	"<home>": tcell.KeyHome, "<end>": tcell.KeyEnd, "<c-d>": tcell.KeyCtrlD, "<c-u>": tcell.KeyCtrlU,
}

// Type feeds keys to an App that is not Run, as a user would type them,
// letting background work finish and redrawing after each key. Plain
// characters are typed as they are; <enter>, <esc>, <tab>, <bs>, <up>,
// <down>, <pgup>, <pgdn>, <home>, <end>, <c-d> and <c-u> name special keys.
func (a *App) Type(keys string) error {
	for keys != "" {
		var ev *tcell.EventKey
		if keys[0] == '<' {
			if i := strings.IndexByte(keys, '>'); i > 0 {
				if k, ok := keyNames[keys[:i+1]]; ok {
					ev = tcell.NewEventKey(k, 0, tcell.ModNone)
					keys = keys[i+1:]
				}
			}
		}
		if ev == nil {
			r := []rune(keys)[0]
			ev = tcell.NewEventKey(tcell.KeyRune, r, tcell.ModNone)
			keys = keys[len(string(r)):]
		}
		a.Key(ev)
		if err := a.Settle(30 * time.Second); err != nil {
			return err
		}
		if a.Done() {
			return nil
		}
		a.Draw()
	}
	return nil
}

// Done reports whether the user quit.
func (a *App) Done() bool {
	select {
	case <-a.quit:
		return true
	default:
		return false
	}
}

// ScreenText returns what a SimulationScreen shows, one line per row with
// trailing blanks trimmed. Each line starts with a margin column holding
// "▶" on the selected row of the frame list, so that text dumps show the
// selection.
func ScreenText(s tcell.SimulationScreen) string {
	cells, w, h := s.GetContents()
	var b strings.Builder
	for y := range h {
		var line strings.Builder
		mark := " "
		for x := 0; x < w; x++ {
			c := cells[y*w+x]
			if _, bg, _ := c.Style.Decompose(); bg == selectedBG {
				mark = "▶"
			}
			if len(c.Runes) == 0 {
				line.WriteByte(' ')
				continue
			}
			line.WriteString(string(c.Runes))
		}
		b.WriteString(strings.TrimRight(mark+line.String(), " "))
		b.WriteByte('\n')
	}
	return b.String()
}

// ParseSize reads a screen size written WxH (e.g. 120x40), from 20x5 to
// 1000x1000.
func ParseSize(s string) (w, h int, err error) {
	ws, hs, ok := strings.Cut(s, "x")
	w, werr := strconv.Atoi(ws)
	h, herr := strconv.Atoi(hs)
	if !ok || werr != nil || herr != nil {
		// Sscanf("%dx%d") took "120x40x" and "120x40abc" too.
		return 0, 0, fmt.Errorf("bad screen size %q: want WIDTHxHEIGHT, e.g. 120x40", s)
	}
	if w < 20 || h < 5 || w > 1000 || h > 1000 {
		// "want WIDTHxHEIGHT" of "100x4" did not say what was wrong.
		return 0, 0, fmt.Errorf("bad screen size %q: from 20x5 to 1000x1000", s)
	}
	return w, h, nil
}
