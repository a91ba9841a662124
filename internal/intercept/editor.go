package intercept

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// ErrNoEditor is returned by EditInEditor when neither $VISUAL nor $EDITOR
// is set.
var ErrNoEditor = errors.New("set $VISUAL or $EDITOR")

// EditInEditor opens frame, pretty-printed, in $VISUAL (else $EDITOR) on a
// temporary file and returns what was saved, which must be valid JSON. The
// editor gets the terminal: /dev/tty when there is one, else stdin and
// stdout. The editor's command line may carry arguments ("code --wait").
func EditInEditor(frame string, stdin io.Reader, stdout, stderr io.Writer) ([]byte, error) {
	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	if strings.TrimSpace(editor) == "" {
		return nil, ErrNoEditor
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, []byte(frame), "", "  "); err != nil {
		return nil, fmt.Errorf("the held frame is not JSON; give the new frame as a file")
	}
	pretty.WriteByte('\n')
	f, err := os.CreateTemp("", "rpctap-edit-*.json")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(pretty.Bytes()); err != nil {
		f.Close()
		return nil, err
	}
	f.Close()
	fields := strings.Fields(editor)
	cmd := exec.Command(fields[0], append(fields[1:], f.Name())...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	if tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err == nil {
		defer tty.Close()
		cmd.Stdin, cmd.Stdout = tty, tty
	}
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %v (the frame stays held)", fields[0], err)
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		return nil, err
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("what was saved is not valid JSON (the frame stays held)")
	}
	return b, nil
}
